/* children_walk.c - reading a children B+tree in order: iteration from
 * an index, the diff of two trees that skips the pages they share, and
 * the invariants the tests check. */
#include "tree/children.h"
#include "tree/children_pages.h"

#include "tree/node.h"

#include <string.h>

/* ---- iteration ---- */

void hearth__bt_iter_init(hearth__bt_iter *it, const hearth__bt *t,
                          size_t start) {
    it->depth = -1;
    if (!t || start >= t->count)
        return;
    int d = 0;
    while (!t->leaf) {
        const inner_page *in = as_inner(t);
        unsigned i = 0;
        while (start >= in->kid[i].count) {
            start -= in->kid[i].count;
            i++;
        }
        it->page[d] = t;
        it->slot[d] = i;
        d++;
        t = in->kid[i].page;
    }
    it->page[d] = t;
    it->slot[d] = (unsigned)start;
    it->depth = d;
}

/* Moves past the rest of page[d]'s subtree: to the next kid of an
 * ancestor, then down to that kid's first leaf (or to the end). */
static void iter_leave(hearth__bt_iter *it, int d) {
    while (--d >= 0 && ++it->slot[d] >= it->page[d]->n) {
    }
    if (d < 0) {
        it->depth = -1;
        return;
    }
    const hearth__bt *p = as_inner(it->page[d])->kid[it->slot[d]].page;
    while (++d, !p->leaf) {
        it->page[d] = p;
        it->slot[d] = 0;
        p = as_inner(p)->kid[0].page;
    }
    it->page[d] = p;
    it->slot[d] = 0;
    it->depth = d;
}

const hearth__entry *hearth__bt_iter_next(hearth__bt_iter *it) {
    if (it->depth < 0)
        return NULL;
    int d = it->depth;
    const hearth__entry *e = &as_leaf(it->page[d])->e[it->slot[d]];
    if (++it->slot[d] >= it->page[d]->n)
        iter_leave(it, d);
    return e;
}

/* ---- diff ---- */

static const hearth__entry *iter_peek(const hearth__bt_iter *it) {
    return it->depth < 0 ? NULL
                         : &as_leaf(it->page[it->depth])->e[it->slot[it->depth]];
}

/* The page whose subtree starts exactly where the iterator stands, `height`
 * levels above the leaves; NULL when the iterator is inside one. */
static const hearth__bt *subtree_here(const hearth__bt_iter *it, int height) {
    int d = it->depth - height;
    if (d < 0)
        return NULL;
    for (int k = d + 1; k <= it->depth; k++)
        if (it->slot[k] != 0)
            return NULL;
    return it->page[d];
}

int hearth__bt_diff(const hearth__bt *a, const hearth__bt *b,
                    hearth__bt_diff_cb cb, void *ctx) {
    hearth__bt_iter ia, ib;
    hearth__bt_iter_init(&ia, a, 0);
    hearth__bt_iter_init(&ib, b, 0);
    for (;;) {
        const hearth__entry *ea = iter_peek(&ia), *eb = iter_peek(&ib);
        if (!ea && !eb)
            return 0;
        if (ea && eb) {
            /* A page both trees share holds nothing new: skip it whole,
             * from the highest level where they meet. */
            int top = ia.depth < ib.depth ? ia.depth : ib.depth;
            bool skipped = false;
            for (int h = top; h >= 0 && !skipped; h--) {
                const hearth__bt *pa = subtree_here(&ia, h);
                if (pa && pa == subtree_here(&ib, h)) {
                    iter_leave(&ia, ia.depth - h);
                    iter_leave(&ib, ib.depth - h);
                    skipped = true;
                }
            }
            if (skipped)
                continue;
        }
        int c;
        if (!ea)
            c = 1;
        else if (!eb)
            c = -1;
        else if (ea->key == eb->key)
            c = 0;
        else {
            hearth__name na = hearth__key_name(ea->key);
            hearth__name nb = hearth__key_name(eb->key);
            c = hearth__name_compare(&na, &nb);
        }
        int rc = 0;
        if (c < 0) {
            rc = cb(ea->key, ea->node, NULL, ctx);
            hearth__bt_iter_next(&ia);
        } else if (c > 0) {
            rc = cb(eb->key, NULL, eb->node, ctx);
            hearth__bt_iter_next(&ib);
        } else {
            if (ea->node != eb->node)
                rc = cb(eb->key, ea->node, eb->node, ctx);
            hearth__bt_iter_next(&ia);
            hearth__bt_iter_next(&ib);
        }
        if (rc)
            return rc;
    }
}

/* ---- invariants, for tests ---- */

static bool check_page(const hearth__bt *p, const hearth__key **prev,
                       int depth, int *leaf_depth) {
    if (p->n == 0 || depth >= HEARTH__BT_MAX_DEPTH)
        return false;
    if (p->leaf) {
        if (*leaf_depth < 0)
            *leaf_depth = depth;
        if (*leaf_depth != depth || p->count != p->n || p->n > p->cap)
            return false;
        for (unsigned i = 0; i < p->n; i++) {
            const hearth__key *k = as_leaf(p)->e[i].key;
            if (*prev) {
                hearth__name a = hearth__key_name(*prev);
                hearth__name b = hearth__key_name(k);
                if (hearth__name_compare(&a, &b) >= 0)
                    return false;
            }
            *prev = k;
        }
        return true;
    }
    size_t count = 0;
    for (unsigned i = 0; i < p->n; i++) {
        const hearth__bt *kid = as_inner(p)->kid[i].page;
        if (as_inner(p)->kid[i].count != kid->count ||
            as_inner(p)->first[i].key != page_first_key(kid) ||
            as_inner(p)->first[i].sort != page_first(kid).sort)
            return false;
        if (!check_page(kid, prev, depth + 1, leaf_depth))
            return false;
        count += kid->count;
    }
    return count == p->count;
}

bool hearth__bt_check(const hearth__bt *t) {
    if (!t)
        return true;
    const hearth__key *prev = NULL;
    int leaf_depth = -1;
    return check_page(t, &prev, 0, &leaf_depth);
}
