/*
 * node.h - immutable, reference-counted JSON nodes (internal view).
 *
 * A node is a leaf (boolean, number, string, server-value placeholder), an
 * object (children in a hearth__bt), or the shared empty node (null). Any
 * non-empty node may carry a priority (a number or string leaf; in a value
 * about to be written, also a server value). Nodes are
 * allocated at the size their type needs.
 */
#ifndef HEARTH_TREE_NODE_H
#define HEARTH_TREE_NODE_H

#include "tree/children.h"

enum { HEARTH__SV_TIMESTAMP = 1, HEARTH__SV_INCREMENT = 2 };

/* Object flags. */
enum {
    HEARTH__HAS_SERVER_VALUES = 0x1, /* may hold .sv placeholders below */
};

struct hearth_node_s {
    atomic_uint refs;
    uint8_t type;  /* hearth_type */
    uint8_t sv;    /* HEARTH__SV_* for server values */
    uint8_t flags; /* HEARTH__HAS_* (objects; leaves: server value) */
    uint8_t reserved;
    hearth_node_t *priority; /* NULL: none */
    union {
        bool boolean;
        double number; /* also the increment of a server value */
        size_t len;    /* string: bytes follow the union */
        struct {
            hearth__bt *tree;
            uint32_t prio_children; /* children that carry a priority */
            _Atomic(char *) hash;   /* cached node hash, NULL until asked */
        } obj;
    } u;
};

/* hearth_node_incref of a node known not to be NULL, inline: a page copy
 * takes one for every child. */
static inline void hearth__node_ref(hearth_node_t *n) {
    atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
}

/* hearth_node_decref in two steps, so that a caller releasing many nodes
 * can drop every count first (their cache misses overlapping) and free
 * the ones that reached zero after: true when n's last reference went and
 * the caller must hearth__node_free it. */
static inline bool hearth__node_unref(hearth_node_t *n) {
    return atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) == 1;
}
/* Asks for the cache lines hearth__node_free(n) will read first. */
void hearth__node_prefetch_free(const hearth_node_t *n);
void hearth__node_free(hearth_node_t *n);

/* The shared empty node (borrowed; never freed). */
hearth_node_t *hearth__node_empty(void);

static inline bool hearth__node_is_empty(const hearth_node_t *n) {
    return n->type == HEARTH_TYPE_NULL;
}
static inline bool hearth__node_is_obj(const hearth_node_t *n) {
    return n->type == HEARTH_TYPE_OBJECT;
}
static inline bool hearth__node_is_leaf(const hearth_node_t *n) {
    return n->type != HEARTH_TYPE_OBJECT && n->type != HEARTH_TYPE_NULL;
}
static inline const char *hearth__node_str(const hearth_node_t *n) {
    return (const char *)(&n->u.len + 1);
}
/* Whether n is, holds, or has as its priority an {".sv"} placeholder
 * (resolved when a write is applied). */
static inline bool hearth__node_has_sv(const hearth_node_t *n) {
    return n->type == HEARTH_TYPE_SERVER_VALUE ||
           (n->priority && n->priority->type == HEARTH_TYPE_SERVER_VALUE) ||
           (n->type == HEARTH_TYPE_OBJECT &&
            (n->flags & HEARTH__HAS_SERVER_VALUES));
}
static inline const hearth_node_t *hearth__prio(const hearth_node_t *n) {
    return n->priority ? n->priority : hearth__node_empty();
}

/* A new object node over tree (taken over), with priority (taken over,
 * may be NULL); the empty node when tree is NULL. Returns NULL (and
 * releases both) when out of memory. */
hearth_node_t *hearth__node_obj_new(hearth__bt *tree, hearth_node_t *priority);
/* A new object node (no priority) from n entries with distinct keys in any
 * order, taking over the entries' references and the array (hearth__free),
 * also on failure. */
int hearth__node_from_entries(hearth__entry *entries, size_t n,
                              hearth_node_t **out);

/* A new reference to a copy of leaf n with another priority. */
hearth_node_t *hearth__node_leaf_with_priority(const hearth_node_t *n,
                                               hearth_node_t *priority);

/* Borrowed child by name (the empty node when absent). */
const hearth_node_t *hearth__node_child(const hearth_node_t *n,
                                        const hearth__name *name);
/* Borrowed descendant at a parsed path's keys (the empty node when
 * absent; a ".priority" ending is not read: the caller's to apply). */
struct hearth__path;
const hearth_node_t *hearth__node_at(const hearth_node_t *root,
                                     const struct hearth__path *path);

/* Copy-on-write update of the child `name` of *n; an empty child removes.
 * Takes over child on success. *n is edited in place when the caller holds
 * it alone; otherwise, or when its type changes, *n is replaced by a new
 * reference and the old one released. On failure *n is unchanged. */
int hearth__node_put_child(hearth_node_t **n, const hearth__name *name,
                           hearth_node_t *child);

/* hearth_node_set with a parsed path. */
int hearth__node_set_path(hearth_node_t **node, const struct hearth__path *p,
                          const hearth_node_t *value, hearth_error_t *err);

/* Keys from n to its deepest leaf: 0 for leaves and null. */
int hearth__node_depth(const hearth_node_t *n);

/* Compares two nodes as query values: null < false < true < numbers <
 * strings < objects; equal objects compare 0. */
int hearth__node_value_compare(const hearth_node_t *a, const hearth_node_t *b);

/* Resolves {".sv"} placeholders in value against `existing` (the data the
 * value will replace) at time now_ms. New reference in *out. */
int hearth__node_resolve_sv(const hearth_node_t *value,
                            const hearth_node_t *existing, int64_t now_ms,
                            hearth_node_t **out);

/* Readies the libraries Hearth shares with the program; called on the
 * program's thread before Hearth starts a thread of its own. */
void hearth__thread_prepare(void);
/* Releases per-thread library state; the last call of threads Hearth
 * starts. */
void hearth__thread_cleanup(void);

#endif
