/*
 * children_pages.h - the pages of the children B+tree (internal to
 * tree/children*.c): leaves holding entries, inner pages holding kids,
 * each with its entry count, shared by reference count between trees.
 */
#ifndef HEARTH_TREE_CHILDREN_PAGES_H
#define HEARTH_TREE_CHILDREN_PAGES_H

#include "tree/children.h"

#include <stdatomic.h>

#define BT_ORDER 32

struct hearth__bt {
    atomic_uint refs;
    uint16_t n;   /* entries (leaf) or kids (inner) */
    uint16_t cap; /* entry capacity of a leaf */
    bool leaf;
    size_t count; /* entries in this subtree */
};

typedef struct leaf_page {
    hearth__bt h;
    hearth__entry e[];
} leaf_page;

typedef struct bt_first {
    const hearth__key *key;
    uint64_t sort;
} bt_first;

/* A kid page and its entry count, side by side: the descent reads the
 * pointer, and an update then changes the count on the same cache line. */
typedef struct bt_kid {
    hearth__bt *page;
    size_t count;
} bt_kid;

typedef struct inner_page {
    hearth__bt h;
    bt_kid kid[BT_ORDER];
    bt_first first[BT_ORDER]; /* kid[i]'s first key (borrowed) and its sort */
} inner_page;

static inline leaf_page *as_leaf(const hearth__bt *p) { return (leaf_page *)p; }
static inline inner_page *as_inner(const hearth__bt *p) {
    return (inner_page *)p;
}

static inline bool page_unique(const hearth__bt *p) {
    return atomic_load_explicit(&((hearth__bt *)p)->refs,
                                memory_order_acquire) == 1;
}

static inline bt_first page_first(const hearth__bt *p) {
    if (p->leaf) {
        bt_first f = {as_leaf(p)->e[0].key, as_leaf(p)->e[0].sort};
        return f;
    }
    return as_inner(p)->first[0];
}

static inline const hearth__key *page_first_key(const hearth__bt *p) {
    return page_first(p).key;
}

#endif
