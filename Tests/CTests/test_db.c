/* test_db.c - the embedded database: writes, reads, transactions, server
 * values, observers and their events (types, order, previous keys, value
 * suppression, queries with limits and moves), removal, re-entrant
 * callbacks, both loop modes, and bad input changing nothing. */
#include "test.h"

#include "common/internal.h"

#include <pthread.h>
#include <uv.h>

/* ---- an event log: each event as one line of text ---- */

typedef struct event_log {
    char lines[256][512];
    int n;
    int freed;
    pthread_mutex_t lock;
} event_log;

static const char *type_name(hearth_event_type t) {
    static const char *names[] = {"child_added", "child_removed",
                                  "child_changed", "child_moved", "value"};
    return names[t];
}

static void record(const hearth_event_t *ev, void *ctx) {
    event_log *log = ctx;
    char *json = ev->node ? to_json(ev->node) : NULL;
    pthread_mutex_lock(&log->lock);
    if (log->n < 256) {
        if (ev->type == HEARTH_EVENT_CANCEL)
            snprintf(log->lines[log->n++], 512, "%s cancel %s", ev->path,
                     hearth_err_name(ev->status));
        else if (ev->type == HEARTH_EVENT_VALUE)
            snprintf(log->lines[log->n++], 512, "%s value %s", ev->path, json);
        else
            snprintf(log->lines[log->n++], 512, "%s %s %s prev=%s %s", ev->path,
                     type_name(ev->type), ev->key,
                     ev->prev_key ? ev->prev_key : "null", json);
    }
    pthread_mutex_unlock(&log->lock);
    free(json);
}

static void log_freed(void *ctx) { ((event_log *)ctx)->freed++; }

static event_log *log_new(void) {
    event_log *log = calloc(1, sizeof *log);
    pthread_mutex_init(&log->lock, NULL);
    return log;
}

/* Checks the log holds exactly these lines (NULL-terminated), then empties
 * it. */
static void expect_events(event_log *log, const char *const *lines, int line) {
    int i = 0;
    for (; lines[i]; i++) {
        if (i >= log->n) {
            fprintf(stderr, "  test_db.c:%d: missing event %d: %s\n", line, i,
                    lines[i]);
            test_failures++;
            continue;
        }
        if (strcmp(log->lines[i], lines[i]) != 0) {
            fprintf(stderr, "  test_db.c:%d: event %d is\n    %s\n  expected\n    %s\n",
                    line, i, log->lines[i], lines[i]);
            test_failures++;
        }
    }
    for (; i < log->n; i++) {
        fprintf(stderr, "  test_db.c:%d: unexpected event %d: %s\n", line, i,
                log->lines[i]);
        test_failures++;
    }
    log->n = 0;
}

#define EXPECT(log, ...)                                                       \
    do {                                                                       \
        const char *const lines_[] = {__VA_ARGS__, NULL};                      \
        expect_events(log, lines_, __LINE__);                                  \
    } while (0)
#define EXPECT_NONE(log) EXPECT(log, NULL)

/* ---- a database on a loop run by the test: everything is synchronous ---- */

typedef struct fixture {
    uv_loop_t loop;
    hearth_db_t *db;
} fixture;

static void fx_open(fixture *f) {
    uv_loop_init(&f->loop);
    hearth_db_config_t config = {.size = sizeof config, .loop = &f->loop, .data_dir = NULL};
    CHECK_INT(hearth_db_open(&config, &f->db, NULL), 0);
}

static void fx_close(fixture *f) {
    CHECK_INT(hearth_db_close(f->db), 0);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    CHECK_INT(uv_loop_close(&f->loop), 0);
}

static void set_json(hearth_db_t *db, const char *path, const char *json) {
    hearth_node_t *v = node_from(json);
    hearth_error_t err;
    int rc = hearth_db_set(db, path, v, NULL, NULL, NULL, &err);
    if (rc)
        fprintf(stderr, "  set %s failed: %s\n", path, err.message);
    CHECK_INT(rc, 0);
    hearth_node_decref(v);
}

static void check_value(hearth_db_t *db, const char *path, const char *json) {
    hearth_node_t *n = NULL;
    CHECK_INT(hearth_db_get(db, path, NULL, &n, NULL), 0);
    if (n) {
        CHECK_JSON(n, json);
        hearth_node_decref(n);
    }
}

static hearth_observer_t observe(hearth_db_t *db, const char *path,
                                 const hearth_query_t *q, unsigned mask,
                                 event_log *log) {
    hearth_observer_t h = 0;
    CHECK_INT(hearth_db_observe(db, path, q, mask, record, log, log_freed, &h,
                                NULL),
              0);
    return h;
}

/* ---- writes and reads ---- */

static void write_status(int status, void *ctx) { *(int *)ctx = status; }

/* A write's status and its detail ("path: message", "" when none). */
typedef struct write_detail {
    int status;
    char text[520];
} write_detail;

static void write_detail_cb(int status, void *ctx) {
    write_detail *w = ctx;
    const hearth_error_t *e = hearth_completion_error();
    w->status = status;
    snprintf(w->text, sizeof w->text, "%s: %s", e ? e->path : "",
             e ? e->message : "");
}

static void test_set_get_remove(void) {
    fixture f;
    fx_open(&f);
    check_value(f.db, "/", "null");
    int status = 1;
    hearth_node_t *v = node_from("{\"name\":\"ada\",\"age\":36}");
    CHECK_INT(hearth_db_set(f.db, "users/ada", v, write_status, &status, NULL,
                            NULL),
              0);
    hearth_node_decref(v);
    CHECK_INT(status, 0);
    check_value(f.db, "users/ada/name", "\"ada\"");
    check_value(f.db, "/users", "{\"ada\":{\"age\":36,\"name\":\"ada\"}}");
    CHECK_INT(hearth_db_remove(f.db, "users/ada/age", NULL, NULL, NULL, NULL), 0);
    check_value(f.db, "users", "{\"ada\":{\"name\":\"ada\"}}");
    CHECK_INT(hearth_db_remove(f.db, "users/ada/name", NULL, NULL, NULL, NULL), 0);
    check_value(f.db, "/", "null"); /* empty parents vanish */
    fx_close(&f);
}

static void test_update_multi_path(void) {
    fixture f;
    fx_open(&f);
    set_json(f.db, "/", "{\"posts\":{\"p1\":{\"t\":\"a\"}},\"counts\":{\"p1\":1}}");
    event_log *log = log_new();
    observe(f.db, "/", NULL, HEARTH_MASK_VALUE, log);
    log->n = 0;
    CHECK_INT(hearth_db_update_json(f.db, "/",
                                    "{\"posts/p2/t\":\"b\",\"counts/p1\":null,"
                                    "\"counts/p2\":2}",
                                    (size_t)-1, NULL, NULL, NULL, NULL),
              0);
    /* One write: one value event. */
    EXPECT(log, "/ value {\"counts\":{\"p2\":2},\"posts\":{\"p1\":{\"t\":\"a\"},"
                "\"p2\":{\"t\":\"b\"}}}");
    hearth_error_t err;
    CHECK_INT(hearth_db_update_json(f.db, "/", "{\"a\":1,\"a/b\":2}", (size_t)-1,
                                    NULL, NULL, NULL, &err),
              HEARTH_EUPDATE);
    CHECK(strstr(err.message, "a/b") != NULL);
    CHECK_INT(hearth_db_update_json(f.db, "/", "{\"x\":1,\"y\":{\"b.c\":1}}",
                                    (size_t)-1, NULL, NULL, NULL, &err),
              HEARTH_EKEY);
    CHECK(strstr(err.message, "b.c") != NULL);
    CHECK_INT(hearth_db_update_json(f.db, "/", "[1]", (size_t)-1, NULL, NULL,
                                    NULL, &err),
              HEARTH_EVALUE);
    EXPECT_NONE(log); /* rejected updates change nothing */
    check_value(f.db, "x", "null");
    fx_close(&f);
    CHECK_INT(log->freed, 1);
    free(log);
}

static void test_push_ids_order(void) {
    fixture f;
    fx_open(&f);
    char prev[HEARTH_PUSH_ID_SIZE] = "";
    for (int i = 0; i < 50; i++) {
        char key[HEARTH_PUSH_ID_SIZE];
        hearth_node_t *v = hearth_node_number(i);
        CHECK_INT(hearth_db_push(f.db, "list", v, key, NULL, NULL, NULL, NULL), 0);
        hearth_node_decref(v);
        CHECK_INT(strlen(key), 20);
        CHECK(strcmp(prev, key) < 0);
        memcpy(prev, key, sizeof key);
    }
    hearth_node_t *list;
    CHECK_INT(hearth_db_get(f.db, "list", NULL, &list, NULL), 0);
    CHECK_INT(hearth_node_child_count(list), 50);
    const char *last_key;
    const hearth_node_t *last = hearth_node_child_at(list, 49, &last_key);
    CHECK_INT(hearth_node_number_value(last), 49);
    CHECK_STR(last_key, prev);
    hearth_node_decref(list);
    fx_close(&f);
}

static void test_server_values(void) {
    fixture f;
    fx_open(&f);
    int64_t before = hearth_now_ms();
    set_json(f.db, "t", "{\".sv\":\"timestamp\"}");
    hearth_node_t *t;
    CHECK_INT(hearth_db_get(f.db, "t", NULL, &t, NULL), 0);
    CHECK(hearth_node_type(t) == HEARTH_TYPE_NUMBER);
    CHECK(hearth_node_number_value(t) >= (double)before);
    CHECK(hearth_node_number_value(t) <= (double)hearth_now_ms());
    hearth_node_decref(t);
    set_json(f.db, "n", "{\".sv\":{\"increment\":5}}");
    check_value(f.db, "n", "5"); /* nothing there: the increment itself */
    set_json(f.db, "n", "{\".sv\":{\"increment\":-2.5}}");
    check_value(f.db, "n", "2.5");
    set_json(f.db, "s", "\"text\"");
    set_json(f.db, "s", "{\".sv\":{\"increment\":1}}");
    check_value(f.db, "s", "1"); /* not a number: replaced */
    CHECK_INT(hearth_db_update_json(f.db, "/",
                                    "{\"n\":{\".sv\":{\"increment\":1}},"
                                    "\"deep/c\":{\".sv\":{\"increment\":3}}}",
                                    (size_t)-1, NULL, NULL, NULL, NULL),
              0);
    check_value(f.db, "n", "3.5");
    check_value(f.db, "deep/c", "3");
    hearth_node_t *bad = NULL;
    hearth_error_t err;
    CHECK_INT(hearth_node_from_json("{\".sv\":\"later\"}", (size_t)-1,
                                    HEARTH_JSON_ALLOW_SERVER_VALUES, &bad, &err),
              HEARTH_ESERVERVALUE);
    fx_close(&f);
}

static void test_priorities(void) {
    fixture f;
    fx_open(&f);
    /* A priority alone changing is a change to the value. */
    set_json(f.db, "o", "{\"x\":1}");
    event_log *log = log_new();
    observe(f.db, "o", NULL, HEARTH_MASK_VALUE, log);
    log->n = 0;
    set_json(f.db, "o/.priority", "2");
    EXPECT(log, "/o value {\"x\":1,\".priority\":2}");
    set_json(f.db, "o/.priority", "2");
    EXPECT_NONE(log);
    set_json(f.db, "a", "{\".value\":1,\".priority\":5}");
    check_value(f.db, "a", "{\".value\":1,\".priority\":5}");
    set_json(f.db, "a/.priority", "\"z\"");
    check_value(f.db, "a", "{\".value\":1,\".priority\":\"z\"}");
    check_value(f.db, "a/.priority", "\"z\"");
    hearth_node_t *obj = node_from("{\"x\":1}");
    hearth_error_t err;
    CHECK_INT(hearth_db_set(f.db, "a/.priority", obj, NULL, NULL, NULL, &err),
              HEARTH_EPRIORITY);
    hearth_node_decref(obj);
    fx_close(&f);
    free(log);
}

/* Server values in the priority position (the SDKs allow "a string,
 * finite number, server value, or null" there): resolved with the write,
 * an increment adding to a number priority. */
static double priority_of(hearth_db_t *db, const char *path) {
    hearth_node_t *n = NULL;
    CHECK_INT(hearth_db_get(db, path, NULL, &n, NULL), 0);
    const hearth_node_t *p = n ? hearth_node_priority(n) : NULL;
    double v = p && hearth_node_type(p) == HEARTH_TYPE_NUMBER
                   ? hearth_node_number_value(p)
                   : -1;
    hearth_node_decref(n);
    return v;
}

static void test_server_value_priorities(void) {
    fixture f;
    fx_open(&f);
    double before = (double)hearth_now_ms();
    set_json(f.db, "a", "{\".value\":1,\".priority\":{\".sv\":\"timestamp\"}}");
    double ts = priority_of(f.db, "a");
    CHECK(ts >= before && ts <= (double)hearth_now_ms());
    set_json(f.db, "b", "\"x\"");
    set_json(f.db, "b/.priority", "{\".sv\":\"timestamp\"}");
    CHECK(priority_of(f.db, "b") >= before);
    set_json(f.db, "c", "{\".priority\":{\".sv\":{\"increment\":2}},\"x\":1}");
    set_json(f.db, "c/.priority", "{\".sv\":{\"increment\":3}}");
    check_value(f.db, "c", "{\"x\":1,\".priority\":5}");
    set_json(f.db, "d", "{\"e\":{\".value\":1,\".priority\":{\".sv\":{\"increment\":1}}}}");
    check_value(f.db, "d", "{\"e\":{\".value\":1,\".priority\":1}}");
    set_json(f.db, "g", "{\".sv\":{\"increment\":4},\".priority\":{\".sv\":{\"increment\":7}}}");
    check_value(f.db, "g", "{\".value\":4,\".priority\":7}");
    CHECK_INT(hearth_db_update_json(f.db, "/",
                                    "{\"c/.priority\":{\".sv\":{\"increment\":1}},"
                                    "\"d/e/.priority\":{\".sv\":\"timestamp\"}}",
                                    (size_t)-1, NULL, NULL, NULL, NULL),
              0);
    check_value(f.db, "c", "{\"x\":1,\".priority\":6}");
    /* A priority and a child of the same node in one update. */
    CHECK_INT(hearth_db_update_json(f.db, "c",
                                    "{\".priority\":{\".sv\":{\"increment\":1}},"
                                    "\"x\":2}",
                                    (size_t)-1, NULL, NULL, NULL, NULL),
              0);
    check_value(f.db, "c", "{\"x\":2,\".priority\":7}");
    /* A new node's priority, listed before its child: applied after. */
    CHECK_INT(hearth_db_update_json(f.db, "/",
                                    "{\"h/.priority\":2,\"h/v\":1}",
                                    (size_t)-1, NULL, NULL, NULL, NULL),
              0);
    check_value(f.db, "h", "{\"v\":1,\".priority\":2}");
    CHECK(priority_of(f.db, "d/e") >= before);
    /* Still not an object, nor a priority of a priority. */
    hearth_node_t *bad = NULL;
    hearth_error_t err;
    CHECK_INT(hearth_node_from_json("{\".value\":1,\".priority\":{\"x\":1}}",
                                    (size_t)-1, HEARTH_JSON_ALLOW_SERVER_VALUES,
                                    &bad, &err),
              HEARTH_EPRIORITY);
    fx_close(&f);
}

/* Regression: overlapping paths were found by comparing every pair, so
 * one update of 100,000 paths held the loop for about a minute. */
static void test_large_update_checked_quickly(void) {
    fixture f;
    fx_open(&f);
    char *update = object_json(100000, "\"u/%d/n\":%d");
    double t0 = test_seconds();
    CHECK_INT(hearth_db_update_json(f.db, "/", update, strlen(update), NULL,
                                    NULL, NULL, NULL),
              0);
    double s = test_seconds() - t0;
    CHECK(s < 5); /* about 0.3 s under the sanitizers */
    check_value(f.db, "u/99999/n", "99999");
    /* An overlap among them is still found, whichever pair it is. */
    hearth_error_t err;
    CHECK_INT(hearth_db_update_json(f.db, "/",
                                    "{\"a/b/c\":1,\"z\":2,\"a/b\":3,\"a/bc\":4}",
                                    (size_t)-1, NULL, NULL, NULL, &err),
              HEARTH_EUPDATE);
    CHECK(strstr(err.message, "\"/a/b\" contains \"/a/b/c\"") != NULL);
    free(update);
    fx_close(&f);
}

static void test_bad_input_changes_nothing(void) {
    fixture f;
    fx_open(&f);
    set_json(f.db, "keep", "1");
    event_log *log = log_new();
    observe(f.db, "/", NULL, HEARTH_MASK_ALL, log);
    log->n = 0;
    hearth_node_t *v = hearth_node_number(2);
    hearth_error_t err;
    const char *bad_paths[] = {"a.b", "a#", "a$b", "[x]", "a/\x01", ".info/x"};
    int codes[] = {HEARTH_EPATH, HEARTH_EPATH, HEARTH_EPATH, HEARTH_EPATH,
                   HEARTH_EPATH, HEARTH_EREADONLY};
    for (size_t i = 0; i < sizeof bad_paths / sizeof *bad_paths; i++) {
        int status = 99;
        CHECK_INT(hearth_db_set(f.db, bad_paths[i], v, write_status, &status,
                                NULL, &err),
                  codes[i]);
        CHECK_INT(status, 99); /* the completion never runs */
    }
    char deep[200] = "";
    for (int i = 0; i < 33; i++)
        strcat(deep, "/d");
    CHECK_INT(hearth_db_set(f.db, deep, v, NULL, NULL, NULL, &err),
              HEARTH_EDEPTH);
    /* 30 keys of path plus 3 levels of data is 33. */
    deep[60] = '\0';
    hearth_node_t *nested = node_from("{\"a\":{\"b\":{\"c\":1}}}");
    CHECK_INT(hearth_db_set(f.db, deep, nested, NULL, NULL, NULL, &err),
              HEARTH_EDEPTH);
    hearth_node_decref(nested);
    deep[62] = '\0';
    CHECK_INT(hearth_db_set(f.db, deep, v, NULL, NULL, NULL, &err), 0);
    hearth_node_decref(v);
    /* Only the valid write raised anything. */
    CHECK_INT(log->n, 2);
    log->n = 0;
    CHECK_INT(hearth_db_get(f.db, "a..b", NULL, &v, &err), HEARTH_EPATH);
    fx_close(&f);
    free(log);
}

/* ---- transactions ---- */

static int increment(const hearth_node_t *current, hearth_node_t **result,
                     void *ctx) {
    (void)ctx;
    *result = hearth_node_number(hearth_node_number_value(current) + 1);
    return HEARTH_TX_COMMIT;
}

static int abort_tx(const hearth_node_t *current, hearth_node_t **result,
                    void *ctx) {
    (void)current, (void)ctx, (void)result;
    return HEARTH_TX_ABORT;
}

typedef struct tx_result {
    int status;
    bool committed;
    char value[64];
    int calls;
} tx_result;

static void tx_done(int status, bool committed, const hearth_node_t *snap,
                    void *ctx) {
    tx_result *r = ctx;
    r->status = status;
    r->committed = committed;
    char *json = to_json(snap);
    snprintf(r->value, sizeof r->value, "%s", json);
    free(json);
    r->calls++;
}

static void test_transactions(void) {
    fixture f;
    fx_open(&f);
    tx_result r = {0};
    for (int i = 0; i < 10; i++)
        CHECK_INT(hearth_db_transaction(f.db, "count", increment, tx_done, &r,
                                        NULL, NULL),
                  0);
    CHECK_INT(r.calls, 10);
    CHECK_INT(r.status, 0);
    CHECK(r.committed);
    CHECK_STR(r.value, "10");
    CHECK_INT(hearth_db_transaction(f.db, "count", abort_tx, tx_done, &r, NULL,
                                    NULL),
              0);
    CHECK_INT(r.status, HEARTH_EABORTED);
    CHECK(!r.committed);
    CHECK_STR(r.value, "10");
    fx_close(&f);
}

/* Eight threads, 200 increments each, against the database's own loop. */
static void ignore_done(int status, bool committed, const hearth_node_t *s,
                        void *ctx) {
    (void)status, (void)committed, (void)s, (void)ctx;
}

static void *hammer_ok(void *arg) {
    hearth_db_t *db = arg;
    for (int i = 0; i < 200; i++)
        CHECK_INT(hearth_db_transaction(db, "count", increment, ignore_done,
                                        NULL, NULL, NULL),
                  0);
    return NULL;
}

static void test_transactions_threads(void) {
    hearth_db_t *db;
    CHECK_INT(hearth_db_open(NULL, &db, NULL), 0);
    /* A transaction needs a completion. */
    CHECK_INT(hearth_db_transaction(db, "count", increment, NULL, NULL, NULL,
                                    NULL),
              HEARTH_EINVAL);
    pthread_t threads[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&threads[i], NULL, hammer_ok, db);
    for (int i = 0; i < 8; i++)
        pthread_join(threads[i], NULL);
    check_value(db, "count", "1600");
    CHECK_INT(hearth_db_close(db), 0);
}

/* ---- observers ---- */

static void test_value_events(void) {
    fixture f;
    fx_open(&f);
    event_log *log = log_new();
    observe(f.db, "post", NULL, HEARTH_MASK_VALUE, log);
    EXPECT(log, "/post value null"); /* fires at once, even for no data */
    set_json(f.db, "post/title", "\"hi\"");
    EXPECT(log, "/post value {\"title\":\"hi\"}");
    set_json(f.db, "post/title", "\"hi\""); /* same value: nothing */
    set_json(f.db, "other", "1");          /* elsewhere: nothing */
    EXPECT_NONE(log);
    set_json(f.db, "/", "{\"post\":{\"title\":\"new\"},\"other\":2}");
    EXPECT(log, "/post value {\"title\":\"new\"}");
    fx_close(&f);
    CHECK_INT(log->freed, 1);
    free(log);
}

static void test_child_events(void) {
    fixture f;
    fx_open(&f);
    set_json(f.db, "list", "{\"b\":2,\"a\":1}");
    event_log *log = log_new();
    observe(f.db, "list", NULL, HEARTH_MASK_ALL, log);
    EXPECT(log, "/list child_added a prev=null 1",
           "/list child_added b prev=a 2",
           "/list value {\"a\":1,\"b\":2}");
    set_json(f.db, "list/c", "3");
    EXPECT(log, "/list child_added c prev=b 3",
           "/list value {\"a\":1,\"b\":2,\"c\":3}");
    set_json(f.db, "list/a", "10");
    EXPECT(log, "/list child_changed a prev=null 10",
           "/list value {\"a\":10,\"b\":2,\"c\":3}");
    set_json(f.db, "list/b/deep", "true");
    EXPECT(log, "/list child_changed b prev=a {\"deep\":true}",
           "/list value {\"a\":10,\"b\":{\"deep\":true},\"c\":3}");
    CHECK_INT(hearth_db_remove(f.db, "list/a", NULL, NULL, NULL, NULL), 0);
    EXPECT(log, "/list child_removed a prev=null 10",
           "/list value {\"b\":{\"deep\":true},\"c\":3}");
    /* A whole replacement: removed, added, changed, in order. */
    set_json(f.db, "list", "{\"c\":4,\"d\":5}");
    EXPECT(log, "/list child_removed b prev=null {\"deep\":true}",
           "/list child_added d prev=c 5",
           "/list child_changed c prev=null 4",
           "/list value {\"c\":4,\"d\":5}");
    fx_close(&f);
    free(log);
}

static void test_integer_keys_order(void) {
    fixture f;
    fx_open(&f);
    event_log *log = log_new();
    set_json(f.db, "k", "{\"10\":1,\"9\":1,\"a\":1,\"-1\":1}");
    observe(f.db, "k", NULL, HEARTH_MASK_CHILD_ADDED, log);
    EXPECT(log, "/k child_added -1 prev=null 1", "/k child_added 9 prev=-1 1",
           "/k child_added 10 prev=9 1", "/k child_added a prev=10 1");
    fx_close(&f);
    free(log);
}

static void test_priority_order_and_moves(void) {
    fixture f;
    fx_open(&f);
    set_json(f.db, "p", "{\"a\":{\".value\":1,\".priority\":3},"
                        "\"b\":{\".value\":2,\".priority\":1},\"c\":3}");
    event_log *log = log_new();
    observe(f.db, "p", NULL,
            HEARTH_MASK_CHILD_ADDED | HEARTH_MASK_CHILD_MOVED |
                HEARTH_MASK_CHILD_CHANGED,
            log);
    /* No priority first, then numbers ascending. */
    EXPECT(log, "/p child_added c prev=null 3",
           "/p child_added b prev=c {\".value\":2,\".priority\":1}",
           "/p child_added a prev=b {\".value\":1,\".priority\":3}");
    set_json(f.db, "p/a/.priority", "0");
    EXPECT(log, "/p child_moved a prev=c {\".value\":1,\".priority\":0}",
           "/p child_changed a prev=c {\".value\":1,\".priority\":0}");
    fx_close(&f);
    free(log);
}

static hearth_query_t *query_limit_last(const char *child, uint32_t n) {
    hearth_query_t *q;
    hearth_query_create(&q);
    CHECK_INT(hearth_query_order_by_child(q, child, NULL), 0);
    CHECK_INT(hearth_query_limit_to_last(q, n, NULL), 0);
    return q;
}

static void test_query_window(void) {
    fixture f;
    fx_open(&f);
    set_json(f.db, "scores", "{\"ann\":{\"s\":5},\"bob\":{\"s\":9},"
                             "\"cy\":{\"s\":7},\"dee\":{\"s\":1}}");
    hearth_query_t *q = query_limit_last("s", 2);
    event_log *log = log_new();
    observe(f.db, "scores", q, HEARTH_MASK_ALL, log);
    EXPECT(log, "/scores child_added cy prev=null {\"s\":7}",
           "/scores child_added bob prev=cy {\"s\":9}",
           "/scores value {\"bob\":{\"s\":9},\"cy\":{\"s\":7}}");
    /* A new top score pushes cy out of the window. */
    set_json(f.db, "scores/eve", "{\"s\":10}");
    EXPECT(log, "/scores child_removed cy prev=null {\"s\":7}",
           "/scores child_added eve prev=bob {\"s\":10}",
           "/scores value {\"bob\":{\"s\":9},\"eve\":{\"s\":10}}");
    /* Leaving the window refills it from below. */
    CHECK_INT(hearth_db_remove(f.db, "scores/eve", NULL, NULL, NULL, NULL), 0);
    EXPECT(log, "/scores child_removed eve prev=null {\"s\":10}",
           "/scores child_added cy prev=null {\"s\":7}",
           "/scores value {\"bob\":{\"s\":9},\"cy\":{\"s\":7}}");
    /* Changes outside the window raise nothing. */
    set_json(f.db, "scores/dee/s", "2");
    EXPECT_NONE(log);
    /* A reorder inside the window: moved then changed. */
    set_json(f.db, "scores/cy/s", "20");
    EXPECT(log, "/scores child_moved cy prev=bob {\"s\":20}",
           "/scores child_changed cy prev=bob {\"s\":20}",
           "/scores value {\"bob\":{\"s\":9},\"cy\":{\"s\":20}}");
    hearth_node_t *top;
    CHECK_INT(hearth_db_get(f.db, "scores", q, &top, NULL), 0);
    CHECK_JSON(top, "{\"bob\":{\"s\":9},\"cy\":{\"s\":20}}");
    hearth_node_decref(top);
    hearth_query_free(q);
    fx_close(&f);
    free(log);
}

static void test_deeper_first_and_descendants(void) {
    fixture f;
    fx_open(&f);
    event_log *log = log_new();
    observe(f.db, "/", NULL, HEARTH_MASK_VALUE, log);
    observe(f.db, "a/b", NULL, HEARTH_MASK_VALUE, log);
    observe(f.db, "a", NULL, HEARTH_MASK_VALUE, log);
    observe(f.db, "x", NULL, HEARTH_MASK_VALUE, log);
    log->n = 0;
    set_json(f.db, "a", "{\"b\":1,\"c\":2}");
    EXPECT(log, "/a/b value 1", "/a value {\"b\":1,\"c\":2}",
           "/ value {\"a\":{\"b\":1,\"c\":2}}");
    set_json(f.db, "a/c", "3"); /* /a/b sees no change */
    EXPECT(log, "/a value {\"b\":1,\"c\":3}", "/ value {\"a\":{\"b\":1,\"c\":3}}");
    fx_close(&f);
    CHECK_INT(log->freed, 4);
    free(log);
}

static void test_remove_observers(void) {
    fixture f;
    fx_open(&f);
    event_log *a = log_new(), *b = log_new(), *c = log_new();
    hearth_observer_t ha = observe(f.db, "n", NULL, HEARTH_MASK_VALUE, a);
    observe(f.db, "n", NULL, HEARTH_MASK_VALUE, b);
    observe(f.db, "n/child", NULL, HEARTH_MASK_VALUE, c);
    a->n = b->n = c->n = 0;
    CHECK_INT(hearth_db_remove_observer(f.db, ha), 0);
    CHECK_INT(a->freed, 1);
    CHECK_INT(hearth_db_remove_observer(f.db, ha), HEARTH_ENOTFOUND);
    set_json(f.db, "n/child", "1");
    CHECK_INT(a->n, 0);
    CHECK_INT(b->n, 1);
    CHECK_INT(c->n, 1);
    /* Remove all at n: not the one at n/child. */
    CHECK_INT(hearth_db_remove_observers_at(f.db, "n", NULL), 0);
    CHECK_INT(b->freed, 1);
    CHECK_INT(c->freed, 0);
    set_json(f.db, "n/child", "2");
    CHECK_INT(b->n, 1);
    CHECK_INT(c->n, 2);
    fx_close(&f);
    CHECK_INT(c->freed, 1);
    free(a), free(b), free(c);
}

/* A callback that removes itself and writes: both take effect after the
 * batch, and the observer sees nothing more. */
typedef struct once_ctx {
    hearth_db_t *db;
    hearth_observer_t handle;
    int calls;
    int freed;
} once_ctx;

static void once_cb(const hearth_event_t *ev, void *ctx) {
    (void)ev;
    once_ctx *o = ctx;
    o->calls++;
    CHECK_INT(hearth_db_remove_observer(o->db, o->handle), 0);
    hearth_node_t *v = hearth_node_string("from callback", 13);
    CHECK_INT(hearth_db_set(o->db, "echo", v, NULL, NULL, NULL, NULL), 0);
    hearth_node_decref(v);
}

static void once_free(void *ctx) { ((once_ctx *)ctx)->freed++; }

static void test_reentrant_callbacks(void) {
    fixture f;
    fx_open(&f);
    once_ctx o = {f.db, 0, 0, 0};
    CHECK_INT(hearth_db_observe(f.db, "x", NULL, HEARTH_MASK_VALUE, once_cb, &o,
                                once_free, &o.handle, NULL),
              0);
    CHECK_INT(o.calls, 1);
    CHECK_INT(o.freed, 1);
    check_value(f.db, "echo", "\"from callback\"");
    set_json(f.db, "x", "1");
    CHECK_INT(o.calls, 1);
    fx_close(&f);
}

/* The database's own loop thread: events arrive on it, in order. */
static void test_own_loop_thread(void) {
    hearth_db_t *db;
    CHECK_INT(hearth_db_open(NULL, &db, NULL), 0);
    event_log *log = log_new();
    observe(db, "n", NULL, HEARTH_MASK_VALUE, log);
    for (int i = 1; i <= 100; i++) {
        hearth_node_t *v = hearth_node_number(i);
        CHECK_INT(hearth_db_set(db, "n", v, NULL, NULL, NULL, NULL), 0);
        hearth_node_decref(v);
    }
    check_value(db, "n", "100"); /* waits for the writes before it */
    pthread_mutex_lock(&log->lock);
    CHECK_INT(log->n, 101);
    CHECK_STR(log->lines[0], "/n value null");
    CHECK_STR(log->lines[100], "/n value 100");
    pthread_mutex_unlock(&log->lock);
    CHECK_INT(hearth_db_close(db), 0);
    CHECK_INT(log->freed, 1);
    free(log);
}

static void test_close_cancels_and_rejects(void) {
    fixture f;
    fx_open(&f);
    hearth_db_t *db = f.db;
    fx_close(&f);
    (void)db; /* freed: nothing more may be called on it */
    /* A second database proves a closed one released everything (ASan). */
    hearth_db_t *own;
    CHECK_INT(hearth_db_open(NULL, &own, NULL), 0);
    event_log *log = log_new();
    observe(own, "a", NULL, HEARTH_MASK_VALUE, log);
    CHECK_INT(hearth_db_close(own), 0);
    CHECK_INT(log->freed, 1);
    free(log);
    hearth_db_config_t config = {.size = sizeof config, .loop = NULL, .data_dir = "/proc/no/such"};
    hearth_error_t err;
    CHECK_INT(hearth_db_open(&config, &own, &err), HEARTH_EIO);
    CHECK(strstr(err.message, "/proc/no/such") != NULL);
}

/* ---- rules on an embedded handle ---- */

static const char *const embedded_rules =
    "{\"rules\": {"
    "  \"users\": {\"$uid\": {"
    "    \".read\": \"auth != null && auth.uid == $uid\","
    "    \".write\": \"auth != null && auth.uid == $uid\","
    "    \"age\": {\".validate\": \"newData.isNumber() && newData.val() >= 0\"}}},"
    "  \"feed\": {\".read\": \"query.limitToFirst <= 10\"}"
    "}}";

static void fx_open_as(fixture *f, const char *auth) {
    uv_loop_init(&f->loop);
    hearth_db_config_t config = {.size = sizeof config, .loop = &f->loop, .rules = embedded_rules,
                                 .auth_variable = auth};
    hearth_error_t err;
    int rc = hearth_db_open(&config, &f->db, &err);
    if (rc)
        fprintf(stderr, "  open: %s\n", err.message);
    CHECK_INT(rc, 0);
}

/* Every call is judged as the handle's user; a refused write changes
 * nothing and raises nothing. */
static void test_embedded_rules(void) {
    fixture f;
    fx_open_as(&f, "{\"uid\": \"ada\"}");
    event_log *log = log_new();
    observe(f.db, "users/ada", NULL, HEARTH_MASK_VALUE, log);
    EXPECT(log, "/users/ada value null");
    CHECK_INT(set_and_wait(f.db, "users/ada", "{\"age\": 36}"), 0);
    EXPECT(log, "/users/ada value {\"age\":36}");
    /* Invalid, then someone else's: refused, nothing changes, no event. */
    CHECK_INT(set_and_wait(f.db, "users/ada/age", "-1"), HEARTH_EDENIED);
    CHECK_INT(set_and_wait(f.db, "users/bob", "1"), HEARTH_EDENIED);
    const char *paths[] = {"ada/age", "bob/age"};
    hearth_node_t *one = node_from("1");
    const hearth_node_t *values[] = {one, one};
    int status = 1;
    CHECK_INT(hearth_db_update(f.db, "users", 2, paths, values, write_status,
                               &status, NULL, NULL),
              0);
    CHECK_INT(status, HEARTH_EDENIED); /* all or nothing */
    hearth_node_decref(one);
    EXPECT_NONE(log);
    check_value(f.db, "users/ada", "{\"age\":36}");
    tx_result r = {0};
    CHECK_INT(hearth_db_transaction(f.db, "users/bob/n", increment, tx_done, &r,
                                    NULL, NULL),
              0);
    CHECK_INT(r.status, HEARTH_EDENIED);
    CHECK(!r.committed);
    /* Reads: another's location, and a query the read rule limits. */
    hearth_node_t *n = NULL;
    CHECK_INT(hearth_db_get(f.db, "users/bob", NULL, &n, NULL), HEARTH_EDENIED);
    CHECK(n == NULL);
    event_log *refused = log_new();
    observe(f.db, "users/bob", NULL, HEARTH_MASK_ALL, refused);
    EXPECT(refused, "/users/bob cancel HEARTH_EDENIED");
    CHECK_INT(refused->freed, 1); /* ended */
    hearth_query_t *q;
    hearth_query_create(&q);
    hearth_query_limit_to_first(q, 50, NULL);
    CHECK_INT(hearth_db_get(f.db, "feed", q, &n, NULL), HEARTH_EDENIED);
    hearth_query_free(q);
    hearth_query_create(&q);
    hearth_query_limit_to_first(q, 5, NULL);
    CHECK_INT(hearth_db_get(f.db, "feed", q, &n, NULL), 0);
    hearth_node_decref(n);
    hearth_query_free(q);
    fx_close(&f);
    free(log);
    free(refused);

    /* A refusal's completion says why and where, as a synchronous
     * call's err would. */
    fx_open_as(&f, "{\"uid\": \"ada\"}");
    write_detail w = {1, ""};
    hearth_node_t *v = node_from("1");
    CHECK_INT(hearth_db_set(f.db, "users/bob", v, write_detail_cb, &w, NULL,
                            NULL),
              0);
    hearth_node_decref(v);
    CHECK_INT(w.status, HEARTH_EDENIED);
    CHECK_STR(w.text, "/users/bob: Permission denied: the rules do not allow "
                      "this write at /users/bob");
    v = node_from("1");
    CHECK_INT(hearth_db_set(f.db, "users/ada/n", v, write_detail_cb, &w, NULL,
                            NULL),
              0);
    hearth_node_decref(v);
    CHECK_INT(w.status, 0);
    CHECK_STR(w.text, ": "); /* no failure, no detail */
    CHECK(hearth_completion_error() == NULL);
    fx_close(&f);

    /* Unauthenticated: nothing under users. */
    fx_open_as(&f, NULL);
    CHECK_INT(set_and_wait(f.db, "users/ada/age", "1"), HEARTH_EDENIED);
    fx_close(&f);

    /* Bad configurations are refused at open. */
    hearth_db_t *db = NULL;
    hearth_error_t err;
    hearth_db_config_t bad = {.size = sizeof bad, .rules = "{\"rules\": {\".read\": \"auth.\"}}"};
    CHECK(hearth_db_open(&bad, &db, &err) != 0 && strstr(err.message, ".read"));
    bad = (hearth_db_config_t){.size = sizeof bad, .auth_variable = "{\"uid\":\"ada\"}"};
    CHECK_INT(hearth_db_open(&bad, &db, &err), HEARTH_EINVAL);
    bad = (hearth_db_config_t){.size = sizeof bad, .rules = embedded_rules, .auth_variable = "{uid"};
    CHECK_INT(hearth_db_open(&bad, &db, &err), HEARTH_EJSON);
    CHECK(strstr(err.message, "auth_variable") != NULL);
    bad = (hearth_db_config_t){.size = sizeof bad, .rules = embedded_rules,
                               .url = "http://127.0.0.1:9"};
    CHECK_INT(hearth_db_open(&bad, &db, &err), HEARTH_EINVAL);
    CHECK(db == NULL);
}

/* A config struct carries its size (its first field), so that programs
 * built against other versions of hearth.h keep working: a struct as long
 * as version 0.2's (in a block of exactly that size: ASan sees any read
 * past it) opens with all its fields read; a longer struct from a later
 * header opens when its unknown tail is zero and is refused when it sets
 * anything there; a size below any version, or none (0), is refused. */
static void test_config_sizes(void) {
    hearth_db_t *db = NULL;
    hearth_error_t err;
    size_t base = offsetof(hearth_db_config_t, auth_variable) + sizeof(char *);
    hearth_db_config_t *old = calloc(1, base);
    old->size = base;
    old->rules = "{\"rules\": {\".read\": false}}"; /* its last field */
    CHECK_INT(hearth_db_open(old, &db, &err), 0);
    hearth_node_t *value = NULL;
    CHECK_INT(hearth_db_get(db, "a", NULL, &value, &err), HEARTH_EDENIED);
    CHECK_INT(hearth_db_close(db), 0);
    free(old);

    struct {
        hearth_db_config_t config;
        uint64_t later[2]; /* fields of a later version */
    } newer;
    memset(&newer, 0, sizeof newer);
    newer.config.size = sizeof newer;
    db = NULL;
    CHECK_INT(hearth_db_open(&newer.config, &db, &err), 0);
    CHECK_INT(hearth_db_close(db), 0);
    newer.later[1] = 1;
    db = NULL;
    CHECK_INT(hearth_db_open(&newer.config, &db, &err), HEARTH_EUNSUPPORTED);
    CHECK(strstr(err.message, "does not know") != NULL);
    CHECK(db == NULL);

    /* Its size not set: refused, never read as some version's. */
    hearth_db_config_t unsized = {.data_dir = "/tmp/never-made-by-hearth"};
    CHECK_INT(hearth_db_open(&unsized, &db, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, "hearth_db_config_t.size is 0") != NULL);
    CHECK(db == NULL);
    hearth_db_config_t short_one = {.size = sizeof(size_t)};
    CHECK_INT(hearth_db_open(&short_one, &db, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, "hearth_db_config_t.size") != NULL);
    CHECK(db == NULL);
}

const test_case db_tests[] = {
    {"db_config_sizes", test_config_sizes},
    {"db_embedded_rules", test_embedded_rules},
    {"db_set_get_remove", test_set_get_remove},
    {"db_update_multi_path", test_update_multi_path},
    {"db_push_ids_order", test_push_ids_order},
    {"db_server_values", test_server_values},
    {"db_priorities", test_priorities},
    {"db_server_value_priorities", test_server_value_priorities},
    {"db_large_update_checked_quickly", test_large_update_checked_quickly},
    {"db_bad_input_changes_nothing", test_bad_input_changes_nothing},
    {"db_transactions", test_transactions},
    {"db_transactions_threads", test_transactions_threads},
    {"db_value_events", test_value_events},
    {"db_child_events", test_child_events},
    {"db_integer_keys_order", test_integer_keys_order},
    {"db_priority_order_and_moves", test_priority_order_and_moves},
    {"db_query_window", test_query_window},
    {"db_deeper_first_and_descendants", test_deeper_first_and_descendants},
    {"db_remove_observers", test_remove_observers},
    {"db_reentrant_callbacks", test_reentrant_callbacks},
    {"db_own_loop_thread", test_own_loop_thread},
    {"db_close_cancels_and_rejects", test_close_cancels_and_rejects},
    {NULL, NULL},
};
