/* stall_bench.c - how long one large write stalls everyone else: the
 * longest wait of a small GET that another client repeats on its own
 * connection while (1) a 200 MB PUT the rules deny and (2) a PUT of an
 * object with 1,000,000 keys the rules allow go through. The anchor is the
 * same GET's longest wait with nothing else going on. */
#include "bench_common.h"
#include "hearth.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

const char bench_name[] = "bench-stall";

static int port;
static atomic_bool stop_probe;
static atomic_uint_fast64_t worst_ns; /* the longest GET since reset */

/* One keep-alive connection asking for a small value, again and again. */
static void *probe(void *arg) {
    (void)arg;
    inbuf b = {.fd = connect_loopback(port)};
    const char *get = "GET /small.json HTTP/1.1\r\nHost: x\r\n\r\n";
    while (!atomic_load(&stop_probe)) {
        uint64_t t0 = now_ns();
        send_all(b.fd, get, strlen(get));
        char *end;
        while (!b.len || !(end = strstr((char *)b.in, "\r\n\r\n")))
            inbuf_read_more(&b);
        const char *cl = strstr((char *)b.in, "Content-Length: ");
        size_t total = (size_t)(end + 4 - (char *)b.in) + (size_t)atol(cl + 16);
        while (b.len < total)
            inbuf_read_more(&b);
        inbuf_consume(&b, total);
        uint64_t took = now_ns() - t0;
        uint64_t seen = atomic_load(&worst_ns);
        while (took > seen && !atomic_compare_exchange_weak(&worst_ns, &seen, took))
            ;
        usleep(1000);
    }
    close(b.fd);
    return NULL;
}

/* Sends one request with its body and waits for the answer's status. */
static int put(const char *target, const char *body, size_t len) {
    int fd = connect_loopback(port);
    char head[256];
    int n = snprintf(head, sizeof head,
                     "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n", target, len);
    send_all(fd, head, (size_t)n);
    /* The server may answer (and stop reading) before the end: send what
     * it takes, then read the answer. */
    for (size_t at = 0; at < len;) {
        ssize_t w = send(fd, body + at, len - at > (1 << 20) ? 1 << 20 : len - at,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            at += (size_t)w;
            continue;
        }
        char peek[16];
        if (recv(fd, peek, sizeof peek, MSG_PEEK | MSG_DONTWAIT) > 0)
            break; /* answered early */
        usleep(100);
    }
    char answer[64] = "";
    ssize_t r = recv(fd, answer, sizeof answer - 1, 0);
    close(fd);
    int status = 0;
    if (r > 0)
        sscanf(answer, "HTTP/1.1 %d", &status);
    return status;
}

static void phase(const char *what, const char *target, const char *body,
                  size_t len) {
    atomic_store(&worst_ns, 0);
    uint64_t t0 = now_ns();
    int status = body ? put(target, body, len) : (usleep(1000000), 0);
    double took = (double)(now_ns() - t0) / 1e6;
    usleep(50000); /* a few more probes after it */
    printf("%-34s status %3d in %8.1f ms; longest small GET: %8.1f ms\n",
           what, status, took, (double)atomic_load(&worst_ns) / 1e6);
}

int main(void) {
    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("bench-stall on %s\n", cpu);
    const char *dir = bench_data_dir_create("hearth-stall");
    char rules[256];
    snprintf(rules, sizeof rules, "%s/rules.json", dir);
    FILE *f = fopen(rules, "w");
    fputs("{\"rules\": {\".read\": true, \".write\": false,"
          " \"open\": {\".write\": true}}}", f);
    fclose(f);
    char data[256];
    snprintf(data, sizeof data, "%s/data", dir);
    hearth_server_config_t config = {.size = sizeof config, .data_dir = data, .rules_file = rules,
                                     .fsync_mode = HEARTH_FSYNC_OFF,
                                     .admin_secret = NULL};
    hearth_server_t *server;
    hearth_error_t err;
    if (hearth_server_start(&config, &server, &err))
        die("cannot start the server: %s", err.message);
    port = hearth_server_port(server);

    size_t big = 200u * 1000 * 1000;
    char *denied = xmalloc(big);
    memset(denied, ' ', big);
    denied[0] = '1';
    size_t keys = 1000000, cap = keys * 24 + 2, len = 0;
    char *many = xmalloc(cap);
    many[len++] = '{';
    for (size_t i = 0; i < keys; i++)
        len += (size_t)snprintf(many + len, cap - len, "%s\"k%07zu\":%zu",
                                i ? "," : "", i, i);
    many[len++] = '}';

    pthread_t t;
    pthread_create(&t, NULL, probe, NULL);
    phase("anchor: nothing else (1 s)", NULL, NULL, 0);
    phase("PUT 200 MB, denied by the rules", "/locked.json", denied, big);
    phase("PUT 1,000,000 keys, allowed", "/open.json", many, len);
    atomic_store(&stop_probe, true);
    pthread_join(t, NULL);
    free(denied);
    free(many);
    hearth_server_stop(server);
    return 0;
}
