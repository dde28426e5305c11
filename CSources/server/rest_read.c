/* rest_read.c - the REST GET: the read rules (with their `query`), SSE
 * streams, if-none-match, shallow reads and queries served from an index. */
#include "server/rest_internal.h"

#include "query/index.h"
#include "query/query.h"

#include <stdio.h>
#include <string.h>

/* The read rules' `query`: the request's query parameters. */
static hearth_node_t *query_variable(const rest *r) {
    hearth__buf b;
    hearth__buf_init(&b);
    const char *by = hearth__rest_param_get(r, "orderBy");
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
        const char *v = hearth__rest_param_get(r, values[i]);
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


/* ---- methods ---- */

bool hearth__rest_wants_stream(const hearth__http_request *req) {
    const char *accept = hearth__http_get_header(req, "accept");
    return accept && strstr(accept, "text/event-stream");
}

void hearth__rest_get(rest *r) {
    hearth_error_t err;
    hearth_query_t *q;
    if (hearth__rest_build_query(r, &q, &err)) {
        hearth__rest_reply_error(r->conn, 400, err.message);
        return;
    }
    hearth_node_t *query_var;
    if (!may_read(r, &query_var)) {
        hearth_node_decref(query_var);
        hearth_query_free(q);
        hearth__rest_deny(r);
        return;
    }
    if (hearth__rest_wants_stream(r->req)) {
        hearth__sse_start(r->srv, r->conn, r->ns, r->path, q, r->json_flags,
                          &r->who, query_var);
        hearth_node_decref(query_var);
        hearth_query_free(q);
        return;
    }
    hearth_node_decref(query_var);
    const char *shallow = hearth__rest_param_get(r, "shallow");
    if (shallow && strcmp(shallow, "true") == 0 && q) {
        hearth_query_free(q);
        hearth__rest_reply_error(r->conn, 400, "Shallow queries cannot be combined with "
                                  "other query parameters");
        return;
    }
    const hearth_node_t *full = hearth__rest_value_at(r);
    const char *none_match = hearth__http_get_header(r->req, "if-none-match");
    bool with_etag = r->want_etag || none_match;
    /* Hashing the data costs O(size) after a write: only when asked. */
    char etag[HEARTH_HASH_SIZE + 16] = "";
    if (with_etag)
        hearth__rest_etag_of(full, etag);
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
    if (ix && hearth__index_sync(ix, full) == 0) {
        rc = hearth__index_view(ix, q, full, &value);
    } else {
        /* A query by child or value without an index scans every child:
         * the profiler reports it. */
        hearth__http_note_of(r->conn)->unindexed =
            q && !hearth__query_loads_all(q) &&
            (q->index == HEARTH__INDEX_CHILD || q->index == HEARTH__INDEX_VALUE);
        rc = hearth__query_view_node(q, full, &value);
    }
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
        hearth__rest_reply_failure(r->conn, rc, NULL);
    else
        hearth__rest_reply_value(r, 200, value, with_etag ? etag : NULL);
    hearth_node_decref(value);
}
