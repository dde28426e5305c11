/*
 * listeners.h - the listener index and the event generator (internal).
 *
 * Registrations (one per observer) are grouped into views: all
 * registrations at one path with the same query identity share a view.
 * Views hang off a trie of path segments, so that a write at path W visits
 * only the views on W's ancestors (which see a change in one known child)
 * and those at or below W (which may see anything change).
 *
 * Nothing here is thread-safe: the database's loop thread owns it all.
 */
#ifndef HEARTH_EVENTS_LISTENERS_H
#define HEARTH_EVENTS_LISTENERS_H

#include "query/query.h"
#include "common/list.h"
#include "common/map.h"

typedef struct hearth__view hearth__view;
typedef struct hearth__tnode hearth__tnode;

typedef struct hearth__reg {
    hearth_observer_t handle;
    unsigned mask; /* HEARTH_MASK_* */
    hearth_event_cb cb;
    void *ctx;
    hearth_free_cb ctx_free;
    bool removed; /* unlinked, or about to be: raise nothing more */
    hearth__view *view;
    /* in the view, registration order; both ways, so that adding and
     * removing one of a location's many listeners costs the same as one
     * of few (a walk made 10,000 listens of one path quadratic) */
    hearth__list link;
} hearth__reg;

struct hearth__view {
    char *key;              /* the trie node's address, then identity */
    size_t key_len;
    char *identity;         /* "default" or the query's wire form (in key) */
    hearth_query_t *query;  /* NULL for the default view */
    hearth__list regs;      /* hearth__reg's link, registration order */
    hearth__tnode *at;
    hearth__list link;      /* in the trie node, creation order */
    /* State the index's owner keeps per view, freed with the view through
     * data_free (as uv_handle_t's data: this layer never looks inside). */
    void *data;
    void (*data_free)(void *data);
    /* Scratch for one write (see hearth__listeners_collect). */
    uint64_t stamp;
    bool full;              /* anything at or below the view may change */
    hearth__name *hints;    /* else: these children may change */
    size_t nhints, hints_cap;
    size_t order;
};

struct hearth__tnode {
    hearth__key *key;       /* NULL at the root */
    char *path;             /* "/a/b"; "/" at the root */
    unsigned depth;
    hearth__tnode *parent;
    hearth__tnode **kids;   /* sorted by key */
    size_t nkids, kids_cap;
    hearth__list views;     /* hearth__view's link, creation order */
};

/* A view's registrations and a trie node's views in order: the first, and
 * the one after another (NULL at the end). */
#define hearth__reg_first(v)                                                   \
    HEARTH__LIST_ITEM_OR_NULL(hearth__list_first(&(v)->regs), hearth__reg, link)
#define hearth__reg_next(v, r)                                                 \
    HEARTH__LIST_ITEM_OR_NULL(hearth__list_next(&(v)->regs, &(r)->link),       \
                              hearth__reg, link)
#define hearth__view_first(t)                                                  \
    HEARTH__LIST_ITEM_OR_NULL(hearth__list_first(&(t)->views), hearth__view,   \
                              link)
#define hearth__view_next(t, v)                                                \
    HEARTH__LIST_ITEM_OR_NULL(hearth__list_next(&(t)->views, &(v)->link),      \
                              hearth__view, link)

typedef struct hearth__listeners {
    hearth__tnode root;
    uint64_t stamp;
    hearth__map regs; /* the handle's bytes -> its registration */
    /* (trie node, identity) -> view (the view's key): a location may have
     * as many views as distinct queries are listened to there, and finding
     * one by walking them made many of them quadratic */
    hearth__map views;
} hearth__listeners;

int hearth__listeners_init(hearth__listeners *l);
/* Frees everything, calling each registration's ctx_free. */
void hearth__listeners_destroy(hearth__listeners *l);

/* Adds reg at path under query q (copied; NULL for default). */
int hearth__listeners_add(hearth__listeners *l, const hearth__path *path,
                          const hearth_query_t *q, hearth__reg *reg);
hearth__reg *hearth__listeners_find(hearth__listeners *l,
                                    hearth_observer_t handle);
/* Unlinks reg (pruning empty views and trie nodes) and frees it after
 * calling its ctx_free. */
void hearth__listeners_remove(hearth__listeners *l, hearth__reg *reg);
/* The kid of t under name, or NULL. */
hearth__tnode *hearth__tnode_kid(const hearth__tnode *t,
                                 const hearth__name *name);
/* The trie node at exactly path, or NULL. */
hearth__tnode *hearth__listeners_at(hearth__listeners *l,
                                    const hearth__path *path);

/* The views a write of `paths` may change, deepest first, each with `full`
 * or its hints set. *views is NULL when none; hearth__free it. The hints
 * borrow the paths' strings. */
int hearth__listeners_collect(hearth__listeners *l,
                              const hearth__path *const *paths, size_t n,
                              hearth__view ***views, size_t *nviews);

/* ---- events ---- */

typedef struct hearth__event_rec {
    hearth__reg *reg;
    hearth_event_type type;
    hearth__key *key;  /* child events */
    hearth__key *prev; /* previous sibling, or NULL */
    hearth_node_t *node;
    int status;        /* HEARTH_EVENT_CANCEL: why */
} hearth__event_rec;

typedef struct hearth__event_queue {
    hearth__event_rec *recs;
    size_t n, cap;
} hearth__event_queue;

void hearth__events_init(hearth__event_queue *q);
/* Releases the records (without raising them). */
void hearth__events_clear(hearth__event_queue *q);

/* Queues what the view's registrations see change from old_full to
 * new_full (the complete data at the view's path), using the view's
 * full/hints scratch. */
int hearth__view_generate(hearth__view *v, const hearth_node_t *old_full,
                          const hearth_node_t *new_full,
                          hearth__event_queue *out);
/* Queues the initial events of one registration: child_added for each
 * child in order, then value. */
int hearth__reg_initial_events(hearth__reg *reg, const hearth_node_t *full,
                               hearth__event_queue *out);

/* Queues one event (references taken on key, prev and node). */
int hearth__events_push(hearth__event_queue *q, hearth__reg *reg,
                        hearth_event_type type, const hearth__key *key,
                        const hearth__key *prev, const hearth_node_t *node);

/* Queues the end of a registration (HEARTH_EVENT_CANCEL with status). */
int hearth__events_push_cancel(hearth__event_queue *q, hearth__reg *reg,
                               int status);

/* Raises the queued events in order, skipping removed registrations, and
 * empties the queue. */
void hearth__events_raise(hearth__event_queue *q);

#endif
