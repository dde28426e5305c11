/* filter.c - what a view keeps of its data, and the child changes that
 * keeping it makes.
 *
 * Three filters, by what the query asks: the index alone (every child), a
 * range of the index, or a window of `limit` children from one end of the
 * range. A window that loses a child pulls in the next one from the
 * complete data when some is known (a hearth__source), else shrinks. */
#include "sync/sync.h"

#include <string.h>

/* ---- changes ---- */

static void change_release(hearth__change *c) {
    hearth__key_decref(c->key);
    hearth_node_decref(c->node);
    hearth_node_decref(c->old);
}

void hearth__changes_clear(hearth__changes *cs) {
    for (size_t i = 0; i < cs->n; i++)
        change_release(&cs->c[i]);
    hearth__free(cs->c);
    hearth__free(cs->slots);
    memset(cs, 0, sizeof *cs);
}

enum { LINEAR_CHANGES = 16 }; /* below this, a scan beats a table */

static size_t key_hash(const hearth__key *k) {
    return (size_t)hearth__fnv1a(HEARTH__FNV_SEED, k->s, k->len);
}

static bool same_key(const hearth__key *a, const hearth__key *b) {
    return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
}

static void slot_put(hearth__changes *cs, size_t index) {
    size_t mask = cs->nslots - 1;
    size_t i = key_hash(cs->c[index].key) & mask;
    while (cs->slots[i])
        i = (i + 1) & mask;
    cs->slots[i] = (uint32_t)index + 1;
}

/* (Re)builds the table for the changes there are, with room to grow. */
static bool index_changes(hearth__changes *cs) {
    size_t want = 64;
    while (want < cs->n * 4)
        want *= 2;
    if (want != cs->nslots || !cs->slots) {
        uint32_t *slots = hearth__calloc(want, sizeof *slots);
        if (!slots)
            return false;
        hearth__free(cs->slots);
        cs->slots = slots;
        cs->nslots = want;
    } else {
        memset(cs->slots, 0, cs->nslots * sizeof *cs->slots);
    }
    for (size_t i = 0; i < cs->n; i++)
        slot_put(cs, i);
    cs->stale = false;
    return true;
}

static hearth__change *find_change(hearth__changes *cs, const hearth__key *k) {
    bool indexed = cs->n >= LINEAR_CHANGES &&
                   ((cs->slots && !cs->stale && cs->n * 2 <= cs->nslots) ||
                    index_changes(cs));
    if (!indexed) {
        for (size_t i = 0; i < cs->n; i++)
            if (same_key(cs->c[i].key, k))
                return &cs->c[i];
        return NULL;
    }
    size_t mask = cs->nslots - 1;
    for (size_t i = key_hash(k) & mask; cs->slots[i]; i = (i + 1) & mask)
        if (same_key(cs->c[cs->slots[i] - 1].key, k))
            return &cs->c[cs->slots[i] - 1];
    return NULL;
}

static void set_change(hearth__change *c, hearth_event_type type,
                       const hearth_node_t *node, const hearth_node_t *old) {
    hearth_node_t *n = hearth_node_incref(node);
    hearth_node_t *o = old ? hearth_node_incref(old) : NULL;
    hearth_node_decref(c->node);
    hearth_node_decref(c->old);
    c->type = type;
    c->node = n;
    c->old = o;
}

/* Several changes to one child in one operation fold into the one a
 * listener should see: added then removed is nothing, removed then added
 * is changed, and so on. */
void hearth__changes_track(hearth__changes *cs, hearth_event_type type,
                           const hearth__key *key, const hearth_node_t *node,
                           const hearth_node_t *old) {
    hearth__change *c = find_change(cs, key);
    if (c) {
        hearth_event_type was = c->type;
        if (type == HEARTH_EVENT_CHILD_ADDED && was == HEARTH_EVENT_CHILD_REMOVED) {
            hearth_node_t *before = hearth_node_incref(c->node);
            set_change(c, HEARTH_EVENT_CHILD_CHANGED, node, before);
            hearth_node_decref(before);
        } else if (type == HEARTH_EVENT_CHILD_REMOVED &&
                   was == HEARTH_EVENT_CHILD_ADDED) {
            change_release(c);
            *c = cs->c[--cs->n];
            cs->stale = true; /* an entry moved */
        } else if (type == HEARTH_EVENT_CHILD_REMOVED &&
                   was == HEARTH_EVENT_CHILD_CHANGED) {
            hearth_node_t *before = hearth_node_incref(c->old);
            set_change(c, HEARTH_EVENT_CHILD_REMOVED, before, NULL);
            hearth_node_decref(before);
        } else if (type == HEARTH_EVENT_CHILD_CHANGED &&
                   was == HEARTH_EVENT_CHILD_ADDED) {
            set_change(c, HEARTH_EVENT_CHILD_ADDED, node, NULL);
        } else if (type == HEARTH_EVENT_CHILD_CHANGED &&
                   was == HEARTH_EVENT_CHILD_CHANGED) {
            hearth_node_t *before = hearth_node_incref(c->old);
            set_change(c, HEARTH_EVENT_CHILD_CHANGED, node, before);
            hearth_node_decref(before);
        } else {
            set_change(c, type, node, old);
        }
        return;
    }
    hearth__change *grown = hearth__grow(cs->c, &cs->cap, cs->n + 1,
                                         sizeof *grown);
    if (!grown) {
        cs->failed = true;
        return;
    }
    cs->c = grown;
    cs->c[cs->n++] = (hearth__change){
        type, hearth__key_incref((hearth__key *)key), hearth_node_incref(node),
        old ? hearth_node_incref(old) : NULL};
    if (cs->slots && !cs->stale && cs->n * 2 <= cs->nslots)
        slot_put(cs, cs->n - 1);
    else
        cs->stale = true;
}

void hearth__named_clear(hearth__named *nn) {
    if (nn->key)
        hearth__key_decref(nn->key);
    hearth_node_decref(nn->node);
    nn->key = NULL;
    nn->node = NULL;
}

/* ---- order ---- */

int hearth__filter_init(hearth__filter *f, const hearth_query_t *q) {
    memset(f, 0, sizeof *f);
    f->q = q;
    if (!q)
        return 0;
    f->order = hearth__query_order_only(q);
    if (!f->order)
        return HEARTH_ENOMEM;
    if (q->limit)
        f->kind = HEARTH__FILTER_LIMIT;
    else if (q->start.set || q->end.set)
        f->kind = HEARTH__FILTER_RANGE;
    return 0;
}

void hearth__filter_destroy(hearth__filter *f) {
    hearth_query_free(f->order);
    memset(f, 0, sizeof *f);
}

hearth__filter hearth__filter_index_only(const hearth__filter *f) {
    hearth__filter i = *f;
    i.kind = HEARTH__FILTER_INDEX;
    return i;
}

bool hearth__filter_filters(const hearth__filter *f) {
    return f->kind != HEARTH__FILTER_INDEX;
}

static hearth__item item(const hearth__filter *f, const hearth__key *key,
                         const hearth_node_t *node) {
    return (hearth__item){key, node, hearth__query_index_value(f->order, node)};
}

int hearth__filter_compare(const hearth__filter *f, const hearth__key *ak,
                           const hearth_node_t *an, const hearth__key *bk,
                           const hearth_node_t *bn) {
    hearth__item a = item(f, ak, an), b = item(f, bk, bn);
    return hearth__query_compare(f->order, &a, &b);
}

static bool in_range(const hearth__filter *f, const hearth__key *key,
                     const hearth_node_t *node) {
    hearth__item it = item(f, key, node);
    return hearth__query_in_range(f->q, &it);
}

/* node's children in index order (borrowed), or NULL when none. */
static hearth__item *ordered(const hearth__filter *f, const hearth_node_t *node,
                             size_t *n, bool *ok) {
    hearth__item *items = NULL;
    *ok = hearth__query_select(f->order, node, &items, n) == 0;
    return items;
}

void hearth__preds_init(hearth__preds *p, const hearth__filter *f,
                        const hearth_node_t *parent) {
    memset(p, 0, sizeof *p);
    p->f = f;
    p->parent = parent;
    /* Key order is the index's for order by key, and for priority order
     * when no child has a priority. */
    const hearth_query_t *q = f->order;
    p->by_tree = hearth__node_is_obj(parent) &&
                 ((q && q->index == HEARTH__INDEX_KEY) ||
                  ((!q || q->index == HEARTH__INDEX_PRIORITY) &&
                   parent->u.obj.prio_children == 0));
}

void hearth__preds_clear(hearth__preds *p) {
    hearth__free(p->items);
    p->items = NULL;
}

const hearth__key *hearth__preds_find(hearth__preds *p, const hearth__key *key,
                                      const hearth_node_t *node) {
    if (!hearth__node_is_obj(p->parent))
        return NULL;
    if (p->by_tree) {
        const hearth__bt *tree = p->parent->u.obj.tree;
        hearth__name name = hearth__key_name(key);
        bool found;
        size_t rank = hearth__bt_rank(tree, &name, &found);
        return rank ? hearth__bt_at(tree, rank - 1)->key : NULL;
    }
    if (!p->items && !p->failed) {
        bool ok;
        p->items = ordered(p->f, p->parent, &p->n, &ok);
        p->failed = !ok;
    }
    /* The last child ordered before (key, node). */
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (hearth__filter_compare(p->f, p->items[mid].key, p->items[mid].node,
                                   key, node) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? p->items[lo - 1].key : NULL;
}

/* ---- the index filter ---- */

static hearth_node_t *put_child(const hearth_node_t *snap,
                                const hearth__key *key,
                                const hearth_node_t *child) {
    hearth__name name = hearth__key_name(key);
    return hearth__sync_update(snap, &name, 1, child);
}

static hearth_node_t *index_update_child(const hearth_node_t *snap,
                                         const hearth__key *key,
                                         const hearth_node_t *child,
                                         const hearth__name *rel, unsigned nrel,
                                         hearth__changes *cs) {
    hearth__name name = hearth__key_name(key);
    const hearth_node_t *old = hearth__sync_get(snap, &name, 1);
    if (hearth_node_equal(hearth__sync_get(old, rel, nrel),
                          hearth__sync_get(child, rel, nrel)) &&
        hearth__node_is_empty(old) == hearth__node_is_empty(child))
        return hearth_node_incref(snap); /* nothing a listener could see */
    if (cs) {
        if (hearth__node_is_empty(child)) {
            if (!hearth__node_is_empty(old))
                hearth__changes_track(cs, HEARTH_EVENT_CHILD_REMOVED, key, old,
                                      NULL);
        } else if (hearth__node_is_empty(old)) {
            hearth__changes_track(cs, HEARTH_EVENT_CHILD_ADDED, key, child,
                                  NULL);
        } else {
            hearth__changes_track(cs, HEARTH_EVENT_CHILD_CHANGED, key, child,
                                  old);
        }
    }
    if (hearth__node_is_leaf(snap) && hearth__node_is_empty(child))
        return hearth_node_incref(snap);
    return put_child(snap, key, child);
}

typedef struct full_ctx {
    const hearth_node_t *other;
    hearth__changes *cs;
    bool removed_pass;
} full_ctx;

static int full_change(const char *key, const hearth_node_t *child, void *ctx) {
    full_ctx *c = ctx;
    hearth__key *k = hearth__key_from_cstr(key);
    if (!k) {
        c->cs->failed = true;
        return 1;
    }
    const hearth_node_t *other = hearth_node_child(c->other, key);
    if (c->removed_pass) {
        if (hearth__node_is_empty(other))
            hearth__changes_track(c->cs, HEARTH_EVENT_CHILD_REMOVED, k, child,
                                  NULL);
    } else if (hearth__node_is_empty(other)) {
        hearth__changes_track(c->cs, HEARTH_EVENT_CHILD_ADDED, k, child, NULL);
    } else if (!hearth_node_equal(other, child)) {
        hearth__changes_track(c->cs, HEARTH_EVENT_CHILD_CHANGED, k, child,
                              other);
    }
    hearth__key_decref(k);
    return 0;
}

static hearth_node_t *index_update_full(const hearth_node_t *old,
                                        const hearth_node_t *now,
                                        hearth__changes *cs) {
    if (cs) {
        if (hearth__node_is_obj(old)) {
            full_ctx c = {now, cs, true};
            hearth_node_foreach_child(old, full_change, &c);
        }
        if (hearth__node_is_obj(now)) {
            full_ctx c = {old, cs, false};
            hearth_node_foreach_child(now, full_change, &c);
        }
    }
    return hearth_node_incref(now);
}

/* ---- the range filter ---- */

/* now without priority, and only the children in range. */
static hearth_node_t *range_of(const hearth__filter *f,
                               const hearth_node_t *now) {
    if (!hearth__node_is_obj(now))
        return hearth_node_null();
    hearth_node_t *out = NULL;
    if (hearth_node_with_priority(now, hearth__node_empty(), &out, NULL))
        return NULL;
    size_t n;
    bool ok;
    hearth__item *items = ordered(f, now, &n, &ok);
    for (size_t i = 0; ok && out && i < n; i++) {
        if (in_range(f, items[i].key, items[i].node))
            continue;
        hearth_node_t *less = put_child(out, items[i].key, hearth__node_empty());
        hearth_node_decref(out);
        out = less;
    }
    hearth__free(items);
    if (!ok) {
        hearth_node_decref(out);
        return NULL;
    }
    return out;
}

/* ---- the window ---- */

/* The first `limit` children in range, from the window's end. */
static hearth_node_t *window_of(const hearth__filter *f,
                                const hearth_node_t *now) {
    if (!hearth__node_is_obj(now))
        return hearth_node_null();
    size_t n;
    bool ok;
    hearth__item *items = ordered(f, now, &n, &ok);
    if (!ok)
        return NULL;
    bool reverse = f->q->limit_from == 'r';
    hearth__entry *keep = hearth__malloc((n ? n : 1) * sizeof *keep);
    if (!keep) {
        hearth__free(items);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n && k < f->q->limit; i++) {
        const hearth__item *it = &items[reverse ? n - 1 - i : i];
        if (!in_range(f, it->key, it->node))
            continue;
        keep[k++] = (hearth__entry){hearth__key_incref((hearth__key *)it->key),
                                    hearth_node_incref(it->node), 0};
    }
    hearth__free(items);
    hearth_node_t *out = NULL;
    if (hearth__node_from_entries(keep, k, &out))
        return NULL;
    return out;
}

/* The child at one end of snap's order (a new reference), if any. */
static hearth__named edge(const hearth__filter *f, const hearth_node_t *snap,
                          bool last, bool *ok) {
    hearth__named nn = {0};
    size_t n;
    hearth__item *items = ordered(f, snap, &n, ok);
    if (*ok && n) {
        const hearth__item *it = &items[last ? n - 1 : 0];
        nn.key = hearth__key_incref((hearth__key *)it->key);
        nn.node = hearth_node_incref(it->node);
    }
    hearth__free(items);
    return nn;
}

/* The complete child after `after` in the window's direction. */
static hearth__named child_after(const hearth__filter *f,
                                 const hearth__source *src,
                                 const hearth__named *after, bool reverse,
                                 bool *ok) {
    hearth__named nn = {0};
    *ok = true;
    if (!src || !src->writes)
        return nn;
    const hearth_node_t *server = src->complete_server;
    if (!server && src->server->complete)
        server = src->server->node;
    hearth_node_t *all = hearth__wref_shadow(src->writes, NULL, 0);
    if (!all && server)
        all = hearth__cw_apply(src->writes->ws->visible, src->writes->seg,
                               src->writes->n, server);
    if (!all)
        return nn;
    size_t n;
    hearth__item *items = ordered(f, all, &n, ok);
    for (size_t i = 0; *ok && i < n; i++) {
        const hearth__item *it = &items[reverse ? n - 1 - i : i];
        int c = hearth__filter_compare(f, it->key, it->node, after->key,
                                       after->node);
        if (reverse ? c < 0 : c > 0) {
            nn.key = hearth__key_incref((hearth__key *)it->key);
            nn.node = hearth_node_incref(it->node);
            break;
        }
    }
    hearth__free(items);
    hearth_node_decref(all);
    return nn;
}

/* A change to one child of a full window: it may stay, leave (letting the
 * next child in), or push the child at the window's edge out. */
static hearth_node_t *window_update_full(const hearth__filter *f,
                                         const hearth_node_t *snap,
                                         const hearth__key *key,
                                         const hearth_node_t *child,
                                         const hearth__source *src,
                                         hearth__changes *cs) {
    bool reverse = f->q->limit_from == 'r', ok;
    /* In window order: cmp(a, b) > 0 when a comes later. */
    int sign = reverse ? -1 : 1;
    hearth__named boundary = edge(f, snap, !reverse, &ok);
    if (!ok || !boundary.key)
        return NULL;
    bool fits = in_range(f, key, child);
    hearth__name name = hearth__key_name(key);
    const hearth_node_t *old = hearth__sync_get(snap, &name, 1);
    hearth_node_t *out = NULL;
    if (!hearth__node_is_empty(old)) {
        hearth__named next = child_after(f, src, &boundary, reverse, &ok);
        while (ok && next.key &&
               (strcmp(next.key->s, key->s) == 0 ||
                !hearth__node_is_empty(hearth_node_child(snap, next.key->s)))) {
            /* A child a merge already moved into the window: look past. */
            hearth__named further = child_after(f, src, &next, reverse, &ok);
            hearth__named_clear(&next);
            next = further;
        }
        int cmp_next = next.key ? sign * hearth__filter_compare(
                                             f, next.key, next.node, key, child)
                                : 1;
        if (fits && !hearth__node_is_empty(child) && cmp_next >= 0) {
            if (cs)
                hearth__changes_track(cs, HEARTH_EVENT_CHILD_CHANGED, key,
                                      child, old);
            out = put_child(snap, key, child);
        } else {
            if (cs)
                hearth__changes_track(cs, HEARTH_EVENT_CHILD_REMOVED, key, old,
                                      NULL);
            hearth_node_t *less = put_child(snap, key, hearth__node_empty());
            if (less && next.key && in_range(f, next.key, next.node)) {
                if (cs)
                    hearth__changes_track(cs, HEARTH_EVENT_CHILD_ADDED,
                                          next.key, next.node, NULL);
                out = put_child(less, next.key, next.node);
                hearth_node_decref(less);
            } else {
                out = less;
            }
        }
        hearth__named_clear(&next);
    } else if (hearth__node_is_empty(child) || !fits) {
        out = hearth_node_incref(snap); /* outside the window: unseen */
    } else if (sign * hearth__filter_compare(f, boundary.key, boundary.node,
                                             key, child) >= 0) {
        if (cs) {
            hearth__changes_track(cs, HEARTH_EVENT_CHILD_REMOVED, boundary.key,
                                  boundary.node, NULL);
            hearth__changes_track(cs, HEARTH_EVENT_CHILD_ADDED, key, child,
                                  NULL);
        }
        hearth_node_t *with = put_child(snap, key, child);
        out = with ? put_child(with, boundary.key, hearth__node_empty()) : NULL;
        hearth_node_decref(with);
    } else {
        out = hearth_node_incref(snap);
    }
    hearth__named_clear(&boundary);
    return out;
}

/* ---- the filter interface ---- */

hearth_node_t *hearth__filter_update_child(const hearth__filter *f,
                                           const hearth_node_t *snap,
                                           const hearth__key *key,
                                           const hearth_node_t *child,
                                           const hearth__name *rel,
                                           unsigned nrel,
                                           const hearth__source *src,
                                           hearth__changes *cs) {
    if (f->kind != HEARTH__FILTER_INDEX && !in_range(f, key, child))
        child = hearth__node_empty();
    if (f->kind != HEARTH__FILTER_LIMIT)
        return index_update_child(snap, key, child, rel, nrel, cs);
    hearth__name name = hearth__key_name(key);
    if (hearth_node_equal(hearth__sync_get(snap, &name, 1), child))
        return hearth_node_incref(snap);
    if (hearth_node_child_count(snap) < f->q->limit)
        return index_update_child(snap, key, child, rel, nrel, cs);
    return window_update_full(f, snap, key, child, src, cs);
}

hearth_node_t *hearth__filter_update_full(const hearth__filter *f,
                                          const hearth_node_t *old,
                                          const hearth_node_t *now,
                                          hearth__changes *cs) {
    hearth_node_t *kept;
    switch (f->kind) {
    case HEARTH__FILTER_RANGE:
        kept = range_of(f, now);
        break;
    case HEARTH__FILTER_LIMIT:
        kept = window_of(f, now);
        break;
    default:
        kept = hearth_node_incref(now);
    }
    if (!kept)
        return NULL;
    hearth_node_t *out = index_update_full(old, kept, cs);
    hearth_node_decref(kept);
    return out;
}

hearth_node_t *hearth__filter_update_priority(const hearth__filter *f,
                                              const hearth_node_t *old,
                                              const hearth_node_t *prio) {
    if (f->kind != HEARTH__FILTER_INDEX || hearth__node_is_empty(old))
        return hearth_node_incref(old);
    hearth_node_t *out = NULL;
    if (hearth_node_with_priority(old, prio, &out, NULL))
        return hearth_node_incref(old); /* not a valid priority: unchanged */
    return out;
}
