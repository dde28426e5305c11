/*
 * history.h - a walk through a namespace's history, record by record, in
 * log order (history.c): the tree rebuilt as of a moment, or the changes
 * listed. A data directory's snapshots and logs feed it
 * (hearth__store_state_at, hearth_log_changes), and so does a cluster's
 * stream (cluster/history.c), so both answer alike. One thread at a time.
 */
#ifndef HEARTH_STORE_HISTORY_H
#define HEARTH_STORE_HISTORY_H

#include "store/files.h"

typedef struct hearth__history {
    int64_t at_ms;   /* replay writes at or before (INT64_MAX: all) */
    uint64_t at_seq; /* ... and with a sequence at most this */
    hearth_node_t *root; /* the tree being rebuilt (owned), or NULL: listing */
    bool stopped;        /* past the target: nothing more applies */
    uint64_t seq;        /* the sequence reached */
    int64_t oldest_ms;   /* the oldest moment the start knows (0: none) */
    uint64_t oldest_seq;
    bool oldest_known;
    hearth_change_cb cb; /* listing */
    void *ctx;
    const char *path; /* listing: changes at, above or below it (NULL: all) */
    size_t path_len;
    int64_t since_ms, until_ms;
    int cb_rc;
} hearth__history;

/* A walk rebuilding the tree as of at_ms / at_seq (0: unbounded), from
 * an empty tree (the caller may replace root with its start's, noting
 * that start with hearth__history_start). HEARTH_ENOMEM. */
int hearth__history_rebuild(hearth__history *h, int64_t at_ms,
                            uint64_t at_seq);
/* A walk listing, through cb, the changes touching path (NULL: all) made
 * within [since_ms, until_ms] (0: unbounded). */
void hearth__history_listing(hearth__history *h, const char *path,
                             int64_t since_ms, int64_t until_ms,
                             hearth_change_cb cb, void *ctx);
/* The walk begins at seq, the state at time_ms (INT64_MIN: the very
 * beginning, nothing before it): the oldest moment it can answer. */
void hearth__history_start(hearth__history *h, uint64_t seq, int64_t time_ms);
/* One record's payload (records.h), applied (rebuilding) or listed. seq
 * 0: the record's own sequence (a data directory's logs; a mark notes
 * where its snapshot stands); else the sequence the record goes by (a
 * cluster's: its message's in the stream), marks passed over.
 * HEARTH_EIO when it does not read. */
int hearth__history_take(hearth__history *h, const char *payload, size_t len,
                         uint64_t seq);
/* The walk's end (where: what the errors name): the tree (*out, a new
 * reference; NULL when listing), or HEARTH_ENOTFOUND when the moment is
 * older than the start or the sequence not written yet; the walk's
 * references are dropped either way. */
int hearth__history_finish(hearth__history *h, const char *where,
                           hearth_node_t **out, hearth_error_t *err);

#endif
