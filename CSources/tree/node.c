/* node.c - node construction, access, copy-on-write updates, equality,
 * value order and server value resolution. */
#include "tree/node.h"

#include "path/path.h"
#include "tree/pool.h"

#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

/* The empty node is static and shared; its count starts high enough that
 * balanced increfs and decrefs never bring it to zero. */
static hearth_node_t empty_node = {1u << 30, HEARTH_TYPE_NULL, 0, 0, 0, NULL,
                                   {0}};

hearth_node_t *hearth__node_empty(void) { return &empty_node; }

#define NODE_HEAD offsetof(hearth_node_t, u)

/* Bytes after the header of leaf n, as its constructor allocated them. */
static size_t leaf_payload(const hearth_node_t *n) {
    switch (n->type) {
    case HEARTH_TYPE_STRING:
        return sizeof(size_t) + n->u.len + 1;
    case HEARTH_TYPE_BOOLEAN:
        return sizeof(bool);
    default:
        return sizeof(double);
    }
}

/* The size node n was allocated at (nodes come from tree/pool.c). */
static size_t node_size(const hearth_node_t *n) {
    return NODE_HEAD + (n->type == HEARTH_TYPE_OBJECT ? sizeof(n->u.obj)
                                                      : leaf_payload(n));
}

static hearth_node_t *node_alloc(hearth_type type, size_t payload) {
    hearth_node_t *n = hearth__pool_alloc(NODE_HEAD + payload);
    if (!n)
        return NULL;
    atomic_init(&n->refs, 1);
    n->type = (uint8_t)type;
    n->sv = 0;
    n->flags = 0;
    n->reserved = 0; /* depth */
    n->priority = NULL;
    return n;
}

/* The depth of a node lives in `reserved`: the number of keys from it to
 * its deepest leaf (0 for leaves and null). A node deeper than
 * HEARTH_MAX_DEPTH is never built. */
static inline unsigned node_depth(const hearth_node_t *n) { return n->reserved; }

int hearth__node_depth(const hearth_node_t *n) { return (int)node_depth(n); }

hearth_node_t *hearth_node_incref(const hearth_node_t *node) {
    hearth_node_t *n = (hearth_node_t *)node;
    if (n)
        atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
    return n;
}

void hearth_node_decref(const hearth_node_t *node) {
    hearth_node_t *n = (hearth_node_t *)node;
    if (n && hearth__node_unref(n))
        hearth__node_free(n);
}

void hearth__node_prefetch_free(const hearth_node_t *n) {
    if (n->type == HEARTH_TYPE_OBJECT)
        __builtin_prefetch(n->u.obj.tree, 1);
}

void hearth__node_free(hearth_node_t *n) {
    hearth_node_decref(n->priority);
    if (n->type == HEARTH_TYPE_OBJECT) {
        hearth__bt_decref(n->u.obj.tree);
        hearth__free(atomic_load(&n->u.obj.hash));
    }
    hearth__pool_free(n, node_size(n));
}

/* ---- constructors ---- */

hearth_node_t *hearth_node_null(void) { return hearth_node_incref(&empty_node); }

hearth_node_t *hearth_node_boolean(bool value) {
    hearth_node_t *n = node_alloc(HEARTH_TYPE_BOOLEAN, sizeof(bool));
    if (n)
        n->u.boolean = value;
    return n;
}

hearth_node_t *hearth_node_number(double value) {
    if (!isfinite(value))
        return NULL;
    hearth_node_t *n = node_alloc(HEARTH_TYPE_NUMBER, sizeof(double));
    if (n)
        n->u.number = value;
    return n;
}

hearth_node_t *hearth_node_string(const char *utf8, size_t len) {
    if (len > HEARTH_MAX_STRING_BYTES || !hearth__utf8_valid(utf8, len))
        return NULL;
    hearth_node_t *n = node_alloc(HEARTH_TYPE_STRING, sizeof(size_t) + len + 1);
    if (!n)
        return NULL;
    n->u.len = len;
    char *s = (char *)hearth__node_str(n);
    if (len) /* utf8 may be NULL for the empty string */
        memcpy(s, utf8, len);
    s[len] = '\0';
    return n;
}

static hearth_node_t *server_value(uint8_t kind, double delta) {
    hearth_node_t *n = node_alloc(HEARTH_TYPE_SERVER_VALUE, sizeof(double));
    if (n) {
        n->sv = kind;
        n->u.number = delta;
    }
    return n;
}

hearth_node_t *hearth_node_server_timestamp(void) {
    return server_value(HEARTH__SV_TIMESTAMP, 0);
}

hearth_node_t *hearth_node_server_increment(double delta) {
    return isfinite(delta) ? server_value(HEARTH__SV_INCREMENT, delta) : NULL;
}

hearth_node_t *hearth__node_obj_new(hearth__bt *tree, hearth_node_t *priority) {
    if (!tree) {
        hearth_node_decref(priority);
        return hearth_node_null();
    }
    hearth_node_t *n = node_alloc(HEARTH_TYPE_OBJECT, sizeof(n->u.obj));
    if (!n) {
        hearth__bt_decref(tree);
        hearth_node_decref(priority);
        return NULL;
    }
    n->priority = priority;
    n->u.obj.tree = tree;
    n->u.obj.prio_children = 0;
    atomic_init(&n->u.obj.hash, NULL);
    unsigned depth = 0;
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, tree, 0);
    for (const hearth__entry *e; (e = hearth__bt_iter_next(&it));) {
        if (e->node->priority)
            n->u.obj.prio_children++;
        if (hearth__node_has_sv(e->node))
            n->flags |= HEARTH__HAS_SERVER_VALUES;
        if (node_depth(e->node) > depth)
            depth = node_depth(e->node);
    }
    n->reserved = (uint8_t)(depth + 1);
    return n;
}

static int compare_entry_names(const void *a, const void *b) {
    hearth__name na = hearth__key_name(((const hearth__entry *)a)->key);
    hearth__name nb = hearth__key_name(((const hearth__entry *)b)->key);
    return hearth__name_compare(&na, &nb);
}

int hearth__node_from_entries(hearth__entry *entries, size_t n,
                              hearth_node_t **out) {
    if (n > 1)
        qsort(entries, n, sizeof *entries, compare_entry_names);
    hearth__bt *tree = NULL;
    int rc = hearth__bt_build(entries, n, &tree);
    if (rc) {
        for (size_t i = 0; i < n; i++) {
            hearth__key_decref(entries[i].key);
            hearth_node_decref(entries[i].node);
        }
    }
    hearth__free(entries);
    if (rc)
        return rc;
    *out = hearth__node_obj_new(tree, NULL);
    return *out ? 0 : HEARTH_ENOMEM;
}

/* A new object node sharing n's children and priority. */
static hearth_node_t *obj_copy(const hearth_node_t *n) {
    hearth_node_t *c = node_alloc(HEARTH_TYPE_OBJECT, sizeof(c->u.obj));
    if (!c)
        return NULL;
    c->flags = n->flags;
    c->reserved = n->reserved;
    c->priority = hearth_node_incref(n->priority);
    c->u.obj.tree = n->u.obj.tree;
    hearth__bt_incref(c->u.obj.tree);
    c->u.obj.prio_children = n->u.obj.prio_children;
    atomic_init(&c->u.obj.hash, NULL);
    return c;
}

hearth_node_t *hearth__node_leaf_with_priority(const hearth_node_t *n,
                                               hearth_node_t *priority) {
    size_t payload = leaf_payload(n);
    hearth_node_t *c = hearth__pool_alloc(NODE_HEAD + payload);
    if (!c) {
        hearth_node_decref(priority);
        return NULL;
    }
    memcpy(c, n, NODE_HEAD + payload);
    atomic_init(&c->refs, 1);
    c->priority = priority;
    return c;
}

/* ---- access ---- */

hearth_type hearth_node_type(const hearth_node_t *node) {
    return (hearth_type)node->type;
}

bool hearth_node_is_null(const hearth_node_t *node) {
    return node->type == HEARTH_TYPE_NULL;
}

bool hearth_node_boolean_value(const hearth_node_t *node) {
    return node->type == HEARTH_TYPE_BOOLEAN && node->u.boolean;
}

double hearth_node_number_value(const hearth_node_t *node) {
    return node->type == HEARTH_TYPE_NUMBER ? node->u.number : 0;
}

const char *hearth_node_string_value(const hearth_node_t *node, size_t *len) {
    if (node->type != HEARTH_TYPE_STRING)
        return NULL;
    if (len)
        *len = node->u.len;
    return hearth__node_str(node);
}

const hearth_node_t *hearth_node_priority(const hearth_node_t *node) {
    return hearth__prio(node);
}

size_t hearth_node_child_count(const hearth_node_t *node) {
    return node->type == HEARTH_TYPE_OBJECT ? hearth__bt_count(node->u.obj.tree)
                                            : 0;
}

const hearth_node_t *hearth__node_child(const hearth_node_t *n,
                                        const hearth__name *name) {
    if (n->type != HEARTH_TYPE_OBJECT)
        return &empty_node;
    const hearth__entry *e = hearth__bt_find(n->u.obj.tree, name);
    return e ? e->node : &empty_node;
}

const hearth_node_t *hearth_node_child(const hearth_node_t *node,
                                       const char *key) {
    hearth__name name;
    hearth__name_init(&name, key, strlen(key));
    return hearth__node_child(node, &name);
}

const hearth_node_t *hearth_node_child_at(const hearth_node_t *node,
                                          size_t index, const char **key) {
    if (node->type != HEARTH_TYPE_OBJECT)
        return NULL;
    const hearth__entry *e = hearth__bt_at(node->u.obj.tree, index);
    if (!e)
        return NULL;
    if (key)
        *key = e->key->s;
    return e->node;
}

const hearth_node_t *hearth__node_at(const hearth_node_t *root,
                                     const hearth__path *path) {
    for (unsigned i = 0; i < path->n; i++)
        root = hearth__node_child(root, &path->seg[i]);
    return root;
}

int hearth_node_get(const hearth_node_t *node, const char *path,
                    const hearth_node_t **out, hearth_error_t *err) {
    hearth__path p;
    int rc = hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &p, err);
    if (rc)
        return rc;
    node = hearth__node_at(node, &p);
    *out = p.priority ? hearth__prio(node) : node;
    return 0;
}

int hearth_node_foreach_child(const hearth_node_t *node, hearth_child_cb cb,
                              void *ctx) {
    if (node->type != HEARTH_TYPE_OBJECT)
        return 0;
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, node->u.obj.tree, 0);
    for (const hearth__entry *e; (e = hearth__bt_iter_next(&it));) {
        int rc = cb(e->key->s, e->node, ctx);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- equality and value order ---- */

bool hearth_node_equal(const hearth_node_t *a, const hearth_node_t *b) {
    if (a == b)
        return true;
    if (a->type != b->type || a->sv != b->sv)
        return false;
    if (!hearth_node_equal(hearth__prio(a), hearth__prio(b)))
        return false;
    switch (a->type) {
    case HEARTH_TYPE_NULL:
        return true;
    case HEARTH_TYPE_BOOLEAN:
        return a->u.boolean == b->u.boolean;
    case HEARTH_TYPE_NUMBER:
    case HEARTH_TYPE_SERVER_VALUE:
        return a->u.number == b->u.number;
    case HEARTH_TYPE_STRING:
        return a->u.len == b->u.len &&
               memcmp(hearth__node_str(a), hearth__node_str(b), a->u.len) == 0;
    default:
        break;
    }
    if (a->u.obj.tree == b->u.obj.tree)
        return true;
    if (hearth__bt_count(a->u.obj.tree) != hearth__bt_count(b->u.obj.tree))
        return false;
    hearth__bt_iter ia, ib;
    hearth__bt_iter_init(&ia, a->u.obj.tree, 0);
    hearth__bt_iter_init(&ib, b->u.obj.tree, 0);
    for (const hearth__entry *ea, *eb;
         (ea = hearth__bt_iter_next(&ia)) && (eb = hearth__bt_iter_next(&ib));) {
        if (ea->key != eb->key &&
            (ea->key->len != eb->key->len ||
             memcmp(ea->key->s, eb->key->s, ea->key->len) != 0))
            return false;
        if (!hearth_node_equal(ea->node, eb->node))
            return false;
    }
    return true;
}

static int type_rank(const hearth_node_t *n) {
    switch (n->type) {
    case HEARTH_TYPE_NULL:
        return 0;
    case HEARTH_TYPE_BOOLEAN:
        return 1;
    case HEARTH_TYPE_NUMBER:
        return 2;
    case HEARTH_TYPE_STRING:
        return 3;
    default:
        return 4;
    }
}

int hearth__node_value_compare(const hearth_node_t *a, const hearth_node_t *b) {
    int ra = type_rank(a), rb = type_rank(b);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    switch (a->type) {
    case HEARTH_TYPE_BOOLEAN:
        return (int)a->u.boolean - (int)b->u.boolean;
    case HEARTH_TYPE_NUMBER:
        return a->u.number < b->u.number ? -1 : a->u.number > b->u.number;
    case HEARTH_TYPE_STRING:
        return hearth__utf16_compare(hearth__node_str(a), a->u.len,
                                     hearth__node_str(b), b->u.len);
    default:
        return 0;
    }
}

/* ---- copy-on-write updates ---- */

static void forget_hash(hearth_node_t *n) {
    if (n->type == HEARTH_TYPE_OBJECT)
        hearth__free(atomic_exchange(&n->u.obj.hash, NULL));
}

static unsigned max_child_depth(const hearth_node_t *n) {
    unsigned depth = 0;
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, n->u.obj.tree, 0);
    for (const hearth__entry *e; (e = hearth__bt_iter_next(&it));)
        if (node_depth(e->node) > depth)
            depth = node_depth(e->node);
    return depth;
}

/* Keeps an object's summaries (priority count, server-value flag, depth)
 * true after one child went from `before` (its priority flag and depth) to
 * `after`. */
static void child_changed(hearth_node_t *n, bool had_priority,
                          unsigned old_depth, const hearth_node_t *after) {
    n->u.obj.prio_children -= had_priority;
    n->u.obj.prio_children += after->priority != NULL;
    if (hearth__node_has_sv(after))
        n->flags |= HEARTH__HAS_SERVER_VALUES;
    unsigned depth = node_depth(after);
    if (depth + 1 > n->reserved)
        n->reserved = (uint8_t)(depth + 1);
    else if (old_depth + 1 == n->reserved && depth < old_depth)
        n->reserved = (uint8_t)(max_child_depth(n) + 1);
    forget_hash(n);
}

/* Replaces child `name` of n by `child` (taken over on success; an empty
 * child removes). With `mut`, n itself may be edited. `at` is the entry a
 * lookup found name at in n's children (NULL: not known), which spares a
 * second search. *out is n (edited or unchanged) or a new reference. */
static int put_child(hearth_node_t *n, bool mut, const hearth__name *name,
                     const hearth__entry *at, hearth_node_t *child,
                     hearth_node_t **out) {
    if (n->type != HEARTH_TYPE_OBJECT) {
        if (hearth__node_is_empty(child)) {
            hearth_node_decref(child);
            *out = n;
            return 0;
        }
        hearth__bt *tree = NULL;
        hearth_node_incref(child); /* the tree's own reference */
        int rc = hearth__bt_put(&tree, name, NULL, child, NULL);
        if (rc) {
            hearth_node_decref(child);
            return rc;
        }
        /* A leaf turning into an object keeps its priority. */
        hearth_node_t *obj =
            hearth__node_obj_new(tree, hearth_node_incref(n->priority));
        if (!obj)
            return HEARTH_ENOMEM; /* the tree went, the caller's ref stays */
        hearth_node_decref(child);
        *out = obj;
        return 0;
    }
    bool removing = hearth__node_is_empty(child);
    /* A put finds the old child on its one walk down; a removal looks
     * first, since a missing or last child changes what it does. */
    const hearth__entry *old =
        removing ? hearth__bt_find(n->u.obj.tree, name) : NULL;
    if (removing && !old) {
        hearth_node_decref(child);
        *out = n;
        return 0;
    }
    if (removing && hearth__bt_count(n->u.obj.tree) == 1) {
        hearth_node_decref(child);
        *out = hearth_node_null(); /* the last child left: n is null now */
        return 0;
    }
    hearth_node_t *target = mut ? n : obj_copy(n);
    if (!target)
        return HEARTH_ENOMEM;
    bool had_priority = old && old->node->priority;
    unsigned old_depth = old ? node_depth(old->node) : 0;
    hearth_node_t *replaced = NULL;
    int rc = removing ? hearth__bt_remove(&target->u.obj.tree, name)
                      : hearth__bt_replace(&target->u.obj.tree, name, at,
                                           child, &replaced);
    if (rc) {
        if (target != n)
            hearth_node_decref(target);
        return rc;
    }
    if (replaced) {
        had_priority = replaced->priority != NULL;
        old_depth = node_depth(replaced);
        hearth_node_decref(replaced);
    }
    child_changed(target, had_priority, old_depth, child);
    if (removing)
        hearth_node_decref(child);
    *out = target;
    return 0;
}

static int put_priority(hearth_node_t *n, bool mut, const hearth_node_t *prio,
                        hearth_node_t **out) {
    if (hearth__node_is_empty(n)) {
        *out = n; /* null carries no priority */
        return 0;
    }
    hearth_node_t *p =
        hearth__node_is_empty(prio) ? NULL : hearth_node_incref(prio);
    if (mut) {
        hearth_node_decref(n->priority);
        n->priority = p;
        forget_hash(n);
        *out = n;
        return 0;
    }
    hearth_node_t *c;
    if (n->type == HEARTH_TYPE_OBJECT) {
        c = obj_copy(n);
        if (c) {
            hearth_node_decref(c->priority);
            c->priority = p;
        } else {
            hearth_node_decref(p);
        }
    } else {
        c = hearth__node_leaf_with_priority(n, p);
    }
    if (!c)
        return HEARTH_ENOMEM;
    *out = c;
    return 0;
}

/* Updates n at p->seg[i..] to value. With `mut` the caller holds n alone
 * and n may be edited in place. *out == n: edited in place or unchanged;
 * otherwise *out is a new reference and n is untouched. */
static int update(hearth_node_t *n, bool mut, const hearth__path *p,
                  unsigned i, const hearth_node_t *value, hearth_node_t **out) {
    if (i == p->n) {
        if (p->priority)
            return put_priority(n, mut, value, out);
        *out = value == n ? n : hearth_node_incref(value);
        return 0;
    }
    const hearth__name *name = &p->seg[i];
    /* The child and whether its pages are held alone: one walk. */
    bool alone = false;
    const hearth__entry *e =
        n->type == HEARTH_TYPE_OBJECT
            ? hearth__bt_find_held(n->u.obj.tree, name, !mut, &alone)
            : NULL;
    hearth_node_t *child = e ? e->node : (hearth_node_t *)&empty_node;
    bool child_mut =
        mut && e && alone &&
        atomic_load_explicit(&child->refs, memory_order_acquire) == 1;
    bool had_priority = child->priority != NULL;
    unsigned old_depth = node_depth(child);
    hearth_node_t *nc;
    int rc = update(child, child_mut, p, i + 1, value, &nc);
    if (rc)
        return rc;
    if (nc == child) {
        if (child_mut)
            child_changed(n, had_priority, old_depth, child);
        *out = n;
        return 0;
    }
    rc = put_child(n, mut, name, e, nc, out);
    if (rc)
        hearth_node_decref(nc);
    return rc;
}

static int check_priority(const hearth_node_t *prio, hearth_error_t *err) {
    if (prio->type == HEARTH_TYPE_NULL || prio->type == HEARTH_TYPE_NUMBER ||
        prio->type == HEARTH_TYPE_STRING)
        return prio->priority
                   ? hearth__error(err, HEARTH_EPRIORITY, NULL,
                                   "a priority cannot have a priority")
                   : 0;
    return hearth__error(err, HEARTH_EPRIORITY, NULL,
                         "invalid priority: must be null, a number or a "
                         "string");
}

/* Applies an update computed by `update` to the caller's reference. */
static void adopt(hearth_node_t **node, hearth_node_t *result) {
    if (result != *node) {
        hearth_node_decref(*node);
        *node = result;
    }
}

int hearth__node_set_path(hearth_node_t **node, const hearth__path *p,
                          const hearth_node_t *value, hearth_error_t *err) {
    if (p->priority) {
        int rc = check_priority(value, err);
        if (rc)
            return rc;
    } else if (p->n + node_depth(value) > HEARTH_MAX_DEPTH) {
        char where[256];
        hearth__path_format(p, p->n, where, sizeof where);
        return hearth__error(err, HEARTH_EDEPTH, where,
                             "writing %d levels of data at %s would nest "
                             "deeper than %d levels",
                             (int)node_depth(value), where, HEARTH_MAX_DEPTH);
    }
    /* Hold value for the update: when it is *node or lies below it, the
     * extra reference keeps the nodes it shares with *node from being
     * edited in place, so the update copies them instead of making a
     * cycle (writing a node below itself). */
    hearth_node_incref(value);
    bool mut = atomic_load_explicit(&(*node)->refs, memory_order_acquire) == 1;
    hearth_node_t *result;
    int rc = update(*node, mut, p, 0, value, &result);
    hearth_node_decref(value);
    if (rc)
        return hearth__error_code(err, rc);
    adopt(node, result);
    return 0;
}

int hearth_node_set(hearth_node_t **node, const char *path,
                    const hearth_node_t *value, hearth_error_t *err) {
    hearth__path p;
    int rc = hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &p, err);
    if (rc)
        return rc;
    return hearth__node_set_path(node, &p, value, err);
}

int hearth__node_put_child(hearth_node_t **n, const hearth__name *name,
                           hearth_node_t *child) {
    bool mut = atomic_load_explicit(&(*n)->refs, memory_order_acquire) == 1;
    hearth_node_t *result;
    int rc = put_child(*n, mut, name, NULL, child, &result);
    if (rc)
        return rc;
    adopt(n, result);
    return 0;
}

int hearth_node_set_child_new(hearth_node_t **node, const char *key,
                              hearth_node_t *value, hearth_error_t *err) {
    if (!value)
        return hearth__error(err, HEARTH_EINVAL, NULL, "value is NULL");
    size_t len = strlen(key);
    int rc = hearth__key_check(key, len, NULL, err);
    if (!rc && 1 + node_depth(value) > HEARTH_MAX_DEPTH)
        rc = hearth__error(err, HEARTH_EDEPTH, NULL,
                           "child under \"%s\" would nest deeper than %d "
                           "levels",
                           key, HEARTH_MAX_DEPTH);
    if (!rc) {
        hearth__name name;
        hearth__name_init(&name, key, len);
        rc = hearth__node_put_child(node, &name, value);
        if (!rc)
            return 0;
        hearth__error_code(err, rc);
    }
    hearth_node_decref(value);
    return rc;
}

int hearth_node_with_priority(const hearth_node_t *node,
                              const hearth_node_t *priority,
                              hearth_node_t **out, hearth_error_t *err) {
    int rc = check_priority(priority, err);
    if (rc)
        return rc;
    hearth_node_t *result;
    rc = put_priority((hearth_node_t *)node, false, priority, &result);
    if (rc)
        return hearth__error_code(err, rc);
    *out = result == node ? hearth_node_incref(node) : result;
    return 0;
}

/* ---- server values ---- */

static int resolve_leaf(const hearth_node_t *sv, const hearth_node_t *existing,
                        int64_t now_ms, hearth_node_t **out) {
    double v;
    if (sv->sv == HEARTH__SV_TIMESTAMP)
        v = (double)now_ms;
    else if (existing->type == HEARTH_TYPE_NUMBER)
        v = existing->u.number + sv->u.number;
    else
        v = sv->u.number;
    hearth_node_t *n = hearth_node_number(isfinite(v) ? v : sv->u.number);
    if (!n)
        return HEARTH_ENOMEM;
    if (sv->priority) {
        hearth_node_t *p = hearth__node_leaf_with_priority(
            n, hearth_node_incref(sv->priority));
        hearth_node_decref(n);
        if (!p)
            return HEARTH_ENOMEM;
        n = p;
    }
    *out = n;
    return 0;
}

/* Resolves the children of an object holding placeholders. */
static int resolve_children(const hearth_node_t *value,
                            const hearth_node_t *existing, int64_t now_ms,
                            hearth_node_t **out) {
    hearth_node_t *result = hearth_node_incref(value);
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, value->u.obj.tree, 0);
    for (const hearth__entry *e; (e = hearth__bt_iter_next(&it));) {
        if (!hearth__node_has_sv(e->node))
            continue;
        hearth__name name = hearth__key_name(e->key);
        hearth_node_t *child;
        int rc = hearth__node_resolve_sv(
            e->node, hearth__node_child(existing, &name), now_ms, &child);
        if (!rc) {
            rc = hearth__node_put_child(&result, &name, child);
            if (rc)
                hearth_node_decref(child);
        }
        if (rc) {
            hearth_node_decref(result);
            return rc;
        }
    }
    *out = result;
    return 0;
}

/* Replaces *n's priority placeholder sv, resolved against the priority the
 * node had (an increment adds to a number priority). */
static int resolve_priority(hearth_node_t **n, const hearth_node_t *sv,
                            const hearth_node_t *existing, int64_t now_ms) {
    hearth_node_t *p;
    int rc = resolve_leaf(sv, hearth__prio(existing), now_ms, &p);
    if (rc)
        return rc;
    hearth__path self = {.n = 0, .priority = true};
    rc = hearth__node_set_path(n, &self, p, NULL);
    hearth_node_decref(p);
    return rc;
}

int hearth__node_resolve_sv(const hearth_node_t *value,
                            const hearth_node_t *existing, int64_t now_ms,
                            hearth_node_t **out) {
    if (!hearth__node_has_sv(value)) {
        *out = hearth_node_incref(value);
        return 0;
    }
    hearth_node_t *result = NULL;
    int rc = 0;
    if (value->type == HEARTH_TYPE_SERVER_VALUE)
        rc = resolve_leaf(value, existing, now_ms, &result);
    else if (value->type == HEARTH_TYPE_OBJECT)
        rc = resolve_children(value, existing, now_ms, &result);
    else
        result = hearth_node_incref(value); /* only its priority is one */
    const hearth_node_t *prio = value->priority;
    if (!rc && prio && prio->type == HEARTH_TYPE_SERVER_VALUE)
        rc = resolve_priority(&result, prio, existing, now_ms);
    if (rc) {
        hearth_node_decref(result);
        return rc;
    }
    /* Every placeholder is gone now. */
    if (result->type == HEARTH_TYPE_OBJECT &&
        atomic_load(&result->refs) == 1)
        result->flags &= (uint8_t)~HEARTH__HAS_SERVER_VALUES;
    *out = result;
    return 0;
}
