/*
 * realtime_bench.c - Hearth's realtime path beside anchors measured in the
 * same process, against an in-process server (hearth_server_start on
 * 127.0.0.1, a free port, a temporary data directory removed at exit,
 * fsync off) and client databases opened on its URL (namespace "bench"):
 *
 *   1. Local write to an own listener. A client database observes /local
 *       (value events); on its loop thread (hearth_db_call) it does N sets,
 *       each timed from just before hearth_db_set to the value event, which
 *       fires inside the call. Anchor: the same on an embedded in-memory
 *       database (hearth_db_open(NULL)). The two sides alternate in chunks
 *       of sets; between chunks each waits for its acknowledgements
 *       (untimed), so the client's queue to the server stays short.
 *   2. A write on client A to a value event on client B, over loopback: B
 *       observes /ab, A sets /ab to a counter, one write at a time (the
 *       next one only after B saw the last); timed from just before
 *       hearth_db_set on A's loop thread to B's callback on B's. Anchor:
 *       a request/response round trip over a WebSocket of our own to the
 *       same server's /.ws?v=5&ns=bench (a stats request, which the server
 *       answers at once), timed from before the send to the reply's
 *       arrival. The two alternate round by round. Goal: A-to-B within 2x
 *       of the echo, at p50 and at p99.
 *   3. Eight contending clients increment one location with
 *       hearth_db_transaction, each issuing its next transaction when the
 *       previous one completes, for a fixed time; then the same with each
 *       client queueing 100 at a time (the client runs a path's queued
 *       transactions on its local value and sends one compare-and-set),
 *       the next 100 from the completion of the last of them.
 *       Update function calls are counted (a lost race runs them again).
 *       Anchor: the same eight clients incrementing with the server value
 *       {".sv": {"increment": 1}}, one set at a time each (the server adds;
 *       nothing to race). After each run the value on the server must
 *       equal the number of committed increments.
 *
 * Run: `make bench-realtime` (or build/bench-realtime; about 15-25 s).
 * Exits 1 when a run of 3 leaves a server value other than its count.
 *
 * Timestamps are CLOCK_MONOTONIC (the same clock on every thread). The
 * machine may be shared: compare ratios, not absolute figures.
 */
#include "hearth.h"
#include "bench_common.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    LOCAL_N = 20000,     /* sets per side in 1 */
    LOCAL_CHUNK = 500,   /* sets per turn of a side */
    AB_WARMUP = 200,     /* round trips in 2 before timing */
    AB_ROUNDS = 2000,    /* timed round trips in 2, of each kind */
    RACERS = 8,          /* clients in 3 */
    BATCH_TXS = 100,     /* transactions queued at once in 3's batched run */
    RACE_SECS = 4,       /* each run of 3 */
    WAIT_SECS = 30,      /* longest wait for anything before giving up */
};

/* ---- helpers (the shared ones are in bench_common.c) ---- */

const char bench_name[] = "bench-realtime";

static const char *data_dir; /* bench_data_dir_create's */

static void wait_sem(sem_t *s, const char *what) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += WAIT_SECS;
    while (sem_timedwait(s, &ts))
        if (errno != EINTR)
            die("no %s within %d s", what, WAIT_SECS);
}

static void on_loop(hearth_db_t *db, void (*fn)(void *), void *ctx) {
    int rc = hearth_db_call(db, fn, ctx, NULL);
    if (rc)
        die("hearth_db_call: %s", hearth_strerror(rc));
}

/* ---- databases ---- */

static int port;

typedef struct connected_wait {
    sem_t sem;
    atomic_bool seen;
} connected_wait;

static void on_connected(const hearth_event_t *e, void *ctx) {
    connected_wait *w = ctx;
    if (hearth_node_type(e->node) == HEARTH_TYPE_BOOLEAN &&
        hearth_node_boolean_value(e->node) && !atomic_exchange(&w->seen, true))
        sem_post(&w->sem);
}

static void free_connected(void *ctx) {
    connected_wait *w = ctx;
    sem_destroy(&w->sem);
    free(w);
}

/* A client database of the server, once connected. */
static hearth_db_t *open_client(void) {
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d?ns=bench", port);
    hearth_db_config_t config = {.size = sizeof config, .url = url};
    hearth_db_t *db;
    hearth_error_t err;
    if (hearth_db_open(&config, &db, &err))
        die("client: %s", err.message);
    connected_wait *w = calloc(1, sizeof *w);
    if (!w)
        die("out of memory");
    sem_init(&w->sem, 0, 0);
    hearth_observer_t h;
    if (hearth_db_observe(db, "/.info/connected", NULL, HEARTH_MASK_VALUE,
                          on_connected, w, free_connected, &h, &err))
        die("observe .info/connected: %s", err.message);
    wait_sem(&w->sem, "connection to the server");
    hearth_db_remove_observer(db, h);
    return db;
}

/* ---- 1. local write to an own listener ---- */

typedef struct local_side {
    hearth_db_t *db;
    /* The fields below are the loop thread's while a chunk runs. */
    bool armed;      /* a set is being timed */
    bool fired;      /* its value event came */
    bool initial;    /* the first value event came */
    bool in_chunk, posted;
    uint64_t t1;     /* when the value event fired */
    long issued, acked, failed, missed;
    double secs;     /* time inside the chunks' set loops */
    samples lat;     /* us: set -> value event */
    samples call;    /* us: the whole hearth_db_set call */
    sem_t ready;     /* the first event; then each chunk done and acked */
} local_side;

static void on_local_event(const hearth_event_t *e, void *ctx) {
    local_side *s = ctx;
    (void)e;
    if (s->armed) {
        s->t1 = now_ns();
        s->fired = true;
    } else if (!s->initial) {
        s->initial = true;
        sem_post(&s->ready);
    }
}

static void local_maybe_ready(local_side *s) {
    if (!s->in_chunk && !s->posted && s->acked == s->issued) {
        s->posted = true;
        sem_post(&s->ready);
    }
}

static void on_local_ack(int status, void *ctx) {
    local_side *s = ctx;
    s->acked++;
    s->failed += status != 0;
    local_maybe_ready(s);
}

/* On s->db's loop thread. */
static void local_chunk(void *ctx) {
    local_side *s = ctx;
    hearth_node_t *vals[LOCAL_CHUNK];
    for (int i = 0; i < LOCAL_CHUNK; i++)
        if (!(vals[i] = hearth_node_number((double)(s->issued + i + 1))))
            die("out of memory");
    s->in_chunk = true;
    s->posted = false;
    uint64_t start = now_ns();
    for (int i = 0; i < LOCAL_CHUNK; i++) {
        s->fired = false;
        s->armed = true;
        uint64_t t0 = now_ns();
        int rc = hearth_db_set(s->db, "/local", vals[i], on_local_ack, s, NULL,
                               NULL);
        uint64_t t2 = now_ns();
        s->armed = false;
        if (rc)
            die("set /local: %s", hearth_strerror(rc));
        s->issued++;
        s->call.v[s->call.n++] = (double)(t2 - t0) / 1e3;
        if (s->fired)
            s->lat.v[s->lat.n++] = (double)(s->t1 - t0) / 1e3;
        else
            s->missed++;
    }
    s->secs += (double)(now_ns() - start) / 1e9;
    s->in_chunk = false;
    for (int i = 0; i < LOCAL_CHUNK; i++)
        hearth_node_decref(vals[i]);
    local_maybe_ready(s);
}

static void local_open(local_side *s, hearth_db_t *db) {
    memset(s, 0, sizeof *s);
    s->db = db;
    sem_init(&s->ready, 0, 0);
    samples_reserve(&s->lat, LOCAL_N);
    samples_reserve(&s->call, LOCAL_N);
    hearth_observer_t h;
    hearth_error_t err;
    if (hearth_db_observe(db, "/local", NULL, HEARTH_MASK_VALUE,
                          on_local_event, s, NULL, &h, &err))
        die("observe /local: %s", err.message);
    wait_sem(&s->ready, "first value event at /local");
}

typedef struct local_result {
    double ops, secs;
    summary lat, call;
    long missed, failed;
} local_result;

static local_result local_finish(local_side *s) {
    local_result r = {(double)s->issued, s->secs, summarize(&s->lat),
                      summarize(&s->call), s->missed, s->failed};
    free(s->lat.v);
    free(s->call.v);
    sem_destroy(&s->ready);
    return r;
}

static void bench_local(local_result *emb, local_result *cli) {
    hearth_db_t *edb, *cdb = open_client();
    hearth_error_t err;
    if (hearth_db_open(NULL, &edb, &err))
        die("embedded database: %s", err.message);
    local_side e, c;
    local_open(&e, edb);
    local_open(&c, cdb);
    for (int done = 0; done < LOCAL_N; done += LOCAL_CHUNK) {
        /* alternate which side goes first */
        local_side *first = (done / LOCAL_CHUNK) % 2 ? &e : &c;
        local_side *second = first == &e ? &c : &e;
        on_loop(first->db, local_chunk, first);
        wait_sem(&first->ready, "local sets");
        on_loop(second->db, local_chunk, second);
        wait_sem(&second->ready, "local sets");
    }
    hearth_db_close(edb); /* removes the observers; s stays alive till then */
    hearth_db_close(cdb);
    *emb = local_finish(&e);
    *cli = local_finish(&c);
}

/* ---- 2. the anchor: a stats request on a WebSocket of our own ---- */

/* Whether text is {"t":"d","d":{"r":r,"b":{"s":"ok",...}}}. */
static bool is_reply(const char *text, size_t len, long r) {
    json_t *m = json_loadb(text, len, 0, NULL);
    json_t *d = json_object_get(m, "d");
    const char *t = json_string_value(json_object_get(m, "t"));
    const char *s =
        json_string_value(json_object_get(json_object_get(d, "b"), "s"));
    json_t *rj = json_object_get(d, "r");
    bool ok = t && !strcmp(t, "d") && json_is_integer(rj) &&
              json_integer_value(rj) == r;
    if (ok && (!s || strcmp(s, "ok")))
        die("stats request answered: %.*s", (int)len, text);
    json_decref(m);
    return ok;
}

/* One stats request and its answer: microseconds. */
static double echo_round(rawws *w, long r) {
    char req[96];
    int n = snprintf(req, sizeof req,
                     "{\"t\":\"d\",\"d\":{\"r\":%ld,\"a\":\"s\",\"b\":{\"c\":{}}}}",
                     r);
    uint64_t t0 = now_ns();
    ws_frame(w, 0x1, req, (size_t)n);
    ws_flush(w);
    for (;;) {
        size_t len = ws_recv(w);
        if (is_reply(w->msg, len, r))
            return (double)(now_ns() - t0) / 1e3;
    }
}

/* ---- 2. client A -> client B ---- */

typedef struct ab_state {
    hearth_db_t *a, *b;
    hearth_node_t *value;       /* set by the main thread before each call */
    atomic_long want;           /* the value B waits for; 0: its first event */
    atomic_uint_fast64_t t0, t1;
    sem_t got;
} ab_state;

static void on_ab(const hearth_event_t *e, void *ctx) {
    ab_state *x = ctx;
    long want = atomic_load(&x->want);
    if (want == 0 || (hearth_node_type(e->node) == HEARTH_TYPE_NUMBER &&
                      hearth_node_number_value(e->node) == (double)want)) {
        atomic_store(&x->t1, now_ns());
        atomic_store(&x->want, -1); /* nothing more until the next round */
        sem_post(&x->got);
    }
}

/* On A's loop thread. */
static void ab_set(void *ctx) {
    ab_state *x = ctx;
    atomic_store(&x->t0, now_ns());
    int rc = hearth_db_set(x->a, "/ab", x->value, NULL, NULL, NULL, NULL);
    if (rc)
        die("set /ab: %s", hearth_strerror(rc));
}

/* One write on A seen by B: microseconds. */
static double ab_round(ab_state *x, long k) {
    if (!(x->value = hearth_node_number((double)k)))
        die("out of memory");
    atomic_store(&x->want, k);
    on_loop(x->a, ab_set, x);
    wait_sem(&x->got, "value event on client B");
    hearth_node_decref(x->value);
    x->value = NULL;
    return (double)(atomic_load(&x->t1) - atomic_load(&x->t0)) / 1e3;
}

typedef struct ab_result {
    summary ab, echo;
    double ab_rate, echo_rate; /* round trips per second of their own time */
} ab_result;

static void bench_ab(ab_result *out) {
    ab_state x = {0};
    sem_init(&x.got, 0, 0);
    x.a = open_client();
    x.b = open_client();
    hearth_observer_t h;
    hearth_error_t err;
    if (hearth_db_observe(x.b, "/ab", NULL, HEARTH_MASK_VALUE, on_ab, &x, NULL,
                          &h, &err))
        die("observe /ab: %s", err.message);
    wait_sem(&x.got, "first value event at /ab on client B");

    rawws w;
    ws_open_session(&w, port, "/.ws?v=5&ns=bench");

    samples ab = {0}, echo = {0};
    samples_reserve(&ab, AB_ROUNDS);
    samples_reserve(&echo, AB_ROUNDS);
    double ab_sum = 0, echo_sum = 0;
    for (long k = 1; k <= AB_WARMUP + AB_ROUNDS; k++) {
        /* alternate which goes first */
        double t_ab, t_echo;
        if (k % 2) {
            t_ab = ab_round(&x, k);
            t_echo = echo_round(&w, k);
        } else {
            t_echo = echo_round(&w, k);
            t_ab = ab_round(&x, k);
        }
        if (k > AB_WARMUP) {
            samples_add(&ab, t_ab);
            samples_add(&echo, t_echo);
            ab_sum += t_ab;
            echo_sum += t_echo;
        }
    }
    ws_close(&w);
    hearth_db_close(x.a);
    hearth_db_close(x.b);
    sem_destroy(&x.got);
    out->ab = summarize(&ab);
    out->echo = summarize(&echo);
    out->ab_rate = AB_ROUNDS / (ab_sum / 1e6);
    out->echo_rate = AB_ROUNDS / (echo_sum / 1e6);
    free(ab.v);
    free(echo.v);
}

/* ---- 3. contending clients ---- */

typedef enum race_mode { RACE_TX, RACE_TX_BATCH, RACE_INCREMENT } race_mode;

typedef struct racer {
    hearth_db_t *db;
    race_mode mode;
    const char *path;
    const hearth_node_t *inc; /* {".sv": {"increment": 1}} */
    atomic_bool *stop;
    sem_t *wake;              /* the main thread's: a flag below changed */
    atomic_bool finished;     /* stopped; the fields below are main's now */
    /* The loop thread's until `finished`. */
    long fn_calls, committed, maxretry, failed;
    int last_error;
    int outstanding;
    uint64_t issued_at, finished_at;
    samples lat; /* ms per transaction or set; per round of BATCH_TXS */
} racer;

static int tx_increment(const hearth_node_t *current, hearth_node_t **result,
                        void *ctx) {
    racer *r = ctx;
    r->fn_calls++;
    double v = hearth_node_type(current) == HEARTH_TYPE_NUMBER
                   ? hearth_node_number_value(current)
                   : 0;
    *result = hearth_node_number(v + 1);
    return *result ? HEARTH_TX_COMMIT : HEARTH_TX_ABORT;
}

static void race_issue(racer *r);

static void race_step_done(racer *r) {
    if (--r->outstanding > 0)
        return;
    uint64_t t = now_ns();
    samples_add(&r->lat, (double)(t - r->issued_at) / 1e6);
    if (atomic_load(r->stop)) {
        r->finished_at = t;
        atomic_store(&r->finished, true);
        sem_post(r->wake);
    } else {
        race_issue(r); /* the next one (or round) from the completion */
    }
}

static void on_race_tx(int status, bool committed, const hearth_node_t *snap,
                       void *ctx) {
    racer *r = ctx;
    (void)snap;
    if (committed)
        r->committed++;
    else if (status == HEARTH_EMAXRETRY)
        r->maxretry++;
    else {
        r->failed++;
        r->last_error = status;
    }
    race_step_done(r);
}

static void on_race_set(int status, void *ctx) {
    racer *r = ctx;
    if (status) {
        r->failed++;
        r->last_error = status;
    } else {
        r->committed++;
    }
    race_step_done(r);
}

/* On r->db's loop thread. */
static void race_issue(racer *r) {
    int n = r->mode == RACE_TX_BATCH ? BATCH_TXS : 1;
    r->outstanding = n;
    r->issued_at = now_ns();
    for (int i = 0; i < n; i++) {
        hearth_error_t err;
        int rc = r->mode == RACE_INCREMENT
                     ? hearth_db_set(r->db, r->path, r->inc, on_race_set, r,
                                     NULL, &err)
                     : hearth_db_transaction(r->db, r->path, tx_increment,
                                             on_race_tx, r, NULL, &err);
        if (rc)
            die("%s %s: %s", r->mode == RACE_INCREMENT ? "set" : "transaction",
                r->path, err.message);
    }
}

static void race_start(void *ctx) { race_issue(ctx); }

typedef struct race_result {
    const char *name;
    double secs;
    long committed, fn_calls, maxretry, failed;
    int last_error;
    summary lat;
    double final_value;
    bool counted_calls;
} race_result;

/* Waits on s until the CLOCK_MONOTONIC time `until`; false on timeout. */
static bool wait_sem_until(sem_t *s, uint64_t until) {
    for (;;) {
        uint64_t now = now_ns();
        if (now >= until)
            return sem_trywait(s) == 0;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t at = (uint64_t)ts.tv_sec * 1000000000u +
                      (uint64_t)ts.tv_nsec + (until - now);
        ts.tv_sec = (time_t)(at / 1000000000u);
        ts.tv_nsec = (long)(at % 1000000000u);
        if (sem_timedwait(s, &ts) == 0)
            return true;
        if (errno != EINTR && errno != ETIMEDOUT)
            die("sem_timedwait: %s", strerror(errno));
    }
}

static void run_race(hearth_db_t *const *dbs, race_mode mode, const char *path,
                     const char *name, race_result *out) {
    atomic_bool stop = false;
    sem_t wake;
    sem_init(&wake, 0, 0);
    racer rs[RACERS];
    hearth_node_t *inc = hearth_node_server_increment(1);
    if (!inc)
        die("out of memory");
    for (int i = 0; i < RACERS; i++) {
        memset(&rs[i], 0, sizeof rs[i]);
        rs[i].db = dbs[i];
        rs[i].mode = mode;
        rs[i].path = path;
        rs[i].inc = inc;
        rs[i].stop = &stop;
        rs[i].wake = &wake;
        atomic_init(&rs[i].finished, false);
    }
    uint64_t start = now_ns();
    uint64_t deadline = start + (uint64_t)RACE_SECS * 1000000000u;
    for (int i = 0; i < RACERS; i++)
        on_loop(dbs[i], race_start, &rs[i]);
    /* Until every racer has stopped. */
    for (int finished = 0; finished < RACERS;) {
        bool stopped = atomic_load(&stop);
        if (!stopped && now_ns() >= deadline)
            atomic_store(&stop, stopped = true);
        uint64_t until = stopped ? now_ns() + (uint64_t)WAIT_SECS * 1000000000u
                                 : deadline;
        if (!wait_sem_until(&wake, until) && stopped)
            die("the racers did not stop within %d s", WAIT_SECS);
        finished = 0;
        for (int i = 0; i < RACERS; i++)
            finished += atomic_load(&rs[i].finished);
    }
    memset(out, 0, sizeof *out);
    out->name = name;
    out->counted_calls = mode != RACE_INCREMENT;
    uint64_t end = start;
    samples lat = {0};
    for (int i = 0; i < RACERS; i++) {
        racer *r = &rs[i];
        end = r->finished_at > end ? r->finished_at : end;
        out->committed += r->committed;
        out->fn_calls += r->fn_calls;
        out->maxretry += r->maxretry;
        out->failed += r->failed;
        if (r->failed)
            out->last_error = r->last_error;
        samples_add_all(&lat, r->lat.v, r->lat.n);
        free(r->lat.v);
    }
    sem_destroy(&wake);
    hearth_node_decref(inc);
    out->secs = (double)(end - start) / 1e9;
    out->lat = summarize(&lat);
    free(lat.v);

    hearth_node_t *v = NULL;
    hearth_error_t err;
    if (hearth_db_get(dbs[0], path, NULL, &v, &err))
        die("get %s: %s", path, err.message);
    out->final_value = hearth_node_type(v) == HEARTH_TYPE_NUMBER
                           ? hearth_node_number_value(v)
                           : (hearth_node_is_null(v) ? 0 : NAN);
    hearth_node_decref(v);
}

/* ---- report ---- */

static const char *verdict(double ratio) { return ratio <= 2.0 ? "ok" : "OVER"; }

int main(void) {
    json_object_seed(0x2545F491u);
    data_dir = bench_data_dir_create("hearth-realtime-bench");

    hearth_server_t *server = bench_server_start(data_dir, &port);

    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    printf("Hearth realtime benchmark: hearth %s, %s, %ld cores\n"
           "in-process server on 127.0.0.1:%d (fsync off, data in %s), "
           "namespace \"bench\"\n",
           hearth_version(), cpu, sysconf(_SC_NPROCESSORS_ONLN), port,
           data_dir);
    fflush(stdout);

    /* 1 */
    fprintf(stderr, "  1. local write to own listener...\n");
    local_result emb, cli;
    bench_local(&emb, &cli);
    printf("\n1. set -> value event of an own listener, on the loop thread "
           "(%d sets per side, alternating chunks of %d)\n",
           LOCAL_N, LOCAL_CHUNK);
    printf("%-32s %10s | %-26s | %-26s\n", "", "",
           "  set -> value event, us", "   whole set call, us");
    printf("%-32s %10s | %8s %8s %8s | %8s %8s %8s\n", "database", "sets/s",
           "p50", "p99", "max", "p50", "p99", "max");
    const local_result *lr[2] = {&emb, &cli};
    const char *ln[2] = {"embedded, in memory (anchor)", "client of the server"};
    for (int i = 0; i < 2; i++)
        printf("%-32s %10.0f | %8.2f %8.2f %8.1f | %8.2f %8.2f %8.1f\n", ln[i],
               lr[i]->ops / lr[i]->secs, lr[i]->lat.p50, lr[i]->lat.p99,
               lr[i]->lat.max, lr[i]->call.p50, lr[i]->call.p99,
               lr[i]->call.max);
    printf("%-32s %10.2f | %8.2f %8.2f %8.2f | %8.2f %8.2f %8.2f\n",
           "ratio client / embedded (time)",
           emb.ops / emb.secs / (cli.ops / cli.secs), cli.lat.p50 / emb.lat.p50,
           cli.lat.p99 / emb.lat.p99, cli.lat.max / emb.lat.max,
           cli.call.p50 / emb.call.p50, cli.call.p99 / emb.call.p99,
           cli.call.max / emb.call.max);
    printf("(sets/s: over the timed loops' own time; the client's call also "
           "hands the write to its WebSocket;\n events that did not fire "
           "inside the call: embedded %ld, client %ld; failed acks: %ld, %ld)\n",
           emb.missed, cli.missed, emb.failed, cli.failed);
    fflush(stdout);

    /* 2 */
    fprintf(stderr, "  2. client A -> client B, beside the echo...\n");
    ab_result ab;
    bench_ab(&ab);
    printf("\n2. write on client A -> value event on client B over loopback, "
           "one at a time (%d round trips after %d warm-up, alternating with "
           "the echo)\n",
           AB_ROUNDS, AB_WARMUP);
    printf("%-40s %12s %9s %9s %9s\n", "round trip", "per s", "p50 us",
           "p99 us", "max us");
    printf("%-40s %12.0f %9.1f %9.1f %9.1f\n",
           "echo: stats request -> reply (anchor)", ab.echo_rate, ab.echo.p50,
           ab.echo.p99, ab.echo.max);
    printf("%-40s %12.0f %9.1f %9.1f %9.1f\n", "A set -> B value event",
           ab.ab_rate, ab.ab.p50, ab.ab.p99, ab.ab.max);
    double r50 = ab.ab.p50 / ab.echo.p50, r99 = ab.ab.p99 / ab.echo.p99;
    printf("ratio A-to-B / echo: p50 %.2fx %s, p99 %.2fx %s  (goal <= 2x)\n",
           r50, verdict(r50), r99, verdict(r99));
    printf("(echo: our own minimal WebSocket client, blocking socket, "
           "TCP_NODELAY, to /.ws?v=5&ns=bench on the same server loop)\n");
    fflush(stdout);

    /* 3 */
    fprintf(stderr, "  3. %d contending clients, %d s per run...\n", RACERS,
            RACE_SECS);
    hearth_db_t *dbs[RACERS];
    for (int i = 0; i < RACERS; i++)
        dbs[i] = open_client();
    race_result races[3];
    run_race(dbs, RACE_INCREMENT, "/hits", "server increment, 1 at a time (anchor)",
             &races[0]);
    run_race(dbs, RACE_TX, "/counter", "transaction, 1 at a time", &races[1]);
    run_race(dbs, RACE_TX_BATCH, "/counter_batched",
             "transactions, 100 queued at a time", &races[2]);
    for (int i = 0; i < RACERS; i++)
        hearth_db_close(dbs[i]);

    printf("\n3. %d clients incrementing one location, each issuing its next "
           "when the previous completes, %d s per run\n",
           RACERS, RACE_SECS);
    printf("%-40s %12s %9s %9s %9s %9s %6s %8s %8s  %s\n", "workload",
           "committed/s", "committed", "fn calls", "calls/tx", "EMAXRETRY",
           "other", "p50 ms", "p99 ms", "server value");
    bool mismatch = false;
    for (int i = 0; i < 3; i++) {
        race_result *r = &races[i];
        char calls[16], per[16], check[48];
        if (r->counted_calls) {
            snprintf(calls, sizeof calls, "%ld", r->fn_calls);
            snprintf(per, sizeof per, "%.2f",
                     r->committed ? (double)r->fn_calls / (double)r->committed : 0);
        } else {
            snprintf(calls, sizeof calls, "-");
            snprintf(per, sizeof per, "-");
        }
        bool ok = r->final_value == (double)r->committed;
        mismatch |= !ok;
        snprintf(check, sizeof check, "%.0f %s", r->final_value,
                 ok ? "= committed" : "!= committed: LOST OR EXTRA");
        printf("%-40s %12.0f %9ld %9s %9s %9ld %6ld %8.2f %8.2f  %s\n", r->name,
               (double)r->committed / r->secs, r->committed, calls, per,
               r->maxretry, r->failed, r->lat.p50, r->lat.p99, check);
        if (r->failed)
            printf("  (last failure: %s)\n", hearth_strerror(r->last_error));
    }
    printf("ratio transactions / increments (committed/s): 1 at a time %.2f, "
           "100 queued %.2f\n",
           (double)races[1].committed / races[1].secs /
               ((double)races[0].committed / races[0].secs),
           (double)races[2].committed / races[2].secs /
               ((double)races[0].committed / races[0].secs));
    printf("(fn calls: update function runs, one per transaction per attempt; "
           "p50/p99: per transaction or set,\n and per round of %d for the "
           "queued run, from issue to completion, retries included)\n",
           BATCH_TXS);

    if (hearth_server_stop(server))
        die("server stop failed");
    bench_data_dir_remove();
    return mismatch ? 1 : 0;
}
