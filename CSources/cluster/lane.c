/* lane.c - the node's KV calls that are not the leases' round: each a
 * JetStream round trip, so none runs on the loop. They go down one lane, a
 * worker that takes what is queued, in order, then the onDisconnect sweep
 * if one is due (ondisconnect.c). One lane keeps a session's put before
 * its delete, a rules document's puts in the order they were asked
 * (rules.c), and a sweep after the deletes of the orphans the last sweep
 * ran, so none runs twice. At most one batch is on the worker; a stop
 * waits for the lane to be empty. */
#include "cluster/node.h"

#include <stdio.h>
#include <string.h>

/* A put (value) or delete (value NULL) of one key, then done. */
typedef struct lane_job {
    struct lane_job *next;
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
    lane_job *queued, *queued_tail; /* the loop's side */
    lane_job *batch;                /* on the worker: handed over whole */
    bool sweeping;                  /* ... and after it, a sweep */
};

static void lane_work(uv_work_t *w) {
    hearth__cluster *c = w->data;
    for (lane_job *j = c->odc.lane->batch; j; j = j->next) {
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
    lane_job *j = l->batch;
    bool swept = l->sweeping;
    l->batch = NULL;
    l->running = l->sweeping = false;
    while (j) {
        lane_job *next = j->next;
        if (j->rc && j->kv == c->odc.orphans)
            hearth__log(HEARTH_LOG_WARNING, "cluster: onDisconnect writes of %s not "
                    "kept: %s", j->key, hearth_strerror(j->rc));
        if (j->done)
            j->done(j->ctx, j->rc);
        hearth__free(j->value);
        hearth__free(j);
        j = next;
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
    l->batch = l->queued;
    l->queued = l->queued_tail = NULL;
    if (!l->batch && !l->sweeping)
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
    if (l->queued_tail)
        l->queued_tail->next = j;
    else
        l->queued = j;
    l->queued_tail = j;
    hearth__cluster_lane_kick(c);
    return true;
}

int hearth__cluster_lane_create(hearth__cluster *c) {
    c->odc.lane = hearth__calloc(1, sizeof *c->odc.lane);
    return c->odc.lane ? 0 : HEARTH_ENOMEM;
}

bool hearth__cluster_lane_busy(const hearth__cluster *c) {
    return c->odc.lane && (c->odc.lane->running || c->odc.lane->queued);
}

void hearth__cluster_lane_free(hearth__cluster *c) {
    hearth__free(c->odc.lane);
    c->odc.lane = NULL;
}
