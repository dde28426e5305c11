/* cache_bench.c - cold start from a client's cache on disk.
 *
 * A client with a cache directory listens to a list of 10,000 children on
 * an in-process server, so the list is stored; the server stops. Then, 20
 * times: a new client opens on the same URL and cache with nothing to
 * connect to, and observes the list; the figure is the time from opening
 * to its first value event (goal: under 50 ms). Anchor, in the same run:
 * jansson parsing the same list's JSON text from a file on the same disk
 * (json_load_file), the floor for any JSON-based cache.
 *
 * Build and run: make bench-cache */
#include "hearth.h"

#include <jansson.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { CHILDREN = 10000, RUNS = 20 };

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void die(const char *what) {
    fprintf(stderr, "cache_bench: %s\n", what);
    exit(1);
}

typedef struct first_value {
    sem_t got;
    double at;
    size_t children;
} first_value;

static void on_value(const hearth_event_t *e, void *ctx) {
    first_value *f = ctx;
    if (f->at == 0 && hearth_node_child_count(e->node) > 0) {
        f->at = now_ms();
        f->children = hearth_node_child_count(e->node);
        sem_post(&f->got);
    }
}

static hearth_db_t *open_client(const char *url, const char *cache) {
    hearth_db_config_t config = {.size = sizeof config, .url = url, .cache_dir = cache};
    hearth_db_t *db;
    if (hearth_db_open(&config, &db, NULL))
        die("cannot open a client");
    return db;
}

/* Opens a client and waits for its first non-empty value of /list;
 * returns the milliseconds from open to that event. */
static double cold_start(const char *url, const char *cache, size_t *children) {
    first_value f = {.at = 0};
    sem_init(&f.got, 0, 0);
    double t0 = now_ms();
    hearth_db_t *db = open_client(url, cache);
    hearth_observer_t h;
    if (hearth_db_observe(db, "/list", NULL, HEARTH_MASK_VALUE, on_value, &f,
                          NULL, &h, NULL))
        die("cannot observe");
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 10;
    if (sem_timedwait(&f.got, &limit))
        die("no value from the cache within 10 s");
    double ms = f.at - t0;
    *children = f.children;
    hearth_db_close(db);
    sem_destroy(&f.got);
    return ms;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void) {
    char data[] = "/tmp/hearth-cache-bench-data-XXXXXX";
    char cache[] = "/tmp/hearth-cache-bench-XXXXXX";
    if (!mkdtemp(data) || !mkdtemp(cache))
        die("mkdtemp");
    hearth_server_config_t sc = {.size = sizeof sc, .host = "127.0.0.1", .data_dir = data,
                                 .fsync_mode = HEARTH_FSYNC_OFF};
    hearth_server_t *server;
    if (hearth_server_start(&sc, &server, NULL))
        die("cannot start a server");
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d?ns=bench",
             hearth_server_port(server));

    /* The list: 10,000 children of a few fields each. */
    hearth_node_t *list = hearth_node_null();
    for (int i = 0; i < CHILDREN; i++) {
        char key[16], json[96];
        snprintf(key, sizeof key, "item%05d", i);
        snprintf(json, sizeof json,
                 "{\"title\":\"item number %d\",\"score\":%d,\"done\":%s}", i,
                 (i * 7919) % 1000, i % 2 ? "true" : "false");
        hearth_node_t *child;
        if (hearth_node_from_json(json, (size_t)-1, 0, &child, NULL) ||
            hearth_node_set_child_new(&list, key, child, NULL))
            die("building the list");
    }
    hearth_db_t *first = open_client(url, cache);
    hearth_db_set(first, "/list", list, NULL, NULL, NULL, NULL);
    size_t children;
    cold_start(url, cache, &children); /* lets the first client's data land */
    hearth_db_close(first);

    /* Seen online once more so the list is stored as the server's. */
    hearth_db_t *saver = open_client(url, cache);
    first_value f = {.at = 0};
    sem_init(&f.got, 0, 0);
    hearth_observer_t h;
    hearth_db_observe(saver, "/list", NULL, HEARTH_MASK_VALUE, on_value, &f,
                      NULL, &h, NULL);
    sem_wait(&f.got);
    usleep(400 * 1000); /* past the 100 ms save delay */
    hearth_db_close(saver);
    hearth_server_stop(server);

    char *text = hearth_node_to_json(list, 0, NULL);
    char file[128];
    snprintf(file, sizeof file, "%s/list.json", cache);
    FILE *out = fopen(file, "w");
    if (!out || fputs(text, out) < 0)
        die("writing the anchor's file");
    fclose(out);
    size_t bytes = strlen(text);
    hearth_free(text);
    hearth_node_decref(list);

    double cold[RUNS], anchor[RUNS];
    for (int i = 0; i < RUNS; i++) {
        cold[i] = cold_start(url, cache, &children);
        if (children != CHILDREN)
            die("the cached list is incomplete");
        double t0 = now_ms();
        json_t *j = json_load_file(file, 0, NULL);
        anchor[i] = now_ms() - t0;
        if (!j)
            die("the anchor could not parse its file");
        json_decref(j);
    }
    qsort(cold, RUNS, sizeof *cold, by_value);
    qsort(anchor, RUNS, sizeof *anchor, by_value);
    printf("cold start offline to first value event, %d children (%zu bytes of "
           "JSON), %d runs\n",
           CHILDREN, bytes, RUNS);
    printf("%-46s %8s %8s %8s\n", "", "p50 ms", "p90 ms", "max ms");
    printf("%-46s %8.2f %8.2f %8.2f\n", "hearth client, cache on disk", cold[RUNS / 2],
           cold[RUNS * 9 / 10], cold[RUNS - 1]);
    printf("%-46s %8.2f %8.2f %8.2f\n", "jansson json_load_file, same data (anchor)",
           anchor[RUNS / 2], anchor[RUNS * 9 / 10], anchor[RUNS - 1]);
    printf("ratio p50: %.2fx the anchor; goal under 50 ms: %s\n",
           cold[RUNS / 2] / anchor[RUNS / 2], cold[RUNS / 2] < 50 ? "met" : "MISSED");
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", data, cache);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove the temporary directories\n");
    return 0;
}
