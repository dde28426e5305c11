/* update.c - multi-path updates: parts parsed from JSON (on any thread),
 * checked so that no part covers another, and ordered as the SDKs apply
 * them. */
#include "db/check.h"
#include "tree/json.h"

#include <stdlib.h>
#include <string.h>

/* Whether writing at a also writes at b: a is b, or an ancestor of b (a
 * node's ".priority" lies below the node; a priority covers only itself,
 * so "x/.priority" and "x/y" may be written together). */
static bool covers(const hearth__path *a, const hearth__path *b) {
    if (!hearth__path_is_prefix(a, b))
        return false;
    if (a->priority)
        return b->priority && a->n == b->n;
    return true;
}

/* A total order of paths in which a path comes right before the paths it
 * covers: segments compared as bytes, a prefix first, and a node before
 * its own ".priority". */
static int path_order(const void *pa, const void *pb) {
    const hearth__path *a = &(*(const hearth__db_write_part *const *)pa)->path;
    const hearth__path *b = &(*(const hearth__db_write_part *const *)pb)->path;
    for (unsigned i = 0; i < a->n && i < b->n; i++) {
        size_t la = a->seg[i].len, lb = b->seg[i].len;
        int c = memcmp(a->seg[i].s, b->seg[i].s, la < lb ? la : lb);
        if (c || la != lb)
            return c ? c : la < lb ? -1 : 1;
    }
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    return (int)a->priority - (int)b->priority;
}

/* No part may cover another. In path order everything between a path and
 * one it covers is covered by it too, so neighbours tell: O(n log n),
 * where comparing every pair would let one large update hold the loop. */
static int check_overlaps(const hearth__db_write_part *parts, size_t n,
                          hearth_error_t *err) {
    if (n < 2)
        return 0;
    const hearth__db_write_part **sorted = hearth__malloc(n * sizeof *sorted);
    if (!sorted)
        return hearth__error_code(err, HEARTH_ENOMEM);
    for (size_t i = 0; i < n; i++)
        sorted[i] = &parts[i];
    qsort(sorted, n, sizeof *sorted, path_order);
    int rc = 0;
    for (size_t i = 1; !rc && i < n; i++) {
        const hearth__db_write_part *a = sorted[i - 1], *b = sorted[i];
        if (covers(&a->path, &b->path))
            rc = hearth__error(err, HEARTH_EUPDATE, b->text,
                               "update paths overlap: \"%s\" contains \"%s\"",
                               a->text, b->text);
    }
    hearth__free(sorted);
    return rc;
}

/* Moves the parts that write a priority after the others, keeping each
 * group's order: "x/.priority" beside "x/y" of a new x gives x its
 * priority (a priority of nothing is nothing), as the SDKs apply merges.
 * The log keeps this order, so replay gives the same data. */
static void priorities_last(hearth__db_write_part *parts, size_t n) {
    for (size_t done = 0; done < n; done++) {
        size_t i = done;
        while (i < n && parts[i].path.priority)
            i++;
        if (i == n)
            return; /* only priorities left */
        hearth__db_write_part plain = parts[i];
        memmove(&parts[done + 1], &parts[done], (i - done) * sizeof *parts);
        parts[done] = plain;
    }
}

int hearth__db_update_op(const char *path, size_t count,
                         const char *const *paths,
                         const hearth_node_t *const *values,
                         hearth_completion_cb cb, void *ctx,
                         hearth_free_cb ctx_free, hearth__db_op **out,
                         hearth_error_t *err) {
    if (!path || (count && (!paths || !values)))
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    hearth__path base;
    int rc = hearth__path_parse(path, HEARTH__PATH_ALLOW_INFO, &base, err);
    if (rc)
        return rc;
    if (base.info)
        return hearth__error(err, HEARTH_EREADONLY, path,
                             "cannot write to \"%s\": /.info is read-only",
                             path);
    hearth__db_op *o;
    if (hearth__db_write_op_create(count, cb, ctx, ctx_free, &o))
        return hearth__error_code(err, HEARTH_ENOMEM);
    for (size_t i = 0; !rc && i < count; i++) {
        hearth__db_write_part *w = &o->parts[i];
        if (!paths[i] || !values[i]) {
            rc = hearth__error(err, HEARTH_EINVAL, NULL,
                               "update entry %zu is NULL", i);
            break;
        }
        char *full = hearth__db_join(path, paths[i]);
        if (!full) {
            rc = hearth__error_code(err, HEARTH_ENOMEM);
            break;
        }
        rc = hearth__db_parse_write_path(full, HEARTH__PATH_ALLOW_PRIORITY,
                                         &w->text, &w->path, err);
        hearth__free(full);
        if (!rc)
            rc = hearth__db_check_value(&w->path, values[i], w->text, err);
        if (!rc)
            w->value = hearth_node_incref(values[i]);
    }
    if (!rc)
        rc = check_overlaps(o->parts, count, err);
    if (rc)
        return hearth__db_drop_op(o, rc);
    priorities_last(o->parts, count);
    *out = o;
    return 0;
}

int hearth__update_parts_parse(const char *path, const char *json, size_t len,
                               hearth__update_parts *out,
                               hearth_error_t *err) {
    json_t *obj;
    int rc = hearth__json_load(json, len, &obj, err);
    if (rc) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    rc = hearth__update_parts_from_json(path, obj, out, err);
    json_decref(obj);
    return rc;
}

int hearth__update_parts_from_json(const char *path, json_t *obj,
                                   hearth__update_parts *out,
                                   hearth_error_t *err) {
    memset(out, 0, sizeof *out);
    out->obj = json_incref(obj);
    int rc;
    if (!json_is_object(out->obj))
        return hearth__error(err, HEARTH_EVALUE, path,
                             "an update must be a JSON object of paths to "
                             "values");
    size_t n = json_object_size(out->obj);
    out->paths = hearth__calloc(n ? n : 1, sizeof *out->paths);
    out->values = hearth__calloc(n ? n : 1, sizeof *out->values);
    if (!out->paths || !out->values)
        return hearth__error_code(err, HEARTH_ENOMEM);
    const char *key;
    json_t *value;
    json_object_foreach(out->obj, key, value) {
        char *full = hearth__db_join(path ? path : "", key);
        if (!full)
            return hearth__error_code(err, HEARTH_ENOMEM);
        /* Depth from the path when it parses (the update refuses it later
         * with a message naming it otherwise). */
        hearth__path p;
        unsigned depth = hearth__path_parse(full, HEARTH__PATH_ALLOW_PRIORITY |
                                            HEARTH__PATH_ALLOW_INFO,
                                            &p, NULL)
                             ? 0
                             : p.n;
        rc = hearth__node_from_jansson_at(value, HEARTH_JSON_ALLOW_SERVER_VALUES,
                                          full, depth, &out->values[out->n],
                                          err);
        hearth__free(full);
        if (rc)
            return rc;
        out->paths[out->n++] = key;
    }
    return 0;
}

void hearth__update_parts_free(hearth__update_parts *u) {
    for (size_t i = 0; i < u->n; i++)
        hearth_node_decref(u->values[i]);
    hearth__free(u->values);
    hearth__free(u->paths);
    json_decref(u->obj);
    memset(u, 0, sizeof *u);
}