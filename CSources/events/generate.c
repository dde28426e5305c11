/* generate.c - turns a view's old and new data into events.
 *
 * Within a view a batch raises child_removed, child_added, child_moved,
 * child_changed, then value; each type in the view's order; child events
 * carry the key of the previous child in the new order. Value is raised
 * only when what the view shows changed.
 *
 * Two ways to find the changes: when the view is in key order and the write
 * says which children it touched (hints), only those are compared, in
 * O(hints log n); otherwise both selections are diffed by key.
 */
#include "events/listeners.h"

#include <stdlib.h>
#include <string.h>

/* ---- the queue ---- */

void hearth__events_init(hearth__event_queue *q) { memset(q, 0, sizeof *q); }

static void release(hearth__event_rec *r) {
    if (r->key)
        hearth__key_decref(r->key);
    if (r->prev)
        hearth__key_decref(r->prev);
    hearth_node_decref(r->node);
}

void hearth__events_clear(hearth__event_queue *q) {
    for (size_t i = 0; i < q->n; i++)
        release(&q->recs[i]);
    hearth__free(q->recs);
    hearth__events_init(q);
}

static int push(hearth__event_queue *q, hearth__reg *reg, hearth_event_type type,
                const hearth__key *key, const hearth__key *prev,
                const hearth_node_t *node) {
    hearth__event_rec *recs = hearth__grow(q->recs, &q->cap, q->n + 1,
                                           sizeof *recs);
    if (!recs)
        return HEARTH_ENOMEM;
    q->recs = recs;
    q->recs[q->n++] = (hearth__event_rec){
        reg, type, key ? hearth__key_incref((hearth__key *)key) : NULL,
        prev ? hearth__key_incref((hearth__key *)prev) : NULL,
        hearth_node_incref(node), 0};
    return 0;
}

int hearth__events_push(hearth__event_queue *q, hearth__reg *reg,
                        hearth_event_type type, const hearth__key *key,
                        const hearth__key *prev, const hearth_node_t *node) {
    return push(q, reg, type, key, prev, node);
}

int hearth__events_push_cancel(hearth__event_queue *q, hearth__reg *reg,
                               int status) {
    int rc = push(q, reg, HEARTH_EVENT_CANCEL, NULL, NULL, NULL);
    if (!rc)
        q->recs[q->n - 1].status = status;
    return rc;
}

void hearth__events_raise(hearth__event_queue *q) {
    hearth__event_queue batch = *q;
    hearth__events_init(q);
    for (size_t i = 0; i < batch.n; i++) {
        hearth__event_rec *r = &batch.recs[i];
        if (!r->reg->removed) {
            hearth_event_t ev = {r->type, r->reg->view->at->path,
                                 r->key ? r->key->s : NULL,
                                 r->prev ? r->prev->s : NULL, r->node,
                                 r->status};
            r->reg->cb(&ev, r->reg->ctx);
        }
    }
    hearth__events_clear(&batch);
}

/* ---- changes ---- */

typedef struct change {
    hearth_event_type type;
    const hearth__key *key;
    const hearth__key *prev;
    const hearth_node_t *node;
    size_t order; /* position in the view's order */
} change;

typedef struct changes {
    change *c;
    size_t n, cap;
    bool failed;
} changes;

static void add_change(changes *cs, hearth_event_type type,
                       const hearth__key *key, const hearth__key *prev,
                       const hearth_node_t *node, size_t order) {
    change *c = hearth__grow(cs->c, &cs->cap, cs->n + 1, sizeof *c);
    if (!c) {
        cs->failed = true;
        return;
    }
    cs->c = c;
    cs->c[cs->n++] = (change){type, key, prev, node, order};
}

static unsigned live_mask(const hearth__view *v) {
    unsigned mask = 0;
    for (const hearth__reg *r = hearth__reg_first(v); r;
         r = hearth__reg_next(v, r))
        if (!r->removed)
            mask |= r->mask;
    return mask;
}

/* Views whose order is key order: the changes of a hinted child can be
 * found and placed without looking at the others. */
static bool key_ordered(const hearth_query_t *q, const hearth_node_t *old_full,
                        const hearth_node_t *new_full) {
    if (!hearth__query_loads_all(q) || old_full->type != HEARTH_TYPE_OBJECT ||
        new_full->type != HEARTH_TYPE_OBJECT)
        return false;
    if (q && q->index == HEARTH__INDEX_KEY)
        return true;
    return (!q || q->index == HEARTH__INDEX_PRIORITY) &&
           old_full->u.obj.prio_children == 0 &&
           new_full->u.obj.prio_children == 0;
}

static int compare_names(const void *a, const void *b) {
    return hearth__name_compare(a, b);
}

static void hinted_changes(const hearth__view *v, const hearth_node_t *old_full,
                           const hearth_node_t *new_full, changes *cs) {
    hearth__name *hints = v->hints;
    if (v->nhints > 1)
        qsort(hints, v->nhints, sizeof *hints, compare_names);
    const hearth__bt *ot = old_full->u.obj.tree, *nt = new_full->u.obj.tree;
    for (size_t i = 0; i < v->nhints; i++) {
        const hearth__entry *o = hearth__bt_find(ot, &hints[i]);
        const hearth__entry *n = hearth__bt_find(nt, &hints[i]);
        if (!o && !n)
            continue;
        if (o && n && (o->node == n->node || hearth_node_equal(o->node, n->node)))
            continue;
        if (!n) {
            add_change(cs, HEARTH_EVENT_CHILD_REMOVED, o->key, NULL, o->node, i);
            continue;
        }
        bool found;
        size_t rank = hearth__bt_rank(nt, &hints[i], &found);
        const hearth__key *prev = rank ? hearth__bt_at(nt, rank - 1)->key : NULL;
        add_change(cs, o ? HEARTH_EVENT_CHILD_CHANGED : HEARTH_EVENT_CHILD_ADDED,
                   n->key, prev, n->node, i);
    }
}

/* A whole-view change in key order: the tree diff visits only what the two
 * versions do not share. */
typedef struct tree_diff_ctx {
    changes *cs;
    const hearth__bt *now;
    size_t i;
} tree_diff_ctx;

static int tree_change(const hearth__key *key, const hearth_node_t *old,
                       const hearth_node_t *now, void *ctx) {
    tree_diff_ctx *t = ctx;
    if (old && now && hearth_node_equal(old, now))
        return 0;
    size_t order = t->i++;
    if (!now) {
        add_change(t->cs, HEARTH_EVENT_CHILD_REMOVED, key, NULL, old, order);
        return 0;
    }
    hearth__name name = hearth__key_name(key);
    bool found;
    size_t rank = hearth__bt_rank(t->now, &name, &found);
    const hearth__key *prev = rank ? hearth__bt_at(t->now, rank - 1)->key : NULL;
    add_change(t->cs, old ? HEARTH_EVENT_CHILD_CHANGED : HEARTH_EVENT_CHILD_ADDED,
               key, prev, now, order);
    return 0;
}

static void tree_changes(const hearth_node_t *old_full,
                         const hearth_node_t *new_full, changes *cs) {
    tree_diff_ctx t = {cs, new_full->u.obj.tree, 0};
    hearth__bt_diff(old_full->u.obj.tree, new_full->u.obj.tree, tree_change,
                    &t);
}

typedef struct keyed {
    const hearth__item *item;
    size_t pos;
} keyed;

static int compare_keyed(const void *a, const void *b) {
    hearth__name na = hearth__key_name(((const keyed *)a)->item->key);
    hearth__name nb = hearth__key_name(((const keyed *)b)->item->key);
    return hearth__name_compare(&na, &nb);
}

static keyed *by_key(const hearth__item *items, size_t n) {
    keyed *k = hearth__malloc((n ? n : 1) * sizeof *k);
    if (!k)
        return NULL;
    for (size_t i = 0; i < n; i++)
        k[i] = (keyed){&items[i], i};
    if (n > 1)
        qsort(k, n, sizeof *k, compare_keyed);
    return k;
}

/* Diffs the two selections by key. */
static int diffed_changes(const hearth_query_t *q, const hearth_node_t *old_full,
                          const hearth_node_t *new_full, changes *cs) {
    hearth__item *os = NULL, *ns = NULL;
    size_t on = 0, nn = 0;
    keyed *ok = NULL, *nk = NULL;
    int rc = hearth__query_select(q, old_full, &os, &on);
    if (!rc)
        rc = hearth__query_select(q, new_full, &ns, &nn);
    if (!rc && (!(ok = by_key(os, on)) || !(nk = by_key(ns, nn))))
        rc = HEARTH_ENOMEM;
    size_t i = 0, j = 0;
    while (!rc && (i < on || j < nn)) {
        int c;
        if (i == on)
            c = 1;
        else if (j == nn)
            c = -1;
        else
            c = compare_keyed(&ok[i], &nk[j]);
        if (c < 0) {
            add_change(cs, HEARTH_EVENT_CHILD_REMOVED, ok[i].item->key, NULL,
                       ok[i].item->node, ok[i].pos);
            i++;
            continue;
        }
        const hearth__item *n = nk[j].item;
        const hearth__key *prev = nk[j].pos ? ns[nk[j].pos - 1].key : NULL;
        if (c > 0) {
            add_change(cs, HEARTH_EVENT_CHILD_ADDED, n->key, prev, n->node,
                       nk[j].pos);
        } else {
            const hearth_node_t *o = ok[i].item->node;
            if (o != n->node && !hearth_node_equal(o, n->node)) {
                if (hearth__query_index_changed(q, o, n->node))
                    add_change(cs, HEARTH_EVENT_CHILD_MOVED, n->key, prev,
                               n->node, nk[j].pos);
                add_change(cs, HEARTH_EVENT_CHILD_CHANGED, n->key, prev,
                           n->node, nk[j].pos);
            }
            i++;
        }
        j++;
    }
    hearth__free(ok);
    hearth__free(nk);
    hearth__free(os);
    hearth__free(ns);
    return rc;
}

static int by_order(const void *a, const void *b) {
    const change *ca = a, *cb = b;
    return ca->order < cb->order ? -1 : ca->order > cb->order;
}

/* Queues the changes of one type, in view order, to every registration
 * that wants them. */
static int queue_type(hearth__view *v, changes *cs, hearth_event_type type,
                      hearth__event_queue *out) {
    change *sel = hearth__malloc((cs->n ? cs->n : 1) * sizeof *sel);
    if (!sel)
        return HEARTH_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < cs->n; i++)
        if (cs->c[i].type == type)
            sel[n++] = cs->c[i];
    if (n > 1)
        qsort(sel, n, sizeof *sel, by_order);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        for (hearth__reg *r = hearth__reg_first(v); r && !rc;
             r = hearth__reg_next(v, r))
            if (!r->removed && (r->mask & (1u << type)))
                rc = push(out, r, type, sel[i].key,
                          type == HEARTH_EVENT_CHILD_REMOVED ? NULL : sel[i].prev,
                          sel[i].node);
    hearth__free(sel);
    return rc;
}

int hearth__view_generate(hearth__view *v, const hearth_node_t *old_full,
                          const hearth_node_t *new_full,
                          hearth__event_queue *out) {
    if (old_full == new_full)
        return 0;
    const hearth_query_t *q = v->query;
    unsigned mask = live_mask(v);
    changes cs = {0};
    int rc = 0;
    bool keyed = key_ordered(q, old_full, new_full);
    if (keyed && !v->full)
        hinted_changes(v, old_full, new_full, &cs);
    else if (keyed)
        tree_changes(old_full, new_full, &cs);
    else
        rc = diffed_changes(q, old_full, new_full, &cs);
    if (!rc && cs.failed)
        rc = HEARTH_ENOMEM;
    static const hearth_event_type order[] = {
        HEARTH_EVENT_CHILD_REMOVED, HEARTH_EVENT_CHILD_ADDED,
        HEARTH_EVENT_CHILD_MOVED, HEARTH_EVENT_CHILD_CHANGED};
    for (size_t t = 0; !rc && t < HEARTH__ARRAY_SIZE(order); t++)
        if (mask & (1u << order[t]))
            rc = queue_type(v, &cs, order[t], out);
    if (!rc && (mask & HEARTH_MASK_VALUE)) {
        bool loads_all = hearth__query_loads_all(q);
        /* A filtered view changed when one of its children did. A view of
         * everything changed when the data did: in key order the children's
         * changes say it all, with the node's own priority (a write below
         * cannot change that); otherwise compare the values. */
        bool changed;
        if (!loads_all)
            changed = cs.n > 0;
        else if (keyed)
            changed = cs.n > 0 || (v->full && !hearth_node_equal(
                                                  hearth__prio(old_full),
                                                  hearth__prio(new_full)));
        else
            changed = !hearth_node_equal(old_full, new_full);
        hearth_node_t *shown = NULL;
        if (changed)
            rc = hearth__query_view_node(q, new_full, &shown);
        for (hearth__reg *r = hearth__reg_first(v); changed && !rc && r;
             r = hearth__reg_next(v, r))
            if (!r->removed && (r->mask & HEARTH_MASK_VALUE))
                rc = push(out, r, HEARTH_EVENT_VALUE, NULL, NULL, shown);
        hearth_node_decref(shown);
    }
    hearth__free(cs.c);
    return rc;
}

int hearth__reg_initial_events(hearth__reg *reg, const hearth_node_t *full,
                               hearth__event_queue *out) {
    const hearth_query_t *q = reg->view->query;
    int rc = 0;
    if (reg->mask & HEARTH_MASK_CHILD_ADDED) {
        hearth__item *items;
        size_t n;
        rc = hearth__query_select(q, full, &items, &n);
        for (size_t i = 0; !rc && i < n; i++)
            rc = push(out, reg, HEARTH_EVENT_CHILD_ADDED, items[i].key,
                      i ? items[i - 1].key : NULL, items[i].node);
        hearth__free(items);
    }
    if (!rc && (reg->mask & HEARTH_MASK_VALUE)) {
        hearth_node_t *shown;
        rc = hearth__query_view_node(q, full, &shown);
        if (!rc) {
            rc = push(out, reg, HEARTH_EVENT_VALUE, NULL, NULL, shown);
            hearth_node_decref(shown);
        }
    }
    return rc;
}
