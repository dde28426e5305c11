/* sse_fanout.c - one write fanned out to N server-sent event streams.
 *
 *   sse_fanout PORT[,PORT...] STREAMS [ROUNDS]
 *
 * Opens STREAMS streams of /fanout.json on 127.0.0.1:PORT (spread round
 * robin over several ports: the nodes of a cluster, the write going to
 * the first), waits for each
 * stream's first event, then, ROUNDS times: writes a new value with a PUT
 * on a separate connection and measures, for every stream, the time from
 * just before the PUT to the arrival of the event carrying that value.
 * Prints delivery p50 / p99 / max over all streams and rounds, and whether
 * every stream got every value. Only loopback; bounded in time. */
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

enum { SOURCES = 32 }; /* client addresses 127.0.0.2 .. 127.0.0.33 */

typedef struct stream {
    uv_tcp_t tcp;
    uv_connect_t connect;
    char buf[4096];
    size_t len;
    int seen_round; /* the last round whose value arrived; -1: nothing */
} stream;

static uv_loop_t *loop;
static stream *streams;
static int nstreams, rounds, round_no = -1, ready, arrived;
static int port;           /* where the write goes */
static int ports[16], nports;
static uint64_t t_write;
static double *latencies;
static size_t nlat;
static uv_timer_t deadline;

static void on_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf) {
    (void)size;
    stream *s = h->data;
    *buf = uv_buf_init(s->buf + s->len, (unsigned)(sizeof s->buf - s->len - 1));
}

static void start_round(void);

static void on_read(uv_stream_t *h, ssize_t n, const uv_buf_t *buf) {
    (void)buf;
    stream *s = h->data;
    if (n < 0) {
        uv_close((uv_handle_t *)h, NULL);
        return;
    }
    s->len += (size_t)n;
    s->buf[s->len] = '\0';
    /* Events end with a blank line; look at each complete one. */
    char *end;
    while ((end = strstr(s->buf, "\n\n"))) {
        *end = '\0';
        char *data = strstr(s->buf, "data: ");
        if (data && s->seen_round < 0 && strstr(s->buf, "event: put")) {
            s->seen_round = 0;
            if (++ready == nstreams)
                start_round();
        } else if (data && round_no > 0) {
            char want[32];
            snprintf(want, sizeof want, "\"data\":%d}", round_no);
            if (strstr(data, want) && s->seen_round < round_no) {
                s->seen_round = round_no;
                latencies[nlat++] = (double)(uv_hrtime() - t_write) / 1e6;
                if (++arrived == nstreams)
                    start_round();
            }
        }
        size_t used = (size_t)(end + 2 - s->buf);
        memmove(s->buf, end + 2, s->len - used + 1);
        s->len -= used;
    }
    if (s->len > sizeof s->buf - 256) /* keep-alives and headers: drop */
        s->len = 0;
}

static void on_connect(uv_connect_t *c, int status) {
    stream *s = c->data;
    if (status < 0) {
        fprintf(stderr, "connect: %s\n", uv_strerror(status));
        exit(1);
    }
    static const char req[] =
        "GET /fanout.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n";
    uv_buf_t b = uv_buf_init((char *)req, sizeof req - 1);
    uv_try_write((uv_stream_t *)&s->tcp, &b, 1);
    uv_read_start((uv_stream_t *)&s->tcp, on_alloc, on_read);
}

static void start_round(void) {
    if (round_no >= rounds) {
        uv_stop(loop);
        return;
    }
    round_no = round_no < 1 ? 1 : round_no + 1; /* all listening: go */
    arrived = 0;
    /* Write with a plain blocking socket (outside the loop's accounting). */
    char req[256];
    int len = snprintf(req, sizeof req,
                       "PUT /fanout.json HTTP/1.1\r\nHost: x\r\nContent-Length: "
                       "%d\r\nConnection: close\r\n\r\n%d",
                       snprintf(NULL, 0, "%d", round_no), round_no);
    uv_os_sock_t fd;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", port, &a);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    t_write = uv_hrtime();
    if (connect(fd, (struct sockaddr *)&a, sizeof a) ||
        write(fd, req, (size_t)len) != len) {
        perror("put");
        exit(1);
    }
    close(fd); /* the reply is not needed; the write is applied on arrival */
}

static void on_deadline(uv_timer_t *t) {
    (void)t;
    fprintf(stderr, "time limit: round %d, %d of %d streams got it\n", round_no,
            arrived, nstreams);
    uv_stop(loop);
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: sse_fanout PORT[,PORT...] STREAMS [ROUNDS]\n");
        return 64;
    }
    for (char *save = NULL, *t = strtok_r(argv[1], ",", &save);
         t && nports < 16; t = strtok_r(NULL, ",", &save))
        ports[nports++] = atoi(t);
    port = ports[0];
    nstreams = atoi(argv[2]);
    rounds = argc > 3 ? atoi(argv[3]) : 5;
    loop = uv_default_loop();
    streams = calloc((size_t)nstreams, sizeof *streams);
    latencies = calloc((size_t)nstreams * (size_t)rounds + 1, sizeof *latencies);
    for (int i = 0; i < nstreams; i++) {
        stream *s = &streams[i];
        struct sockaddr_in a;
        uv_ip4_addr("127.0.0.1", ports[i % nports], &a);
        s->seen_round = -1;
        uv_tcp_init(loop, &s->tcp);
        /* Streams come from 127.0.0.2 .. 127.0.0.33, as many clients
         * would: the server lets one address hold only a share of its
         * connections, and one source address has too few ports. */
        struct sockaddr_in from;
        char from_ip[32];
        snprintf(from_ip, sizeof from_ip, "127.0.0.%d", 2 + i % SOURCES);
        uv_ip4_addr(from_ip, 0, &from);
        uv_tcp_bind(&s->tcp, (struct sockaddr *)&from, 0);
        s->tcp.data = s;
        s->connect.data = s;
        uv_tcp_connect(&s->connect, &s->tcp, (struct sockaddr *)&a, on_connect);
    }
    uv_timer_init(loop, &deadline);
    uv_timer_start(&deadline, on_deadline, 120000, 0);
    uv_unref((uv_handle_t *)&deadline);
    uint64_t t0 = uv_hrtime();
    uv_run(loop, UV_RUN_DEFAULT);
    double setup_s = (double)(uv_hrtime() - t0) / 1e9;
    qsort(latencies, nlat, sizeof *latencies, compare);
    size_t expected = (size_t)nstreams * (size_t)rounds;
    printf("sse fan-out: %d streams x %d writes: delivered %zu/%zu; "
           "p50 %.1f ms, p99 %.1f ms, max %.1f ms (run %.1f s)\n",
           nstreams, rounds, nlat, expected,
           nlat ? latencies[nlat / 2] : 0.0,
           nlat ? latencies[(nlat * 99) / 100] : 0.0,
           nlat ? latencies[nlat - 1] : 0.0, setup_s);
    return nlat == expected ? 0 : 1;
}
