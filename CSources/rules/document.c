/* document.c - reading a rules document: JSON with comments, a "rules"
 * object, and every rule compiling (so that a bad expression is refused
 * when the document is loaded, with the old rules still in force); and
 * the read rules' `query` variable from a query's wire form. */
#include "rules/ruleset.h"

#include "tree/json.h"

#include <jansson.h>
#include <string.h>

/* Copies text without // and block comments, leaving strings alone. */
static char *strip_comments(const char *text, size_t len) {
    char *out = hearth__malloc(len + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            out[o++] = c;
            if (c == '\\' && i + 1 < len)
                out[o++] = text[++i];
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
            out[o++] = c;
        } else if (c == '/' && i + 1 < len && text[i + 1] == '/') {
            while (i < len && text[i] != '\n')
                i++;
            out[o++] = '\n';
        } else if (c == '/' && i + 1 < len && text[i + 1] == '*') {
            i += 2;
            while (i + 1 < len && !(text[i] == '*' && text[i + 1] == '/'))
                out[o++] = text[i++] == '\n' ? '\n' : ' ';
            i++;
        } else {
            out[o++] = c;
        }
    }
    out[o] = '\0';
    return out;
}

int hearth__rules_parse(const char *text, size_t len, json_t **out,
                        hearth_error_t *err) {
    char *clean = strip_comments(text, len);
    if (!clean)
        return hearth__error_code(err, HEARTH_ENOMEM);
    json_t *doc;
    int rc = hearth__json_load(clean, strlen(clean), &doc, err);
    hearth__free(clean);
    if (rc)
        return rc;
    hearth__ruleset *rs = NULL;
    rc = hearth__ruleset_compile(doc, &rs, err);
    hearth__ruleset_free(rs);
    if (rc) {
        json_decref(doc);
        return rc;
    }
    *out = doc;
    return 0;
}

int hearth_rules_check(const char *text, size_t len, hearth_error_t *err) {
    if (!text)
        return hearth__error(err, HEARTH_EINVAL, NULL, "text is NULL");
    json_t *doc = NULL;
    int rc = hearth__rules_parse(text, len == (size_t)-1 ? strlen(text) : len,
                                 &doc, err);
    if (!rc)
        json_decref(doc);
    return rc;
}


/* Each field of the rules' query: the order, the bounds, the limits. */
hearth_node_t *hearth__rules_query_variable(const json_t *q) {
    const char *i = json_string_value(json_object_get(q, "i"));
    json_t *sp = json_object_get(q, "sp"), *ep = json_object_get(q, "ep");
    json_t *l = json_object_get(q, "l");
    const char *vf = json_string_value(json_object_get(q, "vf"));
    bool key = i && !strcmp(i, ".key"), value = i && !strcmp(i, ".value");
    bool prio = i && !strcmp(i, ".priority");
    json_t *v = json_pack(
        "{s:b,s:b,s:b,s:o,s:O,s:O,s:O,s:O,s:O}", "orderByKey", key,
        "orderByValue", value, "orderByPriority", prio, "orderByChild",
        i && !key && !value && !prio ? json_string(i) : json_null(), "startAt",
        sp ? sp : json_null(), "endAt", ep ? ep : json_null(), "equalTo",
        sp && ep && json_equal(sp, ep) ? sp : json_null(), "limitToFirst",
        l && (!vf || !strcmp(vf, "l")) ? l : json_null(), "limitToLast",
        l && vf && !strcmp(vf, "r") ? l : json_null());
    hearth_node_t *n = NULL;
    if (!v || hearth_node_from_jansson(v, 0, &n, NULL))
        n = NULL;
    json_decref(v);
    return n;
}
