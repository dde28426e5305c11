/* history.c - point-in-time recovery from a data directory's retained
 * snapshots and logs (hearth_backup_at, hearth_log_changes): the oldest
 * snapshot from which every later log is still there is the start; its
 * logs are replayed record by record, each carrying its time, sequence
 * and identity (records.h), to the moment asked for, or listed.
 *
 * Only reads: a server may hold the directory. The newest log may end in
 * a commit being written (it is left out); any other damage refuses,
 * naming the file and offset. A log's first record is a mark (its
 * snapshot's time and sequence) when it was begun by this version; a
 * snapshot without one is known to be no older than its log's first
 * record, so the moments before that are refused as not retained. */
#include "store/history.h"
#include "store/logfile.h"
#include "tree/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef hearth__history walk;

/* Whether a change at `changed` touches `watched`: one is at or below
 * the other. */
static bool touches(const char *changed, const char *watched, size_t wlen) {
    if (!watched || (wlen == 1 && watched[0] == '/'))
        return true;
    size_t clen = strlen(changed);
    if (clen == 1 && changed[0] == '/')
        return true;
    size_t n = clen < wlen ? clen : wlen;
    if (memcmp(changed, watched, n))
        return false;
    const char *longer = clen < wlen ? watched : changed;
    return clen == wlen || longer[n] == '/';
}

static int list_record(walk *w, const hearth__record *rec) {
    for (size_t i = 0; i < rec->n && !w->cb_rc; i++) {
        if (!touches(rec->v[i].path, w->path, w->path_len) ||
            rec->time_ms < w->since_ms || rec->time_ms > w->until_ms)
            continue;
        hearth__buf b;
        hearth__buf_init(&b);
        hearth__node_write_json(&b, rec->v[i].value, HEARTH_JSON_EXPORT);
        hearth_change_t c = {rec->has_meta ? rec->time_ms : 0, w->seq,
                             rec->identity, rec->v[i].path, b.len};
        hearth__buf_free(&b);
        w->cb_rc = w->cb(&c, w->ctx);
    }
    return 0;
}

int hearth__history_take(walk *w, const char *payload, size_t len,
                         uint64_t given) {
    hearth__record rec = {0};
    int rc = hearth__store_read_record(payload, len, &rec);
    if (rc || (given && !rec.n)) { /* a cluster's group holds no mark */
        hearth__record_free(&rec);
        return rc;
    }
    uint64_t seq = given ? given : rec.has_meta ? rec.seq : w->seq + 1;
    if (!rec.n) { /* a mark: where its snapshot stands */
        if (!w->oldest_known) {
            w->oldest_known = true;
            w->oldest_ms = rec.time_ms;
            w->oldest_seq = rec.seq;
        }
        w->seq = rec.seq;
        hearth__record_free(&rec);
        return 0;
    }
    if (!w->oldest_known) { /* a snapshot of unknown time: from here */
        w->oldest_known = true;
        w->oldest_ms = rec.has_meta ? rec.time_ms : 0;
        w->oldest_seq = seq;
    }
    w->seq = seq;
    if (w->root && !w->stopped) {
        /* Records without meta (earlier versions) have no time: a time
         * target includes them, as they came before every timed one. */
        if (seq > w->at_seq || (rec.has_meta && rec.time_ms > w->at_ms))
            w->stopped = true;
        for (size_t i = 0; !w->stopped && !rc && i < rec.n; i++) {
            hearth__path p;
            rc = hearth__path_parse(rec.v[i].path, HEARTH__PATH_ALLOW_PRIORITY,
                                    &p, NULL)
                     ? HEARTH_EIO
                     : hearth__node_set_path(&w->root, &p, rec.v[i].value,
                                             NULL);
        }
    } else if (w->cb) {
        rc = list_record(w, &rec);
    }
    hearth__record_free(&rec);
    return rc ? HEARTH_EIO : 0;
}

static int walk_log(walk *w, const char *dir, uint64_t gen, bool last,
                    hearth_error_t *err) {
    char *path = hearth__store_path(dir, "log.%llu", gen);
    if (!path)
        return hearth__error_code(err, HEARTH_ENOMEM);
    size_t size = 0;
    char *data = hearth__store_read_whole(path, &size);
    int rc = 0;
    if (!data) {
        rc = hearth__store_io_error(err, "cannot read", path);
    } else {
        hearth__log_scan scan;
        hearth__log_check(data, size, last, &scan);
        /* The newest log may end in a commit still being written. */
        if (scan.end == HEARTH__LOG_DAMAGED)
            rc = hearth__error(err, HEARTH_EIO, path,
                               "%s is damaged at offset %zu (%s): the "
                               "history past it cannot be read",
                               path, scan.bad, scan.why);
        const char *payload;
        size_t off = 0, len;
        for (size_t at = 0; !rc && !w->stopped && !w->cb_rc &&
                            hearth__log_next(data, &scan, &off, &payload, &len);
             at = off) {
            if (hearth__history_take(w, payload, len, 0))
                rc = hearth__error(err, HEARTH_EIO, path,
                                   "%s is damaged at offset %zu (the record "
                                   "does not read): the history past it "
                                   "cannot be read",
                                   path, at ? at : HEARTH__LOG_HEADER_LEN);
        }
    }
    hearth__free(data);
    hearth__free(path);
    return rc;
}

/* The oldest start: a snapshot (or none, 0, when the logs begin at 1)
 * from which every log to the newest is there. */
static int find_start(const char *dir, uint64_t **logs, size_t *nlogs,
                      uint64_t *start, hearth_error_t *err) {
    uint64_t *snaps;
    size_t nsnaps;
    int rc = hearth__store_list_gens(dir, "snapshot.", ".json", &snaps, &nsnaps);
    if (!rc)
        rc = hearth__store_list_gens(dir, "log.", "", logs, nlogs);
    if (rc) {
        int why = errno;
        hearth__free(snaps);
        return hearth__error(err, why == ENOENT ? HEARTH_ENOTFOUND : HEARTH_EIO,
                             dir, "cannot list %s: %s", dir, strerror(why));
    }
    /* From the newest log down: the run of consecutive logs it ends. */
    size_t first = *nlogs;
    while (first > 0 &&
           (first == *nlogs || (*logs)[first - 1] + 1 == (*logs)[first]))
        first--;
    rc = -1;
    if (*nlogs && first < *nlogs && (*logs)[first] == 1) {
        *start = 0;
        rc = 0;
    }
    for (size_t i = 0; rc && i < nsnaps; i++) {
        if (*nlogs && snaps[i] >= (*logs)[first] && snaps[i] <= (*logs)[*nlogs - 1]) {
            *start = snaps[i];
            rc = 0;
        }
    }
    if (rc && !*nlogs && !nsnaps) {
        *start = 0; /* nothing written: empty */
        rc = 0;
    }
    hearth__free(snaps);
    if (rc)
        return hearth__error(err, HEARTH_EIO, dir,
                             "%s: no snapshot is followed by every log to the "
                             "newest: nothing to recover from",
                             dir);
    return 0;
}

static int load_start(const char *dir, uint64_t start, hearth_node_t **root,
                      hearth_error_t *err) {
    if (!start)
        return (*root = hearth_node_null()) ? 0
                                            : hearth__error_code(err, HEARTH_ENOMEM);
    char *path = hearth__store_path(dir, "snapshot.%llu.json", start);
    size_t len;
    char *data = path ? hearth__store_read_whole(path, &len) : NULL;
    int rc = 0;
    if (!data)
        rc = path ? hearth__store_io_error(err, "cannot read", path)
                  : hearth__error_code(err, HEARTH_ENOMEM);
    else if (hearth_node_from_json(data, len, 0, root, NULL))
        rc = hearth__error(err, HEARTH_EIO, path, "snapshot %s is damaged",
                           path);
    hearth__free(data);
    hearth__free(path);
    return rc;
}

/* Walks the history of dir from its oldest start. */
static int walk_all(walk *w, const char *dir, hearth_error_t *err) {
    uint64_t *logs = NULL, start = 0;
    size_t nlogs = 0;
    int rc = find_start(dir, &logs, &nlogs, &start, err);
    if (!rc && w->root) {
        hearth_node_decref(w->root);
        w->root = NULL;
        rc = load_start(dir, start, &w->root, err);
    }
    if (!rc && !start) { /* from the very beginning: empty, sequence 0 */
        w->oldest_known = true;
        w->oldest_ms = INT64_MIN;
    }
    for (size_t i = 0; !rc && i < nlogs && !w->stopped && !w->cb_rc; i++)
        if (logs[i] >= (start ? start : 1))
            rc = walk_log(w, dir, logs[i], i == nlogs - 1, err);
    hearth__free(logs);
    return rc;
}

static void iso_time(int64_t ms, char out[32]) {
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03dZ", (int)(ms % 1000));
}

int hearth_backup_at(const char *data_dir, int64_t at_ms, uint64_t at_seq,
                     const char *out_file, hearth_error_t *err) {
    if (!out_file)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    hearth_node_t *root = NULL;
    int rc = hearth__store_state_at(data_dir, at_ms, at_seq, &root, err);
    if (rc)
        return rc;
    rc = hearth__store_write_root(out_file, root, err);
    hearth_node_decref(root);
    return rc;
}

int hearth__history_rebuild(walk *w, int64_t at_ms, uint64_t at_seq) {
    *w = (walk){.at_ms = at_ms ? at_ms : INT64_MAX,
                .at_seq = at_seq ? at_seq : UINT64_MAX};
    return (w->root = hearth_node_null()) ? 0 : HEARTH_ENOMEM;
}

void hearth__history_listing(walk *w, const char *path, int64_t since_ms,
                             int64_t until_ms, hearth_change_cb cb,
                             void *ctx) {
    *w = (walk){.cb = cb, .ctx = ctx, .path = path,
                .path_len = path ? strlen(path) : 0,
                .since_ms = since_ms ? since_ms : INT64_MIN,
                .until_ms = until_ms ? until_ms : INT64_MAX,
                .at_ms = INT64_MAX, .at_seq = UINT64_MAX};
}

void hearth__history_start(walk *w, uint64_t seq, int64_t time_ms) {
    w->oldest_known = true;
    w->oldest_ms = time_ms;
    w->oldest_seq = w->seq = seq;
}

int hearth__history_finish(walk *w, const char *where, hearth_node_t **out,
                           hearth_error_t *err) {
    int rc = 0;
    bool at_ms = w->at_ms != INT64_MAX, at_seq = w->at_seq != UINT64_MAX;
    /* A moment before the start's own is not retained: its data is in no
     * file (no message) any more. */
    if (w->root && w->oldest_known &&
        ((at_ms && w->at_ms < w->oldest_ms) ||
         (at_seq && w->at_seq < w->oldest_seq))) {
        char when[32];
        iso_time(w->oldest_ms, when);
        rc = hearth__error(err, HEARTH_ENOTFOUND, where,
                           "%s: not retained: the oldest moment it holds "
                           "is %s (sequence %" PRIu64 ")",
                           where, when, w->oldest_seq);
    }
    if (!rc && w->root && at_seq && w->at_seq > w->seq)
        rc = hearth__error(err, HEARTH_ENOTFOUND, where,
                           "%s: sequence %" PRIu64 " is not written yet (the "
                           "last is %" PRIu64 ")",
                           where, w->at_seq, w->seq);
    if (rc || !out)
        hearth_node_decref(w->root);
    else
        *out = w->root;
    w->root = NULL;
    return rc ? rc : w->cb_rc;
}

int hearth__store_state_at(const char *data_dir, int64_t at_ms, uint64_t at_seq,
                    hearth_node_t **out, hearth_error_t *err) {
    if (!data_dir || !out)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    walk w;
    if (hearth__history_rebuild(&w, at_ms, at_seq))
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = walk_all(&w, data_dir, err);
    if (rc) {
        hearth_node_decref(w.root);
        return rc;
    }
    return hearth__history_finish(&w, data_dir, out, err);
}

int hearth_log_changes(const char *data_dir, const char *path,
                       int64_t since_ms, int64_t until_ms, hearth_change_cb cb,
                       void *ctx, hearth_error_t *err) {
    if (!data_dir || !cb)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    walk w;
    hearth__history_listing(&w, path, since_ms, until_ms, cb, ctx);
    int rc = walk_all(&w, data_dir, err);
    return rc ? rc : w.cb_rc;
}
