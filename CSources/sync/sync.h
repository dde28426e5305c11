/*
 * sync.h - the client's sync tree (internal).
 *
 * A client shows its listeners the server's data with its own pending
 * writes laid over it, before the server has confirmed them. The pieces,
 * bottom up:
 *
 *   ptree    a tree of optional values by path: merges, acknowledged paths,
 *            and (with shadowing rules) the compound write.
 *   writes   the pending local writes in order, and what they make of the
 *            data at a path ("complete" when a write or the server covers
 *            all of it).
 *   filter   what a view keeps of a node: everything, a range, or a window
 *            of `limit` children; each change it makes is recorded.
 *   view     one query at one path: a server cache (what the server sent)
 *            and an event cache (what listeners saw), and the rules that
 *            move both on each operation.
 *   sync     views hang off the listener trie (events/listeners.h); an
 *            operation walks it and each view it reaches queues events.
 *
 * The rules follow the event semantics the service's SDKs share
 * (../reference/semantics.md), checked scenario by scenario by
 * Tests/CTests/test_syncpoint.c. Nothing here is thread-safe: one loop
 * thread owns a sync tree. An allocation failure leaves a view's caches at
 * their last good state and is reported; it never frees what is in use.
 */
#ifndef HEARTH_SYNC_SYNC_H
#define HEARTH_SYNC_SYNC_H

#include "events/listeners.h"

/* ---- paths ----
 * Segments of a location, including a final ".priority" for priority
 * writes. The names borrow the caller's strings. */
typedef struct hearth__spath {
    unsigned n;
    hearth__name seg[HEARTH_MAX_DEPTH + 1];
} hearth__spath;

void hearth__spath_from(hearth__spath *out, const hearth__path *p);

/* Room for a location and a path below it. */
#define HEARTH__JOINED (2 * (HEARTH_MAX_DEPTH + 1))
/* out = a + b; 0 when it would not fit (nothing lies that deep). */
unsigned hearth__sync_join(const hearth__name *a, unsigned an,
                           const hearth__name *b, unsigned bn,
                           hearth__name out[HEARTH__JOINED]);
bool hearth__name_is_priority(const hearth__name *n);

/* ---- nodes ----
 * JavaScript-client node updates: a priority below an empty node is
 * dropped, a leaf given a child becomes an object keeping its priority, an
 * object losing its last child becomes null. New references; NULL only
 * when out of memory. */
hearth_node_t *hearth__sync_update(const hearth_node_t *node,
                                   const hearth__name *seg, unsigned n,
                                   const hearth_node_t *value);
const hearth_node_t *hearth__sync_get(const hearth_node_t *node,
                                      const hearth__name *seg, unsigned n);
/* node with the children of `from` that it lacks (new reference; NULL
 * when out of memory). */
hearth_node_t *hearth__sync_add_children(const hearth_node_t *node,
                                         const hearth_node_t *from);

/* ---- path trees ---- */

typedef struct hearth__ptree hearth__ptree;
typedef struct hearth__ptree_entry {
    hearth__key *key;
    hearth__ptree *tree;
} hearth__ptree_entry;
struct hearth__ptree {
    hearth_node_t *value;      /* NULL: nothing here */
    hearth__ptree_entry *kids; /* by UTF-16 code units of their keys */
    unsigned n;
    size_t cap;
};

/* An empty tree: 0 and *out, or HEARTH_ENOMEM. */
int hearth__ptree_create(hearth__ptree **out);
void hearth__ptree_free(hearth__ptree *t);
/* The kid under name, or NULL. */
hearth__ptree *hearth__ptree_kid(const hearth__ptree *t,
                                 const hearth__name *name);
/* The tree at a path, or NULL. */
hearth__ptree *hearth__ptree_at(const hearth__ptree *t, const hearth__name *seg,
                                unsigned n);
/* Sets the value at a path (a new reference is taken), keeping what lies
 * below it. */
int hearth__ptree_set(hearth__ptree *t, const hearth__name *seg, unsigned n,
                      const hearth_node_t *value);
/* No value anywhere. */
bool hearth__ptree_empty(const hearth__ptree *t);
/* Calls cb for each value, kids before their parent, kids in order; the
 * path is relative to t. */
typedef int (*hearth__ptree_cb)(const hearth__name *seg, unsigned n,
                                const hearth_node_t *value, void *ctx);
int hearth__ptree_foreach(const hearth__ptree *t, hearth__ptree_cb cb,
                          void *ctx);

/* ---- compound writes ----
 * A ptree where a value covers everything below it: writing below a
 * value updates that value. */
int hearth__cw_add(hearth__ptree *cw, const hearth__name *seg, unsigned n,
                   const hearth_node_t *value);
/* Drops the writes at and below a path. */
void hearth__cw_remove(hearth__ptree *cw, const hearth__name *seg, unsigned n);
/* The value a write fixes at path (new reference), or NULL. */
hearth_node_t *hearth__cw_complete(const hearth__ptree *cw,
                                   const hearth__name *seg, unsigned n);
/* node with the writes at and below path applied (new reference). */
hearth_node_t *hearth__cw_apply(const hearth__ptree *cw,
                                const hearth__name *seg, unsigned n,
                                const hearth_node_t *node);

/* ---- pending writes ---- */

typedef struct hearth__pending {
    int64_t id;
    hearth__spath path;
    char *path_text;        /* the strings path's names point into */
    hearth_node_t *value;   /* set */
    hearth__ptree *merge;   /* or update: relative paths -> values */
    bool visible;           /* applied locally (not a hidden transaction) */
} hearth__pending;

typedef struct hearth__writes {
    hearth__pending *w;
    size_t n, cap;
    hearth__ptree *visible; /* the visible writes, layered in order */
} hearth__writes;

int hearth__writes_init(hearth__writes *ws);
void hearth__writes_destroy(hearth__writes *ws);
/* Records a write; value or merge is taken over (also on failure). */
int hearth__writes_add(hearth__writes *ws, int64_t id, const hearth__path *path,
                       hearth_node_t *value, hearth__ptree *merge,
                       bool visible);
/* Forgets write id. *changed: whether what the writes show changed (a
 * hidden write, or one covered by a later write, changes nothing). The
 * record is moved to *out for the caller to hearth__pending_clear. */
int hearth__writes_remove(hearth__writes *ws, int64_t id, bool *changed,
                          hearth__pending *out);
void hearth__pending_clear(hearth__pending *p);

/* The writes seen from one location. */
typedef struct hearth__wref {
    const hearth__writes *ws;
    const hearth__name *seg; /* the location */
    unsigned n;
} hearth__wref;

/* A cache: a node, whether it is all the data at its location, and
 * whether a filter dropped children from it. */
typedef struct hearth__cache {
    hearth_node_t *node;
    bool complete;
    bool filtered;
} hearth__cache;

bool hearth__cache_complete_for_child(const hearth__cache *c,
                                      const hearth__name *key);
bool hearth__cache_complete_for_path(const hearth__cache *c,
                                     const hearth__name *seg, unsigned n);

/* The write covering the location + rel entirely (new reference), or
 * NULL. */
hearth_node_t *hearth__wref_shadow(const hearth__wref *w,
                                   const hearth__name *rel, unsigned n);
/* The complete data here: the covering write, else the server's complete
 * node (may be NULL) with the writes applied, else NULL. */
hearth_node_t *hearth__wref_event_cache(const hearth__wref *w,
                                        const hearth_node_t *server);
/* The children known completely: from a covering write, else the server's
 * children (server may be NULL) with writes applied, plus children the
 * writes set whole. */
hearth_node_t *hearth__wref_event_children(const hearth__wref *w,
                                           const hearth_node_t *server);
/* After the server changed rel: the new data at rel for the event cache,
 * or NULL when writes cover rel (the event cache is unchanged). *ok false
 * on allocation failure. */
hearth_node_t *hearth__wref_after_server(const hearth__wref *w,
                                         const hearth__name *rel, unsigned n,
                                         const hearth_node_t *server,
                                         bool *ok);
/* One child known completely (from writes, or from a server cache that
 * has it), or NULL. */
hearth_node_t *hearth__wref_child(const hearth__wref *w,
                                  const hearth__name *key,
                                  const hearth__cache *server);

/* ---- filters and changes ---- */

typedef struct hearth__change {
    hearth_event_type type; /* child added, removed or changed */
    hearth__key *key;
    hearth_node_t *node;
    hearth_node_t *old;     /* child_changed: the node before */
} hearth__change;

typedef struct hearth__changes {
    hearth__change *c;
    size_t n, cap;
    bool failed;
    /* By key, once there are many (a whole list loading): index + 1 per
     * slot, open addressing; rebuilt when stale. */
    uint32_t *slots;
    size_t nslots;
    bool stale;
} hearth__changes;

void hearth__changes_track(hearth__changes *cs, hearth_event_type type,
                           const hearth__key *key, const hearth_node_t *node,
                           const hearth_node_t *old);
void hearth__changes_clear(hearth__changes *cs);

/* A child and its index position: what windows compare. */
typedef struct hearth__named {
    hearth__key *key; /* NULL: none */
    hearth_node_t *node;
} hearth__named;
void hearth__named_clear(hearth__named *nn);

/* Where a window looks for the next child when one leaves it. */
typedef struct hearth__source {
    const hearth__wref *writes; /* NULL: no source */
    const hearth__cache *event;
    const hearth__cache *server;
    const hearth_node_t *complete_server; /* from an ancestor; may be NULL */
} hearth__source;

typedef enum { HEARTH__FILTER_INDEX, HEARTH__FILTER_RANGE, HEARTH__FILTER_LIMIT } hearth__filter_kind;

typedef struct hearth__filter {
    hearth__filter_kind kind;
    const hearth_query_t *q; /* NULL: the default */
    hearth_query_t *order;   /* q's index alone (NULL for the default) */
} hearth__filter;

int hearth__filter_init(hearth__filter *f, const hearth_query_t *q);
void hearth__filter_destroy(hearth__filter *f);
/* The filter a server cache uses for untagged data: the index alone. */
hearth__filter hearth__filter_index_only(const hearth__filter *f);
bool hearth__filter_filters(const hearth__filter *f);
/* Each returns a new reference (NULL when out of memory) and records the
 * child changes in cs (may be NULL). */
hearth_node_t *hearth__filter_update_child(const hearth__filter *f,
                                           const hearth_node_t *snap,
                                           const hearth__key *key,
                                           const hearth_node_t *child,
                                           const hearth__name *rel,
                                           unsigned nrel,
                                           const hearth__source *src,
                                           hearth__changes *cs);
hearth_node_t *hearth__filter_update_full(const hearth__filter *f,
                                          const hearth_node_t *old,
                                          const hearth_node_t *now,
                                          hearth__changes *cs);
hearth_node_t *hearth__filter_update_priority(const hearth__filter *f,
                                              const hearth_node_t *old,
                                              const hearth_node_t *prio);
/* Index order of two (key, node) children. */
int hearth__filter_compare(const hearth__filter *f, const hearth__key *ak,
                           const hearth_node_t *an, const hearth__key *bk,
                           const hearth_node_t *bn);
/* Finds the child before another in a parent's index order, for the
 * prev keys of a batch of events: the parent's children are put in order
 * once (or not at all when the tree's own order is the index's), then
 * each lookup is a binary search. */
typedef struct hearth__preds {
    const hearth__filter *f;
    const hearth_node_t *parent;
    hearth__item *items; /* NULL until needed */
    size_t n;
    bool by_tree;        /* the B+tree's key order is the index order */
    bool failed;
} hearth__preds;

void hearth__preds_init(hearth__preds *p, const hearth__filter *f,
                        const hearth_node_t *parent);
void hearth__preds_clear(hearth__preds *p);
/* The key before (key, node), or NULL (first, or out of memory). */
const hearth__key *hearth__preds_find(hearth__preds *p, const hearth__key *key,
                                      const hearth_node_t *node);

/* ---- views ---- */

typedef struct hearth__sync hearth__sync;

typedef struct hearth__sview {
    hearth__sync *owner;
    hearth__view *view;
    hearth__filter filter;
    hearth__cache event;  /* what the registrations have seen */
    hearth__cache server; /* what the server sent */
    int64_t tag;          /* the server's name for a filtered query; 0 */
    bool ready;           /* caches initialized */
} hearth__sview;

/* The sync state of a view of the listener index (NULL until listened). */
static inline hearth__sview *hearth__sview_of(const hearth__view *v) {
    return v->data;
}

/* An operation, relative to the view it reaches. */
typedef enum {
    HEARTH__OP_OVERWRITE,
    HEARTH__OP_MERGE,
    HEARTH__OP_ACK,
    HEARTH__OP_LISTEN_COMPLETE
} hearth__op_kind;

typedef struct hearth__op {
    hearth__op_kind kind;
    bool from_user;
    bool tagged;
    const hearth__name *seg; /* path relative to the view */
    unsigned n;
    const hearth_node_t *value;  /* overwrite */
    const hearth__ptree *merge;  /* merge; ack: the paths acknowledged */
    bool revert;                 /* ack */
} hearth__op;

/* Applies op to v and queues the events of its registrations. */
int hearth__view_apply(hearth__view *v, const hearth__op *op,
                       const hearth__wref *writes,
                       const hearth_node_t *complete_server,
                       hearth__event_queue *out);
/* Queues one registration's initial events. */
int hearth__view_initial_events(hearth__view *v, hearth__reg *reg,
                                hearth__event_queue *out);
/* The server's complete data at rel below v, when v has it (borrowed). */
const hearth_node_t *hearth__view_complete_server(const hearth__view *v,
                                                  const hearth__name *rel,
                                                  unsigned n);

/* ---- the sync tree ---- */

typedef struct hearth__tagged {
    int64_t tag;
    hearth__view *view;
} hearth__tagged;

struct hearth__sync {
    hearth__listeners listeners; /* sync points and views */
    hearth__writes writes;
    int64_t next_tag;
    hearth__tagged *tags;        /* the filtered views, by tag */
    size_t ntags, tags_cap;
    hearth__event_queue own_events;
    hearth__event_queue *events; /* raised by the owner; own_events unless
                                    the owner points it elsewhere */
    /* What the owner keeps elsewhere (its cache on disk) at path, asked
     * for a new view when the views know nothing complete there: the data
     * (*complete set), or the children it knows whole, or NULL. May be
     * NULL. */
    hearth_node_t *(*stored)(void *ctx, const hearth__path *path,
                             const hearth_query_t *q, bool *complete);
    void *stored_ctx;
};

int hearth__sync_init(hearth__sync *s);
void hearth__sync_destroy(hearth__sync *s);

/* Registers reg at path for q (NULL: default), creating the view with its
 * caches from what is known (complete data at or above path, else every
 * child some view or the store knows whole: the view then shows those at
 * once, and its value waits for the server), and queues reg's initial
 * events. *tag gets
 * the view's tag (0 when it loads all data); *created whether the view is
 * new. */
int hearth__sync_listen(hearth__sync *s, const hearth__path *path,
                        const hearth_query_t *q, hearth__reg *reg,
                        int64_t *tag, bool *created);
/* Removes a registration; *view_gone tells whether its view went too. */
void hearth__sync_unlisten(hearth__sync *s, hearth__reg *reg, bool *view_gone);

int hearth__sync_user_set(hearth__sync *s, const hearth__path *path,
                          hearth_node_t *value, int64_t id, bool visible);
int hearth__sync_user_merge(hearth__sync *s, const hearth__path *path,
                            hearth__ptree *merge, int64_t id);
int hearth__sync_ack(hearth__sync *s, int64_t id, bool revert);
/* Server data; tag 0 for untagged (every view at and around path). */
int hearth__sync_server_set(hearth__sync *s, const hearth__path *path,
                            const hearth_node_t *value, int64_t tag);
int hearth__sync_server_merge(hearth__sync *s, const hearth__path *path,
                              const hearth__ptree *merge, int64_t tag);
int hearth__sync_listen_complete(hearth__sync *s, const hearth__path *path,
                                 int64_t tag);
/* The view with tag, or NULL. */
hearth__view *hearth__sync_tagged(hearth__sync *s, int64_t tag);
/* What the client shows at path (pending writes over the server's data)
 * when it is known completely (new reference), else NULL. */
hearth_node_t *hearth__sync_local(hearth__sync *s, const hearth__path *path);

#endif
