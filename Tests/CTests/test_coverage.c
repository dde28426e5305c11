/* test_coverage.c - the rules' debugging tools: coverage (each rule found
 * at its line and column in a document with comments, counted by result,
 * true, false or error, as real requests evaluate it and not for the
 * playground's hypothetical ones; GET /.inspect/coverage.json on a real
 * server, the admin's only, counting what REST requests made the rules
 * do), and hearth_rules_test's offline cases. */
#include "test.h"

#include "rules/locate.h"
#include "rules/ruleset.h"
#include "server/server.h"

#include <fcntl.h>
#include <jansson.h>
#include <sys/file.h>
#include <unistd.h>

/* Line 1 is the comment; each rule's value starts where the column says
 * (the opening quote, or the boolean). */
static const char *source =
    "// coverage test rules\n"                                /* 1 */
    "{\n"                                                     /* 2 */
    "  \"rules\": {\n"                                        /* 3 */
    "    /* nobody at the root */ \".read\": false,\n"        /* 4 */
    "    \"users\": {\n"                                      /* 5 */
    "      \"$uid\": {\n"                                     /* 6 */
    "        \".read\": \"auth.uid == $uid\",\n"              /* 7 */
    "        \".write\": \"auth != null && auth.uid == $uid\",\n" /* 8 */
    "        \"name\": {\".validate\": \"newData.isString()\"}\n" /* 9 */
    "      }\n"
    "    },\n"
    "    \"never\": {\".read\": \"data.val() > 1\"}\n"        /* 12 */
    "  }\n"
    "}\n";

static hearth__ruleset *compile_src(const char *text) {
    json_t *doc = NULL;
    hearth_error_t err;
    hearth__ruleset *rs = NULL;
    if (hearth__rules_parse(text, strlen(text), &doc, &err) ||
        hearth__ruleset_compile_source(doc, text, strlen(text), &rs, &err)) {
        fprintf(stderr, "  compile: %s\n", err.message);
        test_failures++;
    }
    json_decref(doc);
    return rs;
}

static const hearth__rule_coverage *find(const hearth__rule_coverage *v,
                                         size_t n, const char *where,
                                         const char *kind) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].where, where) && !strcmp(v[i].kind, kind))
            return &v[i];
    fprintf(stderr, "  no %s at %s\n", kind, where);
    test_failures++;
    return NULL;
}

#define CHECK_AT(c, l, col)                                                    \
    do {                                                                       \
        if (c) {                                                               \
            CHECK_INT((c)->line, l);                                           \
            CHECK_INT((c)->column, col);                                       \
        }                                                                      \
    } while (0)

#define CHECK_COUNTS(c, ev, t, f, e)                                           \
    do {                                                                       \
        if (c) {                                                               \
            CHECK_INT((c)->evaluations, ev);                                   \
            CHECK_INT((c)->yes, t);                                            \
            CHECK_INT((c)->no, f);                                             \
            CHECK_INT((c)->error, e);                                          \
        }                                                                      \
    } while (0)

static bool read_as(hearth__ruleset *rs, const char *path, const char *uid,
                    hearth__rule_why *why) {
    char json[64];
    snprintf(json, sizeof json, "{\"uid\":\"%s\"}", uid ? uid : "");
    hearth_node_t *auth = uid ? node_from(json) : NULL;
    hearth_node_t *root = node_from("{\"never\":3}");
    hearth__path p;
    CHECK_INT(hearth__path_parse(path, 0, &p, NULL), 0);
    hearth__access a = {auth, 1e12, root, NULL};
    bool ok = hearth__ruleset_explain_read(rs, &p, &a, why);
    hearth_node_decref(root);
    hearth_node_decref(auth);
    return ok;
}

static void test_rules_coverage_counts(void) {
    hearth__ruleset *rs = compile_src(source);
    if (!rs)
        return;
    CHECK(read_as(rs, "/users/ada", "ada", NULL));  /* root false, $uid true */
    CHECK(!read_as(rs, "/users/ada", "bob", NULL)); /* root false, $uid false */
    CHECK(!read_as(rs, "/users/ada", NULL, NULL));  /* auth null: an error */
    /* The playground's question is not counted. */
    hearth__rule_why why;
    CHECK(read_as(rs, "/users/ada", "ada", &why));
    CHECK_STR(why.path, "/users/$uid");

    hearth__rule_coverage *v = NULL;
    size_t n = 0;
    CHECK_INT(hearth__ruleset_coverage(rs, &v, &n), 0);
    CHECK_INT(n, 5);
    const hearth__rule_coverage *root = find(v, n, "/", ".read");
    CHECK_AT(root, 4, 39);
    CHECK_COUNTS(root, 3, 0, 3, 0);
    if (root)
        CHECK_STR(root->expression, "false");
    const hearth__rule_coverage *r = find(v, n, "/users/$uid", ".read");
    CHECK_AT(r, 7, 18);
    CHECK_COUNTS(r, 3, 1, 1, 1);
    if (r)
        CHECK_STR(r->expression, "auth.uid == $uid");
    const hearth__rule_coverage *w = find(v, n, "/users/$uid", ".write");
    CHECK_AT(w, 8, 19);
    CHECK_COUNTS(w, 0, 0, 0, 0);
    CHECK_AT(find(v, n, "/users/$uid/name", ".validate"), 9, 31);
    CHECK_AT(find(v, n, "/never", ".read"), 12, 24);
    /* In the order they are written. */
    for (size_t i = 1; i < n; i++)
        CHECK(v[i - 1].line < v[i].line ||
              (v[i - 1].line == v[i].line && v[i - 1].column < v[i].column));
    hearth__free(v);

    /* Off (the benchmark's anchor): nothing more is counted. */
    hearth__ruleset_set_counting(rs, false);
    CHECK(read_as(rs, "/users/ada", "ada", NULL));
    CHECK_INT(hearth__ruleset_coverage(rs, &v, &n), 0);
    CHECK_COUNTS(find(v, n, "/", ".read"), 3, 0, 3, 0);
    hearth__free(v);
    hearth__ruleset_free(rs);
}

/* Without its text, positions are those of the indented document. */
static void test_rules_coverage_without_source(void) {
    json_t *doc = json_loads(
        "{\"rules\":{\".read\":true,\"a\":{\".write\":\"auth != null\"}}}", 0,
        NULL);
    hearth__ruleset *rs = NULL;
    hearth_error_t err;
    CHECK_INT(hearth__ruleset_compile_source(doc, NULL, 0, &rs, &err), 0);
    json_decref(doc);
    if (!rs)
        return;
    hearth__rule_coverage *v = NULL;
    size_t n = 0;
    CHECK_INT(hearth__ruleset_coverage(rs, &v, &n), 0);
    CHECK_INT(n, 2);
    /* {\n  "rules": {\n    ".read": true,\n    "a": {\n      ".write": */
    CHECK_AT(find(v, n, "/", ".read"), 3, 14);
    CHECK_AT(find(v, n, "/a", ".write"), 5, 17);
    CHECK(strstr(hearth__ruleset_source(rs), "\"auth != null\"") != NULL);
    hearth__free(v);
    hearth__ruleset_free(rs);
}

/* The scanner refuses what it cannot follow, and keeps the last of two
 * equal keys (as the parser does). */
static void test_rules_locate_edges(void) {
    hearth__rule_sites *s = NULL;
    const char *bad[] = {"", "{", "{\"rules\": {\".read\": }", "[1,",
                         "{\"rules\": \"x}", "{} x"};
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(bad); i++) {
        CHECK_INT(hearth__rule_sites_find(bad[i], strlen(bad[i]), &s),
                  HEARTH_EINVAL);
    }
    const char *twice = "{\"rules\": {\".read\": true,\n\".read\": false}}";
    CHECK_INT(hearth__rule_sites_find(twice, strlen(twice), &s), 0);
    int line, col;
    CHECK(hearth__rule_sites_lookup(s, "/", ".read", &line, &col));
    CHECK_INT(line, 2);
    CHECK_INT(col, 10);
    CHECK(!hearth__rule_sites_lookup(s, "/", ".write", &line, &col));
    CHECK_INT(line, 0);
    hearth__rule_sites_free(s);
}

/* ---- over HTTP ---- */

/* The test's rules text into dir.rules (its path into out). */
static void write_rules_file(const char *dir, char *out, size_t size) {
    snprintf(out, size, "%s.rules", dir);
    FILE *f = fopen(out, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(source, f);
        fclose(f);
    }
}

/* A server keeping its data in dir (a mkdtemp template, filled in), and
 * the test's rules text in a file beside it (its path into rules_path). */
static hearth_server_t *start_with_rules_file(char *dir, char *rules_path,
                                              size_t size) {
    CHECK(mkdtemp(dir) != NULL);
    hearth_server_config_t c = {.size = sizeof c};
    hearth_server_t *s = start_test_server(c, dir);
    write_rules_file(dir, rules_path, size);
    return s;
}

/* The coverage list of ns, as the admin; the test fails when it is not
 * one. */
static json_t *coverage_of(int port, const char *ns) {
    char *out = test_sh_out("curl -s -H 'Authorization: Bearer owner' "
                            "'http://127.0.0.1:%d/.inspect/coverage.json?ns=%s'",
                            port, ns);
    json_t *list = json_loads(out, 0, NULL);
    CHECK(json_is_array(list));
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) { /* every entry adds up */
        CHECK(json_is_integer(json_object_get(e, "line")) &&
              json_is_integer(json_object_get(e, "column")));
        json_t *res = json_object_get(e, "results");
        CHECK_INT(json_integer_value(json_object_get(e, "evaluations")),
                  json_integer_value(json_object_get(res, "true")) +
                      json_integer_value(json_object_get(res, "false")) +
                      json_integer_value(json_object_get(res, "error")));
    }
    free(out);
    return list;
}

static json_t *entry_of(json_t *list, const char *expression) {
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        const char *x = json_string_value(json_object_get(e, "expression"));
        if (x && !strcmp(x, expression))
            return e;
    }
    fprintf(stderr, "  no entry for %s\n", expression);
    test_failures++;
    return NULL;
}

static long long result(json_t *e, const char *which) {
    return json_integer_value(json_object_get(json_object_get(e, "results"),
                                              which));
}

static void test_coverage_endpoint(void) {
    char dir[] = "/tmp/hearth-coverage-XXXXXX", rules_path[128];
    hearth_server_t *s = start_with_rules_file(dir, rules_path, sizeof rules_path);
    if (!s)
        return;
    int port = hearth_server_port(s);
    char *out = test_sh_out("curl -s -o /dev/null -w '%%{http_code}' -X PUT "
                       "-H 'Authorization: Bearer owner' --data-binary @%s "
                       "'http://127.0.0.1:%d/.settings/rules.json?ns=cov'",
                       rules_path, port);
    CHECK_STR(out, "200");
    free(out);
    /* Two anonymous reads the rules refuse (auth null: an error at $uid). */
    for (int i = 0; i < 2; i++) {
        out = test_sh_out("curl -s -o /dev/null -w '%%{http_code}' "
                     "'http://127.0.0.1:%d/users/ada.json?ns=cov'", port);
        CHECK_STR(out, "401");
        free(out);
    }
    /* Not the admin: refused, and nothing told. */
    out = test_sh_out("curl -s -w ' %%{http_code}' "
                 "'http://127.0.0.1:%d/.inspect/coverage.json?ns=cov'", port);
    CHECK(strstr(out, " 401") && !strstr(out, "auth.uid"));
    free(out);
    json_t *list = coverage_of(port, "cov");
    CHECK_INT(json_array_size(list), 5);
    json_t *e = entry_of(list, "auth.uid == $uid");
    CHECK_INT(json_integer_value(json_object_get(e, "line")), 7);
    CHECK_INT(json_integer_value(json_object_get(e, "column")), 18);
    CHECK_INT(json_integer_value(json_object_get(e, "evaluations")), 2);
    CHECK_INT(result(e, "error"), 2);
    e = entry_of(list, "false"); /* the root's .read */
    CHECK_INT(json_integer_value(json_object_get(e, "evaluations")), 2);
    CHECK_INT(result(e, "false"), 2);
    e = entry_of(list, "auth != null && auth.uid == $uid");
    CHECK_INT(json_integer_value(json_object_get(e, "evaluations")), 0);
    json_decref(list);
    /* An anonymous write the .write rule refuses. */
    out = test_sh_out("curl -s -o /dev/null -w '%%{http_code}' -X PUT -d '{\"name\":1}' "
                 "'http://127.0.0.1:%d/users/ada.json?ns=cov'", port);
    CHECK_STR(out, "401");
    free(out);
    list = coverage_of(port, "cov");
    e = entry_of(list, "auth != null && auth.uid == $uid");
    long long ev = json_integer_value(json_object_get(e, "evaluations"));
    CHECK(ev >= 1 && result(e, "false") == ev);
    json_decref(list);
    /* The text the positions refer to. */
    out = test_sh_out("curl -s -H 'Authorization: Bearer owner' "
                 "'http://127.0.0.1:%d/.inspect/rules.txt?ns=cov'", port);
    CHECK_STR(out, source);
    free(out);
    /* New rules: the counts start again. */
    out = test_sh_out("curl -s -o /dev/null -X PUT -H 'Authorization: Bearer owner' "
                 "-d '{\"rules\":{\".read\":true}}' "
                 "'http://127.0.0.1:%d/.settings/rules.json?ns=cov'; "
                 "curl -s -H 'Authorization: Bearer owner' "
                 "'http://127.0.0.1:%d/.inspect/coverage.json?ns=cov'",
                 port, port);
    CHECK_STR(out, "[{\"line\":1,\"column\":19,\"expression\":\"true\","
                   "\"evaluations\":0,\"results\":{\"true\":0,\"false\":0,"
                   "\"error\":0},\"rule\":\".read\",\"path\":\"/\"}]");
    free(out);
    hearth_server_stop(s);
    unlink(rules_path);
    remove_tree(dir);
}

/* ---- denial traces ---- */

static void test_rules_trace(void) {
    hearth__ruleset *rs = compile_src(source);
    if (!rs)
        return;
    hearth_node_t *auth = node_from("{\"uid\":\"bob\"}");
    hearth_node_t *root = node_from("{\"never\":3}");
    hearth__access a = {auth, 1e12, root, NULL};
    hearth__path p;
    hearth__path_parse("/users/ada", 0, &p, NULL);
    hearth__buf b;
    hearth__buf_init(&b);
    CHECK(!hearth__ruleset_trace_read(rs, &p, &a, &b));
    hearth__buf_addc(&b, '\0');
    json_t *t = json_loads(b.data, 0, NULL);
    if (!t)
        fprintf(stderr, "  trace: %s\n", b.data);
    CHECK_INT(json_array_size(t), 2);
    json_t *root_rule = json_array_get(t, 0), *uid_rule = json_array_get(t, 1);
    CHECK_STR(json_string_value(json_object_get(root_rule, "expression")), "false");
    CHECK_STR(json_string_value(json_object_get(root_rule, "result")), "false");
    CHECK_INT(json_integer_value(json_object_get(uid_rule, "line")), 7);
    CHECK_STR(json_string_value(json_object_get(uid_rule, "path")), "/users/$uid");
    char *values = json_dumps(json_object_get(uid_rule, "values"), JSON_COMPACT);
    CHECK_STR(values, "[{\"text\":\"auth\",\"value\":{\"uid\":\"bob\"}},"
                      "{\"text\":\"auth.uid\",\"value\":\"bob\"},"
                      "{\"text\":\"$uid\",\"value\":\"ada\"},"
                      "{\"text\":\"auth.uid == $uid\",\"value\":false}]");
    free(values);
    json_decref(t);
    /* Not counted: the request was, when it was denied. */
    hearth__rule_coverage *v = NULL;
    size_t n = 0;
    CHECK_INT(hearth__ruleset_coverage(rs, &v, &n), 0);
    CHECK_COUNTS(find(v, n, "/users/$uid", ".read"), 0, 0, 0, 0);
    hearth__free(v);
    /* A write: the .validate that failed, with its snapshot's value. */
    hearth__buf_free(&b);
    hearth__buf_init(&b);
    hearth_node_t *after = node_from("{\"users\":{\"bob\":{\"name\":5}}}");
    hearth__path_parse("/users/bob/name", 0, &p, NULL);
    const hearth__path *pp = &p;
    CHECK(!hearth__ruleset_trace_write(rs, &pp, 1, after, &a, &b));
    hearth__buf_addc(&b, '\0');
    t = json_loads(b.data, 0, NULL);
    json_t *last = json_array_get(t, json_array_size(t) - 1);
    CHECK_STR(json_string_value(json_object_get(last, "rule")), ".validate");
    CHECK_STR(json_string_value(json_object_get(last, "result")), "false");
    json_t *snap = json_array_get(json_object_get(last, "values"), 0);
    CHECK_STR(json_string_value(json_object_get(snap, "text")), "newData");
    CHECK_INT(json_integer_value(json_object_get(snap, "value")), 5);
    CHECK_STR(json_string_value(json_object_get(snap, "snapshot")), "/users/bob/name");
    json_decref(t);
    hearth__buf_free(&b);
    hearth_node_decref(after);
    hearth_node_decref(auth);
    hearth_node_decref(root);
    hearth__ruleset_free(rs);
}

/* Denial traces over HTTP: off (nothing kept) until the admin turns
 * them on; then each refusal, by door, with the identity's claims and the
 * rules tried, while the caller still gets only "Permission denied". */
static void test_denial_traces(void) {
    char dir[] = "/tmp/hearth-denials-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    hearth_server_config_t c = {.size = sizeof c, .log_format = HEARTH_LOG_JSON};
    char log_path[64];
    snprintf(log_path, sizeof log_path, "%s.log", dir);
    int saved = test_capture_stderr(log_path);
    hearth_server_t *s = start_test_server(c, dir);
    if (!s) {
        test_restore_stderr(saved);
        return;
    }
    int port = hearth_server_port(s);
    char rules_path[128];
    write_rules_file(dir, rules_path, sizeof rules_path);
    /* An unsigned token (no keys configured) for bob, with a claim. */
    const char *bob = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0."
                      "eyJzdWIiOiJib2IiLCJ1aWQiOiJib2IiLCJ0ZWFtIjoicmVkIn0.";
    char *out = test_sh_out(
        "curl -s -o /dev/null -X PUT -H 'Authorization: Bearer owner' "
        "--data-binary @%s 'http://127.0.0.1:%d/.settings/rules.json?ns=den'; "
        "curl -s 'http://127.0.0.1:%d/users/ada.json?ns=den&auth=%s'; "
        "curl -s -H 'Authorization: Bearer owner' "
        "'http://127.0.0.1:%d/.inspect/denials.json?ns=den'",
        rules_path, port, port, bob, port);
    CHECK_STR(out, "{\"error\":\"Permission denied\"}"
                   "{\"tracing\":false,\"denials\":[]}");
    free(out);
    out = test_sh_out(
        "curl -s -X PUT -H 'Authorization: Bearer owner' -d '{\"tracing\":true}' "
        "'http://127.0.0.1:%d/.inspect/denials.json?ns=den' >/dev/null; "
        "curl -s 'http://127.0.0.1:%d/users/ada.json?ns=den&auth=%s'; "
        "curl -s -X PUT -d '{\"name\":\"x\"}' "
        "'http://127.0.0.1:%d/users/ada.json?ns=den'; "
        "curl -s -X PUT -d 5 "
        "'http://127.0.0.1:%d/users/bob/name.json?ns=den&auth=%s'",
        port, port, bob, port, port, bob);
    CHECK_STR(out, "{\"error\":\"Permission denied\"}"
                   "{\"error\":\"Permission denied\"}"
                   "{\"error\":\"Permission denied\"}");
    free(out);
    out = test_sh_out("curl -s -w ' %%{http_code}' "
                      "'http://127.0.0.1:%d/.inspect/denials.json?ns=den'", port);
    CHECK(strstr(out, " 401") && !strstr(out, "tracing"));
    free(out);
    out = test_sh_out("curl -s -H 'Authorization: Bearer owner' "
                      "'http://127.0.0.1:%d/.inspect/denials.json?ns=den'", port);
    json_t *d = json_loads(out, 0, NULL);
    free(out);
    CHECK(json_is_true(json_object_get(d, "tracing")));
    json_t *list = json_object_get(d, "denials");
    CHECK_INT(json_array_size(list), 3);
    json_t *read = json_array_get(list, 0), *early = json_array_get(list, 1);
    json_t *judged = json_array_get(list, 2);
    CHECK_STR(json_string_value(json_object_get(read, "door")), "rest");
    CHECK_STR(json_string_value(json_object_get(read, "op")), "read");
    CHECK_STR(json_string_value(json_array_get(json_object_get(read, "paths"), 0)),
              "/users/ada");
    json_t *who = json_object_get(read, "identity");
    CHECK_STR(json_string_value(json_object_get(who, "uid")), "bob");
    CHECK_STR(json_string_value(json_object_get(json_object_get(who, "token"), "team")),
              "red");
    json_t *rules = json_object_get(read, "rules");
    json_t *last = json_array_get(rules, json_array_size(rules) - 1);
    CHECK_STR(json_string_value(json_object_get(last, "expression")),
              "auth.uid == $uid");
    CHECK_INT(json_integer_value(json_object_get(last, "line")), 7);
    CHECK(json_is_null(json_object_get(early, "identity"))); /* nobody */
    CHECK_STR(json_string_value(json_object_get(early, "op")), "write");
    CHECK_STR(json_string_value(json_object_get(judged, "door")), "rest");
    rules = json_object_get(judged, "rules");
    last = json_array_get(rules, json_array_size(rules) - 1);
    CHECK_STR(json_string_value(json_object_get(last, "rule")), ".validate");
    json_decref(d);
    /* Off again: what was kept goes. */
    out = test_sh_out(
        "curl -s -X PUT -H 'Authorization: Bearer owner' -d '{\"tracing\":false}' "
        "'http://127.0.0.1:%d/.inspect/denials.json?ns=den'; "
        "curl -s -o /dev/null -w ' %%{http_code}' -X PUT -H 'Authorization: Bearer owner' "
        "-d '{\"tracing\":1}' 'http://127.0.0.1:%d/.inspect/denials.json?ns=den'",
        port, port);
    CHECK_STR(out, "{\"tracing\":false,\"denials\":[]} 400");
    free(out);
    hearth_server_stop(s);
    test_restore_stderr(saved);
    /* The JSON log had each denial, and never the token. */
    size_t len;
    char *logged = read_file(log_path, &len);
    int denials = 0;
    for (char *line = logged; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        json_t *j = json_loads(line, 0, NULL);
        const char *kind = json_string_value(json_object_get(j, "log"));
        denials += kind && !strcmp(kind, "denial");
        json_decref(j);
        line = end ? end + 1 : line + strlen(line);
    }
    CHECK_INT(denials, 3);
    CHECK(logged && !strstr(logged, "eyJ"));
    free(logged);
    unlink(log_path);
    unlink(rules_path);
    remove_tree(dir);
}

/* Whether the server has let go of the store in dir (its LOCK can be
 * taken): the namespace closed. */
static bool released(const char *dir) {
    char lock[160];
    snprintf(lock, sizeof lock, "%s/LOCK", dir);
    int fd = open(lock, O_RDWR);
    bool free = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (fd >= 0)
        close(fd); /* releases it again */
    return free;
}

/* A namespace nobody uses closes (its files released: the barrier) and
 * opens again on the next request with the same rules: the coverage counts
 * and the denials kept go on. */
static void test_inspection_survives_idle_close(void) {
    char dir[] = "/tmp/hearth-inspect-idle-XXXXXX", rules_path[128];
    hearth_server_t *s = start_with_rules_file(dir, rules_path, sizeof rules_path);
    if (!s)
        return;
    int port = hearth_server_port(s);
    hearth__server_set_namespace_idle_ms(s, 0);
    /* Data makes the store, whose lock is held while the namespace is
     * open. */
    char *out = test_sh_out(
        "curl -s -o /dev/null -X PUT -H 'Authorization: Bearer owner' -d 1 "
        "'http://127.0.0.1:%d/x.json?ns=idle'; "
        "curl -s -o /dev/null -X PUT -H 'Authorization: Bearer owner' "
        "--data-binary @%s 'http://127.0.0.1:%d/.settings/rules.json?ns=idle'; "
        "curl -s -o /dev/null -X PUT -H 'Authorization: Bearer owner' -d '{\"tracing\":true}' "
        "'http://127.0.0.1:%d/.inspect/denials.json?ns=idle'; "
        "curl -s 'http://127.0.0.1:%d/users/ada.json?ns=idle'",
        port, rules_path, port, port, port);
    CHECK_STR(out, "{\"error\":\"Permission denied\"}");
    free(out);
    char nsdir[96];
    snprintf(nsdir, sizeof nsdir, "%s/idle", dir);
    int i = 0;
    for (; i < 500 && !released(nsdir); i++)
        usleep(10000);
    CHECK(i < 500); /* closed: its store is let go */
    json_t *list = coverage_of(port, "idle");
    json_t *e = entry_of(list, "auth.uid == $uid");
    CHECK_INT(json_integer_value(json_object_get(e, "evaluations")), 1);
    CHECK_INT(result(e, "error"), 1);
    json_decref(list);
    out = test_sh_out("curl -s -H 'Authorization: Bearer owner' "
                      "'http://127.0.0.1:%d/.inspect/denials.json?ns=idle'", port);
    json_t *d = json_loads(out, 0, NULL);
    CHECK(json_is_true(json_object_get(d, "tracing")));
    CHECK_INT(json_array_size(json_object_get(d, "denials")), 1);
    json_decref(d);
    free(out);
    hearth__server_set_namespace_idle_ms(s, 60000);
    hearth_server_stop(s);
    unlink(rules_path);
    remove_tree(dir);
}

/* ---- rules cases offline ---- */

static void test_rules_cases(void) {
    const char *cases =
        "{\"data\": {\"users\": {\"ada\": {\"name\": \"Ada\"}}},"
        " \"cases\": ["
        "  {\"op\": \"read\", \"path\": \"/users/ada\", \"auth\": {\"uid\": \"ada\"},"
        "   \"expect\": \"allow\"},"
        "  {\"op\": \"read\", \"path\": \"/users/ada\", \"auth\": null,"
        "   \"expect\": \"allow\"},"
        "  {\"op\": \"set\", \"path\": \"/users/ada/name\", \"auth\": {\"uid\": \"ada\"},"
        "   \"data\": 5, \"expect\": \"deny\"},"
        "  {\"op\": \"update\", \"path\": \"/users/ada\", \"auth\": {\"uid\": \"ada\"},"
        "   \"data\": {\"name\": \"Ada L\"}, \"expect\": \"allow\"}"
        " ]}";
    char *report = NULL;
    hearth_error_t err = {0};
    CHECK_INT(hearth_rules_test(source, strlen(source), cases, strlen(cases),
                                &report, &err),
              0);
    json_t *r = json_loads(report ? report : "", 0, NULL);
    CHECK_INT(json_integer_value(json_object_get(r, "passed")), 3);
    CHECK_INT(json_integer_value(json_object_get(r, "failed")), 1);
    json_t *lines = json_object_get(r, "cases");
    CHECK_INT(json_array_size(lines), 4);
    json_t *second = json_array_get(lines, 1);
    CHECK_STR(json_string_value(json_object_get(second, "result")), "deny");
    CHECK(json_is_false(json_object_get(second, "ok")));
    json_t *rule = json_object_get(second, "rule");
    CHECK_STR(json_string_value(json_object_get(rule, "kind")), ".read");
    CHECK_STR(json_string_value(json_object_get(rule, "path")), "/users/$uid");
    CHECK_STR(json_string_value(json_object_get(rule, "expression")),
              "auth.uid == $uid");
    /* The set of a number as the name: the .validate below decides. */
    rule = json_object_get(json_array_get(lines, 2), "rule");
    CHECK_STR(json_string_value(json_object_get(rule, "kind")), ".validate");
    CHECK_STR(json_string_value(json_object_get(rule, "path")), "/users/$uid/name");
    CHECK(json_is_true(json_object_get(json_array_get(lines, 3), "ok")));
    json_decref(r);
    hearth_free(report);

    /* Bad cases are refused naming the case and the field. */
    static const struct {
        const char *cases, *why;
    } bad[] = {
        {"[]", "\"cases\" array"},
        {"{\"cases\": [{\"op\": \"write\", \"path\": \"/a\", \"expect\": \"allow\"}]}",
         "case 1: \"op\""},
        {"{\"cases\": [{\"op\": \"read\", \"path\": \"/a\", \"expect\": \"allow\"},"
         " {\"op\": \"read\", \"path\": \"a[\", \"expect\": \"allow\"}]}",
         "case 2: \"path\""},
        {"{\"cases\": [{\"op\": \"read\", \"path\": \"/a\", \"expect\": \"yes\"}]}",
         "case 1: \"expect\""},
        {"{\"cases\": [{\"op\": \"update\", \"path\": \"/a\", \"data\": 1,"
         " \"expect\": \"deny\"}]}", "case 1: an update needs"},
        {"{\"cases\": [{\"op\": \"read\", \"path\": \"/a\", \"auth\": 3,"
         " \"expect\": \"deny\"}]}", "case 1: \"auth\""},
        {"{\"cases\": ", "not JSON"},
    };
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(bad); i++) {
        report = NULL;
        CHECK(hearth_rules_test(source, strlen(source), bad[i].cases,
                                strlen(bad[i].cases), &report, &err) != 0);
        CHECK(report == NULL);
        if (!strstr(err.message, bad[i].why))
            fprintf(stderr, "  %s: got \"%s\"\n", bad[i].cases, err.message);
        CHECK(strstr(err.message, bad[i].why) != NULL);
    }
}

const test_case coverage_tests[] = {
    {"rules_trace", test_rules_trace},
    {"rules_denial_traces", test_denial_traces},
    {"rules_inspection_survives_idle_close", test_inspection_survives_idle_close},
    {"rules_cases", test_rules_cases},
    {"rules_coverage_counts", test_rules_coverage_counts},
    {"rules_coverage_without_source", test_rules_coverage_without_source},
    {"rules_locate_edges", test_rules_locate_edges},
    {"rules_coverage_endpoint", test_coverage_endpoint},
    {NULL, NULL},
};
