/*
 * files.h - the store's file helpers and recovery, shared by the store
 * (store.c), recovery (recover.c) and repair (repair.c).
 */
#ifndef HEARTH_STORE_FILES_H
#define HEARTH_STORE_FILES_H

#include "store/store.h"

/* HEARTH_EIO with "what path: strerror(errno)". */
int hearth__store_io_error(hearth_error_t *err, const char *what,
                           const char *path);
/* dir + "/" + fmt with gen ("log.%llu"); NULL without memory. */
char *hearth__store_path(const char *dir, const char *fmt, uint64_t gen);
int hearth__store_mkdir_p(const char *dir);
int hearth__store_sync_dir(const char *dir);
/* The code for a refused write or sync (errno): HEARTH_ENOSPC for a full
 * disk, which heals by itself once space is freed, else HEARTH_EIO. */
int hearth__store_disk_error(void);
int hearth__store_write_all(int fd, const char *data, size_t len);
/* The same at offset off (pwrite: the file position does not move). */
int hearth__store_pwrite_all(int fd, const char *data, size_t len,
                             uint64_t off);
/* Writes data to path through path.tmp (made with mode), synced,
 * renamed, its directory synced: all or nothing, whatever the crash
 * (backup.c). HEARTH_EIO naming path. */
int hearth__store_write_atomically(const char *path, const char *data,
                                   size_t len, int mode, hearth_error_t *err);
/* root as export JSON into path, the same way. */
int hearth__store_write_root(const char *path, const hearth_node_t *root,
                             hearth_error_t *err);
/* The data of dir as it was after the last write at or before at_ms (0:
 * any time) whose sequence is at most at_seq (0: any), from its retained
 * snapshots and logs (history.c); *out a new reference. HEARTH_ENOTFOUND
 * when dir does not exist, the moment is older than the files hold or the
 * sequence is not written yet; HEARTH_EIO naming the file and offset of
 * damage. */
int hearth__store_state_at(const char *dir, int64_t at_ms, uint64_t at_seq,
                           hearth_node_t **out, hearth_error_t *err);

/* The whole file, NUL-terminated; NULL when it cannot be read. */
char *hearth__store_read_whole(const char *path, size_t *len);
/* Generations of the files named prefix + digits + suffix, ascending. */
int hearth__store_list_gens(const char *dir, const char *prefix,
                            const char *suffix, uint64_t **gens, size_t *n);
/* Opens and flock()s DIR/LOCK: one process per directory. */
int hearth__store_lock(const char *dir, int *fd, hearth_error_t *err);

/* One log record's payload ([[path, value], ...]) read whole (replay.c):
 * its parts in order, each path NUL-terminated and owned, each value a
 * reference owned (a taker sets it NULL). */
typedef struct hearth__record_part {
    char *path;
    hearth_node_t *value;
} hearth__record_part;

typedef struct hearth__record {
    hearth__record_part *v;
    size_t n, cap;
    /* Its meta (records.h), when it has one: */
    bool has_meta;
    int64_t time_ms;
    uint64_t seq;
    char *identity; /* owned; NULL: none */
} hearth__record;

/* Reads payload into *rec (zeroed by the caller); HEARTH_EIO when it does
 * not parse, HEARTH_ENOMEM. Free *rec with hearth__record_free either
 * way. */
int hearth__store_read_record(const char *payload, size_t len,
                              hearth__record *rec);
void hearth__record_free(hearth__record *rec);

/* Applies one log record's payload ([[path, value], ...]) to *root
 * (replay.c); HEARTH_EIO when it does not parse (*root unchanged) or does
 * not apply. */
int hearth__store_apply_record(const char *payload, size_t len,
                               hearth_node_t **root);
/* The same, telling where the namespace's write sequence stands after it
 * (*seq: the record's "s", else one more than before for a write of
 * earlier versions; a mark leaves it at its "s"). */
int hearth__store_apply_record_seq(const char *payload, size_t len,
                                   hearth_node_t **root, uint64_t *seq);

/* What recovery found. */
typedef struct hearth__recovery {
    uint64_t append_gen; /* the log appends go to */
    bool append_exists;  /* it exists, is version 2, ends at append_len */
    uint64_t append_len;
    /* With find_damage: the first damaged log and its first bad record
     * (the end of its intact records), instead of an error. */
    bool damaged;
    uint64_t damaged_gen;
    uint64_t damaged_at; /* its first bad record */
    uint64_t intact_len; /* the whole commits before it (where to cut) */
} hearth__recovery;

/* Loads the newest snapshot into *root and replays the logs after it;
 * the caller holds the lock. A gap in the sequence of snapshots and logs
 * is an error naming what is missing; damage is an error naming the file
 * and offset (or, with find_damage, is reported in rec and the data
 * recovered up to it). Without find_damage, stale snapshot .tmp files
 * are removed and a torn tail is cut (reported); with it, nothing on disk
 * changes. */
int hearth__store_recover(const char *dir, bool find_damage,
                          hearth_node_t **root, hearth__store_report *report,
                          hearth__recovery *rec, hearth_error_t *err);

#endif
