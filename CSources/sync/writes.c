/* writes.c - the pending local writes and what they make of the data at a
 * location: the layer a client lays over the server's data until the
 * server has confirmed (or refused) each write. */
#include "sync/sync.h"

#include <string.h>


int hearth__writes_init(hearth__writes *ws) {
    memset(ws, 0, sizeof *ws);
    return hearth__ptree_create(&ws->visible);
}

void hearth__pending_clear(hearth__pending *p) {
    hearth_node_decref(p->value);
    hearth__ptree_free(p->merge);
    hearth__free(p->path_text);
    memset(p, 0, sizeof *p);
}

void hearth__writes_destroy(hearth__writes *ws) {
    for (size_t i = 0; i < ws->n; i++)
        hearth__pending_clear(&ws->w[i]);
    hearth__free(ws->w);
    hearth__ptree_free(ws->visible);
    memset(ws, 0, sizeof *ws);
}

typedef struct layer_ctx {
    hearth__ptree *cw;
    const hearth__spath *base;
} layer_ctx;

static int layer_one(const hearth__name *seg, unsigned n,
                     const hearth_node_t *value, void *ctx) {
    layer_ctx *l = ctx;
    hearth__name path[HEARTH__JOINED];
    unsigned k = hearth__sync_join(l->base->seg, l->base->n, seg, n, path);
    return k ? hearth__cw_add(l->cw, path, k, value) : 0;
}

/* Lays one write over the compound write. */
static int layer(hearth__ptree *cw, const hearth__pending *p) {
    if (p->value)
        return hearth__cw_add(cw, p->path.seg, p->path.n, p->value);
    layer_ctx l = {cw, &p->path};
    return hearth__ptree_foreach(p->merge, layer_one, &l);
}

/* The names in a pending write point into its own copy of the path. */
static int own_path(hearth__pending *p, const hearth__path *path) {
    size_t total = 0;
    for (unsigned i = 0; i < path->n; i++)
        total += path->seg[i].len + 1;
    p->path_text = hearth__malloc(total + 1);
    if (!p->path_text)
        return HEARTH_ENOMEM;
    hearth__path copy = *path;
    char *at = p->path_text;
    for (unsigned i = 0; i < path->n; i++) {
        memcpy(at, path->seg[i].s, path->seg[i].len);
        at[path->seg[i].len] = '\0';
        copy.seg[i].s = at;
        at += path->seg[i].len + 1;
    }
    hearth__spath_from(&p->path, &copy);
    return 0;
}

int hearth__writes_add(hearth__writes *ws, int64_t id, const hearth__path *path,
                       hearth_node_t *value, hearth__ptree *merge,
                       bool visible) {
    hearth__pending p = {id, {0}, NULL, value, merge, visible};
    int rc = own_path(&p, path);
    if (!rc) {
        hearth__pending *w = hearth__grow(ws->w, &ws->cap, ws->n + 1,
                                          sizeof *w);
        if (w)
            ws->w = w;
        else
            rc = HEARTH_ENOMEM;
    }
    if (!rc && visible)
        rc = layer(ws->visible, &p);
    if (rc) {
        hearth__pending_clear(&p);
        return rc;
    }
    ws->w[ws->n++] = p;
    return 0;
}

static bool is_prefix(const hearth__name *a, unsigned an, const hearth__name *b,
                      unsigned bn) {
    if (an > bn)
        return false;
    for (unsigned i = 0; i < an; i++)
        if (hearth__name_compare(&a[i], &b[i]) != 0)
            return false;
    return true;
}

typedef struct covers_ctx {
    const hearth__spath *base;
    const hearth__spath *path;
    bool covers;
} covers_ctx;

static int covers_one(const hearth__name *seg, unsigned n,
                      const hearth_node_t *value, void *ctx) {
    (void)value;
    covers_ctx *c = ctx;
    hearth__name full[HEARTH__JOINED];
    unsigned k = hearth__sync_join(c->base->seg, c->base->n, seg, n, full);
    if (k && is_prefix(full, k, c->path->seg, c->path->n))
        c->covers = true;
    return 0;
}

/* Whether write p covers all of path. */
static bool covers(const hearth__pending *p, const hearth__spath *path) {
    if (p->value)
        return is_prefix(p->path.seg, p->path.n, path->seg, path->n);
    covers_ctx c = {&p->path, path, false};
    hearth__ptree_foreach(p->merge, covers_one, &c);
    return c.covers;
}

typedef struct unlayer_ctx {
    hearth__ptree *cw;
    const hearth__spath *base;
} unlayer_ctx;

static int unlayer_one(const hearth__name *seg, unsigned n,
                       const hearth_node_t *value, void *ctx) {
    (void)value;
    unlayer_ctx *u = ctx;
    hearth__name full[HEARTH__JOINED];
    unsigned k = hearth__sync_join(u->base->seg, u->base->n, seg, n, full);
    if (k)
        hearth__cw_remove(u->cw, full, k);
    return 0;
}

int hearth__writes_remove(hearth__writes *ws, int64_t id, bool *changed,
                          hearth__pending *out) {
    size_t at = 0;
    while (at < ws->n && ws->w[at].id != id)
        at++;
    if (at == ws->n)
        return HEARTH_ENOTFOUND;
    hearth__pending gone = ws->w[at];
    memmove(ws->w + at, ws->w + at + 1, (ws->n - at - 1) * sizeof *ws->w);
    ws->n--;
    *out = gone;
    bool showed = gone.visible, overlaps = false;
    for (size_t i = ws->n; showed && i-- > 0;) {
        const hearth__pending *p = &ws->w[i];
        if (!p->visible)
            continue;
        if (i >= at && covers(p, &gone.path))
            showed = false; /* a later write covered it whole */
        else if (is_prefix(gone.path.seg, gone.path.n, p->path.seg, p->path.n))
            overlaps = true;
    }
    *changed = showed;
    if (!showed)
        return 0;
    if (!overlaps) {
        if (gone.value) {
            hearth__cw_remove(ws->visible, gone.path.seg, gone.path.n);
        } else {
            unlayer_ctx u = {ws->visible, &gone.path};
            hearth__ptree_foreach(gone.merge, unlayer_one, &u);
        }
        return 0;
    }
    /* Other writes share its ground: lay the rest again, in order. */
    hearth__ptree *cw = NULL;
    int rc = hearth__ptree_create(&cw);
    for (size_t i = 0; !rc && i < ws->n; i++)
        if (ws->w[i].visible)
            rc = layer(cw, &ws->w[i]);
    if (rc) {
        hearth__ptree_free(cw);
        return rc;
    }
    hearth__ptree_free(ws->visible);
    ws->visible = cw;
    return 0;
}

/* ---- caches ---- */

bool hearth__cache_complete_for_child(const hearth__cache *c,
                                      const hearth__name *key) {
    return (c->complete && !c->filtered) ||
           !hearth__node_is_empty(hearth__sync_get(c->node, key, 1));
}

bool hearth__cache_complete_for_path(const hearth__cache *c,
                                     const hearth__name *seg, unsigned n) {
    return n ? hearth__cache_complete_for_child(c, &seg[0])
             : c->complete && !c->filtered;
}

/* ---- the writes seen from a location ---- */

static unsigned join(const hearth__wref *w, const hearth__name *rel,
                     unsigned n, hearth__name out[HEARTH__JOINED]) {
    return hearth__sync_join(w->seg, w->n, rel, n, out);
}

hearth_node_t *hearth__wref_shadow(const hearth__wref *w,
                                   const hearth__name *rel, unsigned n) {
    hearth__name full[HEARTH__JOINED];
    unsigned k = join(w, rel, n, full);
    return hearth__cw_complete(w->ws->visible, full, k);
}

hearth_node_t *hearth__wref_event_cache(const hearth__wref *w,
                                        const hearth_node_t *server) {
    const hearth__ptree *cw = w->ws->visible;
    hearth_node_t *shadow = hearth__cw_complete(cw, w->seg, w->n);
    if (shadow)
        return shadow;
    if (!server)
        return NULL;
    return hearth__cw_apply(cw, w->seg, w->n, server);
}

static hearth_node_t *put(hearth_node_t *node, const hearth__key *key,
                          const hearth_node_t *child) {
    if (!node)
        return NULL;
    hearth__name name = hearth__key_name(key);
    hearth_node_t *out = hearth__sync_update(node, &name, 1, child);
    hearth_node_decref(node);
    return out;
}

typedef struct children_ctx {
    const hearth__wref *w;
    hearth_node_t *out;
} children_ctx;

static int server_child(const char *key, const hearth_node_t *child,
                        void *ctx) {
    children_ctx *c = ctx;
    hearth__name name, full[HEARTH__JOINED];
    hearth__name_init(&name, key, strlen(key));
    unsigned k = join(c->w, &name, 1, full);
    hearth_node_t *applied = hearth__cw_apply(c->w->ws->visible, full, k, child);
    hearth__key *kk = hearth__key_create(&name);
    if (!applied || !kk) {
        hearth_node_decref(applied);
        if (kk)
            hearth__key_decref(kk);
        hearth_node_decref(c->out);
        c->out = NULL;
        return 1;
    }
    c->out = put(c->out, kk, applied);
    hearth__key_decref(kk);
    hearth_node_decref(applied);
    return c->out ? 0 : 1;
}

/* The children the writes at the location set whole. */
static hearth_node_t *written_children(const hearth__ptree *t,
                                       hearth_node_t *out) {
    if (!t)
        return out;
    for (unsigned i = 0; out && i < t->n; i++)
        if (t->kids[i].tree->value)
            out = put(out, t->kids[i].key, t->kids[i].tree->value);
    return out;
}

hearth_node_t *hearth__wref_event_children(const hearth__wref *w,
                                           const hearth_node_t *server) {
    const hearth__ptree *cw = w->ws->visible;
    hearth_node_t *shadow = hearth__cw_complete(cw, w->seg, w->n);
    if (shadow) {
        if (!hearth__node_is_obj(shadow)) {
            hearth_node_decref(shadow);
            return hearth_node_null();
        }
        /* The children, without the node's own priority. */
        hearth_node_t *out = NULL;
        if (hearth_node_with_priority(shadow, hearth__node_empty(), &out, NULL))
            out = NULL;
        hearth_node_decref(shadow);
        return out;
    }
    children_ctx c = {w, hearth_node_null()};
    if (server && hearth__node_is_obj(server))
        hearth_node_foreach_child(server, server_child, &c);
    if (!c.out)
        return NULL;
    /* Only a priority-less object: the children are what is known. */
    if (c.out->priority) {
        hearth_node_t *bare = NULL;
        if (hearth_node_with_priority(c.out, hearth__node_empty(), &bare, NULL))
            bare = NULL;
        hearth_node_decref(c.out);
        c.out = bare;
    }
    return written_children(hearth__ptree_at(cw, w->seg, w->n), c.out);
}

hearth_node_t *hearth__wref_after_server(const hearth__wref *w,
                                         const hearth__name *rel, unsigned n,
                                         const hearth_node_t *server,
                                         bool *ok) {
    *ok = true;
    hearth__name full[HEARTH__JOINED];
    unsigned k = join(w, rel, n, full);
    const hearth__ptree *cw = w->ws->visible;
    hearth_node_t *shadow = hearth__cw_complete(cw, full, k);
    if (shadow) {
        hearth_node_decref(shadow);
        return NULL;
    }
    hearth_node_t *out = hearth__cw_apply(cw, full, k,
                                          hearth__sync_get(server, rel, n));
    *ok = out != NULL;
    return out;
}

hearth_node_t *hearth__wref_child(const hearth__wref *w,
                                  const hearth__name *key,
                                  const hearth__cache *server) {
    hearth__name full[HEARTH__JOINED];
    unsigned k = join(w, key, 1, full);
    const hearth__ptree *cw = w->ws->visible;
    hearth_node_t *shadow = hearth__cw_complete(cw, full, k);
    if (shadow)
        return shadow;
    if (!hearth__cache_complete_for_child(server, key))
        return NULL;
    return hearth__cw_apply(cw, full, k, hearth__sync_get(server->node, key, 1));
}
