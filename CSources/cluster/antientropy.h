/* antientropy.h - the net under the tail's invariant
 * (cluster/antientropy.c): checkpoints of each namespace's tree, compared
 * with the live peers', and the rebuild of a tree found to differ.
 * Internal to cluster/. */
#ifndef HEARTH_CLUSTER_ANTIENTROPY_H
#define HEARTH_CLUSTER_ANTIENTROPY_H

#include "cluster/internal.h"

/* The root hash of a namespace's tree at a log sequence. */
#define HEARTH__CLUSTER_CHECKS 4
typedef struct hearth__checkpoint {
    uint64_t seq;
    char hash[HEARTH_HASH_SIZE];
} hearth__checkpoint;

/* The node's part (antientropy.c writes it). */
typedef struct hearth__cluster_checks {
    int rebuilds; /* diverged namespaces' rebuilds on workers */
    uint64_t divergences; /* found since start */
} hearth__cluster_checks;

/* A namespace's part (antientropy.c writes it): this node's recent
 * checkpoints (a ring), sequences peers published that the tail has not
 * reached, and whether the tree was found to differ (not served,
 * rebuilding). */
typedef struct hearth__cluster_ns_checks {
    hearth__checkpoint checks[HEARTH__CLUSTER_CHECKS];
    unsigned check_next, check_count;
    uint64_t wanted[HEARTH__CLUSTER_CHECKS];
    unsigned nwanted;
    bool diverged, rebuilding;
} hearth__cluster_ns_checks;

/* Whether n's tree was found to differ (not served, rebuilding, never
 * leading); whether a peer published a checkpoint the tail has not
 * reached (hearth__cluster_checks_applied has work). */
bool hearth__cluster_diverged(const hearth__cluster_ns *n);
bool hearth__cluster_checks_wanted(const hearth__cluster_ns *n);
/* Rebuilds on workers (a stop waits for them); divergences found since
 * start. */
int hearth__cluster_rebuilds(const hearth__cluster *c);
uint64_t hearth__cluster_divergences(const hearth__cluster *c);

/* Loop, each renewal: a checkpoint of the last good commit's tree. */
void hearth__cluster_checks_note(hearth__cluster_ns *n);
/* Loop, the tail having applied up to applied_seq: a checkpoint there if
 * a peer published one. */
void hearth__cluster_checks_applied(hearth__cluster_ns *n);
/* n's checkpoints as liveness publishes them: [[seq, hash], ...]. */
struct json_t *hearth__cluster_checks_json(const hearth__cluster_ns *n);
/* Loop, with every live node's liveness: compares, and a namespace whose
 * tree most peers saw otherwise is no longer served, and rebuilt. */
void hearth__cluster_checks_compare(hearth__cluster *c, struct json_t *live);
/* Loop, each tick: the rebuild of a diverged namespace, once it may. */
void hearth__cluster_rebuild_maybe(hearth__cluster_ns *n);
/* The backend's unavailable: a diverged namespace is not served. */
bool hearth__cluster_db_unavailable(hearth_db_t *db);

#endif
