/* tick.c - the node's one timer (cluster/tick.h). Each job keeps its
 * periodic work behind its own function and decides what is due from the
 * tick's number; the order below is the order they have always run in:
 * the leases' round first (it is what every other job's view of who
 * leads comes from), then the sweep, forwarded writes (the joins and
 * replay windows a leader keeps, then the sender's retries and
 * timeouts), the rules' consumer if not yet made, what NATS's threads
 * queued (each namespace's tail drained with it), and each namespace's
 * watchdog (a consumer that stopped delivering) and rebuild. */
#include "cluster/node.h"

static void on_tick(uv_timer_t *t) {
    hearth__cluster *c = t->data;
    uint64_t ticks = ++c->tick.ticks;
    hearth__cluster_lease_tick(c, ticks);
    hearth__cluster_orphans_tick(c, ticks);
    hearth__cluster_serve_tick(c);
    hearth__cluster_forward_tick(c);
    hearth__cluster_rules_follow_bucket(c); /* if not yet */
    /* What NATS delivered first: after the loop was held (a long apply),
     * libuv runs this timer before the wake-up that brings it, and the
     * watchdog would take a consumer that delivered for a silent one. */
    hearth__cluster_take_queued(c);
    HEARTH__LIST_EACH_ITEM(n, &c->spaces, hearth__cluster_ns, link) {
        hearth__cluster_tail_watch(n);
        hearth__cluster_rebuild_maybe(n);
    }
    hearth__cluster_triggers_tick(c);
}

void hearth__cluster_tick_start(hearth__cluster *c) {
    uv_timer_init(c->loop, &c->tick.timer);
    c->tick.timer.data = c;
    uv_timer_start(&c->tick.timer, on_tick, 0, HEARTH__CLUSTER_TICK_MS);
}

void hearth__cluster_tick_stop(hearth__cluster *c) {
    uv_timer_stop(&c->tick.timer);
}

void hearth__cluster_tick_close(hearth__cluster *c, uv_close_cb close_cb) {
    uv_close((uv_handle_t *)&c->tick.timer, close_cb);
}
