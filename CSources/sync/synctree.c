/* synctree.c - the client's views over the listener trie, and how an
 * operation reaches them.
 *
 * An operation at path P reaches the views on P's ancestors (as a change
 * below them), at P, and below P (as the part of the change that falls
 * there); descendants raise their events before ancestors. Data for a
 * filtered query arrives tagged and reaches that one view. */
#include "sync/sync.h"

#include <string.h>

static const hearth__ptree empty_tree;

int hearth__sync_init(hearth__sync *s) {
    memset(s, 0, sizeof *s);
    int rc = hearth__listeners_init(&s->listeners);
    if (!rc && (rc = hearth__writes_init(&s->writes)))
        hearth__listeners_destroy(&s->listeners);
    hearth__events_init(&s->own_events);
    s->events = &s->own_events;
    return rc;
}

void hearth__sync_destroy(hearth__sync *s) {
    hearth__events_clear(&s->own_events);
    hearth__listeners_destroy(&s->listeners);
    hearth__writes_destroy(&s->writes);
    hearth__free(s->tags);
    memset(s, 0, sizeof *s);
}

/* ---- views ---- */

static void forget_tag(hearth__sync *s, const hearth__view *v) {
    for (size_t i = 0; i < s->ntags; i++)
        if (s->tags[i].view == v) {
            s->tags[i] = s->tags[--s->ntags];
            return;
        }
}

static void sview_free(void *p) {
    hearth__sview *sv = p;
    if (sv->tag && sv->owner->tags)
        forget_tag(sv->owner, sv->view);
    hearth__filter_destroy(&sv->filter);
    hearth_node_decref(sv->event.node);
    hearth_node_decref(sv->server.node);
    hearth__free(sv);
}

hearth__view *hearth__sync_tagged(hearth__sync *s, int64_t tag) {
    for (size_t i = 0; i < s->ntags; i++)
        if (s->tags[i].tag == tag)
            return s->tags[i].view;
    return NULL;
}

/* The server's complete data at rel below trie node t, from any of its
 * views that has it (borrowed), or NULL. */
static const hearth_node_t *point_complete(const hearth__tnode *t,
                                           const hearth__name *rel,
                                           unsigned n) {
    for (const hearth__view *v = hearth__view_first(t); v;
         v = hearth__view_next(t, v)) {
        const hearth_node_t *c = hearth__view_complete_server(v, rel, n);
        if (c)
            return c;
    }
    return NULL;
}

hearth_node_t *hearth__sync_add_children(const hearth_node_t *node,
                                        const hearth_node_t *from) {
    hearth_node_t *out = hearth_node_incref(node);
    size_t count = hearth__node_is_obj(from) ? hearth_node_child_count(from) : 0;
    for (size_t i = 0; out && i < count; i++) {
        const char *k;
        const hearth_node_t *c = hearth_node_child_at(from, i, &k);
        hearth__name name;
        hearth__name_init(&name, k, strlen(k));
        if (!hearth__node_is_empty(hearth__sync_get(out, &name, 1)))
            continue;
        hearth_node_t *with = hearth__sync_update(out, &name, 1, c);
        hearth_node_decref(out);
        out = with;
    }
    return out;
}

/* The children the server's complete data at trie node t shows whole:
 * those of its complete views (a window's children are whole too) and
 * the complete data of views just below it. */
static hearth_node_t *known_children(const hearth__tnode *t) {
    hearth_node_t *out = hearth_node_null();
    for (const hearth__view *v = t ? hearth__view_first(t) : NULL; out && v;
         v = hearth__view_next(t, v)) {
        const hearth__sview *sv = hearth__sview_of(v);
        if (!sv || !sv->ready || !sv->server.complete)
            continue;
        hearth_node_t *with = hearth__sync_add_children(out, sv->server.node);
        hearth_node_decref(out);
        out = with;
    }
    for (size_t i = 0; t && out && i < t->nkids; i++) {
        const hearth_node_t *c = point_complete(t->kids[i], NULL, 0);
        if (!c)
            continue;
        hearth__name name = hearth__key_name(t->kids[i]->key);
        hearth_node_t *with = hearth__sync_update(out, &name, 1, c);
        hearth_node_decref(out);
        out = with;
    }
    return out;
}

/* What the server is known to have at path, for a new view there: the
 * complete data from a view at or above it, else the children known whole
 * (known_children). */
static hearth_node_t *known_server(hearth__sync *s, const hearth__spath *p,
                                   bool *complete) {
    const hearth__tnode *t = &s->listeners.root;
    for (unsigned i = 0; t; i++) {
        const hearth_node_t *c = point_complete(t, p->seg + i, p->n - i);
        if (c) {
            *complete = true;
            return hearth_node_incref(c);
        }
        if (i == p->n)
            break;
        t = hearth__tnode_kid(t, &p->seg[i]);
    }
    *complete = false;
    return known_children(t);
}

/* A new view's server cache: what the views know (known_server), else
 * what the owner's store knows, else the children both know whole. */
static hearth_node_t *start_server(hearth__sync *s, const hearth__path *path,
                                   const hearth__spath *p,
                                   const hearth_query_t *q, bool *complete) {
    hearth_node_t *server = known_server(s, p, complete);
    if (*complete || !server || !s->stored)
        return server;
    bool stored_complete = false;
    hearth_node_t *stored = s->stored(s->stored_ctx, path, q, &stored_complete);
    if (!stored)
        return server;
    hearth_node_t *out = stored_complete ? hearth_node_incref(stored)
                                         : hearth__sync_add_children(server, stored);
    *complete = stored_complete;
    hearth_node_decref(stored);
    hearth_node_decref(server);
    return out;
}

static int add_tag(hearth__sync *s, hearth__view *v, int64_t tag) {
    hearth__tagged *t = hearth__grow(s->tags, &s->tags_cap, s->ntags + 1,
                                     sizeof *t);
    if (!t)
        return HEARTH_ENOMEM;
    s->tags = t;
    s->tags[s->ntags++] = (hearth__tagged){tag, v};
    return 0;
}

/* Fills a new view's caches from what the server and the writes say. */
static int view_start(hearth__sync *s, hearth__view *v,
                      const hearth__path *path, const hearth__spath *p) {
    hearth__sview *sv = hearth__calloc(1, sizeof *sv);
    if (!sv)
        return HEARTH_ENOMEM;
    sv->owner = s;
    sv->view = v;
    int rc = hearth__filter_init(&sv->filter, v->query);
    if (rc) {
        hearth__free(sv);
        return rc;
    }
    v->data = sv;
    v->data_free = sview_free;
    bool complete;
    hearth_node_t *server = start_server(s, path, p, v->query, &complete);
    hearth__wref w = {&s->writes, p->seg, p->n};
    hearth_node_t *event = NULL;
    bool event_complete = false;
    if (server) {
        event = hearth__wref_event_cache(&w, complete ? server : NULL);
        event_complete = event != NULL;
        if (!event)
            event = hearth__wref_event_children(&w, server);
    }
    hearth_node_t *shown =
        event ? hearth__filter_update_full(&sv->filter, hearth__node_empty(),
                                           event, NULL)
              : NULL;
    hearth_node_decref(event);
    if (!server || !shown) {
        hearth_node_decref(server);
        hearth_node_decref(shown);
        return HEARTH_ENOMEM;
    }
    sv->server = (hearth__cache){server, complete, false};
    sv->event = (hearth__cache){shown, event_complete,
                                hearth__filter_filters(&sv->filter)};
    if (!hearth__query_loads_all(v->query)) {
        sv->tag = ++s->next_tag;
        rc = add_tag(s, v, sv->tag);
        if (rc)
            sv->tag = 0;
    }
    sv->ready = rc == 0;
    return rc;
}

int hearth__sync_listen(hearth__sync *s, const hearth__path *path,
                        const hearth_query_t *q, hearth__reg *reg,
                        int64_t *tag, bool *created) {
    int rc = hearth__listeners_add(&s->listeners, path, q, reg);
    if (rc)
        return rc;
    hearth__view *v = reg->view;
    *created = !hearth__sview_of(v);
    if (!hearth__sview_of(v)) {
        hearth__spath p;
        hearth__spath_from(&p, path);
        rc = view_start(s, v, path, &p);
        if (rc) {
            bool gone;
            hearth__sync_unlisten(s, reg, &gone);
            return rc;
        }
    }
    *tag = hearth__sview_of(v)->tag;
    return hearth__view_initial_events(v, reg, s->events);
}

void hearth__sync_unlisten(hearth__sync *s, hearth__reg *reg, bool *view_gone) {
    hearth__view *v = reg->view;
    *view_gone = hearth__reg_first(v) == reg && !hearth__reg_next(v, reg);
    hearth__listeners_remove(&s->listeners, reg);
}

/* ---- operations ---- */

/* The part of op that falls below child `name`; false when none does. */
static bool op_for_child(const hearth__op *op, const hearth__name *name,
                         hearth__op *out) {
    *out = *op;
    if (op->n > 0) {
        out->seg = op->seg + 1;
        out->n = op->n - 1;
        return true;
    }
    switch (op->kind) {
    case HEARTH__OP_OVERWRITE:
        out->value = hearth__sync_get(op->value, name, 1);
        return true;
    case HEARTH__OP_MERGE: {
        const hearth__ptree *sub = hearth__ptree_kid(op->merge, name);
        if (!sub || hearth__ptree_empty(sub))
            return false;
        if (sub->value) {
            out->kind = HEARTH__OP_OVERWRITE;
            out->value = sub->value;
        } else {
            out->merge = sub;
        }
        return true;
    }
    case HEARTH__OP_ACK:
        if (!op->merge->value) {
            const hearth__ptree *sub = hearth__ptree_kid(op->merge, name);
            out->merge = sub ? sub : &empty_tree;
        }
        return true;
    default:
        return true;
    }
}

typedef struct walk {
    hearth__sync *s;
    hearth__name at[HEARTH_MAX_DEPTH + 1]; /* the trie node's location */
    int rc;
} walk;

static void apply_point(walk *w, hearth__tnode *t, unsigned depth,
                        const hearth__op *op, const hearth_node_t *server) {
    hearth__wref writes = {&w->s->writes, w->at, depth};
    for (hearth__view *v = hearth__view_first(t); v;
         v = hearth__view_next(t, v)) {
        const hearth__sview *sv = hearth__sview_of(v);
        if (!sv || !sv->ready)
            continue;
        int rc = hearth__view_apply(v, op, &writes, server, w->s->events);
        if (rc && !w->rc)
            w->rc = rc;
    }
}

static void apply_below(walk *w, hearth__tnode *t, unsigned depth,
                        const hearth__op *op, const hearth_node_t *server) {
    if (!server)
        server = point_complete(t, NULL, 0);
    for (size_t i = 0; i < t->nkids && depth < HEARTH_MAX_DEPTH; i++) {
        hearth__tnode *kid = t->kids[i];
        hearth__name name = hearth__key_name(kid->key);
        hearth__op child;
        if (!op_for_child(op, &name, &child))
            continue;
        w->at[depth] = name;
        apply_below(w, kid, depth + 1, &child,
                    server ? hearth__sync_get(server, &name, 1) : NULL);
    }
    apply_point(w, t, depth, op, server);
}

static void apply_at(walk *w, hearth__tnode *t, unsigned depth,
                     const hearth__op *op, const hearth_node_t *server) {
    if (op->n == 0) {
        apply_below(w, t, depth, op, server);
        return;
    }
    if (!server)
        server = point_complete(t, NULL, 0);
    const hearth__name *name = &op->seg[0];
    hearth__tnode *kid =
        hearth__name_is_priority(name) ? NULL : hearth__tnode_kid(t, name);
    hearth__op child;
    if (kid && op_for_child(op, name, &child)) {
        w->at[depth] = *name;
        apply_at(w, kid, depth + 1, &child,
                 server ? hearth__sync_get(server, name, 1) : NULL);
    }
    apply_point(w, t, depth, op, server);
}

static int apply(hearth__sync *s, const hearth__op *op) {
    walk w;
    w.s = s;
    w.rc = 0;
    apply_at(&w, &s->listeners.root, 0, op, NULL);
    return w.rc;
}

/* A tagged operation reaches its view alone, relative to the view. */
static int apply_tagged(hearth__sync *s, int64_t tag, const hearth__spath *p,
                        hearth__op *op) {
    hearth__view *v = hearth__sync_tagged(s, tag);
    if (!v)
        return HEARTH_ENOTFOUND; /* a listen since removed: nothing to do */
    unsigned depth = v->at->depth;
    if (depth > p->n)
        return HEARTH_EINVAL;
    hearth__name at[HEARTH_MAX_DEPTH + 1];
    const hearth__tnode *t = v->at;
    for (unsigned i = depth; i-- > 0; t = t->parent)
        at[i] = hearth__key_name(t->key);
    for (unsigned i = 0; i < depth; i++)
        if (hearth__name_compare(&at[i], &p->seg[i]) != 0)
            return HEARTH_EINVAL;
    op->seg = p->seg + depth;
    op->n = p->n - depth;
    op->tagged = true;
    hearth__wref writes = {&s->writes, at, depth};
    return hearth__view_apply(v, op, &writes, NULL, s->events);
}

hearth_node_t *hearth__sync_local(hearth__sync *s, const hearth__path *path) {
    hearth__spath p;
    hearth__spath_from(&p, path);
    bool complete;
    hearth_node_t *server = known_server(s, &p, &complete);
    if (!server)
        return NULL;
    hearth__wref w = {&s->writes, p.seg, p.n};
    hearth_node_t *out = hearth__wref_event_cache(&w, complete ? server : NULL);
    hearth_node_decref(server);
    return out;
}

int hearth__sync_user_set(hearth__sync *s, const hearth__path *path,
                          hearth_node_t *value, int64_t id, bool visible) {
    /* The pending write keeps its own reference. */
    int rc = hearth__writes_add(&s->writes, id, path, hearth_node_incref(value),
                                NULL, visible);
    if (rc || !visible)
        return rc;
    hearth__spath p;
    hearth__spath_from(&p, path);
    hearth__op op = {HEARTH__OP_OVERWRITE, true, false, p.seg, p.n, value,
                     NULL, false};
    return apply(s, &op);
}

int hearth__sync_user_merge(hearth__sync *s, const hearth__path *path,
                            hearth__ptree *merge, int64_t id) {
    int rc = hearth__writes_add(&s->writes, id, path, NULL, merge, true);
    if (rc)
        return rc;
    hearth__spath p;
    hearth__spath_from(&p, path);
    hearth__op op = {HEARTH__OP_MERGE, true, false, p.seg, p.n, NULL, merge,
                     false};
    return apply(s, &op);
}

typedef struct mark_ctx {
    hearth__ptree *t;
    int rc;
} mark_ctx;

static int mark_path(const hearth__name *seg, unsigned n,
                     const hearth_node_t *value, void *ctx) {
    (void)value;
    mark_ctx *m = ctx;
    if (!m->rc)
        m->rc = hearth__ptree_set(m->t, seg, n, hearth__node_empty());
    return 0;
}

int hearth__sync_ack(hearth__sync *s, int64_t id, bool revert) {
    hearth__pending gone;
    bool changed;
    int rc = hearth__writes_remove(&s->writes, id, &changed, &gone);
    if (rc || !changed) {
        if (!rc)
            hearth__pending_clear(&gone);
        return rc;
    }
    /* The paths the write touched. */
    hearth__ptree *affected = NULL;
    int made = hearth__ptree_create(&affected);
    mark_ctx m = {affected, made};
    if (!m.rc && gone.value)
        m.rc = hearth__ptree_set(affected, NULL, 0, hearth__node_empty());
    else if (!m.rc)
        hearth__ptree_foreach(gone.merge, mark_path, &m);
    if (!m.rc) {
        hearth__op op = {HEARTH__OP_ACK, true, false, gone.path.seg,
                         gone.path.n, NULL, affected, revert};
        m.rc = apply(s, &op);
    }
    hearth__ptree_free(affected);
    hearth__pending_clear(&gone);
    return m.rc;
}

int hearth__sync_server_set(hearth__sync *s, const hearth__path *path,
                            const hearth_node_t *value, int64_t tag) {
    hearth__spath p;
    hearth__spath_from(&p, path);
    hearth__op op = {HEARTH__OP_OVERWRITE, false, false, p.seg, p.n, value,
                     NULL, false};
    return tag ? apply_tagged(s, tag, &p, &op) : apply(s, &op);
}

int hearth__sync_server_merge(hearth__sync *s, const hearth__path *path,
                              const hearth__ptree *merge, int64_t tag) {
    hearth__spath p;
    hearth__spath_from(&p, path);
    hearth__op op = {HEARTH__OP_MERGE, false, false, p.seg, p.n, NULL, merge,
                     false};
    return tag ? apply_tagged(s, tag, &p, &op) : apply(s, &op);
}

int hearth__sync_listen_complete(hearth__sync *s, const hearth__path *path,
                                 int64_t tag) {
    hearth__spath p;
    hearth__spath_from(&p, path);
    hearth__op op = {HEARTH__OP_LISTEN_COMPLETE, false, false, p.seg, p.n,
                     NULL, NULL, false};
    return tag ? apply_tagged(s, tag, &p, &op) : apply(s, &op);
}
