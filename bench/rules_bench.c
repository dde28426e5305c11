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

#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
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

/* ---- helpers ---- */

static char data_dir[64];

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_data_dir(void) {
    if (data_dir[0])
        nftw(data_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    data_dir[0] = '\0';
}

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench-rules: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1); /* atexit: the data directory goes */
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

/* Latency samples. */
typedef struct samples {
    double *v;
    size_t n, cap;
} samples;

static void samples_add_all(samples *s, const double *v, size_t n) {
    if (s->n + n > s->cap) {
        size_t cap = (s->n + n) * 2;
        double *nv = realloc(s->v, cap * sizeof *nv);
        if (!nv)
            die("out of memory");
        s->v = nv;
        s->cap = cap;
    }
    memcpy(s->v + s->n, v, n * sizeof *v);
    s->n += n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct summary {
    double p50, p99, max;
} summary;

/* Nearest-rank percentiles (sorts the samples). */
static summary summarize(samples *s) {
    summary r = {NAN, NAN, NAN};
    if (!s->n)
        return r;
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    size_t i50 = (size_t)ceil(0.50 * (double)s->n);
    size_t i99 = (size_t)ceil(0.99 * (double)s->n);
    r.p50 = s->v[i50 ? i50 - 1 : 0];
    r.p99 = s->v[i99 ? i99 - 1 : 0];
    r.max = s->v[s->n - 1];
    return r;
}

static double median(double *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void cpu_model(char *buf, size_t size) {
    snprintf(buf, size, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (colon && strncmp(line, "model name", 10) == 0) {
            colon += strspn(colon + 1, " \t") + 1;
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(buf, size, "%s", colon);
            break;
        }
    }
    fclose(f);
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

static int connect_loopback(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one))
        die("connect to 127.0.0.1:%d: %s", port, strerror(errno));
    return fd;
}

static void send_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("send: %s", strerror(errno));
        p += n;
        len -= (size_t)n;
    }
}

/* An input buffer over a socket. */
typedef struct inbuf {
    int fd;
    unsigned char *in;
    size_t len, cap;
} inbuf;

static void read_more(inbuf *b) {
    if (b->cap - b->len < 4096) {
        size_t cap = b->cap ? b->cap * 2 : 65536;
        unsigned char *in = realloc(b->in, cap);
        if (!in)
            die("out of memory");
        b->in = in;
        b->cap = cap;
    }
    ssize_t n;
    do
        n = recv(b->fd, b->in + b->len, b->cap - b->len - 1, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        die("the server closed a connection");
    b->len += (size_t)n;
    b->in[b->len] = '\0';
}

static void consume(inbuf *b, size_t n) {
    memmove(b->in, b->in + n, b->len - n);
    b->len -= n;
    if (b->cap)
        b->in[b->len] = '\0';
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
    hearth_server_config_t config = {.host = "127.0.0.1", .port = 0,
                                     .data_dir = s->dir,
                                     .default_namespace = "bench",
                                     .fsync_mode = HEARTH_FSYNC_OFF,
                                     .rules_file = rules ? rules_path : NULL};
    hearth_error_t err;
    if (hearth_server_start(&config, &s->srv, &err))
        die("server (%s): %s", name, err.message);
    s->port = hearth_server_port(s->srv);
}

/* ---- a minimal RFC 6455 client ---- */

typedef struct rawws {
    inbuf b;
    char *msg; /* the message being assembled */
    size_t msg_len, msg_cap;
    uint64_t mask_state;
    char *out; /* frames to send at once */
    size_t out_len, out_cap;
} rawws;

/* Appends a masked frame (as RFC 6455 requires of clients) to w->out. */
static void ws_frame(rawws *w, int opcode, const char *data, size_t len) {
    size_t need = w->out_len + 14 + len;
    if (need > w->out_cap) {
        size_t cap = need * 2;
        char *o = realloc(w->out, cap);
        if (!o)
            die("out of memory");
        w->out = o;
        w->out_cap = cap;
    }
    unsigned char *f = (unsigned char *)w->out + w->out_len;
    size_t h = 0;
    f[h++] = (unsigned char)(0x80 | opcode);
    if (len < 126) {
        f[h++] = (unsigned char)(0x80 | len);
    } else if (len < 65536) {
        f[h++] = 0x80 | 126;
        f[h++] = (unsigned char)(len >> 8);
        f[h++] = (unsigned char)len;
    } else {
        f[h++] = 0x80 | 127;
        for (int i = 7; i >= 0; i--)
            f[h++] = (unsigned char)((uint64_t)len >> (8 * i));
    }
    /* xorshift64 masks: unpredictability does not matter on loopback */
    w->mask_state ^= w->mask_state << 13;
    w->mask_state ^= w->mask_state >> 7;
    w->mask_state ^= w->mask_state << 17;
    unsigned char *mask = f + h;
    memcpy(mask, &w->mask_state, 4);
    h += 4;
    for (size_t i = 0; i < len; i++)
        f[h + i] = (unsigned char)data[i] ^ mask[i % 4];
    w->out_len += h + len;
}

static void ws_flush(rawws *w) {
    if (w->out_len)
        send_all(w->b.fd, w->out, w->out_len);
    w->out_len = 0;
}

/* Whether a whole frame is buffered (reading it will not block). */
static bool ws_frame_ready(const rawws *w) {
    const unsigned char *in = w->b.in;
    if (w->b.len < 2)
        return false;
    bool masked = in[1] & 0x80;
    uint64_t plen = in[1] & 0x7F;
    size_t ext = plen == 126 ? 2 : plen == 127 ? 8 : 0;
    size_t h = 2 + ext + (masked ? 4 : 0);
    if (w->b.len < h)
        return false;
    if (ext) {
        plen = 0;
        for (size_t i = 0; i < ext; i++)
            plen = plen << 8 | in[2 + i];
    }
    return w->b.len >= h + plen;
}

/* Blocks for the next complete text message; NUL-terminated in w->msg
 * until the next call. Pings are answered; a close frame ends the run. */
static size_t ws_recv(rawws *w) {
    inbuf *b = &w->b;
    w->msg_len = 0;
    for (;;) {
        while (b->len < 2)
            read_more(b);
        bool fin = b->in[0] & 0x80, masked = b->in[1] & 0x80;
        int opcode = b->in[0] & 0x0F;
        size_t h = 2;
        uint64_t plen = b->in[1] & 0x7F;
        size_t ext = plen == 126 ? 2 : plen == 127 ? 8 : 0;
        while (b->len < h + ext + (masked ? 4 : 0))
            read_more(b);
        if (ext) {
            plen = 0;
            for (size_t i = 0; i < ext; i++)
                plen = plen << 8 | b->in[h + i];
            h += ext;
        }
        if (plen > (64u << 20))
            die("websocket: a frame of %llu bytes", (unsigned long long)plen);
        unsigned char mask[4] = {0};
        if (masked) {
            memcpy(mask, b->in + h, 4);
            h += 4;
        }
        while (b->len < h + plen)
            read_more(b);
        unsigned char *p = b->in + h;
        for (size_t i = 0; masked && i < plen; i++)
            p[i] ^= mask[i % 4];
        if (opcode == 0x8)
            die("websocket: the server sent a close frame");
        if (opcode == 0x9) {
            ws_frame(w, 0xA, (const char *)p, (size_t)plen);
            ws_flush(w);
        } else if (opcode == 0x1 || opcode == 0x0) {
            if (w->msg_len + plen + 1 > w->msg_cap) {
                size_t cap = (w->msg_len + (size_t)plen + 1) * 2;
                char *m = realloc(w->msg, cap);
                if (!m)
                    die("out of memory");
                w->msg = m;
                w->msg_cap = cap;
            }
            memcpy(w->msg + w->msg_len, p, (size_t)plen);
            w->msg_len += (size_t)plen;
            w->msg[w->msg_len] = '\0';
            if (fin) {
                consume(b, h + (size_t)plen);
                return w->msg_len;
            }
        } /* pongs and binary frames: ignored */
        consume(b, h + (size_t)plen);
    }
}

/* base64 of SHA-1(key + RFC 6455's GUID), the expected
 * Sec-WebSocket-Accept. */
static void ws_accept_for(const char *key, char out[64]) {
    char joined[128];
    int n = snprintf(joined, sizeof joined,
                     "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    if (!EVP_Digest(joined, (size_t)n, digest, &dlen, EVP_sha1(), NULL))
        die("SHA-1 failed");
    EVP_EncodeBlock((unsigned char *)out, digest, (int)dlen);
}

static void ws_open(rawws *w, int port, const char *resource) {
    memset(w, 0, sizeof *w);
    w->mask_state = now_ns() | 1;
    w->b.fd = connect_loopback(port);
    unsigned char nonce[16];
    for (int i = 0; i < 16; i++) {
        w->mask_state ^= w->mask_state << 13;
        w->mask_state ^= w->mask_state >> 7;
        w->mask_state ^= w->mask_state << 17;
        nonce[i] = (unsigned char)w->mask_state;
    }
    char key[32], want[64];
    EVP_EncodeBlock((unsigned char *)key, nonce, 16);
    ws_accept_for(key, want);
    char req[512];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                     "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
                     resource, port, key);
    send_all(w->b.fd, req, (size_t)n);
    char *end;
    for (;;) {
        read_more(&w->b);
        if ((end = strstr((char *)w->b.in, "\r\n\r\n")))
            break;
        if (w->b.len > 16384)
            die("websocket: no end to the handshake's headers");
    }
    *end = '\0';
    const char *accept = strcasestr((char *)w->b.in, "\r\nSec-WebSocket-Accept:");
    if (strncmp((char *)w->b.in, "HTTP/1.1 101", 12) || !accept)
        die("websocket handshake refused: %.80s", (char *)w->b.in);
    accept += 23;
    accept += strspn(accept, " \t");
    if (strncmp(accept, want, strlen(want)))
        die("websocket: wrong Sec-WebSocket-Accept");
    consume(&w->b, (size_t)(end + 4 - (char *)w->b.in));
}

static void ws_close(rawws *w) {
    ws_frame(w, 0x8, "\x03\xe8", 2); /* 1000: normal closure */
    ws_flush(w);
    close(w->b.fd);
    free(w->b.in);
    free(w->msg);
    free(w->out);
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

static void ws_connect(client *c) {
    ws_open(&c->w, c->srv->port, "/.ws?v=5&ns=bench");
    size_t len = ws_recv(&c->w);
    if (!strstr(c->w.msg, "\"t\":\"c\""))
        die("websocket: no hello: %.*s", (int)len, c->w.msg);
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
    static __thread char *req;
    static __thread size_t req_cap;
    size_t blen = body ? strlen(body) : 0;
    size_t need = strlen(target) + strlen(headers) + blen + 256;
    if (need > req_cap) {
        free(req);
        req = xmalloc(need);
        req_cap = need;
    }
    int n = snprintf(req, req_cap,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s"
                     "Content-Length: %zu\r\n\r\n%s",
                     method, target, c->srv->port, headers, blen,
                     body ? body : "");
    inbuf *b = &c->h;
    /* the previous response's body */
    send_all(b->fd, req, (size_t)n);
    char *end;
    while (!b->len || !(end = strstr((char *)b->in, "\r\n\r\n")))
        read_more(b);
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
        read_more(b);
    consume(b, head); /* the body is now at the start */
    *body_len = clen;
    return status;
}

static void http_done(client *c, size_t body_len) {
    consume(&c->h, body_len);
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
    /* u0 may not write u1's record, nor post as u1. */
    client *c = &cs[0];
    char status[64], body[512];
    snprintf(body, sizeof body,
             "{\"p\":\"/users/%s\",\"d\":{\"name\":\"x\",\"score\":1}}",
             cs[1].uid);
    ws_request(c, "p", body, status, sizeof status);
    if (strcmp(status, "permission_denied"))
        check_fail("rules server: u0 writing /users/u1 answered %s", status);
    snprintf(body, sizeof body,
             "{\"p\":\"/posts/forged\",\"d\":{\"author\":\"%s\",\"text\":\"x\","
             "\"at\":{\".sv\":\"timestamp\"}}}",
             cs[1].uid);
    ws_request(c, "p", body, status, sizeof status);
    if (strcmp(status, "permission_denied"))
        check_fail("rules server: u0 posting as u1 answered %s", status);
    snprintf(body, sizeof body,
             "{\"p\":\"/users/%s\",\"d\":{\"name\":\"x\",\"score\":1,"
             "\"email\":\"not an address\"}}",
             c->uid);
    ws_request(c, "p", body, status, sizeof status);
    if (strcmp(status, "permission_denied"))
        check_fail("rules server: a bad email answered %s", status);
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
    strcpy(data_dir, "/tmp/hearth-rules-bench-XXXXXX");
    if (!mkdtemp(data_dir))
        die("mkdtemp: %s", strerror(errno));
    atexit(remove_data_dir);

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
        }
        free(ws[i].lat.v);
        free(ws[i].round_rate);
        free(rest[i].lat.v);
        free(rest[i].round_rate);
    }
    for (int i = 0; i < 2; i++)
        if (hearth_server_stop(srv[i].srv))
            die("server stop failed");
    remove_data_dir();
    return failed || !checks_ok ? 1 : 0;
}
