/* ptree.c - path trees, compound writes, and the node updates of the
 * client's event model. */
#include "sync/sync.h"

#include <string.h>

static const hearth__name priority = {".priority", 9, 0, false,
                                      HEARTH__NAME_PLAIN};
static const hearth__name *priority_name(void) { return &priority; }

bool hearth__name_is_priority(const hearth__name *n) {
    return n->len == 9 && memcmp(n->s, ".priority", 9) == 0;
}

void hearth__spath_from(hearth__spath *out, const hearth__path *p) {
    out->n = p->n;
    memcpy(out->seg, p->seg, p->n * sizeof *p->seg);
    if (p->priority)
        out->seg[out->n++] = *priority_name();
}

unsigned hearth__sync_join(const hearth__name *a, unsigned an,
                           const hearth__name *b, unsigned bn,
                           hearth__name out[HEARTH__JOINED]) {
    if (an + bn > HEARTH__JOINED)
        return 0;
    if (an)
        memcpy(out, a, an * sizeof *out);
    if (bn)
        memcpy(out + an, b, bn * sizeof *out);
    return an + bn;
}

/* ---- nodes ---- */

const hearth_node_t *hearth__sync_get(const hearth_node_t *node,
                                      const hearth__name *seg, unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        if (hearth__name_is_priority(&seg[i]))
            return i + 1 == n ? hearth__prio(node) : hearth__node_empty();
        node = hearth__node_child(node, &seg[i]);
    }
    return node;
}

hearth_node_t *hearth__sync_update(const hearth_node_t *node,
                                   const hearth__name *seg, unsigned n,
                                   const hearth_node_t *value) {
    if (n == 0)
        return hearth_node_incref(value);
    hearth__path p = {0};
    for (unsigned i = 0; i < n; i++) {
        if (hearth__name_is_priority(&seg[i])) {
            if (i + 1 != n)
                return hearth_node_incref(node); /* nothing lies below */
            p.priority = true;
            break;
        }
        if (p.n == HEARTH_MAX_DEPTH)
            return hearth_node_incref(node);
        p.seg[p.n++] = seg[i];
    }
    hearth_node_t *out = hearth_node_incref(node);
    int rc = hearth__node_set_path(&out, &p, value, NULL);
    if (rc == HEARTH_ENOMEM) {
        hearth_node_decref(out);
        return NULL;
    }
    return out; /* a priority or depth the service would refuse: unchanged */
}

/* ---- path trees ---- */

int hearth__ptree_create(hearth__ptree **out) {
    hearth__ptree *t = hearth__calloc(1, sizeof *t);
    if (!t)
        return HEARTH_ENOMEM;
    *out = t;
    return 0;
}

static void clear_kids(hearth__ptree *t) {
    for (unsigned i = 0; i < t->n; i++) {
        hearth__key_decref(t->kids[i].key);
        hearth__ptree_free(t->kids[i].tree);
    }
    hearth__free(t->kids);
    t->kids = NULL;
    t->n = t->cap = 0;
}

void hearth__ptree_free(hearth__ptree *t) {
    if (!t)
        return;
    clear_kids(t);
    hearth_node_decref(t->value);
    hearth__free(t);
}

/* Kids are kept in the order of the keys' UTF-16 code units: the order
 * the SDKs visit the parts of a merge in. */
static int name_order(const hearth__key *k, const hearth__name *name) {
    return hearth__utf16_compare(k->s, k->len, name->s, name->len);
}

static unsigned kid_index(const hearth__ptree *t, const hearth__name *name,
                          bool *found) {
    unsigned lo = 0, hi = t->n;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (name_order(t->kids[mid].key, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < t->n && name_order(t->kids[lo].key, name) == 0;
    return lo;
}

hearth__ptree *hearth__ptree_kid(const hearth__ptree *t,
                                 const hearth__name *name) {
    bool found;
    unsigned i = kid_index(t, name, &found);
    return found ? t->kids[i].tree : NULL;
}

hearth__ptree *hearth__ptree_at(const hearth__ptree *t, const hearth__name *seg,
                                unsigned n) {
    for (unsigned i = 0; t && i < n; i++)
        t = hearth__ptree_kid(t, &seg[i]);
    return (hearth__ptree *)t;
}

static hearth__ptree *add_kid(hearth__ptree *t, const hearth__name *name) {
    bool found;
    unsigned i = kid_index(t, name, &found);
    if (found)
        return t->kids[i].tree;
    hearth__ptree_entry *kids = hearth__grow(t->kids, &t->cap, t->n + 1,
                                           sizeof *kids);
    if (!kids)
        return NULL;
    t->kids = kids;
    hearth__ptree *k = NULL;
    hearth__key *key =
        hearth__ptree_create(&k) ? NULL : hearth__key_create(name);
    if (!key) {
        hearth__free(k);
        return NULL;
    }
    memmove(t->kids + i + 1, t->kids + i, (t->n - i) * sizeof *t->kids);
    t->kids[i] = (hearth__ptree_entry){key, k};
    t->n++;
    return k;
}

static void remove_kid(hearth__ptree *t, const hearth__name *name) {
    bool found;
    unsigned i = kid_index(t, name, &found);
    if (!found)
        return;
    hearth__key_decref(t->kids[i].key);
    hearth__ptree_free(t->kids[i].tree);
    memmove(t->kids + i, t->kids + i + 1, (t->n - i - 1) * sizeof *t->kids);
    t->n--;
}

int hearth__ptree_set(hearth__ptree *t, const hearth__name *seg, unsigned n,
                      const hearth_node_t *value) {
    for (unsigned i = 0; t && i < n; i++)
        t = add_kid(t, &seg[i]);
    if (!t)
        return HEARTH_ENOMEM;
    hearth_node_decref(t->value);
    t->value = hearth_node_incref(value);
    return 0;
}

bool hearth__ptree_empty(const hearth__ptree *t) {
    if (!t)
        return true;
    if (t->value)
        return false;
    for (unsigned i = 0; i < t->n; i++)
        if (!hearth__ptree_empty(t->kids[i].tree))
            return false;
    return true;
}

static int foreach_at(const hearth__ptree *t, hearth__name *seg, unsigned n,
                      hearth__ptree_cb cb, void *ctx) {
    for (unsigned i = 0; i < t->n; i++) {
        if (n == HEARTH_MAX_DEPTH + 1)
            break;
        seg[n] = hearth__key_name(t->kids[i].key);
        int rc = foreach_at(t->kids[i].tree, seg, n + 1, cb, ctx);
        if (rc)
            return rc;
    }
    return t->value ? cb(seg, n, t->value, ctx) : 0;
}

int hearth__ptree_foreach(const hearth__ptree *t, hearth__ptree_cb cb,
                          void *ctx) {
    hearth__name seg[HEARTH_MAX_DEPTH + 1];
    return t ? foreach_at(t, seg, 0, cb, ctx) : 0;
}

/* ---- compound writes ---- */

/* The first value on the way to path: its tree and depth. */
static hearth__ptree *rootmost(const hearth__ptree *cw, const hearth__name *seg,
                               unsigned n, unsigned *depth) {
    const hearth__ptree *t = cw;
    for (unsigned i = 0; t; i++) {
        if (t->value) {
            *depth = i;
            return (hearth__ptree *)t;
        }
        if (i == n)
            break;
        t = hearth__ptree_kid(t, &seg[i]);
    }
    return NULL;
}

int hearth__cw_add(hearth__ptree *cw, const hearth__name *seg, unsigned n,
                   const hearth_node_t *value) {
    unsigned d;
    hearth__ptree *at = rootmost(cw, seg, n, &d);
    if (at) {
        const hearth__name *rel = seg + d;
        unsigned nrel = n - d;
        /* A priority for a node the write leaves empty goes nowhere. */
        if (nrel && hearth__name_is_priority(&rel[nrel - 1]) &&
            hearth__node_is_empty(hearth__sync_get(at->value, rel, nrel - 1)))
            return 0;
        hearth_node_t *v = hearth__sync_update(at->value, rel, nrel, value);
        if (!v)
            return HEARTH_ENOMEM;
        hearth_node_decref(at->value);
        at->value = v;
        return 0;
    }
    hearth__ptree *t = cw;
    for (unsigned i = 0; t && i < n; i++)
        t = add_kid(t, &seg[i]);
    if (!t)
        return HEARTH_ENOMEM;
    clear_kids(t); /* the new value covers the writes below it */
    t->value = hearth_node_incref(value);
    return 0;
}

void hearth__cw_remove(hearth__ptree *cw, const hearth__name *seg, unsigned n) {
    if (n == 0) {
        clear_kids(cw);
        hearth_node_decref(cw->value);
        cw->value = NULL;
        return;
    }
    hearth__ptree *parent = hearth__ptree_at(cw, seg, n - 1);
    if (parent)
        remove_kid(parent, &seg[n - 1]);
}

hearth_node_t *hearth__cw_complete(const hearth__ptree *cw,
                                   const hearth__name *seg, unsigned n) {
    unsigned d;
    hearth__ptree *at = rootmost(cw, seg, n, &d);
    return at ? hearth_node_incref(hearth__sync_get(at->value, seg + d, n - d))
              : NULL;
}

/* Lays the writes of t over node at rel, priorities last (a priority for
 * a child that ends up empty is dropped). */
static hearth_node_t *apply_tree(const hearth__ptree *t, hearth__name *rel,
                                 unsigned n, hearth_node_t *node) {
    if (t->value) {
        hearth_node_t *out = hearth__sync_update(node, rel, n, t->value);
        hearth_node_decref(node);
        return out;
    }
    const hearth_node_t *prio = NULL;
    for (unsigned i = 0; node && i < t->n; i++) {
        hearth__name name = hearth__key_name(t->kids[i].key);
        if (hearth__name_is_priority(&name)) {
            prio = t->kids[i].tree->value;
            continue;
        }
        if (n == HEARTH_MAX_DEPTH)
            break;
        rel[n] = name;
        node = apply_tree(t->kids[i].tree, rel, n + 1, node);
    }
    if (node && prio &&
        !hearth__node_is_empty(hearth__sync_get(node, rel, n))) {
        rel[n] = *priority_name();
        hearth_node_t *out = hearth__sync_update(node, rel, n + 1, prio);
        hearth_node_decref(node);
        node = out;
    }
    return node;
}

hearth_node_t *hearth__cw_apply(const hearth__ptree *cw,
                                const hearth__name *seg, unsigned n,
                                const hearth_node_t *node) {
    hearth_node_t *shadow = hearth__cw_complete(cw, seg, n);
    if (shadow)
        return shadow;
    const hearth__ptree *t = hearth__ptree_at(cw, seg, n);
    if (!t)
        return hearth_node_incref(node);
    hearth__name rel[HEARTH_MAX_DEPTH + 1];
    return apply_tree(t, rel, 0, hearth_node_incref(node));
}
