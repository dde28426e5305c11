/* test_client.c - databases opened on a URL, as clients of a real server
 * on a loopback port: local events before the server answers, two clients
 * seeing each other, contended transactions and increments, queries, REST
 * writes reaching realtime listeners, offline writes, .info/connected,
 * onDisconnect, and a server restarted under a writing client. */
#include "test.h"

#include "server_fixture.h"

#include "client/disk.h"
#include "client/remote.h"
#include "net/ws_client.h"
#include "tree/node.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static hearth_server_t *start_server(int port) {
    return start_with((hearth_server_config_t){.port = port});
}

/* The server stopped, its data removed, a new directory for the next. */
static void finish_server(hearth_server_t *s) {
    stop(s);
    remove_tree(data_dir);
    data_dir[0] = '\0';
}

/* A client of the server on port in namespace ns, keeping its cache in
 * cache_dir (NULL: memory only). */
static hearth_db_t *cached_client(int port, const char *ns,
                                  const char *cache_dir, size_t cache_size) {
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d?ns=%s", port, ns);
    return test_db_open((hearth_db_config_t){.url = url, .cache_dir = cache_dir,
                                             .cache_size = cache_size});
}

static hearth_db_t *client(int port, const char *ns) {
    return cached_client(port, ns, NULL, 0);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- what observers saw, shared with the loop threads ---- */

typedef struct watch {
    pthread_mutex_t lock;
    char last[256];   /* the last value, as JSON */
    int values;
    int cancels, cancel_status;
    char log[2048];   /* "type key;" for each event */
} watch;

static void watch_init(watch *w) {
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->lock, NULL);
}

static void on_watch(const hearth_event_t *e, void *ctx) {
    watch *w = ctx;
    pthread_mutex_lock(&w->lock);
    if (e->type == HEARTH_EVENT_CANCEL) {
        w->cancels++;
        w->cancel_status = e->status;
        CHECK(e->node == NULL);
    } else if (e->type == HEARTH_EVENT_VALUE) {
        char *j = hearth_node_to_json(e->node, 0, NULL);
        snprintf(w->last, sizeof w->last, "%s", j ? j : "?");
        hearth_free(j);
        w->values++;
    }
    size_t len = strlen(w->log);
    snprintf(w->log + len, sizeof w->log - len, "%d %s;", (int)e->type,
             e->key ? e->key : "");
    pthread_mutex_unlock(&w->lock);
}

/* Waits up to ms for the watch's last value to read `want`. */
static bool wait_value(watch *w, const char *want, int ms) {
    for (int waited = 0;; waited += 5) {
        pthread_mutex_lock(&w->lock);
        bool ok = strcmp(w->last, want) == 0;
        pthread_mutex_unlock(&w->lock);
        if (ok)
            return true;
        if (waited >= ms) {
            fprintf(stderr, "  waited for %s, last %s\n", want, w->last);
            return false;
        }
        sleep_ms(5);
    }
}

static hearth_observer_t observe(hearth_db_t *db, const char *path,
                                 const hearth_query_t *q, watch *w) {
    hearth_observer_t h = 0;
    CHECK_INT(hearth_db_observe(db, path, q, HEARTH_MASK_ALL, on_watch, w,
                                NULL, &h, NULL),
              0);
    return h;
}

/* ---- completions ---- */

typedef struct done {
    pthread_mutex_t lock;
    int count, errors, last_status;
    char detail[520]; /* the last failure's "path: message", or "" */
} done;

static void on_done(int status, void *ctx) {
    done *d = ctx;
    const hearth_error_t *e = hearth_completion_error();
    pthread_mutex_lock(&d->lock);
    d->count++;
    if (status)
        d->errors++;
    d->last_status = status;
    snprintf(d->detail, sizeof d->detail, "%s: %s", e ? e->path : "",
             e ? e->message : "");
    pthread_mutex_unlock(&d->lock);
}

/* Waits up to ms for *n (guarded by lock) to reach want. */
static bool wait_at_least(pthread_mutex_t *lock, const int *n, int want, int ms,
                          const char *what) {
    for (int waited = 0;; waited += 5) {
        pthread_mutex_lock(lock);
        int now = *n;
        pthread_mutex_unlock(lock);
        if (now >= want)
            return true;
        if (waited >= ms) {
            fprintf(stderr, "  %d of %d %s\n", now, want, what);
            return false;
        }
        sleep_ms(5);
    }
}

static bool wait_count(done *d, int want, int ms) {
    return wait_at_least(&d->lock, &d->count, want, ms, "completions");
}

static void set_json(hearth_db_t *db, const char *path, const char *json,
                     done *d) {
    hearth_node_t *v = node_from(json);
    CHECK_INT(hearth_db_set(db, path, v, d ? on_done : NULL, d, NULL, NULL), 0);
    hearth_node_decref(v);
}

static char *get_json(hearth_db_t *db, const char *path) {
    hearth_node_t *n = NULL;
    hearth_error_t err;
    int rc = hearth_db_get(db, path, NULL, &n, &err);
    if (rc) {
        fprintf(stderr, "  get %s: %s\n", path, err.message);
        return strdup("(error)");
    }
    char *j = hearth_node_to_json(n, 0, NULL);
    char *out = strdup(j);
    hearth_free(j);
    hearth_node_decref(n);
    return out;
}

static void loop_reached(void *ctx);

/* Waits until the loop has run everything asked of it before. */
static void barrier(hearth_db_t *db) {
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    CHECK_INT(hearth_db_call(db, loop_reached, &d, NULL), 0);
    CHECK(wait_count(&d, 1, 5000));
}

/* A barrier through the server: a read of a path no one listens to goes
 * to the server, which answers it after everything db sent before it, and
 * db takes the answer after everything the server sent before it. */
static void round_trip(hearth_db_t *db) {
    char *j = get_json(db, "/round-trip");
    CHECK_STR(j, "null");
    free(j);
}

/* ---- tests ---- */

/* Runs on the loop: a write made there raises its events before the call
 * returns, long before the server answers. */
typedef struct local_ctx {
    hearth_db_t *db;
    watch *w;
    int values_before, values_after;
} local_ctx;

static void write_on_loop(void *arg) {
    local_ctx *c = arg;
    c->values_before = c->w->values;
    hearth_node_t *v = node_from("{\"n\":1}");
    CHECK_INT(hearth_db_set(c->db, "/local", v, NULL, NULL, NULL, NULL), 0);
    hearth_node_decref(v);
    c->values_after = c->w->values;
}

static void test_local_events_first(void) {
    hearth_server_t *s = start_server(0);
    hearth_db_t *a = client(hearth_server_port(s), "local");
    watch w;
    watch_init(&w);
    observe(a, "/local", NULL, &w);
    CHECK(wait_value(&w, "null", 5000));
    local_ctx c = {a, &w, 0, 0};
    CHECK_INT(hearth_db_call(a, write_on_loop, &c, NULL), 0);
    CHECK(wait_value(&w, "{\"n\":1}", 5000));
    CHECK_INT(c.values_after, c.values_before + 1);
    char *j = get_json(a, "/local/n");
    CHECK_STR(j, "1");
    free(j);
    hearth_db_close(a);
    finish_server(s);
}

static void test_two_clients(void) {
    hearth_server_t *s = start_server(0);
    int port = hearth_server_port(s);
    hearth_db_t *a = client(port, "two"), *b = client(port, "two");
    watch wa, wb;
    watch_init(&wa);
    watch_init(&wb);
    observe(a, "/room", NULL, &wa);
    observe(b, "/room", NULL, &wb);
    CHECK(wait_value(&wa, "null", 5000));
    CHECK(wait_value(&wb, "null", 5000));
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(b, "/room/msg", "\"hi from b\"", &d);
    CHECK(wait_value(&wa, "{\"msg\":\"hi from b\"}", 5000));
    hearth_node_t *v = node_from("{\"x\":1,\"y\":2}");
    CHECK_INT(hearth_db_update_json(a, "/room", "{\"a/b\":1,\"c\":true}",
                                    (size_t)-1, on_done, &d, NULL, NULL),
              0);
    hearth_node_decref(v);
    CHECK(wait_value(&wb, "{\"a\":{\"b\":1},\"c\":true,\"msg\":\"hi from b\"}",
                     5000));
    CHECK(wait_count(&d, 2, 5000));
    CHECK_INT(d.errors, 0);
    /* A REST-side read sees the same. */
    char *j = get_json(b, "/room/a");
    CHECK_STR(j, "{\"b\":1}");
    free(j);
    hearth_db_close(a);
    hearth_db_close(b);
    finish_server(s);
}

static void test_queries_over_the_wire(void) {
    hearth_server_t *s = start_server(0);
    int port = hearth_server_port(s);
    hearth_db_t *a = client(port, "query"), *b = client(port, "query");
    set_json(b, "/scores", "{\"ann\":{\"s\":5},\"bob\":{\"s\":9},\"cat\":{\"s\":7}}",
             NULL);
    hearth_query_t *q;
    hearth_query_create(&q);
    hearth_query_order_by_child(q, "s", NULL);
    hearth_query_limit_to_last(q, 2, NULL);
    watch w;
    watch_init(&w);
    observe(a, "/scores", q, &w);
    CHECK(wait_value(&w, "{\"bob\":{\"s\":9},\"cat\":{\"s\":7}}", 5000));
    /* A new top score pushes the lowest of the two out. */
    set_json(b, "/scores/dan", "{\"s\":8}", NULL);
    CHECK(wait_value(&w, "{\"bob\":{\"s\":9},\"dan\":{\"s\":8}}", 5000));
    hearth_query_free(q);
    hearth_db_close(a);
    hearth_db_close(b);
    finish_server(s);
}

/* ---- contended counters ---- */


static void on_tx(int status, bool committed, const hearth_node_t *snap,
                  void *ctx) {
    (void)snap;
    done *d = ctx;
    pthread_mutex_lock(&d->lock);
    d->count++;
    if (status || !committed) {
        d->errors++;
        d->last_status = status;
    }
    pthread_mutex_unlock(&d->lock);
}

enum { CLIENTS = 8, EACH = 100 };

/* Sessions in many namespaces at once: the server's table of namespaces
 * grows while earlier sessions still use theirs. */
static void test_many_namespaces(void) {
    hearth_server_t *s = start_server(0);
    int port = hearth_server_port(s);
    enum { N = 12 };
    hearth_db_t *dbs[N];
    watch w[N];
    for (int i = 0; i < N; i++) {
        char ns[16];
        snprintf(ns, sizeof ns, "many%d", i);
        dbs[i] = client(port, ns);
        watch_init(&w[i]);
        observe(dbs[i], "/v", NULL, &w[i]);
        CHECK(wait_value(&w[i], "null", 5000));
    }
    for (int i = 0; i < N; i++) {
        char json[16];
        snprintf(json, sizeof json, "%d", i);
        set_json(dbs[i], "/v", json, NULL);
    }
    for (int i = 0; i < N; i++) {
        char want[16];
        snprintf(want, sizeof want, "%d", i);
        CHECK(wait_value(&w[i], want, 5000));
        char *j = get_json(dbs[i], "/v");
        CHECK_STR(j, want);
        free(j);
    }
    for (int i = 0; i < N; i++)
        hearth_db_close(dbs[i]);
    finish_server(s);
}

static void test_contended_transactions(void) {
    hearth_server_t *s = start_server(0);
    int port = hearth_server_port(s);
    hearth_db_t *dbs[CLIENTS];
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    for (int i = 0; i < CLIENTS; i++)
        dbs[i] = client(port, "tx");
    for (int k = 0; k < EACH; k++)
        for (int i = 0; i < CLIENTS; i++)
            CHECK_INT(hearth_db_transaction(dbs[i], "/counter", test_tx_increment,
                                            on_tx, &d, NULL, NULL),
                      0);
    CHECK(wait_count(&d, CLIENTS * EACH, 25000));
    if (d.errors)
        fprintf(stderr, "  %d transactions failed, last: %s\n", d.errors,
                hearth_strerror(d.last_status));
    CHECK_INT(d.errors, 0);
    char *j = get_json(dbs[0], "/counter");
    CHECK_STR(j, "800");
    free(j);
    for (int i = 0; i < CLIENTS; i++)
        hearth_db_close(dbs[i]);
    finish_server(s);
}

/* One transaction at a time per client: they race for real, and some may
 * give up after 25 attempts, but no committed increment is ever lost. */
typedef struct serial {
    hearth_db_t *db;
    done *d;
    int left;
    int committed;
} serial;

static void on_serial(int status, bool committed, const hearth_node_t *snap,
                      void *ctx);

static void next_serial(serial *s) {
    if (s->left-- > 0)
        CHECK_INT(hearth_db_transaction(s->db, "/race", test_tx_increment, on_serial, s,
                                        NULL, NULL),
                  0);
}

static void on_serial(int status, bool committed, const hearth_node_t *snap,
                      void *ctx) {
    serial *s = ctx;
    (void)snap;
    s->committed += committed;
    on_done(status && status != HEARTH_EMAXRETRY ? status : 0, s->d);
    next_serial(s);
}

static void test_racing_transactions(void) {
    hearth_server_t *srv = start_server(0);
    int port = hearth_server_port(srv);
    enum { RACERS = 4, ROUNDS = 15 };
    serial s[RACERS];
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    for (int i = 0; i < RACERS; i++) {
        s[i] = (serial){client(port, "race"), &d, ROUNDS, 0};
        next_serial(&s[i]);
    }
    CHECK(wait_count(&d, RACERS * ROUNDS, 25000));
    CHECK_INT(d.errors, 0);
    int committed = 0;
    for (int i = 0; i < RACERS; i++)
        committed += s[i].committed;
    char *j = get_json(s[0].db, "/race"), want[16];
    snprintf(want, sizeof want, "%d", committed);
    CHECK_STR(j, want);
    free(j);
    CHECK(committed > RACERS * ROUNDS / 2);
    for (int i = 0; i < RACERS; i++)
        hearth_db_close(s[i].db);
    finish_server(srv);
}

/* Completions that queue more transactions at the same path, while the
 * batch they came from is being settled. */
typedef struct chain {
    hearth_db_t *db;
    done *d;
    int more;
} chain;

static void on_chained(int status, bool committed, const hearth_node_t *snap,
                       void *ctx) {
    chain *c = ctx;
    on_tx(status, committed, snap, c->d);
    if (c->more-- > 0)
        for (int i = 0; i < 3; i++)
            CHECK_INT(hearth_db_transaction(c->db, "/chained", test_tx_increment,
                                            on_chained, c, NULL, NULL),
                      0);
}

static void test_transactions_from_completions(void) {
    hearth_server_t *s = start_server(0);
    int port = hearth_server_port(s);
    chain c[2];
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    for (int i = 0; i < 2; i++) {
        c[i] = (chain){client(port, "chain"), &d, 10};
        for (int k = 0; k < 5; k++)
            CHECK_INT(hearth_db_transaction(c[i].db, "/chained", test_tx_increment,
                                            on_chained, &c[i], NULL, NULL),
                      0);
    }
    /* Each client: 5 first, then 3 more from each of 10 completions. */
    CHECK(wait_count(&d, 2 * (5 + 30), 20000));
    CHECK_INT(d.errors, 0);
    char *j = get_json(c[0].db, "/chained");
    CHECK_STR(j, "70");
    free(j);
    hearth_db_close(c[0].db);
    hearth_db_close(c[1].db);
    finish_server(s);
}

static void test_contended_increments(void) {
    hearth_server_t *s = start_server(0);
    int port = hearth_server_port(s);
    hearth_db_t *dbs[CLIENTS];
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    hearth_node_t *inc = hearth_node_server_increment(1);
    for (int i = 0; i < CLIENTS; i++)
        dbs[i] = client(port, "inc");
    for (int k = 0; k < EACH; k++)
        for (int i = 0; i < CLIENTS; i++)
            CHECK_INT(hearth_db_set(dbs[i], "/hits", inc, on_done, &d, NULL,
                                    NULL),
                      0);
    hearth_node_decref(inc);
    CHECK(wait_count(&d, CLIENTS * EACH, 20000));
    CHECK_INT(d.errors, 0);
    char *j = get_json(dbs[3], "/hits");
    CHECK_STR(j, "800");
    free(j);
    for (int i = 0; i < CLIENTS; i++)
        hearth_db_close(dbs[i]);
    finish_server(s);
}

/* ---- REST and realtime share one order ---- */

/* Sends one HTTP request; returns the status code. */
static int http_request(int port, const char *method, const char *target,
                        const char *headers, const char *body) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_INT(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char req[2048];
    int n = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%s",
                     method, target, headers, strlen(body), body);
    CHECK(write(fd, req, (size_t)n) == n);
    char buf[1024];
    ssize_t got = read(fd, buf, sizeof buf - 1);
    int status = 0;
    if (got > 12) {
        buf[got] = '\0';
        sscanf(buf, "HTTP/1.1 %d", &status);
    }
    while (read(fd, buf, sizeof buf) > 0) {
    }
    close(fd);
    return status;
}

static void test_rest_reaches_listeners(void) {
    hearth_server_t *s = start_server(0);
    int port = hearth_server_port(s);
    hearth_db_t *a = client(port, "rest");
    watch w;
    watch_init(&w);
    observe(a, "/feed", NULL, &w);
    CHECK(wait_value(&w, "null", 5000));
    CHECK_INT(http_request(port, "PUT", "/feed/item.json?ns=rest", "",
                           "{\"from\":\"curl\"}"),
              200);
    CHECK(wait_value(&w, "{\"item\":{\"from\":\"curl\"}}", 5000));
    hearth_db_close(a);
    finish_server(s);
}

/* ---- rules and tokens ---- */

static bool wait_cancels(watch *w, int want, int ms) {
    return wait_at_least(&w->lock, &w->cancels, want, ms, "cancels");
}

static char *make_token(const char *uid) {
    char *token = NULL;
    hearth_error_t err;
    int rc = hearth_token_create(uid, NULL, "s3cret", 3600, &token, &err);
    if (rc)
        fprintf(stderr, "  token: %s\n", err.message);
    CHECK_INT(rc, 0);
    return token;
}

static const char *const private_rules =
    "{\"rules\": {\"private\": {\"$uid\": {"
    "\".read\": \"auth != null && auth.uid == $uid\","
    "\".write\": \"auth != null && auth.uid == $uid\"}}}}";

static hearth_server_t *start_rules_server(char *rules_path, size_t size) {
    make_data_dir();
    snprintf(rules_path, size, "%s.rules.json", data_dir);
    write_text(rules_path, private_rules);
    return start_with((hearth_server_config_t){
        .rules_file = rules_path, .auth_secret = "s3cret",
        .admin_secret = "0123456789abcdef-admin"});
}

/* A listen the rules refuse ends with a cancel event; a token lets it
 * through; a rules change revokes it (cancel again); a write the rules
 * refuse completes with HEARTH_EDENIED. */
static void test_tokens_and_cancelled_listens(void) {
    char rules_path[128];
    hearth_server_t *s = start_rules_server(rules_path, sizeof rules_path);
    int port = hearth_server_port(s);
    hearth_db_t *a = client(port, "auth");

    watch refused;
    watch_init(&refused);
    observe(a, "/private/ada", NULL, &refused);
    CHECK(wait_cancels(&refused, 1, 5000));
    CHECK_INT(refused.cancel_status, HEARTH_EDENIED);
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(a, "/private/ada", "{\"x\":1}", &d);
    CHECK(wait_count(&d, 1, 5000));
    CHECK_INT(d.last_status, HEARTH_EDENIED);
    /* The server's words reach the completion, with the path. */
    CHECK(strstr(d.detail, "/private/ada: ") == d.detail);
    CHECK(strstr(d.detail, "(permission_denied)") != NULL);
    CHECK(hearth_completion_error() == NULL); /* outside a callback */

    char *ada = make_token("ada");
    CHECK_INT(hearth_db_set_auth_token(a, ada), 0);
    watch w;
    watch_init(&w);
    observe(a, "/private/ada", NULL, &w);
    CHECK(wait_value(&w, "null", 5000));
    set_json(a, "/private/ada", "{\"x\":2}", &d);
    CHECK(wait_count(&d, 2, 5000));
    CHECK_INT(d.last_status, 0);
    CHECK(wait_value(&w, "{\"x\":2}", 5000));
    /* Not bob's. */
    set_json(a, "/private/bob", "1", &d);
    CHECK(wait_count(&d, 3, 5000));
    CHECK_INT(d.last_status, HEARTH_EDENIED);

    /* The rules change under the live listen: it is revoked. */
    CHECK_INT(http_request(port, "PUT", "/.settings/rules.json?ns=auth",
                           "Authorization: Bearer 0123456789abcdef-admin\r\n",
                           "{\"rules\": {\".read\": false, \".write\": false}}"),
              200);
    CHECK(wait_cancels(&w, 1, 5000));
    CHECK_INT(w.cancel_status, HEARTH_EDENIED);
    CHECK_INT(refused.cancels, 1); /* each observer ends once */

    /* Signed out: unauth. */
    CHECK_INT(hearth_db_set_auth_token(a, NULL), 0);
    hearth_db_close(a);
    hearth_free(ada);
    finish_server(s);
    unlink(rules_path);
}

/* A provider answers on every connection before anything else goes out. */
typedef struct provider {
    pthread_mutex_t lock;
    int calls;
    char *token;
    bool freed;
} provider;

static void provide(hearth_db_t *db, void *ctx) {
    provider *p = ctx;
    pthread_mutex_lock(&p->lock);
    p->calls++;
    pthread_mutex_unlock(&p->lock);
    CHECK_INT(hearth_db_set_auth_token(db, p->token), 0);
}

static void provider_gone(void *ctx) { ((provider *)ctx)->freed = true; }

static void test_token_provider(void) {
    char rules_path[128];
    hearth_server_t *s = start_rules_server(rules_path, sizeof rules_path);
    int port = hearth_server_port(s);
    hearth_db_t *b = client(port, "auth");
    provider p = {PTHREAD_MUTEX_INITIALIZER, 0, make_token("bob"), false};
    CHECK_INT(hearth_db_set_auth_provider(b, provide, &p, provider_gone), 0);
    watch w;
    watch_init(&w);
    observe(b, "/private/bob", NULL, &w);
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(b, "/private/bob", "\"hi\"", &d);
    CHECK(wait_count(&d, 1, 5000));
    CHECK_INT(d.last_status, 0);
    CHECK(wait_value(&w, "\"hi\"", 5000));
    CHECK_INT(w.cancels, 0);
    /* Reconnecting asks again. */
    int before = p.calls;
    CHECK_INT(hearth_db_set_online(b, false), 0);
    CHECK_INT(hearth_db_set_online(b, true), 0);
    set_json(b, "/private/bob", "\"again\"", &d);
    CHECK(wait_count(&d, 2, 5000));
    CHECK_INT(d.last_status, 0);
    pthread_mutex_lock(&p.lock);
    CHECK(p.calls > before);
    pthread_mutex_unlock(&p.lock);
    hearth_db_close(b);
    CHECK(p.freed);
    hearth_free(p.token);
    finish_server(s);
    unlink(rules_path);
}

/* A token that expires: the server sends `ac` and revokes the listens
 * that needed it (a cancel event); the provider is asked again and later
 * writes go out under the new token. */
typedef struct expiring {
    pthread_mutex_t lock;
    int calls;
    bool bad_first; /* the first token signed with another key instead */
} expiring;

static void provide_expiring(hearth_db_t *db, void *ctx) {
    expiring *e = ctx;
    pthread_mutex_lock(&e->lock);
    int call = ++e->calls;
    pthread_mutex_unlock(&e->lock);
    char *token = NULL;
    bool first = call == 1;
    CHECK_INT(hearth_token_create("ada", NULL, first && e->bad_first ? "other-key" : "s3cret",
                                  first && !e->bad_first ? 2 : 3600, &token, NULL),
              0);
    CHECK_INT(hearth_db_set_auth_token(db, token), 0);
    hearth_free(token);
}

static void test_token_expiry(void) {
    char rules_path[128];
    hearth_server_t *s = start_rules_server(rules_path, sizeof rules_path);
    int port = hearth_server_port(s);
    hearth_db_t *a = client(port, "auth");
    expiring e = {PTHREAD_MUTEX_INITIALIZER, 0, false};
    CHECK_INT(hearth_db_set_auth_provider(a, provide_expiring, &e, NULL), 0);
    watch w;
    watch_init(&w);
    observe(a, "/private/ada", NULL, &w);
    CHECK(wait_value(&w, "null", 5000));
    CHECK(wait_cancels(&w, 1, 6000));
    CHECK_INT(w.cancel_status, HEARTH_EDENIED);
    pthread_mutex_lock(&e.lock);
    CHECK(e.calls >= 2);
    pthread_mutex_unlock(&e.lock);
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(a, "/private/ada", "\"renewed\"", &d);
    CHECK(wait_count(&d, 1, 5000));
    CHECK_INT(d.last_status, 0);
    hearth_db_close(a);
    finish_server(s);
    unlink(rules_path);
}

/* A provider whose first token the server refuses (signed with another
 * key, as before the server has a rotated key): the client drops it,
 * connects again and asks again, and goes on as the user. */
static void test_token_refused_asks_again(void) {
    char rules_path[128];
    hearth_server_t *s = start_rules_server(rules_path, sizeof rules_path);
    int port = hearth_server_port(s);
    hearth_db_t *a = client(port, "auth");
    expiring e = {PTHREAD_MUTEX_INITIALIZER, 0, false};
    e.bad_first = true;
    CHECK_INT(hearth_db_set_auth_provider(a, provide_expiring, &e, NULL), 0);
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    double t0 = test_seconds();
    int status = HEARTH_EDENIED;
    /* A write on the refused connection may be refused; one after the
     * new connection goes through. */
    for (int i = 0; i < 10 && status; i++) {
        set_json(a, "/private/ada", "\"ok\"", &d);
        CHECK(wait_count(&d, i + 1, 5000));
        status = d.last_status;
    }
    CHECK_INT(status, 0);
    fprintf(stderr, "    accepted %.2f s after the first token was refused\n",
            test_seconds() - t0);
    pthread_mutex_lock(&e.lock);
    CHECK(e.calls >= 2);
    pthread_mutex_unlock(&e.lock);
    hearth_db_close(a);
    finish_server(s);
    unlink(rules_path);
}

/* ---- offline ---- */

static void test_offline_writes_and_info(void) {
    hearth_server_t *s = start_server(0);
    int port = hearth_server_port(s);
    hearth_db_t *a = client(port, "offline"), *b = client(port, "offline");
    watch conn, mine, theirs;
    watch_init(&conn);
    watch_init(&mine);
    watch_init(&theirs);
    observe(a, "/.info/connected", NULL, &conn);
    CHECK(wait_value(&conn, "true", 5000));
    observe(a, "/notes", NULL, &mine);
    observe(b, "/notes", NULL, &theirs);
    CHECK(wait_value(&theirs, "null", 5000));
    CHECK_INT(hearth_db_set_online(a, false), 0);
    CHECK(wait_value(&conn, "false", 5000));
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(a, "/notes/n1", "\"written offline\"", &d);
    /* Seen locally at once; not by the other client, not acknowledged. */
    CHECK(wait_value(&mine, "{\"n1\":\"written offline\"}", 5000));
    /* a has handled the write (online, it would be on the wire now); a
     * round trip of b's after it would bring b the write first. */
    barrier(a);
    round_trip(b);
    pthread_mutex_lock(&theirs.lock);
    CHECK_STR(theirs.last, "null");
    pthread_mutex_unlock(&theirs.lock);
    CHECK_INT(d.count, 0);
    /* A read offline answers from the cache. */
    char *j = get_json(a, "/notes/n1");
    CHECK_STR(j, "\"written offline\"");
    free(j);
    CHECK_INT(hearth_db_set_online(a, true), 0);
    CHECK(wait_value(&conn, "true", 5000));
    CHECK(wait_value(&theirs, "{\"n1\":\"written offline\"}", 5000));
    CHECK(wait_count(&d, 1, 5000));
    CHECK_INT(d.errors, 0);
    hearth_db_close(a);
    hearth_db_close(b);
    finish_server(s);
}

static void test_purge_outstanding_writes(void) {
    hearth_server_t *s = start_server(0);
    hearth_db_t *a = client(hearth_server_port(s), "purge");
    watch w;
    watch_init(&w);
    observe(a, "/draft", NULL, &w);
    CHECK(wait_value(&w, "null", 5000));
    CHECK_INT(hearth_db_set_online(a, false), 0);
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(a, "/draft/t", "\"typed offline\"", &d);
    CHECK_INT(hearth_db_transaction(a, "/draft/n", test_tx_increment, on_tx, &d, NULL,
                                    NULL),
              0);
    CHECK(wait_value(&w, "{\"n\":1,\"t\":\"typed offline\"}", 5000));
    CHECK_INT(hearth_db_purge_outstanding_writes(a), 0);
    CHECK(wait_value(&w, "null", 5000));
    CHECK(wait_count(&d, 2, 5000));
    CHECK_INT(d.errors, 2);
    CHECK_INT(hearth_db_set_online(a, true), 0);
    hearth_db_t *b = client(hearth_server_port(s), "purge");
    char *j = get_json(b, "/draft");
    CHECK_STR(j, "null");
    free(j);
    hearth_db_close(a);
    hearth_db_close(b);
    finish_server(s);
}

/* a is "online" at /status/a and "offline" once it disconnects, when it
 * also stamps /seen/a with the server's time and removes /rooms/r1/a; a
 * set of /status/b is asked for and then canceled. Five completions. */
static void arrange_presence(hearth_db_t *a, done *d) {
    set_json(a, "/status/a", "\"online\"", d);
    hearth_node_t *off = node_from("\"offline\"");
    CHECK_INT(hearth_db_on_disconnect_set(a, "/status/a", off, on_done, d,
                                          NULL, NULL),
              0);
    const char *paths[] = {"seen/a", "rooms/r1/a"};
    hearth_node_t *when = hearth_node_server_timestamp();
    const hearth_node_t *values[] = {when, hearth__node_empty()};
    CHECK_INT(hearth_db_on_disconnect_update(a, "/", 2, paths, values, on_done,
                                             d, NULL, NULL),
              0);
    hearth_node_decref(when);
    CHECK_INT(hearth_db_on_disconnect_set(a, "/status/b", off, on_done, d,
                                          NULL, NULL),
              0);
    CHECK_INT(hearth_db_on_disconnect_cancel(a, "/status/b", on_done, d, NULL,
                                             NULL),
              0);
    hearth_node_decref(off);
}

static void test_on_disconnect(void) {
    hearth_server_t *s = start_server(0);
    int port = hearth_server_port(s);
    hearth_db_t *a = client(port, "presence"), *b = client(port, "presence");
    watch w;
    watch_init(&w);
    observe(b, "/status/a", NULL, &w);
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    arrange_presence(a, &d);
    set_json(b, "/rooms/r1/a", "true", NULL);
    CHECK(wait_count(&d, 5, 5000));
    CHECK_INT(d.errors, 0);
    CHECK(wait_value(&w, "\"online\"", 5000));
    watch rooms;
    watch_init(&rooms);
    observe(b, "/rooms/r1", NULL, &rooms);
    CHECK(wait_value(&rooms, "{\"a\":true}", 5000));
    hearth_db_close(a);
    CHECK(wait_value(&w, "\"offline\"", 5000));
    CHECK(wait_value(&rooms, "null", 5000));
    char *j = get_json(b, "/status/b");
    CHECK_STR(j, "null");
    free(j);
    hearth_node_t *seen = NULL;
    CHECK_INT(hearth_db_get(b, "/seen/a", NULL, &seen, NULL), 0);
    CHECK(seen && hearth_node_type(seen) == HEARTH_TYPE_NUMBER &&
          hearth_node_number_value(seen) > 1.6e12);
    hearth_node_decref(seen);
    hearth_db_close(b);
    finish_server(s);
}

/* The connection drops: the client shows its accepted onDisconnect writes
 * at once, as the server will write them (server values estimated), and
 * not the canceled ones; online again, the server's data follows. */
static void test_on_disconnect_shown_locally(void) {
    hearth_server_t *s = start_server(0);
    hearth_db_t *a = client(hearth_server_port(s), "presence-local");
    watch status, kept, seen;
    watch_init(&status);
    watch_init(&kept);
    watch_init(&seen);
    observe(a, "/status/a", NULL, &status);
    observe(a, "/status/b", NULL, &kept);
    observe(a, "/seen", NULL, &seen);
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(a, "/status/b", "\"here\"", &d);
    arrange_presence(a, &d);
    CHECK(wait_count(&d, 6, 5000));
    CHECK_INT(d.errors, 0);
    CHECK(wait_value(&status, "\"online\"", 5000));
    CHECK(wait_value(&seen, "null", 5000));
    CHECK(wait_value(&kept, "\"here\"", 5000));
    pthread_mutex_lock(&kept.lock);
    int kept_values = kept.values;
    pthread_mutex_unlock(&kept.lock);
    int64_t before = (int64_t)time(NULL) * 1000 - 1000;
    CHECK_INT(hearth_db_set_online(a, false), 0);
    /* Offline: nothing but the client itself can say so. */
    CHECK(wait_value(&status, "\"offline\"", 5000));
    pthread_mutex_lock(&seen.lock);
    long long at = 0;
    CHECK(sscanf(seen.last, "{\"a\":%lld}", &at) == 1 && at >= before);
    pthread_mutex_unlock(&seen.lock);
    /* The same pass applied everything: the canceled one did not show. */
    pthread_mutex_lock(&kept.lock);
    CHECK_STR(kept.last, "\"here\"");
    CHECK_INT(kept.values, kept_values);
    pthread_mutex_unlock(&kept.lock);
    /* Online again: the server ran them too. */
    CHECK_INT(hearth_db_set_online(a, true), 0);
    hearth_db_t *b = client(hearth_server_port(s), "presence-local");
    char *j = get_json(b, "/status");
    CHECK_STR(j, "{\"a\":\"offline\",\"b\":\"here\"}");
    free(j);
    hearth_db_close(b);
    hearth_db_close(a);
    finish_server(s);
}

/* ---- new queries offline ---- */

static hearth_query_t *last(int n) {
    hearth_query_t *q;
    CHECK_INT(hearth_query_create(&q), 0);
    CHECK_INT(hearth_query_limit_to_last(q, n, NULL), 0);
    return q;
}

static void check_events(watch *w, const char *want) {
    pthread_mutex_lock(&w->lock);
    CHECK_STR(w->log, want);
    pthread_mutex_unlock(&w->lock);
}

static const char eight[] =
    "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8}";

/* /list holds eight children on the server (the write settled, so that
 * nothing local covers it) and q4, limitToLast(4), shows the last four. */
static void load_last_four(hearth_db_t *db, const hearth_query_t *q4,
                           watch *four) {
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(db, "/list", eight, &d);
    CHECK(wait_count(&d, 1, 5000));
    watch_init(four);
    observe(db, "/list", q4, four);
    CHECK(wait_value(four, "{\"e\":5,\"f\":6,\"g\":7,\"h\":8}", 5000));
}

/* Observes limitToLast(2) and (6) of /list, offline, where the last four
 * children are known: each shows what it knows of its window at once, and
 * no value (the server has not said what else there is). */
static void observe_windows_offline(hearth_db_t *db, watch *two, watch *six,
                                    hearth_query_t *q2, hearth_query_t *q6) {
    watch_init(two);
    watch_init(six);
    observe(db, "/list", q2, two);
    observe(db, "/list", q6, six);
    barrier(db);
    check_events(two, "0 g;0 h;");
    check_events(six, "0 e;0 f;0 g;0 h;");
}

/* A new query started offline shows the children that other queries
 * loaded; back online, the server completes it: the missing children and
 * the value, no duplicates. */
static void test_new_query_offline_uses_known_children(void) {
    hearth_server_t *s = start_server(0);
    hearth_db_t *a = client(hearth_server_port(s), "windows");
    hearth_query_t *q2 = last(2), *q4 = last(4), *q6 = last(6);
    watch four, two, six;
    load_last_four(a, q4, &four);
    CHECK_INT(hearth_db_set_online(a, false), 0);
    observe_windows_offline(a, &two, &six, q2, q6);
    CHECK_INT(hearth_db_set_online(a, true), 0);
    CHECK(wait_value(&six, "{\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8}",
                     5000));
    CHECK(wait_value(&two, "{\"g\":7,\"h\":8}", 5000));
    barrier(a);
    check_events(&two, "0 g;0 h;4 ;");
    check_events(&six, "0 e;0 f;0 g;0 h;0 c;0 d;4 ;");
    hearth_query_free(q2);
    hearth_query_free(q4);
    hearth_query_free(q6);
    hearth_db_close(a);
    finish_server(s);
}

/* The same from the cache on disk: a client started again with no server
 * seeds new queries from what an earlier query stored. */
static void test_new_query_offline_uses_the_disk_cache(void) {
    char cache[64] = "/tmp/hearth-cache-XXXXXX";
    CHECK(mkdtemp(cache) != NULL);
    hearth_server_t *s = start_server(0);
    int port = hearth_server_port(s);
    hearth_db_t *a = cached_client(port, "windows", cache, 0);
    hearth_query_t *q2 = last(2), *q4 = last(4), *q6 = last(6);
    watch four, two, six;
    load_last_four(a, q4, &four);
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(a, "/profile", "{\"name\":\"ada\"}", &d);
    CHECK(wait_count(&d, 1, 5000));
    watch profile;
    watch_init(&profile);
    observe(a, "/profile", NULL, &profile);
    CHECK(wait_value(&profile, "{\"name\":\"ada\"}", 5000));
    hearth_db_close(a); /* stores the views' data */
    finish_server(s);

    hearth_db_t *b = cached_client(port, "windows", cache, 0);
    CHECK_INT(hearth_db_set_online(b, false), 0);
    observe_windows_offline(b, &two, &six, q2, q6);
    pthread_mutex_lock(&six.lock);
    CHECK_INT(six.values + two.values, 0);
    pthread_mutex_unlock(&six.lock);
    /* Below a location stored whole, the data is complete. */
    watch name;
    watch_init(&name);
    observe(b, "/profile/name", NULL, &name);
    barrier(b);
    CHECK_STR(name.last, "\"ada\"");
    hearth_query_free(q2);
    hearth_query_free(q4);
    hearth_query_free(q6);
    hearth_db_close(b);
    remove_tree(cache);
}

/* A read offline with nothing cached fails in the SDK's words, naming the
 * query as the iOS SDK does. */
static void test_get_offline_uncached_message(void) {
    hearth_server_t *s = start_server(0);
    hearth_db_t *a = client(hearth_server_port(s), "uncached");
    CHECK_INT(hearth_db_set_online(a, false), 0);
    hearth_node_t *n = NULL;
    hearth_error_t err;
    CHECK_INT(hearth_db_get(a, "never/cached", NULL, &n, &err), HEARTH_EOFFLINE);
    CHECK_STR(err.message,
              "Unable to get latest value for query FQuerySpec (path: "
              "/never/cached, params: {}), client offline with no active "
              "listeners and no matching disk cache entries");
    hearth_query_t *q = last(2);
    CHECK_INT(hearth_db_get(a, "/never/cached", q, &n, &err), HEARTH_EOFFLINE);
    CHECK_STR(err.message,
              "Unable to get latest value for query FQuerySpec (path: "
              "/never/cached, params: {\n    l = 2;\n    vf = r;\n}), client "
              "offline with no active listeners and no matching disk cache "
              "entries");
    CHECK_STR(hearth_strerror(HEARTH_EOFFLINE),
              "client offline with no active listeners and no matching disk "
              "cache entries");
    hearth_query_free(q);
    hearth_db_close(a);
    finish_server(s);
}

/* ---- hostile hellos ---- */

static void events_dropped(void *ctx) {
    hearth__events_clear(ctx); /* nothing observes */
}

/* A hello whose clock is past any real time leaves the offset alone
 * instead of overflowing it. */
static void test_hello_with_absurd_clock(void) {
    uv_loop_t loop;
    CHECK_INT(uv_loop_init(&loop), 0);
    hearth__event_queue events;
    hearth__events_init(&events);
    hearth__remote_url url = {.host = "127.0.0.1", .port = 9, .ns = "clock"};
    hearth__remote_hooks hooks = {events_dropped, NULL, NULL, &events};
    hearth__remote *r;
    CHECK_INT(hearth__remote_open(&loop, &url, &events, &hooks, &r), 0);
    hearth__remote_set_online(r, false);
    static const char hello[] =
        "{\"t\":\"c\",\"d\":{\"t\":\"h\",\"d\":{\"ts\":-9.3e18,"
        "\"v\":\"5\",\"h\":\"x\",\"s\":\"1\"}}}";
    hearth__remote_feed(r, hello, strlen(hello));
    int64_t now = hearth__remote_server_now(r);
    CHECK(now > 1600000000000 && now < 4000000000000);
    hearth__remote_close(r);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    hearth__events_clear(&events);
}

/* ---- a client process killed outright ---- */

/* In a helper process: a server on PORT keeping its data in DIR. */
static int server_child(const char *arg) {
    int port;
    char data[128];
    if (sscanf(arg, "%d:%127s", &port, data) != 2)
        return 2;
    hearth_server_config_t config = {.size = sizeof config, .host = "127.0.0.1", .port = port,
                                     .data_dir = data,
                                     .fsync_mode = HEARTH_FSYNC_ALWAYS};
    hearth_server_t *s;
    if (hearth_server_start(&config, &s, NULL))
        return 1;
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}

/* In a helper process: a client with a cache, offline (nothing listens
 * on its port), makes two writes, waits until they are stored (the loop
 * has run them), says "ready" and waits to be killed. */
static void loop_reached(void *ctx) {
    done *d = ctx;
    on_done(0, d);
}

static int cached_writer_child(const char *arg) {
    int port;
    char dir[128];
    if (sscanf(arg, "%d:%127s", &port, dir) != 2)
        return 2;
    hearth_db_t *db = cached_client(port, "cache", dir, 0);
    set_json(db, "/w", "{\"a\":1}", NULL);
    hearth_node_t *inc = hearth_node_server_increment(5);
    hearth_db_set(db, "/w/n", inc, NULL, NULL, NULL, NULL);
    hearth_node_decref(inc);
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    hearth_db_call(db, loop_reached, &d, NULL);
    if (!wait_count(&d, 1, 5000))
        return 1;
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}

static hearth_server_t *exit_server;

static void stop_exit_server(void) {
    hearth_server_stop(exit_server);
    remove_tree(data_dir);
}

/* A program that stops its server in an atexit handler, the first use of
 * OpenSSL in the process being on the server's loop thread (an ETag). */
static int exit_stop_child(void) {
    exit_server = start_server(0);
    if (!exit_server)
        return 1;
    atexit(stop_exit_server);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons(hearth_server_port(exit_server)),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a))
        return 1;
    const char *req = "PUT /a.json HTTP/1.1\r\nHost: x\r\n"
                      "Authorization: Bearer owner\r\nX-Firebase-ETag: true\r\n"
                      "Content-Length: 1\r\nConnection: close\r\n\r\n1";
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
        return 1;
    char reply[2048];
    size_t got = 0;
    for (ssize_t n; (n = read(fd, reply + got, sizeof reply - 1 - got)) > 0;)
        got += (size_t)n;
    reply[got] = '\0';
    close(fd);
    return strstr(reply, "ETag: ") ? 0 : 1;
}

/* A helper process (see test.h): "server:PORT:DIR" serves;
 * "cachewriter:..." writes while offline; "exitstop" stops its server
 * at exit; "client:URL" marks itself online
 * with an onDisconnect that marks it offline, says "ready", and waits to be
 * killed. */
int test_child_main(const char *arg) {
    if (!strncmp(arg, "server:", 7))
        return server_child(arg + 7);
    if (!strncmp(arg, "cachewriter:", 12))
        return cached_writer_child(arg + 12);
    if (!strcmp(arg, "exitstop"))
        return exit_stop_child();
    if (strncmp(arg, "client:", 7))
        return 2;
    hearth_db_config_t config = {.size = sizeof config, .url = arg + 7};
    hearth_db_t *db;
    if (hearth_db_open(&config, &db, NULL))
        return 1;
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(db, "/status/child", "\"online\"", &d);
    hearth_node_t *off = node_from("\"offline\"");
    hearth_db_on_disconnect_set(db, "/status/child", off, on_done, &d, NULL,
                                NULL);
    hearth_node_decref(off);
    if (!wait_count(&d, 2, 10000) || d.errors)
        return 1;
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}

/* Runs this binary again as helper `arg`, returning once it said
 * "ready". */
static pid_t spawn_child(const char *arg) {
    int out[2];
    CHECK_INT(pipe(out), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        setenv("HEARTH_TEST_CHILD", arg, 1);
        execl("/proc/self/exe", "ctest", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char line[16] = "";
    ssize_t n = read(out[0], line, sizeof line - 1);
    CHECK(n > 0 && strncmp(line, "ready", 5) == 0);
    close(out[0]);
    return pid;
}

static void kill_child(pid_t pid) {
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
}

/* A server stopped by an atexit handler still frees its loop thread's
 * OpenSSL state: OpenSSL's own exit cleanup must come after the handler,
 * or the thread's OPENSSL_thread_stop finds OpenSSL gone and the state
 * leaks (LeakSanitizer fails the helper's exit). */
static void test_server_stopped_at_exit_leaks_nothing(void) {
    pid_t pid = fork();
    if (pid == 0) {
        setenv("HEARTH_TEST_CHILD", "exitstop", 1);
        execl("/proc/self/exe", "ctest", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    CHECK_INT(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_INT(WEXITSTATUS(status), 0);
}

static void test_on_disconnect_when_killed(void) {
    hearth_server_t *s = start_server(0);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d?ns=killed",
             hearth_server_port(s));
    hearth_db_t *b = client(hearth_server_port(s), "killed");
    watch w;
    watch_init(&w);
    observe(b, "/status/child", NULL, &w);
    char arg[160];
    snprintf(arg, sizeof arg, "client:%s", url);
    pid_t pid = spawn_child(arg);
    CHECK(wait_value(&w, "\"online\"", 5000));
    kill_child(pid);
    CHECK(wait_value(&w, "\"offline\"", 5000));
    hearth_db_close(b);
    finish_server(s);
}

/* The server process is killed (kill -9) while a client writes, and a new
 * one starts on the same port and data: the client reconnects, its queued
 * writes land exactly once, its listeners end with the server's data. */
static int free_port(void) {
    hearth_server_t *s = start_server(0);
    int port = hearth_server_port(s);
    finish_server(s);
    return port;
}

static void test_server_killed_and_restarted(void) {
    int port = free_port();
    char data[64] = "/tmp/hearth-killed-XXXXXX";
    CHECK(mkdtemp(data) != NULL);
    char arg[128];
    snprintf(arg, sizeof arg, "server:%d:%s", port, data);
    pid_t server = spawn_child(arg);
    hearth_db_t *a = client(port, "restart");
    watch w;
    watch_init(&w);
    observe(a, "/log", NULL, &w);
    CHECK(wait_value(&w, "null", 5000));
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(a, "/log/a", "1", &d);
    CHECK(wait_count(&d, 1, 5000));
    kill_child(server);
    set_json(a, "/log/b", "2", &d);
    hearth_node_t *inc = hearth_node_server_increment(5);
    CHECK_INT(hearth_db_set(a, "/log/c", inc, on_done, &d, NULL, NULL), 0);
    hearth_node_decref(inc);
    CHECK(wait_value(&w, "{\"a\":1,\"b\":2,\"c\":5}", 5000));
    sleep_ms(300);
    server = spawn_child(arg);
    CHECK(wait_count(&d, 3, 15000));
    CHECK_INT(d.errors, 0);
    /* Landed once: the increment was applied by the server exactly once. */
    hearth_db_t *b = client(port, "restart");
    char *j = get_json(b, "/log");
    CHECK_STR(j, "{\"a\":1,\"b\":2,\"c\":5}");
    free(j);
    CHECK(wait_value(&w, "{\"a\":1,\"b\":2,\"c\":5}", 5000));
    hearth_db_close(a);
    hearth_db_close(b);
    kill_child(server);
    remove_tree(data);
}

/* ---- the cache on disk ---- */

static void make_dir(char *tmpl) { CHECK(mkdtemp(tmpl) != NULL); }


/* A client restarted with no server shows what it had at once, from disk,
 * and reads answer from it. */
static void test_cache_serves_a_restart_offline(void) {
    char cache[64] = "/tmp/hearth-cache-XXXXXX";
    make_dir(cache);
    int port = free_port();
    char data[64] = "/tmp/hearth-cachesrv-XXXXXX";
    make_dir(data);
    char arg[160];
    snprintf(arg, sizeof arg, "server:%d:%s", port, data);
    pid_t server = spawn_child(arg);
    hearth_db_t *a = cached_client(port, "cache", cache, 0);
    set_json(a, "/list", "{\"x\":{\"n\":1},\"y\":{\"n\":2}}", NULL);
    watch w;
    watch_init(&w);
    observe(a, "/list", NULL, &w);
    CHECK(wait_value(&w, "{\"x\":{\"n\":1},\"y\":{\"n\":2}}", 5000));
    round_trip(a); /* the listen's answer is in; close stores it */
    hearth_db_close(a);
    kill_child(server);

    hearth_db_t *b = cached_client(port, "cache", cache, 0);
    watch again;
    watch_init(&again);
    observe(b, "/list", NULL, &again);
    /* From disk: the value arrives with nothing to connect to. */
    CHECK(wait_value(&again, "{\"x\":{\"n\":1},\"y\":{\"n\":2}}", 2000));
    char *j = get_json(b, "/list/y/n");
    CHECK_STR(j, "2");
    free(j);
    hearth_db_close(b);
    remove_tree(cache);
    remove_tree(data);
}

/* A client killed (SIGKILL) with writes pending: started again offline
 * its writes show at once; started online they land exactly once. */
static void test_cache_keeps_pending_writes_through_kill(void) {
    char cache[64] = "/tmp/hearth-cache-XXXXXX";
    make_dir(cache);
    int port = free_port();
    char arg[160];
    snprintf(arg, sizeof arg, "cachewriter:%d:%s", port, cache);
    pid_t writer = spawn_child(arg);
    kill_child(writer);

    /* Offline: the stored writes are laid over the (empty) data. */
    hearth_db_t *off = cached_client(port, "cache", cache, 0);
    watch w;
    watch_init(&w);
    observe(off, "/w", NULL, &w);
    CHECK(wait_value(&w, "{\"a\":1,\"n\":5}", 2000));
    hearth_db_close(off);

    char data[64] = "/tmp/hearth-cachesrv-XXXXXX";
    make_dir(data);
    snprintf(arg, sizeof arg, "server:%d:%s", port, data);
    pid_t server = spawn_child(arg);
    hearth_db_t *on = cached_client(port, "cache", cache, 0);
    hearth_db_t *other = client(port, "cache");
    watch seen;
    watch_init(&seen);
    observe(other, "/w", NULL, &seen);
    CHECK(wait_value(&seen, "{\"a\":1,\"n\":5}", 5000));
    /* The replayed writes are acknowledged (so forgotten on disk) once a
     * later write of on's is: the server acknowledges in write order. A
     * read is no barrier here: it is answered before the commit. */
    done acked = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(on, "/acked", "1", &acked);
    CHECK(wait_count(&acked, 1, 5000));
    /* Sent once: reopening again sends nothing more. */
    hearth_db_close(on);
    pthread_mutex_lock(&seen.lock);
    int values = seen.values;
    pthread_mutex_unlock(&seen.lock);
    hearth_db_t *third = cached_client(port, "cache", cache, 0);
    /* Anything third sends again goes before its read; the server's push
     * of it to other goes before other's read. A resent write shows as an
     * event even where it ends at the same data (the set, then the
     * increment again). */
    round_trip(third);
    round_trip(other);
    pthread_mutex_lock(&seen.lock);
    CHECK_INT(seen.values, values);
    pthread_mutex_unlock(&seen.lock);
    char *j = get_json(other, "/w/n");
    CHECK_STR(j, "5");
    free(j);
    hearth_db_close(third);
    hearth_db_close(other);
    kill_child(server);
    remove_tree(cache);
    remove_tree(data);
}

/* Random bytes over every cache file in dir (its WAL files removed). */
static void scribble_over_caches(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "for f in '%s'/*.sqlite; do head -c 4096 /dev/urandom > \"$f\"; "
             "done; rm -f '%s'/*-wal '%s'/*-shm",
             dir, dir, dir);
    CHECK_INT(system(cmd), 0);
}

static void test_cache_damaged_file_is_rebuilt(void) {
    char cache[64] = "/tmp/hearth-cache-XXXXXX";
    make_dir(cache);
    hearth_server_t *s = start_server(0);
    int port = hearth_server_port(s);
    hearth_db_t *a = cached_client(port, "dmg", cache, 0);
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(a, "/k", "1", &d);
    CHECK(wait_count(&d, 1, 5000));
    hearth_db_close(a);
    scribble_over_caches(cache);
    char cmd[512];
    hearth_db_t *b = cached_client(port, "dmg", cache, 0);
    CHECK(b != NULL);
    char *j = get_json(b, "/k");
    CHECK_STR(j, "1");
    free(j);
    set_json(b, "/k", "2", &d);
    CHECK(wait_count(&d, 2, 5000));
    CHECK_INT(d.errors, 0);
    hearth_db_close(b);
    /* The damaged file was kept aside. */
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q broken", cache);
    CHECK_INT(system(cmd), 0);
    finish_server(s);
    remove_tree(cache);
}

/* Where the cache's messages came from: the thread of the first message
 * naming `about`, and the messages' text. */
typedef struct cache_log {
    pthread_mutex_t lock;
    const char *about;
    bool seen;
    pthread_t thread;
    char text[1024];
} cache_log;

static void note_cache_log(void *user, hearth_log_level level,
                           const char *message) {
    (void)level;
    cache_log *c = user;
    pthread_mutex_lock(&c->lock);
    if (!c->seen && strstr(message, c->about)) {
        c->seen = true;
        c->thread = pthread_self();
        snprintf(c->text, sizeof c->text, "%s", message);
    }
    pthread_mutex_unlock(&c->lock);
}

static void note_thread(void *ctx) { *(pthread_t *)ctx = pthread_self(); }

/* The cache file is opened on the database's loop thread, never the
 * caller's (an app's main thread, usually): a damaged file's rebuild is
 * reported from the loop's thread, before anything asked after open; its
 * folder is made with its parents; one that cannot be made is reported
 * there too, and the client works on, in memory. */
static void test_cache_opens_on_the_loop_thread(void) {
    char cache[64] = "/tmp/hearth-cache-XXXXXX";
    make_dir(cache);
    int port = free_port(); /* nothing there: offline throughout */
    hearth_db_t *a = cached_client(port, "loop", cache, 0);
    set_json(a, "/k", "1", NULL);
    barrier(a);
    hearth_db_close(a);
    scribble_over_caches(cache);
    char cmd[512];

    cache_log c = {.lock = PTHREAD_MUTEX_INITIALIZER, .about = "rebuilding"};
    hearth_set_log(note_cache_log, &c);
    hearth_db_t *b = cached_client(port, "loop", cache, 0);
    pthread_t loop;
    CHECK_INT(hearth_db_call(b, note_thread, &loop, NULL), 0);
    barrier(b); /* the cache was opened first, then note_thread ran */
    pthread_mutex_lock(&c.lock);
    CHECK(c.seen);
    CHECK(c.seen && pthread_equal(c.thread, loop));
    CHECK(c.seen && !pthread_equal(c.thread, pthread_self()));
    pthread_mutex_unlock(&c.lock);
    hearth_db_close(b);

    /* Parents made: the file exists once the loop has run the open. */
    char deep[128];
    snprintf(deep, sizeof deep, "%s/app/support/hearth", cache);
    hearth_db_t *d = cached_client(port, "loop", deep, 0);
    barrier(d);
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q '[.]sqlite$'", deep);
    CHECK_INT(system(cmd), 0);
    hearth_db_close(d);

    /* Below a file: no folder can be made there. */
    cache_log bad = {.lock = PTHREAD_MUTEX_INITIALIZER, .about = "cannot be used"};
    hearth_set_log(note_cache_log, &bad);
    snprintf(deep, sizeof deep, "%s/app/support/hearth/plain", cache);
    FILE *f = fopen(deep, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    snprintf(deep, sizeof deep, "%s/app/support/hearth/plain/below", cache);
    hearth_db_t *e = cached_client(port, "loop", deep, 0);
    CHECK(e != NULL);
    set_json(e, "/m", "2", NULL);
    char *j = get_json(e, "/m"); /* in memory: the write shows */
    CHECK_STR(j, "2");
    free(j);
    pthread_mutex_lock(&bad.lock);
    CHECK(bad.seen);
    CHECK(strstr(bad.text, "cannot create the cache directory") != NULL);
    pthread_mutex_unlock(&bad.lock);
    hearth_db_close(e);
    hearth_set_log(hearth_log_stderr, NULL);
    remove_tree(cache);
}

static void test_cache_bounds(void) {
    char cache[64] = "/tmp/hearth-cache-XXXXXX";
    make_dir(cache);
    int port = free_port(); /* nothing there: offline */
    hearth_db_config_t bad = {.size = sizeof bad, .url = "http://127.0.0.1:1?ns=x",
                              .cache_dir = cache, .cache_size = 1000};
    hearth_db_t *db = NULL;
    hearth_error_t err;
    CHECK_INT(hearth_db_open(&bad, &db, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, "1 MB") != NULL);
    hearth_db_t *a = cached_client(port, "bound", cache, 1024 * 1024);
    /* 300 KB strings: the fourth passes the 1 MB bound for pending
     * writes and fails; the others stay. */
    char *big = malloc(300 * 1024 + 3);
    big[0] = '"';
    memset(big + 1, 'x', 300 * 1024);
    strcpy(big + 1 + 300 * 1024, "\"");
    hearth_node_t *v = node_from(big);
    free(big);
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    for (int i = 0; i < 4; i++) {
        char path[32];
        snprintf(path, sizeof path, "/big/%d", i);
        CHECK_INT(hearth_db_set(a, path, v, on_done, &d, NULL, NULL), 0);
    }
    hearth_node_decref(v);
    /* The first three wait for the server; the fourth fails at once. */
    CHECK(wait_count(&d, 1, 5000));
    CHECK_INT(d.count, 1);
    CHECK_INT(d.last_status, HEARTH_ETOOBIG);
    hearth_node_t *n = NULL;
    CHECK_INT(hearth_db_get(a, "/big/2", NULL, &n, NULL), 0);
    CHECK(n && hearth_node_type(n) == HEARTH_TYPE_STRING);
    hearth_node_decref(n);
    hearth_db_close(a);
    remove_tree(cache);
}

/* Server data past the bound goes least recently used first, except what
 * views hold. */
/* Caches made before 0.3 were named with a truncated FNV offset basis:
 * opened now, the file moves to its right name, the writes still in its
 * WAL included. */
static int count_writes_seen;
static void count_write(int64_t id, const char *action, const char *body,
                        void *ctx) {
    (void)id, (void)action, (void)body, (void)ctx;
    count_writes_seen++;
}

static void test_cache_of_the_old_name_moves(void) {
    char dir[64] = "/tmp/hearth-cache-XXXXXX";
    make_dir(dir);
    const char *url = "http://x?ns=old";
    hearth__disk *d;
    CHECK_INT(hearth__disk_open(dir, url, 0, &d, NULL), 0);
    CHECK_INT(hearth__disk_write_add(d, 7, "p", "{\"p\":\"/a\",\"d\":1}"), 0);
    char path[512], old[512], cmd[2200];
    snprintf(path, sizeof path, "%s", hearth__disk_path(d));
    /* The name before 0.3: the same, with the old hash. */
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = url; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    snprintf(old, sizeof old, "%s/http___x_ns_old-%016llx.sqlite", dir,
             (unsigned long long)h);
    CHECK(strcmp(old, path) != 0);
    /* Copied while open: the write is in the WAL only. */
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && cp '%s-wal' '%s-wal'", path,
             old, path, old);
    CHECK_INT(system(cmd), 0);
    hearth__disk_close(d);
    snprintf(cmd, sizeof cmd, "rm -f '%s' '%s-wal' '%s-shm'", path, path, path);
    CHECK_INT(system(cmd), 0);
    CHECK_INT(hearth__disk_open(dir, url, 0, &d, NULL), 0);
    CHECK_STR(hearth__disk_path(d), path);
    count_writes_seen = 0;
    hearth__disk_writes(d, count_write, NULL);
    CHECK_INT(count_writes_seen, 1);
    hearth__disk_close(d);
    CHECK(access(old, F_OK) != 0);
    snprintf(cmd, sizeof cmd, "%s-wal", old);
    CHECK(access(cmd, F_OK) != 0);
    remove_tree(dir);
}

static void test_cache_prunes_least_recently_used(void) {
    char dir[64] = "/tmp/hearth-cache-XXXXXX";
    make_dir(dir);
    hearth__disk *d;
    CHECK_INT(hearth__disk_open(dir, "http://x?ns=lru", 1024 * 1024, &d, NULL), 0);
    char *blob = malloc(400 * 1024 + 3);
    blob[0] = '"';
    memset(blob + 1, 'y', 400 * 1024);
    strcpy(blob + 1 + 400 * 1024, "\"");
    const char *views[] = {"/a|default", "/b|default", "/c|default", "/d|default"};
    for (int i = 0; i < 4; i++)
        CHECK_INT(hearth__disk_put(d, views[i], blob, strlen(blob)), 0);
    free(blob);
    size_t len;
    void *used = hearth__disk_get(d, "/a|default", &len); /* /a: used recently */
    CHECK_INT(len, 400 * 1024 + 2);
    hearth__free(used);
    const char *keep[] = {"/b|default"};           /* /b: a view holds it */
    hearth__disk_prune(d, keep, 1);
    void *a = hearth__disk_get(d, "/a|default", &len), *b = hearth__disk_get(d, "/b|default", &len);
    void *c = hearth__disk_get(d, "/c|default", &len), *e = hearth__disk_get(d, "/d|default", &len);
    CHECK(a != NULL); /* 2 x 400 KB fit */
    CHECK(b != NULL);
    CHECK(c == NULL); /* the oldest free ones went */
    CHECK(e == NULL);
    hearth__free(a);
    hearth__free(b);
    hearth__free(c);
    hearth__free(e);
    hearth__disk_close(d);
    remove_tree(dir);
}

/* What reaches stderr while a client of s in namespace ns, its messages
 * logged, writes value at /x and closes (the barrier: its loop has said
 * all it will): into buf, NUL-terminated. */
static void stderr_of_logged_write(hearth_server_t *s, const char *ns,
                                   const char *value, char *buf, size_t n) {
    int err_pipe[2];
    CHECK_INT(pipe(err_pipe), 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(err_pipe[1], 2);
    hearth_set_logging(true);
    hearth_db_t *a = client(hearth_server_port(s), ns);
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(a, "/x", value, &d);
    CHECK(wait_count(&d, 1, 5000));
    hearth_db_close(a);
    hearth_set_logging(false);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(err_pipe[1]);
    ssize_t got = read(err_pipe[0], buf, n - 1);
    close(err_pipe[0]);
    buf[got > 0 ? got : 0] = '\0';
}

/* hearth_set_logging: each message both ways, on stderr (the test
 * program's log function is hearth_log_stderr, as the CLI's). */
static void test_logging(void) {
    hearth_server_t *s = start_server(0);
    char buf[8192];
    stderr_of_logged_write(s, "logged", "42", buf, sizeof buf);
    CHECK(strstr(buf, "hearth: < {\"t\":\"c\"") != NULL);
    CHECK(strstr(buf, "hearth: > {\"t\":\"d\",\"d\":{\"r\":1,\"a\":\"p\"") != NULL);
    finish_server(s);
}

/* A client leaves the program's SIGPIPE disposition as it was (it once
 * set SIG_IGN for the whole process); its loop thread blocks the signal
 * for itself instead. */
static void test_sigpipe_untouched(void) {
    hearth_server_t *s = start_server(0); /* the server sets SIG_IGN, */
    signal(SIGPIPE, SIG_DFL);             /* so back to the default */
    hearth_db_t *a = client(hearth_server_port(s), "quiet");
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(a, "/x", "1", &d);
    CHECK(wait_count(&d, 1, 5000)); /* connected and written */
    struct sigaction during;
    CHECK_INT(sigaction(SIGPIPE, NULL, &during), 0);
    CHECK(during.sa_handler == SIG_DFL);
    signal(SIGPIPE, SIG_IGN); /* for the in-process server's writes */
    hearth_db_close(a);
    finish_server(s);
}

/* What a log function set with hearth_set_log gets. */
typedef struct captured {
    pthread_mutex_t lock;
    hearth__buf text; /* "LEVEL message\n" per message */
} captured;

static void capture_log(void *user, hearth_log_level level,
                        const char *message) {
    captured *c = user;
    pthread_mutex_lock(&c->lock);
    hearth__buf_printf(&c->text, "%d %s\n", (int)level, message);
    pthread_mutex_unlock(&c->lock);
}

/* Messages reach the program's log function, with their level and without
 * the "hearth: " of the stderr sink; with none set, nothing reaches stderr
 * (closing the database is the barrier: its loop said all it would). */
static void test_log_hook(void) {
    hearth_server_t *s = start_server(0);
    captured c = {PTHREAD_MUTEX_INITIALIZER, {0}};
    hearth__buf_init(&c.text);
    hearth_set_log(capture_log, &c);
    char buf[256];
    stderr_of_logged_write(s, "hooked", "42", buf, sizeof buf);
    CHECK_STR(buf, ""); /* all of it went to the function */
    hearth__buf_addc(&c.text, '\0');
    CHECK(strstr(c.text.data, "3 < {\"t\":\"c\"") != NULL);
    CHECK(strstr(c.text.data, "3 > {\"t\":\"d\",\"d\":{\"r\":1,\"a\":\"p\"") !=
          NULL);
    CHECK(strstr(c.text.data, "hearth:") == NULL);
    hearth__buf_free(&c.text);

    hearth_set_log(NULL, NULL);
    stderr_of_logged_write(s, "unhooked", "43", buf, sizeof buf);
    CHECK_STR(buf, ""); /* no log function: not a byte on stderr */
    hearth_set_log(hearth_log_stderr, NULL);
    finish_server(s);
}

static void test_urls(void) {
    static const struct {
        const char *url, *host, *ns;
        int port;
        bool tls;
    } good[] = {
        {"http://127.0.0.1:9000", "127.0.0.1", "default", 9000, false},
        {"http://localhost:9000/?ns=demo", "localhost", "demo", 9000, false},
        {"https://demo.firebaseio.com", "demo.firebaseio.com", "demo", 443,
         true},
        {"wss://x.example.com:8443/?a=1&ns=y", "x.example.com", "y", 8443,
         true},
        {"ws://host/", "host", "default", 80, false},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        hearth__remote_url u;
        CHECK_INT(hearth__remote_parse_url(good[i].url, &u, NULL), 0);
        CHECK_STR(u.host, good[i].host);
        CHECK_STR(u.ns, good[i].ns);
        CHECK_INT(u.port, good[i].port);
        CHECK_INT(u.tls, good[i].tls);
    }

    static const char *bad[] = {"ftp://x", "http://", "http://h:0?ns=a",
                                "http://h:99999?ns=a", "http://h?ns=",
                                "http://:80?ns=a"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        hearth_db_config_t config = {.size = sizeof config, .url = bad[i]};
        hearth_db_t *db = NULL;
        hearth_error_t err;
        CHECK_INT(hearth_db_open(&config, &db, &err), HEARTH_EINVAL);
        CHECK(err.message[0] != '\0');
    }
}

/* ---- listen hashes ---- */

/* A TCP relay on a loopback port to the server, counting the bytes the
 * server sends the client. While paused it holds no connection: the one
 * it relays is cut and new ones are refused. */
typedef struct relay {
    int listener, port, target;
    _Atomic size_t down;
    _Atomic bool paused, stop;
    _Atomic unsigned asked, done; /* pauses asked for, and seen through */
    _Atomic unsigned relayed;     /* connections relayed so far */
    pthread_t thread;
} relay;

static void relay_pair_close(int pair[2]) {
    for (int i = 0; i < 2; i++)
        if (pair[i] >= 0)
            close(pair[i]);
    pair[0] = pair[1] = -1;
}

/* Moves what one side has to the other; false when either side ended. */
static bool relay_move(relay *r, int from, int to, bool down) {
    char buf[65536];
    ssize_t n = read(from, buf, sizeof buf);
    if (n <= 0)
        return false;
    if (down)
        atomic_fetch_add(&r->down, (size_t)n);
    for (ssize_t at = 0; at < n;) {
        ssize_t k = write(to, buf + at, (size_t)(n - at));
        if (k <= 0)
            return false;
        at += k;
    }
    return true;
}

static void *relay_run(void *arg) {
    relay *r = arg;
    int pair[2] = {-1, -1}; /* client, server */
    while (!atomic_load(&r->stop)) {
        if (atomic_load(&r->paused)) {
            relay_pair_close(pair);
            atomic_store(&r->done, atomic_load(&r->asked));
        }
        struct pollfd p[3] = {{r->listener, POLLIN, 0}, {pair[0], POLLIN, 0},
                              {pair[1], POLLIN, 0}};
        if (poll(p, 3, 10) <= 0)
            continue;
        if (p[0].revents & POLLIN) {
            int c = accept(r->listener, NULL, NULL);
            if (c >= 0 && (atomic_load(&r->paused) || pair[0] >= 0)) {
                close(c);
            } else if (c >= 0) {
                struct sockaddr_in a = {.sin_family = AF_INET,
                                        .sin_port = htons((uint16_t)r->target)};
                a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                pair[0] = c;
                pair[1] = socket(AF_INET, SOCK_STREAM, 0);
                if (connect(pair[1], (struct sockaddr *)&a, sizeof a))
                    relay_pair_close(pair);
                else
                    atomic_fetch_add(&r->relayed, 1);
            }
        }
        if (((p[1].revents & (POLLIN | POLLHUP)) && !relay_move(r, pair[0], pair[1], false)) ||
            ((p[2].revents & (POLLIN | POLLHUP)) && !relay_move(r, pair[1], pair[0], true)))
            relay_pair_close(pair);
    }
    relay_pair_close(pair);
    return NULL;
}

static void relay_start(relay *r, int target) {
    memset(r, 0, sizeof *r);
    r->target = target;
    r->listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    CHECK_INT(bind(r->listener, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_INT(listen(r->listener, 8), 0);
    CHECK_INT(getsockname(r->listener, (struct sockaddr *)&a, &len), 0);
    r->port = ntohs(a.sin_port);
    CHECK_INT(pthread_create(&r->thread, NULL, relay_run, r), 0);
}

/* Cuts the relayed connection and refuses new ones until relay_resume. */
static void relay_pause(relay *r) {
    atomic_store(&r->paused, true);
    unsigned want = atomic_fetch_add(&r->asked, 1) + 1;
    while (atomic_load(&r->done) < want)
        sleep_ms(1);
}

static void relay_resume(relay *r) { atomic_store(&r->paused, false); }

static void relay_stop(relay *r) {
    atomic_store(&r->stop, true);
    pthread_join(r->thread, NULL);
    close(r->listener);
}

/* The last value of an observer, whole. */
typedef struct last_value {
    pthread_mutex_t lock;
    char *json;
    int values;
} last_value;

static void on_last_value(const hearth_event_t *e, void *ctx) {
    last_value *v = ctx;
    if (e->type != HEARTH_EVENT_VALUE)
        return;
    char *j = hearth_node_to_json(e->node, 0, NULL);
    pthread_mutex_lock(&v->lock);
    free(v->json);
    v->json = strdup(j);
    v->values++;
    pthread_mutex_unlock(&v->lock);
    hearth_free(j);
}

static bool last_value_is(last_value *v, const char *want) {
    pthread_mutex_lock(&v->lock);
    bool same = v->json && strcmp(v->json, want) == 0;
    pthread_mutex_unlock(&v->lock);
    return same;
}

/* 50 children of 200 bytes each: "{\"k10\":\"aaa...\",...}". */
static char *big_list(char fill) {
    static const size_t n = 50, len = 200;
    char *out = malloc(n * (len + 16) + 3), *at = out;
    *at++ = '{';
    for (size_t i = 0; i < n; i++) {
        at += sprintf(at, "%s\"k%zu\":\"", i ? "," : "", 10 + i);
        memset(at, fill, len);
        at += len;
        *at++ = '"';
    }
    strcpy(at, "}");
    return out;
}

/* A client that reconnects, or opens on its disk cache, holding data the
 * server still has sends the hash of it with each listen (the whole list,
 * and a tagged query's window): the server sends no data back, and the
 * observers show the cached data as the server's. When the data changed,
 * it is sent. */
static void test_listen_hash_spares_unchanged_data(void) {
    hearth_server_t *s = start_server(0);
    relay rl;
    relay_start(&rl, hearth_server_port(s));
    char cache[64] = "/tmp/hearth-cache-XXXXXX";
    make_dir(cache);
    char *list = big_list('a'), *changed = big_list('b');
    hearth_db_t *writer = client(hearth_server_port(s), "hash");
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(writer, "/list", list, &d);
    CHECK(wait_count(&d, 1, 5000));

    hearth_db_t *a = cached_client(rl.port, "hash", cache, 0);
    last_value all = {PTHREAD_MUTEX_INITIALIZER, NULL, 0},
               last = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};
    hearth_query_t *q;
    hearth_observer_t h;
    CHECK_INT(hearth_query_create(&q), 0);
    CHECK_INT(hearth_query_limit_to_last(q, 2, NULL), 0);
    CHECK_INT(hearth_db_observe(a, "/list", NULL, HEARTH_MASK_VALUE, on_last_value,
                                &all, NULL, &h, NULL), 0);
    CHECK_INT(hearth_db_observe(a, "/list", q, HEARTH_MASK_VALUE, on_last_value,
                                &last, NULL, &h, NULL), 0);
    round_trip(a);
    CHECK(last_value_is(&all, list));
    CHECK(atomic_load(&rl.down) > strlen(list)); /* the first time, sent */

    /* Reconnecting, unchanged: the hello, two oks and the round trip (on
     * a new connection: the relay counts it). */
    relay_pause(&rl);
    atomic_store(&rl.down, 0);
    unsigned relayed = atomic_load(&rl.relayed);
    relay_resume(&rl);
    round_trip(a);
    CHECK(atomic_load(&rl.relayed) == relayed + 1);
    CHECK(atomic_load(&rl.down) < 1000);
    CHECK(last_value_is(&all, list));

    /* Reconnecting after a change made while cut off: sent. */
    relay_pause(&rl);
    atomic_store(&rl.down, 0);
    set_json(writer, "/list", changed, &d);
    CHECK(wait_count(&d, 2, 5000));
    relay_resume(&rl);
    round_trip(a);
    CHECK(atomic_load(&rl.down) > strlen(changed));
    CHECK(last_value_is(&all, changed));
    hearth_db_close(a);

    /* A new client on the same disk cache: its values come from the
     * cache, the server sends none of the data, and they stand. */
    atomic_store(&rl.down, 0);
    hearth_db_t *b = cached_client(rl.port, "hash", cache, 0);
    last_value again = {PTHREAD_MUTEX_INITIALIZER, NULL, 0},
               window = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};
    CHECK_INT(hearth_db_observe(b, "/list", NULL, HEARTH_MASK_VALUE, on_last_value,
                                &again, NULL, &h, NULL), 0);
    CHECK_INT(hearth_db_observe(b, "/list", q, HEARTH_MASK_VALUE, on_last_value,
                                &window, NULL, &h, NULL), 0);
    round_trip(b);
    CHECK(atomic_load(&rl.down) < 1000);
    CHECK(last_value_is(&again, changed));
    CHECK(window.json && strstr(window.json, "\"k58\"") && strstr(window.json, "\"k59\"") &&
          !strstr(window.json, "\"k57\""));
    char *j = get_json(b, "/list/k10");
    CHECK(j[1] == 'b');
    free(j);
    hearth_db_close(b);

    hearth_query_free(q);
    free(all.json);
    free(last.json);
    free(again.json);
    free(window.json);
    free(list);
    free(changed);
    hearth_db_close(writer);
    relay_stop(&rl);
    remove_tree(cache);
    finish_server(s);
}

/* Writes json at path and waits for the server's acknowledgement. */
static void write_acked(hearth_db_t *db, const char *path, const char *json) {
    done d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    set_json(db, path, json, &d);
    CHECK(wait_count(&d, 1, 5000));
    CHECK_INT(d.errors, 0);
}

/* hearth_db_reconnect_now: a client waiting out its backoff connects at
 * once. The first retry is made 10 to 20 s away, so a connection within
 * the test can only come from the call; before it, the server has been up
 * a second without the client connecting (the control). */
static void test_reconnect_now(void) {
    atomic_store(&hearth__remote_test_first_delay_ms, 20000);
    int port = free_port();
    hearth_db_t *a = client(port, "again"); /* refused: nothing listens */
    watch w;
    watch_init(&w);
    observe(a, "/.info/connected", NULL, &w);
    CHECK(wait_value(&w, "false", 5000));
    sleep_ms(200); /* the refusal (loopback: at once) and the retry set */
    char data[64] = "/tmp/hearth-again-XXXXXX";
    CHECK(mkdtemp(data) != NULL);
    char arg[128];
    snprintf(arg, sizeof arg, "server:%d:%s", port, data);
    pid_t server = spawn_child(arg);
    CHECK(!wait_value(&w, "true", 1000)); /* the control: still waiting */
    CHECK_INT(hearth_db_reconnect_now(a), 0);
    CHECK(wait_value(&w, "true", 5000));
    CHECK_INT(hearth_db_reconnect_now(a), 0); /* connected: nothing */
    write_acked(a, "/x", "1");
    hearth_db_close(a);
    kill_child(server);
    remove_tree(data);
    hearth_db_t *e = NULL;
    CHECK_INT(hearth_db_open(NULL, &e, NULL), 0); /* embedded: no server */
    CHECK_INT(hearth_db_reconnect_now(e), HEARTH_EUNSUPPORTED);
    hearth_db_close(e);
}

/* Sent messages seen through the log function. */
static bool saw_sent(captured *c, const char *line) {
    pthread_mutex_lock(&c->lock);
    hearth__buf_addc(&c->text, '\0');
    bool seen = !c->text.failed && strstr(c->text.data, line) != NULL;
    c->text.len--;
    pthread_mutex_unlock(&c->lock);
    return seen;
}

/* While idle, a connected client sends the protocol's keep-alive ("0",
 * here every 100 ms instead of 45 s), and the server takes it: writes go
 * on being acknowledged on that connection. */
static void test_keepalive(void) {
    atomic_store(&hearth__remote_test_keepalive_ms, 100);
    hearth_server_t *s = start_server(0);
    captured c = {PTHREAD_MUTEX_INITIALIZER, {0}};
    hearth__buf_init(&c.text);
    hearth_set_log(capture_log, &c);
    hearth_set_logging(true);
    hearth_db_t *a = client(hearth_server_port(s), "alive");
    write_acked(a, "/x", "1");
    bool seen = false;
    for (int i = 0; i < 100 && !(seen = saw_sent(&c, "\n3 > 0\n")); i++)
        sleep_ms(20);
    CHECK(seen);
    write_acked(a, "/y", "2"); /* after keep-alives: still acknowledged */
    hearth_db_close(a);
    hearth_set_logging(false);
    hearth_set_log(hearth_log_stderr, NULL);
    hearth__buf_free(&c.text);
    finish_server(s);
}

/* ---- a transport of the test's own (hearth_transport_t) ---- */

/* The program's transport, as an app's would be: its own thread and loop
 * (here the built-in WebSocket client on them, as URLSession would be the
 * system's), reporting from that thread. Commands from the database's
 * loop are queued to it. */
typedef struct tconn {
    struct tconn *next;
    struct ttransport *tt;
    hearth_ws_t *ws;
    hearth__wsc *c;
    char url[256];
    bool over; /* closed reported */
} tconn;

typedef struct tcmd {
    struct tcmd *next;
    enum { T_OPEN, T_SEND, T_CLOSE, T_QUIT } kind;
    tconn *conn;
    size_t len;
    char text[];
} tcmd;

typedef struct ttransport {
    uv_loop_t loop;
    uv_async_t wake;
    uv_thread_t thread;
    pthread_mutex_t lock;
    tcmd *head, *tail;
    tconn *conns;
    bool refuse; /* open returns NULL */
    atomic_int opens, sends, closes, reported_closed;
} ttransport;

static void t_opened(void *user) { hearth_ws_opened(((tconn *)user)->ws); }

static void t_message(void *user, const char *text, size_t len) {
    hearth_ws_message(((tconn *)user)->ws, text, len);
}

static void t_closed(void *user, int status, const char *why) {
    tconn *c = user;
    c->c = NULL; /* the built-in client frees itself */
    c->over = true;
    atomic_fetch_add(&c->tt->reported_closed, 1);
    hearth_ws_closed(c->ws, status, why);
}

static void t_run(tconn *c, tcmd *m) {
    static const hearth__wsc_callbacks cb = {t_opened, t_message, t_closed};
    if (m->kind == T_OPEN) {
        char host[64], resource[160];
        int port;
        if (sscanf(c->url, "ws://%63[^:]:%d%159s", host, &port, resource) != 3 ||
            hearth__wsc_connect(&c->tt->loop, host, port, resource, false, &cb,
                                c, &c->c)) {
            c->over = true;
            atomic_fetch_add(&c->tt->reported_closed, 1);
            hearth_ws_closed(c->ws, HEARTH_EIO, "cannot connect");
        }
    } else if (m->kind == T_SEND && c->c && !c->over) {
        hearth__wsc_send(c->c, m->text, m->len);
    } else if (m->kind == T_CLOSE && !c->over) {
        if (c->c)
            hearth__wsc_close(c->c); /* no callback after this */
        c->c = NULL;
        c->over = true;
        atomic_fetch_add(&c->tt->reported_closed, 1);
        hearth_ws_closed(c->ws, 0, "closed by the client");
    }
}

static void t_wake(uv_async_t *a) {
    ttransport *tt = a->data;
    pthread_mutex_lock(&tt->lock);
    tcmd *m = tt->head;
    tt->head = tt->tail = NULL;
    pthread_mutex_unlock(&tt->lock);
    while (m) {
        tcmd *next = m->next;
        if (m->kind == T_QUIT)
            uv_close((uv_handle_t *)&tt->wake, NULL);
        else
            t_run(m->conn, m);
        free(m);
        m = next;
    }
}

static void t_main(void *arg) {
    ttransport *tt = arg;
    uv_run(&tt->loop, UV_RUN_DEFAULT);
}

static void t_post(ttransport *tt, int kind, tconn *c, const char *text,
                   size_t len) {
    tcmd *m = malloc(sizeof *m + len);
    m->next = NULL;
    m->kind = kind;
    m->conn = c;
    m->len = len;
    if (len)
        memcpy(m->text, text, len);
    pthread_mutex_lock(&tt->lock);
    if (tt->tail)
        tt->tail->next = m;
    else
        tt->head = m;
    tt->tail = m;
    pthread_mutex_unlock(&tt->lock);
    uv_async_send(&tt->wake);
}

static void *t_open(void *user, const char *url, hearth_ws_t *ws) {
    ttransport *tt = user;
    atomic_fetch_add(&tt->opens, 1);
    if (tt->refuse)
        return NULL;
    tconn *c = calloc(1, sizeof *c);
    c->tt = tt;
    c->ws = ws;
    snprintf(c->url, sizeof c->url, "%s", url);
    pthread_mutex_lock(&tt->lock);
    c->next = tt->conns;
    tt->conns = c;
    pthread_mutex_unlock(&tt->lock);
    t_post(tt, T_OPEN, c, NULL, 0);
    return c;
}

static int t_send(void *user, void *conn, const char *text, size_t len) {
    atomic_fetch_add(&((ttransport *)user)->sends, 1);
    t_post(user, T_SEND, conn, text, len);
    return 0;
}

static void t_close(void *user, void *conn) {
    atomic_fetch_add(&((ttransport *)user)->closes, 1);
    t_post(user, T_CLOSE, conn, NULL, 0);
}

static void t_start(ttransport *tt) {
    memset(tt, 0, sizeof *tt);
    pthread_mutex_init(&tt->lock, NULL);
    CHECK_INT(uv_loop_init(&tt->loop), 0);
    CHECK_INT(uv_async_init(&tt->loop, &tt->wake, t_wake), 0);
    tt->wake.data = tt;
    CHECK_INT(uv_thread_create(&tt->thread, t_main, tt), 0);
}

static void t_stop(ttransport *tt) {
    t_post(tt, T_QUIT, NULL, NULL, 0);
    uv_thread_join(&tt->thread);
    uv_loop_close(&tt->loop);
    while (tt->conns) {
        tconn *c = tt->conns;
        tt->conns = c->next;
        free(c);
    }
    pthread_mutex_destroy(&tt->lock);
}

static hearth_db_t *transport_client(int port, const char *ns, ttransport *tt) {
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d?ns=%s", port, ns);
    hearth_transport_t t = {tt, t_open, t_send, t_close};
    hearth_db_config_t config = {.size = sizeof config, .url = url,
                                 .transport = &t}; /* copied */
    hearth_db_t *db = NULL;
    CHECK_INT(hearth_db_open(&config, &db, NULL), 0);
    return db;
}

/* A client whose every byte goes through the program's transport: writes
 * reach the server (another client reads them), the server's pushes come
 * back, going offline closes the transport's connection and coming back
 * opens another; the database's close waits for the transport's closed. */
static void test_transport_carries_the_client(void) {
    hearth_server_t *s = start_server(0);
    int port = hearth_server_port(s);
    ttransport tt;
    t_start(&tt);
    hearth_db_t *a = transport_client(port, "carried", &tt);
    write_acked(a, "/x", "42");
    hearth_db_t *b = client(port, "carried");
    char *j = get_json(b, "/x");
    CHECK_STR(j, "42");
    free(j);
    watch w;
    watch_init(&w);
    observe(a, "/y", NULL, &w);
    write_acked(b, "/y", "\"from b\"");
    CHECK(wait_value(&w, "\"from b\"", 5000));
    CHECK_INT(atomic_load(&tt.opens), 1);
    CHECK(atomic_load(&tt.sends) >= 2); /* the write, the listen */

    watch conn;
    watch_init(&conn);
    observe(a, "/.info/connected", NULL, &conn);
    CHECK(wait_value(&conn, "true", 5000));
    CHECK_INT(hearth_db_set_online(a, false), 0);
    CHECK(wait_value(&conn, "false", 5000));
    CHECK_INT(atomic_load(&tt.closes), 1);
    CHECK_INT(hearth_db_set_online(a, true), 0);
    CHECK(wait_value(&conn, "true", 5000));
    CHECK_INT(atomic_load(&tt.opens), 2);
    write_acked(a, "/z", "1");

    hearth_db_close(a); /* returns once the transport reported closed */
    CHECK_INT(atomic_load(&tt.closes), 2);
    CHECK_INT(atomic_load(&tt.reported_closed), 2);
    hearth_db_close(b);
    t_stop(&tt);
    finish_server(s);
}

/* A transport that refuses to open leaves the client offline, retrying
 * through it (and never through the built-in one: the server sees no
 * connection); one missing a function is refused at open. */
static void test_transport_refusing(void) {
    hearth_server_t *s = start_server(0);
    ttransport tt;
    t_start(&tt);
    tt.refuse = true;
    hearth_db_t *a = transport_client(hearth_server_port(s), "refused", &tt);
    watch conn;
    watch_init(&conn);
    observe(a, "/.info/connected", NULL, &conn);
    CHECK(wait_value(&conn, "false", 5000));
    CHECK_INT(hearth_db_reconnect_now(a), 0);
    for (int i = 0; i < 100 && atomic_load(&tt.opens) < 2; i++)
        sleep_ms(10);
    CHECK(atomic_load(&tt.opens) >= 2);
    CHECK(!wait_value(&conn, "true", 300));
    hearth_db_close(a);
    CHECK_INT(atomic_load(&tt.reported_closed), 0);

    hearth_transport_t partial = {&tt, t_open, NULL, t_close};
    hearth_db_config_t config = {.size = sizeof config,
                                 .url = "http://127.0.0.1:1?ns=x",
                                 .transport = &partial};
    hearth_db_t *db = NULL;
    hearth_error_t err;
    CHECK_INT(hearth_db_open(&config, &db, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, "open, send and close") != NULL);
    t_stop(&tt);
    finish_server(s);
}

const test_case client_tests[] = {
    {"client_local_events_first", test_local_events_first},
    {"client_two_clients", test_two_clients},
    {"client_queries_over_the_wire", test_queries_over_the_wire},
    {"client_many_namespaces", test_many_namespaces},
    {"client_contended_transactions", test_contended_transactions},
    {"client_racing_transactions", test_racing_transactions},
    {"client_transactions_from_completions", test_transactions_from_completions},
    {"client_contended_increments", test_contended_increments},
    {"client_rest_reaches_listeners", test_rest_reaches_listeners},
    {"client_offline_writes_and_info", test_offline_writes_and_info},
    {"client_purge_outstanding_writes", test_purge_outstanding_writes},
    {"client_on_disconnect", test_on_disconnect},
    {"client_on_disconnect_shown_locally", test_on_disconnect_shown_locally},
    {"client_new_query_offline_uses_known_children",
     test_new_query_offline_uses_known_children},
    {"client_new_query_offline_uses_the_disk_cache",
     test_new_query_offline_uses_the_disk_cache},
    {"client_get_offline_uncached_message", test_get_offline_uncached_message},
    {"client_hello_with_absurd_clock", test_hello_with_absurd_clock},
    {"client_server_stopped_at_exit_leaks_nothing",
     test_server_stopped_at_exit_leaks_nothing},
    {"client_on_disconnect_when_killed", test_on_disconnect_when_killed},
    {"client_server_killed_and_restarted", test_server_killed_and_restarted},
    {"client_cache_serves_a_restart_offline", test_cache_serves_a_restart_offline},
    {"client_cache_keeps_pending_writes_through_kill",
     test_cache_keeps_pending_writes_through_kill},
    {"client_cache_damaged_file_is_rebuilt", test_cache_damaged_file_is_rebuilt},
    {"client_cache_opens_on_the_loop_thread", test_cache_opens_on_the_loop_thread},
    {"client_cache_bounds", test_cache_bounds},
    {"client_cache_prunes_least_recently_used", test_cache_prunes_least_recently_used},
    {"client_cache_of_the_old_name_moves", test_cache_of_the_old_name_moves},
    {"client_logging", test_logging},
    {"client_log_hook", test_log_hook},
    {"client_sigpipe_untouched", test_sigpipe_untouched},
    {"client_reconnect_now", test_reconnect_now},
    {"client_keepalive", test_keepalive},
    {"client_transport_carries_the_client", test_transport_carries_the_client},
    {"client_transport_refusing", test_transport_refusing},
    {"client_tokens_and_cancelled_listens", test_tokens_and_cancelled_listens},
    {"client_token_provider", test_token_provider},
    {"client_token_expiry", test_token_expiry},
    {"client_token_refused_asks_again", test_token_refused_asks_again},
    {"client_urls", test_urls},
    {"client_listen_hash_spares_unchanged_data", test_listen_hash_spares_unchanged_data},
    {NULL, NULL},
};
