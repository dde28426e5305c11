/* backend.h - the cluster backend (cluster/backend.c): the database of
 * each namespace open on the cluster, its writes ordered here (leading),
 * held (leadership settling) or forwarded, and the list of the open
 * namespaces. Internal to cluster/. */
#ifndef HEARTH_CLUSTER_BACKEND_H
#define HEARTH_CLUSTER_BACKEND_H

#include "cluster/internal.h"

/* A namespace's part (backend.c writes it): client writes waiting, for
 * leadership settled or for the tail. */
typedef struct hearth__cluster_hold {
    hearth__list held; /* of hearth__db_op, by link */
} hearth__cluster_hold;

extern const hearth__db_backend hearth__db_cluster;
hearth__cluster_ns *hearth__cluster_ns_of(hearth_db_t *db);
/* The open namespace name (NULL: none). */
hearth__cluster_ns *hearth__cluster_find(hearth__cluster *c, const char *name);
/* Whether n holds writes; runs those held while leadership settled
 * (loop thread). */
bool hearth__cluster_holding(const hearth__cluster_ns *n);
void hearth__cluster_release_held(hearth__cluster_ns *n);

#endif
