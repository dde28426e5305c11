/* lease.h - leadership (cluster/lease.c: who leads which namespace) and
 * liveness (cluster/liveness.c: which nodes are alive, how far each has
 * applied each namespace, its run and checkpoints). Both are KV buckets
 * with a TTL, written and read by the leases' round on a worker thread.
 * Internal to cluster/. */
#ifndef HEARTH_CLUSTER_LEASE_H
#define HEARTH_CLUSTER_LEASE_H

#include "cluster/internal.h"

/* A lease given up, deleted by the next round if still as it was. */
typedef struct hearth__lease_release {
    hearth__list link; /* in the node's releases, or a round's */
    char name[130];
    uint64_t rev;
} hearth__lease_release;

/* The node's part (lease.c and liveness.c write it). */
typedef struct hearth__cluster_leases {
    kvStore *leases, *nodes; /* the buckets (calls on round_js) */
    bool round_running; /* the leases' round on a worker */
    hearth__list releases; /* hearth__lease_release, newest first */
    struct json_t *live; /* every live node's liveness, as of the last
                            renewal round (status.c shows it) */
} hearth__cluster_leases;

/* A namespace's part (lease.c writes it). */
typedef struct hearth__cluster_lead {
    bool leader;
    uint64_t lease_rev;
    uint64_t lead_from; /* the log's end when the lease was won: writes
                           wait until the tree has caught up to it */
    char leader_name[64]; /* who holds the lease, as last seen */
} hearth__cluster_lead;

/* ---- lease.c ---- */
/* Opens the leases' and liveness buckets (at start); closes them (with
 * the link); frees the rest (the last live nodes seen). */
natsStatus hearth__cluster_lease_open(hearth__cluster *c);
void hearth__cluster_lease_close(hearth__cluster *c);
void hearth__cluster_lease_free(hearth__cluster *c);
/* Whether a leases' round is on a worker (a stop waits for it). */
bool hearth__cluster_lease_running(const hearth__cluster *c);
/* Whether this node leads n; ... and may order its writes: its tree has
 * caught up with the log's end when it won the lease. */
bool hearth__cluster_leads(const hearth__cluster_ns *n);
bool hearth__cluster_lead_settled(const hearth__cluster_ns *n);
/* Who leads n as last seen ("" when unknown). */
const char *hearth__cluster_leader_name(const hearth__cluster_ns *n);
/* Every live node's liveness as of the last renewal round, a new
 * reference ({} before the first). */
struct json_t *hearth__cluster_live(hearth__cluster *c);
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
/* Deletes this node's liveness key (at stop: the others see it gone at
 * their next round). */
void hearth__cluster_liveness_delete(hearth__cluster *c);

#endif
