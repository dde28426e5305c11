/*
 * children.h - the children of a node: a persistent B+tree keyed by name.
 *
 * Pages are reference counted and immutable once shared. An update path-
 * copies the pages it touches unless the caller holds them alone (every page
 * from the root down has one reference), in which case they are changed in
 * place: successive inserts into a fresh node cost what a mutable map costs,
 * while snapshots held elsewhere never change.
 *
 * Every update is failure-atomic: it allocates all it needs before it
 * changes anything, so HEARTH_ENOMEM leaves the tree exactly as it was.
 *
 * Leaves hold (key, node) entries in name order; inner pages hold their
 * kids, the kids' entry counts (so rank and index lookups are O(log n)) and
 * the kids' first keys (borrowed from the kids' own entries).
 * A NULL tree is the empty map.
 */
#ifndef HEARTH_TREE_CHILDREN_H
#define HEARTH_TREE_CHILDREN_H

#include "path/key.h"

typedef struct hearth__bt hearth__bt;

typedef struct hearth__entry {
    hearth__key *key;
    hearth_node_t *node;
    uint64_t sort; /* the key's hearth__name_sort, kept by the tree */
} hearth__entry;

size_t hearth__bt_count(const hearth__bt *t);
void hearth__bt_incref(hearth__bt *t);
void hearth__bt_decref(hearth__bt *t);

/* Lookups (borrowed results). */
const hearth__entry *hearth__bt_find(const hearth__bt *t,
                                     const hearth__name *name);
const hearth__entry *hearth__bt_at(const hearth__bt *t, size_t index);
/* Number of entries ordered before name; *found tells whether name is in. */
size_t hearth__bt_rank(const hearth__bt *t, const hearth__name *name,
                       bool *found);
/* hearth__bt_find, and in the same walk whether the caller, holding t
 * alone, also holds every page down to name's leaf alone (*alone; so the
 * entry's node is reachable only through this tree). When the leaf will
 * be copied (`copying`: the caller copies t's node anyway, or a page on
 * the way is shared), its nodes' counts, which the copy increments, are
 * asked for now, so that their misses overlap the rest of the caller's
 * descent instead of waiting at the copy. */
const hearth__entry *hearth__bt_find_held(const hearth__bt *t,
                                          const hearth__name *name,
                                          bool copying, bool *alone);

/* Inserts or replaces name -> node. `key` (borrowed, may be NULL) is reused
 * for a new entry, else one is made from name. Takes over the caller's
 * reference to node on success only. With `replaced`, it gets the node
 * that was there (the tree's reference, now the caller's) or NULL, so a
 * caller needs no lookup of its own before; without, that node is
 * released. */
int hearth__bt_put(hearth__bt **t, const hearth__name *name, hearth__key *key,
                   hearth_node_t *node, hearth_node_t **replaced);
/* hearth__bt_put of a name that a lookup in *t found at entry `at` (NULL:
 * not known), without a second search when *t is a single leaf: `at`
 * gives the slot. */
int hearth__bt_replace(hearth__bt **t, const hearth__name *name,
                       const hearth__entry *at, hearth_node_t *node,
                       hearth_node_t **replaced);
/* Removes name if present. */
int hearth__bt_remove(hearth__bt **t, const hearth__name *name);

/* Builds a tree from n entries sorted by name with distinct keys, taking
 * over their references on success. */
int hearth__bt_build(hearth__entry *entries, size_t n, hearth__bt **out);

/* Forward iteration from an index. */
#define HEARTH__BT_MAX_DEPTH 16
typedef struct hearth__bt_iter {
    const hearth__bt *page[HEARTH__BT_MAX_DEPTH];
    unsigned slot[HEARTH__BT_MAX_DEPTH];
    int depth; /* -1 when done */
} hearth__bt_iter;

void hearth__bt_iter_init(hearth__bt_iter *it, const hearth__bt *t,
                          size_t start);
const hearth__entry *hearth__bt_iter_next(hearth__bt_iter *it);

/* Calls cb for every key whose node differs between a and b, in key
 * order: (key, old, NULL) removed, (key, NULL, new) added, (key, old, new)
 * replaced by another node (which may still be equal in value). Pages the
 * two trees share are skipped whole, so comparing a tree with an update of
 * itself costs O(changes log n). Stops when cb returns non-zero and
 * returns that value. */
typedef int (*hearth__bt_diff_cb)(const hearth__key *key,
                                  const hearth_node_t *old,
                                  const hearth_node_t *now, void *ctx);
int hearth__bt_diff(const hearth__bt *a, const hearth__bt *b,
                    hearth__bt_diff_cb cb, void *ctx);

/* Checks the invariants (order, counts, first keys); for tests. */
bool hearth__bt_check(const hearth__bt *t);

#endif
