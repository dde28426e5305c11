/* recover.c - a data directory back into a tree: the newest snapshot, then
 * every log after it, refusing gaps and damage. */
#include "store/files.h"
#include "store/logfile.h"
#include "os/os.h"

#include <string.h>
#include <unistd.h>

/* Replays the intact records of one log into *root; scan says where they
 * end and how the log ends. A record that does not apply is damage too. */
static int replay_log(const char *path, bool last, hearth_node_t **root,
                      hearth__log_scan *scan, hearth__store_report *report,
                      hearth_error_t *err) {
    size_t size = 0;
    char *data = hearth__store_read_whole(path, &size);
    if (!data)
        return hearth__store_io_error(err, "cannot read", path);
    hearth__log_check(data, size, last, scan);
    const char *payload;
    size_t off = 0, len;
    for (size_t at = 0; hearth__log_next(data, scan, &off, &payload, &len);
         at = off) {
        if (hearth__store_apply_record_seq(payload, len, root,
                                           &report->last_seq)) {
            scan->end = HEARTH__LOG_DAMAGED;
            scan->good = scan->bad = at ? at : HEARTH__LOG_HEADER_LEN;
            scan->why = "the record does not apply";
            break;
        }
        report->records_replayed++;
    }
    if (scan->end == HEARTH__LOG_TORN) /* the commit, not the space */
        report->torn_bytes += size - scan->good - scan->space;
    hearth__free(data);
    return 0;
}

static int load_snapshot(const char *dir, uint64_t gen, hearth_node_t **root,
                         hearth_error_t *err) {
    char *path = hearth__store_path(dir, "snapshot.%llu.json", gen);
    if (!path)
        return hearth__error_code(err, HEARTH_ENOMEM);
    size_t len;
    char *data = hearth__store_read_whole(path, &len);
    int rc;
    if (!data) {
        rc = hearth__store_io_error(err, "cannot read", path);
    } else {
        hearth_node_t *n;
        hearth_error_t perr;
        rc = hearth_node_from_json(data, len, 0, &n, &perr);
        if (rc) {
            rc = hearth__error(err, HEARTH_EIO, path,
                               "snapshot %s is damaged: %s", path, perr.message);
        } else {
            hearth_node_decref(*root);
            *root = n;
        }
    }
    hearth__free(data);
    hearth__free(path);
    return rc;
}

/* The logs after snapshot base must be base, base + 1, ... (1, 2, ...
 * without a snapshot): a missing file means lost writes, never a smaller
 * database. */
static int check_sequence(const char *dir, uint64_t base, const uint64_t *logs,
                          size_t nlogs, hearth_error_t *err) {
    uint64_t expect = base ? base : 1;
    for (size_t i = 0; i < nlogs; i++) {
        if (logs[i] < base)
            continue; /* superseded; removed by the next snapshot */
        if (logs[i] == expect) {
            expect++;
            continue;
        }
        unsigned long long e = expect, g = logs[i];
        if (!base && expect == 1)
            return hearth__error(err, HEARTH_EIO, dir,
                                 "%s: snapshot.%llu.json is missing: the logs "
                                 "start at log.%llu, and the data before it "
                                 "is in no file; refusing to open a partial "
                                 "database",
                                 dir, g, g);
        if (expect == base)
            return hearth__error(err, HEARTH_EIO, dir,
                                 "%s: log.%llu is missing (or snapshot.%llu."
                                 "json): snapshot.%llu.json is followed by "
                                 "log.%llu; refusing to open a partial "
                                 "database",
                                 dir, e, g, e, g);
        return hearth__error(err, HEARTH_EIO, dir,
                             "%s: log.%llu is missing: log.%llu is followed by "
                             "log.%llu; refusing to open a partial database",
                             dir, e, e - 1, g);
    }
    return 0;
}

/* Removes snapshot .tmp files a crash left behind (nothing else writes
 * them while the lock is held). */
static void remove_stale_tmp(const char *dir) {
    uint64_t *gens;
    size_t n;
    if (hearth__store_list_gens(dir, "snapshot.", ".json.tmp", &gens, &n))
        return;
    for (size_t i = 0; i < n; i++) {
        char *path = hearth__store_path(dir, "snapshot.%llu.json.tmp", gens[i]);
        if (path)
            unlink(path);
        hearth__free(path);
    }
    hearth__free(gens);
}

/* Cuts the torn tail of the last log so appends continue after its intact
 * records; a version 1 log is left as it is and appends go to a new log. */
static int cut_torn_tail(const char *path, uint64_t gen,
                         const hearth__log_scan *scan,
                         hearth__store_report *report, hearth__recovery *rec,
                         hearth_error_t *err) {
    if (scan->end == HEARTH__LOG_TORN) {
        report->torn_gen = gen;
        report->torn_offset = scan->good;
        if (scan->good < HEARTH__LOG_HEADER_LEN)
            return unlink(path) ? hearth__store_io_error(err, "cannot remove",
                                                         path)
                                : 0;
        if (truncate(path, (off_t)scan->good))
            return hearth__store_io_error(err, "cannot truncate", path);
    }
    if (scan->version == 1) {
        rec->append_gen = gen + 1;
        return 0;
    }
    rec->append_exists = true;
    rec->append_len = scan->good;
    return 0;
}

static int replay_logs(const char *dir, bool find_damage, uint64_t base,
                       const uint64_t *logs, size_t nlogs, hearth_node_t **root,
                       hearth__store_report *report, hearth__recovery *rec,
                       hearth_error_t *err) {
    int rc = 0;
    for (size_t i = 0; !rc && !rec->damaged && i < nlogs; i++) {
        if (logs[i] < base)
            continue;
        char *path = hearth__store_path(dir, "log.%llu", logs[i]);
        if (!path)
            return hearth__error_code(err, HEARTH_ENOMEM);
        bool last = i == nlogs - 1;
        hearth__log_scan scan;
        rc = replay_log(path, last, root, &scan, report, err);
        if (!rc && scan.end == HEARTH__LOG_DAMAGED) {
            rec->damaged = true;
            rec->damaged_gen = logs[i];
            rec->damaged_at = scan.bad;
            rec->intact_len = scan.good;
            if (!find_damage)
                rc = hearth__error(err, HEARTH_EIO, path,
                                   "%s is damaged at offset %zu (%s); "
                                   "refusing to guess: `hearth repair` cuts "
                                   "it there, keeping a copy",
                                   path, scan.bad, scan.why);
        }
        rec->append_gen = logs[i];
        if (!rc && last && !find_damage)
            rc = cut_torn_tail(path, logs[i], &scan, report, rec, err);
        hearth__free(path);
    }
    return rc;
}

int hearth__store_recover(const char *dir, bool find_damage,
                          hearth_node_t **root, hearth__store_report *report,
                          hearth__recovery *rec, hearth_error_t *err) {
    memset(rec, 0, sizeof *rec);
    if (!find_damage)
        remove_stale_tmp(dir);
    uint64_t *snaps, *logs;
    size_t nsnaps, nlogs;
    int rc = hearth__store_list_gens(dir, "snapshot.", ".json", &snaps, &nsnaps);
    if (rc)
        return hearth__error(err, rc, dir, "cannot list %s", dir);
    rc = hearth__store_list_gens(dir, "log.", "", &logs, &nlogs);
    if (rc) {
        hearth__free(snaps);
        return hearth__error(err, rc, dir, "cannot list %s", dir);
    }
    uint64_t base = nsnaps ? snaps[nsnaps - 1] : 0;
    report->snapshot_gen = base;
    rec->append_gen = base ? base : 1;
    rc = check_sequence(dir, base, logs, nlogs, err);
    if (!rc && nsnaps)
        rc = load_snapshot(dir, base, root, err);
    if (!rc)
        rc = replay_logs(dir, find_damage, base, logs, nlogs, root, report, rec,
                         err);
    hearth__free(snaps);
    hearth__free(logs);
    /* Recovery held each log whole beside the tree, and later writes
     * replaced nodes of earlier ones: give the pages freed back, else the
     * process stays at its peak. */
    hearth__os_trim_memory();
    return rc;
}
