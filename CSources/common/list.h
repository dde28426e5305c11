/*
 * list.h - the intrusive doubly linked list, as libuv's uv__queue and
 * Linux's list_head: a hearth__list node is a field of the item, a list
 * is a hearth__list head linked in a ring through its items, and
 * HEARTH__LIST_ITEM gets the item back from its node. No allocation, so
 * nothing here can fail; unlinking is O(1) from the item alone, which is
 * why the lists whose items leave from the middle (connections, streams,
 * sessions, listens) are built on it.
 *
 * Contract:
 * - Zero is valid: a zeroed hearth__list (as calloc and `= {0}` leave it)
 *   is an empty head, or a node in no list. hearth__list_init makes the
 *   same state explicitly.
 * - A node is in at most one list at a time; hearth__list_remove leaves it
 *   in none (removing a node in no list does nothing), so "remove, then
 *   free" is always safe.
 * - The list does not own its items: freeing the head frees nothing, and
 *   an item must leave its list before it is freed.
 * - While walking with HEARTH__LIST_EACH, the current node must not leave
 *   the list; HEARTH__LIST_EACH_SAFE allows removing (and freeing) it, and
 *   no other.
 * Not thread-safe: one list, one thread (or its owner's lock).
 */
#ifndef HEARTH_COMMON_LIST_H
#define HEARTH_COMMON_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hearth__list {
    struct hearth__list *next, *prev;
} hearth__list;

/* The item of type `type` whose field `field` is the node n. */
#define HEARTH__LIST_ITEM(n, type, field)                                      \
    ((type *)(void *)((char *)(n) - offsetof(type, field)))

static inline void *hearth__list__item(const hearth__list *n, size_t offset) {
    return n ? (void *)((char *)(uintptr_t)n - offset) : NULL;
}
/* The same where n may be NULL (as hearth__list_first gives): NULL then. */
#define HEARTH__LIST_ITEM_OR_NULL(n, type, field)                              \
    ((type *)hearth__list__item((n), offsetof(type, field)))

static inline void hearth__list_init(hearth__list *h) { h->next = h->prev = h; }

/* Whether head h has no items (a node: whether it is in no list). */
static inline bool hearth__list_empty(const hearth__list *h) {
    return !h->next || h->next == h;
}

/* Whether node n is in a list. */
static inline bool hearth__list_linked(const hearth__list *n) {
    return !hearth__list_empty(n);
}

static inline void hearth__list__between(hearth__list *n, hearth__list *prev,
                                         hearth__list *next) {
    n->prev = prev;
    n->next = next;
    prev->next = n;
    next->prev = n;
}

/* Links n (in no list) first in h. */
static inline void hearth__list_push_front(hearth__list *h, hearth__list *n) {
    if (!h->next)
        hearth__list_init(h);
    hearth__list__between(n, h, h->next);
}

/* Links n (in no list) last in h. */
static inline void hearth__list_push_back(hearth__list *h, hearth__list *n) {
    if (!h->next)
        hearth__list_init(h);
    hearth__list__between(n, h->prev, h);
}

/* Unlinks n from its list, if any. */
static inline void hearth__list_remove(hearth__list *n) {
    if (hearth__list_empty(n))
        return;
    n->prev->next = n->next;
    n->next->prev = n->prev;
    hearth__list_init(n);
}

/* The first and last nodes of h, NULL when it is empty; the node after
 * and before n in h, NULL at the end. */
static inline hearth__list *hearth__list_first(const hearth__list *h) {
    return hearth__list_empty(h) ? NULL : h->next;
}
static inline hearth__list *hearth__list_last(const hearth__list *h) {
    return hearth__list_empty(h) ? NULL : h->prev;
}
static inline hearth__list *hearth__list_next(const hearth__list *h,
                                              const hearth__list *n) {
    return n->next == h ? NULL : n->next;
}
static inline hearth__list *hearth__list_prev(const hearth__list *h,
                                              const hearth__list *n) {
    return n->prev == h ? NULL : n->prev;
}

/* Unlinks and returns h's first node (NULL: empty): a FIFO's take. */
static inline hearth__list *hearth__list_pop_front(hearth__list *h) {
    hearth__list *n = hearth__list_first(h);
    if (n)
        hearth__list_remove(n);
    return n;
}

/* Moves every node of from to the end of h, in order; from ends empty. */
static inline void hearth__list_splice_back(hearth__list *h,
                                            hearth__list *from) {
    if (hearth__list_empty(from))
        return;
    if (!h->next)
        hearth__list_init(h);
    from->next->prev = h->prev;
    h->prev->next = from->next;
    from->prev->next = h;
    h->prev = from->prev;
    hearth__list_init(from);
}

/* The item of type `type` linked by `field` first in h, and the one after
 * x; NULL at the end. */
#define HEARTH__LIST_FIRST_ITEM(h, type, field)                                \
    HEARTH__LIST_ITEM_OR_NULL(hearth__list_first(h), type, field)
#define HEARTH__LIST_NEXT_ITEM(h, x, type, field)                              \
    HEARTH__LIST_ITEM_OR_NULL(hearth__list_next((h), &(x)->field), type, field)

/* Walks h's items of type `type` (linked by `field`), x each in turn; x
 * may leave the list (and be freed) in the body, no other item may. */
#define HEARTH__LIST_EACH_ITEM(x, h, type, field)                              \
    for (type *x = HEARTH__LIST_FIRST_ITEM(h, type, field),                    \
              *x##_next_ =                                                     \
                  x ? HEARTH__LIST_NEXT_ITEM(h, x, type, field) : NULL;        \
         x; x = x##_next_,                                                     \
              x##_next_ = x ? HEARTH__LIST_NEXT_ITEM(h, x, type, field) : NULL)

/* Walks h's nodes first to last, n each in turn. */
#define HEARTH__LIST_EACH(n, h)                                                \
    for (hearth__list *n = hearth__list_first(h); n;                           \
         n = hearth__list_next((h), n))

/* The same, where n may be removed (and its item freed) in the body: the
 * next node is read first. */
#define HEARTH__LIST_EACH_SAFE(n, h)                                           \
    for (hearth__list *n = hearth__list_first(h),                              \
                      *n##_next_ = n ? hearth__list_next((h), n) : NULL;       \
         n; n = n##_next_, n##_next_ = n ? hearth__list_next((h), n) : NULL)

#endif
