/*
 * store.h - the durable store of one database: an append-only log of
 * checksummed write records plus periodic snapshots, in one directory.
 *
 *   DIR/snapshot.<G>.json   the whole tree (export format) before log G
 *   DIR/log.<G>             records written after snapshot G
 *
 * A record (format in logfile.h) is a checksummed header and the JSON
 * array [[path, value], ...] of one write with server values already
 * resolved, so replay is deterministic. Recovery loads the newest snapshot
 * and replays every log from its generation on. The last commit of the
 * last log, cut short by a crash (a short file or a zero-filled tail), is
 * cut off and reported; any other damage, and any gap in the sequence of
 * snapshot and logs, stops the open with an error naming the file and
 * offset (or the missing file), leaving the files as they were:
 * hearth_repair cuts a damaged log explicitly, keeping a copy. Stale
 * snapshot .tmp files are removed at open.
 *
 * A failed commit (write or sync refused, e.g. a full disk) cuts the log
 * back to its last good length and drops the records buffered since, so
 * the caller can revert every write not yet committed; the store stays
 * usable and the next commit tries again.
 *
 * Snapshots: the loop thread rotates to a new log (hearth__store_rotate);
 * any thread then writes the snapshot of the immutable root taken at that
 * moment (hearth__store_write_snapshot), which renames it into place and
 * only then deletes the files it supersedes. A crash or a failure at any
 * point leaves a snapshot and the logs after it.
 */
#ifndef HEARTH_STORE_STORE_H
#define HEARTH_STORE_STORE_H

#include "store/records.h"

typedef struct hearth__store hearth__store;

typedef struct hearth__store_report {
    uint64_t snapshot_gen;     /* generation loaded (0: none) */
    uint64_t records_replayed;
    uint64_t torn_bytes;       /* cut off the end of the last log */
    uint64_t torn_gen;         /* ... log.<torn_gen>, from torn_offset on */
    uint64_t torn_offset;
    uint64_t last_seq;         /* the write sequence reached (records.h) */
} hearth__store_report;

/* Opens (creating if needed) the store in dir and recovers the tree into
 * *root (a new reference). */
int hearth__store_open(const char *dir, int fsync_mode, hearth__store **out,
                       hearth_node_t **root, hearth__store_report *report,
                       hearth_error_t *err);
/* Commits what is buffered, then closes. */
int hearth__store_close(hearth__store *s);

/* Buffers the record of one write (paths may end in .priority) as
 * references to its values: a cost in parts, not in bytes (records.h). The
 * bytes are made by the commit that writes them. HEARTH_ENOMEM: nothing
 * was buffered. */
int hearth__store_append(hearth__store *s, const hearth__path *const *paths,
                         const hearth_node_t *const *values, size_t n);
/* The same, the record carrying its meta (records.h): now_ms, the next
 * write sequence, and identity ("admin", "anonymous", "uid:<uid>"; NULL:
 * none; copied). Once a store has given a sequence, each new log starts
 * with a mark of it. */
int hearth__store_append_by(hearth__store *s, const char *identity,
                            int64_t now_ms, const hearth__path *const *paths,
                            const hearth_node_t *const *values, size_t n);
/* Point-in-time recovery's window: snapshots and logs a snapshot
 * supersedes are kept while the log was written to within retain_ms
 * (0: removed at once, the default). Set before the first snapshot. */
void hearth__store_set_retention(hearth__store *s, int64_t retain_ms);
int64_t hearth__store_retention(const hearth__store *s);
/* Writes the buffered records and syncs them as the fsync mode says.
 * HEARTH_ENOSPC (full disk) or HEARTH_EIO when the disk refused, or
 * HEARTH_ENOMEM / HEARTH_ETOOBIG (a record past 4 GB) when the records
 * could not be made into bytes: nothing of the commit stays in the log,
 * and the records buffered since are dropped too (the caller reverts
 * those writes); the next commit tries again. */
int hearth__store_commit(hearth__store *s);
/* The same in three steps, for a commit on a worker thread: begin and end
 * on the loop thread, write in between on any one thread (it serializes
 * the records and writes them). No other store call may run between begin
 * and end except appends. */
typedef struct hearth__store_batch {
    hearth__records records; /* taken at begin, dropped at end */
    uint64_t bytes;          /* what the write added to the log */
    bool sync;
    uint64_t sync_ns; /* how long its fdatasync took (0: it made none) */
    int rc;
    bool cut_failed; /* the failed commit's bytes are still in the log */
} hearth__store_batch;
/* Tests only: when nonzero, the time every fdatasync reports it took
 * (group commit chooses where to sync by it: db/commit.c). */
extern _Atomic uint64_t hearth__store_test_sync_ns;
int hearth__store_commit_begin(hearth__store *s, hearth__store_batch *batch);
/* Before begin: the next commit syncs at most once a second even with
 * HEARTH_FSYNC_ALWAYS (records kept elsewhere too: a cluster's log). */
void hearth__store_relax_next(hearth__store *s);
void hearth__store_commit_write(hearth__store *s, hearth__store_batch *batch);
/* After a good write, before end: the commit fails with rc after all (a
 * replicated log refused it), its bytes cut back off the log. */
void hearth__store_commit_undo(hearth__store *s, hearth__store_batch *batch,
                              int rc);
int hearth__store_commit_end(hearth__store *s, hearth__store_batch *batch);

/* Whether the log has grown enough to be worth a snapshot. */
bool hearth__store_wants_snapshot(const hearth__store *s);

/* Starts a new log; returns the generation the snapshot must carry. Only
 * between commits (nothing buffered). */
int hearth__store_rotate(hearth__store *s, uint64_t *gen);
/* Writes snapshot gen of root and removes what it supersedes. Safe on a
 * worker thread while the loop goes on appending to the new log. */
int hearth__store_write_snapshot(const char *dir, uint64_t gen,
                                 const hearth_node_t *root);
/* The same, keeping what it supersedes for retain_ms (see
 * hearth__store_set_retention). */
int hearth__store_write_snapshot_retaining(const char *dir, uint64_t gen,
                                           const hearth_node_t *root,
                                           int64_t retain_ms);
const char *hearth__store_dir(const hearth__store *s);
/* Where the log ends now: its generation and its length in bytes. */
void hearth__store_position(const hearth__store *s, uint64_t *gen,
                           uint64_t *bytes);

/* Test hook: log bytes after which a snapshot is wanted. */
void hearth__store_set_snapshot_threshold(hearth__store *s, uint64_t bytes);

#endif
