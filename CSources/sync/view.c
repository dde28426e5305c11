/* view.c - one query at one location on a client: how each operation moves
 * its server cache and its event cache, and the events the move raises.
 *
 * The server cache holds what the server sent (complete, or only some
 * children); the event cache holds what the registrations have seen: the
 * server's data with the pending writes over it, filtered by the query.
 * An operation updates the server cache first, then recomputes the part
 * of the event cache it touched, recording child changes; a value event
 * follows when the event cache is complete and something changed (or it
 * just became complete). */
#include "sync/sync.h"

#include <string.h>

typedef struct vctx {
    const hearth__filter *f;
    const hearth__wref *w;
    const hearth_node_t *complete_server; /* from an ancestor, or NULL */
    hearth__changes cs;
    bool oom;
} vctx;

typedef struct vcache {
    hearth__cache event, server;
} vcache;

/* Replaces c's node by n (taken over); NULL means out of memory. */
static void set_node(vctx *x, hearth__cache *c, hearth_node_t *n) {
    if (!n) {
        x->oom = true;
        return;
    }
    hearth_node_decref(c->node);
    c->node = n;
}

static hearth__key *key_of(vctx *x, const hearth__name *name) {
    hearth__key *k = hearth__key_create(name);
    if (!k)
        x->oom = true;
    return k;
}

static hearth__source source_of(vctx *x, const vcache *vc) {
    return (hearth__source){x->w, &vc->event, &vc->server, x->complete_server};
}

/* A child the view knows completely, from its event cache, the server or
 * the writes (new reference), or NULL. */
static hearth_node_t *complete_child(vctx *x, const vcache *vc,
                                     const hearth__name *key) {
    if (hearth__cache_complete_for_child(&vc->event, key))
        return hearth_node_incref(hearth__sync_get(vc->event.node, key, 1));
    hearth__cache server = vc->server;
    if (x->complete_server)
        server = (hearth__cache){(hearth_node_t *)x->complete_server, true,
                                 false};
    return hearth__wref_child(x->w, key, &server);
}

/* ---- after the server's data changed at rel ---- */

static void event_after_server(vctx *x, vcache *vc, const hearth__name *rel,
                               unsigned n, const hearth__source *src) {
    hearth_node_t *shadow = hearth__wref_shadow(x->w, rel, n);
    if (shadow) {
        hearth_node_decref(shadow); /* a write hides the change */
        return;
    }
    const hearth_node_t *old = vc->event.node;
    hearth_node_t *now = NULL;
    if (n == 0) {
        const hearth_node_t *server =
            vc->server.complete ? vc->server.node : NULL;
        hearth_node_t *full;
        if (vc->server.filtered) {
            /* Only the children known whole can take the writes. */
            full = hearth__wref_event_children(
                x->w, server && hearth__node_is_obj(server)
                          ? server
                          : hearth__node_empty());
        } else {
            full = hearth__wref_event_cache(x->w, server);
            if (!full)
                return;
        }
        now = full ? hearth__filter_update_full(x->f, old, full, &x->cs) : NULL;
        hearth_node_decref(full);
    } else if (hearth__name_is_priority(&rel[0])) {
        bool ok;
        hearth_node_t *prio =
            hearth__wref_after_server(x->w, rel, n, vc->server.node, &ok);
        now = prio ? hearth__filter_update_priority(x->f, old, prio)
                   : ok ? hearth_node_incref(old) : NULL;
        hearth_node_decref(prio);
    } else {
        hearth_node_t *child;
        if (hearth__cache_complete_for_child(&vc->event, &rel[0])) {
            bool ok;
            hearth_node_t *upd =
                hearth__wref_after_server(x->w, rel, n, vc->server.node, &ok);
            const hearth_node_t *was = hearth__sync_get(old, rel, 1);
            child = upd ? hearth__sync_update(was, rel + 1, n - 1, upd)
                        : ok ? hearth_node_incref(was) : NULL;
            if (!child)
                x->oom = true;
            hearth_node_decref(upd);
        } else {
            child = hearth__wref_child(x->w, &rel[0], &vc->server);
        }
        if (!child)
            return; /* nothing complete to show for that child */
        hearth__key *key = key_of(x, &rel[0]);
        if (key)
            now = hearth__filter_update_child(x->f, old, key, child, rel + 1,
                                              n - 1, src, &x->cs);
        if (key)
            hearth__key_decref(key);
        hearth_node_decref(child);
    }
    set_node(x, &vc->event, now);
    vc->event.complete = vc->event.complete || n == 0;
    vc->event.filtered = hearth__filter_filters(x->f);
}

static void server_overwrite(vctx *x, vcache *vc, const hearth__name *rel,
                             unsigned n, const hearth_node_t *value,
                             bool filter_server) {
    hearth__filter sf =
        filter_server ? *x->f : hearth__filter_index_only(x->f);
    const hearth__cache old = vc->server;
    hearth_node_t *now = NULL;
    if (n == 0) {
        now = hearth__filter_update_full(&sf, old.node, value, NULL);
    } else if (hearth__filter_filters(&sf) && !old.filtered) {
        /* First filtered data: filter the whole node once. */
        hearth_node_t *whole = hearth__sync_update(old.node, rel, n, value);
        now = whole ? hearth__filter_update_full(&sf, old.node, whole, NULL)
                    : NULL;
        hearth_node_decref(whole);
    } else {
        /* Data deep inside a child this view does not know is some other
         * listener's: keep out of it. */
        if (!hearth__cache_complete_for_path(&old, rel, n) && n > 1)
            return;
        const hearth_node_t *was = hearth__sync_get(old.node, rel, 1);
        hearth_node_t *child = hearth__sync_update(was, rel + 1, n - 1, value);
        if (child && hearth__name_is_priority(&rel[0])) {
            now = hearth__filter_update_priority(&sf, old.node, child);
        } else if (child) {
            hearth__key *key = key_of(x, &rel[0]);
            now = key ? hearth__filter_update_child(&sf, old.node, key, child,
                                                    rel + 1, n - 1, NULL, NULL)
                      : NULL;
            if (key)
                hearth__key_decref(key);
        }
        hearth_node_decref(child);
    }
    if (!now) {
        x->oom = true;
        return;
    }
    set_node(x, &vc->server, now);
    vc->server.complete = old.complete || n == 0;
    vc->server.filtered = hearth__filter_filters(&sf);
    hearth__source src = source_of(x, vc);
    event_after_server(x, vc, rel, n, &src);
}

/* ---- merges from the server ---- */

typedef struct merge_ctx {
    hearth_node_t *node;
    const hearth__name *prefix;
    unsigned nprefix;
} merge_ctx;

static int merge_one(const hearth__name *seg, unsigned n,
                     const hearth_node_t *value, void *ctx) {
    merge_ctx *m = ctx;
    hearth__name full[HEARTH__JOINED];
    unsigned k = hearth__sync_join(m->prefix, m->nprefix, seg, n, full);
    if (!k && m->nprefix + n)
        return 0;
    hearth_node_t *now = hearth__sync_update(m->node, full, k, value);
    hearth_node_decref(m->node);
    m->node = now;
    return now ? 0 : 1;
}

/* node with each value of t (placed at prefix) written over it. */
static hearth_node_t *apply_merge(const hearth_node_t *node,
                                  const hearth__name *prefix, unsigned nprefix,
                                  const hearth__ptree *t) {
    merge_ctx m = {hearth_node_incref(node), prefix, nprefix};
    hearth__ptree_foreach(t, merge_one, &m);
    return m.node;
}

/* One child's part of a merge: (key, the tree below it, where the tree
 * sits below the child). */
typedef struct merge_part {
    hearth__name key;
    const hearth__ptree *tree;
    const hearth__name *below;
    unsigned nbelow;
} merge_part;

static void server_merge_part(vctx *x, vcache *vc, const merge_part *p,
                              const hearth__cache *orig, bool filter_server) {
    hearth_node_t *child = apply_merge(hearth__sync_get(orig->node, &p->key, 1),
                                       p->below, p->nbelow, p->tree);
    if (!child) {
        x->oom = true;
        return;
    }
    server_overwrite(x, vc, &p->key, 1, child, filter_server);
    hearth_node_decref(child);
}

static void server_merge(vctx *x, vcache *vc, const hearth__name *rel,
                         unsigned n, const hearth__ptree *merge,
                         bool filter_server) {
    /* No data yet: the merge was for an earlier listen here; the complete
     * data is on its way. */
    if (hearth__node_is_empty(vc->server.node) && !vc->server.complete)
        return;
    hearth__cache orig = vc->server;
    hearth_node_incref(orig.node);
    merge_part one;
    merge_part *parts = &one;
    unsigned nparts = 1;
    if (n > 0) {
        one = (merge_part){rel[0], merge, rel + 1, n - 1};
    } else {
        nparts = merge->n;
        parts = hearth__malloc((nparts ? nparts : 1) * sizeof *parts);
        if (!parts) {
            x->oom = true;
            hearth_node_decref(orig.node);
            return;
        }
        for (unsigned i = 0; i < nparts; i++)
            parts[i] = (merge_part){hearth__key_name(merge->kids[i].key),
                                    merge->kids[i].tree, NULL, 0};
    }
    /* Children the server cache has first, then new ones. */
    for (unsigned i = 0; i < nparts; i++)
        if (!hearth__node_is_empty(hearth__sync_get(orig.node, &parts[i].key, 1)))
            server_merge_part(x, vc, &parts[i], &orig, filter_server);
    for (unsigned i = 0; i < nparts; i++) {
        const merge_part *p = &parts[i];
        bool whole = p->nbelow == 0 && p->tree->value;
        bool unknown_deep =
            !hearth__cache_complete_for_child(&orig, &p->key) && !whole;
        if (hearth__node_is_empty(hearth__sync_get(orig.node, &p->key, 1)) &&
            !unknown_deep)
            server_merge_part(x, vc, p, &orig, filter_server);
    }
    if (parts != &one)
        hearth__free(parts);
    hearth_node_decref(orig.node);
}

/* ---- local writes ---- */

static void user_overwrite(vctx *x, vcache *vc, const hearth__name *rel,
                           unsigned n, const hearth_node_t *value) {
    const hearth_node_t *old = vc->event.node;
    if (n == 0) {
        set_node(x, &vc->event,
                 hearth__filter_update_full(x->f, old, value, &x->cs));
        vc->event.complete = true;
        vc->event.filtered = hearth__filter_filters(x->f);
        return;
    }
    if (hearth__name_is_priority(&rel[0])) {
        set_node(x, &vc->event,
                 hearth__filter_update_priority(x->f, old, value));
        return;
    }
    hearth_node_t *child;
    if (n == 1) {
        child = hearth_node_incref(value);
    } else {
        hearth_node_t *known = complete_child(x, vc, &rel[0]);
        if (!known) {
            child = hearth_node_null(); /* nothing whole to write into */
        } else if (hearth__name_is_priority(&rel[n - 1]) &&
                   hearth__node_is_empty(
                       hearth__sync_get(known, rel + 1, n - 2))) {
            /* A priority for an empty node: the server will send it if the
             * node exists there. */
            child = hearth_node_incref(known);
        } else {
            child = hearth__sync_update(known, rel + 1, n - 1, value);
        }
        hearth_node_decref(known);
    }
    if (!child) {
        x->oom = true;
        return;
    }
    if (!hearth_node_equal(hearth__sync_get(old, rel, 1), child)) {
        hearth__key *key = key_of(x, &rel[0]);
        hearth__source src = source_of(x, vc);
        if (key) {
            set_node(x, &vc->event,
                     hearth__filter_update_child(x->f, old, key, child,
                                                 rel + 1, n - 1, &src, &x->cs));
            hearth__key_decref(key);
            vc->event.filtered = hearth__filter_filters(x->f);
        }
    }
    hearth_node_decref(child);
}

typedef struct user_merge_ctx {
    vctx *x;
    vcache *vc;
    const hearth__cache *orig_event;
    const hearth__name *base;
    unsigned nbase;
    bool known_pass;
} user_merge_ctx;

static int user_merge_one(const hearth__name *seg, unsigned n,
                          const hearth_node_t *value, void *ctx) {
    user_merge_ctx *m = ctx;
    hearth__name full[HEARTH__JOINED];
    unsigned k = hearth__sync_join(m->base, m->nbase, seg, n, full);
    if (k == 0)
        return 0;
    bool known = hearth__cache_complete_for_child(m->orig_event, &full[0]);
    if (known == m->known_pass)
        user_overwrite(m->x, m->vc, full, k, value);
    return 0;
}

/* Children the view knows are written first, then the others (which a
 * window may then pull in). */
static void user_merge(vctx *x, vcache *vc, const hearth__name *rel,
                       unsigned n, const hearth__ptree *merge) {
    hearth__cache orig = vc->event;
    hearth_node_incref(orig.node);
    user_merge_ctx m = {x, vc, &orig, rel, n, true};
    hearth__ptree_foreach(merge, user_merge_one, &m);
    m.known_pass = false;
    hearth__ptree_foreach(merge, user_merge_one, &m);
    hearth_node_decref(orig.node);
}

/* ---- acknowledgements ---- */

typedef struct ack_ctx {
    const vcache *vc;
    const hearth__name *base;
    unsigned nbase;
    hearth__ptree *changed;
    bool failed;
} ack_ctx;

static int ack_one(const hearth__name *seg, unsigned n,
                   const hearth_node_t *value, void *ctx) {
    (void)value;
    ack_ctx *a = ctx;
    hearth__name full[HEARTH__JOINED];
    unsigned k = hearth__sync_join(a->base, a->nbase, seg, n, full);
    if (!k && a->nbase + n)
        return 0;
    if (hearth__cache_complete_for_path(&a->vc->server, full, k) &&
        hearth__ptree_set(a->changed, seg, n,
                          hearth__sync_get(a->vc->server.node, full, k)))
        a->failed = true;
    return 0;
}

/* The server confirmed a write: show the server's data where the view has
 * it (the write is no longer laid over it). */
static void ack_write(vctx *x, vcache *vc, const hearth__name *rel, unsigned n,
                      const hearth__ptree *affected) {
    hearth_node_t *shadow = hearth__wref_shadow(x->w, rel, n);
    if (shadow) {
        hearth_node_decref(shadow);
        return;
    }
    bool filter_server = vc->server.filtered;
    const hearth__cache *server = &vc->server;
    if (affected->value) {
        if ((n == 0 && server->complete) ||
            hearth__cache_complete_for_path(server, rel, n)) {
            hearth_node_t *data =
                hearth_node_incref(hearth__sync_get(server->node, rel, n));
            server_overwrite(x, vc, rel, n, data, filter_server);
            hearth_node_decref(data);
            return;
        }
        if (n != 0)
            return;
        /* Acknowledged here without all the data: lay what there is again,
         * as a merge of its children. */
        hearth__ptree *children;
        if (hearth__ptree_create(&children)) {
            x->oom = true;
            return;
        }
        size_t count = hearth_node_child_count(server->node);
        for (size_t i = 0; i < count; i++) {
            const char *k;
            const hearth_node_t *c = hearth_node_child_at(server->node, i, &k);
            hearth__name name;
            hearth__name_init(&name, k, strlen(k));
            if (hearth__ptree_set(children, &name, 1, c))
                x->oom = true;
        }
        hearth_node_t *hold = hearth_node_incref(server->node);
        server_merge(x, vc, rel, 0, children, filter_server);
        hearth_node_decref(hold);
        hearth__ptree_free(children);
        return;
    }
    ack_ctx a = {vc, rel, n, NULL, false};
    if (hearth__ptree_create(&a.changed)) {
        x->oom = true;
        return;
    }
    hearth__ptree_foreach(affected, ack_one, &a);
    if (a.failed)
        x->oom = true;
    server_merge(x, vc, rel, n, a.changed, filter_server);
    hearth__ptree_free(a.changed);
}

/* The server refused a write: show what lies under it again. */
static void revert_write(vctx *x, vcache *vc, const hearth__name *rel,
                         unsigned n) {
    hearth_node_t *shadow = hearth__wref_shadow(x->w, rel, n);
    if (shadow) {
        hearth_node_decref(shadow);
        return;
    }
    const hearth_node_t *old = vc->event.node;
    const hearth__cache *server = &vc->server;
    hearth_node_t *now = NULL;
    if (n == 0 || hearth__name_is_priority(&rel[0])) {
        hearth_node_t *full =
            server->complete ? hearth__wref_event_cache(x->w, server->node)
                             : hearth__wref_event_children(x->w, server->node);
        now = full ? hearth__filter_update_full(x->f, old, full, &x->cs) : NULL;
        hearth_node_decref(full);
    } else {
        hearth__source src = source_of(x, vc);
        hearth_node_t *child = hearth__wref_child(x->w, &rel[0], server);
        if (!child && hearth__cache_complete_for_child(server, &rel[0]))
            child = hearth_node_incref(hearth__sync_get(old, rel, 1));
        bool had = !hearth__node_is_empty(hearth__sync_get(old, rel, 1));
        hearth__key *key = key_of(x, &rel[0]);
        if (!key)
            now = NULL;
        else if (child)
            now = hearth__filter_update_child(x->f, old, key, child, rel + 1,
                                              n - 1, &src, &x->cs);
        else if (had)
            now = hearth__filter_update_child(x->f, old, key,
                                              hearth__node_empty(), rel + 1,
                                              n - 1, &src, &x->cs);
        else
            now = hearth_node_incref(old);
        if (key)
            hearth__key_decref(key);
        hearth_node_decref(child);
        if (now && hearth__node_is_empty(now) && server->complete) {
            /* Nothing left but a leaf the server had. */
            hearth_node_t *full = hearth__wref_event_cache(x->w, server->node);
            if (full && hearth__node_is_leaf(full)) {
                hearth_node_t *leaf =
                    hearth__filter_update_full(x->f, now, full, &x->cs);
                hearth_node_decref(now);
                now = leaf;
            }
            hearth_node_decref(full);
        }
    }
    set_node(x, &vc->event, now);
    hearth_node_t *top = hearth__wref_shadow(x->w, NULL, 0);
    vc->event.complete = server->complete || top;
    hearth_node_decref(top);
    vc->event.filtered = hearth__filter_filters(x->f);
}

/* ---- events ---- */

typedef struct sorter {
    const hearth__filter *f;
    hearth__change **c;
    size_t n;
} sorter;

static void sort_changes(sorter *s) {
    for (size_t i = 1; i < s->n; i++) {
        hearth__change *c = s->c[i];
        size_t j = i;
        while (j > 0 && hearth__filter_compare(s->f, s->c[j - 1]->key,
                                               s->c[j - 1]->node, c->key,
                                               c->node) > 0) {
            s->c[j] = s->c[j - 1];
            j--;
        }
        s->c[j] = c;
    }
}

static bool wants(const hearth__reg *r, hearth_event_type type) {
    return !r->removed && (r->mask & (1u << type));
}

/* Queues child events of one type, in index order, each to every
 * registration (or only `only`) that wants it. */
static int queue_type(hearth__view *v, const hearth__filter *f,
                      hearth__change *cs, size_t n, hearth_event_type type,
                      hearth__preds *preds, hearth__reg *only,
                      hearth__event_queue *out) {
    hearth__change **sel = hearth__malloc((n ? n : 1) * sizeof *sel);
    if (!sel)
        return HEARTH_ENOMEM;
    sorter s = {f, sel, 0};
    for (size_t i = 0; i < n; i++)
        if (cs[i].type == type)
            sel[s.n++] = &cs[i];
    sort_changes(&s);
    int rc = 0;
    for (size_t i = 0; !rc && i < s.n; i++) {
        const hearth__change *c = sel[i];
        for (hearth__reg *r = hearth__reg_first(v); !rc && r;
             r = hearth__reg_next(v, r)) {
            if ((only && r != only) || !wants(r, type))
                continue;
            const hearth__key *prev =
                type == HEARTH_EVENT_CHILD_REMOVED
                    ? NULL
                    : hearth__preds_find(preds, c->key, c->node);
            rc = hearth__events_push(out, r, type, c->key, prev, c->node);
        }
    }
    hearth__free(sel);
    return rc;
}

static int queue_events(hearth__view *v, const hearth__filter *f,
                        hearth__changes *cs, bool value,
                        const hearth_node_t *event_node, hearth__reg *only,
                        hearth__event_queue *out) {
    /* A change of a child's index value moves it. */
    size_t n = cs->n;
    for (size_t i = 0; i < n && !cs->failed; i++) {
        hearth__change *c = &cs->c[i];
        if (c->type == HEARTH_EVENT_CHILD_CHANGED &&
            hearth__query_index_changed(f->order, c->old, c->node)) {
            if (cs->n == cs->cap) {
                hearth__change *g =
                    hearth__grow(cs->c, &cs->cap, cs->n + 1, sizeof *g);
                if (!g) {
                    cs->failed = true;
                    break;
                }
                cs->c = g;
                c = &cs->c[i];
            }
            cs->c[cs->n++] = (hearth__change){
                HEARTH_EVENT_CHILD_MOVED, hearth__key_incref(c->key),
                hearth_node_incref(c->node), NULL};
        }
    }
    if (cs->failed)
        return HEARTH_ENOMEM;
    static const hearth_event_type order[] = {
        HEARTH_EVENT_CHILD_REMOVED, HEARTH_EVENT_CHILD_ADDED,
        HEARTH_EVENT_CHILD_MOVED, HEARTH_EVENT_CHILD_CHANGED};
    int rc = 0;
    hearth__preds preds;
    hearth__preds_init(&preds, f, event_node);
    for (size_t t = 0; !rc && t < HEARTH__ARRAY_SIZE(order); t++)
        rc = queue_type(v, f, cs->c, cs->n, order[t], &preds, only, out);
    hearth__preds_clear(&preds);
    for (hearth__reg *r = hearth__reg_first(v); !rc && value && r;
         r = hearth__reg_next(v, r))
        if ((!only || r == only) && wants(r, HEARTH_EVENT_VALUE))
            rc = hearth__events_push(out, r, HEARTH_EVENT_VALUE, NULL, NULL,
                                     event_node);
    return rc;
}

/* ---- the view's interface ---- */

int hearth__view_apply(hearth__view *v, const hearth__op *op,
                       const hearth__wref *writes,
                       const hearth_node_t *complete_server,
                       hearth__event_queue *out) {
    hearth__sview *sv = hearth__sview_of(v);
    vctx x = {&sv->filter, writes, complete_server, {0}, false};
    vcache vc = {sv->event, sv->server};
    hearth_node_incref(vc.event.node);
    hearth_node_incref(vc.server.node);
    switch (op->kind) {
    case HEARTH__OP_OVERWRITE:
        if (op->from_user)
            user_overwrite(&x, &vc, op->seg, op->n, op->value);
        else
            server_overwrite(&x, &vc, op->seg, op->n, op->value,
                             op->tagged || (vc.server.filtered && op->n > 0));
        break;
    case HEARTH__OP_MERGE:
        if (op->from_user)
            user_merge(&x, &vc, op->seg, op->n, op->merge);
        else
            server_merge(&x, &vc, op->seg, op->n, op->merge,
                         op->tagged || vc.server.filtered);
        break;
    case HEARTH__OP_ACK:
        if (op->revert)
            revert_write(&x, &vc, op->seg, op->n);
        else
            ack_write(&x, &vc, op->seg, op->n, op->merge);
        break;
    case HEARTH__OP_LISTEN_COMPLETE:
        vc.server.complete = vc.server.complete || op->n == 0;
        event_after_server(&x, &vc, op->seg, op->n,
                           &(hearth__source){NULL, NULL, NULL, NULL});
        break;
    }
    /* Value: when complete and anything a listener sees changed. */
    const hearth__cache *was = &sv->event, *now = &vc.event;
    bool value = false;
    if (now->complete) {
        bool leaf_or_empty = !hearth__node_is_obj(now->node);
        value = x.cs.n > 0 || !was->complete ||
                (leaf_or_empty && !hearth_node_equal(now->node, was->node)) ||
                !hearth_node_equal(hearth__prio(now->node),
                                   hearth__prio(was->node));
    }
    hearth_node_decref(sv->event.node);
    hearth_node_decref(sv->server.node);
    sv->event = vc.event;
    sv->server = vc.server;
    int rc = queue_events(v, &sv->filter, &x.cs, value, sv->event.node, NULL,
                          out);
    hearth__changes_clear(&x.cs);
    return x.oom ? HEARTH_ENOMEM : rc;
}

int hearth__view_initial_events(hearth__view *v, hearth__reg *reg,
                                hearth__event_queue *out) {
    hearth__sview *sv = hearth__sview_of(v);
    hearth__changes cs = {0};
    const hearth_node_t *node = sv->event.node;
    size_t count = hearth_node_child_count(node);
    for (size_t i = 0; i < count; i++) {
        const char *k;
        const hearth_node_t *c = hearth_node_child_at(node, i, &k);
        hearth__key *key = hearth__key_from_cstr(k);
        if (!key) {
            cs.failed = true;
            break;
        }
        hearth__changes_track(&cs, HEARTH_EVENT_CHILD_ADDED, key, c, NULL);
        hearth__key_decref(key);
    }
    int rc = cs.failed ? HEARTH_ENOMEM
                       : queue_events(v, &sv->filter, &cs, sv->event.complete,
                                      node, reg, out);
    hearth__changes_clear(&cs);
    return rc;
}

const hearth_node_t *hearth__view_complete_server(const hearth__view *v,
                                                  const hearth__name *rel,
                                                  unsigned n) {
    const hearth__sview *sv = hearth__sview_of(v);
    if (!sv || !sv->ready || !sv->server.complete)
        return NULL;
    const hearth_node_t *cache = sv->server.node;
    if (hearth__query_loads_all(v->query) ||
        (n > 0 && !hearth__node_is_empty(hearth__sync_get(cache, rel, 1))))
        return hearth__sync_get(cache, rel, n);
    return NULL;
}
