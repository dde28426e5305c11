/* test_rules.c - the rules expression language, table-driven: every
 * operator, variable, snapshot method and string method of rules.md, the
 * regex subset, no type coercion, errors as false, and parse errors that
 * name the column and the offending text. */
#include "test.h"

#include "rules/expr.h"
#include "tree/json.h"

#include <jansson.h>

static const char *root_json =
    "{\"users\":{\"ada\":{\"name\":\"Ada\",\"age\":36,\"admin\":true,"
    "\".priority\":5},\"bob\":{\"name\":\"Bob\",\"age\":20}},"
    "\"rooms\":{\"r1\":{\"owner\":\"ada\",\"members\":{\"ada\":true}}},"
    "\"count\":3}";
static const char *new_json =
    "{\"users\":{\"ada\":{\"name\":\"Ada L\",\"age\":37,\"admin\":true},"
    "\"bob\":{\"name\":\"Bob\",\"age\":20}},"
    "\"rooms\":{\"r1\":{\"owner\":\"ada\",\"members\":{\"ada\":true}}},"
    "\"count\":4}";
static const char *auth_json =
    "{\"uid\":\"ada\",\"provider\":\"password\","
    "\"token\":{\"email\":\"ada@example.com\",\"email_verified\":true,"
    "\"admin\":true,\"firebase\":{\"sign_in_provider\":\"google.com\","
    "\"identities\":{\"google.com\":[\"1234\"],\"email\":[\"ada@example.com\"]}}}}";

/* auth_json as the server makes auth: claims' keys kept ("google.com"). */
static hearth_node_t *auth_node(void) {
    json_t *j = json_loads(auth_json, 0, NULL);
    hearth_node_t *n = NULL;
    CHECK_INT(hearth_node_from_jansson(j, HEARTH__JSON_CLAIM_KEYS, &n, NULL), 0);
    json_decref(j);
    return n;
}

typedef struct rule_case {
    const char *expr;
    bool want;
    bool signed_in;
} rule_case;

static const rule_case cases[] = {
    /* literals and operators */
    {"true", true, false},
    {"false", false, false},
    {"1 + 2 == 3", true, false},
    {"7 % 4 === 3 && 8 / 2 == 4 && 3 - 5 == -2 && 2 * 3 == 6", true, false},
    {"'a' + \"b\" == 'ab'", true, false},
    {"1 + '1' == '11'", false, false},  /* no coercion: an error, false */
    {"1 == '1'", false, false},
    {"1 != '1'", true, false},
    {"null == null", true, false},
    {"1 < 2 && 2 <= 2 && 3 > 2 && 3 >= 3", true, false},
    {"'abc' < 'abd'", true, false},
    {"1 < 'a'", false, false},
    {"!false && !(1 > 2)", true, false},
    {"!1", false, false},
    {"true ? 1 == 1 : false", true, false},
    {"false ? true : 2 > 1", true, false},
    {"1 ? true : true", false, false},
    {"false && (1 + 'x' == 3)", false, false}, /* short circuit */
    {"true || 1 + 'x'", true, false},
    {"1 / 0 > 0", false, false},               /* no infinities */
    {"(1 + 2) * 3 == 9 && 1 + 2 * 3 == 7", true, false},
    /* variables */
    {"auth == null", true, false},
    {"auth != null && auth.uid == 'ada'", true, true},
    {"auth.token.email_verified == true && auth.token.admin === true", true, true},
    {"auth.token.missing == null", true, true},
    /* a[b]: keys that are not names, as the service's docs index them */
    {"auth.token.firebase.identities['google.com'][0] == '1234'", true, true},
    {"auth.token['email'] == 'ada@example.com' && auth['uid'] == 'ada'", true, true},
    {"auth.token.firebase['sign_in_' + 'provider'] == 'google.com'", true, true},
    {"auth.token.firebase.identities['google.com'][1] == null", true, true},
    {"auth.token.firebase.identities.email[0.5] == null", false, true},
    {"auth.token[true] == null", false, true},
    {"data['users'] == null", false, true}, /* snapshots: child() only */
    {"auth.uid == 'ada'", false, false},       /* auth null: an error */
    {"now > 1600000000000", true, false},
    {"$user == 'ada'", true, false},
    {"$room == 'r1'", false, false},           /* unbound */
    /* snapshots */
    {"data.child('name').val() == 'Ada'", true, false},
    {"newData.child('name').val() == 'Ada L'", true, false},
    {"data.val() == 1", false, false},         /* an object's val(): error */
    {"data.exists() && !data.child('nope').exists()", true, false},
    {"data.hasChild('age') && !data.hasChild('zzz')", true, false},
    {"data.hasChildren() && data.hasChildren(['name', 'age'])", true, false},
    {"data.hasChildren(['name', 'zzz'])", false, false},
    {"data.child('age').isNumber() && data.child('name').isString() && "
     "data.child('admin').isBoolean()",
     true, false},
    {"data.child('age').isString()", false, false},
    {"data.getPriority() == 5", true, false},
    {"data.parent().child('bob/age').val() == 20", true, false},
    {"data.parent().parent().child('count').val() == 3", true, false},
    {"root.child('rooms/r1/owner').val() == $user", true, false},
    {"root.child('rooms').child('r1').child('members').hasChild(auth.uid)", true, true},
    {"newData.parent().parent().child('count').val() == data.parent().parent()"
     ".child('count').val() + 1",
     true, false},
    {"newData.child('age').val() > data.child('age').val()", true, false},
    {"root.parent() == null", false, false},  /* no parent of the root */
    /* strings */
    {"'hello'.length == 5", true, false},
    {"'héllo'.length == 5", true, false},
    {"'a😀'.length == 3", true, false},       /* UTF-16 units, as JavaScript */
    {"'hello'.contains('ell') && 'hello'.beginsWith('he') && "
     "'hello'.endsWith('lo')",
     true, false},
    {"'hello'.beginsWith('lo')", false, false},
    {"'a.b.c'.replace('.', '/') == 'a/b/c'", true, false},
    {"'MiXed'.toLowerCase() == 'mixed' && 'MiXed'.toUpperCase() == 'MIXED'", true, false},
    {"data.child('name').val().toLowerCase() == 'ada'", true, false},
    {"'abc'.contains(1)", false, false},
    {"'x'.nope('y')", false, false},
    /* regexes */
    {"'ada@example.com'.matches(/^[^@]+@[^@]+\\.com$/)", true, false},
    {"'2024-01-31'.matches(/^\\d\\d\\d\\d-\\d\\d-\\d\\d$/)", true, false},
    {"'2024-1-31'.matches(/^\\d\\d\\d\\d-\\d\\d-\\d\\d$/)", false, false},
    {"'HeLLo'.matches(/^hello$/i)", true, false},
    {"'HeLLo'.matches(/^hello$/)", false, false},
    {"'a b'.matches(/\\s/) && 'ab'.matches(/^\\w+$/) && !'a-b'.matches(/^\\w+$/)", true, false},
    {"'x1'.matches(/[\\d_]/)", true, false},
    {"'abc'.matches('abc')", false, false},    /* a string is no regex */
};

static void test_expressions(void) {
    hearth_node_t *root = node_from(root_json), *now_root = node_from(new_json);
    hearth_node_t *auth = auth_node();
    const char *names[] = {"$user"}, *keys[] = {"ada"};
    size_t passed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hearth__expr *e = NULL;
        hearth_error_t err;
        int rc = hearth__expr_parse(cases[i].expr, &e, &err);
        if (rc) {
            fprintf(stderr, "  parse of [%s] failed: %s\n", cases[i].expr,
                    err.message);
            test_failures++;
            continue;
        }
        hearth__expr_env env = {.auth = cases[i].signed_in ? auth : NULL,
                                .now = (double)hearth_now_ms(),
                                .root = root, .new_root = now_root,
                                .path = "/users/ada", .wild_names = names,
                                .wild_keys = keys, .nwild = 1};
        bool got = hearth__expr_eval(e, &env);
        if (got != cases[i].want) {
            fprintf(stderr, "  [%s] is %s, expected %s\n", cases[i].expr,
                    got ? "true" : "false", cases[i].want ? "true" : "false");
            test_failures++;
        } else {
            passed++;
        }
        hearth__expr_free(e);
    }
    printf("  rules expressions: %zu of %zu cases\n", passed,
           sizeof cases / sizeof *cases);
    hearth_node_decref(root);
    hearth_node_decref(now_root);
    hearth_node_decref(auth);
}

static void test_query_variable(void) {
    hearth_node_t *q = node_from(
        "{\"orderByKey\":false,\"orderByPriority\":false,\"orderByValue\":false,"
        "\"orderByChild\":\"owner\",\"equalTo\":\"ada\",\"startAt\":null,"
        "\"endAt\":null,\"limitToFirst\":null,\"limitToLast\":10}");
    hearth_node_t *auth = auth_node();
    hearth__expr *e = NULL;
    CHECK_INT(hearth__expr_parse("query.orderByChild == 'owner' && "
                                 "query.equalTo == auth.uid && "
                                 "query.limitToLast <= 10 && query.startAt == null",
                                 &e, NULL),
              0);
    hearth__expr_env env = {.auth = auth, .root = hearth_node_null(),
                            .path = "/rooms", .query = q};
    CHECK(e && hearth__expr_eval(e, &env));
    hearth__expr_free(e);
    hearth_node_decref(q);
    hearth_node_decref(auth);
}

static void test_parse_errors_name_the_place(void) {
    static const struct {
        const char *text;
        int column;
    } bad[] = {
        {"", 1},
        {"1 +", 4},
        {"(1 == 1", 8},
        {"foo == 1", 1},             /* unknown variable */
        {"'unterminated", 1},
        {"1 == 1 1", 8},
        {"data.child('a'", 15},
        {"'a'.matches(/a^b/)", 15},  /* ^ only first */
        {"'a'.matches(/a$b/)", 15},  /* $ only last */
        {"'a'.matches(/a/g)", 16},   /* only the i flag */
        {"'a'.matches(/[\\D]/)", 15},
        {"'a'.matches(/(/)", 13},
        {"data.", 6},
        {"(1)(2)", 4},
        {"'ends in a backslash\\", 1},   /* found by fuzzing: read past */
        {"'a'.matches(/a\\", 13},        /* the end of the text */
        {"auth['a'", 9},
        {"auth[]", 6},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        hearth__expr *e = NULL;
        hearth_error_t err = {0};
        int rc = hearth__expr_parse(bad[i].text, &e, &err);
        if (rc != HEARTH_EINVAL || e) {
            fprintf(stderr, "  [%s] parsed\n", bad[i].text);
            test_failures++;
            hearth__expr_free(e);
            continue;
        }
        if (err.column != bad[i].column || !strstr(err.message, "column")) {
            fprintf(stderr, "  [%s]: column %d (%s), expected %d\n",
                    bad[i].text, err.column, err.message, bad[i].column);
            test_failures++;
        }
    }
}

const test_case rules_tests[] = {
    {"rules_expressions", test_expressions},
    {"rules_query_variable", test_query_variable},
    {"rules_parse_errors_name_the_place", test_parse_errors_name_the_place},
    {NULL, NULL},
};

/* ---- rules documents: reads, writes, validation ---- */

#include "rules/ruleset.h"

#include <jansson.h>

static const char *document =
    "{\"rules\": {"
    "  \".read\": false,"
    "  \"public\": {\".read\": true, \"secret\": {\".read\": false}},"
    "  \"users\": {"
    "    \"$uid\": {"
    "      \".read\": \"auth != null && auth.uid == $uid\","
    "      \".write\": \"auth != null && auth.uid == $uid\","
    "      \".validate\": \"newData.hasChildren(['name'])\","
    "      \"name\": {\".validate\": \"newData.isString() && newData.val().length <= 20\"},"
    "      \"age\": {\".validate\": \"newData.isNumber() && newData.val() >= 0\"}"
    "    },"
    "    \"admin\": {\".read\": \"auth.token.admin === true\"}"
    "  },"
    "  \"rooms\": {\"$room\": {"
    "    \".write\": \"!data.exists() || data.child('owner').val() == auth.uid\","
    "    \"owner\": {\".validate\": \"newData.val() == auth.uid\"}}},"
    "  \"counter\": {\".write\": true,"
    "    \".validate\": \"newData.isNumber() && newData.val() == data.val() + 1\"},"
    "  \"open\": {\".write\": true, \"deep\": {\".write\": false}},"
    "  \"posts\": {\".indexOn\": [\"at\"], \".read\": \"query.orderByChild == 'at' && query.limitToLast <= 50\"}"
    "}}";

static const char *data_json =
    "{\"users\":{\"ada\":{\"name\":\"Ada\"}},\"rooms\":{\"r1\":{\"owner\":\"ada\"}},"
    "\"counter\":3}";

static hearth__ruleset *compile(const char *text) {
    json_t *doc = json_loads(text, 0, NULL);
    hearth__ruleset *rs = NULL;
    hearth_error_t err;
    if (!doc || hearth__ruleset_compile(doc, &rs, &err)) {
        fprintf(stderr, "  compile: %s\n", doc ? err.message : "bad JSON");
        test_failures++;
    }
    json_decref(doc);
    return rs;
}

static hearth_node_t *who(const char *uid, bool admin) {
    if (!uid)
        return NULL;
    char json[128];
    snprintf(json, sizeof json, "{\"uid\":\"%s\",\"token\":{\"admin\":%s}}", uid,
             admin ? "true" : "false");
    return node_from(json);
}

static bool may_read(hearth__ruleset *rs, const char *path, const char *uid,
                     bool admin, const char *query) {
    hearth_node_t *root = node_from(data_json), *auth = who(uid, admin);
    hearth_node_t *q = query ? node_from(query) : NULL;
    hearth__path p;
    hearth__path_parse(path, 0, &p, NULL);
    hearth__access a = {auth, 1e12, root, q};
    bool ok = hearth__ruleset_can_read(rs, &p, &a);
    hearth_node_decref(root);
    hearth_node_decref(auth);
    hearth_node_decref(q);
    return ok;
}

/* A write of (path, json) pairs as one operation. */
static bool may_write(hearth__ruleset *rs, const char *uid, size_t n,
                      const char *const *paths, const char *const *values) {
    hearth_node_t *root = node_from(data_json), *auth = who(uid, false);
    hearth_node_t *now = hearth_node_incref(root);
    hearth__path parsed[4];
    const hearth__path *ptrs[4];
    for (size_t i = 0; i < n; i++) {
        hearth__path_parse(paths[i], 0, &parsed[i], NULL);
        ptrs[i] = &parsed[i];
        hearth_node_t *v = node_from(values[i]);
        hearth_node_set(&now, paths[i], v, NULL);
        hearth_node_decref(v);
    }
    hearth__access a = {auth, 1e12, root, NULL};
    bool ok = hearth__ruleset_can_write(rs, ptrs, n, now, &a);
    hearth_node_decref(root);
    hearth_node_decref(now);
    hearth_node_decref(auth);
    return ok;
}

static bool may_set(hearth__ruleset *rs, const char *uid, const char *path,
                    const char *value) {
    return may_write(rs, uid, 1, &path, &value);
}

static void test_reads_cascade_and_do_not_filter(void) {
    hearth__ruleset *rs = compile(document);
    if (!rs)
        return;
    CHECK(!may_read(rs, "/", NULL, false, NULL));
    CHECK(may_read(rs, "/public", NULL, false, NULL));
    CHECK(may_read(rs, "/public/secret", NULL, false, NULL)); /* no revoking */
    CHECK(may_read(rs, "/users/ada", "ada", false, NULL));
    CHECK(may_read(rs, "/users/ada/name", "ada", false, NULL));
    CHECK(!may_read(rs, "/users/ada", "bob", false, NULL));
    CHECK(!may_read(rs, "/users/ada", NULL, false, NULL));
    CHECK(!may_read(rs, "/users", "ada", false, NULL)); /* not a filter */
    CHECK(may_read(rs, "/users/admin", "bob", true, NULL)); /* literal first */
    CHECK(!may_read(rs, "/users/admin", "admin", false, NULL));
    CHECK(may_read(rs, "/posts", NULL, false,
                   "{\"orderByChild\":\"at\",\"limitToLast\":20}"));
    CHECK(!may_read(rs, "/posts", NULL, false,
                    "{\"orderByChild\":\"at\",\"limitToLast\":100}"));
    CHECK(!may_read(rs, "/posts", NULL, false, NULL)); /* no query: error */
    hearth__ruleset_free(rs);
}

static void test_writes_grant_and_validate(void) {
    hearth__ruleset *rs = compile(document);
    if (!rs)
        return;
    CHECK(may_set(rs, "ada", "/users/ada", "{\"name\":\"Ada\",\"age\":36}"));
    CHECK(!may_set(rs, "bob", "/users/ada", "{\"name\":\"Ada\"}"));
    CHECK(!may_set(rs, NULL, "/users/ada", "{\"name\":\"Ada\"}"));
    CHECK(!may_set(rs, "ada", "/users/ada", "{\"age\":36}")); /* no name */
    CHECK(!may_set(rs, "ada", "/users/ada/name", "\"a name far longer than twenty\""));
    CHECK(!may_set(rs, "ada", "/users/ada/age", "-1"));
    CHECK(may_set(rs, "ada", "/users/ada/age", "37"));
    CHECK(may_set(rs, "ada", "/users/ada", "null")); /* deletes: no validate */
    CHECK(may_set(rs, "bob", "/rooms/r2", "{\"owner\":\"bob\"}"));
    CHECK(!may_set(rs, "bob", "/rooms/r2", "{\"owner\":\"ada\"}"));
    CHECK(!may_set(rs, "bob", "/rooms/r1", "{\"owner\":\"bob\"}")); /* taken */
    CHECK(may_set(rs, "ada", "/rooms/r1/topic", "\"hi\""));
    CHECK(may_set(rs, NULL, "/counter", "4"));
    CHECK(!may_set(rs, NULL, "/counter", "5"));
    CHECK(!may_set(rs, NULL, "/counter", "\"4\""));
    CHECK(may_set(rs, NULL, "/open/deep/x", "1")); /* a grant above holds */
    CHECK(!may_set(rs, NULL, "/elsewhere", "1"));
    /* A multi-path update: all or nothing, against the merged data. */
    const char *paths[] = {"/users/ada/name", "/counter"};
    const char *good[] = {"\"Ada L\"", "4"}, *bad[] = {"\"Ada L\"", "6"};
    CHECK(may_write(rs, "ada", 2, paths, good));
    CHECK(!may_write(rs, "ada", 2, paths, bad));
    hearth__ruleset_free(rs);
}

static void test_bad_documents_name_the_rule(void) {
    static const struct {
        const char *doc, *want;
    } bad[] = {
        {"{\"rules\":{\".read\":\"auth.uid ==\"}}", ".read at /"},
        {"{\"rules\":{\"a\":{\"$x\":{},\"$y\":{}}}}", "two wildcards at /a"},
        {"{\"rules\":{\"a\":{\".write\":1}}}", ".write at /a must be"},
        {"{\"rules\":{\"a\":{\".reed\":true}}}", "unknown rule"},
        {"{\"rules\":{\"a\":{\"b\":{\".validate\":\"newData.val( > 1\"}}}}",
         ".validate at /a/b"},
        {"{\"rulez\":{}}", "\"rules\" object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *doc = json_loads(bad[i].doc, 0, NULL);
        hearth__ruleset *rs = NULL;
        hearth_error_t err = {0};
        int rc = hearth__ruleset_compile(doc, &rs, &err);
        CHECK(rc != 0 && rs == NULL);
        if (!strstr(err.message, bad[i].want)) {
            fprintf(stderr, "  %s: \"%s\" lacks \"%s\"\n", bad[i].doc,
                    err.message, bad[i].want);
            test_failures++;
        }
        json_decref(doc);
    }
}

static void test_rules_check(void) {
    hearth_error_t err;
    CHECK_INT(hearth_rules_check("{\"rules\": {\n  // everyone reads\n"
                                 "  \".read\": true, /* nobody writes */\n"
                                 "  \"a\": {\".write\": \"auth != null\"}}}",
                                 (size_t)-1, &err),
              0);
    CHECK(hearth_rules_check("{\"rules\": {\"a\": {\".write\": \"auth !=\"}}}",
                             (size_t)-1, &err) != 0);
    CHECK(strstr(err.message, ".write at /a") != NULL);
    CHECK(hearth_rules_check("{\"rules\": {\"a\": }", (size_t)-1, &err) != 0);
    CHECK(err.line == 1 && err.column > 0);
    CHECK_INT(hearth_rules_check(NULL, 0, &err), HEARTH_EINVAL);
}

const test_case ruleset_tests[] = {
    {"rules_check", test_rules_check},
    {"rules_reads_cascade_and_do_not_filter", test_reads_cascade_and_do_not_filter},
    {"rules_writes_grant_and_validate", test_writes_grant_and_validate},
    {"rules_bad_documents_name_the_rule", test_bad_documents_name_the_rule},
    {NULL, NULL},
};

/* ---- authentication tokens ---- */

#include "rules/jwt.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

/* header.payload.signature, signed with secret (NULL: alg none). */
static void make_token(const char *payload, const char *secret, char *out) {
    const char *header = secret ? "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"
                                : "{\"alg\":\"none\",\"typ\":\"JWT\"}";
    char h[128], p[1024];
    b64url(header, strlen(header), h);
    b64url(payload, strlen(payload), p);
    int n = sprintf(out, "%s.%s.", h, p);
    if (secret) {
        unsigned char mac[32];
        unsigned int len = 0;
        HMAC(EVP_sha256(), secret, (int)strlen(secret), (unsigned char *)out,
             (size_t)n - 1, mac, &len);
        b64url((const char *)mac, len, out + n);
    }
}

static int verify(const char *token, bool allow_unsigned, char *why) {
    hearth__jwt_keys keys = {"s3cret", 6, allow_unsigned, "my-project",
                             "https://issuer.example", NULL};
    hearth_node_t *auth = NULL;
    hearth_error_t err = {0};
    int rc = hearth__jwt_verify(token, strlen(token), &keys, 1.7e12, &auth, &err);
    if (why)
        strcpy(why, err.message);
    if (!rc) {
        CHECK_STR(hearth_node_string_value(hearth_node_child(auth, "uid"), NULL), "ada");
        const hearth_node_t *email = NULL;
        hearth_node_get(auth, "token/email", &email, NULL);
        CHECK_STR(hearth_node_string_value(email, NULL), "ada@example.com");
    }
    hearth_node_decref(auth);
    return rc;
}

static void test_tokens(void) {
    const char *good = "{\"sub\":\"ada\",\"email\":\"ada@example.com\","
                       "\"aud\":\"my-project\",\"iss\":\"https://issuer.example\","
                       "\"iat\":1600000000,\"exp\":1900000000}";
    char token[2048], why[256];
    make_token(good, "s3cret", token);
    CHECK_INT(verify(token, false, why), 0);
    make_token(good, "wrong", token);
    CHECK(verify(token, false, why) != 0 && strstr(why, "signature"));
    make_token(good, NULL, token);
    CHECK_INT(verify(token, true, why), 0);
    CHECK(verify(token, false, why) != 0 && strstr(why, "unsigned"));
    /* An array aud (valid JWT) passes when it names the audience. */
    make_token("{\"sub\":\"ada\",\"email\":\"ada@example.com\","
               "\"aud\":[\"elsewhere\",\"my-project\"],"
               "\"iss\":\"https://issuer.example\",\"exp\":1900000000}",
               "s3cret", token);
    CHECK_INT(verify(token, false, why), 0);
    /* An unsigned emulator token need not expire. */
    make_token("{\"sub\":\"ada\",\"email\":\"ada@example.com\","
               "\"aud\":\"my-project\",\"iss\":\"https://issuer.example\"}",
               NULL, token);
    CHECK_INT(verify(token, true, why), 0);
    for (size_t i = 0; refused_claims[i].payload; i++) {
        make_token(refused_claims[i].payload, "s3cret", token);
        if (verify(token, false, why) == 0 || !strstr(why, refused_claims[i].why)) {
            fprintf(stderr, "  %s: \"%s\"\n", refused_claims[i].payload, why);
            test_failures++;
        }
    }
    /* Tampered: a signed token with another payload. */
    make_token(good, "s3cret", token);
    char other[1024];
    b64url("{\"sub\":\"eve\"}", 13, other);
    char *dot = strchr(token, '.');
    char *sig = strchr(dot + 1, '.');
    char forged[2048];
    snprintf(forged, sizeof forged, "%.*s.%s%s", (int)(dot - token), token, other, sig);
    CHECK(verify(forged, false, why) != 0);
    static const char *junk[] = {"", "a.b", "a.b.c.d", "!!.!!.!!", "e30.e30.",
                                 "eyJhbGciOiJub25lIn0.bm90IGpzb24."};
    for (size_t i = 0; i < sizeof junk / sizeof *junk; i++)
        CHECK(verify(junk[i], true, why) != 0 && why[0]);
}

const test_case jwt_tests[] = {
    {"rules_tokens", test_tokens},
    {NULL, NULL},
};
