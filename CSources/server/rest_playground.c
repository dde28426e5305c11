/* rest_playground.c - the rules playground (POST /.settings/playground):
 * would a read, a set or an update at a path, by a given auth, with given
 * data, be allowed by the namespace's rules as they are now? The answer
 * names the rule that decided; nothing is written. Admin only. */
#include "server/rest_internal.h"

#include <stdio.h>
#include <string.h>

/* The request body, checked: {"op": "read"|"set"|"update", "path": "/a",
 * "auth": null or the rules' auth object, "data": the value written}. */
typedef struct question {
    const char *op, *path;
    hearth__principal as;
    json_t *data; /* borrowed from the document */
} question;

/* Reads the question from doc into *q; the problem (a 400) or NULL. */
static const char *read_question(json_t *doc, question *q) {
    if (!json_is_object(doc))
        return "the body must be a JSON object {\"op\", \"path\", \"auth\", "
               "\"data\"}";
    q->op = json_string_value(json_object_get(doc, "op"));
    if (!q->op || (strcmp(q->op, "read") && strcmp(q->op, "set") &&
                   strcmp(q->op, "update")))
        return "op must be \"read\", \"set\" or \"update\"";
    q->path = json_string_value(json_object_get(doc, "path"));
    if (!q->path || hearth_validate_path(q->path, NULL))
        return "path must be a valid path such as \"/users/ada\"";
    json_t *auth = json_object_get(doc, "auth");
    if (auth && !json_is_null(auth)) {
        if (!json_is_object(auth) ||
            hearth_node_from_jansson(auth, 0, &q->as.auth, NULL))
            return "auth must be null (unauthenticated) or an object such as "
                   "{\"uid\": \"ada\", \"token\": {...claims}}";
    }
    q->data = json_object_get(doc, "data");
    if (strcmp(q->op, "read") && !q->data)
        return "data is required for a set or an update";
    if (!strcmp(q->op, "update") && !json_is_object(q->data))
        return "data of an update must be an object of paths to values";
    return NULL;
}

/* Whether an update's parts are valid paths (below q->path) and data. */
static bool update_ok(const question *q) {
    hearth__update_parts u;
    bool ok = !hearth__update_parts_from_json(q->path, q->data, &u, NULL);
    for (size_t i = 0; ok && i < u.n; i++) {
        char path[HEARTH_MAX_DEPTH * (HEARTH_MAX_KEY_BYTES + 1) + 2];
        int n = snprintf(path, sizeof path, "/%s", u.paths[i]);
        ok = n > 0 && (size_t)n < sizeof path && !hearth_validate_path(path, NULL);
    }
    hearth__update_parts_free(&u);
    return ok;
}

/* Asks the rules; false with *problem when the data is not valid data. */
static bool judge(rest *r, question *q, hearth__rule_why *why, bool *allowed,
                  const char **problem) {
    if (!strcmp(q->op, "read")) {
        *allowed = hearth__ns_explain_read(r->ns, &q->as, q->path, NULL, why);
        return true;
    }
    if (!strcmp(q->op, "update")) {
        if (!update_ok(q)) {
            *problem = "data of an update must map valid paths to valid data";
            return false;
        }
        *allowed = hearth__ns_explain_update(r->ns, &q->as, q->path, q->data,
                                             why);
        return true;
    }
    hearth_node_t *value = NULL;
    if (hearth_node_from_jansson(q->data, HEARTH_JSON_ALLOW_SERVER_VALUES,
                                 &value, NULL)) {
        *problem = "data must be valid data (keys, depth, numbers)";
        return false;
    }
    const hearth_node_t *values[1] = {value};
    *allowed = hearth__ns_explain_write(r->ns, &q->as, &q->path, values, 1, why);
    hearth_node_decref(value);
    return true;
}

/* {"allowed": bool, "rule": {"kind", "path", "expression"} or null}. */
static void reply(rest *r, bool allowed, const hearth__rule_why *why) {
    json_t *rule = why->kind ? json_pack("{s:s,s:s,s:s}", "kind", why->kind,
                                         "path", why->path, "expression",
                                         why->expression)
                             : json_null();
    hearth__rest_reply_json(
        r->conn, 200, json_pack("{s:b,s:o}", "allowed", allowed, "rule", rule));
}

void hearth__rest_playground(rest *r) {
    if (!hearth__rest_admin_asks(r, HTTP_POST, "the playground"))
        return;
    json_error_t jerr;
    json_t *doc = json_loadb(r->req->body, r->req->body_len, 0, &jerr);
    question q = {0};
    const char *problem = doc ? read_question(doc, &q) : MSG_BAD_DATA;
    hearth__rule_why why;
    bool allowed = false;
    if (!problem && judge(r, &q, &why, &allowed, &problem))
        reply(r, allowed, &why);
    if (problem)
        hearth__rest_reply_error(r->conn, 400, problem);
    hearth__principal_clear(&q.as);
    json_decref(doc);
}
