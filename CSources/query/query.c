/* query.c - building, validating and evaluating queries. The validation
 * messages follow the wording of the official clients, since users search
 * for them. */
#include "query/query.h"

#include "tree/json.h"

#include <stdlib.h>
#include <string.h>

/* ---- lifecycle ---- */

int hearth_query_create(hearth_query_t **out) {
    hearth_query_t *q = hearth__calloc(1, sizeof *q);
    if (!q)
        return HEARTH_ENOMEM;
    *out = q;
    return 0;
}

static void bound_clear(hearth__bound *b) {
    hearth_node_decref(b->value);
    hearth__key_decref(b->name);
    memset(b, 0, sizeof *b);
}

void hearth_query_free(hearth_query_t *q) {
    if (!q)
        return;
    bound_clear(&q->start);
    bound_clear(&q->end);
    hearth__free(q->child_path);
    hearth__free(q);
}

static void bound_copy(hearth__bound *to, const hearth__bound *from) {
    *to = *from;
    hearth_node_incref(to->value);
    if (to->name)
        hearth__key_incref(to->name);
}

hearth_query_t *hearth_query_copy(const hearth_query_t *q) {
    hearth_query_t *c = hearth__malloc(sizeof *c);
    if (!c)
        return NULL;
    *c = *q;
    c->child_path = NULL;
    if (q->child_path) {
        c->child_path = hearth__strndup(q->child_path, strlen(q->child_path));
        if (!c->child_path ||
            hearth__path_parse(c->child_path, 0, &c->child, NULL)) {
            hearth__free(c->child_path);
            hearth__free(c);
            return NULL;
        }
    }
    bound_copy(&c->start, &q->start);
    bound_copy(&c->end, &q->end);
    return c;
}

/* ---- validation ---- */

static int qerror(hearth_error_t *err, const char *msg) {
    return hearth__error(err, HEARTH_EQUERY, NULL, "%s", msg);
}

/* Checks the bounds against the index (called whenever either changes). */
static int check_endpoints(const hearth_query_t *q, hearth_error_t *err) {
    const hearth__bound *bounds[2] = {&q->start, &q->end};
    for (int i = 0; i < 2; i++) {
        const hearth__bound *b = bounds[i];
        if (!b->set)
            continue;
        hearth_type t = hearth_node_type(b->value);
        if (q->index == HEARTH__INDEX_KEY) {
            if (b->name_given && b->name)
                return qerror(err,
                              "When ordering by key, you may only pass one "
                              "argument to startAt(), endAt(), or "
                              "equalTo().");
            if (t != HEARTH_TYPE_STRING)
                return qerror(err,
                              "When ordering by key, the argument passed to "
                              "startAt(), startAfter(), endAt(), endBefore(), "
                              "or equalTo() must be a string.");
        } else if (q->index == HEARTH__INDEX_PRIORITY) {
            if (t != HEARTH_TYPE_NULL && t != HEARTH_TYPE_NUMBER &&
                t != HEARTH_TYPE_STRING)
                return qerror(err,
                              "When ordering by priority, the first argument "
                              "passed to startAt(), startAfter() endAt(), "
                              "endBefore(), or equalTo() must be a valid "
                              "priority value (null, a number, or a string).");
        } else if (t == HEARTH_TYPE_OBJECT || t == HEARTH_TYPE_SERVER_VALUE) {
            return qerror(err, "Query bounds must be null, a boolean, a "
                               "number or a string.");
        }
    }
    return 0;
}

static int set_order(hearth_query_t *q, uint8_t index, hearth_error_t *err) {
    if (q->order_set)
        return qerror(err, "You can't combine multiple orderBy calls.");
    uint8_t old = q->index;
    q->index = index;
    int rc = check_endpoints(q, err);
    if (rc) {
        q->index = old;
        return rc;
    }
    q->order_set = true;
    return 0;
}

int hearth_query_order_by_key(hearth_query_t *q, hearth_error_t *err) {
    return set_order(q, HEARTH__INDEX_KEY, err);
}

int hearth_query_order_by_priority(hearth_query_t *q, hearth_error_t *err) {
    return set_order(q, HEARTH__INDEX_PRIORITY, err);
}

int hearth_query_order_by_value(hearth_query_t *q, hearth_error_t *err) {
    return set_order(q, HEARTH__INDEX_VALUE, err);
}

int hearth_query_order_by_child(hearth_query_t *q, const char *path,
                                hearth_error_t *err) {
    if (!path)
        return hearth__error(err, HEARTH_EINVAL, NULL, "path is NULL");
    static const char *const reserved[][2] = {
        {"$key", "orderByKey"},
        {"$priority", "orderByPriority"},
        {"$value", "orderByValue"},
    };
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(reserved); i++)
        if (strcmp(path, reserved[i][0]) == 0)
            return hearth__error(err, HEARTH_EQUERY, NULL,
                                 "orderByChild: \"%s\" is invalid. Use "
                                 "%s() instead.",
                                 path, reserved[i][1]);
    char *copy = hearth__strndup(path, strlen(path));
    if (!copy)
        return HEARTH_ENOMEM;
    hearth__path parsed;
    int rc = hearth__path_parse(copy, 0, &parsed, err);
    if (!rc && parsed.n == 0)
        rc = qerror(err, "orderByChild: the path must not be empty.");
    if (!rc)
        rc = set_order(q, HEARTH__INDEX_CHILD, err);
    if (rc) {
        hearth__free(copy);
        return rc;
    }
    q->child_path = copy;
    q->child = parsed;
    return 0;
}

/* Sets a bound. `name` NULL with sentinel gives the default tie-break. */
static int set_bound(hearth_query_t *q, hearth__bound *b, const char *which,
                     const hearth_node_t *value, const char *name,
                     int sentinel, bool implied_name, bool inclusive,
                     hearth_error_t *err) {
    if (!value)
        return hearth__error(err, HEARTH_EINVAL, NULL, "value is NULL");
    if (b->set)
        return hearth__error(err, HEARTH_EQUERY, NULL,
                             "%s point was already set (by another call to "
                             "%s, or equalTo).",
                             which,
                             b == &q->start ? "startAt, startAfter"
                                            : "endAt, endBefore");
    hearth__key *key = NULL;
    if (name) {
        int rc = hearth__bound_key_check(name, strlen(name), err);
        if (rc)
            return rc;
        key = hearth__key_from_cstr(name);
        if (!key)
            return HEARTH_ENOMEM;
    }
    b->set = true;
    b->inclusive = inclusive;
    b->value = hearth_node_incref(value);
    b->name = key;
    b->sentinel = (int8_t)sentinel;
    b->name_given = name != NULL || implied_name;
    int rc = check_endpoints(q, err);
    if (rc)
        bound_clear(b);
    return rc;
}

int hearth_query_start_at(hearth_query_t *q, const hearth_node_t *value,
                          const char *key, hearth_error_t *err) {
    return set_bound(q, &q->start, "Starting", value, key, HEARTH__NAME_MIN,
                     false, true, err);
}

int hearth_query_start_after(hearth_query_t *q, const hearth_node_t *value,
                             const char *key, hearth_error_t *err) {
    /* Without a key, everything equal to value is excluded: start just
     * after (value, MAX). Ordered by key the value is the key itself. */
    bool implied = key == NULL && q->index != HEARTH__INDEX_KEY;
    return set_bound(q, &q->start, "Starting", value, key,
                     implied ? HEARTH__NAME_MAX : HEARTH__NAME_MIN, implied,
                     false, err);
}

int hearth_query_end_at(hearth_query_t *q, const hearth_node_t *value,
                        const char *key, hearth_error_t *err) {
    return set_bound(q, &q->end, "Ending", value, key, HEARTH__NAME_MAX, false,
                     true, err);
}

int hearth_query_end_before(hearth_query_t *q, const hearth_node_t *value,
                            const char *key, hearth_error_t *err) {
    bool implied = key == NULL && q->index != HEARTH__INDEX_KEY;
    return set_bound(q, &q->end, "Ending", value, key,
                     implied ? HEARTH__NAME_MIN : HEARTH__NAME_MAX, implied,
                     false, err);
}

int hearth_query_equal_to(hearth_query_t *q, const hearth_node_t *value,
                          const char *key, hearth_error_t *err) {
    if (q->start.set)
        return qerror(err, "startAt(), startAfter(), or equalTo() previously "
                           "called. equalTo() cannot be combined with them.");
    if (q->end.set)
        return qerror(err, "endAt(), endBefore(), or equalTo() previously "
                           "called. equalTo() cannot be combined with them.");
    int rc = hearth_query_start_at(q, value, key, err);
    if (!rc) {
        rc = hearth_query_end_at(q, value, key, err);
        if (rc)
            bound_clear(&q->start);
    }
    return rc;
}

static int set_limit(hearth_query_t *q, uint32_t n, char from,
                     hearth_error_t *err) {
    if (n == 0)
        return qerror(err, from == 'l' ? "limitToFirst: First argument must "
                                         "be a positive integer."
                                       : "limitToLast: First argument must be "
                                         "a positive integer.");
    if (q->limit)
        return qerror(err, "Limit was already set (by another call to "
                           "limitToFirst or limitToLast).");
    q->limit = n;
    q->limit_from = from;
    return 0;
}

int hearth_query_limit_to_first(hearth_query_t *q, uint32_t n,
                                hearth_error_t *err) {
    return set_limit(q, n, 'l', err);
}

int hearth_query_limit_to_last(hearth_query_t *q, uint32_t n,
                               hearth_error_t *err) {
    return set_limit(q, n, 'r', err);
}

/* ---- identity ---- */

bool hearth__query_loads_all(const hearth_query_t *q) {
    return !q || (!q->start.set && !q->end.set && !q->limit);
}

bool hearth__query_is_default(const hearth_query_t *q) {
    return !q || (hearth__query_loads_all(q) &&
                  q->index == HEARTH__INDEX_PRIORITY);
}

static void write_bound_name(hearth__buf *b, const hearth__bound *bd) {
    if (bd->name)
        hearth__json_write_string(b, bd->name->s, bd->name->len);
    else
        hearth__buf_adds(b, bd->sentinel == HEARTH__NAME_MAX
                                ? "\"[MAX_NAME]\""
                                : "\"[MIN_NAME]\"");
}

/* The wire query object with its keys in sorted order, so equal queries
 * give equal text. */
char *hearth_query_to_json(const hearth_query_t *q) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_addc(&b, '{');
    const char *sep = "";
    if (q->end.set) {
        hearth__buf_printf(&b, "\"ein\":%s", q->end.inclusive ? "true" : "false");
        if (q->end.name_given) {
            hearth__buf_adds(&b, ",\"en\":");
            write_bound_name(&b, &q->end);
        }
        hearth__buf_adds(&b, ",\"ep\":");
        hearth__node_write_json(&b, q->end.value, 0);
        sep = ",";
    }
    if (q->index != HEARTH__INDEX_PRIORITY) {
        hearth__buf_printf(&b, "%s\"i\":", sep);
        if (q->index == HEARTH__INDEX_CHILD)
            hearth__json_write_string(&b, q->child_path, strlen(q->child_path));
        else
            hearth__buf_adds(&b, q->index == HEARTH__INDEX_KEY ? "\".key\""
                                                               : "\".value\"");
        sep = ",";
    }
    if (q->limit) {
        hearth__buf_printf(&b, "%s\"l\":%u", sep, q->limit);
        sep = ",";
    }
    if (q->start.set) {
        hearth__buf_printf(&b, "%s\"sin\":%s", sep,
                           q->start.inclusive ? "true" : "false");
        if (q->start.name_given) {
            hearth__buf_adds(&b, ",\"sn\":");
            write_bound_name(&b, &q->start);
        }
        hearth__buf_adds(&b, ",\"sp\":");
        hearth__node_write_json(&b, q->start.value, 0);
        sep = ",";
    }
    if (q->limit)
        hearth__buf_printf(&b, "%s\"vf\":\"%c\"", sep, q->limit_from);
    hearth__buf_addc(&b, '}');
    return hearth__buf_detach(&b, NULL);
}

char *hearth__query_identity(const hearth_query_t *q) {
    if (hearth__query_is_default(q))
        return hearth__strndup("default", 7);
    return hearth_query_to_json(q);
}

/* ---- evaluation ---- */

const hearth_node_t *hearth__query_index_value(const hearth_query_t *q,
                                               const hearth_node_t *child) {
    switch (q ? q->index : HEARTH__INDEX_PRIORITY) {
    case HEARTH__INDEX_KEY:
        return NULL;
    case HEARTH__INDEX_VALUE:
        return child;
    case HEARTH__INDEX_CHILD:
        for (unsigned i = 0; i < q->child.n; i++)
            child = hearth__node_child(child, &q->child.seg[i]);
        return child;
    default:
        return hearth__prio(child);
    }
}

bool hearth__query_index_changed(const hearth_query_t *q,
                                 const hearth_node_t *before,
                                 const hearth_node_t *after) {
    if (q && q->index == HEARTH__INDEX_KEY)
        return false;
    return !hearth_node_equal(hearth__query_index_value(q, before),
                              hearth__query_index_value(q, after));
}

/* Orders (name, index value) posts. */
static int compare_posts(const hearth_query_t *q, const hearth__name *an,
                         const hearth_node_t *aiv, const hearth__name *bn,
                         const hearth_node_t *biv) {
    if (!q || q->index != HEARTH__INDEX_KEY) {
        int c = hearth__node_value_compare(aiv, biv);
        if (c)
            return c;
    }
    return hearth__name_compare(an, bn);
}

int hearth__query_compare(const hearth_query_t *q, const hearth__item *a,
                          const hearth__item *b) {
    hearth__name an = hearth__key_name(a->key), bn = hearth__key_name(b->key);
    return compare_posts(q, &an, a->iv, &bn, b->iv);
}

/* The post of a bound: for order by key the value is the key. */
static hearth__name bound_name(const hearth_query_t *q, const hearth__bound *b) {
    hearth__name n;
    if (q->index == HEARTH__INDEX_KEY) {
        size_t len;
        const char *s = hearth_node_string_value(b->value, &len);
        hearth__name_init(&n, s, len);
    } else if (b->name) {
        n = hearth__key_name(b->name);
    } else {
        n = hearth__name_sentinel(b->sentinel);
    }
    return n;
}

static bool in_range(const hearth_query_t *q, const hearth__item *it) {
    hearth__name name = hearth__key_name(it->key);
    if (q->start.set) {
        hearth__name sn = bound_name(q, &q->start);
        int c = compare_posts(q, &sn, q->start.value, &name, it->iv);
        if (q->start.inclusive ? c > 0 : c >= 0)
            return false;
    }
    if (q->end.set) {
        hearth__name en = bound_name(q, &q->end);
        int c = compare_posts(q, &name, it->iv, &en, q->end.value);
        if (q->end.inclusive ? c > 0 : c >= 0)
            return false;
    }
    return true;
}

bool hearth__query_in_range(const hearth_query_t *q, const hearth__item *it) {
    return !q || in_range(q, it);
}

hearth_query_t *hearth__query_order_only(const hearth_query_t *q) {
    if (!q)
        return NULL;
    hearth_query_t *o = hearth_query_copy(q);
    if (!o)
        return NULL;
    bound_clear(&o->start);
    bound_clear(&o->end);
    o->limit = 0;
    return o;
}

/* A stable merge sort by query order (qsort has no portable context). */
static void merge_sort(const hearth_query_t *q, hearth__item *a,
                       hearth__item *tmp, size_t n) {
    if (n < 2)
        return;
    size_t mid = n / 2;
    merge_sort(q, a, tmp, mid);
    merge_sort(q, a + mid, tmp, n - mid);
    if (hearth__query_compare(q, &a[mid - 1], &a[mid]) <= 0)
        return;
    size_t i = 0, j = mid, k = 0;
    while (i < mid && j < n)
        tmp[k++] = hearth__query_compare(q, &a[j], &a[i]) < 0 ? a[j++] : a[i++];
    while (i < mid)
        tmp[k++] = a[i++];
    while (j < n)
        tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}

/* Order by key: bounds and window straight from the tree's ranks. */
static int select_by_key(const hearth_query_t *q, const hearth__bt *tree,
                         hearth__item **items, size_t *n) {
    size_t from = 0, to = hearth__bt_count(tree);
    bool found;
    if (q->start.set) {
        hearth__name sn = bound_name(q, &q->start);
        from = hearth__bt_rank(tree, &sn, &found);
        if (found && !q->start.inclusive)
            from++;
    }
    if (q->end.set) {
        hearth__name en = bound_name(q, &q->end);
        size_t r = hearth__bt_rank(tree, &en, &found);
        to = found && q->end.inclusive ? r + 1 : r;
    }
    if (to < from)
        to = from;
    if (q->limit && to - from > q->limit) {
        if (q->limit_from == 'l')
            to = from + q->limit;
        else
            from = to - q->limit;
    }
    *n = to - from;
    *items = NULL;
    if (*n == 0)
        return 0;
    hearth__item *out = hearth__malloc(*n * sizeof *out);
    if (!out)
        return HEARTH_ENOMEM;
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, tree, from);
    for (size_t i = 0; i < *n; i++) {
        const hearth__entry *e = hearth__bt_iter_next(&it);
        out[i] = (hearth__item){e->key, e->node, NULL};
    }
    *items = out;
    return 0;
}

int hearth__query_select(const hearth_query_t *q, const hearth_node_t *node,
                         hearth__item **items, size_t *n) {
    *items = NULL;
    *n = 0;
    if (node->type != HEARTH_TYPE_OBJECT)
        return 0;
    const hearth__bt *tree = node->u.obj.tree;
    if (q && q->index == HEARTH__INDEX_KEY)
        return select_by_key(q, tree, items, n);
    size_t count = hearth__bt_count(tree);
    hearth__item *out = hearth__malloc(count * sizeof *out);
    if (!out)
        return HEARTH_ENOMEM;
    size_t k = 0;
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, tree, 0);
    for (const hearth__entry *e; (e = hearth__bt_iter_next(&it));) {
        hearth__item item = {e->key, e->node,
                             hearth__query_index_value(q, e->node)};
        if (!q || in_range(q, &item))
            out[k++] = item;
    }
    /* Key order is already priority order when no child has a priority. */
    bool sorted = (!q || q->index == HEARTH__INDEX_PRIORITY) &&
                  node->u.obj.prio_children == 0;
    if (!sorted && k > 1) {
        hearth__item *tmp = hearth__malloc(k * sizeof *tmp);
        if (!tmp) {
            hearth__free(out);
            return HEARTH_ENOMEM;
        }
        merge_sort(q, out, tmp, k);
        hearth__free(tmp);
    }
    if (q && q->limit && k > q->limit) {
        if (q->limit_from == 'r')
            memmove(out, out + (k - q->limit), q->limit * sizeof *out);
        k = q->limit;
    }
    if (k == 0) {
        hearth__free(out);
        out = NULL;
    }
    *items = out;
    *n = k;
    return 0;
}

int hearth__query_view_node(const hearth_query_t *q, const hearth_node_t *node,
                            hearth_node_t **out) {
    if (hearth__query_loads_all(q)) {
        *out = hearth_node_incref(node);
        return 0;
    }
    hearth__item *items;
    size_t n;
    int rc = hearth__query_select(q, node, &items, &n);
    if (rc)
        return rc;
    hearth__entry *entries = n ? hearth__malloc(n * sizeof *entries) : NULL;
    if (n && !entries) {
        hearth__free(items);
        return HEARTH_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        entries[i] = (hearth__entry){(hearth__key *)items[i].key,
                                     (hearth_node_t *)items[i].node, 0};
    hearth__free(items);
    /* Taken over by the node (which puts them back in key order). */
    for (size_t i = 0; i < n; i++) {
        hearth__key_incref(entries[i].key);
        hearth_node_incref(entries[i].node);
    }
    return hearth__node_from_entries(entries, n, out);
}

int hearth_query_apply(const hearth_query_t *q, const hearth_node_t *node,
                       hearth_node_t **out) {
    if (!node || !out)
        return HEARTH_EINVAL;
    return hearth__query_view_node(q, node, out);
}

int hearth_query_foreach(const hearth_query_t *q, const hearth_node_t *node,
                         hearth_child_cb cb, void *ctx) {
    hearth__item *items;
    size_t n;
    int rc = hearth__query_select(q, node, &items, &n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n && !rc; i++)
        rc = cb(items[i].key->s, items[i].node, ctx);
    hearth__free(items);
    return rc;
}
