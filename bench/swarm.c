/* swarm.c - many idle client connections, spread over processes and
 * loopback source addresses, for the connections and fan-out benchmarks.
 *
 *   swarm MODE PORT N [PROCS [SERVER_PID [ROUNDS]]]
 *
 * MODE:
 *   ws     N realtime sessions (raw v5 WebSocket, ns=bench), each with one
 *          listen on /swarm; then ROUNDS writes (REST PUT /swarm.json of
 *          1, 2, ...) must reach every session. With LISTENS=L in the
 *          environment (2-64), each session listens to /swarm/0 ..
 *          /swarm/L-1 instead, and each write sets all L children: N x L
 *          listeners, a session's latency that of the last of its L.
 *   http   N HTTP/1.1 keep-alive connections that each make one request
 *          and stay open idle; then ROUNDS more requests on every one.
 *   redis  N Redis connections subscribed to "swarm"; then ROUNDS
 *          PUBLISHes must reach every one.
 *
 * The clients are split over PROCS processes (one process may hold only
 * as many sockets as the open-file limit) and come from 127.0.0.2 ..
 * 127.0.0.65 (one source address has too few ports, and a server may let
 * one address hold only a share of its connections). When every client is
 * ready (its listen answered with the initial data, its request answered,
 * its subscription confirmed), SERVER_PID's RSS is read from /proc (0: not
 * measured) and each round starts; a round's latency per client is the
 * time from just before the write to its arrival (CLOCK_MONOTONIC, the
 * same clock in every process). Prints one line of key=value figures.
 * Only loopback; every phase has a time limit. */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "../Tests/CTests/ws_wire.h"

enum { SOURCES = 64, CONN_BUF = 1024, PHASE_MS = 120000 };

typedef enum mode { M_WS, M_HTTP, M_REDIS } mode;

typedef struct conn {
    uv_tcp_t tcp;
    uv_connect_t connect;
    uint16_t len;      /* bytes in buf */
    int8_t state;      /* 0 connecting, 1 handshaking, 2 ready, 3 data */
    int round;         /* the last round that arrived */
    uint8_t oks;       /* ws: listens answered */
    uint8_t got;       /* ws: pushes of round `round + 1` so far */
    uint64_t *arrived; /* per round: when (0: not yet) */
    char buf[CONN_BUF];
} conn;

static mode the_mode;
static int port, rounds = 1;
static int listens = 1; /* ws: per session (LISTENS) */
static uv_loop_t *loop;

/* ---- the child: its share of the clients ---- */

static conn *conns;
static int nconns, nready, round_no, ctl_fd, report_fd;
static int *narrived; /* per round: clients it reached */
static uv_pipe_t ctl;
static uv_timer_t deadline;

static void report(const void *p, size_t n) {
    if (write(report_fd, p, n) != (ssize_t)n)
        _exit(2);
}

static void send_text(conn *c, const char *text, size_t len) {
    char *copy = malloc(len);
    memcpy(copy, text, len);
    uv_buf_t b = uv_buf_init(copy, (unsigned)len);
    if (uv_try_write((uv_stream_t *)&c->tcp, &b, 1) != (int)len) {
        fprintf(stderr, "swarm: a short write on an idle connection\n");
        _exit(2);
    }
    free(copy);
}

/* A masked client frame (RFC 6455 requires the mask; a zero key leaves
 * the payload as it is). */
static void ws_send(conn *c, int opcode, const char *data, size_t len) {
    static const unsigned char zero_key[4];
    char f[256];
    size_t h = ws_wire_head((unsigned char *)f, 0x80 | opcode, len, zero_key);
    if (h + len > sizeof f) {
        fprintf(stderr, "swarm: a message too big for this client\n");
        _exit(2);
    }
    memcpy(f + h, data, len);
    send_text(c, f, h + len);
}

static void became_ready(conn *c) {
    c->state = 2;
    if (++nready == nconns) {
        uv_timer_stop(&deadline);
        char r = 'R';
        report(&r, 1);
    }
}

/* Round k's value reached c. A push may come before the parent's "round
 * starts" byte is read, so the count is per round. */
static void arrived(conn *c, int k) {
    if (k < 1 || k > rounds || c->round >= k)
        return;
    c->round = k;
    c->arrived[k - 1] = uv_hrtime();
    if (++narrived[k - 1] == nconns) {
        uv_timer_stop(&deadline);
        char r = 'A';
        report(&r, 1);
    }
}

/* One WebSocket message from the server. */
static void ws_message(conn *c, const char *m) {
    if (strstr(m, "\"t\":\"c\"")) { /* the hello: listen */
        for (int i = 0; i < listens; i++) {
            char listen[128], path[32];
            if (listens == 1)
                snprintf(path, sizeof path, "/swarm");
            else
                snprintf(path, sizeof path, "/swarm/%d", i);
            int n = snprintf(listen, sizeof listen,
                             "{\"t\":\"d\",\"d\":{\"r\":%d,\"a\":\"q\",\"b\":{\"p\":\"%s\",\"h\":\"\"}}}",
                             i + 1, path);
            ws_send(c, 0x1, listen, (size_t)n);
        }
        return;
    }
    if (strstr(m, "\"s\":\"ok\"")) {
        /* Each listen's initial data comes before its ok. */
        if (c->state == 3 && ++c->oks == listens)
            became_ready(c);
        return;
    }
    const char *p = strstr(m, "\"p\":\"/swarm"); /* "/swarm" or "/swarm/i" */
    const char *d = p ? strstr(p, "\"d\":") : NULL;
    if (d && atoi(d + 4) == 0 && (c->state == 1 || c->state == 3))
        c->state = 3; /* an initial value */
    else if (d && atoi(d + 4) == c->round + 1 && ++c->got == listens) {
        c->got = 0;
        arrived(c, atoi(d + 4));
    }
}

/* Frames in c->buf: messages, pings answered. Returns bytes used. */
static size_t ws_frames(conn *c) {
    size_t at = 0;
    ws_wire_frame f;
    while (ws_wire_parse(c->buf + at, c->len - at, &f)) {
        if (f.len > CONN_BUF) {
            fprintf(stderr, "swarm: a message too big for this client\n");
            _exit(2);
        }
        size_t h = f.head, len = (size_t)f.len;
        if (c->len - at < h + len)
            break;
        char save = c->buf[at + h + len];
        c->buf[at + h + len] = '\0';
        if (f.opcode == 0x9)
            ws_send(c, 0xA, c->buf + at + h, len);
        else if (f.opcode == 0x1)
            ws_message(c, c->buf + at + h);
        c->buf[at + h + len] = save;
        at += h + len;
    }
    return at;
}

/* Whole answers and pushes in c->buf for the http and redis modes. */
static size_t text_units(conn *c) {
    size_t at = 0;
    c->buf[c->len] = '\0';
    for (;;) {
        char *u = c->buf + at;
        if (the_mode == M_HTTP) {
            char *end = strstr(u, "\r\n\r\nok"); /* the anchor's fixed body */
            if (!end)
                break;
            at = (size_t)(end + 6 - c->buf);
            if (c->state == 1)
                became_ready(c);
            else
                arrived(c, round_no);
        } else {
            char *end = strstr(u, "\r\n:1\r\n"); /* subscribe's count */
            char *msg = strstr(u, "$7\r\nmessage\r\n$5\r\nswarm\r\n$");
            if (c->state == 1 && end) {
                at = (size_t)(end + 6 - c->buf);
                became_ready(c);
                continue;
            }
            char *v = msg ? strstr(msg + 26, "\r\n") : NULL;
            char *vend = v ? strstr(v + 2, "\r\n") : NULL;
            if (!vend)
                break;
            arrived(c, atoi(v + 2));
            at = (size_t)(vend + 2 - c->buf);
        }
    }
    return at;
}

static void on_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf) {
    (void)size;
    conn *c = h->data;
    *buf = uv_buf_init(c->buf + c->len, (unsigned)(CONN_BUF - 1 - c->len));
}

static void on_read(uv_stream_t *h, ssize_t n, const uv_buf_t *buf) {
    (void)buf;
    conn *c = h->data;
    if (n < 0) {
        fprintf(stderr, "swarm: a connection closed: %s (client %d of %d, state %d, %d ready)\n",
                uv_strerror((int)n), (int)(c - conns), nconns, c->state, nready);
        _exit(2);
    }
    c->len += (uint16_t)n;
    if (the_mode == M_WS && c->state == 0) {
        c->buf[c->len] = '\0';
        char *end = strstr(c->buf, "\r\n\r\n"); /* the 101's head */
        if (!end)
            return;
        size_t used = (size_t)(end + 4 - c->buf);
        memmove(c->buf, c->buf + used, c->len - used);
        c->len -= (uint16_t)used;
        c->state = 1;
    }
    size_t used = the_mode == M_WS ? ws_frames(c) : text_units(c);
    memmove(c->buf, c->buf + used, c->len - used);
    c->len -= (uint16_t)used;
    if (c->len >= CONN_BUF - 1) {
        fprintf(stderr, "swarm: an answer too big for this client: %.80s\n", c->buf);
        _exit(2);
    }
}

static const char *first_request(size_t *len) {
    static char ws[256];
    if (!ws[0])
        ws_wire_upgrade(ws, sizeof ws, "/.ws?v=5&ns=bench", "x", WS_WIRE_SAMPLE_KEY);
    static const char http[] = "GET /x HTTP/1.1\r\nHost: x\r\n\r\n";
    static const char redis[] = "*2\r\n$9\r\nSUBSCRIBE\r\n$5\r\nswarm\r\n";
    const char *r = the_mode == M_WS ? ws : the_mode == M_HTTP ? http : redis;
    *len = strlen(r);
    return r;
}

static void on_connect(uv_connect_t *req, int status) {
    conn *c = req->data;
    if (status < 0) {
        fprintf(stderr, "swarm: connect: %s\n", uv_strerror(status));
        _exit(2);
    }
    if (the_mode != M_WS)
        c->state = 1;
    size_t len;
    const char *r = first_request(&len);
    send_text(c, r, len);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_deadline(uv_timer_t *t) {
    (void)t;
    char r = 'T'; /* the parent reports what arrived */
    report(&r, 1);
    uv_timer_stop(&deadline);
}

/* The parent's "round k starts" byte; 'Q' ends the child. */
static void ctl_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf) {
    (void)h;
    (void)size;
    static char b[16];
    *buf = uv_buf_init(b, sizeof b);
}

static void send_results(void) {
    for (int i = 0; i < nconns; i++)
        report(conns[i].arrived, sizeof(uint64_t) * (size_t)rounds);
}

static void on_ctl(uv_stream_t *h, ssize_t n, const uv_buf_t *buf) {
    (void)h;
    if (n <= 0) {
        _exit(0);
    }
    for (ssize_t i = 0; i < n; i++) {
        if (buf->base[i] == 'Q') {
            send_results();
            _exit(0);
        }
        round_no++;
        uv_timer_start(&deadline, on_deadline, PHASE_MS, 0);
        if (the_mode == M_HTTP) {
            size_t len;
            const char *r = first_request(&len);
            for (int j = 0; j < nconns; j++)
                send_text(&conns[j], r, len);
        }
    }
}

static void child(int first, int count) {
    loop = uv_default_loop();
    nconns = count;
    conns = calloc((size_t)count, sizeof *conns);
    narrived = calloc((size_t)rounds, sizeof *narrived);
    uint64_t *times = calloc((size_t)count * (size_t)rounds, sizeof *times);
    struct sockaddr_in to;
    uv_ip4_addr("127.0.0.1", port, &to);
    for (int i = 0; i < count; i++) {
        conn *c = &conns[i];
        c->arrived = times + (size_t)i * (size_t)rounds;
        uv_tcp_init(loop, &c->tcp);
        c->tcp.data = c;
        c->connect.data = c;
        char from_ip[32];
        struct sockaddr_in from;
        snprintf(from_ip, sizeof from_ip, "127.0.0.%d", 2 + (first + i) % SOURCES);
        uv_ip4_addr(from_ip, 0, &from);
        uv_tcp_bind(&c->tcp, (struct sockaddr *)&from, 0);
        uv_tcp_connect(&c->connect, &c->tcp, (struct sockaddr *)&to, on_connect);
    }
    uv_timer_init(loop, &deadline);
    uv_timer_start(&deadline, on_deadline, PHASE_MS, 0);
    uv_pipe_init(loop, &ctl, 0);
    uv_pipe_open(&ctl, ctl_fd);
    uv_read_start((uv_stream_t *)&ctl, ctl_alloc, on_ctl);
    uv_run(loop, UV_RUN_DEFAULT);
    _exit(0);
}

/* ---- the parent ---- */

typedef struct kid {
    pid_t pid;
    int ctl, rep, count;
} kid;

static long rss_kb(int pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static void read_all(int fd, void *p, size_t n) {
    char *b = p;
    while (n) {
        ssize_t r = read(fd, b, n);
        if (r <= 0) {
            fprintf(stderr, "swarm: a client process ended early\n");
            exit(1);
        }
        b += r;
        n -= (size_t)r;
    }
}

/* /swarm's value for round k: k, or {"0":k,...} with several listens. */
static int swarm_value(char *out, size_t size, int k) {
    if (listens == 1)
        return snprintf(out, size, "%d", k);
    int len = snprintf(out, size, "{");
    for (int i = 0; i < listens; i++)
        len += snprintf(out + len, size - (size_t)len, "%s\"%d\":%d",
                        i ? "," : "", i, k);
    return len + snprintf(out + len, size - (size_t)len, "}");
}

/* The round's write, on a connection of its own (blocking). */
static void write_round(int k) {
    char req[1024], value[768];
    int len;
    if (the_mode == M_WS)
        len = snprintf(req, sizeof req,
                       "PUT /swarm.json?ns=bench HTTP/1.1\r\nHost: x\r\n"
                       "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
                       swarm_value(value, sizeof value, k), value);
    else if (the_mode == M_REDIS)
        len = snprintf(req, sizeof req,
                       "*3\r\n$7\r\nPUBLISH\r\n$5\r\nswarm\r\n$%d\r\n%d\r\n",
                       snprintf(NULL, 0, "%d", k), k);
    else
        return;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", port, &a);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) ||
        write(fd, req, (size_t)len) != len) {
        perror("swarm: write");
        exit(1);
    }
    char answer[512];
    (void)!read(fd, answer, sizeof answer); /* applied: then close */
    close(fd);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: swarm ws|http|redis PORT N [PROCS [SERVER_PID [ROUNDS]]]\n");
        return 64;
    }
    the_mode = strcmp(argv[1], "ws") == 0     ? M_WS
               : strcmp(argv[1], "http") == 0 ? M_HTTP
                                              : M_REDIS;
    port = atoi(argv[2]);
    int n = atoi(argv[3]);
    int procs = argc > 4 ? atoi(argv[4]) : 1;
    int server_pid = argc > 5 ? atoi(argv[5]) : 0;
    rounds = argc > 6 ? atoi(argv[6]) : 1;
    if (getenv("LISTENS"))
        listens = atoi(getenv("LISTENS"));
    if (n < 1 || procs < 1 || rounds < 1 || listens < 1 || listens > 64)
        return 64;
    signal(SIGPIPE, SIG_IGN);
    if (the_mode == M_WS)
        write_round(0); /* /swarm's initial value, for each listen's data */
    long rss0 = server_pid ? rss_kb(server_pid) : 0;
    kid *kids = calloc((size_t)procs, sizeof *kids);
    uint64_t t0 = uv_hrtime();
    for (int i = 0, first = 0; i < procs; i++) {
        int c[2], r[2];
        if (pipe(c) || pipe(r))
            return perror("pipe"), 1;
        kids[i].count = n / procs + (i < n % procs);
        kids[i].pid = fork();
        if (kids[i].pid == 0) {
            close(c[1]);
            close(r[0]);
            ctl_fd = c[0];
            report_fd = r[1];
            child(first, kids[i].count);
        }
        close(c[0]);
        close(r[1]);
        kids[i].ctl = c[1];
        kids[i].rep = r[0];
        first += kids[i].count;
    }
    int all_ready = 1;
    for (int i = 0; i < procs; i++) {
        char b;
        read_all(kids[i].rep, &b, 1);
        all_ready &= b == 'R';
    }
    double setup_s = (double)(uv_hrtime() - t0) / 1e9;
    long rss1 = server_pid ? rss_kb(server_pid) : 0;
    uint64_t *t_write = calloc((size_t)rounds, sizeof *t_write);
    for (int k = 1; k <= rounds && all_ready; k++) {
        for (int i = 0; i < procs; i++)
            if (write(kids[i].ctl, "G", 1) != 1)
                return 1;
        t_write[k - 1] = uv_hrtime();
        write_round(k);
        for (int i = 0; i < procs; i++) {
            char b;
            read_all(kids[i].rep, &b, 1);
        }
    }
    /* Every client's arrival times, then the latencies. */
    uint64_t *lat = calloc((size_t)n * (size_t)rounds + 1, sizeof *lat);
    size_t nlat = 0;
    uint64_t *times = calloc((size_t)rounds, sizeof *times);
    for (int i = 0; i < procs; i++) {
        if (write(kids[i].ctl, "Q", 1) != 1)
            return 1;
        for (int j = 0; j < kids[i].count; j++) {
            read_all(kids[i].rep, times, sizeof(uint64_t) * (size_t)rounds);
            for (int k = 0; k < rounds; k++)
                if (times[k] && all_ready)
                    lat[nlat++] = times[k] - t_write[k];
        }
        waitpid(kids[i].pid, NULL, 0);
    }
    qsort(lat, nlat, sizeof *lat, cmp_u64);
    size_t expected = (size_t)n * (size_t)rounds;
    printf("mode=%s clients=%d listens=%d procs=%d ready=%s setup_s=%.1f delivered=%zu/%zu "
           "p50_ms=%.1f p99_ms=%.1f max_ms=%.1f",
           argv[1], n, the_mode == M_WS ? n * listens : 0, procs, all_ready ? "all" : "NOT_ALL", setup_s, nlat, expected,
           nlat ? lat[nlat / 2] / 1e6 : 0.0, nlat ? lat[(nlat * 99) / 100] / 1e6 : 0.0,
           nlat ? lat[nlat - 1] / 1e6 : 0.0);
    if (server_pid)
        printf(" rss0_kb=%ld rss1_kb=%ld bytes_per_conn=%.0f", rss0, rss1,
               (double)(rss1 - rss0) * 1024.0 / n);
    printf("\n");
    return nlat == expected && all_ready ? 0 : 1;
}
