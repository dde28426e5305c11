/* rest_reply.c - REST answers: errors as the service words them, values as
 * the request's flags ask (pretty, export, JSONP, download), ETags and the
 * if-match condition. */
#include "server/rest_internal.h"

#include "tree/json.h"

#include <stdio.h>
#include <string.h>

/* ---- replies ---- */

void hearth__rest_reply_error(hearth__http_conn *conn, int status,
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

void hearth__rest_reply_json(hearth__http_conn *conn, int status, json_t *value) {
    char *text =
        value ? json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY)
              : NULL;
    if (text)
        hearth__http_respond(conn, status, JSON_TYPE, NULL, text, strlen(text));
    else
        hearth__rest_reply_error(conn, 503, "Server out of memory");
    free(text);
    json_decref(value);
}

bool hearth__rest_admin_asks(rest *r, int method, const char *what) {
    char why[160];
    if (!r->who.admin)
        snprintf(why, sizeof why, "Permission denied: %s is for the admin", what);
    else if (r->method != method)
        snprintf(why, sizeof why, "%s is asked with %s", what,
                 http_method_str((enum http_method)method));
    else
        return true;
    hearth__rest_reply_error(r->conn, r->who.admin ? 405 : 401, why);
    return false;
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
    case HEARTH_EDATASTALE: /* a cluster's leader saw newer data */
        *status = 412;
        return "Precondition failed: the data changed (if-match)";
    case HEARTH_EDISCONNECTED: /* a cluster's leader did not answer */
        *status = 503;
        return "Unavailable: the write's outcome is unknown; read and retry";
    default:
        return message;
    }
}

void hearth__rest_reply_failure(hearth__http_conn *conn, int code,
                                const hearth_error_t *err) {
    int status;
    const char *msg =
        error_status_message(code, err ? err->message : hearth_strerror(code),
                             &status);
    hearth__rest_reply_error(conn, status, msg && *msg ? msg : hearth_strerror(code));
}

/* JSONP (callback=FN) wraps a body in "FN(...);" after an empty comment. */
void hearth__rest_jsonp_open(const rest *r, hearth__buf *b) {
    if (r->callback) {
        hearth__buf_adds(b, "/**/ ");
        hearth__buf_adds(b, r->callback);
        hearth__buf_addc(b, '(');
    }
}

void hearth__rest_jsonp_close(const rest *r, hearth__buf *b) {
    if (r->callback)
        hearth__buf_add(b, ");", 2);
}

/* Serializes a value as the request's flags ask (pretty, export, JSONP). */
char *hearth__rest_render(const rest *r, const hearth_node_t *value, size_t *len) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__rest_jsonp_open(r, &b);
    hearth__node_write_json(&b, value, r->json_flags);
    hearth__rest_jsonp_close(r, &b);
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

void hearth__rest_reply_value(const rest *r, int status, const hearth_node_t *value,
                              const char *etag) {
    size_t len;
    char *body = hearth__rest_render(r, value, &len);
    if (!body) {
        hearth__rest_reply_error(r->conn, 503, "Server out of memory");
        return;
    }
    reply_text(r, status, body, len, etag);
    hearth_free(body);
}

/* ---- the data ---- */

const hearth_node_t *hearth__rest_value_at(const rest *r) {
    const hearth_node_t *n;
    if (hearth_node_get(hearth__db_root(r->ns->db), r->path, &n, NULL))
        return hearth__node_empty();
    return n;
}

/* The ETag of the data at the request's path: its hash, or null_etag. */
void hearth__rest_etag_of(const hearth_node_t *n, char out[HEARTH_HASH_SIZE + 16]) {
    if (hearth__node_is_empty(n) || hearth_node_hash(n, out) || !out[0])
        strcpy(out, "null_etag");
}

/* Whether the caller may read the data at the request's path. Whatever
 * shows stored data (an echo, an ETag, a failed condition) needs it. */
bool hearth__rest_may_read_here(const rest *r) {
    return hearth__ns_may_see(r->ns, &r->who, r->path);
}



/* Applies if-match: true when the request may go on (else answered). A
 * condition on data is a read of it (a match or 412 tells its hash), so
 * only callers who may read it may ask. */
bool hearth__rest_check_if_match(const rest *r) {
    const char *want = hearth__http_get_header(r->req, "if-match");
    if (!want)
        return true;
    if (!hearth__rest_may_read_here(r)) {
        hearth__rest_deny(r);
        return false;
    }
    char etag[HEARTH_HASH_SIZE + 16];
    const hearth_node_t *current = hearth__rest_value_at(r);
    hearth__rest_etag_of(current, etag);
    if (strcmp(want, etag) == 0)
        return true;
    rest copy = *r;
    copy.silent = false;
    hearth__rest_reply_value(&copy, 412, current, etag);
    return false;
}


/* ---- the rules ---- */

void hearth__rest_deny(const rest *r) {
    hearth__rest_reply_error(r->conn, 401, "Permission denied");
}
