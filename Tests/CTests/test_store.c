/* test_store.c - the durable store: data survives close and reopen, every
 * acknowledged write survives kill -9, a torn last record is cut off and
 * reported, damage elsewhere refuses to open, snapshots replace old logs,
 * and a data directory is used by one process at a time. */
#include "test.h"

#include "db/db.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

static char *temp_dir(void) {
    char *dir = strdup("/tmp/hearth-store-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    return dir;
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* A database on a loop driven by this thread: calls are synchronous. */
typedef struct fixture {
    uv_loop_t loop;
    hearth_db_t *db;
} fixture;

static int fx_open(fixture *f, const char *dir, hearth_error_t *err) {
    uv_loop_init(&f->loop);
    hearth_db_config_t config = {.loop = &f->loop, .data_dir = dir,
                                 .fsync_mode = HEARTH_FSYNC_ALWAYS};
    int rc = hearth_db_open(&config, &f->db, err);
    if (rc)
        uv_loop_close(&f->loop);
    return rc;
}

static void fx_close(fixture *f) {
    CHECK_INT(hearth_db_close(f->db), 0);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    CHECK_INT(uv_loop_close(&f->loop), 0);
}

static void status_cb(int status, void *ctx) { *(int *)ctx = status; }

static void set(hearth_db_t *db, const char *path, const char *json) {
    hearth_node_t *v = node_from(json);
    int status = 1;
    CHECK_INT(hearth_db_set(db, path, v, status_cb, &status, NULL, NULL), 0);
    CHECK_INT(status, 0); /* acknowledged: logged and synced */
    hearth_node_decref(v);
}

static char *export_root(hearth_db_t *db) {
    hearth_node_t *root;
    CHECK_INT(hearth_db_get(db, "/", NULL, &root, NULL), 0);
    char *json = hearth_node_to_json(root, HEARTH_JSON_EXPORT, NULL);
    hearth_node_decref(root);
    return json;
}

static void test_reopen(void) {
    char *dir = temp_dir();
    fixture f;
    CHECK_INT(fx_open(&f, dir, NULL), 0);
    set(f.db, "users/ada", "{\"name\":\"Ada\",\"born\":1815}");
    set(f.db, "users/ada/.priority", "7");
    set(f.db, "t", "{\".sv\":\"timestamp\"}");
    set(f.db, "n", "{\".sv\":{\"increment\":2}}");
    set(f.db, "n", "{\".sv\":{\"increment\":2}}");
    set(f.db, "gone", "1");
    CHECK_INT(hearth_db_update_json(f.db, "/", "{\"gone\":null,\"a/b\":\"\\u00e9\"}",
                                    (size_t)-1, NULL, NULL, NULL, NULL),
              0);
    char *before = export_root(f.db);
    fx_close(&f);
    CHECK_INT(fx_open(&f, dir, NULL), 0);
    char *after = export_root(f.db);
    CHECK_STR(after, before);
    CHECK(strstr(after, "\"n\":4") != NULL); /* resolved once, replayed as is */
    fx_close(&f);
    free(before);
    free(after);
    remove_dir(dir);
    free(dir);
}

static void test_one_process_at_a_time(void) {
    char *dir = temp_dir();
    fixture a, b;
    CHECK_INT(fx_open(&a, dir, NULL), 0);
    hearth_error_t err;
    CHECK_INT(fx_open(&b, dir, &err), HEARTH_EIO);
    CHECK(strstr(err.message, "in use") != NULL);
    fx_close(&a);
    CHECK_INT(fx_open(&b, dir, NULL), 0);
    fx_close(&b);
    remove_dir(dir);
    free(dir);
}

/* The only log file's path. */
static void log_path(const char *dir, char *out, size_t size) {
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strncmp(e->d_name, "log.", 4) == 0)
            snprintf(out, size, "%s/%s", dir, e->d_name);
    if (d)
        closedir(d);
}

static void test_torn_tail(void) {
    char *dir = temp_dir();
    fixture f;
    CHECK_INT(fx_open(&f, dir, NULL), 0);
    set(f.db, "a", "1");
    set(f.db, "b", "2");
    fx_close(&f);
    char log[512] = "";
    log_path(dir, log, sizeof log);
    struct stat st;
    CHECK_INT(stat(log, &st), 0);
    /* A crash mid-append: a record header promising more than was written. */
    int fd = open(log, O_WRONLY | O_APPEND);
    const char partial[] = {100, 0, 0, 0, 1, 2, 3, 4, '[', '['};
    CHECK_INT(write(fd, partial, sizeof partial), (long)sizeof partial);
    close(fd);
    hearth__store *s;
    hearth_node_t *root;
    hearth__store_report report;
    CHECK_INT(hearth__store_open(dir, HEARTH_FSYNC_ALWAYS, &s, &root, &report,
                                 NULL),
              0);
    CHECK_INT(report.records_replayed, 2);
    CHECK_INT(report.torn_bytes, sizeof partial);
    CHECK_JSON(root, "{\"a\":1,\"b\":2}");
    hearth_node_decref(root);
    CHECK_INT(hearth__store_close(s), 0);
    struct stat after;
    CHECK_INT(stat(log, &after), 0);
    CHECK_INT(after.st_size, st.st_size); /* cut back to the intact records */
    /* Appends continue after the intact records. */
    CHECK_INT(fx_open(&f, dir, NULL), 0);
    set(f.db, "c", "3");
    fx_close(&f);
    CHECK_INT(fx_open(&f, dir, NULL), 0);
    char *json = export_root(f.db);
    CHECK_STR(json, "{\"a\":1,\"b\":2,\"c\":3}");
    free(json);
    fx_close(&f);
    remove_dir(dir);
    free(dir);
}

static void test_damage_refuses_to_open(void) {
    char *dir = temp_dir();
    fixture f;
    CHECK_INT(fx_open(&f, dir, NULL), 0);
    set(f.db, "a", "\"first record\"");
    set(f.db, "b", "\"second record\"");
    fx_close(&f);
    char log[512] = "";
    log_path(dir, log, sizeof log);
    int fd = open(log, O_WRONLY);
    CHECK_INT(pwrite(fd, "X", 1, 30), 1); /* inside the first record */
    close(fd);
    hearth_error_t err;
    CHECK_INT(fx_open(&f, dir, &err), HEARTH_EIO);
    CHECK(strstr(err.message, "damaged at offset 13") != NULL);
    CHECK(strstr(err.message, "log.") != NULL);
    remove_dir(dir);
    free(dir);
}

static void test_snapshots(void) {
    char *dir = temp_dir();
    fixture f;
    CHECK_INT(fx_open(&f, dir, NULL), 0);
    hearth__store_set_snapshot_threshold(hearth__db_store(f.db), 200);
    char path[32], value[32];
    for (int i = 0; i < 40; i++) {
        snprintf(path, sizeof path, "items/i%02d", i);
        snprintf(value, sizeof value, "{\"n\":%d}", i);
        set(f.db, path, value);
        uv_run(&f.loop, UV_RUN_NOWAIT); /* lets finished snapshots land */
    }
    set(f.db, "items/i00/.priority", "\"p\"");
    char *before = export_root(f.db);
    fx_close(&f);
    int snapshots = 0, logs = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        snapshots += strncmp(e->d_name, "snapshot.", 9) == 0;
        logs += strncmp(e->d_name, "log.", 4) == 0;
    }
    closedir(d);
    CHECK_INT(snapshots, 1); /* older ones removed */
    CHECK(logs <= 2);
    hearth__store *s;
    hearth_node_t *root;
    hearth__store_report report;
    CHECK_INT(hearth__store_open(dir, HEARTH_FSYNC_OFF, &s, &root, &report,
                                 NULL),
              0);
    CHECK(report.snapshot_gen > 1);
    CHECK(report.records_replayed < 41);
    char *after = hearth_node_to_json(root, HEARTH_JSON_EXPORT, NULL);
    CHECK_STR(after, before);
    hearth_node_decref(root);
    hearth__store_close(s);
    free(before);
    free(after);
    remove_dir(dir);
    free(dir);
}

/* A child writes key i = i, one acknowledged write at a time, telling the
 * parent each acknowledgement through a pipe; the parent kills it with
 * SIGKILL mid-stream and checks every acknowledged write is there. */
typedef struct ack {
    uv_sem_t sem;
    int status;
} ack;

static void on_ack(int status, void *ctx) {
    ack *a = ctx;
    a->status = status;
    uv_sem_post(&a->sem);
}

static void child_writer(const char *dir, int ack_fd) {
    hearth_db_t *db;
    hearth_db_config_t config = {.loop = NULL, .data_dir = dir,
                                 .fsync_mode = HEARTH_FSYNC_ALWAYS};
    if (hearth_db_open(&config, &db, NULL))
        _exit(2);
    ack a;
    uv_sem_init(&a.sem, 0);
    for (int i = 0;; i++) {
        char path[32];
        snprintf(path, sizeof path, "w/k%06d", i);
        hearth_node_t *v = hearth_node_number(i);
        a.status = 1;
        if (hearth_db_set(db, path, v, on_ack, &a, NULL, NULL))
            _exit(3);
        hearth_node_decref(v);
        uv_sem_wait(&a.sem); /* the completion: logged and synced */
        if (a.status || write(ack_fd, &i, sizeof i) != sizeof i)
            _exit(4);
    }
}

static void test_kill_9(void) {
    char *dir = temp_dir();
    int fds[2];
    CHECK_INT(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child_writer(dir, fds[1]);
    }
    close(fds[1]);
    int acked = -1, i;
    while (acked < 300 && read(fds[0], &i, sizeof i) == sizeof i)
        acked = i;
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    /* Drain acknowledgements sent before the kill landed. */
    while (read(fds[0], &i, sizeof i) == sizeof i)
        acked = i;
    close(fds[0]);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    fixture f;
    CHECK_INT(fx_open(&f, dir, NULL), 0);
    hearth_node_t *w;
    CHECK_INT(hearth_db_get(f.db, "w", NULL, &w, NULL), 0);
    CHECK((int)hearth_node_child_count(w) >= acked + 1);
    for (int k = 0; k <= acked; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%06d", k);
        if (hearth_node_number_value(hearth_node_child(w, key)) != k) {
            fprintf(stderr, "  acknowledged write %d lost\n", k);
            test_failures++;
            break;
        }
    }
    hearth_node_decref(w);
    fx_close(&f);
    remove_dir(dir);
    free(dir);
}

const test_case store_tests[] = {
    {"store_reopen", test_reopen},
    {"store_one_process_at_a_time", test_one_process_at_a_time},
    {"store_torn_tail", test_torn_tail},
    {"store_damage_refuses_to_open", test_damage_refuses_to_open},
    {"store_snapshots", test_snapshots},
    {"store_kill_9", test_kill_9},
    {NULL, NULL},
};
