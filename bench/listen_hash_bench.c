/*
 * listen_hash_bench.c - the bytes a reconnecting client is sent for data
 * it already holds (issue 17, goal 4), against an in-process server
 * (127.0.0.1, a free port, fsync off, a temporary data directory):
 *
 *   /list holds 10,000 children. A client connects and listens (no h):
 *   what it is sent is the data it then caches. Then it reconnects, three
 *   ways, each on a new session and counted from its listen to the
 *   listen's ok (WebSocket payload bytes, every message in between):
 *     - before: h "" (what the client sent before listen hashes), the
 *       server sends the whole list again;
 *     - after: h = the hash of the cached list: ok alone;
 *     - the same for a tagged query (the last 1,000 children), before and
 *       after.
 *   Goal: after at least 100x fewer bytes than before.
 *
 * Build and run: make bench-listen-hash (a second or two). */
#include "bench_common.h"
#include "hearth.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char bench_name[] = "bench-listen-hash";

enum { CHILDREN = 10000 };

static int port;

static void send_msg(rawws *w, const char *text) {
    ws_frame(w, 0x1, text, strlen(text));
    ws_flush(w);
}

/* The next v5 message, joined when the server split it (a count, then
 * that many pieces); malloc'd. *bytes grows by the payload bytes read. */
static char *recv_message(rawws *w, size_t *bytes) {
    size_t len = ws_recv(w);
    *bytes += len;
    if (!len || strspn(w->msg, "0123456789") != len)
        return strdup(w->msg);
    size_t pieces = strtoul(w->msg, NULL, 10), total = 0;
    char *joined = xmalloc(1);
    joined[0] = '\0';
    for (size_t i = 0; i < pieces; i++) {
        size_t n = ws_recv(w);
        *bytes += n;
        char *more = realloc(joined, total + n + 1);
        if (!more)
            die("out of memory");
        joined = more;
        memcpy(joined + total, w->msg, n + 1);
        total += n;
    }
    return joined;
}

/* Sends listen r with body and reads up to its reply; returns the payload
 * bytes received. When data is given, it gets the last data push's "d"
 * as compact JSON (malloc'd). */
static size_t listen_bytes(rawws *w, int r, const char *body, char **data) {
    char msg[512], want[32];
    snprintf(msg, sizeof msg, "{\"t\":\"d\",\"d\":{\"r\":%d,\"a\":\"q\",\"b\":%s}}", r, body);
    send_msg(w, msg);
    snprintf(want, sizeof want, "{\"r\":%d,", r);
    size_t bytes = 0;
    for (;;) {
        char *text = recv_message(w, &bytes);
        bool reply = strstr(text, want) != NULL;
        if (!reply && data && strstr(text, "\"a\":\"d\"")) {
            json_t *m = json_loads(text, 0, NULL);
            json_t *d = json_object_get(json_object_get(json_object_get(m, "d"), "b"), "d");
            free(*data);
            *data = d ? json_dumps(d, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
            json_decref(m);
        }
        free(text);
        if (reply)
            return bytes;
    }
}

/* The hash of JSON text, as a client hashes what it cached. */
static void hash_of(const char *json, char out[HEARTH_HASH_SIZE]) {
    hearth_node_t *n;
    if (!json || hearth_node_from_json(json, strlen(json), 0, &n, NULL))
        die("the data sent is not JSON");
    if (hearth_node_hash(n, out))
        die("cannot hash the data");
    hearth_node_decref(n);
}

/* /list: CHILDREN children {"name":"item N","n":N}, set in one write. */
static void write_list(void) {
    rawws w;
    ws_open_session(&w, port, "/.ws?v=5&ns=bench");
    size_t cap = (size_t)CHILDREN * 64 + 128, len = 0;
    char *msg = xmalloc(cap);
    len += (size_t)snprintf(msg, cap, "{\"t\":\"d\",\"d\":{\"r\":1,\"a\":\"p\",\"b\":{\"p\":\"/list\",\"d\":{");
    for (int i = 0; i < CHILDREN; i++)
        len += (size_t)snprintf(msg + len, cap - len, "%s\"c%05d\":{\"name\":\"item %d\",\"n\":%d}",
                                i ? "," : "", i, i, i);
    len += (size_t)snprintf(msg + len, cap - len, "}}}}");
    ws_frame(&w, 0x1, msg, len);
    ws_flush(&w);
    free(msg);
    size_t bytes = 0;
    char *reply = recv_message(&w, &bytes);
    if (!strstr(reply, "\"s\":\"ok\""))
        die("the write was refused: %s", reply);
    free(reply);
    ws_close(&w);
}

/* One reconnect: a new session, one listen, its bytes. */
static size_t reconnect(const char *body) {
    rawws w;
    ws_open_session(&w, port, "/.ws?v=5&ns=bench");
    size_t bytes = listen_bytes(&w, 1, body, NULL);
    ws_close(&w);
    return bytes;
}

static void row(const char *what, size_t before, size_t after) {
    double fewer = after ? (double)before / (double)after : 0;
    printf("  %-34s %10zu %10zu %9.0fx  %s\n", what, before, after, fewer,
           fewer >= 100 ? "met" : "NOT MET");
}

int main(void) {
    const char *dir = bench_data_dir_create("hearth-listen-hash-bench");
    hearth_server_t *server = bench_server_start(dir, &port);
    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    printf("Hearth listen-hash benchmark: hearth %s, %s\n"
           "bytes sent (WebSocket payload) to a client reconnecting to /list "
           "(%d children) it holds unchanged\n",
           hearth_version(), cpu, CHILDREN);
    write_list();

    /* The first connection: what it is sent is what it caches. */
    static const char window_q[] = "\"q\":{\"l\":1000,\"vf\":\"r\"},\"t\":1";
    char *all = NULL, *window = NULL, body[256];
    rawws first;
    ws_open_session(&first, port, "/.ws?v=5&ns=bench");
    size_t first_all = listen_bytes(&first, 1, "{\"p\":\"/list\"}", &all);
    snprintf(body, sizeof body, "{\"p\":\"/list\",%s}", window_q);
    size_t first_window = listen_bytes(&first, 2, body, &window);
    ws_close(&first);
    char all_hash[HEARTH_HASH_SIZE], window_hash[HEARTH_HASH_SIZE];
    hash_of(all, all_hash);
    hash_of(window, window_hash);

    size_t before = reconnect("{\"p\":\"/list\",\"h\":\"\"}");
    snprintf(body, sizeof body, "{\"p\":\"/list\",\"h\":\"%s\"}", all_hash);
    size_t after = reconnect(body);
    snprintf(body, sizeof body, "{\"p\":\"/list\",%s,\"h\":\"\"}", window_q);
    size_t tagged_before = reconnect(body);
    snprintf(body, sizeof body, "{\"p\":\"/list\",%s,\"h\":\"%s\"}", window_q, window_hash);
    size_t tagged_after = reconnect(body);

    printf("  first connection: %zu bytes (list), %zu (last 1,000)\n", first_all,
           first_window);
    printf("  %-34s %10s %10s %10s  goal: 100x fewer\n", "reconnect, listen of", "before",
           "after", "fewer");
    row("/list (10,000 children)", before, after);
    row("/list limitToLast(1000), tagged", tagged_before, tagged_after);
    free(all);
    free(window);
    if (hearth_server_stop(server))
        die("server stop");
    return 0;
}
