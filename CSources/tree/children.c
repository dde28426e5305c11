/* children.c - the persistent B+tree behind a node's children.
 *
 * Updates run in two phases. Planning walks the root-to-leaf path, decides
 * which pages must be copied (shared) or split (full), and allocates every
 * page it will need; if any allocation fails it frees them and returns with
 * nothing changed. Applying then edits the pages bottom-up and cannot fail.
 */
#include "tree/children.h"
#include "tree/children_pages.h"

#include "tree/node.h"
#include "tree/pool.h"

#include <string.h>


/* ---- pages ---- */

static size_t leaf_size(unsigned cap) {
    return sizeof(leaf_page) + cap * sizeof(hearth__entry);
}

static hearth__bt *leaf_alloc(unsigned cap) {
    leaf_page *l = hearth__pool_alloc(leaf_size(cap));
    if (!l)
        return NULL;
    atomic_init(&l->h.refs, 1);
    l->h.n = 0;
    l->h.cap = (uint16_t)cap;
    l->h.leaf = true;
    l->h.count = 0;
    return &l->h;
}

static hearth__bt *inner_alloc(void) {
    inner_page *p = hearth__pool_alloc(sizeof *p);
    if (!p)
        return NULL;
    atomic_init(&p->h.refs, 1);
    p->h.n = 0;
    p->h.cap = BT_ORDER;
    p->h.leaf = false;
    p->h.count = 0;
    return &p->h;
}

/* Frees page p (NULL: nothing) without touching what it holds. */
static void page_free(hearth__bt *p) {
    if (p)
        hearth__pool_free(p, p->leaf ? leaf_size(p->cap) : sizeof(inner_page));
}

/* Smallest power-of-two capacity holding n entries, at most BT_ORDER. */
static unsigned leaf_cap_for(unsigned n) {
    unsigned cap = 1;
    while (cap < n)
        cap *= 2;
    return cap < BT_ORDER ? cap : BT_ORDER;
}

/* Asks for the cache lines of every reference count a page holds before
 * changing any: they are each a likely miss (child nodes and pages lie
 * anywhere in memory), and an atomic add waits for its line, so the
 * misses would otherwise come one after another instead of together. */
static void prefetch_held(const hearth__bt *p) {
    if (p->leaf)
        for (unsigned i = 0; i < p->n; i++)
            __builtin_prefetch(as_leaf(p)->e[i].node, 1);
    else
        for (unsigned i = 0; i < p->n; i++)
            __builtin_prefetch(as_inner(p)->kid[i].page, 1);
}

/* A copy of p holding new references to everything p holds. */
static hearth__bt *page_clone(const hearth__bt *p, unsigned leaf_cap) {
    prefetch_held(p);
    if (p->leaf) {
        hearth__bt *c = leaf_alloc(leaf_cap);
        if (!c)
            return NULL;
        c->n = p->n;
        c->count = p->count;
        memcpy(as_leaf(c)->e, as_leaf(p)->e, p->n * sizeof(hearth__entry));
        for (unsigned i = 0; i < p->n; i++) {
            hearth__key_incref(as_leaf(c)->e[i].key);
            hearth__node_ref(as_leaf(c)->e[i].node);
        }
        return c;
    }
    hearth__bt *c = inner_alloc();
    if (!c)
        return NULL;
    memcpy(as_inner(c), as_inner(p), sizeof(inner_page));
    atomic_init(&c->refs, 1);
    for (unsigned i = 0; i < p->n; i++)
        hearth__bt_incref(as_inner(c)->kid[i].page);
    return c;
}

/* Releases what leaf page t holds. Every count drops first and only then
 * are the nodes that reached zero freed, their pages asked for together:
 * freeing each as its count dropped went down its subtree one miss at a
 * time, with the siblings' lines (asked for by prefetch_held) waiting. */
static void leaf_release(hearth__bt *t) {
    hearth_node_t *dead[BT_ORDER];
    unsigned ndead = 0;
    for (unsigned i = 0; i < t->n; i++) {
        hearth__key_decref(as_leaf(t)->e[i].key);
        if (hearth__node_unref(as_leaf(t)->e[i].node))
            dead[ndead++] = as_leaf(t)->e[i].node;
    }
    for (unsigned i = 0; i < ndead; i++)
        hearth__node_prefetch_free(dead[i]);
    for (unsigned i = 0; i < ndead; i++)
        hearth__node_free(dead[i]);
}

size_t hearth__bt_count(const hearth__bt *t) { return t ? t->count : 0; }

void hearth__bt_incref(hearth__bt *t) {
    if (t)
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
}

void hearth__bt_decref(hearth__bt *t) {
    if (!t || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
        return;
    prefetch_held(t);
    if (t->leaf) {
        leaf_release(t);
    } else {
        for (unsigned i = 0; i < t->n; i++)
            hearth__bt_decref(as_inner(t)->kid[i].page);
    }
    page_free(t);
}

/* name (with its sort) against a key: the sorts decide unless equal. A
 * string of under 8 bytes is all in its sort, so equal sorts are equal
 * keys and the key itself (often a cache miss away) is not read. */
static inline int compare_key(const hearth__name *name, uint64_t sort,
                              const hearth__key *key, uint64_t key_sort) {
    if (sort != key_sort)
        return sort < key_sort ? -1 : 1;
    if (name->len < 8 && sort >= (1ULL << 56) && sort != UINT64_MAX)
        return 0;
    hearth__name kn = hearth__key_name(key);
    return hearth__name_compare(name, &kn);
}

/* Asks for every cache line of a page's array before a binary search
 * over it: the search's probes depend on each other, so their misses
 * would otherwise come one after another. */
static inline void prefetch_span(const void *start, size_t bytes) {
    for (size_t at = 0; at < bytes; at += 64)
        __builtin_prefetch((const char *)start + at);
}

/* First of n entries whose sort is >= sort, without a branch per probe
 * (the compiler makes the choice a conditional move): which way a probe
 * goes is a coin toss, and a mispredicted branch cost more than the
 * probe. */
static inline unsigned sort_lower(const hearth__entry *e, unsigned n,
                                  uint64_t sort) {
    if (n == 0)
        return 0;
    const hearth__entry *base = e;
    while (n > 1) {
        unsigned half = n / 2;
        base = base[half].sort < sort ? base + half : base;
        n -= half;
    }
    return (unsigned)(base - e) + (base->sort < sort);
}

/* First slot whose key is >= name: by the sorts alone, unless entries
 * share name's sort (keys of 8 bytes or more with the same first 8, or
 * integers), which are then told apart by key. */
static unsigned leaf_lower(const hearth__bt *p, const hearth__name *name,
                           uint64_t sort, bool *found) {
    const hearth__entry *e = as_leaf(p)->e;
    prefetch_span(e, p->n * sizeof *e);
    unsigned lo = sort_lower(e, p->n, sort), hi = lo;
    while (hi < p->n && e[hi].sort == sort)
        hi++;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (compare_key(name, sort, e[mid].key, e[mid].sort) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < p->n && compare_key(name, sort, e[lo].key, e[lo].sort) == 0;
    return lo;
}

/* The kid whose range holds name: the last with first key <= name. */
static unsigned inner_slot(const hearth__bt *p, const hearth__name *name,
                           uint64_t sort) {
    const inner_page *in = as_inner(p);
    prefetch_span(in->first, p->n * sizeof in->first[0]);
    unsigned lo = 1, hi = p->n;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (compare_key(name, sort, in->first[mid].key, in->first[mid].sort) >= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}

/* ---- lookups ---- */

const hearth__entry *hearth__bt_find(const hearth__bt *t,
                                     const hearth__name *name) {
    if (!t)
        return NULL;
    uint64_t sort = hearth__name_sort(name);
    while (!t->leaf)
        t = as_inner(t)->kid[inner_slot(t, name, sort)].page;
    bool found;
    unsigned i = leaf_lower(t, name, sort, &found);
    return found ? &as_leaf(t)->e[i] : NULL;
}

const hearth__entry *hearth__bt_at(const hearth__bt *t, size_t index) {
    if (!t || index >= t->count)
        return NULL;
    while (!t->leaf) {
        const inner_page *in = as_inner(t);
        unsigned i = 0;
        while (index >= in->kid[i].count) {
            index -= in->kid[i].count;
            i++;
        }
        t = in->kid[i].page;
    }
    return &as_leaf(t)->e[index];
}

size_t hearth__bt_rank(const hearth__bt *t, const hearth__name *name,
                       bool *found) {
    size_t rank = 0;
    *found = false;
    if (!t)
        return 0;
    uint64_t sort = hearth__name_sort(name);
    while (!t->leaf) {
        unsigned s = inner_slot(t, name, sort);
        for (unsigned i = 0; i < s; i++)
            rank += as_inner(t)->kid[i].count;
        t = as_inner(t)->kid[s].page;
    }
    return rank + leaf_lower(t, name, sort, found);
}

const hearth__entry *hearth__bt_find_held(const hearth__bt *t,
                                          const hearth__name *name,
                                          bool copying, bool *alone) {
    *alone = false;
    if (!t)
        return NULL;
    uint64_t sort = hearth__name_sort(name);
    bool unique = page_unique(t);
    while (!t->leaf) {
        t = as_inner(t)->kid[inner_slot(t, name, sort)].page;
        unique = unique && page_unique(t);
    }
    bool found;
    unsigned i = leaf_lower(t, name, sort, &found);
    *alone = unique;
    if (copying || !unique)
        prefetch_held(t);
    return found ? &as_leaf(t)->e[i] : NULL;
}

/* ---- update planning ---- */

typedef struct level {
    hearth__bt *page;    /* the page on the path */
    unsigned slot;       /* kid (inner) or entry position (leaf) */
    bool unique;         /* held by us alone, with all its ancestors */
    hearth__bt *copy;    /* replacement page, when page cannot be edited */
    bool move;           /* copy is a larger home for a page held alone */
    hearth__bt *sibling; /* new right half, when the page splits */
} level;

typedef struct path_walk {
    level lv[HEARTH__BT_MAX_DEPTH];
    uint64_t sort;  /* name's hearth__name_sort, computed once */
    int leaf;       /* index of the leaf level */
    bool found;     /* name is present */
    bool rightmost; /* the path is the tree's last */
} path_walk;

static void level_init(level *l, hearth__bt *page, bool unique) {
    l->page = page;
    l->unique = unique;
    l->copy = NULL;
    l->move = false;
    l->sibling = NULL;
}

static void walk_path(hearth__bt *t, const hearth__name *name, path_walk *w) {
    bool unique = page_unique(t);
    uint64_t sort = w->sort = hearth__name_sort(name);
    int d = 0;
    w->rightmost = true;
    for (;;) {
        level *l = &w->lv[d];
        level_init(l, t, unique);
        if (t->leaf) {
            l->slot = leaf_lower(t, name, sort, &w->found);
            w->rightmost = w->rightmost && l->slot == t->n;
            w->leaf = d;
            return;
        }
        l->slot = inner_slot(t, name, sort);
        w->rightmost = w->rightmost && l->slot == (unsigned)t->n - 1u;
        t = as_inner(t)->kid[l->slot].page;
        unique = unique && page_unique(t);
        d++;
    }
}

/* Undoes the planning allocations of a failed update. */
static void release_plan(path_walk *w, hearth__bt *new_root) {
    for (int d = 0; d <= w->leaf; d++) {
        hearth__bt_decref(w->lv[d].copy);
        page_free(w->lv[d].sibling); /* still empty */
    }
    page_free(new_root);
}

static inline hearth__bt *level_page(const level *l) {
    return l->copy ? l->copy : l->page;
}

static void inner_recount(hearth__bt *p) {
    size_t count = 0;
    for (unsigned i = 0; i < p->n; i++)
        count += as_inner(p)->kid[i].count;
    p->count = count;
}

/* Points inner page p's slot s at the level below's resulting page,
 * releasing the reference p held to the old one when it changed, and
 * moves p's count by the kid's change (not a sum over all its kids: that
 * read every count on the path at every update). The kid's first key is
 * read again only when it may have changed (first_moved): reading it is
 * a cache miss on the kid's first entry. */
static hearth__bt *relink_kid(hearth__bt *p, unsigned s, const level *below,
                              bool first_moved) {
    hearth__bt *kid = level_page(below);
    if (kid != below->page) {
        as_inner(p)->kid[s].page = kid;
        hearth__bt_decref(below->page);
    }
    p->count = p->count - as_inner(p)->kid[s].count + kid->count;
    as_inner(p)->kid[s].count = kid->count;
    if (kid->n && first_moved)
        as_inner(p)->first[s] = page_first(kid);
    return kid;
}

/* How many entries stay left when a full page of BT_ORDER gains one: all of
 * them when appending at the tree's end (sequential inserts then fill
 * pages), half otherwise. */
static unsigned split_keep(bool rightmost) {
    return rightmost ? BT_ORDER : (BT_ORDER + 1) / 2;
}

/* A tree of one entry, for a put into an empty tree. */
static int put_first(hearth__bt **t, const hearth__name *name,
                     hearth__key *key, hearth_node_t *node) {
    hearth__key *k = key ? hearth__key_incref(key) : hearth__key_create(name);
    hearth__bt *l = k ? leaf_alloc(1) : NULL;
    if (!l) {
        hearth__key_decref(k);
        return HEARTH_ENOMEM;
    }
    as_leaf(l)->e[0] = (hearth__entry){k, node, hearth__name_sort(name)};
    l->n = 1;
    l->count = 1;
    *t = l;
    return 0;
}

/* The plan of a put along w: every allocation it needs (copies of shared
 * pages, split siblings, a new root, the new entry's key), so that applying
 * it cannot fail. False, with nothing left allocated, when memory runs
 * out. */
static bool plan_put(path_walk *w, const hearth__name *name, hearth__key *key,
                     hearth__key **new_key, hearth__bt **new_root) {
    level *lf = &w->lv[w->leaf];
    bool failed = false;
    *new_key = NULL;
    *new_root = NULL;
    if (w->found) {
        if (!lf->unique)
            failed = !(lf->copy = page_clone(lf->page, lf->page->cap));
    } else {
        *new_key = key ? hearth__key_incref(key) : hearth__key_create(name);
        failed = !*new_key;
        unsigned n = lf->page->n;
        if (!failed && n == BT_ORDER) {
            if (!lf->unique)
                failed = !(lf->copy = page_clone(lf->page, BT_ORDER));
            if (!failed)
                failed = !(lf->sibling = leaf_alloc(BT_ORDER));
        } else if (!failed && !lf->unique) {
            failed = !(lf->copy = page_clone(lf->page, leaf_cap_for(n + 1)));
        } else if (!failed && n == lf->page->cap) {
            /* Held alone and full: the entries move to a larger page as
             * they are, with no reference counting (see apply_leaf). */
            failed = !(lf->copy = leaf_alloc(leaf_cap_for(n + 1)));
            lf->move = true;
        }
    }
    for (int d = w->leaf - 1; d >= 0 && !failed; d--) {
        level *l = &w->lv[d];
        if (!l->unique)
            failed = !(l->copy = page_clone(l->page, 0));
        if (!failed && w->lv[d + 1].sibling && l->page->n == BT_ORDER)
            failed = !(l->sibling = inner_alloc());
    }
    if (!failed && w->lv[0].sibling)
        failed = !(*new_root = inner_alloc());
    if (failed) {
        release_plan(w, *new_root);
        hearth__key_decref(*new_key);
    }
    return !failed;
}

/* The leaf's part of a planned put: the entry replaced, inserted, or
 * inserted with the leaf split in two. */
static void apply_leaf(path_walk *w, hearth_node_t *node, hearth__key *new_key,
                       hearth_node_t **replaced) {
    level *lf = &w->lv[w->leaf];
    if (lf->move) {
        /* The old page keeps no entries, so releasing it frees only it. */
        memcpy(as_leaf(lf->copy)->e, as_leaf(lf->page)->e,
               lf->page->n * sizeof(hearth__entry));
        lf->copy->n = lf->page->n;
        lf->copy->count = lf->page->count;
        lf->page->n = 0;
        lf->page->count = 0;
    }
    hearth__bt *cur = level_page(lf);
    hearth__entry *e = as_leaf(cur)->e;
    if (w->found) {
        hearth_node_t *old = e[lf->slot].node;
        e[lf->slot].node = node;
        if (replaced)
            *replaced = old;
        else
            hearth_node_decref(old);
    } else if (lf->sibling) {
        hearth__entry all[BT_ORDER + 1];
        memcpy(all, e, lf->slot * sizeof *all);
        all[lf->slot] = (hearth__entry){new_key, node, w->sort};
        memcpy(all + lf->slot + 1, e + lf->slot,
               (BT_ORDER - lf->slot) * sizeof *all);
        unsigned keep = split_keep(w->rightmost);
        memcpy(e, all, keep * sizeof *all);
        cur->n = (uint16_t)keep;
        cur->count = keep;
        memcpy(as_leaf(lf->sibling)->e, all + keep,
               (BT_ORDER + 1 - keep) * sizeof *all);
        lf->sibling->n = (uint16_t)(BT_ORDER + 1 - keep);
        lf->sibling->count = lf->sibling->n;
    } else {
        memmove(e + lf->slot + 1, e + lf->slot,
                (cur->n - lf->slot) * sizeof *e);
        e[lf->slot] = (hearth__entry){new_key, node, w->sort};
        cur->n++;
        cur->count++;
    }
}

/* Inner page p (level l) takes the sibling its kid below split off, right
 * after that kid, splitting in turn when it was full. */
static void take_sibling(hearth__bt *p, level *l, const level *below,
                         bool rightmost) {
    bt_kid kids[BT_ORDER + 1];
    bt_first firsts[BT_ORDER + 1];
    inner_page *in = as_inner(p);
    unsigned s = l->slot + 1, n = p->n;
    memcpy(kids, in->kid, s * sizeof *kids);
    memcpy(firsts, in->first, s * sizeof *firsts);
    kids[s] = (bt_kid){below->sibling, below->sibling->count};
    firsts[s] = page_first(below->sibling);
    memcpy(kids + s + 1, in->kid + s, (n - s) * sizeof *kids);
    memcpy(firsts + s + 1, in->first + s, (n - s) * sizeof *firsts);
    unsigned total = n + 1;
    unsigned keep = l->sibling ? split_keep(rightmost) : total;
    memcpy(in->kid, kids, keep * sizeof *kids);
    memcpy(in->first, firsts, keep * sizeof *firsts);
    p->n = (uint16_t)keep;
    if (l->sibling) {
        inner_page *sib = as_inner(l->sibling);
        memcpy(sib->kid, kids + keep, (total - keep) * sizeof *kids);
        memcpy(sib->first, firsts + keep, (total - keep) * sizeof *firsts);
        l->sibling->n = (uint16_t)(total - keep);
        inner_recount(l->sibling);
        inner_recount(p);
    } else {
        p->count += below->sibling->count;
    }
}

/* The inner levels' part, from the leaf up: each page links its (possibly
 * copied) kid, with the kid's count and first key, and takes a split
 * kid's sibling. Then the new root, when the top split. */
static hearth__bt *apply_inner(path_walk *w, hearth__bt *new_root) {
    /* Copies keep their keys: a first key moves only with a new entry in
     * front. */
    bool first_moved = !w->found && w->lv[w->leaf].slot == 0;
    for (int d = w->leaf - 1; d >= 0; d--) {
        level *l = &w->lv[d];
        hearth__bt *p = level_page(l);
        level *below = &w->lv[d + 1];
        relink_kid(p, l->slot, below, first_moved);
        /* p's own first key moves with its first kid's. */
        first_moved = first_moved && l->slot == 0;
        if (below->sibling)
            take_sibling(p, l, below, w->rightmost);
    }
    level *top = &w->lv[0];
    hearth__bt *root = level_page(top);
    if (root != top->page)
        hearth__bt_decref(top->page); /* the caller's reference */
    if (!top->sibling)
        return root;
    inner_page *r = as_inner(new_root);
    r->kid[0] = (bt_kid){root, root->count};
    r->kid[1] = (bt_kid){top->sibling, top->sibling->count};
    r->first[0] = page_first(root);
    r->first[1] = page_first(top->sibling);
    new_root->n = 2;
    inner_recount(new_root);
    return new_root;
}

/* The path to the entry `at` (a lookup's result in t) when t is a single
 * leaf, which then needs no search; false otherwise. */
static bool walk_to(hearth__bt *t, const hearth__entry *at, path_walk *w) {
    if (!at || !t->leaf)
        return false;
    size_t slot = (size_t)(at - as_leaf(t)->e);
    if (slot >= t->n)
        return false;
    level_init(&w->lv[0], t, page_unique(t));
    w->lv[0].slot = (unsigned)slot;
    w->sort = at->sort;
    w->leaf = 0;
    w->found = true;
    w->rightmost = false;
    return true;
}

/* hearth__bt_put, walking from `at` when it can (see walk_to). */
static int put_at(hearth__bt **t, const hearth__name *name, hearth__key *key,
                  const hearth__entry *at, hearth_node_t *node,
                  hearth_node_t **replaced) {
    if (replaced)
        *replaced = NULL;
    if (!*t)
        return put_first(t, name, key, node);
    path_walk w;
    if (!walk_to(*t, at, &w))
        walk_path(*t, name, &w);
    hearth__key *new_key;
    hearth__bt *new_root;
    if (!plan_put(&w, name, key, &new_key, &new_root))
        return HEARTH_ENOMEM;
    apply_leaf(&w, node, new_key, replaced);
    *t = apply_inner(&w, new_root);
    return 0;
}

int hearth__bt_put(hearth__bt **t, const hearth__name *name, hearth__key *key,
                   hearth_node_t *node, hearth_node_t **replaced) {
    return put_at(t, name, key, NULL, node, replaced);
}

int hearth__bt_replace(hearth__bt **t, const hearth__name *name,
                       const hearth__entry *at, hearth_node_t *node,
                       hearth_node_t **replaced) {
    return put_at(t, name, NULL, at, node, replaced);
}

int hearth__bt_remove(hearth__bt **t, const hearth__name *name) {
    if (!*t)
        return 0;
    path_walk w;
    walk_path(*t, name, &w);
    if (!w.found)
        return 0;

    for (int d = w.leaf; d >= 0; d--) {
        level *l = &w.lv[d];
        if (!l->unique && !(l->copy = page_clone(l->page, l->page->cap))) {
            release_plan(&w, NULL);
            return HEARTH_ENOMEM;
        }
    }

    level *lf = &w.lv[w.leaf];
    hearth__bt *cur = level_page(lf);
    hearth__entry *e = as_leaf(cur)->e;
    hearth__key_decref(e[lf->slot].key);
    hearth_node_decref(e[lf->slot].node);
    memmove(e + lf->slot, e + lf->slot + 1,
            (cur->n - lf->slot - 1) * sizeof *e);
    cur->n--;
    cur->count--;

    for (int d = w.leaf - 1; d >= 0; d--) {
        level *l = &w.lv[d];
        hearth__bt *p = level_page(l);
        hearth__bt *kid = relink_kid(p, l->slot, &w.lv[d + 1], true);
        if (kid->n == 0) {
            /* The kid emptied: drop it from this page. */
            inner_page *in = as_inner(p);
            unsigned s = l->slot, rest = p->n - s - 1;
            hearth__bt_decref(kid);
            memmove(in->kid + s, in->kid + s + 1, rest * sizeof in->kid[0]);
            memmove(in->first + s, in->first + s + 1,
                    rest * sizeof in->first[0]);
            p->n--;
        }
    }

    level *top = &w.lv[0];
    hearth__bt *root = level_page(top);
    if (root != top->page)
        hearth__bt_decref(top->page);
    if (root->n == 0) {
        hearth__bt_decref(root);
        root = NULL;
    }
    while (root && !root->leaf && root->n == 1) {
        hearth__bt *kid = as_inner(root)->kid[0].page;
        hearth__bt_incref(kid);
        hearth__bt_decref(root);
        root = kid;
    }
    *t = root;
    return 0;
}

/* ---- bulk build ---- */

/* Frees the pages of a failed build without touching the entries, which
 * still belong to the caller. */
static void free_shallow(hearth__bt *p) {
    if (!p->leaf)
        for (unsigned i = 0; i < p->n; i++)
            free_shallow(as_inner(p)->kid[i].page);
    page_free(p);
}

static void free_level(hearth__bt **pages, size_t n) {
    for (size_t i = 0; i < n; i++)
        free_shallow(pages[i]);
    hearth__free(pages);
}

int hearth__bt_build(hearth__entry *entries, size_t n, hearth__bt **out) {
    if (n == 0) {
        *out = NULL;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        hearth__name name = hearth__key_name(entries[i].key);
        entries[i].sort = hearth__name_sort(&name);
    }
    size_t nleaves = (n + BT_ORDER - 1) / BT_ORDER;
    hearth__bt **level_pages = hearth__calloc(nleaves, sizeof *level_pages);
    if (!level_pages)
        return HEARTH_ENOMEM;
    for (size_t i = 0; i < nleaves; i++) {
        size_t from = i * BT_ORDER;
        unsigned take = (unsigned)(n - from < BT_ORDER ? n - from : BT_ORDER);
        hearth__bt *l = leaf_alloc(nleaves == 1 ? leaf_cap_for(take) : BT_ORDER);
        if (!l) {
            free_level(level_pages, i);
            return HEARTH_ENOMEM;
        }
        memcpy(as_leaf(l)->e, entries + from, take * sizeof *entries);
        l->n = (uint16_t)take;
        l->count = take;
        level_pages[i] = l;
    }
    /* Upper levels. On failure the pages of this level are freed alone and
     * the trees below them whole, all without touching entries. */
    hearth__bt **lower = level_pages;
    size_t nlower = nleaves;
    while (nlower > 1) {
        size_t nupper = (nlower + BT_ORDER - 1) / BT_ORDER;
        hearth__bt **upper = hearth__calloc(nupper, sizeof *upper);
        bool failed = !upper;
        for (size_t i = 0; !failed && i < nupper; i++) {
            hearth__bt *p = inner_alloc();
            if (!p) {
                failed = true;
                break;
            }
            upper[i] = p;
            size_t from = i * BT_ORDER;
            unsigned take =
                (unsigned)(nlower - from < BT_ORDER ? nlower - from : BT_ORDER);
            for (unsigned k = 0; k < take; k++) {
                hearth__bt *kid = lower[from + k];
                as_inner(p)->kid[k] = (bt_kid){kid, kid->count};
                as_inner(p)->first[k] = page_first(kid);
            }
            p->n = (uint16_t)take;
            inner_recount(p);
        }
        if (failed) {
            if (upper)
                for (size_t i = 0; i < nupper; i++)
                    page_free(upper[i]);
            hearth__free(upper);
            free_level(lower, nlower);
            return HEARTH_ENOMEM;
        }
        hearth__free(lower);
        lower = upper;
        nlower = nupper;
    }
    *out = lower[0];
    hearth__free(lower);
    return 0;
}
