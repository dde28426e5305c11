/*
 * bench_common.h - helpers the benchmarks in bench/ share: fatal errors,
 * a temporary data directory, the monotonic clock, latency samples and
 * their percentiles, the CPU's name for the report's first line, and a
 * minimal RFC 6455 client of our own (so that the figures measure the
 * server, not a client library; its frames and handshake bytes are
 * Tests/CTests/ws_wire.c's, which the C tests use too). Compiled into each
 * benchmark beside its own file (see the Makefile's bench rules).
 */
#ifndef HEARTH_BENCH_COMMON_H
#define HEARTH_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- errors and memory ---- */

/* Each benchmark defines it: the name its error messages start with
 * ("bench-rules"). A definition, not a setter, so none can forget it. */
extern const char bench_name[];

/* "<bench_name>: <message>" on stderr, then exit(1) (atexit handlers run,
 * so a data directory from bench_data_dir_create goes). */
_Noreturn void die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* malloc that dies instead of returning NULL; n 0 is a valid size. */
void *xmalloc(size_t n);

/* ---- a temporary data directory ---- */

/* Creates /tmp/<prefix>-XXXXXX (dies on failure) and removes it with all
 * it holds at exit; returns its path. One per process. */
const char *bench_data_dir_create(const char *prefix);

/* Removes it now (as at exit; a second call does nothing). */
void bench_data_dir_remove(void);

/* ---- an in-process server ---- */

struct hearth_server_s;

/* Starts a server on 127.0.0.1 (a free port, put in *port) with its data
 * in data_dir, namespace "bench" by default, fsync off; dies on failure. */
struct hearth_server_s *bench_server_start(const char *data_dir, int *port);

/* ---- time ---- */

/* CLOCK_MONOTONIC in nanoseconds: the same clock on every thread. */
uint64_t now_ns(void);

/* ---- latency samples ---- */

typedef struct samples {
    double *v;
    size_t n, cap;
} samples;

void samples_reserve(samples *s, size_t cap);
void samples_add(samples *s, double x);
void samples_add_all(samples *s, const double *v, size_t n);

/* qsort's comparison for doubles, ascending. */
int cmp_double(const void *a, const void *b);

typedef struct summary {
    double p50, p99, max;
} summary;

/* Nearest-rank percentiles; sorts the samples. All NAN when empty. */
summary summarize(samples *s);

/* Median of n > 0 values; sorts them. */
double median(double *v, size_t n);

/* ---- the machine ---- */

/* /proc/cpuinfo's first "model name", or "unknown CPU". */
void cpu_model(char *buf, size_t size);

/* ---- sockets to 127.0.0.1 ---- */

/* A TCP connection with TCP_NODELAY; dies on failure. */
int connect_loopback(int port);

/* Sends all of data; dies on failure (no SIGPIPE). */
void send_all(int fd, const void *data, size_t len);

/* An input buffer over a socket; in is NUL-terminated after len bytes
 * once anything was read, so headers can be searched with strstr. */
typedef struct inbuf {
    int fd;
    unsigned char *in;
    size_t len, cap;
} inbuf;

/* Blocks for more bytes; dies when the peer closes. */
void inbuf_read_more(inbuf *b);

/* Drops the first n bytes. */
void inbuf_consume(inbuf *b, size_t n);

/* ---- a minimal RFC 6455 client ---- */

typedef struct rawws {
    inbuf b;
    char *msg; /* the message being assembled */
    size_t msg_len, msg_cap;
    uint64_t mask_state;
    char *out; /* frames to send at once */
    size_t out_len, out_cap;
} rawws;

/* Connects to 127.0.0.1:port and upgrades on resource (dies on failure,
 * or when the server's Sec-WebSocket-Accept is wrong). */
void ws_open(rawws *w, int port, const char *resource);

/* ws_open, then the hello ({"t":"c",...}) that starts every session of
 * the realtime protocol; dies without it. */
void ws_open_session(rawws *w, int port, const char *resource);

/* Appends a frame to w->out; nothing is sent before ws_flush, so that
 * pipelined requests leave in one send. */
void ws_frame(rawws *w, int opcode, const char *data, size_t len);
void ws_flush(rawws *w);

/* Whether a whole frame is buffered (reading it will not block). */
bool ws_frame_ready(const rawws *w);

/* Blocks for the next complete text message; NUL-terminated in w->msg
 * until the next call. Pings are answered; a close frame ends the run. */
size_t ws_recv(rawws *w);

/* Sends a close frame (1000) and frees w. */
void ws_close(rawws *w);

#endif
