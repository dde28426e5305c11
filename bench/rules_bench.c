/*
 * rules_bench.c - the cost of security rules on writes: the same write
 * workload against two in-process servers of the same process
 * (hearth_server_start on 127.0.0.1, free ports, temporary data
 * directories removed at exit, fsync off, namespace "bench"):
 *
 *   - "rules": started with rules_file, a realistic rules document
 *     (RULES_DOC below): $wildcards at two levels and a $other deny at the
 *     root and below, .write rules checking auth.uid against the wildcard,
 *     a root.child(...) look-up, data.exists() and data.child() on the old
 *     data, .validate with hasChildren([...]), string lengths, number
 *     ranges, a regex matches(), newData.child(...) comparisons with auth,
 *     and a server timestamp checked against `now`;
 *   - "no rules" (the anchor): no rules_file, so the default document
 *     {".read": true, ".write": true}.
 *
 * Clients are our own, so that the figures are the server's: CLIENTS
 * connections per server, each authenticated as its own user (u0, u1, ...)
 * with an unsigned token (alg "none", accepted when no auth secret is
 * configured; both servers are sent the same tokens). Each client writes
 * alternately /users/<uid> ({name, score, email}) and /posts/<push ID>
 * ({author: uid, text, at: server timestamp}); every write is one the
 * rules allow, and every answer is checked: a write answered other than ok
 * makes the run fail (exit 1).
 *
 *   1. Realtime: raw RFC 6455 WebSockets to /.ws?v=5&ns=bench (the auth
 *      request first), puts ("p") pipelined with up to WINDOW outstanding
 *      per connection; latency is from a put's send to its ok answer, so
 *      at this depth it is mostly queueing (about WINDOW * CLIENTS /
 *      throughput).
 *   2. REST: HTTP/1.1 keep-alive PUTs with ?auth=TOKEN, one connection per
 *      client, one request at a time (latency: request to full response).
 *
 * The configurations alternate round by round (rules, none; then none,
 * rules; ...), each round a fixed number of writes from every client at
 * once, after an untimed warm-up round each, so both servers hold the
 * same data at each step and a noisy machine weighs on both. Throughput
 * is the writes of all timed rounds over their wall time; "server CPU" is
 * the process's CPU time during a round minus the client threads' own
 * (only one server works at a time), per write. Goal (the issue): with
 * rules at most 20% slower, i.e. rules throughput >= 0.80 x no rules.
 *
 *   3. Rules evaluation with coverage counting on (as a server runs) beside
 *      off (the anchor), in this process, no I/O: RULES_DOC compiled once;
 *      each write of the workload (a /users/<uid> record, a /posts/<id>
 *      post) judged by hearth__ruleset_can_write against a tree of
 *      USERS users and their posts; rounds alternate on / off. Goal (the
 *      issue): coverage at most 10% slower.
 *
 * Afterwards: on each server every user's record holds its last score, the
 * number of posts is the number written (a shallow GET as the owner), and
 * on the rules server a write to another user's record and a post with a
 * wrong author are refused (the rules are in force).
 *
 * Run: `make bench-rules` (or build/bench-rules; about 30 s). Exits 1 when
 * a write fails or a check above does not hold.
 *
 * Timestamps are CLOCK_MONOTONIC. The machine may be shared: compare
 * ratios, not absolute figures.
 */
#include "hearth.h"
#include "bench_common.h"
#include "rules/ruleset.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum {
    CLIENTS = 4,      /* connections per server, one user each */
    WINDOW = 64,      /* outstanding puts per realtime connection */
    WS_ROUNDS = 10,    /* timed realtime rounds per configuration */
    WS_WRITES = 6000,  /* writes per client per realtime round */
    REST_ROUNDS = 8,   /* timed REST rounds per configuration */
    REST_WRITES = 2000 /* writes per client per REST round */
};

/* The realistic rules. Every write of the workload passes them. */
static const char RULES_DOC[] =
    "// rules_bench.c's realistic rules\n"
    "{\n"
    "  \"rules\": {\n"
    "    \".read\": false,\n"
    "    \".write\": false,\n"
    "    \"users\": {\n"
    "      \"$uid\": {\n"
    "        \".read\": \"auth != null && auth.uid == $uid\",\n"
    "        \".write\": \"auth != null && auth.uid == $uid && "
    "!root.child('banned').child($uid).exists()\",\n"
    "        \".validate\": \"newData.hasChildren(['name', 'score'])\",\n"
    "        \"name\": {\".validate\": \"newData.isString() && "
    "newData.val().length >= 1 && newData.val().length <= 50\"},\n"
    "        \"score\": {\".validate\": \"newData.isNumber() && "
    "newData.val() >= 0\"},\n"
    "        \"email\": {\".validate\": \"newData.isString() && "
    "newData.val().matches(/^[^@]+@[^@]+\\\\.[a-z]+$/)\"},\n"
    "        \"$other\": {\".validate\": false}\n"
    "      }\n"
    "    },\n"
    "    \"posts\": {\n"
    "      \".read\": \"auth != null\",\n"
    "      \"$postId\": {\n"
    "        \".write\": \"auth != null && (!data.exists() || "
    "data.child('author').val() == auth.uid)\",\n"
    "        \".validate\": \"newData.hasChildren(['author', 'text', 'at']) "
    "&& newData.child('author').val() == auth.uid && "
    "newData.child('text').isString() && "
    "newData.child('text').val().length < 1000\",\n"
    "        \"author\": {\".validate\": \"newData.isString()\"},\n"
    "        \"text\": {\".validate\": \"newData.isString()\"},\n"
    "        \"at\": {\".validate\": \"newData.isNumber() && "
    "newData.val() <= now\"},\n"
    "        \"$other\": {\".validate\": false}\n"
    "      }\n"
    "    },\n"
    "    \"banned\": {\".read\": false, \".write\": false},\n"
    "    \"$other\": {\".read\": false, \".write\": false}\n"
    "  }\n"
    "}\n";

static const char POST_TEXT[] =
    "The quick brown fox jumps over the lazy dog, again and again.";

/* ---- 3. rules evaluation, coverage on and off ---- */

enum { EVAL_USERS = 200, EVAL_ROUNDS = 10, EVAL_WRITES = 200000 };

/* Judges `count` writes (alternately a user's record and a post) against
 * root; dies if one is refused (they are all allowed). Nanoseconds. */
static uint64_t eval_round(const hearth__ruleset *rs, hearth_node_t *root,
                           hearth_node_t *const *auth, long count) {
    uint64_t t0 = now_ns();
    for (long i = 0; i < count; i++) {
        int u = (int)(i / 2 % EVAL_USERS);
        char path[64], value[256];
        if (i % 2 == 0) {
            snprintf(path, sizeof path, "/users/u%d", u);
            snprintf(value, sizeof value,
                     "{\"name\":\"user %d\",\"score\":%ld,"
                     "\"email\":\"u%d@example.com\"}", u, i, u);
        } else {
            snprintf(path, sizeof path, "/posts/p%ld", i);
            snprintf(value, sizeof value,
                     "{\"author\":\"u%d\",\"text\":\"%s\",\"at\":1}", u,
                     POST_TEXT);
        }
        hearth_node_t *v = NULL, *after = hearth_node_incref(root);
        hearth__path parsed;
        const hearth__path *pp = &parsed;
        if (hearth_node_from_json(value, (size_t)-1, 0, &v, NULL) ||
            hearth_node_set(&after, path, v, NULL) ||
            hearth__path_parse(path, 0, &parsed, NULL))
            die("evaluation: cannot build the write to %s", path);
        hearth__access a = {auth[u], 2e12, root, NULL};
        if (!hearth__ruleset_can_write(rs, &pp, 1, after, &a))
            die("evaluation: the rules refused the write to %s", path);
        hearth_node_decref(v);
        hearth_node_decref(after);
    }
    return now_ns() - t0;
}

/* Prints writes judged per second with coverage on beside off. */
static void eval_bench(void) {
    json_t *doc = NULL;
    hearth_error_t err;
    hearth__ruleset *rs = NULL;
    if (hearth__rules_parse(RULES_DOC, strlen(RULES_DOC), &doc, &err) ||
        hearth__ruleset_compile_source(doc, RULES_DOC, strlen(RULES_DOC), &rs,
                                       &err))
        die("evaluation: %s", err.message);
    json_decref(doc);
    hearth_node_t *root = NULL, *auth[EVAL_USERS];
    if (hearth_node_from_json("{\"banned\":{\"x\":true}}", (size_t)-1,
                              0, &root, NULL))
        die("evaluation: the tree");
    for (int u = 0; u < EVAL_USERS; u++) {
        char json[128], path[64];
        snprintf(json, sizeof json, "{\"uid\":\"u%d\"}", u);
        if (hearth_node_from_json(json, (size_t)-1, 0, &auth[u], NULL))
            die("evaluation: auth");
        snprintf(path, sizeof path, "/posts/old%d", u);
        snprintf(json, sizeof json, "{\"author\":\"u%d\",\"text\":\"x\","
                 "\"at\":1}", u);
        hearth_node_t *v = NULL;
        if (hearth_node_from_json(json, (size_t)-1, 0, &v, NULL) ||
            hearth_node_set(&root, path, v, NULL))
            die("evaluation: the tree");
        hearth_node_decref(v);
    }
    uint64_t ns[2] = {0, 0}; /* on, off */
    for (int round = -1; round < EVAL_ROUNDS; round++)
        for (int k = 0; k < 2; k++) {
            int which = (round + k) % 2 == 0 ? 0 : 1; /* alternate first */
            if (round < 0)
                which = k;
            hearth__ruleset_set_counting(rs, which == 0);
            uint64_t t = eval_round(rs, root, auth, round < 0 ? 20000
                                                             : EVAL_WRITES);
            if (round >= 0)
                ns[which] += t;
        }
    double writes = (double)EVAL_ROUNDS * EVAL_WRITES;
    double on = writes / (ns[0] / 1e9), off = writes / (ns[1] / 1e9);
    printf("\n3. rules evaluation in process (hearth__ruleset_can_write of "
           "the workload's writes; %d rounds of %d writes each, "
           "alternating)\n"
           "  %-28s %12.0f writes judged/s  %7.0f ns/write\n"
           "  %-28s %12.0f writes judged/s  %7.0f ns/write\n"
           "  coverage on / off: %.3f (goal: >= 0.90)\n",
           EVAL_ROUNDS, EVAL_WRITES, "coverage on", on, ns[0] / writes,
           "coverage off (anchor)", off, ns[1] / writes, on / off);
    fflush(stdout);
    hearth_node_decref(root);
    for (int u = 0; u < EVAL_USERS; u++)
        hearth_node_decref(auth[u]);
    hearth__ruleset_free(rs);
}

/* ---- helpers (the shared ones are in bench_common.c) ---- */

const char bench_name[] = "bench-rules";

static const char *data_dir; /* bench_data_dir_create's */

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double process_cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}


/* base64url without padding. */
static void b64url(const char *in, char *out) {
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)in,
                    (int)strlen(in));
    char *w = out;
    for (char *p = out; *p && *p != '='; p++)
        *w++ = *p == '+' ? '-' : *p == '/' ? '_' : *p;
    *w = '\0';
}

/* An unsigned JWT for uid: base64url(header).base64url(claims). */
static void make_token(const char *uid, char *out, size_t size) {
    long now = (long)(hearth_now_ms() / 1000);
    char claims[256], h64[128], c64[512];
    snprintf(claims, sizeof claims,
             "{\"sub\":\"%s\",\"uid\":\"%s\",\"iat\":%ld,\"exp\":%ld,"
             "\"firebase\":{\"sign_in_provider\":\"custom\"}}",
             uid, uid, now, now + 3600);
    b64url("{\"alg\":\"none\",\"typ\":\"JWT\"}", h64);
    b64url(claims, c64);
    if ((size_t)snprintf(out, size, "%s.%s.", h64, c64) >= size)
        die("token too long");
}

/* ---- servers ---- */

typedef struct server {
    const char *name;
    bool rules;
    hearth_server_t *srv;
    int port;
    char dir[96];
} server;

static void server_start(server *s, const char *name, bool rules,
                         const char *rules_path) {
    s->name = name;
    s->rules = rules;
    snprintf(s->dir, sizeof s->dir, "%s/%s", data_dir, rules ? "rules" : "none");
    hearth_server_config_t config = {.size = sizeof config, .host = "127.0.0.1", .port = 0,
                                     .data_dir = s->dir,
                                     .default_namespace = "bench",
                                     .fsync_mode = HEARTH_FSYNC_OFF,
                                     .rules_file = rules ? rules_path : NULL};
    hearth_error_t err;
    if (hearth_server_start(&config, &s->srv, &err))
        die("server (%s): %s", name, err.message);
    s->port = hearth_server_port(s->srv);
}

/* A response {"t":"d","d":{"r":R,"b":{"s":STATUS,"d":...}}}: its r and
 * status (at most status_size - 1 bytes). False for anything else. Only
 * answers reach these connections (they listen to nothing), and nothing
 * the server answers to a put carries an "r" or "s" key of its own. */
static bool parse_reply(const char *m, long *r, char *status,
                        size_t status_size) {
    if (!strstr(m, "\"t\":\"d\""))
        return false;
    const char *p = strstr(m, "\"r\":");
    const char *s = strstr(m, "\"s\":\"");
    if (!p || !s)
        return false;
    char *end;
    *r = strtol(p + 4, &end, 10);
    if (end == p + 4)
        return false;
    s += 5;
    size_t n = strcspn(s, "\"");
    if (n >= status_size)
        n = status_size - 1;
    memcpy(status, s, n);
    status[n] = '\0';
    return true;
}

/* ---- the workload ---- */

/* One client: a user, its token, and its connections to one server. */
typedef struct client {
    server *srv;
    int k;
    char uid[16], token[512];
    hearth_push_id_state_t ids;
    long score;     /* the last score written to /users/<uid> */
    long posts;     /* posts written */
    long failed;    /* writes answered other than ok */
    char failure[256];
    /* realtime */
    rawws w;
    long next_r;
    /* REST */
    inbuf h;
    char *req; /* the request being sent, reused */
    size_t req_cap;
    /* one round */
    long nwrites;
    uint64_t *t0;
    double *lat; /* us */
    double cpu;  /* this thread's CPU seconds */
} client;

static void note_failure(client *c, const char *what, const char *detail) {
    if (!c->failed++)
        snprintf(c->failure, sizeof c->failure, "%s (user %s): %.200s", what,
                 c->uid, detail);
}

/* Write i of a client: even, its user record; odd, a new post. Writes
 * the location into path and the JSON value into value. */
static void next_write(client *c, long i, char *path, size_t psize,
                       char *value, size_t vsize) {
    if (i % 2 == 0) {
        c->score++;
        snprintf(path, psize, "/users/%s", c->uid);
        snprintf(value, vsize,
                 "{\"name\":\"User %d\",\"score\":%ld,"
                 "\"email\":\"%s@example.com\"}",
                 c->k, c->score, c->uid);
    } else {
        char id[HEARTH_PUSH_ID_SIZE];
        if (hearth_push_id(&c->ids, hearth_now_ms(), id))
            die("push id");
        c->posts++;
        snprintf(path, psize, "/posts/%s", id);
        snprintf(value, vsize,
                 "{\"author\":\"%s\",\"text\":\"Post %ld by %s. %s\","
                 "\"at\":{\".sv\":\"timestamp\"}}",
                 c->uid, c->posts, c->uid, POST_TEXT);
    }
}

/* Sends one request on c's WebSocket and waits for its answer (no other
 * request outstanding); the answer's status into status, the whole
 * message stays in c->w.msg. */
static void ws_request(client *c, const char *action, const char *body,
                       char *status, size_t ssize) {
    char *req = xmalloc(strlen(body) + 128);
    long r = c->next_r++;
    int n = sprintf(req, "{\"t\":\"d\",\"d\":{\"r\":%ld,\"a\":\"%s\",\"b\":%s}}",
                    r, action, body);
    ws_frame(&c->w, 0x1, req, (size_t)n);
    ws_flush(&c->w);
    free(req);
    for (;;) {
        ws_recv(&c->w);
        long got;
        if (parse_reply(c->w.msg, &got, status, ssize) && got == r)
            return;
    }
}

/* Opens c's realtime session and authenticates it as c->uid. */
static void ws_connect(client *c) {
    ws_open_session(&c->w, c->srv->port, "/.ws?v=5&ns=bench");
    c->next_r = 1;
    char body[640], status[64];
    snprintf(body, sizeof body, "{\"cred\":\"%s\"}", c->token);
    ws_request(c, "auth", body, status, sizeof status);
    if (strcmp(status, "ok"))
        die("auth as %s on the %s server: %s", c->uid, c->srv->name, c->w.msg);
}

/* A realtime round: c->nwrites puts, up to WINDOW outstanding. */
static void *ws_round(void *arg) {
    client *c = arg;
    double cpu0 = thread_cpu_s();
    long first = c->next_r, n = c->nwrites, sent = 0, done = 0;
    char path[96], value[512], msg[768];
    while (done < n) {
        while (sent < n && sent - done < WINDOW) {
            next_write(c, sent, path, sizeof path, value, sizeof value);
            int len = snprintf(msg, sizeof msg,
                               "{\"t\":\"d\",\"d\":{\"r\":%ld,\"a\":\"p\","
                               "\"b\":{\"p\":\"%s\",\"d\":%s}}}",
                               first + sent, path, value);
            ws_frame(&c->w, 0x1, msg, (size_t)len);
            c->t0[sent++] = now_ns();
        }
        ws_flush(&c->w);
        do {
            ws_recv(&c->w);
            uint64_t t = now_ns();
            long r;
            char status[64];
            if (!parse_reply(c->w.msg, &r, status, sizeof status))
                continue; /* not an answer */
            long i = r - first;
            if (i < 0 || i >= sent)
                die("an answer to a request not sent (r %ld): %.200s", r,
                    c->w.msg);
            c->lat[i] = (double)(t - c->t0[i]) / 1e3;
            if (strcmp(status, "ok"))
                note_failure(c, "realtime put", c->w.msg);
            done++;
        } while (done < n && ws_frame_ready(&c->w));
    }
    c->next_r = first + n;
    c->cpu = thread_cpu_s() - cpu0;
    return NULL;
}

/* ---- REST ---- */

/* One HTTP/1.1 request on c's keep-alive connection: the status; the body
 * is at c->h.in (NUL-terminated, *body_len bytes) until the next call. */
static int http_request(client *c, const char *method, const char *target,
                        const char *headers, const char *body,
                        size_t *body_len) {
    size_t blen = body ? strlen(body) : 0;
    size_t need = strlen(target) + strlen(headers) + blen + 256;
    if (need > c->req_cap) {
        free(c->req);
        c->req = xmalloc(need);
        c->req_cap = need;
    }
    int n = snprintf(c->req, c->req_cap,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s"
                     "Content-Length: %zu\r\n\r\n%s",
                     method, target, c->srv->port, headers, blen,
                     body ? body : "");
    inbuf *b = &c->h;
    send_all(b->fd, c->req, (size_t)n);
    char *end;
    while (!b->len || !(end = strstr((char *)b->in, "\r\n\r\n")))
        inbuf_read_more(b);
    int status = 0;
    if (sscanf((char *)b->in, "HTTP/1.1 %d", &status) != 1)
        die("not an HTTP response: %.80s", (char *)b->in);
    size_t head = (size_t)(end + 4 - (char *)b->in), clen = 0;
    const char *cl = strcasestr((char *)b->in, "\r\nContent-Length:");
    if (cl && cl < end)
        clen = strtoul(cl + 17, NULL, 10);
    else
        die("a response without Content-Length: %.200s", (char *)b->in);
    while (b->len < head + clen)
        inbuf_read_more(b);
    inbuf_consume(b, head); /* the body is now at the start */
    *body_len = clen;
    return status;
}

static void http_done(client *c, size_t body_len) {
    inbuf_consume(&c->h, body_len);
}

/* A REST round: c->nwrites PUTs, one at a time. */
static void *rest_round(void *arg) {
    client *c = arg;
    double cpu0 = thread_cpu_s();
    char path[96], value[512], target[768];
    for (long i = 0; i < c->nwrites; i++) {
        next_write(c, i, path, sizeof path, value, sizeof value);
        snprintf(target, sizeof target, "%s.json?ns=bench&auth=%s", path,
                 c->token);
        uint64_t t0 = now_ns();
        size_t len;
        int status = http_request(c, "PUT", target,
                                  "Content-Type: application/json\r\n", value,
                                  &len);
        c->lat[i] = (double)(now_ns() - t0) / 1e3;
        if (status != 200) {
            char detail[256];
            snprintf(detail, sizeof detail, "HTTP %d %.*s", status,
                     (int)(len < 200 ? len : 200), (char *)c->h.in);
            note_failure(c, "REST PUT", detail);
        }
        http_done(c, len);
    }
    c->cpu = thread_cpu_s() - cpu0;
    return NULL;
}

/* ---- rounds ---- */

typedef struct config_result {
    double secs, writes, server_cpu;
    samples lat;
    double *round_rate; /* writes/s of each timed round */
    size_t rounds;
} config_result;

/* Every client of one server does nwrites at once; out NULL: untimed. */
static void run_round(client *cs, void *(*fn)(void *), long nwrites,
                      config_result *out) {
    for (int k = 0; k < CLIENTS; k++) {
        cs[k].nwrites = nwrites;
        cs[k].t0 = xmalloc((size_t)nwrites * sizeof *cs[k].t0);
        cs[k].lat = xmalloc((size_t)nwrites * sizeof *cs[k].lat);
    }
    pthread_t th[CLIENTS];
    double pcpu0 = process_cpu_s(), mcpu0 = thread_cpu_s();
    uint64_t start = now_ns();
    for (int k = 0; k < CLIENTS; k++)
        if (pthread_create(&th[k], NULL, fn, &cs[k]))
            die("pthread_create failed");
    for (int k = 0; k < CLIENTS; k++)
        pthread_join(th[k], NULL);
    double secs = (double)(now_ns() - start) / 1e9;
    double server_cpu = process_cpu_s() - pcpu0 - (thread_cpu_s() - mcpu0);
    for (int k = 0; k < CLIENTS; k++)
        server_cpu -= cs[k].cpu;
    if (out) {
        out->secs += secs;
        out->writes += (double)nwrites * CLIENTS;
        out->server_cpu += server_cpu;
        out->round_rate[out->rounds++] = (double)nwrites * CLIENTS / secs;
        for (int k = 0; k < CLIENTS; k++)
            samples_add_all(&out->lat, cs[k].lat, (size_t)nwrites);
    }
    for (int k = 0; k < CLIENTS; k++) {
        free(cs[k].t0);
        free(cs[k].lat);
        cs[k].t0 = NULL;
        cs[k].lat = NULL;
    }
}

/* Alternating rounds of both configurations; [0] rules, [1] none. */
static void run_rounds(client *cs[2], void *(*fn)(void *), long nwrites,
                       int rounds, config_result res[2]) {
    for (int i = 0; i < 2; i++) {
        memset(&res[i], 0, sizeof res[i]);
        res[i].round_rate = xmalloc((size_t)rounds * sizeof(double));
        run_round(cs[i], fn, nwrites, NULL); /* warm-up */
    }
    for (int r = 0; r < rounds; r++) {
        int first = r % 2;
        run_round(cs[first], fn, nwrites, &res[first]);
        run_round(cs[!first], fn, nwrites, &res[!first]);
    }
}

static long total_failed(client *cs) {
    long n = 0;
    for (int k = 0; k < CLIENTS; k++)
        n += cs[k].failed;
    return n;
}

/* ---- checks ---- */

static bool checks_ok = true;

static void check_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("CHECK FAILED: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    checks_ok = false;
}

/* A put (body: {"p":...,"d":...}) that the rules server must refuse;
 * what: the check's name in the failure. */
static void expect_denied(client *c, const char *body, const char *what) {
    char status[64];
    ws_request(c, "p", body, status, sizeof status);
    if (strcmp(status, "permission_denied"))
        check_fail("rules server: %s answered %s", what, status);
}

/* Each user's record holds its last score; the posts are all there; on the
 * rules server, what the rules forbid is refused. */
static void check_server(client *cs) {
    server *srv = cs[0].srv;
    long posts = 0;
    for (int k = 0; k < CLIENTS; k++) {
        client *c = &cs[k];
        posts += c->posts;
        char body[128], status[64];
        snprintf(body, sizeof body, "{\"p\":\"/users/%s\"}", c->uid);
        ws_request(c, "g", body, status, sizeof status);
        json_t *m = json_loads(c->w.msg, 0, NULL);
        json_t *score = json_object_get(
            json_object_get(json_object_get(json_object_get(m, "d"), "b"), "d"),
            "score");
        if (strcmp(status, "ok") || !json_is_number(score) ||
            json_number_value(score) != (double)c->score)
            check_fail("%s server: /users/%s should hold score %ld: %.200s",
                       srv->name, c->uid, c->score, c->w.msg);
        json_decref(m);
    }
    size_t len;
    int st = http_request(&cs[0], "GET", "/posts.json?ns=bench&shallow=true",
                          "Authorization: Bearer owner\r\n", NULL, &len);
    json_t *shallow = json_loadb((char *)cs[0].h.in, len, 0, NULL);
    if (st != 200 || !json_is_object(shallow) ||
        json_object_size(shallow) != (size_t)posts)
        check_fail("%s server: %ld posts written, /posts holds %zu (HTTP %d)",
                   srv->name, posts, json_object_size(shallow), st);
    json_decref(shallow);
    http_done(&cs[0], len);

    if (!srv->rules)
        return;
    /* u0 may not write u1's record, nor post as u1, nor store a bad
     * email in its own record. */
    client *c = &cs[0];
    char body[512];
    snprintf(body, sizeof body,
             "{\"p\":\"/users/%s\",\"d\":{\"name\":\"x\",\"score\":1}}",
             cs[1].uid);
    expect_denied(c, body, "u0 writing /users/u1");
    snprintf(body, sizeof body,
             "{\"p\":\"/posts/forged\",\"d\":{\"author\":\"%s\",\"text\":\"x\","
             "\"at\":{\".sv\":\"timestamp\"}}}",
             cs[1].uid);
    expect_denied(c, body, "u0 posting as u1");
    snprintf(body, sizeof body,
             "{\"p\":\"/users/%s\",\"d\":{\"name\":\"x\",\"score\":1,"
             "\"email\":\"not an address\"}}",
             c->uid);
    expect_denied(c, body, "a bad email");
}

/* ---- report ---- */

static const char *goal_verdict(double ratio) {
    return ratio >= 0.80 ? "goal met" : "GOAL MISSED";
}

static void report(const char *title, config_result res[2]) {
    summary s[2];
    for (int i = 0; i < 2; i++)
        s[i] = summarize(&res[i].lat);
    double rate[2], cpu[2];
    for (int i = 0; i < 2; i++) {
        rate[i] = res[i].writes / res[i].secs;
        cpu[i] = res[i].server_cpu / res[i].writes * 1e6;
    }
    printf("%s\n", title);
    printf("%-24s %10s %9s %9s %9s %14s\n", "configuration", "writes/s",
           "p50 us", "p99 us", "max us", "server CPU us");
    const char *names[2] = {"rules", "no rules (anchor)"};
    for (int i = 1; i >= 0; i--)
        printf("%-24s %10.0f %9.1f %9.1f %9.1f %14.2f\n", names[i], rate[i],
               s[i].p50, s[i].p99, s[i].max, cpu[i]);
    double ratio = rate[0] / rate[1];
    printf("%-24s %10.3f %9.3f %9.3f %9.3f %14.3f\n", "ratio rules / none",
           ratio, s[0].p50 / s[1].p50, s[0].p99 / s[1].p99,
           s[0].max / s[1].max, cpu[0] / cpu[1]);
    size_t n = res[0].rounds;
    double *pair = xmalloc(n * sizeof *pair);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        pair[i] = res[0].round_rate[i] / res[1].round_rate[i];
        lo = pair[i] < lo ? pair[i] : lo;
        hi = pair[i] > hi ? pair[i] : hi;
    }
    double med = median(pair, n);
    printf("throughput with rules: %.1f%% of no rules (%.1f%% %s; "
           "per-round ratios %.3f .. median %.3f .. %.3f): %s "
           "(goal: at most 20%% slower)\n",
           ratio * 100, fabs(1 - ratio) * 100, ratio <= 1 ? "slower" : "faster",
           lo, med, hi, goal_verdict(ratio));
    printf("server CPU per write: %+.2f us with rules (%+.1f%%)\n",
           cpu[0] - cpu[1], (cpu[0] / cpu[1] - 1) * 100);
    free(pair);
}

int main(void) {
    json_object_seed(0x2545F491u);
    data_dir = bench_data_dir_create("hearth-rules-bench");

    hearth_error_t err;
    if (hearth_rules_check(RULES_DOC, (size_t)-1, &err))
        die("the benchmark's rules: %s", err.message);
    char rules_path[128];
    snprintf(rules_path, sizeof rules_path, "%s/rules.json", data_dir);
    FILE *f = fopen(rules_path, "w");
    if (!f || fputs(RULES_DOC, f) < 0 || fclose(f))
        die("writing %s: %s", rules_path, strerror(errno));

    server srv[2];
    server_start(&srv[0], "rules", true, rules_path);
    server_start(&srv[1], "no-rules", false, NULL);

    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    printf("Hearth rules benchmark: hearth %s, %s, %ld cores\n"
           "two in-process servers: rules on 127.0.0.1:%d, no rules on "
           "127.0.0.1:%d (fsync off, data in %s), namespace \"bench\"\n"
           "%d clients per server, each its own user; writes alternate "
           "/users/<uid> and /posts/<push id>, all allowed by the rules\n",
           hearth_version(), cpu, sysconf(_SC_NPROCESSORS_ONLN), srv[0].port,
           srv[1].port, data_dir, CLIENTS);
    fflush(stdout);

    client cl[2][CLIENTS];
    client *cs[2] = {cl[0], cl[1]};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < CLIENTS; k++) {
            client *c = &cl[i][k];
            memset(c, 0, sizeof *c);
            c->srv = &srv[i];
            c->k = k;
            snprintf(c->uid, sizeof c->uid, "u%d", k);
            make_token(c->uid, c->token, sizeof c->token);
            ws_connect(c);
            c->h.fd = connect_loopback(srv[i].port);
        }

    /* 1 */
    fprintf(stderr, "  1. realtime puts, %d rounds per configuration...\n",
            WS_ROUNDS);
    config_result ws[2];
    run_rounds(cs, ws_round, WS_WRITES, WS_ROUNDS, ws);
    long ws_failed[2] = {total_failed(cs[0]), total_failed(cs[1])};

    /* 2 */
    fprintf(stderr, "  2. REST PUTs, %d rounds per configuration...\n",
            REST_ROUNDS);
    config_result rest[2];
    run_rounds(cs, rest_round, REST_WRITES, REST_ROUNDS, rest);
    long rest_failed[2] = {total_failed(cs[0]) - ws_failed[0],
                           total_failed(cs[1]) - ws_failed[1]};

    char title[512];
    snprintf(title, sizeof title,
             "\n1. realtime (v5 WebSocket puts): %d connections per server, "
             "%d puts outstanding each; %d rounds of %d writes per "
             "configuration, alternating\n(latency: put sent -> ok answer, "
             "mostly queueing at this depth; server CPU: per write)",
             CLIENTS, WINDOW, WS_ROUNDS, CLIENTS * WS_WRITES);
    report(title, ws);
    snprintf(title, sizeof title,
             "\n2. REST (HTTP/1.1 keep-alive PUT ?auth=TOKEN): %d connections "
             "per server, one request at a time each; %d rounds of %d writes "
             "per configuration, alternating\n(latency: request sent -> "
             "whole response)",
             CLIENTS, REST_ROUNDS, CLIENTS * REST_WRITES);
    report(title, rest);

    eval_bench();

    printf("\nchecks: ");
    fflush(stdout);
    for (int i = 0; i < 2; i++)
        check_server(cs[i]);
    long failed = total_failed(cs[0]) + total_failed(cs[1]);
    if (checks_ok)
        printf("last scores and post counts match on both servers; the rules "
               "server refuses what its rules forbid\n");
    printf("writes answered other than ok: realtime %ld (rules) %ld (none), "
           "REST %ld (rules) %ld (none)\n",
           ws_failed[0], ws_failed[1], rest_failed[0], rest_failed[1]);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < CLIENTS; k++)
            if (cl[i][k].failed)
                printf("  first failure on the %s server: %s\n", srv[i].name,
                       cl[i][k].failure);

    if (failed || !checks_ok)
        printf("RUN INVALID: %s\n",
               failed ? "writes were refused, so the figures above do not "
                        "measure allowed writes"
                      : "a check failed");

    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < CLIENTS; k++) {
            ws_close(&cl[i][k].w);
            close(cl[i][k].h.fd);
            free(cl[i][k].h.in);
            free(cl[i][k].req);
        }
        free(ws[i].lat.v);
        free(ws[i].round_rate);
        free(rest[i].lat.v);
        free(rest[i].round_rate);
    }
    for (int i = 0; i < 2; i++)
        if (hearth_server_stop(srv[i].srv))
            die("server stop failed");
    bench_data_dir_remove();
    return failed || !checks_ok ? 1 : 0;
}
