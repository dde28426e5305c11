/* test_backup.c - backups of a running server while a client keeps
 * writing: hearth_backup on its data directory and GET /.backup, each
 * a copy as of one commit (every acknowledged write before it, no hole
 * after); a backup killed with SIGKILL leaves the server's data whole and
 * no half-written copy. */
#include "test.h"

#include "common/histogram.h"
#include "db/db.h"
#include "store/store.h"

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

static char dir[64];

static hearth_server_t *start_backup_server(void) {
    strcpy(dir, "/tmp/hearth-backup-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    return start_test_server((hearth_server_config_t){0}, dir);
}

/* One request on a keep-alive socket; the answer's body (free() it) and
 * status. */
static char *exchange(int fd, const char *method, const char *target,
                      const char *body, int *status) {
    char head[512];
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                     "owner\r\nContent-Length: %zu\r\n\r\n%s",
                     method, target, body ? strlen(body) : 0, body ? body : "");
    CHECK(write(fd, head, (size_t)n) == n);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r <= 0)
            break;
        len += (size_t)r;
        buf[len] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        char *cl = strstr(buf, "Content-Length: ");
        if (end && cl) {
            size_t want = (size_t)(end + 4 - buf) + (size_t)atol(cl + 16);
            if (want + 1 > cap)
                buf = realloc(buf, cap = want + 1);
            if (len >= want)
                break;
        }
    }
    buf[len] = '\0';
    *status = 0;
    sscanf(buf, "HTTP/1.1 %d", status);
    char *end = strstr(buf, "\r\n\r\n");
    char *out = strdup(end ? end + 4 : "");
    free(buf);
    return out;
}

/* A client writing /w/0, /w/1, ... one after another, each acknowledged
 * before the next. */
typedef struct writer {
    int port;
    atomic_int acked; /* writes acknowledged so far */
    atomic_bool stop;
    pthread_t thread;
} writer;

static void *write_on(void *arg) {
    writer *w = arg;
    int fd = test_connect(w->port);
    for (int k = 0; !atomic_load(&w->stop); k++) {
        char target[64], body[32];
        snprintf(target, sizeof target, "/w/%d.json?print=silent", k);
        snprintf(body, sizeof body, "%d", k);
        int status;
        free(exchange(fd, "PUT", target, body, &status));
        if (status != 204)
            break;
        atomic_store(&w->acked, k + 1);
    }
    close(fd);
    return NULL;
}

/* The data holds /w/0 .. /w/m-1 with their values and nothing else:
 * m, or -1 when it has a hole or a wrong value. */
static int prefix_length(const char *json_text) {
    json_t *all = json_loads(json_text, JSON_DECODE_ANY, NULL);
    json_t *w = json_object_get(all, "w");
    /* (Keys 0..n-1 read back as an array, the array heuristic.) */
    int m = (int)(json_is_array(w) ? json_array_size(w) : json_object_size(w));
    for (int k = 0; k < m; k++) {
        char key[16];
        snprintf(key, sizeof key, "%d", k);
        json_t *v = json_is_array(w) ? json_array_get(w, (size_t)k)
                                     : json_object_get(w, key);
        if (!json_is_integer(v) || json_integer_value(v) != k)
            m = -1;
    }
    if (!all)
        m = -1;
    json_decref(all);
    return m;
}

static void start_writer(writer *w, int port) {
    w->port = port;
    atomic_init(&w->acked, 0);
    atomic_init(&w->stop, false);
    pthread_create(&w->thread, NULL, write_on, w);
    while (atomic_load(&w->acked) < 50) /* under way */
        usleep(1000);
}

static void stop_writer(writer *w) {
    atomic_store(&w->stop, true);
    pthread_join(w->thread, NULL);
}

static void test_backup_of_directory_under_writes(void) {
    hearth_server_t *s = start_backup_server();
    writer w;
    start_writer(&w, hearth_server_port(s));
    char ns_dir[128], out[128];
    snprintf(ns_dir, sizeof ns_dir, "%s/default", dir);
    snprintf(out, sizeof out, "%s.json", dir);
    int last = 0;
    for (int i = 0; i < 5; i++) {
        int before = atomic_load(&w.acked);
        hearth_error_t err;
        int rc = hearth_backup(ns_dir, out, &err);
        if (rc)
            fprintf(stderr, "  backup: %s\n", err.message);
        CHECK_INT(rc, 0);
        size_t len;
        char *text = read_file(out, &len);
        int m = prefix_length(text);
        CHECK(m >= before); /* every write acknowledged before it began */
        CHECK(m >= last);   /* and time goes forward */
        last = m;
        free(text);
    }
    stop_writer(&w);
    CHECK(last > 50);
    /* Nothing of the server's directory changed: it opens as it was. */
    CHECK_INT(hearth_server_stop(s), 0);
    s = start_test_server((hearth_server_config_t){0}, dir);
    int fd = test_connect(hearth_server_port(s)), status;
    char *all = exchange(fd, "GET", "/.json", NULL, &status);
    CHECK_INT(prefix_length(all), atomic_load(&w.acked));
    free(all);
    close(fd);
    CHECK_INT(hearth_server_stop(s), 0);
    /* A directory that is not one is an error naming it. */
    hearth_error_t err;
    CHECK_INT(hearth_backup("/nonexistent/hearth", out, &err), HEARTH_EIO);
    CHECK(strstr(err.message, "/nonexistent/hearth") != NULL);
    unlink(out);
    remove_tree(dir);
}

static void test_backup_endpoint_under_writes(void) {
    hearth_server_t *s = start_backup_server();
    int port = hearth_server_port(s);
    writer w;
    start_writer(&w, port);
    int fd = test_connect(port), status;
    int last = 0;
    for (int i = 0; i < 5; i++) {
        int before = atomic_load(&w.acked);
        char *text = exchange(fd, "GET", "/.backup", NULL, &status);
        CHECK_INT(status, 200);
        int m = prefix_length(text);
        CHECK(m >= before && m >= last);
        last = m;
        free(text);
    }
    stop_writer(&w);
    /* The admin's only. */
    int other = test_connect(port);
    const char *anon = "GET /.backup HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK(write(other, anon, strlen(anon)) > 0);
    char got[64] = {0};
    CHECK(read(other, got, sizeof got - 1) > 0);
    CHECK(strncmp(got, "HTTP/1.1 401", 12) == 0);
    close(other);
    close(fd);
    CHECK_INT(hearth_server_stop(s), 0);
    remove_tree(dir);
}

/* SIGKILL in the middle of backups: the server's data is whole, and the
 * copy is either absent or complete. */
static void test_backup_killed_leaves_data_intact(void) {
    hearth_server_t *s = start_backup_server();
    int port = hearth_server_port(s);
    writer w;
    start_writer(&w, port);
    stop_writer(&w);
    char ns_dir[128], out[128];
    snprintf(ns_dir, sizeof ns_dir, "%s/default", dir);
    snprintf(out, sizeof out, "%s.json", dir);
    char pins[140];
    snprintf(pins, sizeof pins, "%s.pins", dir);
    CHECK_INT(mkdir(pins, 0700), 0);
    for (int round = 0; round < 3; round++) {
        unlink(out);
        pid_t child = fork();
        if (child == 0) {
            setenv("TMPDIR", pins, 1); /* what a killed backup leaves */
            for (;;)
                hearth_backup(ns_dir, out, NULL);
        }
        usleep(20000 + round * 15000);
        kill(child, SIGKILL);
        int wstatus;
        waitpid(child, &wstatus, 0);
        CHECK(WIFSIGNALED(wstatus));
        size_t len;
        char *text = read_file(out, &len);
        if (text) /* renamed only once whole */
            CHECK_INT(prefix_length(text), atomic_load(&w.acked));
        free(text);
    }
    int fd = test_connect(port), status;
    char *all = exchange(fd, "GET", "/.json", NULL, &status);
    CHECK_INT(prefix_length(all), atomic_load(&w.acked));
    free(all);
    close(fd);
    CHECK_INT(hearth_server_stop(s), 0);
    char tmp[140];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    unlink(tmp);
    unlink(out);
    remove_tree(pins);
    remove_tree(dir);
}

/* ---- snapshots racing the copy ---- */

typedef struct racer {
    char dir[128], out[140];
    atomic_bool stop;
    atomic_int copies;
    int failures, shrank, holes;
    pthread_t thread;
} racer;

/* Copies the directory again and again while it is written to and
 * snapshotted: every copy must succeed and be a prefix, never shorter
 * than the one before. */
static void *copy_on(void *arg) {
    racer *r = arg;
    int last = 0;
    while (!atomic_load(&r->stop)) {
        hearth_error_t err;
        if (hearth_backup(r->dir, r->out, &err)) {
            fprintf(stderr, "  backup: %s\n", err.message);
            r->failures++;
            continue;
        }
        size_t len;
        char *text = read_file(r->out, &len);
        int m = prefix_length(text);
        free(text);
        r->holes += m < 0;
        r->shrank += m < last;
        last = m > last ? m : last;
        atomic_fetch_add(&r->copies, 1);
    }
    return NULL;
}

static void test_backup_races_snapshots(void) {
    racer r = {0};
    strcpy(r.dir, "/tmp/hearth-backup-race-XXXXXX");
    CHECK(mkdtemp(r.dir) != NULL);
    snprintf(r.out, sizeof r.out, "%s.json", r.dir);
    hearth_db_config_t config = {.size = sizeof config, .data_dir = r.dir,
                                 .fsync_mode = HEARTH_FSYNC_OFF};
    hearth_db_t *db = NULL;
    CHECK_INT(hearth_db_open(&config, &db, NULL), 0);
    /* A snapshot every few writes (set before any write: the queue's
     * lock orders it before the loop's use). */
    hearth__store_set_snapshot_threshold(hearth__db_store(db), 300);
    atomic_init(&r.stop, false);
    pthread_create(&r.thread, NULL, copy_on, &r);
    test_done acked;
    test_done_init(&acked);
    /* Until the copies have raced many snapshots. */
    for (int k = 0; k < 400 || (atomic_load(&r.copies) < 10 && k < 20000); k++) {
        char path[32];
        snprintf(path, sizeof path, "/w/%d", k);
        hearth_node_t *v = hearth_node_number(k);
        CHECK_INT(hearth_db_set(db, path, v, test_done_cb, &acked, NULL, NULL), 0);
        hearth_node_decref(v);
        CHECK_INT(test_done_wait(&acked), 0);
    }
    atomic_store(&r.stop, true);
    pthread_join(r.thread, NULL);
    test_done_destroy(&acked);
    CHECK_INT(hearth_db_close(db), 0);
    CHECK(atomic_load(&r.copies) >= 10);
    CHECK_INT(r.failures, 0);
    CHECK_INT(r.holes, 0);
    CHECK_INT(r.shrank, 0);
    /* The snapshots it raced were timed for the metrics. */
    CHECK(atomic_load(&hearth__hist_snapshot.count) > 0);
    unlink(r.out);
    remove_tree(r.dir);
}

const test_case backup_tests[] = {
    {"backup_races_snapshots", test_backup_races_snapshots},
    {"backup_of_directory_under_writes", test_backup_of_directory_under_writes},
    {"backup_endpoint_under_writes", test_backup_endpoint_under_writes},
    {"backup_killed_leaves_data_intact", test_backup_killed_leaves_data_intact},
    {NULL, NULL},
};
