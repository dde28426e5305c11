/* snapshot.h - a namespace's tree from a peer (cluster/snapshot.c): each
 * node serves the last tree that is exactly the log up to a sequence; a
 * node joining behind the log's purge floor, or rebuilding, loads one.
 * Internal to cluster/. */
#ifndef HEARTH_CLUSTER_SNAPSHOT_H
#define HEARTH_CLUSTER_SNAPSHOT_H

#include "cluster/internal.h"

typedef struct hearth__snap_box hearth__snap_box;

/* A namespace's part (snapshot.c writes it): the last whole tree,
 * answered to joining peers, and the subscription answering them. */
typedef struct hearth__cluster_snap {
    hearth__snap_box *snap;
    natsSubscription *snap_sub;
} hearth__cluster_snap;

/* Serves n's snapshots to joining peers (at open); stops (at leave). */
int hearth__cluster_snapshot_serve(hearth__cluster_ns *n);
void hearth__cluster_snapshot_stop(hearth__cluster_ns *n);
/* Loop: keeps n's tree as the snapshot if it is the log up to
 * applied_seq. */
void hearth__cluster_snapshot_note(hearth__cluster_ns *n);
/* The tree a peer would get now (a new reference, NULL: none) and its
 * log sequence (*seq). */
hearth_node_t *hearth__cluster_snapshot_root(const hearth__cluster_ns *n,
                                             uint64_t *seq);
/* The log sequence of the tree a peer would get now (0: none). */
uint64_t hearth__cluster_snapshot_seq(const hearth__cluster_ns *n);
/* Loop, before name's database opens on dir with nothing of the log:
 * loads a peer's tree into dir's store; its log sequence (0: none, read
 * the log from its start). */
uint64_t hearth__cluster_snapshot_join(hearth__cluster *c, const char *name,
                                       const char *dir);
/* A peer's tree (any thread; 0 with *root, new). */
int hearth__cluster_snapshot_fetch(hearth__cluster *c, const char *name,
                                   hearth_node_t **root, uint64_t *seq);

#endif
