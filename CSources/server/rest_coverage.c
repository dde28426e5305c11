/* rest_coverage.c - the admin's inspection of a namespace's rules: the
 * coverage (as the emulator's /.inspect/coverage.json: for each rule of
 * the rules in force, where it is written, how often it was evaluated
 * since they were loaded, how often each result came out; ruleset.h),
 * the rules text those positions refer to, for the console's view, and
 * the denial traces (inspect.h). */
#include "server/rest_internal.h"

#include "server/inspect.h"

#include <stdlib.h>
#include <string.h>

static json_t *entry(const hearth__rule_coverage *c) {
    return json_pack("{s:i,s:i,s:s,s:I,s:{s:I,s:I,s:I},s:s,s:s}", "line",
                     c->line, "column", c->column, "expression",
                     c->expression, "evaluations", (json_int_t)c->evaluations,
                     "results", "true", (json_int_t)c->yes, "false",
                     (json_int_t)c->no, "error", (json_int_t)c->error, "rule",
                     c->kind, "path", c->where);
}

void hearth__rest_coverage(rest *r, const char *ns_name, bool source) {
    hearth_error_t err;
    if (hearth__server_namespace(r->srv, ns_name, &r->ns, &err)) {
        hearth__rest_reply_error(r->conn, 400, err.message);
        return;
    }
    const hearth__ruleset *rs = r->ns->ruleset;
    if (source) {
        const char *text = rs ? hearth__ruleset_source(rs) : NULL;
        if (!text)
            text = "";
        hearth__http_respond(r->conn, 200, "text/plain; charset=utf-8", NULL,
                             text, strlen(text));
        return;
    }
    hearth__rule_coverage *v = NULL;
    size_t n = 0;
    json_t *list = json_array();
    if (!list || (rs && hearth__ruleset_coverage(rs, &v, &n))) {
        json_decref(list);
        hearth__rest_reply_error(r->conn, 503, "Server out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (json_array_append_new(list, entry(&v[i]))) {
            json_decref(list);
            list = NULL; /* answered 503 below */
            break;
        }
    hearth__free(v);
    hearth__rest_reply_json(r->conn, 200, list);
}

void hearth__rest_denials(rest *r, const char *ns_name) {
    hearth_error_t err;
    if (hearth__server_namespace(r->srv, ns_name, &r->ns, &err)) {
        hearth__rest_reply_error(r->conn, 400, err.message);
        return;
    }
    if (r->method == HTTP_PUT) {
        json_t *body = json_loadb(r->req->body ? r->req->body : "",
                                  r->req->body_len, 0, NULL);
        json_t *on = json_object_get(body, "tracing");
        int rc = json_is_boolean(on) && json_object_size(body) == 1
                     ? hearth__inspect_set_tracing(r->srv, ns_name,
                                                   json_is_true(on))
                     : HEARTH_EINVAL;
        json_decref(body);
        if (rc == HEARTH_EINVAL) {
            hearth__rest_reply_error(r->conn, 400, "the body is {\"tracing\": "
                                     "true} or {\"tracing\": false}");
            return;
        }
        if (rc) {
            hearth__rest_reply_error(r->conn, 503, "Server out of memory");
            return;
        }
    } else if (r->method != HTTP_GET) {
        hearth__rest_reply_error(r->conn, 405, "Denials can be read (GET) or "
                                 "traced from now on or not (PUT)");
        return;
    }
    char *text = hearth__inspect_denials_json(r->srv, ns_name);
    if (!text) {
        hearth__rest_reply_error(r->conn, 503, "Server out of memory");
        return;
    }
    hearth__http_respond(r->conn, 200, JSON_TYPE, NULL, text, strlen(text));
    hearth__free(text);
}
