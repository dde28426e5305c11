/* rest_params.c - a REST request's target and parameters: percent-decoding,
 * the parameter list, and the query the parameters describe. */
#include "server/rest_internal.h"

#include "query/query.h"

#include <stdlib.h>
#include <string.h>

/* ---- decoding ---- */

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..len) once ('+' is a space when plus_space). NULL on
 * a malformed escape or an embedded NUL. */
char *hearth__rest_url_decode(const char *s, size_t len, bool plus_space) {
    char *out = hearth__malloc(len + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '%') {
            int hi = i + 2 < len ? hexval(s[i + 1]) : -1;
            int lo = i + 2 < len ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                hearth__free(out);
                return NULL;
            }
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else if (s[i] == '+' && plus_space) {
            out[o++] = ' ';
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return out;
}

const char *hearth__rest_param_get(const rest *r, const char *name) {
    for (size_t i = 0; i < r->nparams; i++)
        if (strcmp(r->params[i].name, name) == 0)
            return r->params[i].value;
    return NULL;
}

int hearth__rest_parse_params(rest *r, const char *q) {
    while (q && *q) {
        const char *end = strchr(q, '&');
        size_t len = end ? (size_t)(end - q) : strlen(q);
        const char *eq = memchr(q, '=', len);
        size_t nlen = eq ? (size_t)(eq - q) : len;
        if (nlen) {
            param *p = hearth__realloc(r->params, (r->nparams + 1) * sizeof *p);
            if (!p)
                return HEARTH_ENOMEM;
            r->params = p;
            char *name = hearth__rest_url_decode(q, nlen, true);
            char *value = eq ? hearth__rest_url_decode(eq + 1, len - nlen - 1, true)
                             : hearth__strndup("", 0);
            if (!name || !value) {
                hearth__free(name);
                hearth__free(value);
                return HEARTH_EINVAL;
            }
            r->params[r->nparams++] = (param){name, value};
        }
        q = end ? end + 1 : NULL;
    }
    return 0;
}

void hearth__rest_free(rest *r) {
    for (size_t i = 0; i < r->nparams; i++) {
        hearth__free(r->params[i].name);
        hearth__free(r->params[i].value);
    }
    hearth__free(r->params);
    hearth__free(r->path);
    hearth__principal_clear(&r->who);
}


/* ---- queries ---- */

static const char *const QUERY_PARAMS[] = {"orderBy", "startAt", "endAt",
                                           "equalTo", "limitToFirst",
                                           "limitToLast"};

static bool has_query(const rest *r) {
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(QUERY_PARAMS); i++)
        if (hearth__rest_param_get(r, QUERY_PARAMS[i]))
            return true;
    return false;
}

static int bound(hearth_query_t *q, const char *text,
                 int (*set)(hearth_query_t *, const hearth_node_t *,
                            const char *, hearth_error_t *),
                 const char *name, hearth_error_t *err) {
    hearth_node_t *v;
    if (hearth_node_from_json(text, (size_t)-1, 0, &v, NULL))
        return hearth__error(err, HEARTH_EQUERY, NULL,
                             "%s must be a valid JSON value", name);
    int rc = set(q, v, NULL, err);
    hearth_node_decref(v);
    return rc;
}

static int parse_limit(const char *text, uint32_t *out) {
    char *end;
    long long v = strtoll(text, &end, 10);
    if (!*text || *end || v <= 0 || v > UINT32_MAX)
        return HEARTH_EQUERY;
    *out = (uint32_t)v;
    return 0;
}

/* Builds the query of the request's parameters into *out (NULL: none). */
int hearth__rest_build_query(const rest *r, hearth_query_t **out,
                             hearth_error_t *err) {
    *out = NULL;
    if (!has_query(r))
        return 0;
    const char *order = hearth__rest_param_get(r, "orderBy");
    if (!order)
        return hearth__error(err, HEARTH_EQUERY, NULL,
                             "orderBy must be defined when other query "
                             "parameters are defined");
    json_t *o = json_loads(order, JSON_DECODE_ANY, NULL);
    if (!json_is_string(o)) {
        json_decref(o);
        return hearth__error(err, HEARTH_EQUERY, NULL,
                             "orderBy must be a valid JSON encoded path");
    }
    hearth_query_t *q;
    int rc = hearth_query_create(&q);
    const char *by = json_string_value(o);
    if (!rc) {
        if (strcmp(by, "$key") == 0)
            rc = hearth_query_order_by_key(q, err);
        else if (strcmp(by, "$value") == 0)
            rc = hearth_query_order_by_value(q, err);
        else if (strcmp(by, "$priority") == 0)
            rc = hearth_query_order_by_priority(q, err);
        else
            rc = hearth_query_order_by_child(q, by, err);
    }
    if (!rc && q->index == HEARTH__INDEX_CHILD) {
        /* Over REST a child order needs an index, as on the service. */
        hearth__path p;
        const char *keys[HEARTH_MAX_DEPTH];
        char *copy = hearth__strndup(r->path, strlen(r->path));
        rc = copy ? hearth__path_parse(copy, 0, &p, NULL) : HEARTH_ENOMEM;
        char *owned[HEARTH_MAX_DEPTH] = {0};
        for (unsigned i = 0; !rc && i < p.n; i++) {
            owned[i] = hearth__strndup(p.seg[i].s, p.seg[i].len);
            keys[i] = owned[i] ? owned[i] : "";
        }
        if (!rc && !hearth__rules_indexed(r->ns->rules, keys, p.n, by))
            rc = hearth__error(err, HEARTH_EQUERY, NULL,
                               "Index not defined, add \".indexOn\": \"%s\", "
                               "for path \"%s\", to the rules",
                               by, r->path);
        for (unsigned i = 0; copy && i < p.n; i++)
            hearth__free(owned[i]);
        hearth__free(copy);
    }
    const char *v;
    if (!rc && (v = hearth__rest_param_get(r, "startAt")))
        rc = bound(q, v, hearth_query_start_at, "startAt", err);
    if (!rc && (v = hearth__rest_param_get(r, "endAt")))
        rc = bound(q, v, hearth_query_end_at, "endAt", err);
    if (!rc && (v = hearth__rest_param_get(r, "equalTo")))
        rc = bound(q, v, hearth_query_equal_to, "equalTo", err);
    uint32_t n;
    if (!rc && (v = hearth__rest_param_get(r, "limitToFirst")))
        rc = parse_limit(v, &n)
                 ? hearth__error(err, HEARTH_EQUERY, NULL,
                                 "limitToFirst must be a positive integer")
                 : hearth_query_limit_to_first(q, n, err);
    if (!rc && (v = hearth__rest_param_get(r, "limitToLast")))
        rc = parse_limit(v, &n)
                 ? hearth__error(err, HEARTH_EQUERY, NULL,
                                 "limitToLast must be a positive integer")
                 : hearth_query_limit_to_last(q, n, err);
    json_decref(o);
    if (rc) {
        hearth_query_free(q);
        return rc;
    }
    *out = q;
    return 0;
}
