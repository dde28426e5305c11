/* rest_coverage.c - the rules' coverage, the admin's (as the emulator's
 * /.inspect/coverage.json): for each rule of the namespace's rules in
 * force, where it is written, how often it was evaluated since they were
 * loaded, and how often each result came out (ruleset.h); and the rules
 * text those positions refer to, for the console's view. */
#include "server/rest_internal.h"

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
