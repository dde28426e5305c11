/* rules_test.c - hearth_rules_test: cases run against a rules document
 * offline, for CI (`hearth rules test CASES.json`). Each case is a read, a
 * set or an update at a path, as an identity, against the initial data;
 * it is judged as the server judges it (the write's data applied first,
 * server values resolved; an update all or nothing) and the rule that
 * decided is named, as the playground does. */
#include "db/db.h"
#include "rules/ruleset.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define MAX_PARTS 64

/* The rules' auth for a case's "auth": null stays null; an object gives
 * {"uid": its uid, "provider": its provider (if any), "token": its
 * "token" object if it has one, else all its claims}. */
static int auth_variable(json_t *given, hearth_node_t **out) {
    *out = NULL;
    if (!given || json_is_null(given))
        return 0;
    json_t *token = json_object_get(given, "token");
    json_t *v = json_pack("{s:O?,s:O}", "uid", json_object_get(given, "uid"),
                          "token", json_is_object(token) ? token : given);
    if (v && json_object_get(given, "provider"))
        json_object_set(v, "provider", json_object_get(given, "provider"));
    int rc = v ? hearth_node_from_jansson(v, 0, out, NULL) : HEARTH_ENOMEM;
    json_decref(v);
    return rc;
}

/* The data after a set or an update of the case, into *after (a new
 * reference), with its full paths parsed into paths (n of them), whose
 * keys point into texts (owned: the caller frees texts[0, n)). */
static int apply_case(const json_t *c, const char *op, const char *path,
                      const hearth_node_t *root, int64_t now,
                      hearth_node_t **after, hearth__path *paths,
                      char **texts, size_t *n, hearth_error_t *err) {
    json_t *data = json_object_get(c, "data");
    hearth__update_parts u = {0};
    const char *one[1] = {path};
    hearth_node_t *value = NULL;
    int rc = 0;
    if (!strcmp(op, "set")) {
        rc = hearth_node_from_jansson(data, HEARTH_JSON_ALLOW_SERVER_VALUES,
                                      &value, err);
        u.n = 1;
        u.paths = one;
        u.values = &value;
    } else {
        rc = hearth__update_parts_from_json(path, data, &u, err);
    }
    *after = hearth_node_incref(root);
    char full[HEARTH_MAX_DEPTH * (HEARTH_MAX_KEY_BYTES + 1) + 2];
    for (size_t i = 0; !rc && i < u.n; i++) {
        if (i >= MAX_PARTS) {
            rc = hearth__error(err, HEARTH_EINVAL, path, "an update of more "
                               "than %d paths", MAX_PARTS);
            break;
        }
        if (!strcmp(op, "set"))
            snprintf(full, sizeof full, "%s", path);
        else
            snprintf(full, sizeof full, "%s/%s", strcmp(path, "/") ? path : "",
                     u.paths[i]);
        const hearth_node_t *existing = NULL;
        hearth_node_t *resolved = NULL;
        *n = i + 1;
        if (!(texts[i] = hearth__strndup(full, strlen(full))))
            rc = hearth__error_code(err, HEARTH_ENOMEM);
        if (!rc)
            rc = hearth__path_parse(texts[i], HEARTH__PATH_ALLOW_PRIORITY,
                                    &paths[i], err);
        if (!rc)
            rc = hearth_node_get(root, full, &existing, err);
        if (!rc)
            rc = hearth__node_resolve_sv(u.values[i], existing, now, &resolved);
        if (!rc)
            rc = hearth_node_set(after, full, resolved, err);
        hearth_node_decref(resolved);
    }
    if (!strcmp(op, "set"))
        hearth_node_decref(value);
    else
        hearth__update_parts_free(&u);
    return rc;
}

/* A case's field, refused with its index and what was wrong. */
static int bad_case(hearth_error_t *err, size_t i, const char *what) {
    return hearth__error(err, HEARTH_EINVAL, NULL, "case %zu: %s", i + 1, what);
}

static int check_case(const json_t *c, size_t i, hearth_error_t *err) {
    if (!json_is_object(c))
        return bad_case(err, i, "must be an object");
    const char *op = json_string_value(json_object_get(c, "op"));
    const char *path = json_string_value(json_object_get(c, "path"));
    const char *expect = json_string_value(json_object_get(c, "expect"));
    json_t *auth = json_object_get(c, "auth"), *data = json_object_get(c, "data");
    if (!op || (strcmp(op, "read") && strcmp(op, "set") && strcmp(op, "update")))
        return bad_case(err, i, "\"op\" must be \"read\", \"set\" or \"update\"");
    hearth__path p;
    if (!path || hearth__path_parse(path, 0, &p, NULL))
        return bad_case(err, i, "\"path\" must be a valid path such as \"/users/ada\"");
    if (!expect || (strcmp(expect, "allow") && strcmp(expect, "deny")))
        return bad_case(err, i, "\"expect\" must be \"allow\" or \"deny\"");
    if (auth && !json_is_null(auth) && !json_is_object(auth))
        return bad_case(err, i, "\"auth\" must be null or an object ({\"uid\": ...})");
    if (!strcmp(op, "set") && !data)
        return bad_case(err, i, "a set needs \"data\"");
    if (!strcmp(op, "update") && !json_is_object(data))
        return bad_case(err, i, "an update needs \"data\", an object of paths");
    return 0;
}

/* Runs case c; its line of the report into cases. */
static int run_case(const hearth__ruleset *rs, const hearth_node_t *root,
                    const json_t *c, size_t i, json_t *cases, bool *ok,
                    hearth_error_t *err) {
    const char *op = json_string_value(json_object_get(c, "op"));
    const char *path = json_string_value(json_object_get(c, "path"));
    const char *expect = json_string_value(json_object_get(c, "expect"));
    hearth_node_t *auth = NULL, *after = NULL;
    int rc = auth_variable(json_object_get(c, "auth"), &auth);
    if (rc)
        return bad_case(err, i, "\"auth\" is not valid data");
    int64_t now = hearth_now_ms();
    hearth__access a = {auth, (double)now, root, NULL};
    hearth__rule_why why;
    bool allowed = false;
    hearth__path paths[MAX_PARTS];
    const hearth__path *ptrs[MAX_PARTS];
    char *texts[MAX_PARTS] = {0};
    size_t n = 0;
    if (!strcmp(op, "read")) {
        hearth__path_parse(path, 0, &paths[0], NULL); /* checked */
        allowed = hearth__ruleset_explain_read(rs, &paths[0], &a, &why);
    } else {
        hearth_error_t inner = {0};
        rc = apply_case(c, op, path, root, now, &after, paths, texts, &n,
                        &inner);
        if (rc) {
            for (size_t k = 0; k < n; k++)
                hearth__free(texts[k]);
            hearth_node_decref(after);
            hearth_node_decref(auth);
            char what[320];
            snprintf(what, sizeof what, "\"data\": %s", inner.message);
            return bad_case(err, i, what);
        }
        for (size_t k = 0; k < n; k++)
            ptrs[k] = &paths[k];
        allowed = hearth__ruleset_explain_write(rs, ptrs, n, after, &a, &why);
        for (size_t k = 0; k < n; k++)
            hearth__free(texts[k]);
    }
    hearth_node_decref(after);
    hearth_node_decref(auth);
    const char *result = allowed ? "allow" : "deny";
    *ok = !strcmp(result, expect);
    json_t *rule = why.kind ? json_pack("{s:s,s:s,s:s}", "kind", why.kind,
                                        "path", why.path, "expression",
                                        why.expression)
                            : json_null();
    json_t *line = json_pack("{s:I,s:s,s:s,s:s,s:s,s:b,s:o}", "case",
                             (json_int_t)(i + 1), "op", op, "path", path,
                             "expect", expect, "result", result, "ok", *ok,
                             "rule", rule);
    if (!line || json_array_append_new(cases, line))
        return hearth__error_code(err, HEARTH_ENOMEM);
    return 0;
}

int hearth_rules_test(const char *rules_text, size_t rules_len,
                      const char *cases_text, size_t cases_len, char **report,
                      hearth_error_t *err) {
    if (!rules_text || !cases_text || !report)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    *report = NULL;
    json_t *doc = NULL, *cases_doc = NULL, *out = NULL;
    hearth__ruleset *rs = NULL;
    hearth_node_t *root = NULL;
    int rc = hearth__rules_parse(rules_text, rules_len, &doc, err);
    if (!rc)
        rc = hearth__ruleset_compile(doc, &rs, err);
    json_error_t jerr;
    if (!rc && !(cases_doc = json_loadb(cases_text, cases_len, 0, &jerr)))
        rc = hearth__error(err, HEARTH_EJSON, NULL,
                           "the cases are not JSON: %s (line %d, column %d)",
                           jerr.text, jerr.line, jerr.column);
    json_t *cases = json_object_get(cases_doc, "cases");
    if (!rc && (!json_is_object(cases_doc) || !json_is_array(cases)))
        rc = hearth__error(err, HEARTH_EINVAL, NULL,
                           "the cases are an object with a \"cases\" array");
    json_t *data = json_object_get(cases_doc, "data");
    hearth_error_t inner = {0};
    if (!rc && hearth_node_from_jansson(data ? data : json_null(), 0, &root,
                                        &inner))
        rc = hearth__error(err, HEARTH_EINVAL, NULL,
                           "\"data\" is not valid data: %s", inner.message);
    size_t i, passed = 0;
    json_t *c;
    json_array_foreach(cases, i, c) {
        if (!rc)
            rc = check_case(c, i, err);
    }
    json_t *lines = rc ? NULL : json_array();
    if (!rc && !lines)
        rc = hearth__error_code(err, HEARTH_ENOMEM);
    json_array_foreach(cases, i, c) {
        bool ok = false;
        if (!rc)
            rc = run_case(rs, root, c, i, lines, &ok, err);
        passed += ok;
    }
    if (!rc) {
        out = json_pack("{s:I,s:I,s:o}", "passed", (json_int_t)passed,
                        "failed", (json_int_t)(json_array_size(cases) - passed),
                        "cases", lines);
        lines = NULL;
        char *text = out ? json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (text) {
            *report = hearth__strndup(text, strlen(text));
            free(text);
        }
        if (!*report)
            rc = hearth__error_code(err, HEARTH_ENOMEM);
    }
    json_decref(lines);
    json_decref(out);
    json_decref(cases_doc);
    json_decref(doc);
    hearth__ruleset_free(rs);
    hearth_node_decref(root);
    return rc;
}
