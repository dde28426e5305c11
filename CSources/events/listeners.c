/* listeners.c - the trie of listened paths, its views, and the handle map. */
#include "events/listeners.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the indexes: handle -> registration, (trie node, identity) -> view
 * (common/map.h) ---- */

hearth__reg *hearth__listeners_find(hearth__listeners *l,
                                    hearth_observer_t handle) {
    return hearth__map_get(&l->regs, &handle, sizeof handle);
}

/* A view's key: its trie node's address, then its identity with the NUL
 * (a view of another node, or another query, is another key). NULL when
 * memory fails. */
static char *view_key(const hearth__tnode *t, const char *identity,
                      size_t *len) {
    size_t n = strlen(identity) + 1;
    char *key = hearth__malloc(sizeof t + n);
    if (key) {
        memcpy(key, &t, sizeof t);
        memcpy(key + sizeof t, identity, n);
        *len = sizeof t + n;
    }
    return key;
}

/* ---- trie ---- */

int hearth__listeners_init(hearth__listeners *l) {
    memset(l, 0, sizeof *l);
    l->root.path = hearth__strndup("/", 1);
    return l->root.path ? 0 : HEARTH_ENOMEM;
}

static void free_reg(hearth__reg *reg) {
    if (reg->ctx_free)
        reg->ctx_free(reg->ctx);
    hearth__free(reg);
}

static void free_view(hearth__view *v) {
    if (v->data_free)
        v->data_free(v->data);
    hearth_query_free(v->query);
    hearth__free(v->key);
    hearth__free(v->hints);
    hearth__free(v);
}

static void destroy_node(hearth__tnode *t) {
    for (size_t i = 0; i < t->nkids; i++) {
        destroy_node(t->kids[i]);
        hearth__free(t->kids[i]);
    }
    hearth__free(t->kids);
    for (hearth__list *vn; (vn = hearth__list_pop_front(&t->views));) {
        hearth__view *v = HEARTH__LIST_ITEM(vn, hearth__view, link);
        for (hearth__list *rn; (rn = hearth__list_pop_front(&v->regs));)
            free_reg(HEARTH__LIST_ITEM(rn, hearth__reg, link));
        free_view(v);
    }
    hearth__key_decref(t->key);
    hearth__free(t->path);
}

void hearth__listeners_destroy(hearth__listeners *l) {
    destroy_node(&l->root);
    hearth__map_free(&l->regs);
    hearth__map_free(&l->views);
    memset(l, 0, sizeof *l);
}

/* Index of the first kid whose key is >= name. */
static size_t kid_index(const hearth__tnode *t, const hearth__name *name,
                        bool *found) {
    size_t lo = 0, hi = t->nkids;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        hearth__name k = hearth__key_name(t->kids[mid]->key);
        if (hearth__name_compare(&k, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    if (lo < t->nkids) {
        hearth__name k = hearth__key_name(t->kids[lo]->key);
        *found = hearth__name_compare(&k, name) == 0;
    }
    return lo;
}

static hearth__tnode *kid(const hearth__tnode *t, const hearth__name *name) {
    bool found;
    size_t i = kid_index(t, name, &found);
    return found ? t->kids[i] : NULL;
}

hearth__tnode *hearth__tnode_kid(const hearth__tnode *t,
                                 const hearth__name *name) {
    return kid(t, name);
}

static hearth__tnode *add_kid(hearth__tnode *t, const hearth__name *name) {
    bool found;
    size_t i = kid_index(t, name, &found);
    if (found)
        return t->kids[i];
    hearth__tnode **kids = hearth__grow(t->kids, &t->kids_cap, t->nkids + 1,
                                        sizeof *kids);
    if (!kids)
        return NULL;
    t->kids = kids;
    hearth__tnode *k = hearth__calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->key = hearth__key_create(name);
    size_t plen = strlen(t->path);
    k->path = hearth__malloc(plen + name->len + 2);
    if (!k->key || !k->path) {
        hearth__key_decref(k->key);
        hearth__free(k->path);
        hearth__free(k);
        return NULL;
    }
    snprintf(k->path, plen + name->len + 2, "%s/%.*s",
             t->parent || t->key ? t->path : "", (int)name->len, name->s);
    k->depth = t->depth + 1;
    k->parent = t;
    memmove(t->kids + i + 1, t->kids + i, (t->nkids - i) * sizeof *t->kids);
    t->kids[i] = k;
    t->nkids++;
    return k;
}

/* Drops trie nodes left with neither views nor kids, bottom-up. */
static void prune(hearth__tnode *t) {
    while (t->parent && hearth__list_empty(&t->views) && !t->nkids) {
        hearth__tnode *parent = t->parent;
        hearth__name name = hearth__key_name(t->key);
        bool found;
        size_t i = kid_index(parent, &name, &found);
        memmove(parent->kids + i, parent->kids + i + 1,
                (parent->nkids - i - 1) * sizeof *parent->kids);
        parent->nkids--;
        destroy_node(t);
        hearth__free(t);
        t = parent;
    }
}

hearth__tnode *hearth__listeners_at(hearth__listeners *l,
                                    const hearth__path *path) {
    hearth__tnode *t = &l->root;
    for (unsigned i = 0; t && i < path->n; i++)
        t = kid(t, &path->seg[i]);
    return t;
}

/* The deepest existing trie node on path. */
static hearth__tnode *deepest(hearth__listeners *l, const hearth__path *path) {
    hearth__tnode *t = &l->root;
    for (unsigned i = 0; i < path->n; i++) {
        hearth__tnode *k = kid(t, &path->seg[i]);
        if (!k)
            break;
        t = k;
    }
    return t;
}

/* Takes a view without registrations out of its trie node and the index,
 * and frees it. */
static void unlink_view(hearth__listeners *l, hearth__view *v) {
    hearth__map_remove(&l->views, v->key, v->key_len);
    hearth__list_remove(&v->link);
    free_view(v);
}

int hearth__listeners_add(hearth__listeners *l, const hearth__path *path,
                          const hearth_query_t *q, hearth__reg *reg) {
    char *identity = hearth__query_identity(q);
    if (!identity)
        return HEARTH_ENOMEM;
    char *key = NULL;
    size_t key_len = 0;
    hearth__tnode *t = &l->root;
    for (unsigned i = 0; t && i < path->n; i++)
        t = add_kid(t, &path->seg[i]);
    if (!t || !(key = view_key(t, identity, &key_len)))
        goto fail;
    hearth__view *v = hearth__map_get(&l->views, key, key_len);
    if (!v) {
        v = hearth__calloc(1, sizeof *v);
        if (!v)
            goto fail;
        if (!hearth__query_is_default(q) && !(v->query = hearth_query_copy(q))) {
            hearth__free(v);
            goto fail;
        }
        v->key = key;
        v->key_len = key_len;
        v->identity = key + sizeof t;
        key = NULL;
        v->at = t;
        if (hearth__map_put(&l->views, v->key, v->key_len, v)) {
            free_view(v);
            goto fail;
        }
        /* Views keep creation order, so events follow it too. */
        hearth__list_push_back(&t->views, &v->link);
    }
    if (hearth__map_put(&l->regs, &reg->handle, sizeof reg->handle, reg)) {
        if (hearth__list_empty(&v->regs))
            unlink_view(l, v);
        goto fail;
    }
    reg->view = v;
    hearth__list_push_back(&v->regs, &reg->link);
    hearth__free(identity);
    hearth__free(key);
    return 0;
fail:
    hearth__free(identity);
    hearth__free(key);
    prune(deepest(l, path));
    return HEARTH_ENOMEM;
}

void hearth__listeners_remove(hearth__listeners *l, hearth__reg *reg) {
    hearth__map_remove(&l->regs, &reg->handle, sizeof reg->handle);
    hearth__view *v = reg->view;
    hearth__list_remove(&reg->link);
    free_reg(reg);
    if (!hearth__list_empty(&v->regs))
        return;
    hearth__tnode *t = v->at;
    unlink_view(l, v);
    prune(t);
}

/* ---- collecting the views a write touches ---- */

typedef struct collector {
    hearth__listeners *l;
    hearth__view **views;
    size_t n, cap;
    int rc;
} collector;

static void collect_view(collector *c, hearth__view *v, bool full,
                         const hearth__name *hint) {
    if (v->stamp != c->l->stamp) {
        hearth__view **views = hearth__grow(c->views, &c->cap, c->n + 1,
                                            sizeof *views);
        if (!views) {
            c->rc = HEARTH_ENOMEM;
            return;
        }
        c->views = views;
        c->views[c->n++] = v;
        v->stamp = c->l->stamp;
        v->full = false;
        v->nhints = 0;
    }
    if (full || v->full) {
        v->full = true;
        return;
    }
    for (size_t i = 0; i < v->nhints; i++)
        if (hearth__name_compare(&v->hints[i], hint) == 0)
            return;
    hearth__name *hints = hearth__grow(v->hints, &v->hints_cap, v->nhints + 1,
                                       sizeof *hints);
    if (!hints) {
        c->rc = HEARTH_ENOMEM;
        return;
    }
    v->hints = hints;
    v->hints[v->nhints++] = *hint;
}

static void collect_below(collector *c, hearth__tnode *t) {
    for (hearth__view *v = hearth__view_first(t); v;
         v = hearth__view_next(t, v))
        collect_view(c, v, true, NULL);
    for (size_t i = 0; i < t->nkids; i++)
        collect_below(c, t->kids[i]);
}

static int deeper_first(const void *a, const void *b) {
    const hearth__view *va = *(hearth__view *const *)a;
    const hearth__view *vb = *(hearth__view *const *)b;
    if (va->at->depth != vb->at->depth)
        return va->at->depth > vb->at->depth ? -1 : 1;
    return va->order < vb->order ? -1 : va->order > vb->order;
}

int hearth__listeners_collect(hearth__listeners *l,
                              const hearth__path *const *paths, size_t n,
                              hearth__view ***views, size_t *nviews) {
    collector c = {l, NULL, 0, 0, 0};
    l->stamp++;
    for (size_t p = 0; p < n; p++) {
        const hearth__path *w = paths[p];
        hearth__tnode *t = &l->root;
        unsigned d = 0;
        for (; t && d < w->n; d++) {
            for (hearth__view *v = hearth__view_first(t); v;
                 v = hearth__view_next(t, v))
                collect_view(&c, v, false, &w->seg[d]);
            t = kid(t, &w->seg[d]);
        }
        if (t)
            collect_below(&c, t);
    }
    if (c.rc) {
        hearth__free(c.views);
        return c.rc;
    }
    /* Deeper views raise first; among equals, collection order. */
    for (size_t i = 0; i < c.n; i++)
        c.views[i]->order = i;
    if (c.n > 1)
        qsort(c.views, c.n, sizeof *c.views, deeper_first);
    *views = c.views;
    *nviews = c.n;
    return 0;
}
