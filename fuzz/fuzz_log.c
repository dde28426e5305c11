/* fuzz_log.c - libFuzzer target for the durable store's log reader
 * (store/logfile.c, store/recover.c). The first byte picks a header to put
 * before the rest (0: none, 1: "HEARTH-LOG 2\n", 2: "HEARTH-LOG 1\n"; bit
 * 2: the log is not the newest, a later empty one follows it); the bytes
 * become log.1 of a data directory, which is then opened.
 *
 * What must hold: the scan stays inside the bytes (an intact prefix, every
 * record of it within it; space after it only zeros, in the newest log);
 * a log the scan calls damaged refuses to open with an error naming the
 * file and leaves it as it was; a torn last commit is cut exactly at the
 * intact prefix; whatever opens reopens to the same data, which its
 * history (store/history.c) rebuilds as well. */
#include "db/db.h"
#include "store/files.h"
#include "store/logfile.h"
#include "store/store.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static int count_change(const hearth_change_t *c, void *ctx) {
    (void)ctx;
    return c->path ? 0 : 1; /* every change names its path */
}

static void remove_dir(void) {
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* Empties the directory: each input starts from nothing. */
static void clear_dir(void) {
    DIR *d = opendir(dir);
    if (!d)
        abort();
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[384];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f))
        abort();
}

static char *read_back(const char *path, size_t *len) {
    return hearth__read_file(path, (size_t)1 << 30, len);
}

/* The scan of data alone: inside the bytes, records inside the prefix. */
static void check_scan(const char *data, size_t size, bool last,
                       hearth__log_scan *scan) {
    hearth__log_check(data, size, last, scan);
    /* A clean log is its records and, the newest only, zeros after them
     * (space written ahead). */
    if (scan->good > size || scan->space > size - scan->good ||
        (scan->end == HEARTH__LOG_CLEAN && scan->good + scan->space != size) ||
        (scan->space && !last) ||
        !hearth__log_all_zero(data + size - scan->space, scan->space))
        abort();
    if (scan->end == HEARTH__LOG_DAMAGED && (!scan->why || scan->bad > size))
        abort();
    if (scan->end == HEARTH__LOG_TORN && !last)
        abort(); /* only the newest log can have been torn by a crash */
    size_t off = 0, len;
    const char *payload;
    while (scan->version && hearth__log_next(data, scan, &off, &payload, &len))
        if (payload < data || payload + len > data + scan->good || off > scan->good)
            abort();
}

static hearth_node_t *open_store(int *rc, hearth_error_t *err) {
    hearth__store *s = NULL;
    hearth_node_t *root = NULL;
    hearth__store_report report;
    *rc = hearth__store_open(dir, HEARTH_FSYNC_OFF, &s, &root, &report, err);
    if (!*rc)
        hearth__store_close(s);
    return root;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dir[0]) {
        strcpy(dir, "/tmp/hearth-fuzz-log-XXXXXX");
        if (!mkdtemp(dir))
            abort();
        atexit(remove_dir);
    }
    if (size == 0)
        return 0;
    static const char *const headers[] = {"", HEARTH__LOG_HEADER,
                                          "HEARTH-LOG 1\n", ""};
    const char *header = headers[data[0] & 3];
    bool last = !(data[0] & 4);
    size_t hlen = strlen(header), len = hlen + size - 1;
    char *log = malloc(len + 1);
    memcpy(log, header, hlen);
    memcpy(log + hlen, data + 1, size - 1);

    hearth__log_scan scan;
    check_scan(log, len, last, &scan);

    char path[128], later[128];
    snprintf(path, sizeof path, "%s/log.1", dir);
    snprintf(later, sizeof later, "%s/log.2", dir);
    write_file(path, log, len);
    if (!last)
        write_file(later, HEARTH__LOG_HEADER, HEARTH__LOG_HEADER_LEN);

    int rc;
    hearth_error_t err = {0};
    hearth_node_t *root = open_store(&rc, &err);
    size_t after_len = 0;
    char *after = read_back(path, &after_len);
    if (scan.end == HEARTH__LOG_DAMAGED) {
        /* Refused, naming the file, and the file left as it was. */
        if (!rc || !strstr(err.message, "log.1") || !after ||
            after_len != len || memcmp(after, log, len) != 0)
            abort();
    } else if (!rc) {
        /* Opened: the log holds its intact prefix (a torn end cut), and
         * opening again finds the same data. */
        if (after && after_len < scan.good)
            abort();
        int rc2;
        hearth_error_t err2;
        hearth_node_t *again = open_store(&rc2, &err2);
        if (rc2 || !hearth_node_equal(root, again))
            abort();
        hearth_node_decref(again);
        /* Its history (records with time, sequence and identity, or
         * without) rebuilds the same data at its last write, and lists. */
        hearth_node_t *then = NULL;
        if (hearth__store_state_at(dir, 0, 0, &then, &err2) ||
            !hearth_node_equal(root, then))
            abort();
        hearth_node_decref(then);
        if (hearth_log_changes(dir, "/a", 0, 0, count_change, NULL, &err2))
            abort();
    } else if (!err.message[0]) {
        abort(); /* a refusal always says why */
    }
    hearth_node_decref(root);
    hearth__free(after);
    free(log);
    clear_dir();
    return 0;
}
