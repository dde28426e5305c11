/*
 * query.h - query parameters and their evaluation over a node (internal).
 *
 * A query orders children by an index (priority by default, key, value or
 * a child path), keeps those between its bounds, then a window of `limit`
 * from the first or the last. A NULL query means the default: priority
 * order, everything.
 */
#ifndef HEARTH_QUERY_QUERY_H
#define HEARTH_QUERY_QUERY_H

#include "path/path.h"
#include "tree/node.h"

enum {
    HEARTH__INDEX_PRIORITY = 0,
    HEARTH__INDEX_KEY = 1,
    HEARTH__INDEX_VALUE = 2,
    HEARTH__INDEX_CHILD = 3,
};

typedef struct hearth__bound {
    bool set;
    bool inclusive;
    hearth_node_t *value; /* the index value (for order by key: the key) */
    hearth__key *name;    /* tie-breaking key; NULL: the sentinel below */
    int8_t sentinel;      /* HEARTH__NAME_MIN / _MAX when name is NULL */
    bool name_given;      /* a key was passed (or implied by startAfter) */
} hearth__bound;

struct hearth_query_s {
    uint8_t index;
    bool order_set;
    char *child_path; /* order by child: the path text */
    hearth__path child;
    hearth__bound start, end;
    uint32_t limit;  /* 0: none */
    char limit_from; /* 'l' (first) or 'r' (last) */
};

/* A selected child with its index value, in query order. */
typedef struct hearth__item {
    const hearth__key *key;
    const hearth_node_t *node;
    const hearth_node_t *iv; /* index value (NULL for order by key) */
} hearth__item;

/* No bounds and no limit: the view holds every child. */
bool hearth__query_loads_all(const hearth_query_t *q);
/* Loads all in priority order: the shared default view. */
bool hearth__query_is_default(const hearth_query_t *q);

/* The children of node that q selects, in q's order, borrowed from node.
 * *items is NULL when none; hearth__free it. */
int hearth__query_select(const hearth_query_t *q, const hearth_node_t *node,
                         hearth__item **items, size_t *n);

/* What a view of q shows of node: the node itself when q loads all data,
 * else the selected children without priority. New reference. */
int hearth__query_view_node(const hearth_query_t *q, const hearth_node_t *node,
                            hearth_node_t **out);

/* Whether a child lies between q's bounds (true for a NULL query). */
bool hearth__query_in_range(const hearth_query_t *q, const hearth__item *it);
/* A copy of q's order without bounds or limit (NULL for NULL). */
hearth_query_t *hearth__query_order_only(const hearth_query_t *q);

/* Index order of two children: <0, 0, >0. */
int hearth__query_compare(const hearth_query_t *q, const hearth__item *a,
                          const hearth__item *b);
const hearth_node_t *hearth__query_index_value(const hearth_query_t *q,
                                               const hearth_node_t *child);
/* Whether a child's change moves it in q's order (child_moved). */
bool hearth__query_index_changed(const hearth_query_t *q,
                                 const hearth_node_t *before,
                                 const hearth_node_t *after);

/* Canonical identity: "default" for the default view, else the query's
 * wire form. hearth__free it. */
char *hearth__query_identity(const hearth_query_t *q);

#endif
