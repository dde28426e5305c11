/*
 * index.h - indexes for child-ordered queries (".indexOn").
 *
 * An index over the children of one location, ordered by the value of a
 * child path and then by key, so that a query's bounds and window are
 * found with two ranks: O(log n + k) instead of filtering and sorting the
 * n children.
 *
 * It is one of Hearth's persistent B+trees whose keys are order-preserving
 * encodings of (index value, key): byte order of the encoding is the
 * query order. The index remembers the version of the location it
 * describes; bringing it up to date diffs that version against the current
 * one, skipping every page they share, so a write costs the index
 * O(changes log n).
 *
 * Why in query/ while only the server builds indexes today (server.c keeps
 * them per namespace, server/rest_read.c serves GETs from them): an index
 * is the query's order made into bytes (hearth__query_index_value, the
 * query's ranks and bounds), and its one contract is to answer exactly as
 * hearth__query_view_node does, which test_query.c checks side by side.
 * Any backend that serves queries (the embedded database, a cluster node)
 * can use it without reaching into server/.
 */
#ifndef HEARTH_QUERY_INDEX_H
#define HEARTH_QUERY_INDEX_H

#include "query/query.h"

typedef struct hearth__index hearth__index;

/* An empty index on the child path of q (a child-ordered query). */
int hearth__index_create(const hearth_query_t *q, hearth__index **out);
void hearth__index_free(hearth__index *ix);

/* Brings the index up to date with `node` (the data at its location). */
int hearth__index_sync(hearth__index *ix, const hearth_node_t *node);

/* What q (same child path, any bounds and limit) selects from `node`, which
 * the index was last synced with: the same as hearth__query_view_node. */
int hearth__index_view(const hearth__index *ix, const hearth_query_t *q,
                       const hearth_node_t *node, hearth_node_t **out);

/* Entries in the index; for tests. */
size_t hearth__index_size(const hearth__index *ix);

#endif
