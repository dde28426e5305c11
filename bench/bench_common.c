/*
 * bench_common.c - helpers the benchmarks in bench/ share (see
 * bench_common.h).
 */
#include "bench_common.h"

#include "hearth.h"
#include "../Tests/CTests/ws_wire.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- errors and memory ---- */

void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", bench_name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1); /* atexit: the data directory goes */
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

/* ---- a temporary data directory ---- */

static char data_dir[64];

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void bench_data_dir_remove(void) {
    if (data_dir[0])
        nftw(data_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    data_dir[0] = '\0';
}

const char *bench_data_dir_create(const char *prefix) {
    if ((size_t)snprintf(data_dir, sizeof data_dir, "/tmp/%s-XXXXXX", prefix) >=
        sizeof data_dir)
        die("data directory prefix too long: %s", prefix);
    if (!mkdtemp(data_dir))
        die("mkdtemp: %s", strerror(errno));
    atexit(bench_data_dir_remove);
    return data_dir;
}

/* ---- an in-process server ---- */

hearth_server_t *bench_server_start(const char *data_dir, int *port) {
    hearth_server_config_t config = {.size = sizeof config, .host = "127.0.0.1", .port = 0,
                                     .data_dir = data_dir,
                                     .default_namespace = "bench",
                                     .fsync_mode = HEARTH_FSYNC_OFF};
    hearth_server_t *server;
    hearth_error_t err;
    if (hearth_server_start(&config, &server, &err))
        die("server: %s", err.message);
    *port = hearth_server_port(server);
    return server;
}

/* ---- time ---- */

uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- latency samples ---- */

void samples_reserve(samples *s, size_t cap) {
    if (cap <= s->cap)
        return;
    double *v = realloc(s->v, cap * sizeof *v);
    if (!v)
        die("out of memory");
    s->v = v;
    s->cap = cap;
}

void samples_add(samples *s, double x) {
    if (s->n == s->cap)
        samples_reserve(s, s->cap ? s->cap * 2 : 1024);
    s->v[s->n++] = x;
}

void samples_add_all(samples *s, const double *v, size_t n) {
    if (!n)
        return; /* v may be NULL then, which memcpy must not see */
    if (s->n + n > s->cap)
        samples_reserve(s, (s->n + n) * 2);
    memcpy(s->v + s->n, v, n * sizeof *v);
    s->n += n;
}

int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

summary summarize(samples *s) {
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

double median(double *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the machine ---- */

void cpu_model(char *buf, size_t size) {
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

/* ---- sockets to 127.0.0.1 ---- */

int connect_loopback(int port) {
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

void send_all(int fd, const void *data, size_t len) {
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

void inbuf_read_more(inbuf *b) {
    if (b->cap - b->len < 4096) {
        size_t cap = b->cap ? b->cap * 2 : 65536;
        unsigned char *in = realloc(b->in, cap);
        if (!in)
            die("out of memory");
        b->in = in;
        b->cap = cap;
    }
    ssize_t n;
    do /* one byte kept for the terminating NUL */
        n = recv(b->fd, b->in + b->len, b->cap - b->len - 1, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        die("the server closed a connection");
    b->len += (size_t)n;
    b->in[b->len] = '\0';
}

void inbuf_consume(inbuf *b, size_t n) {
    memmove(b->in, b->in + n, b->len - n);
    b->len -= n;
    if (b->cap)
        b->in[b->len] = '\0';
}

/* ---- a minimal RFC 6455 client ---- */

/* xorshift64, for masks and the handshake's nonce: unpredictability does
 * not matter on loopback. */
static uint64_t ws_next_random(rawws *w) {
    w->mask_state ^= w->mask_state << 13;
    w->mask_state ^= w->mask_state >> 7;
    w->mask_state ^= w->mask_state << 17;
    return w->mask_state;
}

/* Masked, as RFC 6455 requires of clients. */
void ws_frame(rawws *w, int opcode, const char *data, size_t len) {
    size_t need = w->out_len + WS_WIRE_HEAD_MAX + len;
    if (need > w->out_cap) {
        size_t cap = need * 2;
        char *o = realloc(w->out, cap);
        if (!o)
            die("out of memory");
        w->out = o;
        w->out_cap = cap;
    }
    unsigned char *f = (unsigned char *)w->out + w->out_len;
    uint64_t mask_bits = ws_next_random(w);
    unsigned char key[4];
    memcpy(key, &mask_bits, 4);
    size_t h = ws_wire_head(f, 0x80 | opcode, len, key);
    memcpy(f + h, data, len);
    ws_wire_mask(f + h, len, key);
    w->out_len += h + len;
}

void ws_flush(rawws *w) {
    if (w->out_len)
        send_all(w->b.fd, w->out, w->out_len);
    w->out_len = 0;
}

bool ws_frame_ready(const rawws *w) {
    ws_wire_frame f;
    return ws_wire_parse(w->b.in, w->b.len, &f) && w->b.len >= f.head + f.len;
}

size_t ws_recv(rawws *w) {
    inbuf *b = &w->b;
    w->msg_len = 0;
    for (;;) {
        ws_wire_frame f;
        while (!ws_wire_parse(b->in, b->len, &f))
            inbuf_read_more(b);
        if (f.len > (64u << 20))
            die("websocket: a frame of %llu bytes", (unsigned long long)f.len);
        size_t h = f.head, plen = (size_t)f.len;
        while (b->len < h + plen)
            inbuf_read_more(b);
        unsigned char *p = b->in + h;
        if (f.masked)
            ws_wire_mask(p, plen, f.key);
        if (f.opcode == 0x8)
            die("websocket: the server sent a close frame");
        if (f.opcode == 0x9) {
            ws_frame(w, 0xA, (const char *)p, plen);
            ws_flush(w);
        } else if (f.opcode == 0x1 || f.opcode == 0x0) {
            if (w->msg_len + plen + 1 > w->msg_cap) {
                size_t cap = (w->msg_len + plen + 1) * 2;
                char *m = realloc(w->msg, cap);
                if (!m)
                    die("out of memory");
                w->msg = m;
                w->msg_cap = cap;
            }
            memcpy(w->msg + w->msg_len, p, plen);
            w->msg_len += plen;
            w->msg[w->msg_len] = '\0';
            if (f.fin) {
                inbuf_consume(b, h + plen);
                return w->msg_len;
            }
        } /* pongs and binary frames: ignored */
        inbuf_consume(b, h + plen);
    }
}

void ws_open(rawws *w, int port, const char *resource) {
    memset(w, 0, sizeof *w);
    w->mask_state = now_ns() | 1; /* xorshift's state must not be 0 */
    w->b.fd = connect_loopback(port);
    unsigned char nonce[16];
    for (int i = 0; i < 16; i++)
        nonce[i] = (unsigned char)ws_next_random(w);
    char key[32], want[32], host[32], req[512];
    EVP_EncodeBlock((unsigned char *)key, nonce, 16);
    if (!ws_wire_accept(key, want))
        die("SHA-1 failed");
    snprintf(host, sizeof host, "127.0.0.1:%d", port);
    int n = ws_wire_upgrade(req, sizeof req, resource, host, key);
    send_all(w->b.fd, req, (size_t)n);
    char *end;
    for (;;) {
        inbuf_read_more(&w->b);
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
    inbuf_consume(&w->b, (size_t)(end + 4 - (char *)w->b.in));
}

void ws_open_session(rawws *w, int port, const char *resource) {
    ws_open(w, port, resource);
    size_t len = ws_recv(w);
    if (!strstr(w->msg, "\"t\":\"c\""))
        die("websocket: no hello: %.*s", (int)len, w->msg);
}

void ws_close(rawws *w) {
    ws_frame(w, 0x8, "\x03\xe8", 2); /* 1000: normal closure */
    ws_flush(w);
    close(w->b.fd);
    free(w->b.in);
    free(w->msg);
    free(w->out);
}
