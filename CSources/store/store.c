/* store.c - log records, group commit, snapshots and recovery. */
#include "common/histogram.h"
#include "store/files.h"
#include "store/logfile.h"
#include "tree/json.h"
#include "os/os.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#define LOG_HEADER HEARTH__LOG_HEADER
#define LOG_HEADER_LEN HEARTH__LOG_HEADER_LEN
#define DEFAULT_SNAPSHOT_BYTES (64u * 1024 * 1024)
#define BATCH_SYNC_MS 1000

_Atomic uint64_t hearth__store_test_sync_ns;
/* With --fsync always the log is written ahead with zeros: a commit then
 * overwrites blocks the file already has, and its fdatasync writes the
 * data alone. Appending past the end makes every fdatasync write the
 * inode too (the size changed): a second synchronous write per commit
 * (figures in docs/ARCHITECTURE.md, "Space written ahead"). The space
 * grows with the log, from 64 KiB to 1 MiB at a time, so that a
 * namespace with a few writes (a server holds up to a thousand open)
 * costs little disk. */
#define LOG_SPACE_MIN (64u * 1024)
#define LOG_SPACE_MAX (1024u * 1024)

struct hearth__store {
    char *dir;
    int fsync_mode;
    int lock_fd;
    int log_fd;
    uint64_t log_gen;
    uint64_t log_bytes; /* in the current log: where the next commit goes */
    uint64_t log_size;  /* its file's size: log_bytes, or more written ahead */
    uint64_t snapshot_threshold;
    int64_t last_sync_ms;
    hearth__records pending; /* appended since the last commit began */
    /* A failed commit could not cut its bytes off the log: cut them (back
     * to log_bytes) before the next commit writes. */
    bool must_cut;
    bool relax_next; /* the next commit syncs as --fsync batch would */
    uint64_t seq;      /* the last write sequence given (records.h) */
    int64_t retain_ms; /* keep superseded files this long (0: none) */
};

/* ---- records ---- */

int hearth__store_append(hearth__store *s, const hearth__path *const *paths,
                         const hearth_node_t *const *values, size_t n) {
    return hearth__records_add(&s->pending, paths, values, n);
}

int hearth__store_append_by(hearth__store *s, const char *identity,
                            int64_t now_ms, const hearth__path *const *paths,
                            const hearth_node_t *const *values, size_t n) {
    hearth__record_meta meta = {now_ms, s->seq + 1, identity};
    int rc = hearth__records_add_meta(&s->pending, &meta, paths, values, n);
    if (!rc)
        s->seq++; /* a failed commit leaves a gap: numbers are not reused */
    return rc;
}

void hearth__store_set_retention(hearth__store *s, int64_t retain_ms) {
    s->retain_ms = retain_ms > 0 ? retain_ms : 0;
}

int64_t hearth__store_retention(const hearth__store *s) {
    return s->retain_ms;
}

/* A commit in three steps, so that making the bytes, the write and the
 * sync can run on a worker thread while the loop goes on: begin (loop)
 * takes the buffered records, write (any thread, one at a time) makes
 * their bytes, writes and syncs them, end (loop) records the outcome and
 * drops the records' references. A failed commit leaves the log as it was
 * before. */
static int cut_back(hearth__store *s) {
    if (ftruncate(s->log_fd, (off_t)s->log_bytes))
        return HEARTH_EIO;
    s->log_size = s->log_bytes;
    return 0;
}

/* Makes room for len more bytes at log_bytes: with --fsync always, zeros
 * written (and synced by the commit's own fdatasync) as far again past
 * them as the log holds, within LOG_SPACE_MIN and _MAX. The space is only the file's; the
 * log's records still end at log_bytes (logfile.h). Best effort: on a
 * disk too full for the space, what was written of it goes and the
 * commit appends as it would without. */
static void make_room(hearth__store *s, size_t len) {
    uint64_t need = s->log_bytes + len, was = s->log_size;
    if (s->fsync_mode != HEARTH_FSYNC_ALWAYS || need <= s->log_size)
        return;
    uint64_t step = s->log_bytes < LOG_SPACE_MIN   ? LOG_SPACE_MIN
                    : s->log_bytes > LOG_SPACE_MAX ? LOG_SPACE_MAX
                                                   : s->log_bytes;
    uint64_t to = (need + step + 4095) / 4096 * 4096; /* whole pages */
    static const char zeros[64 * 1024];
    for (uint64_t at = s->log_size; at < to;) {
        size_t n = to - at < sizeof zeros ? (size_t)(to - at) : sizeof zeros;
        if (hearth__store_pwrite_all(s->log_fd, zeros, n, at)) {
            if (ftruncate(s->log_fd, (off_t)was) == 0)
                s->log_size = was;
            return;
        }
        at += n;
        s->log_size = at;
    }
}

/* A commit failed: the records buffered since belong to writes built on
 * the failed ones, which the caller reverts too. */
static int drop_pending(hearth__store *s, int rc) {
    hearth__records_clear(&s->pending);
    return rc;
}

int hearth__store_commit_begin(hearth__store *s, hearth__store_batch *batch) {
    hearth__records_init(&batch->records);
    batch->bytes = 0;
    batch->sync = false;
    batch->sync_ns = 0;
    batch->rc = 0;
    batch->cut_failed = false;
    bool relax = s->relax_next; /* this commit's alone, even if it fails */
    s->relax_next = false;
    if (s->must_cut) {
        if (cut_back(s))
            return drop_pending(s, HEARTH_EIO);
        s->must_cut = false;
    }
    batch->records = s->pending;
    hearth__records_init(&s->pending);
    int64_t now = hearth_now_ms();
    int mode = relax && s->fsync_mode == HEARTH_FSYNC_ALWAYS
                   ? HEARTH_FSYNC_BATCH : s->fsync_mode;
    batch->sync = mode == HEARTH_FSYNC_ALWAYS ||
                  (mode == HEARTH_FSYNC_BATCH &&
                   now - s->last_sync_ms >= BATCH_SYNC_MS);
    if (batch->sync)
        s->last_sync_ms = now;
    return 0;
}

void hearth__store_relax_next(hearth__store *s) { s->relax_next = true; }

void hearth__store_commit_write(hearth__store *s, hearth__store_batch *batch) {
    if (hearth__records_empty(&batch->records))
        return;
    hearth__buf bytes;
    hearth__buf_init(&bytes);
    /* A record that cannot be made fails the commit before any byte of it
     * reaches the log. */
    batch->rc = hearth__records_write(&batch->records, &bytes);
    if (!batch->rc) {
        make_room(s, bytes.len);
        batch->rc = hearth__store_pwrite_all(s->log_fd, bytes.data, bytes.len,
                                             s->log_bytes);
        if (!batch->rc && s->log_bytes + bytes.len > s->log_size)
            s->log_size = s->log_bytes + bytes.len;
        if (!batch->rc && batch->sync) {
            uint64_t start = uv_hrtime();
            if (hearth__os_datasync(s->log_fd))
                batch->rc = hearth__store_disk_error();
            batch->sync_ns = uv_hrtime() - start;
            hearth__hist_observe(&hearth__hist_log_fsync, batch->sync_ns);
            uint64_t told = atomic_load(&hearth__store_test_sync_ns);
            if (told)
                batch->sync_ns = told;
        }
        /* Nothing of a failed commit may stay: a restart would replay it. */
        if (batch->rc && cut_back(s))
            batch->cut_failed = true;
    }
    batch->bytes = bytes.len;
    hearth__buf_free(&bytes);
}

void hearth__store_commit_undo(hearth__store *s, hearth__store_batch *batch,
                              int rc) {
    batch->rc = rc;
    /* Synced like the write: a restart must not find the records. */
    if (cut_back(s) || (batch->sync && hearth__os_datasync(s->log_fd)))
        batch->cut_failed = true;
}

int hearth__store_commit_end(hearth__store *s, hearth__store_batch *batch) {
    int rc = batch->rc;
    if (rc) {
        s->must_cut = batch->cut_failed;
        drop_pending(s, rc);
    } else {
        s->log_bytes += batch->bytes;
    }
    hearth__records_clear(&batch->records);
    return rc;
}

int hearth__store_commit(hearth__store *s) {
    hearth__store_batch batch;
    int rc = hearth__store_commit_begin(s, &batch);
    if (rc)
        return rc;
    hearth__store_commit_write(s, &batch);
    return hearth__store_commit_end(s, &batch);
}

/* ---- open / close ---- */

static int open_log(hearth__store *s, uint64_t gen, bool create,
                    hearth_error_t *err) {
    char *path = hearth__store_path(s->dir, "log.%llu", gen);
    if (!path)
        return hearth__error_code(err, HEARTH_ENOMEM);
    /* Not O_APPEND: commits go at log_bytes, which space written ahead
     * may follow. */
    int fd = open(path, O_WRONLY | (create ? O_CREAT | O_EXCL : 0), 0644);
    /* A new log of a store with write history starts with a mark: the
     * sequence so far and the time, which is also its snapshot's. */
    hearth__buf head;
    hearth__buf_init(&head);
    hearth__buf_add(&head, LOG_HEADER, LOG_HEADER_LEN);
    hearth__record_meta mark = {hearth_now_ms(), s->seq, NULL};
    if (create && s->seq)
        hearth__records_write_mark(&mark, &head);
    int rc = 0;
    if (fd < 0) {
        rc = hearth__store_io_error(err, "cannot open", path);
    } else if (head.failed) {
        rc = hearth__error_code(err, HEARTH_ENOMEM);
        close(fd);
        unlink(path);
    } else if (create && (hearth__store_write_all(fd, head.data, head.len) ||
                          hearth__os_datasync(fd) || hearth__store_sync_dir(s->dir))) {
        rc = hearth__store_io_error(err, "cannot create", path);
        close(fd);
        unlink(path); /* (a full disk) a later rotation tries again */
    } else {
        struct stat st;
        s->log_fd = fd;
        s->log_gen = gen;
        if (create)
            s->log_bytes = head.len; /* a failed commit cuts back here */
        s->log_size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : s->log_bytes;
    }
    hearth__buf_free(&head);
    hearth__free(path);
    return rc;
}

/* Recovers the data and opens the log appends go to. */
static int recover(hearth__store *s, hearth_node_t **root,
                   hearth__store_report *report, hearth_error_t *err) {
    hearth__recovery rec;
    int rc = hearth__store_recover(s->dir, false, root, report, &rec, err);
    if (rc)
        return rc;
    s->seq = report->last_seq;
    s->log_bytes = rec.append_exists ? rec.append_len : 0;
    return open_log(s, rec.append_gen, !rec.append_exists, err);
}

int hearth__store_open(const char *dir, int fsync_mode, hearth__store **out,
                       hearth_node_t **root, hearth__store_report *report,
                       hearth_error_t *err) {
    hearth__store_report ignored;
    if (!report)
        report = &ignored;
    memset(report, 0, sizeof *report);
    if (fsync_mode < HEARTH_FSYNC_ALWAYS || fsync_mode > HEARTH_FSYNC_OFF)
        return hearth__error(err, HEARTH_EINVAL, NULL, "unknown fsync mode %d",
                             fsync_mode);
    if (hearth__store_mkdir_p(dir))
        return hearth__store_io_error(err, "cannot create data directory", dir);
    hearth__store *s = hearth__calloc(1, sizeof *s);
    if (!s || !(s->dir = hearth__strndup(dir, strlen(dir)))) {
        hearth__free(s);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    s->fsync_mode = fsync_mode;
    s->log_fd = -1;
    s->snapshot_threshold = DEFAULT_SNAPSHOT_BYTES;
    hearth__records_init(&s->pending);
    int rc = hearth__store_lock(dir, &s->lock_fd, err);
    *root = hearth_node_null();
    if (!rc)
        rc = recover(s, root, report, err);
    if (rc) {
        hearth_node_decref(*root);
        *root = NULL;
        if (s->lock_fd >= 0)
            close(s->lock_fd);
        hearth__free(s->dir);
        hearth__free(s);
        return rc;
    }
    s->last_sync_ms = hearth_now_ms();
    *out = s;
    return 0;
}

/* Gives back the space written ahead: a log that is not the newest ends
 * at its last record (logfile.h), and a closed one need not hold it. */
static int trim(hearth__store *s) {
    return s->log_size > s->log_bytes ? cut_back(s) : 0;
}

int hearth__store_close(hearth__store *s) {
    if (!s)
        return 0;
    int rc = hearth__store_commit(s);
    if (s->log_fd >= 0) {
        if (trim(s))
            rc = HEARTH_EIO;
        if (s->fsync_mode != HEARTH_FSYNC_OFF && hearth__os_datasync(s->log_fd))
            rc = HEARTH_EIO;
        close(s->log_fd);
    }
    close(s->lock_fd); /* releases the lock */
    hearth__records_clear(&s->pending);
    hearth__free(s->dir);
    hearth__free(s);
    return rc;
}

bool hearth__store_wants_snapshot(const hearth__store *s) {
    return s->log_bytes >= s->snapshot_threshold;
}

void hearth__store_set_snapshot_threshold(hearth__store *s, uint64_t bytes) {
    s->snapshot_threshold = bytes;
}

void hearth__store_position(const hearth__store *s, uint64_t *gen,
                           uint64_t *bytes) {
    *gen = s->log_gen;
    *bytes = s->log_bytes;
}

const char *hearth__store_dir(const hearth__store *s) { return s->dir; }

/* ---- snapshots ---- */

int hearth__store_rotate(hearth__store *s, uint64_t *gen) {
    if (!hearth__records_empty(&s->pending) || s->must_cut)
        return HEARTH_EIO; /* only between commits, after a good one */
    /* Trimmed and synced before the next log exists: only the newest may
     * end in space. */
    bool had_space = s->log_size > s->log_bytes;
    if (trim(s) || ((s->fsync_mode != HEARTH_FSYNC_OFF || had_space) &&
                    hearth__os_datasync(s->log_fd)))
        return HEARTH_EIO;
    int old_fd = s->log_fd;
    uint64_t old_gen = s->log_gen;
    int rc = open_log(s, old_gen + 1, true, NULL);
    if (rc)
        return rc;
    close(old_fd);
    *gen = s->log_gen;
    return 0;
}

/* The oldest generation to keep besides gen and later: the first log
 * written to within the last retain_ms (its mtime: its last commit), whose
 * snapshot holds the data as it was when it began. */
static uint64_t retained_from(const char *dir, uint64_t gen,
                              int64_t retain_ms) {
    if (retain_ms <= 0)
        return gen;
    uint64_t *gens;
    size_t n;
    if (hearth__store_list_gens(dir, "log.", "", &gens, &n))
        return 1; /* cannot tell: keep everything */
    int64_t cutoff = hearth_now_ms() - retain_ms;
    uint64_t from = gen;
    for (size_t i = 0; i < n && gens[i] < gen; i++) {
        char *path = hearth__store_path(dir, "log.%llu", gens[i]);
        int64_t written = path ? hearth__os_mtime_ms(path) : -1;
        bool recent = written < 0 || written >= cutoff;
        hearth__free(path);
        if (recent) {
            from = gens[i];
            break;
        }
    }
    hearth__free(gens);
    return from;
}

/* Removes snapshots and logs older than gen. */
static void remove_superseded(const char *dir, uint64_t gen) {
    static const struct {
        const char *prefix, *suffix, *fmt;
    } kinds[] = {{"snapshot.", ".json", "snapshot.%llu.json"},
                 {"log.", "", "log.%llu"}};
    for (size_t k = 0; k < 2; k++) {
        uint64_t *gens;
        size_t n;
        if (hearth__store_list_gens(dir, kinds[k].prefix, kinds[k].suffix, &gens, &n))
            continue;
        for (size_t i = 0; i < n; i++) {
            if (gens[i] >= gen)
                continue;
            char *path = hearth__store_path(dir, kinds[k].fmt, gens[i]);
            if (path)
                unlink(path);
            hearth__free(path);
        }
        hearth__free(gens);
    }
}

static int write_snapshot(const char *dir, uint64_t gen,
                          const hearth_node_t *root, int64_t retain_ms);

int hearth__store_write_snapshot(const char *dir, uint64_t gen,
                                 const hearth_node_t *root) {
    return hearth__store_write_snapshot_retaining(dir, gen, root, 0);
}

/* Timed for the metrics (hearth__hist_snapshot). */
int hearth__store_write_snapshot_retaining(const char *dir, uint64_t gen,
                                           const hearth_node_t *root,
                                           int64_t retain_ms) {
    uint64_t start = uv_hrtime();
    int rc = write_snapshot(dir, gen, root, retain_ms);
    hearth__hist_observe(&hearth__hist_snapshot, uv_hrtime() - start);
    return rc;
}

static int write_snapshot(const char *dir, uint64_t gen,
                          const hearth_node_t *root, int64_t retain_ms) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__node_write_json(&b, root, HEARTH_JSON_EXPORT);
    if (b.failed) {
        hearth__buf_free(&b);
        return HEARTH_ENOMEM;
    }
    char *final = hearth__store_path(dir, "snapshot.%llu.json", gen);
    char *tmp = hearth__store_path(dir, "snapshot.%llu.json.tmp", gen);
    int rc = final && tmp ? 0 : HEARTH_ENOMEM;
    if (!rc) {
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        rc = fd < 0 ? HEARTH_EIO : 0;
        if (!rc) {
            rc = hearth__store_write_all(fd, b.data, b.len);
            if (!rc && hearth__os_sync(fd))
                rc = HEARTH_EIO;
            close(fd);
        }
        if (!rc && (rename(tmp, final) || hearth__store_sync_dir(dir)))
            rc = HEARTH_EIO;
        if (rc)
            unlink(tmp);
        else
            remove_superseded(dir, retained_from(dir, gen, retain_ms));
    }
    hearth__free(final);
    hearth__free(tmp);
    hearth__buf_free(&b);
    return rc;
}
