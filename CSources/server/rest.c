/* rest.c - the REST API: addressing, parameters, the five methods, queries,
 * conditional requests, the rules endpoint; errors worded as the service
 * words them. Runs on the server's loop, where database calls apply at
 * once; durable writes are answered after their group commit. */
#include "server/access.h"
#include "server/server.h"

#include "query/index.h"
#include "query/query.h"
#include "server/realtime.h"
#include "tree/json.h"

#include <ctype.h>
#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_TYPE "application/json; charset=utf-8"
#define MSG_BAD_DATA "Invalid data; couldn't parse JSON object, array, or value."
#define MSG_BAD_PATH "Invalid path: Invalid token in path"

typedef struct param {
    char *name;
    char *value;
} param;

/* One parsed request. */
typedef struct rest {
    hearth__server *srv;
    hearth__http_conn *conn;
    const hearth__http_request *req;
    int method;
    char *path; /* decoded, without ".json"; "/" at the root */
    param *params;
    size_t nparams;
    hearth__namespace *ns;
    unsigned json_flags; /* HEARTH_JSON_PRETTY / _EXPORT */
    bool silent;
    bool want_etag;
    const char *callback; /* JSONP */
    const char *download;
    hearth__principal who; /* what the rules see of the caller */
} rest;

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
static char *url_decode(const char *s, size_t len, bool plus_space) {
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

static const char *param_get(const rest *r, const char *name) {
    for (size_t i = 0; i < r->nparams; i++)
        if (strcmp(r->params[i].name, name) == 0)
            return r->params[i].value;
    return NULL;
}

static int parse_params(rest *r, const char *q) {
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
            char *name = url_decode(q, nlen, true);
            char *value = eq ? url_decode(eq + 1, len - nlen - 1, true)
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

static void rest_free(rest *r) {
    for (size_t i = 0; i < r->nparams; i++) {
        hearth__free(r->params[i].name);
        hearth__free(r->params[i].value);
    }
    hearth__free(r->params);
    hearth__free(r->path);
    hearth__principal_clear(&r->who);
}

/* ---- replies ---- */

static void reply_error(hearth__http_conn *conn, int status,
                        const char *message) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_adds(&b, "{\"error\":");
    hearth__json_write_string(&b, message, strlen(message));
    hearth__buf_addc(&b, '}');
    if (b.failed)
        hearth__http_respond(conn, 500, JSON_TYPE, NULL, "", 0);
    else
        hearth__http_respond(conn, status, JSON_TYPE, NULL, b.data, b.len);
    hearth__buf_free(&b);
}

static const char *error_status_message(int code, const char *message,
                                        int *status) {
    *status = 400;
    switch (code) {
    case HEARTH_EJSON:
        return MSG_BAD_DATA;
    case HEARTH_ENOMEM:
        *status = 503;
        return "Server out of memory";
    case HEARTH_EDENIED:
        *status = 401;
        return "Permission denied";
    case HEARTH_ENOSPC: /* a failed commit changed nothing: retry later */
        *status = 507;
        return "Insufficient storage: the disk is full; the write changed "
               "nothing";
    case HEARTH_EIO:
        *status = 503;
        return "Storage failure: the write changed nothing";
    default:
        return message;
    }
}

static void reply_failure(hearth__http_conn *conn, int code,
                          const hearth_error_t *err) {
    int status;
    const char *msg =
        error_status_message(code, err ? err->message : hearth_strerror(code),
                             &status);
    reply_error(conn, status, msg && *msg ? msg : hearth_strerror(code));
}

/* JSONP (callback=FN) wraps a body in "FN(...);" after an empty comment. */
static void jsonp_open(const rest *r, hearth__buf *b) {
    if (r->callback) {
        hearth__buf_adds(b, "/**/ ");
        hearth__buf_adds(b, r->callback);
        hearth__buf_addc(b, '(');
    }
}

static void jsonp_close(const rest *r, hearth__buf *b) {
    if (r->callback)
        hearth__buf_add(b, ");", 2);
}

/* Serializes a value as the request's flags ask (pretty, export, JSONP). */
static char *render(const rest *r, const hearth_node_t *value, size_t *len) {
    hearth__buf b;
    hearth__buf_init(&b);
    jsonp_open(r, &b);
    hearth__node_write_json(&b, value, r->json_flags);
    jsonp_close(r, &b);
    return hearth__buf_detach(&b, len);
}

static void reply_text(const rest *r, int status, const char *body,
                       size_t len, const char *etag) {
    char headers[512] = "";
    size_t used = 0;
    if (etag)
        used += (size_t)snprintf(headers + used, sizeof headers - used,
                                 "ETag: %s\r\n", etag);
    if (r->download)
        snprintf(headers + used, sizeof headers - used,
                 "Content-Disposition: attachment; filename=\"%.200s\"\r\n",
                 r->download);
    if (r->silent && status == 200) {
        hearth__http_respond(r->conn, 204, NULL, headers, "", 0);
        return;
    }
    hearth__http_respond(r->conn, status,
                         r->callback ? "application/javascript; charset=utf-8"
                                     : JSON_TYPE,
                         headers, body, len);
}

static void reply_value(const rest *r, int status, const hearth_node_t *value,
                        const char *etag) {
    size_t len;
    char *body = render(r, value, &len);
    if (!body) {
        reply_error(r->conn, 503, "Server out of memory");
        return;
    }
    reply_text(r, status, body, len, etag);
    hearth_free(body);
}

/* ---- the data ---- */

static const hearth_node_t *value_at(const rest *r) {
    const hearth_node_t *n;
    if (hearth_node_get(hearth__db_root(r->ns->db), r->path, &n, NULL))
        return hearth__node_empty();
    return n;
}

/* The ETag of the data at the request's path: its hash, or null_etag. */
static void etag_of(const hearth_node_t *n, char out[HEARTH_HASH_SIZE + 16]) {
    if (hearth__node_is_empty(n) || hearth_node_hash(n, out) || !out[0])
        strcpy(out, "null_etag");
}

/* Whether the caller may read the data at the request's path. Whatever
 * shows stored data (an echo, an ETag, a failed condition) needs it. */
static bool may_read_here(const rest *r) {
    return hearth__ns_may_read(r->ns, &r->who, r->path, NULL);
}

static void deny(const rest *r);

/* Applies if-match: true when the request may go on (else answered). A
 * condition on data is a read of it (a match or 412 tells its hash), so
 * only callers who may read it may ask. */
static bool check_if_match(const rest *r) {
    const char *want = hearth__http_get_header(r->req, "if-match");
    if (!want)
        return true;
    if (!may_read_here(r)) {
        deny(r);
        return false;
    }
    char etag[HEARTH_HASH_SIZE + 16];
    const hearth_node_t *current = value_at(r);
    etag_of(current, etag);
    if (strcmp(want, etag) == 0)
        return true;
    rest copy = *r;
    copy.silent = false;
    reply_value(&copy, 412, current, etag);
    return false;
}

/* ---- queries ---- */

static const char *const QUERY_PARAMS[] = {"orderBy", "startAt", "endAt",
                                           "equalTo", "limitToFirst",
                                           "limitToLast"};

static bool has_query(const rest *r) {
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(QUERY_PARAMS); i++)
        if (param_get(r, QUERY_PARAMS[i]))
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
static int build_query(const rest *r, hearth_query_t **out,
                       hearth_error_t *err) {
    *out = NULL;
    if (!has_query(r))
        return 0;
    const char *order = param_get(r, "orderBy");
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
    int rc = hearth_query_new(&q);
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
    if (!rc && (v = param_get(r, "startAt")))
        rc = bound(q, v, hearth_query_start_at, "startAt", err);
    if (!rc && (v = param_get(r, "endAt")))
        rc = bound(q, v, hearth_query_end_at, "endAt", err);
    if (!rc && (v = param_get(r, "equalTo")))
        rc = bound(q, v, hearth_query_equal_to, "equalTo", err);
    uint32_t n;
    if (!rc && (v = param_get(r, "limitToFirst")))
        rc = parse_limit(v, &n)
                 ? hearth__error(err, HEARTH_EQUERY, NULL,
                                 "limitToFirst must be a positive integer")
                 : hearth_query_limit_to_first(q, n, err);
    if (!rc && (v = param_get(r, "limitToLast")))
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

/* ---- the rules ---- */

static void deny(const rest *r) {
    reply_error(r->conn, 401, "Permission denied");
}

/* The read rules' `query`: the request's query parameters. */
static hearth_node_t *query_variable(const rest *r) {
    hearth__buf b;
    hearth__buf_init(&b);
    const char *by = param_get(r, "orderBy");
    hearth__buf_printf(&b,
                       "{\"orderByKey\":%s,\"orderByValue\":%s,"
                       "\"orderByPriority\":%s",
                       by && !strcmp(by, "\"$key\"") ? "true" : "false",
                       by && !strcmp(by, "\"$value\"") ? "true" : "false",
                       by && !strcmp(by, "\"$priority\"") ? "true" : "false");
    bool child = by && strcmp(by, "\"$key\"") && strcmp(by, "\"$value\"") &&
                 strcmp(by, "\"$priority\"");
    hearth__buf_printf(&b, ",\"orderByChild\":%s", child ? by : "null");
    static const char *const values[] = {"startAt", "endAt", "equalTo",
                                         "limitToFirst", "limitToLast"};
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(values); i++) {
        const char *v = param_get(r, values[i]);
        hearth__buf_printf(&b, ",\"%s\":%s", values[i], v ? v : "null");
    }
    hearth__buf_addc(&b, '}');
    char *text = hearth__buf_detach(&b, NULL);
    hearth_node_t *q = NULL;
    if (!text || hearth_node_from_json(text, (size_t)-1, 0, &q, NULL))
        q = NULL; /* unreadable parameters: rules reading query fail */
    hearth__free(text);
    return q;
}

static bool may_read(rest *r, hearth_node_t **query_var) {
    hearth_node_t *q = query_variable(r);
    bool ok = hearth__ns_may_read(r->ns, &r->who, r->path, q);
    *query_var = q;
    return ok;
}

/* A set judged by the rules as the caller when it is applied (the admin
 * is not judged); a refusal completes with HEARTH_EDENIED. */
static int judged_set(rest *r, const char *path, const hearth_node_t *value,
                      void *reply_ctx, hearth_error_t *err);

/* ---- methods ---- */

static void do_get(rest *r) {
    hearth_error_t err;
    hearth_query_t *q;
    if (build_query(r, &q, &err)) {
        reply_error(r->conn, 400, err.message);
        return;
    }
    hearth_node_t *query_var;
    if (!may_read(r, &query_var)) {
        hearth_node_decref(query_var);
        hearth_query_free(q);
        deny(r);
        return;
    }
    const char *accept = hearth__http_get_header(r->req, "accept");
    if (accept && strstr(accept, "text/event-stream")) {
        hearth__sse_start(r->srv, r->conn, r->ns, r->path, q, r->json_flags,
                          &r->who, query_var);
        hearth_node_decref(query_var);
        hearth_query_free(q);
        return;
    }
    hearth_node_decref(query_var);
    const char *shallow = param_get(r, "shallow");
    if (shallow && strcmp(shallow, "true") == 0 && q) {
        hearth_query_free(q);
        reply_error(r->conn, 400, "Shallow queries cannot be combined with "
                                  "other query parameters");
        return;
    }
    const hearth_node_t *full = value_at(r);
    const char *none_match = hearth__http_get_header(r->req, "if-none-match");
    bool with_etag = r->want_etag || none_match;
    /* Hashing the data costs O(size) after a write: only when asked. */
    char etag[HEARTH_HASH_SIZE + 16] = "";
    if (with_etag)
        etag_of(full, etag);
    if (none_match && strcmp(none_match, etag) == 0) {
        hearth_query_free(q);
        char headers[96];
        snprintf(headers, sizeof headers, "ETag: %s\r\n", etag);
        hearth__http_respond(r->conn, 304, NULL, headers, "", 0);
        return;
    }
    hearth_node_t *value = NULL;
    int rc;
    /* Child orders have an index (the rules demand it): O(log n + k). */
    struct hearth__index *ix =
        q && q->index == HEARTH__INDEX_CHILD && !hearth__query_loads_all(q)
            ? hearth__ns_index_for(r->ns, r->path, q)
            : NULL;
    if (ix && hearth__index_sync(ix, full) == 0)
        rc = hearth__index_view(ix, q, full, &value);
    else
        rc = hearth__query_view_node(q, full, &value);
    hearth_query_free(q);
    if (!rc && shallow && strcmp(shallow, "true") == 0 &&
        hearth_node_type(value) == HEARTH_TYPE_OBJECT) {
        /* Every child truncated to true. */
        hearth_node_t *flat = hearth_node_null();
        for (size_t i = 0; !rc && i < hearth_node_child_count(value); i++) {
            const char *key;
            hearth_node_child_at(value, i, &key);
            hearth_node_t *t = hearth_node_boolean(true);
            rc = t ? hearth_node_set_child_new(&flat, key, t, NULL)
                   : HEARTH_ENOMEM;
        }
        hearth_node_decref(value);
        value = flat;
    }
    if (rc)
        reply_failure(r->conn, rc, NULL);
    else
        reply_value(r, 200, value, with_etag ? etag : NULL);
    hearth_node_decref(value);
}

/* A write is answered after its commit, with the reply prepared when it
 * was applied (the data as written, server values resolved). Two owners:
 * the database's completion and the handler; whichever comes second sends
 * (the completion can run before the handler has prepared the reply). */
typedef struct pending_reply {
    int refs;
    hearth__http_conn *conn;
    bool prepared, completed;
    int status;
    char *body;
    size_t len;
    char *headers;
    bool silent;
} pending_reply;

static void send_reply(pending_reply *p) {
    if (p->status)
        reply_failure(p->conn, p->status, NULL);
    else if (p->silent)
        hearth__http_respond(p->conn, 204, NULL, p->headers, "", 0);
    else
        hearth__http_respond(p->conn, 200, JSON_TYPE, p->headers, p->body,
                             p->len);
}

static void release_reply(void *ctx) {
    pending_reply *p = ctx;
    if (--p->refs > 0)
        return;
    hearth__free(p->body);
    hearth__free(p->headers);
    hearth__free(p);
}

static void on_write_done(int status, void *ctx) {
    pending_reply *p = ctx;
    p->status = status;
    p->completed = true;
    if (p->prepared)
        send_reply(p);
}

static pending_reply *new_reply(const rest *r) {
    pending_reply *p = hearth__calloc(1, sizeof *p);
    if (p) {
        p->refs = 2;
        p->conn = r->conn;
        p->silent = r->silent;
    }
    return p;
}

/* The handler's part, once the write is applied: the body, then sending
 * if the commit already happened. */
static void prepared(pending_reply *p) {
    if (!p->body) {
        p->body = hearth__strndup("null", 4);
        p->len = p->body ? 4 : 0;
    }
    p->prepared = true;
    if (p->completed)
        send_reply(p);
    release_reply(p);
}

/* The reply to a write: echo (the data now, or for callers who may not
 * read it what they sent), and the ETag only for those who may. */
static void prepare_reply(pending_reply *p, const rest *r,
                          const hearth_node_t *echo, bool readable) {
    p->body = render(r, echo, &p->len);
    if (r->want_etag && readable) {
        char etag[HEARTH_HASH_SIZE + 16];
        etag_of(value_at(r), etag);
        size_t n = strlen(etag) + 16;
        p->headers = hearth__malloc(n);
        if (p->headers)
            snprintf(p->headers, n, "ETag: %s\r\n", etag);
    }
    prepared(p);
}

static int parse_body(const rest *r, const char *base, hearth_node_t **out,
                      hearth_error_t *err) {
    hearth__path p;
    unsigned depth = hearth__path_parse(base, HEARTH__PATH_ALLOW_PRIORITY, &p,
                                        NULL)
                         ? 0
                         : p.n;
    return hearth__node_from_json_at(r->req->body, r->req->body_len,
                                     HEARTH_JSON_ALLOW_SERVER_VALUES, base,
                                     depth, out, err);
}

/* A PUT's value, parsed: answered when the condition fails; else set,
 * applied (or refused) now, on the loop thread, and answered at its
 * commit. The echo is the data as stored (server values resolved), which
 * only a reader may see. */
static void put_value(rest *r, const hearth_node_t *value) {
    if (!check_if_match(r))
        return;
    hearth_error_t err;
    pending_reply *p = new_reply(r);
    int rc = p ? judged_set(r, r->path, value, p, &err)
               : hearth__error_code(&err, HEARTH_ENOMEM);
    if (rc) {
        hearth__free(p);
        reply_failure(r->conn, rc, &err);
        return;
    }
    bool readable = may_read_here(r);
    prepare_reply(p, r, readable ? value_at(r) : value, readable);
}

static int judged_set(rest *r, const char *path, const hearth_node_t *value,
                      void *reply_ctx, hearth_error_t *err) {
    hearth__db_caller caller;
    return hearth__db_set_as(r->ns->db, hearth__principal_caller(&r->who, &caller),
                             path, value, on_write_done, reply_ctx,
                             release_reply, err);
}

/* A POST's value under a new push ID (made first: the rules see the write
 * at its own location); the answer names the key. */
static void post_value(rest *r, const hearth_node_t *value) {
    hearth_error_t err;
    static hearth_push_id_state_t ids; /* the server's loop thread only */
    char key[HEARTH_PUSH_ID_SIZE];
    hearth_push_id(&ids, hearth_now_ms(), key);
    hearth__buf where;
    hearth__buf_init(&where);
    hearth__buf_printf(&where, "%s/%s", strcmp(r->path, "/") ? r->path : "", key);
    char *child = hearth__buf_detach(&where, NULL);
    pending_reply *p = child ? new_reply(r) : NULL;
    int rc = p ? judged_set(r, child, value, p, &err)
               : hearth__error_code(&err, HEARTH_ENOMEM);
    hearth__free(child);
    if (rc) {
        hearth__free(p);
        reply_failure(r->conn, rc, &err);
        return;
    }
    hearth_node_t *name = hearth_node_null();
    hearth_node_t *k = hearth_node_string(key, strlen(key));
    if (k)
        hearth_node_set_child_new(&name, "name", k, NULL);
    rest plain = *r;
    plain.json_flags &= ~HEARTH_JSON_EXPORT;
    prepare_reply(p, &plain, name, false);
    hearth_node_decref(name);
}

/* A PATCH's parts, applied as one write; the echo gives each updated path
 * with what it holds now, or to a caller who may not read it what it
 * sent. */
static void patch_parts(rest *r, const hearth__update_parts *u) {
    hearth_error_t err;
    pending_reply *p = new_reply(r);
    hearth__db_caller caller;
    int rc = p ? hearth__db_update_parts_as(
                     r->ns->db, hearth__principal_caller(&r->who, &caller),
                     r->path, u, on_write_done, p, release_reply, &err)
               : hearth__error_code(&err, HEARTH_ENOMEM);
    if (rc) {
        hearth__free(p);
        reply_failure(r->conn, rc, &err);
        return;
    }
    bool readable = may_read_here(r);
    hearth__buf b;
    hearth__buf_init(&b);
    jsonp_open(r, &b);
    hearth__buf_addc(&b, '{');
    bool first = true;
    for (size_t i = 0; i < u->n; i++) {
        const char *key = u->paths[i];
        const hearth_node_t *now = NULL;
        if (readable) {
            hearth__buf full;
            hearth__buf_init(&full);
            hearth__buf_printf(&full, "%s/%s", r->path, key);
            char *at = hearth__buf_detach(&full, NULL);
            if (!at || hearth_node_get(hearth__db_root(r->ns->db), at, &now, NULL))
                now = NULL;
            hearth__free(at);
            if (!now)
                continue;
        }
        if (!first)
            hearth__buf_addc(&b, ',');
        first = false;
        hearth__json_write_string(&b, key, strlen(key));
        hearth__buf_addc(&b, ':');
        if (now) {
            hearth__node_write_json(&b, now, r->json_flags & ~HEARTH_JSON_PRETTY);
        } else {
            char *sent = json_dumps(json_object_get(u->obj, key),
                                    JSON_COMPACT | JSON_ENCODE_ANY);
            hearth__buf_adds(&b, sent ? sent : "null");
            free(sent);
        }
    }
    hearth__buf_addc(&b, '}');
    jsonp_close(r, &b);
    p->body = hearth__buf_detach(&b, &p->len);
    prepared(p);
}

/* ---- bodies: parsed on the loop when small, on a worker when large ---- */

/* Bodies from this size on are parsed on a worker thread (jansson, then
 * the nodes: pure work on the request alone), so that one large write
 * never holds every other client: parsing 1,000,000 keys takes about a
 * second. What must see the data in order (rules, apply, log) stays on
 * the loop. */
#define OFF_LOOP_BODY (256 * 1024)

/* A write's body, parsed: the value (PUT, POST) or the update's parts. */
typedef struct parsed_body {
    int rc;
    hearth_error_t err;
    hearth_node_t *value;
    hearth__update_parts parts;
} parsed_body;

/* Any thread: reads only the request. */
static void parse_request_body(const rest *r, parsed_body *b) {
    memset(b, 0, sizeof *b);
    if (r->method == HTTP_PATCH)
        b->rc = hearth__update_parts_parse(r->path, r->req->body,
                                           r->req->body_len, &b->parts, &b->err);
    else
        b->rc = parse_body(r, r->path, &b->value, &b->err);
}

/* Loop thread: answers a body that did not parse, else writes it. */
static void write_parsed(rest *r, parsed_body *b) {
    if (b->rc && r->method == HTTP_PATCH && b->parts.obj &&
        !json_is_object(b->parts.obj))
        reply_error(r->conn, 400, MSG_BAD_DATA);
    else if (b->rc)
        reply_failure(r->conn, b->rc, &b->err);
    else if (r->method == HTTP_PATCH)
        patch_parts(r, &b->parts);
    else if (r->method == HTTP_POST)
        post_value(r, b->value);
    else
        put_value(r, b->value);
    hearth_node_decref(b->value);
    hearth__update_parts_free(&b->parts);
}

typedef struct body_job {
    uv_work_t work;
    rest r; /* the request, moved here (valid until answered) */
    parsed_body body;
} body_job;

static void parse_on_worker(uv_work_t *w) {
    body_job *j = w->data;
    parse_request_body(&j->r, &j->body);
}

static void parsed_on_loop(uv_work_t *w, int status) {
    body_job *j = w->data;
    if (status) { /* canceled: the server is stopping */
        j->body.rc = hearth__error(&j->body.err, HEARTH_ECANCELED, NULL,
                                   "the server is stopping");
    }
    write_parsed(&j->r, &j->body);
    hearth__ns_release(j->r.srv, j->r.ns);
    rest_free(&j->r);
    hearth__free(j);
}

/* PUT, POST and PATCH. A large body moves the request to a job (r is
 * left empty) whose answer comes when the worker is done; the namespace
 * is held open until then. */
static void do_write(rest *r) {
    if (r->req->body_len >= OFF_LOOP_BODY) {
        body_job *j = hearth__calloc(1, sizeof *j);
        if (j) {
            j->r = *r;
            j->work.data = j;
            hearth__ns_hold(r->ns);
            if (uv_queue_work(&r->srv->loop, &j->work, parse_on_worker,
                              parsed_on_loop) == 0) {
                memset(r, 0, sizeof *r);
                return;
            }
            hearth__ns_release(r->srv, r->ns);
            hearth__free(j);
        }
        /* No memory or no worker: parse here, as small bodies are. */
    }
    parsed_body b;
    parse_request_body(r, &b);
    write_parsed(r, &b);
}

static void do_delete(rest *r) {
    if (!check_if_match(r))
        return;
    hearth_error_t err;
    pending_reply *p = new_reply(r);
    int rc = p ? judged_set(r, r->path, hearth__node_empty(), p, &err)
               : hearth__error_code(&err, HEARTH_ENOMEM);
    if (rc) {
        hearth__free(p);
        reply_failure(r->conn, rc, &err);
        return;
    }
    prepare_reply(p, r, hearth__node_empty(), may_read_here(r));
}

/* ---- rules endpoint ---- */

static void do_rules(rest *r) {
    if (!r->who.admin) {
        reply_error(r->conn, 401, "Permission denied: the rules are for the "
                                  "admin (Authorization: Bearer owner)");
        return;
    }
    if (r->method == HTTP_GET) {
        char *text = json_dumps(r->ns->rules, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (!text) {
            reply_error(r->conn, 503, "Server out of memory");
            return;
        }
        hearth__http_respond(r->conn, 200, JSON_TYPE, NULL, text, strlen(text));
        free(text);
        return;
    }
    if (r->method != HTTP_PUT) {
        reply_error(r->conn, 405, "Rules can be read (GET) or replaced (PUT)");
        return;
    }
    json_t *doc;
    hearth_error_t err;
    if (hearth__rules_parse(r->req->body, r->req->body_len, &doc, &err)) {
        reply_error(r->conn, 400, err.message);
        return;
    }
    /* Durable first: the file is replaced whole, then adopted. The admin
     * may set a namespace's rules before it holds any data. */
    if (hearth__ns_make_dir(r->ns, &err)) {
        json_decref(doc);
        reply_error(r->conn, 500, "Storage failure: rules not saved");
        return;
    }
    char path[1024], tmp[1040];
    snprintf(path, sizeof path, "%s/rules.json", r->ns->dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(r->req->body, 1, r->req->body_len, f) ==
                       r->req->body_len;
    if (f)
        ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
    if (f)
        fclose(f);
    if (!ok || rename(tmp, path)) {
        json_decref(doc);
        reply_error(r->conn, 500, "Storage failure: rules not saved");
        return;
    }
    if (hearth__ns_set_rules(r->ns, doc, &err)) {
        reply_error(r->conn, 400, err.message); /* not reached: parsed */
        return;
    }
    hearth__ns_drop_indexes(r->ns);
    /* What the new rules no longer let read ends now. */
    hearth__sse_recheck(r->srv, r->ns);
    hearth__realtime_recheck(r->srv, r->ns);
    hearth__http_respond(r->conn, 200, JSON_TYPE, NULL, "{\"status\":\"ok\"}",
                         15);
}

/* ---- dispatch ---- */

/* The namespace: ns=, else a domain name's first label (lower case, as
 * host names compare), else default. */
static const char *namespace_name(const rest *r, char *buf, size_t size) {
    const char *ns = param_get(r, "ns");
    if (ns)
        return ns;
    const char *host = hearth__http_get_header(r->req, "host");
    if (host && host[0] != '[') {
        size_t len = strcspn(host, ":");
        bool has_letter = false, has_dot = false;
        for (size_t i = 0; i < len; i++) {
            has_dot |= host[i] == '.';
            has_letter |= (host[i] | 32) >= 'a' && (host[i] | 32) <= 'z';
        }
        size_t label = strcspn(host, ".:");
        if (has_dot && has_letter && label < size) {
            for (size_t i = 0; i < label; i++)
                buf[i] = (char)tolower((unsigned char)host[i]);
            buf[label] = '\0';
            return buf;
        }
    }
    return r->srv->default_namespace;
}

static int method_of(const rest *r) {
    int m = r->req->method;
    if (m != HTTP_POST)
        return m;
    const char *o = hearth__http_get_header(r->req, "x-http-method-override");
    if (!o)
        o = param_get(r, "x-http-method-override");
    if (!o)
        return m;
    if (strcasecmp(o, "PUT") == 0)
        return HTTP_PUT;
    if (strcasecmp(o, "PATCH") == 0)
        return HTTP_PATCH;
    if (strcasecmp(o, "DELETE") == 0)
        return HTTP_DELETE;
    return -1;
}

/* Reads the request's parameters into r; the problem with one (a 400),
 * or NULL. */
static const char *read_params(rest *r) {
    const char *v;
    if ((v = param_get(r, "print"))) {
        if (strcmp(v, "pretty") == 0)
            r->json_flags |= HEARTH_JSON_PRETTY;
        else if (strcmp(v, "silent") == 0)
            r->silent = true;
        else
            return "print must be 'pretty' or 'silent'";
    }
    if ((v = param_get(r, "format"))) {
        /* Data: "export" adds priorities. The rules: "strict" asks for
         * plain JSON (the Admin SDKs read them so); Hearth answers plain
         * JSON either way. */
        bool rules = strcmp(r->path, "/.settings/rules") == 0;
        if (rules && strcmp(v, "strict") != 0)
            return "format must be 'strict'";
        if (!rules && strcmp(v, "export") != 0)
            return "format must be 'export'";
        if (!rules)
            r->json_flags |= HEARTH_JSON_EXPORT;
    }
    if ((v = param_get(r, "timeout"))) {
        char *end;
        double t = strtod(v, &end);
        double ms = strcmp(end, "ms") == 0    ? t
                    : strcmp(end, "s") == 0   ? t * 1000
                    : strcmp(end, "min") == 0 ? t * 60000
                                              : -1;
        if (end == v || ms < 0 || ms > 15 * 60000)
            return "timeout must be a duration like 3ms, 3s or 3min, at "
                   "most 15min";
    }
    if ((v = param_get(r, "writeSizeLimit")) && strcmp(v, "tiny") &&
        strcmp(v, "small") && strcmp(v, "medium") && strcmp(v, "large") &&
        strcmp(v, "unlimited")) {
        return "writeSizeLimit must be tiny, small, medium, large or "
               "unlimited";
    }
    if ((v = param_get(r, "callback"))) {
        for (const char *c = v; *c; c++)
            if (!((*c | 32) >= 'a' && (*c | 32) <= 'z') &&
                !(*c >= '0' && *c <= '9') && *c != '_' && *c != '.' &&
                *c != '$') {
                return "callback must be a JavaScript name";
            }
        r->callback = v;
    }
    if ((v = param_get(r, "download"))) {
        /* It becomes a header's value: a decoded CR or LF would start
         * headers of the client's choosing. */
        for (const unsigned char *c = (const unsigned char *)v; *c; c++)
            if (*c < 0x20 || *c == 0x7f || *c == '"' || *c == '\\') {
                return "download must be a file name without control "
                       "characters, quotes or backslashes";
            }
        r->download = v;
    }
    /* Accepted now, enforced with the rules engine: it must at least be
     * JSON (an object, or null for unauthenticated). */
    if ((v = param_get(r, "auth_variable_override"))) {
        json_t *o = json_loads(v, JSON_DECODE_ANY, NULL);
        bool ok = o && (json_is_object(o) || json_is_null(o));
        json_decref(o);
        if (!ok)
            return "auth_variable_override must be a JSON object or null";
    }
    const char *etag = hearth__http_get_header(r->req, "x-firebase-etag");
    r->want_etag = etag && strcmp(etag, "true") == 0;
    return NULL;
}

static bool check_params(rest *r) {
    const char *problem = read_params(r);
    if (problem)
        reply_error(r->conn, 400, problem);
    return !problem;
}

/* Who is asking, into r->who; false with *why for a token that does not
 * verify. */
static bool who_is_asking(rest *r, char *why, size_t why_size) {
    const char *token = param_get(r, "auth");
    if (!token)
        token = param_get(r, "access_token");
    return hearth__principal_of(r->srv, r->req, token,
                                param_get(r, "auth_variable_override"),
                                &r->who, why, why_size);
}

/* Who is asking: 401 for a token that does not verify. */
static bool identify(rest *r) {
    char why[256];
    if (who_is_asking(r, why, sizeof why))
        return true;
    reply_error(r->conn, 401, why);
    return false;
}

/* Decodes the target into r->path and r->params; false when malformed. */
static bool read_target(rest *r) {
    const char *target = r->req->target;
    const char *query = strchr(target, '?');
    size_t plen = query ? (size_t)(query - target) : strlen(target);
    r->path = url_decode(target, plen, false);
    return r->path && !parse_params(r, query ? query + 1 : NULL);
}

/* Drops a REST path's ".json" ("/" at the root); false when it has none. */
static bool strip_json(rest *r) {
    size_t len = strlen(r->path);
    if (len < 5 || strcmp(r->path + len - 5, ".json") != 0)
        return false;
    r->path[len - 5] = '\0';
    if (!r->path[0]) {
        r->path[0] = '/';
        r->path[1] = '\0';
    }
    return true;
}

/* A write the rules refuse whatever its data (a .write on the way that
 * reads no newData and is false, none that could grant): 401 before its
 * body is read. Anything else goes on to be read and checked in full. */
static int refuse_write_early(rest *r, char *why, size_t why_size) {
    r->method = method_of(r);
    if (r->method != HTTP_PUT && r->method != HTTP_POST &&
        r->method != HTTP_PATCH)
        return 0;
    char nsbuf[130];
    hearth_error_t err;
    hearth__path path;
    if (read_params(r) || strcmp(r->path, "/.settings/rules") == 0 ||
        hearth_validate_path(r->path, NULL) ||
        hearth__path_parse(r->path, 0, &path, NULL) ||
        hearth__server_namespace(r->srv, namespace_name(r, nsbuf, sizeof nsbuf),
                                 &r->ns, &err))
        return 0; /* the full handler answers these */
    if (!who_is_asking(r, why, why_size))
        return 401;
    if (r->who.admin || !r->ns->ruleset)
        return 0;
    hearth__access a = {r->who.auth, (double)hearth_now_ms(),
                        hearth__db_root(r->ns->db), NULL};
    /* A push or an update writes below the path. */
    bool below = r->method != HTTP_PUT;
    if (hearth__ruleset_write_early(r->ns->ruleset, &path, below, &a) !=
        HEARTH__WRITE_DENIED)
        return 0;
    snprintf(why, why_size, "Permission denied");
    return 401;
}

int hearth__rest_head(const hearth__http_request *req, void *ctx, char *why,
                      size_t why_size) {
    rest r = {.srv = ctx, .req = req};
    int status = read_target(&r) && strip_json(&r)
                     ? refuse_write_early(&r, why, why_size)
                     : 0;
    rest_free(&r);
    return status;
}

void hearth__rest_handle(hearth__http_conn *conn,
                         const hearth__http_request *req, void *ctx) {
    rest r = {.srv = ctx, .conn = conn, .req = req};
    if (!read_target(&r)) {
        reply_error(conn, 400, MSG_BAD_PATH);
        rest_free(&r);
        return;
    }
    r.method = method_of(&r);
    if (r.method < 0) {
        reply_error(conn, 400, "x-http-method-override must be PUT, PATCH "
                               "or DELETE");
        rest_free(&r);
        return;
    }
    if (r.method == HTTP_OPTIONS) { /* CORS preflight */
        hearth__http_respond(
            conn, 200, NULL,
            "Access-Control-Allow-Methods: GET, PUT, POST, PATCH, DELETE\r\n"
            "Access-Control-Allow-Headers: Content-Type, Authorization, "
            "X-Firebase-ETag, If-Match, If-None-Match\r\n",
            "", 0);
        rest_free(&r);
        return;
    }
    if (strcmp(r.path, "/.ws") == 0) { /* the realtime protocol */
        char nsbuf[130];
        hearth_error_t err;
        if (hearth__server_namespace(r.srv, namespace_name(&r, nsbuf, sizeof nsbuf),
                                     &r.ns, &err))
            reply_error(conn, 400, err.message);
        else
            hearth__realtime_accept(r.srv, conn, req, r.ns);
        rest_free(&r);
        return;
    }
    if (!strip_json(&r)) {
        reply_error(conn, 404, "Not found: REST paths end in .json");
        rest_free(&r);
        return;
    }
    char nsbuf[130];
    hearth_error_t err;
    if (hearth__server_namespace(r.srv, namespace_name(&r, nsbuf, sizeof nsbuf),
                                 &r.ns, &err)) {
        reply_error(conn,
                    err.code == HEARTH_EINVAL    ? 400
                    : err.code == HEARTH_ETOOBIG ? 503
                                                 : 500,
                    err.message);
        rest_free(&r);
        return;
    }
    if (!check_params(&r) || !identify(&r)) {
        rest_free(&r);
        return;
    }
    if (strcmp(r.path, "/.settings/rules") == 0) {
        do_rules(&r);
        rest_free(&r);
        return;
    }
    if (hearth_validate_path(r.path, NULL)) {
        reply_error(conn, 400, MSG_BAD_PATH);
        rest_free(&r);
        return;
    }
    switch (r.method) {
    case HTTP_GET:
        do_get(&r);
        break;
    case HTTP_PUT:
    case HTTP_POST:
    case HTTP_PATCH:
        do_write(&r);
        break;
    case HTTP_DELETE:
        do_delete(&r);
        break;
    default:
        reply_error(conn, 405, "Method not allowed");
    }
    rest_free(&r);
}
