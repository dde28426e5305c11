/* retain.c - the log's retention. Every minute (with a retention window,
 * every eighth of it if that is sooner: pitr.h) the leader of a
 * namespace purges its subject below what every live node has applied
 * (its liveness value), never its last record (the next append is
 * fenced on it) and never past where the log was at the previous purge
 * (a node that has just joined from a peer's snapshot reports within a
 * second). The floor goes to the KV bucket hearth_retained first, so a
 * node coming back from behind it joins from a peer's snapshot
 * (snapshot.c) instead of missing what was purged; so does a node that
 * dies with applied records its local log had not synced yet (a
 * follower syncs at most once a second); with a window, never a record
 * of the window nor what rebuilds it (pitr.h). A round's purges run on
 * a worker of their own once its leases are renewed, never inside the
 * round: a purge waits on JetStream, and a renewal behind it would come
 * late while JetStream elects a leader. The floor is sealed for its key
 * (cluster/sealing.h); one that does not open is not known, and a node
 * joining then takes a peer's snapshot rather than trust its own place in
 * a log that may be purged past it. */
#include "cluster/node.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#define BUCKET "hearth_retained"

/* The lowest sequence of name applied by the live nodes reporting it
 * (UINT64_MAX: none does). */
static uint64_t min_kept(hearth__cluster *c, const char *name) {
    json_t *live = hearth__cluster_live_nodes(c);
    uint64_t low = UINT64_MAX;
    const char *node;
    json_t *v;
    json_object_foreach(live, node, v) {
        json_t *kept = json_object_get(json_object_get(v, "ns"), name);
        if (json_is_integer(kept) && (uint64_t)json_integer_value(kept) < low)
            low = (uint64_t)json_integer_value(kept);
    }
    json_decref(live);
    return low;
}

/* Purges subject of stream below floor (its records from floor on stay). */
static bool purge_below(hearth__cluster *c, const char *stream,
                        const char *subject, uint64_t floor) {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = HEARTH__CLUSTER_WAIT_MS;
    jo.Stream.Purge.Subject = subject;
    jo.Stream.Purge.Sequence = floor;
    return js_PurgeStream(c->js, stream, &jo, NULL) == NATS_OK;
}

/* With a retention window (pitr.h) the index of checkpoints goes with the
 * floor, read first so that neither a checkpoint nor a higher floor (a
 * previous leader's) is lost. */
void hearth__cluster_retain(hearth__cluster *c, hearth__retain_job *j) {
    uint64_t floor = min_kept(c, j->name);
    floor = floor == UINT64_MAX || floor > j->kept ? j->kept : floor;
    floor = floor < j->cap ? floor : j->cap;
    floor = floor + 1 < j->last ? floor + 1 : j->last; /* purged below */
    bool moves = floor > j->purged + 1 && floor > 1;
    if (!moves && !j->retain_ms)
        return;
    hearth__pitr_index idx;
    uint64_t rev = 0;
    if (hearth__pitr_index_read(c, j->name, &idx, &rev, NULL)) {
        if (j->retain_ms)
            return; /* the checkpoints are not known: keep everything */
        idx = (hearth__pitr_index){0}; /* unknown: written anew */
    }
    uint64_t hist_below = 0;
    bool changed = j->retain_ms &&
                   hearth__pitr_round(j, &idx, &floor, &hist_below);
    moves = floor > j->purged + 1 && floor > 1;
    /* never lowered: a new leader's purged starts at 0, and a purge that
     * failed after its floor was written is made again */
    bool raised = moves && floor > idx.floor;
    if (!moves && !changed)
        return;
    if (raised)
        idx.floor = floor;
    /* on the revision read: a checkpoint added meanwhile is not lost (the
     * next round tries again) */
    if ((raised || changed) && hearth__pitr_index_put(c, j->name, &idx, rev))
        return; /* purge nothing a joining node would not know of */
    if (moves && purge_below(c, j->stream, j->subject, floor))
        j->purged_to = floor - 1;
    char subject[160];
    hearth__pitr_subject(j->name, subject);
    if (hist_below)
        purge_below(c, HEARTH__PITR_STREAM, subject, hist_below);
}

natsStatus hearth__cluster_retain_open(hearth__cluster *c) {
    c->log.retain_ticks = HEARTH__CLUSTER_RETAIN_TICKS;
    return hearth__cluster_bucket(c, c->js, BUCKET, false, &c->log.retained);
}

void hearth__cluster_retain_close(hearth__cluster *c) {
    kvStore_Destroy(c->log.retained);
}

uint64_t hearth__cluster_purged(const hearth__cluster_ns *n) {
    return n->retain.purged;
}

bool hearth__cluster_retain_plan(hearth__cluster_ns *n, uint64_t ticks,
                                 hearth__retain_job *j) {
    if (ticks % n->c->log.retain_ticks != 1)
        return false;
    j->kept = n->log.applied_seq;
    j->last = n->log.applied_seq;
    j->cap = n->retain.retain_cap;
    j->purged = n->retain.purged;
    n->retain.retain_cap = n->log.applied_seq;
    j->retain_ms = n->c->pitr.retain_ms;
    j->now_ms = hearth_now_ms();
    return true;
}

void hearth__cluster_retain_done(hearth__cluster_ns *n,
                                 const hearth__retain_job *j) {
    if (j->purged_to > n->retain.purged)
        n->retain.purged = j->purged_to;
    if (j->cp_due)
        hearth__pitr_checkpoint_start(n, j->cp_newest);
}

/* The purges of one round, copied off the round's jobs. */
typedef struct retain_item {
    char name[130], stream[32], subject[96];
    hearth__retain_job job;
} retain_item;

typedef struct retain_batch {
    uv_work_t work;
    hearth__cluster *c;
    size_t n;
    retain_item *v;
} retain_batch;

static void purge_work(uv_work_t *w) {
    retain_batch *b = w->data;
    for (size_t i = 0; i < b->n; i++)
        hearth__cluster_retain(b->c, &b->v[i].job);
}

static void purge_done(uv_work_t *w, int status) {
    (void)status;
    retain_batch *b = w->data;
    hearth__cluster *c = b->c;
    for (size_t i = 0; i < b->n; i++) {
        hearth__cluster_ns *n = hearth__cluster_find(c, b->v[i].name);
        if (n)
            hearth__cluster_retain_done(n, &b->v[i].job);
    }
    hearth__free(b->v);
    hearth__free(b);
    c->log.purging = false;
    hearth__cluster_round_ended(c); /* a stop may wait for it */
}

void hearth__cluster_retain_start(hearth__cluster *c,
                                  const hearth__retain_job *const *jobs,
                                  size_t n) {
    if (!n || c->log.purging || hearth__cluster_stop_asked(c))
        return; /* the next round's purge goes as far */
    retain_batch *b = hearth__calloc(1, sizeof *b);
    retain_item *v = hearth__calloc(n, sizeof *v);
    if (!b || !v) {
        hearth__free(b);
        hearth__free(v);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        retain_item *it = &v[i];
        snprintf(it->name, sizeof it->name, "%s", jobs[i]->name);
        snprintf(it->stream, sizeof it->stream, "%s", jobs[i]->stream);
        snprintf(it->subject, sizeof it->subject, "%s", jobs[i]->subject);
        it->job = *jobs[i];
        it->job.name = it->name;
        it->job.stream = it->stream;
        it->job.subject = it->subject;
    }
    b->c = c;
    b->n = n;
    b->v = v;
    b->work.data = b;
    c->log.purging = true;
    if (uv_queue_work(c->loop, &b->work, purge_work, purge_done)) {
        purge_work(&b->work); /* no worker: here */
        purge_done(&b->work, 0);
    }
}

bool hearth__cluster_retain_running(const hearth__cluster *c) {
    return c->log.purging;
}

void hearth__cluster_set_retain_ticks(hearth__cluster *c, unsigned ticks) {
    c->log.retain_ticks = ticks ? ticks : 1;
}

void hearth__cluster_set_retention(hearth__cluster *c, int64_t retain_ms) {
    c->pitr.retain_ms = retain_ms > 0 ? retain_ms : 0;
    /* A checkpoint is due every eighth of the window: the rounds come at
     * least that often (a short window, such as a test's, has them every
     * second; a week's stays at a minute). */
    uint64_t every = (uint64_t)c->pitr.retain_ms / 8 / HEARTH__CLUSTER_TICK_MS;
    every &= ~(uint64_t)1; /* even: due on a renewal's tick (odd) */
    if (retain_ms > 0 && every < c->log.retain_ticks)
        c->log.retain_ticks = every > 2 ? (unsigned)every : 2;
}

uint64_t hearth__cluster_retained(hearth__cluster *c, const char *name) {
    hearth__pitr_index idx;
    int rc = hearth__pitr_index_read(c, name, &idx, NULL, NULL);
    /* a floor that does not open (or read) is not known */
    return rc == HEARTH_EDENIED || rc == HEARTH_EIO ? UINT64_MAX
           : rc                                    ? 0
                                                   : idx.floor;
}
