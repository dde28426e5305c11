/* test_rules.c - the rules expression language, table-driven: every
 * operator, variable, snapshot method and string method of rules.md, the
 * regex subset, no type coercion, errors as false, and parse errors that
 * name the column and the offending text. */
#include "test.h"

#include "rules/expr.h"

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
    "\"admin\":true}}";

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
    hearth_node_t *auth = node_from(auth_json);
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
    hearth_node_t *auth = node_from(auth_json);
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
