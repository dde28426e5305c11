/* lane.c - the node's KV calls that are not the leases' round: each a
 * JetStream round trip, so none runs on the loop. They go down one lane, a
 * worker that takes what is queued, in order, then the onDisconnect sweep
 * if one is due (ondisconnect.c). One lane keeps a session's put before
 * its delete, a rules document's puts in the order they were asked
 * (rules.c), and a sweep after the deletes of the orphans the last sweep
 * ran, so none runs twice. At most one batch is on the worker; a stop
 * waits for the lane to be empty. */
#include "cluster/node.h"
#include "common/list.h"

#include <stdio.h>
#include <string.h>

/* A put (value) or delete (value NULL) of one key, then done. */
typedef struct lane_job {
    hearth__list link; /* in the lane's queued or batch */
    kvStore *kv;
    char key[256];
    char *value; /* its bytes (sealed: cluster/sealing.h) */
    size_t len;
    int rc;
    hearth__cluster_kept_cb done;
    void *ctx;
} lane_job;

struct hearth__lane {
    uv_work_t work;
    bool running;
    hearth__list queued; /* the loop's side */
    hearth__list batch;  /* on the worker: handed over whole */
    bool sweeping;                  /* ... and after it, a sweep */
};

static void lane_work(uv_work_t *w) {
    hearth__cluster *c = w->data;
    HEARTH__LIST_EACH_ITEM(j, &c->odc.lane->batch, lane_job, link) {
        uint64_t rev;
        natsStatus s = j->value ? kvStore_Put(&rev, j->kv, j->key, j->value,
                                              (int)j->len)
                                : kvStore_Delete(j->kv, j->key);
        j->rc = s == NATS_OK ? 0 : hearth__cluster_error(s);
    }
    if (c->odc.lane->sweeping)
        hearth__cluster_sweep_work(c);
}

static void lane_done(uv_work_t *w, int status) {
    (void)status; /* never canceled */
    hearth__cluster *c = w->data;
    hearth__lane *l = c->odc.lane;
    hearth__list done = {0};
    hearth__list_splice_back(&done, &l->batch);
    bool swept = l->sweeping;
    l->running = l->sweeping = false;
    for (hearth__list *n; (n = hearth__list_pop_front(&done));) {
        lane_job *j = HEARTH__LIST_ITEM(n, lane_job, link);
        if (j->rc && j->kv == c->odc.orphans)
            hearth__log(HEARTH_LOG_WARNING, "cluster: onDisconnect writes of %s not "
                    "kept: %s", j->key, hearth_strerror(j->rc));
        if (j->done)
            j->done(j->ctx, j->rc);
        hearth__free(j->value);
        hearth__free(j);
    }
    if (swept)
        hearth__cluster_sweep_end(c); /* queues the deletes of what it ran */
    hearth__cluster_lane_kick(c);
    hearth__cluster_round_ended(c); /* a stop may wait for the lane */
}

void hearth__cluster_lane_kick(hearth__cluster *c) {
    hearth__lane *l = c->odc.lane;
    if (l->running)
        return;
    l->sweeping = hearth__cluster_sweep_begin(c);
    hearth__list_splice_back(&l->batch, &l->queued);
    if (hearth__list_empty(&l->batch) && !l->sweeping)
        return;
    l->running = true;
    l->work.data = c;
    if (uv_queue_work(c->loop, &l->work, lane_work, lane_done)) {
        lane_work(&l->work); /* no worker: here */
        lane_done(&l->work, 0);
    }
}

bool hearth__cluster_lane_put(hearth__cluster *c, kvStore *kv,
                              const char *key, const void *value, size_t len,
                              hearth__cluster_kept_cb done, void *ctx) {
    hearth__lane *l = c->odc.lane;
    lane_job *j = hearth__calloc(1, sizeof *j);
    if (!j || (value && !(j->value = hearth__malloc(len ? len : 1)))) {
        hearth__free(j);
        return false;
    }
    if (value)
        memcpy(j->value, value, len);
    j->len = len;
    j->kv = kv;
    snprintf(j->key, sizeof j->key, "%s", key);
    j->done = done;
    j->ctx = ctx;
    hearth__list_push_back(&l->queued, &j->link);
    hearth__cluster_lane_kick(c);
    return true;
}

int hearth__cluster_lane_create(hearth__cluster *c) {
    c->odc.lane = hearth__calloc(1, sizeof *c->odc.lane);
    return c->odc.lane ? 0 : HEARTH_ENOMEM;
}

bool hearth__cluster_lane_busy(const hearth__cluster *c) {
    return c->odc.lane && (c->odc.lane->running ||
                           !hearth__list_empty(&c->odc.lane->queued));
}

void hearth__cluster_lane_free(hearth__cluster *c) {
    hearth__free(c->odc.lane);
    c->odc.lane = NULL;
}
