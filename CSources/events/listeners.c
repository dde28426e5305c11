/* listeners.c - the trie of listened paths, its views, and the handle map. */
#include "events/listeners.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- handle map (open addressing, linear probing, with tombstones) ---- */

static hearth__reg tombstone;

static size_t slot_of(uint64_t handle, size_t nslots) {
    handle ^= handle >> 33;
    handle *= 0xff51afd7ed558ccdULL;
    handle ^= handle >> 33;
    return (size_t)handle & (nslots - 1);
}

static int map_grow(hearth__listeners *l) {
    size_t nslots = l->nslots ? l->nslots * 2 : 16;
    hearth__reg **slots = hearth__calloc(nslots, sizeof *slots);
    if (!slots)
        return HEARTH_ENOMEM;
    for (size_t i = 0; i < l->nslots; i++) {
        hearth__reg *r = l->slots[i];
        if (!r || r == &tombstone)
            continue;
        size_t s = slot_of(r->handle, nslots);
        while (slots[s])
            s = (s + 1) & (nslots - 1);
        slots[s] = r;
    }
    hearth__free(l->slots);
    l->slots = slots;
    l->nslots = nslots;
    l->nused = l->nregs;
    return 0;
}

static int map_put(hearth__listeners *l, hearth__reg *reg) {
    if ((l->nused + 1) * 4 > l->nslots * 3) {
        int rc = map_grow(l);
        if (rc)
            return rc;
    }
    size_t s = slot_of(reg->handle, l->nslots);
    while (l->slots[s] && l->slots[s] != &tombstone)
        s = (s + 1) & (l->nslots - 1);
    if (!l->slots[s])
        l->nused++;
    l->slots[s] = reg;
    return 0;
}

static hearth__reg **map_slot(hearth__listeners *l, hearth_observer_t handle) {
    if (!l->nslots)
        return NULL;
    size_t s = slot_of(handle, l->nslots);
    for (hearth__reg *r; (r = l->slots[s]); s = (s + 1) & (l->nslots - 1))
        if (r != &tombstone && r->handle == handle)
            return &l->slots[s];
    return NULL;
}

hearth__reg *hearth__listeners_find(hearth__listeners *l,
                                    hearth_observer_t handle) {
    hearth__reg **slot = map_slot(l, handle);
    return slot ? *slot : NULL;
}

/* ---- view index (the same scheme, keyed by trie node and identity) ---- */

static hearth__view view_tombstone;

static size_t view_hash(const hearth__tnode *t, const char *identity,
                        size_t nslots) {
    uint64_t h = hearth__fnv1a(HEARTH__FNV_SEED ^ (uint64_t)(uintptr_t)t,
                               identity, strlen(identity));
    return slot_of(h, nslots);
}

static hearth__view *view_find(const hearth__listeners *l,
                               const hearth__tnode *t, const char *identity) {
    if (!l->nview_slots)
        return NULL;
    size_t mask = l->nview_slots - 1;
    for (size_t s = view_hash(t, identity, l->nview_slots);
         l->view_slots[s]; s = (s + 1) & mask) {
        hearth__view *v = l->view_slots[s];
        if (v != &view_tombstone && v->at == t &&
            strcmp(v->identity, identity) == 0)
            return v;
    }
    return NULL;
}

/* Puts v in the first free slot of its probe: whether that slot had never
 * been used (not a tombstone). */
static bool view_place(hearth__view **slots, size_t nslots, hearth__view *v) {
    size_t s = view_hash(v->at, v->identity, nslots);
    while (slots[s] && slots[s] != &view_tombstone)
        s = (s + 1) & (nslots - 1);
    bool fresh = !slots[s];
    slots[s] = v;
    return fresh;
}

static int view_put(hearth__listeners *l, hearth__view *v) {
    if ((l->nview_used + 1) * 4 > l->nview_slots * 3) {
        size_t nslots = l->nview_slots ? l->nview_slots * 2 : 16;
        while (l->nviews * 2 > nslots) /* mostly tombstones: same size */
            nslots *= 2;
        hearth__view **slots = hearth__calloc(nslots, sizeof *slots);
        if (!slots)
            return HEARTH_ENOMEM;
        for (size_t i = 0; i < l->nview_slots; i++)
            if (l->view_slots[i] && l->view_slots[i] != &view_tombstone)
                view_place(slots, nslots, l->view_slots[i]);
        hearth__free(l->view_slots);
        l->view_slots = slots;
        l->nview_slots = nslots;
        l->nview_used = l->nviews;
    }
    if (view_place(l->view_slots, l->nview_slots, v))
        l->nview_used++;
    l->nviews++;
    return 0;
}

static void view_drop(hearth__listeners *l, const hearth__view *v) {
    size_t mask = l->nview_slots - 1;
    for (size_t s = view_hash(v->at, v->identity, l->nview_slots);
         l->view_slots[s]; s = (s + 1) & mask)
        if (l->view_slots[s] == v) {
            l->view_slots[s] = &view_tombstone;
            l->nviews--;
            return;
        }
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
    hearth__free(v->identity);
    hearth__free(v->hints);
    hearth__free(v);
}

static void destroy_node(hearth__tnode *t) {
    for (size_t i = 0; i < t->nkids; i++) {
        destroy_node(t->kids[i]);
        hearth__free(t->kids[i]);
    }
    hearth__free(t->kids);
    while (t->views) {
        hearth__view *v = t->views;
        t->views = v->next;
        while (v->regs) {
            hearth__reg *r = v->regs;
            v->regs = r->next;
            free_reg(r);
        }
        free_view(v);
    }
    hearth__key_decref(t->key);
    hearth__free(t->path);
}

void hearth__listeners_destroy(hearth__listeners *l) {
    destroy_node(&l->root);
    hearth__free(l->slots);
    hearth__free(l->view_slots);
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
    while (t->parent && !t->views && !t->nkids) {
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
    hearth__tnode *t = v->at;
    view_drop(l, v);
    if (v->prev)
        v->prev->next = v->next;
    else
        t->views = v->next;
    if (v->next)
        v->next->prev = v->prev;
    else
        t->views_tail = v->prev;
    free_view(v);
}

int hearth__listeners_add(hearth__listeners *l, const hearth__path *path,
                          const hearth_query_t *q, hearth__reg *reg) {
    char *identity = hearth__query_identity(q);
    if (!identity)
        return HEARTH_ENOMEM;
    int rc = HEARTH_ENOMEM;
    hearth__tnode *t = &l->root;
    for (unsigned i = 0; t && i < path->n; i++)
        t = add_kid(t, &path->seg[i]);
    if (!t)
        goto fail;
    hearth__view *v = view_find(l, t, identity);
    if (!v) {
        v = hearth__calloc(1, sizeof *v);
        if (!v)
            goto fail;
        if (!hearth__query_is_default(q) && !(v->query = hearth_query_copy(q))) {
            hearth__free(v);
            goto fail;
        }
        v->identity = identity;
        identity = NULL;
        v->at = t;
        if (view_put(l, v)) {
            free_view(v);
            goto fail;
        }
        /* Views keep creation order, so events follow it too. */
        v->prev = t->views_tail;
        if (t->views_tail)
            t->views_tail->next = v;
        else
            t->views = v;
        t->views_tail = v;
    }
    if (map_put(l, reg)) {
        if (!v->regs)
            unlink_view(l, v);
        goto fail;
    }
    l->nregs++;
    reg->view = v;
    reg->next = NULL;
    reg->prev = v->regs_tail;
    if (v->regs_tail)
        v->regs_tail->next = reg;
    else
        v->regs = reg;
    v->regs_tail = reg;
    hearth__free(identity);
    return 0;
fail:
    hearth__free(identity);
    prune(deepest(l, path));
    return rc;
}

void hearth__listeners_remove(hearth__listeners *l, hearth__reg *reg) {
    hearth__reg **slot = map_slot(l, reg->handle);
    if (slot) {
        *slot = &tombstone;
        l->nregs--;
    }
    hearth__view *v = reg->view;
    if (reg->prev)
        reg->prev->next = reg->next;
    else
        v->regs = reg->next;
    if (reg->next)
        reg->next->prev = reg->prev;
    else
        v->regs_tail = reg->prev;
    free_reg(reg);
    if (v->regs)
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
    for (hearth__view *v = t->views; v; v = v->next)
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
            for (hearth__view *v = t->views; v; v = v->next)
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
