/* ondisconnect.h - onDisconnect writes that outlive their node
 * (cluster/ondisconnect.c), and the lane of KV calls off the loop that
 * keeps them and the rules' puts in order (cluster/lane.c). Internal to
 * cluster/. */
#ifndef HEARTH_CLUSTER_ONDISCONNECT_H
#define HEARTH_CLUSTER_ONDISCONNECT_H

#include "cluster/internal.h"

/* The node's part (ondisconnect.c and lane.c write it). */
typedef struct hearth__cluster_orphans {
    kvStore *orphans; /* the onDisconnect writes' bucket */
    struct hearth__lane *lane;   /* KV calls off the loop (lane.c) */
    struct hearth__sweep *sweep; /* the onDisconnect sweep */
} hearth__cluster_orphans;

/* ---- ondisconnect.c ---- */
/* Opens the onDisconnect writes' bucket (at start); closes it (with the
 * link). */
natsStatus hearth__cluster_orphans_open(hearth__cluster *c);
void hearth__cluster_orphans_close(hearth__cluster *c);
/* The tick's part, every 2 s: the leaders' sweep (one listing for all
 * the namespaces this node leads, on the lane's worker) runs the
 * onDisconnect writes of sessions whose node's run is no longer alive,
 * then forgets them. */
void hearth__cluster_orphans_tick(hearth__cluster *c, uint64_t ticks);
/* The sweep, on the lane (lane.c): begin (loop) says whether one is due
 * and notes the namespaces led; work (the lane's worker, after its
 * queued calls) finds the dead runs' lists; end (loop) runs them and
 * queues their deletes. Its state is made at start, freed with the link. */
bool hearth__cluster_sweep_begin(hearth__cluster *c);
void hearth__cluster_sweep_work(hearth__cluster *c);
void hearth__cluster_sweep_end(hearth__cluster *c);
int hearth__cluster_sweep_create(hearth__cluster *c);
void hearth__cluster_sweep_free(hearth__cluster *c);

/* ---- lane.c ---- */
typedef struct hearth__lane hearth__lane;
/* Queues a put of value (len bytes, copied; sealed by the caller:
 * sealing.h) at key in kv (value NULL: a delete) down the lane of KV
 * calls (a worker, in order); done (may be NULL) then runs on the loop.
 * false without memory (done not called). */
bool hearth__cluster_lane_put(hearth__cluster *c, kvStore *kv,
                              const char *key, const void *value, size_t len,
                              hearth__cluster_kept_cb done, void *ctx);
/* Starts the worker on what is queued (and a due sweep) unless it runs. */
void hearth__cluster_lane_kick(hearth__cluster *c);
/* Made at start; busy while a call is queued or running (a stop waits);
 * freed with the link. */
int hearth__cluster_lane_create(hearth__cluster *c);
bool hearth__cluster_lane_busy(const hearth__cluster *c);
void hearth__cluster_lane_free(hearth__cluster *c);

#endif
