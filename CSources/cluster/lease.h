/* lease.h - leadership (cluster/lease.c: who leads which namespace) and
 * liveness (cluster/liveness.c: which nodes are alive, how far each has
 * applied each namespace, its run and checkpoints). Both are KV buckets
 * with a TTL, written and read by the leases' round on a worker thread.
 * Internal to cluster/. */
#ifndef HEARTH_CLUSTER_LEASE_H
#define HEARTH_CLUSTER_LEASE_H

#include "cluster/internal.h"

/* ---- lease.c ---- */
/* The tick's part (tick.c): a leases' round unless one runs, renewing
 * every second (and a leader's purge round when retain.c says so). */
void hearth__cluster_lease_tick(hearth__cluster *c, uint64_t ticks);
/* Stops leading n at once; its lease is deleted by the next round. */
void hearth__cluster_step_down(hearth__cluster_ns *n);
/* Deletes the leases given up now (at stop: no round follows). */
void hearth__cluster_releases_flush(hearth__cluster *c);

/* ---- liveness.c ---- */
/* This node's liveness value (loop; to free with free()): {"ns":
 * {"<name>": applied sequence}, "sums": {"<name>": its checkpoints
 * (antientropy.c)}, "run": its run}. Notes each namespace's checkpoint. */
char *hearth__cluster_liveness(hearth__cluster *c);
/* One node's liveness value, opened (NULL: none, or not a node's:
 * *forged, when not NULL, says which); every live node's,
 * {"<node>": {...}} (any thread). */
struct json_t *hearth__cluster_liveness_of(hearth__cluster *c,
                                           const char *node, bool *forged);
/* Every live node's liveness value, {"<node>": {...}} (any thread). */
struct json_t *hearth__cluster_live_nodes(hearth__cluster *c);

#endif
