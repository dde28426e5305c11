/* retain.c - the log's retention. Every minute the leader of a
 * namespace purges its subject below what every live node has applied
 * (its liveness value), never its last record (the next append is
 * fenced on it) and never past where the log was at the previous purge
 * (a node that has just joined from a peer's snapshot reports within a
 * second). The floor goes to the KV bucket hearth_retained first, so a
 * node coming back from behind it joins from a peer's snapshot
 * (snapshot.c) instead of missing what was purged; so does a node that
 * dies with applied records its local log had not synced yet (a
 * follower syncs at most once a second). The purge runs in the
 * leases' round, on its worker thread. The floor is sealed for its key
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

void hearth__cluster_retain(hearth__cluster *c, hearth__retain_job *j) {
    uint64_t floor = min_kept(c, j->name);
    floor = floor == UINT64_MAX || floor > j->kept ? j->kept : floor;
    floor = floor < j->cap ? floor : j->cap;
    floor = floor + 1 < j->last ? floor + 1 : j->last; /* purged below */
    if (floor <= j->purged + 1 || floor <= 1)
        return;
    char text[24];
    int len = snprintf(text, sizeof text, "%llu", (unsigned long long)floor);
    hearth__buf value;
    hearth__buf_init(&value);
    uint64_t rev;
    bool kept = !hearth__cluster_seal_value(c, BUCKET, j->name, text,
                                            (size_t)len, &value) &&
                kvStore_Put(&rev, c->log.retained, j->name, value.data,
                            (int)value.len) == NATS_OK;
    hearth__buf_free(&value);
    if (!kept)
        return; /* purge nothing a joining node would not know of */
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = HEARTH__CLUSTER_WAIT_MS;
    jo.Stream.Purge.Subject = j->subject;
    jo.Stream.Purge.Sequence = floor;
    if (js_PurgeStream(c->js, j->stream, &jo, NULL) == NATS_OK)
        j->purged_to = floor - 1;
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
    return true;
}

void hearth__cluster_retain_done(hearth__cluster_ns *n,
                                 const hearth__retain_job *j) {
    if (j->purged_to > n->retain.purged)
        n->retain.purged = j->purged_to;
}

void hearth__cluster_set_retain_ticks(hearth__cluster *c, unsigned ticks) {
    c->log.retain_ticks = ticks ? ticks : 1;
}

uint64_t hearth__cluster_retained(hearth__cluster *c, const char *name) {
    kvEntry *e = NULL;
    uint64_t floor = 0;
    if (kvStore_Get(&e, c->log.retained, name) == NATS_OK) {
        hearth__buf text;
        hearth__buf_init(&text);
        floor = hearth__cluster_open_value(c, BUCKET, name, kvEntry_Value(e),
                                           (size_t)kvEntry_ValueLen(e), &text)
                    ? UINT64_MAX
                    : strtoull(text.data ? text.data : "0", NULL, 10);
        hearth__buf_free(&text);
    }
    kvEntry_Destroy(e);
    return floor;
}
