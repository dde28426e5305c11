/* repair.c - hearth_repair: cutting a damaged log explicitly, keeping a
 * copy of everything it removes. */
#include "store/files.h"
#include "store/logfile.h"
#include "os/os.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* "log.<gen>.damaged-<UTC time>" in dir. */
static void aside_path(const char *dir, uint64_t gen, const char *stamp,
                       char *out, size_t size) {
    snprintf(out, size, "%s/log.%llu.damaged-%s", dir, (unsigned long long)gen,
             stamp);
}

/* Writes data to a new file at path, synced. */
static int write_copy(const char *path, const char *data, size_t len,
                      hearth_error_t *err) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return hearth__store_io_error(err, "cannot create", path);
    int rc = hearth__store_write_all(fd, data, len);
    if (!rc && hearth__os_sync(fd))
        rc = HEARTH_EIO;
    close(fd);
    if (rc) {
        unlink(path);
        return hearth__store_io_error(err, "cannot write", path);
    }
    return 0;
}

/* Cuts path at len (removing a log left with no record), synced. */
static int cut_file(const char *path, size_t len, hearth_error_t *err) {
    if (len < HEARTH__LOG_HEADER_LEN)
        return unlink(path) ? hearth__store_io_error(err, "cannot remove", path)
                            : 0;
    int fd = open(path, O_WRONLY);
    int rc = fd < 0 || ftruncate(fd, (off_t)len) || hearth__os_sync(fd);
    if (fd >= 0)
        close(fd);
    return rc ? hearth__store_io_error(err, "cannot cut", path) : 0;
}

/* Intact records in path from offset from on. */
static int count_records(const char *path, size_t from, uint64_t *records,
                         uint64_t *bytes, hearth_error_t *err) {
    size_t size;
    char *data = hearth__store_read_whole(path, &size);
    if (!data)
        return hearth__store_io_error(err, "cannot read", path);
    hearth__log_scan scan;
    hearth__log_check(data, size, true, &scan);
    *records += hearth__log_count_intact(data, size, scan.version,
                                         from > HEARTH__LOG_HEADER_LEN
                                             ? from
                                             : HEARTH__LOG_HEADER_LEN);
    *bytes += size > from ? size - from : 0;
    hearth__free(data);
    return 0;
}

/* Copies the damaged log aside and cuts it. */
static int cut_damaged(const char *dir, const hearth__recovery *rec,
                       const char *stamp, hearth_repair_report_t *report,
                       hearth_error_t *err) {
    char *path = hearth__store_path(dir, "log.%llu", rec->damaged_gen);
    if (!path)
        return hearth__error_code(err, HEARTH_ENOMEM);
    aside_path(dir, rec->damaged_gen, stamp, report->copy, sizeof report->copy);
    size_t size;
    char *data = hearth__store_read_whole(path, &size);
    int rc = data ? write_copy(report->copy, data, size, err)
                  : hearth__store_io_error(err, "cannot read", path);
    if (!rc)
        rc = count_records(path, rec->intact_len, &report->records_cut,
                           &report->bytes_cut, err);
    if (!rc)
        rc = cut_file(path, rec->intact_len, err);
    hearth__free(data);
    hearth__free(path);
    return rc;
}

/* Moves every log after gen aside: their writes came after the lost ones. */
static int move_later_logs(const char *dir, uint64_t gen, const char *stamp,
                           hearth_repair_report_t *report,
                           hearth_error_t *err) {
    uint64_t *gens;
    size_t n;
    int rc = hearth__store_list_gens(dir, "log.", "", &gens, &n);
    if (rc)
        return hearth__error(err, rc, dir, "cannot list %s", dir);
    for (size_t i = 0; !rc && i < n; i++) {
        if (gens[i] <= gen)
            continue;
        char *path = hearth__store_path(dir, "log.%llu", gens[i]);
        char aside[512];
        aside_path(dir, gens[i], stamp, aside, sizeof aside);
        rc = path ? count_records(path, 0, &report->records_cut,
                                  &report->bytes_cut, err)
                  : hearth__error_code(err, HEARTH_ENOMEM);
        if (!rc && rename(path, aside))
            rc = hearth__store_io_error(err, "cannot move aside", path);
        if (!rc)
            report->logs_moved++;
        hearth__free(path);
    }
    hearth__free(gens);
    return rc;
}

int hearth_repair(const char *data_dir, hearth_repair_report_t *report,
                  hearth_error_t *err) {
    hearth_repair_report_t ignored;
    if (!report)
        report = &ignored;
    if (!data_dir)
        return hearth__error(err, HEARTH_EINVAL, NULL, "data_dir is NULL");
    memset(report, 0, sizeof *report);
    int lock_fd;
    int rc = hearth__store_lock(data_dir, &lock_fd, err);
    if (rc)
        return rc;
    hearth_node_t *root = hearth_node_null();
    hearth__store_report found = {0};
    hearth__recovery rec;
    rc = hearth__store_recover(data_dir, true, &root, &found, &rec, err);
    hearth_node_decref(root);
    if (!rc && rec.damaged) {
        char stamp[32];
        time_t now = time(NULL);
        struct tm tm;
        strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime_r(&now, &tm));
        report->log_generation = rec.damaged_gen;
        report->damage_offset = rec.damaged_at;
        report->cut_offset = rec.intact_len;
        rc = cut_damaged(data_dir, &rec, stamp, report, err);
        if (!rc)
            rc = move_later_logs(data_dir, rec.damaged_gen, stamp, report, err);
        if (!rc && hearth__store_sync_dir(data_dir))
            rc = hearth__store_io_error(err, "cannot sync", data_dir);
        report->repaired = rc == 0;
    }
    close(lock_fd);
    return rc;
}
