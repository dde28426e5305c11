/* write_floor.c - the floor under a fan-out on this machine: what it costs
 * the kernel alone to deliver one small message to each of N loopback TCP
 * connections, with no server work at all.
 *
 *   write-floor N THREADS [ROUNDS]
 *
 * A child process connects N sockets (from 127.0.0.2 .. 127.0.0.65, as
 * swarm does) and waits on them with epoll, as one client process of the
 * fan-out benchmark does; this process accepts them, then each round
 * THREADS threads write(2) 40 bytes to their share of the N (a thread
 * takes every THREADS-th). Latency per connection: from just before the
 * round's first write to the child's read (CLOCK_MONOTONIC, one clock for
 * both processes). One server loop thread cannot beat the THREADS=1 row;
 * the THREADS=2 row is what both cores of a 2-core machine could do.
 * Prints one line of key=value figures, as swarm does. Loopback only;
 * each round has a time limit. */
#include "bench_common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

const char bench_name[] = "write-floor";

enum { SOURCES = 64, MESSAGE = 40, MAX_THREADS = 8, ROUND_MS = 10000 };

/* Shared with the child: the round it waits for, and arrival times. */
typedef struct shared {
    atomic_int ready; /* the child's sockets are connected and watched */
    atomic_int round; /* the round the parent started (0: none yet) */
    atomic_int done;  /* the last round the child has seen complete */
    uint64_t arrived[];
} shared;

static int n_conns, n_threads;
static int *server_fds;

static void child(shared *sh, struct sockaddr_in to, int rounds) {
    int ep = epoll_create1(0);
    int *fds = xmalloc((size_t)n_conns * sizeof *fds);
    for (int i = 0; i < n_conns; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in from = {.sin_family = AF_INET,
                                   .sin_addr.s_addr = htonl(0x7f000002u + (uint32_t)(i % SOURCES))};
        if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&from, sizeof from) ||
            connect(fds[i], (struct sockaddr *)&to, sizeof to))
            die("connection %d: %s", i, strerror(errno));
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e);
    }
    atomic_store(&sh->ready, 1);
    for (int k = 1; k <= rounds; k++) {
        int got = 0;
        while (got < n_conns) {
            struct epoll_event ev[256];
            int n = epoll_wait(ep, ev, 256, ROUND_MS);
            if (n <= 0)
                _exit(2); /* the parent reports what did not arrive */
            uint64_t t = now_ns();
            for (int j = 0; j < n; j++) {
                char buf[MESSAGE * 4];
                uint32_t i = ev[j].data.u32;
                if (read(fds[i], buf, sizeof buf) > 0) {
                    sh->arrived[(size_t)(k - 1) * (size_t)n_conns + i] = t;
                    got++;
                }
            }
        }
        atomic_store(&sh->done, k);
    }
    _exit(0);
}

static void *writer(void *arg) {
    int first = (int)(intptr_t)arg;
    char msg[MESSAGE];
    memset(msg, 'x', sizeof msg);
    for (int i = first; i < n_conns; i += n_threads)
        if (write(server_fds[i], msg, sizeof msg) != (ssize_t)sizeof msg)
            die("write: %s", strerror(errno));
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3)
        die("usage: write-floor N THREADS [ROUNDS]");
    n_conns = atoi(argv[1]);
    n_threads = atoi(argv[2]);
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    if (n_conns < 1 || n_threads < 1 || n_threads > MAX_THREADS || rounds < 1)
        die("N, THREADS (1-%d) and ROUNDS must be positive", MAX_THREADS);
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof at;
    if (bind(l, (struct sockaddr *)&at, sizeof at) || listen(l, 4096) ||
        getsockname(l, (struct sockaddr *)&at, &len))
        die("listen: %s", strerror(errno));
    /* accept gives up when the child stops connecting (it died) */
    struct timeval limit = {.tv_sec = ROUND_MS / 1000};
    setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    size_t arrivals = (size_t)rounds * (size_t)n_conns;
    shared *sh = mmap(NULL, sizeof *sh + arrivals * sizeof(uint64_t),
                      PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        die("mmap: %s", strerror(errno));
    pid_t pid = fork();
    if (pid == 0) {
        close(l);
        child(sh, at, rounds);
    }
    server_fds = xmalloc((size_t)n_conns * sizeof *server_fds);
    for (int i = 0; i < n_conns; i++) {
        if ((server_fds[i] = accept(l, NULL, NULL)) < 0)
            die("accept: %s", strerror(errno));
        setsockopt(server_fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    for (uint64_t t0 = now_ns(); !atomic_load(&sh->ready);) {
        if (now_ns() - t0 > ROUND_MS * 1000000ull)
            die("the client process did not get ready");
        usleep(1000);
    }
    samples lat = {0};
    samples_reserve(&lat, arrivals);
    size_t delivered = 0;
    for (int k = 1; k <= rounds; k++) {
        usleep(100 * 1000); /* let the machine settle between rounds */
        uint64_t start = now_ns();
        pthread_t th[MAX_THREADS];
        for (int t = 0; t < n_threads; t++)
            pthread_create(&th[t], NULL, writer, (void *)(intptr_t)t);
        for (int t = 0; t < n_threads; t++)
            pthread_join(th[t], NULL);
        while (atomic_load(&sh->done) < k && now_ns() - start < ROUND_MS * 1000000ull)
            usleep(1000);
        for (int i = 0; i < n_conns; i++) {
            uint64_t t = sh->arrived[(size_t)(k - 1) * (size_t)n_conns + (size_t)i];
            if (t) {
                samples_add(&lat, (double)(t - start) / 1e6);
                delivered++;
            }
        }
        if (atomic_load(&sh->done) < k)
            break;
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    summary sum = summarize(&lat);
    printf("mode=floor clients=%d threads=%d delivered=%zu/%zu p50_ms=%.1f p99_ms=%.1f max_ms=%.1f\n",
           n_conns, n_threads, delivered, arrivals, sum.p50, sum.p99, sum.max);
    return delivered == arrivals ? 0 : 1;
}
