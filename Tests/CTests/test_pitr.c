/* test_pitr.c - point-in-time recovery on real files: a random workload
 * on a database with small logs and a retention window, rebuilt at every
 * tenth write (by sequence and by time) across snapshot boundaries and
 * log rotations, equal to the state the test kept; its changes listed in
 * order with who made them; a moment no longer retained refused; a
 * damaged retained log refused naming the file and offset; logs of the
 * earlier format still read; and over a real server, each write's record
 * naming the admin, anonymous or the uid, never the token. */
#include "test.h"

#include "db/db.h"
#include "store/store.h"

#include <dirent.h>
#include <jansson.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

enum { WRITES = 300 };

static void on_acked(int status, void *ctx) {
    CHECK_INT(status, 0);
    uv_sem_post(ctx);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Files in dir whose names start with prefix. */
static int count_files(const char *d, const char *prefix) {
    DIR *dp = opendir(d);
    int n = 0;
    for (struct dirent *e; dp && (e = readdir(dp));)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
             !strstr(e->d_name, ".tmp");
    if (dp)
        closedir(dp);
    return n;
}

typedef struct history {
    char dir[64];
    char *state[WRITES / 10 + 1]; /* JSON after write 10k */
    int64_t at[WRITES / 10 + 1];  /* a moment between write 10k and the next */
} history;

/* A random workload of sets, deletes and two-part updates on a database
 * snapshotting every few hundred bytes of log, keeping 1 h; the state the
 * test kept (its own tree, changed alike) after every tenth write. */
static void run_workload(history *h, int64_t retain_ms) {
    strcpy(h->dir, "/tmp/hearth-pitr-XXXXXX");
    CHECK(mkdtemp(h->dir) != NULL);
    hearth_db_config_t config = {.size = sizeof config, .data_dir = h->dir,
                                 .fsync_mode = HEARTH_FSYNC_OFF};
    hearth_db_t *db = NULL;
    CHECK_INT(hearth_db_open(&config, &db, NULL), 0);
    if (!db)
        return;
    /* Before any write (the queue's lock orders it before the loop's). */
    hearth__store_set_snapshot_threshold(hearth__db_store(db), 400);
    hearth__store_set_retention(hearth__db_store(db), retain_ms);
    hearth_node_t *model = hearth_node_null();
    uv_sem_t acked;
    uv_sem_init(&acked, 0);
    srand(29);
    h->state[0] = to_json(model);
    h->at[0] = now_ms();
    usleep(2000);
    for (int k = 1; k <= WRITES; k++) {
        char path[64], json[128];
        int a = rand() % 6, b = rand() % 4, kind = rand() % 10;
        if (kind < 6) { /* a set */
            snprintf(path, sizeof path, "/a/%d/%d", a, b);
            snprintf(json, sizeof json, "{\"n\":%d,\"s\":\"w%d\"}", k, k);
            hearth_node_t *v = node_from(json);
            CHECK_INT(hearth_db_set(db, path, v, on_acked, &acked, NULL, NULL), 0);
            hearth_node_set(&model, path, v, NULL);
            hearth_node_decref(v);
        } else if (kind < 8) { /* a delete */
            snprintf(path, sizeof path, "/a/%d", a);
            hearth_node_t *v = hearth_node_null();
            CHECK_INT(hearth_db_set(db, path, v, on_acked, &acked, NULL, NULL), 0);
            hearth_node_set(&model, path, v, NULL);
            hearth_node_decref(v);
        } else { /* an update of two parts */
            snprintf(path, sizeof path, "/a/%d", a);
            snprintf(json, sizeof json, "{\"%d/n\":%d,\"x\":%d}", b, k, k);
            CHECK_INT(hearth_db_update_json(db, path, json, strlen(json),
                                            on_acked, &acked, NULL, NULL),
                      0);
            char p1[96], p2[96];
            snprintf(p1, sizeof p1, "%s/%d/n", path, b);
            snprintf(p2, sizeof p2, "%s/x", path);
            hearth_node_t *v = hearth_node_number(k);
            hearth_node_set(&model, p1, v, NULL);
            hearth_node_set(&model, p2, v, NULL);
            hearth_node_decref(v);
        }
        uv_sem_wait(&acked);
        if (k % 10 == 0) {
            h->state[k / 10] = to_json(model);
            h->at[k / 10] = now_ms();
            usleep(2000); /* the next write is a later millisecond */
        }
    }
    uv_sem_destroy(&acked);
    hearth_node_decref(model);
    CHECK_INT(hearth_db_close(db), 0);
}

static void free_history(history *h) {
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(h->state); i++)
        free(h->state[i]);
    remove_tree(h->dir);
}

/* The backup of h's directory at (ms, seq), as JSON text; NULL when
 * refused (err says why). */
static char *backup_at(const history *h, int64_t ms, uint64_t seq,
                       hearth_error_t *err) {
    char out[96];
    snprintf(out, sizeof out, "%s.at.json", h->dir);
    if (hearth_backup_at(h->dir, ms, seq, out, err))
        return NULL;
    size_t len;
    char *text = read_file(out, &len);
    unlink(out);
    hearth_node_t *n = text ? node_from(text) : NULL; /* export: priorities */
    char *json = n ? to_json(n) : NULL;
    hearth_node_decref(n);
    free(text);
    return json;
}

static void test_pitr_every_tenth_write(void) {
    history h = {0};
    run_workload(&h, 3600 * 1000);
    /* Snapshots, and the logs and snapshots they superseded kept. */
    CHECK(count_files(h.dir, "snapshot.") >= 2);
    CHECK(count_files(h.dir, "log.") >= 4);
    for (int i = 0; i <= WRITES / 10; i++) {
        hearth_error_t err = {0};
        char *by_seq = i ? backup_at(&h, 0, (uint64_t)i * 10, &err) : NULL;
        if (i && !by_seq)
            fprintf(stderr, "  seq %d: %s\n", i * 10, err.message);
        if (i)
            CHECK_STR_AS(by_seq, "the state by sequence", h.state[i]);
        char *by_time = backup_at(&h, h.at[i], 0, &err);
        if (!by_time)
            fprintf(stderr, "  write %d: %s\n", i * 10, err.message);
        CHECK_STR_AS(by_time, "the state by time", h.state[i]);
        free(by_seq);
        free(by_time);
    }
    /* A sequence not written yet is refused. */
    hearth_error_t err = {0};
    CHECK(backup_at(&h, 0, WRITES + 1, &err) == NULL);
    CHECK_INT(err.code, HEARTH_ENOTFOUND);
    /* The window moved on: log.1 and log.2 gone (as a snapshot removes
     * them), so the start is snapshot.3, loaded, then its logs replayed.
     * Moments from its own on are rebuilt; earlier ones are refused. */
    char path[96];
    for (int g = 1; g <= 2; g++) {
        snprintf(path, sizeof path, "%s/log.%d", h.dir, g);
        CHECK_INT(unlink(path), 0);
        snprintf(path, sizeof path, "%s/snapshot.%d.json", h.dir, g);
        unlink(path);
    }
    int rebuilt = 0, refused = 0;
    for (int i = 1; i <= WRITES / 10; i++) {
        char *got = backup_at(&h, 0, (uint64_t)i * 10, &err);
        if (got) {
            CHECK_STR_AS(got, "the state from snapshot.3", h.state[i]);
            rebuilt++;
        } else {
            CHECK_INT(err.code, HEARTH_ENOTFOUND);
            CHECK(strstr(err.message, "not retained") != NULL);
            CHECK_INT(rebuilt, 0); /* refusals come first */
            refused++;
        }
        free(got);
    }
    CHECK(rebuilt >= WRITES / 20);
    free_history(&h);
}

typedef struct listing {
    int n;
    uint64_t last_seq;
    int bad_order, not_admin, untimed;
    int64_t since;
} listing;

static int on_change(const hearth_change_t *c, void *ctx) {
    listing *l = ctx;
    l->n++;
    l->bad_order += c->sequence < l->last_seq;
    l->last_seq = c->sequence;
    l->not_admin += !c->identity || strcmp(c->identity, "admin") != 0;
    l->untimed += c->time_ms < l->since;
    return 0;
}

static void test_pitr_log_lists_changes(void) {
    history h = {0};
    run_workload(&h, 3600 * 1000);
    listing all = {0};
    CHECK_INT(hearth_log_changes(h.dir, NULL, 0, 0, on_change, &all, NULL), 0);
    CHECK(all.n >= WRITES); /* updates have two parts */
    CHECK_INT(all.last_seq, WRITES);
    CHECK_INT(all.bad_order, 0);
    CHECK_INT(all.not_admin, 0); /* the embedding program is the admin */
    /* A window of time holds the writes 101..200 (with their parts). */
    listing window = {.since = h.at[10] + 1};
    CHECK_INT(hearth_log_changes(h.dir, "/", h.at[10] + 1, h.at[20], on_change,
                                 &window, NULL),
              0);
    CHECK(window.n >= 100 && window.n <= 200);
    CHECK_INT(window.last_seq, 200);
    CHECK_INT(window.untimed, 0);
    /* A path: only the changes touching /a/3 (at it, above, below). */
    listing at3 = {0};
    CHECK_INT(hearth_log_changes(h.dir, "/a/3", 0, 0, on_change, &at3, NULL), 0);
    CHECK(at3.n > 0 && at3.n < all.n);
    free_history(&h);
}

static void test_pitr_not_retained(void) {
    history h = {0};
    run_workload(&h, 0); /* superseded files removed at once */
    CHECK_INT(count_files(h.dir, "snapshot."), 1);
    hearth_error_t err = {0};
    CHECK(backup_at(&h, 0, 10, &err) == NULL);
    CHECK_INT(err.code, HEARTH_ENOTFOUND);
    CHECK(strstr(err.message, "not retained") != NULL);
    /* The latest moments are still there. */
    char *last = backup_at(&h, 0, WRITES, &err);
    CHECK_STR_AS(last, "the last state", h.state[WRITES / 10]);
    free(last);
    free_history(&h);
}

static void test_pitr_damaged_log_refuses(void) {
    history h = {0};
    run_workload(&h, 3600 * 1000);
    /* log.2 is retained, not the newest: damage inside its first record. */
    char log[96];
    snprintf(log, sizeof log, "%s/log.2", h.dir);
    size_t len;
    char *data = read_file(log, &len);
    CHECK(data && len > 60);
    if (data) {
        data[40] ^= 0x55; /* the first record's payload (after 13 + 16) */
        FILE *f = fopen(log, "w");
        fwrite(data, 1, len, f);
        fclose(f);
    }
    free(data);
    hearth_error_t err = {0};
    CHECK(backup_at(&h, 0, 10, &err) == NULL);
    CHECK_INT(err.code, HEARTH_EIO);
    char want[160];
    snprintf(want, sizeof want, "%s is damaged at offset 13", log);
    if (!strstr(err.message, want))
        fprintf(stderr, "  got: %s\n", err.message);
    CHECK(strstr(err.message, want) != NULL);
    listing l = {0};
    CHECK_INT(hearth_log_changes(h.dir, NULL, 0, 0, on_change, &l, &err),
              HEARTH_EIO);
    CHECK(strstr(err.message, want) != NULL);
    free_history(&h);
}

/* A log of the earlier format (records without time or identity) reads
 * as before: opened, backed up at a sequence (counted), listed. */
static void test_pitr_reads_earlier_logs(void) {
    char d[] = "/tmp/hearth-pitr-old-XXXXXX";
    CHECK(mkdtemp(d) != NULL);
    char log[64];
    snprintf(log, sizeof log, "%s/log.1", d);
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_add(&b, "HEARTH-LOG 2\n", 13);
    hearth__records r;
    hearth__records_init(&r);
    for (int i = 1; i <= 3; i++) {
        char path[16];
        snprintf(path, sizeof path, "/k%d", i);
        hearth__path p;
        hearth__path_parse(path, 0, &p, NULL);
        const hearth__path *pp = &p;
        hearth_node_t *v = hearth_node_number(i);
        const hearth_node_t *cv = v;
        CHECK_INT(hearth__records_add(&r, &pp, &cv, 1), 0);
        hearth_node_decref(v);
    }
    CHECK_INT(hearth__records_write(&r, &b), 0);
    hearth__records_clear(&r);
    CHECK(strstr(b.data + 13 + 16, "[[\"/k1\",1]]") == b.data + 13 + 16);
    FILE *f = fopen(log, "w");
    fwrite(b.data, 1, b.len, f);
    fclose(f);
    hearth__buf_free(&b);
    history h = {0};
    strcpy(h.dir, d);
    hearth_error_t err = {0};
    char *two = backup_at(&h, 0, 2, &err);
    CHECK_STR_AS(two, "the state after two", "{\"k1\":1,\"k2\":2}");
    free(two);
    listing l = {0};
    CHECK_INT(hearth_log_changes(d, NULL, 0, 0, on_change, &l, NULL), 0);
    CHECK_INT(l.n, 3);
    CHECK_INT(l.not_admin, 3); /* no identity logged */
    /* The database opens on it and goes on numbering from 4. */
    hearth_db_config_t config = {.size = sizeof config, .data_dir = d,
                                 .fsync_mode = HEARTH_FSYNC_OFF};
    hearth_db_t *db = NULL;
    CHECK_INT(hearth_db_open(&config, &db, NULL), 0);
    uv_sem_t acked;
    uv_sem_init(&acked, 0);
    hearth_node_t *v = hearth_node_number(4);
    CHECK_INT(hearth_db_set(db, "/k4", v, on_acked, &acked, NULL, NULL), 0);
    hearth_node_decref(v);
    uv_sem_wait(&acked);
    uv_sem_destroy(&acked);
    CHECK_INT(hearth_db_close(db), 0);
    listing after = {0};
    CHECK_INT(hearth_log_changes(d, "/k4", 0, 0, on_change, &after, NULL), 0);
    CHECK_INT(after.n, 1);
    CHECK_INT(after.last_seq, 4);
    CHECK_INT(after.not_admin, 0);
    remove_tree(d);
}

/* ---- identities over a real server ---- */

static int on_identity(const hearth_change_t *c, void *ctx) {
    char *seen = ctx;
    size_t n = strlen(seen);
    snprintf(seen + n, 512 - n, "%s%s=%s", n ? " " : "", c->path,
             c->identity ? c->identity : "(none)");
    return 0;
}

static void test_pitr_records_name_who(void) {
    char d[] = "/tmp/hearth-pitr-who-XXXXXX";
    CHECK(mkdtemp(d) != NULL);
    hearth_server_config_t c = {.size = sizeof c};
    hearth_server_t *s = start_test_server(c, d);
    if (!s)
        return;
    int port = hearth_server_port(s);
    /* An unsigned token (no keys: the emulator's way) for uid ada. */
    const char *token = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0."
                        "eyJzdWIiOiJhZGEiLCJ1aWQiOiJhZGEifQ.";
    char *out = test_sh_out(
        "curl -s -o /dev/null -w '%%{http_code} ' -X PUT -d 1 "
        "-H 'Authorization: Bearer owner' 'http://127.0.0.1:%d/by/admin.json?ns=who'; "
        "curl -s -o /dev/null -w '%%{http_code} ' -X PUT -d 2 "
        "'http://127.0.0.1:%d/by/anon.json?ns=who'; "
        "curl -s -o /dev/null -w '%%{http_code}' -X PUT -d 3 "
        "'http://127.0.0.1:%d/by/ada.json?ns=who&auth=%s'",
        port, port, port, token);
    CHECK_STR(out, "200 200 200");
    free(out);
    char nsdir[96], seen[512] = "";
    snprintf(nsdir, sizeof nsdir, "%s/who", d);
    CHECK_INT(hearth_log_changes(nsdir, NULL, 0, 0, on_identity, seen, NULL), 0);
    CHECK_STR(seen, "/by/admin=admin /by/anon=anonymous /by/ada=uid:ada");
    hearth_server_stop(s);
    /* Never a token in the log. */
    char log[128];
    snprintf(log, sizeof log, "%s/log.1", nsdir);
    size_t len;
    char *bytes = read_file(log, &len);
    CHECK(bytes && !memmem(bytes, len, "eyJ", 3) && !memmem(bytes, len, "owner", 5));
    free(bytes);
    remove_tree(d);
}

/* GET /.backup?seq= / ?at= on a server with a retention window: the
 * admin's only, the namespace as it was then. */
static void test_pitr_server_backup_at(void) {
    char d[] = "/tmp/hearth-pitr-srv-XXXXXX";
    CHECK(mkdtemp(d) != NULL);
    hearth_server_config_t c = {.size = sizeof c, .retain_ms = 3600 * 1000};
    hearth_server_t *s = start_test_server(c, d);
    if (!s)
        return;
    int port = hearth_server_port(s);
    char *out = test_sh_out(
        "for i in 1 2 3; do curl -s -o /dev/null -X PUT -d $i "
        "'http://127.0.0.1:%d/n.json?ns=pit'; done; "
        "curl -s -H 'Authorization: Bearer owner' "
        "'http://127.0.0.1:%d/.backup?ns=pit&seq=2'",
        port, port);
    CHECK_STR(out, "{\"n\":2}");
    free(out);
    out = test_sh_out("curl -s -w ' %%{http_code}' "
                      "'http://127.0.0.1:%d/.backup?ns=pit&seq=2'", port);
    CHECK(strstr(out, " 401") && !strstr(out, "\"n\""));
    free(out);
    out = test_sh_out("curl -s -o /dev/null -w '%%{http_code} ' "
                      "-H 'Authorization: Bearer owner' "
                      "'http://127.0.0.1:%d/.backup?ns=pit&seq=-1'; "
                      "curl -s -w ' %%{http_code}' "
                      "-H 'Authorization: Bearer owner' "
                      "'http://127.0.0.1:%d/.backup?ns=pit&seq=9'",
                      port, port);
    CHECK(strstr(out, "400 ") == out && strstr(out, "not written yet") &&
          strstr(out, " 404"));
    free(out);
    /* A namespace never written has no history: 404, not a failure. */
    out = test_sh_out("curl -s -o /dev/null -w '%%{http_code}' "
                      "-H 'Authorization: Bearer owner' "
                      "'http://127.0.0.1:%d/.backup?ns=never&seq=1'", port);
    CHECK_STR(out, "404");
    free(out);
    hearth_server_stop(s);
    remove_tree(d);
}

const test_case pitr_tests[] = {
    {"pitr_server_backup_at", test_pitr_server_backup_at},
    {"pitr_every_tenth_write", test_pitr_every_tenth_write},
    {"pitr_log_lists_changes", test_pitr_log_lists_changes},
    {"pitr_not_retained", test_pitr_not_retained},
    {"pitr_damaged_log_refuses", test_pitr_damaged_log_refuses},
    {"pitr_reads_earlier_logs", test_pitr_reads_earlier_logs},
    {"pitr_records_name_who", test_pitr_records_name_who},
    {NULL, NULL},
};
