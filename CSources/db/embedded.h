/* embedded.h - the state of the embedded backend (db/backend_embedded.c):
 * the tree in this process, its listeners and rules, and the durable
 * store with group commit (db/commit.c). Internal to db/. */
#ifndef HEARTH_DB_EMBEDDED_H
#define HEARTH_DB_EMBEDDED_H

#include "db/db.h"
#include "db/handle.h"
#include "rules/ruleset.h"

/* A replicated log under the store (the cluster backend): each commit's
 * records are sent to the log, written and synced locally while the log
 * answers, and the commit fails (every write since the last good one
 * undone, the local log cut back) if the log refuses them. Each entry
 * gets the ctx of hearth__embedded.replica_ctx. */
typedef struct hearth__db_replica {
    /* Loop thread, as a commit takes the records buffered since the last:
     * whether this one goes to the log (false: records that came from it,
     * which the log keeps: the local log syncs them at most once a second,
     * as --fsync batch does). */
    bool (*begin)(void *ctx);
    /* The commit's worker thread (or the loop, for a flush): sends the
     * records to the log; 0, or why not (nothing is then written). */
    int (*publish)(void *ctx, const hearth__records *records);
    /* The same thread, after the local write: waits for the log's answer
     * to what publish sent; 0 once it holds the records. */
    int (*published)(void *ctx);
    /* Loop thread, with the commit's outcome (and whether the local log
     * synced it, and all before it), before its writes are acknowledged. */
    void (*end)(void *ctx, int rc, bool synced);
    /* Loop thread: a failed commit has put the tree back to the last good
     * one (durable_root), undoing every write applied since, records of
     * the log included; the replica's place in the log must follow. */
    void (*reverted)(void *ctx);
} hearth__db_replica;

typedef struct hearth__embedded {
    hearth_node_t *root;
    hearth__listeners listeners;
    /* with rules: every call is judged as `auth` */
    hearth__ruleset *rules;
    hearth_node_t *auth;
    /* the owner's judge of hearth__db_*_as writes (the server's rules) */
    hearth__db_judge_fn judge;
    void *judge_ctx;

    /* durable store (NULL in memory) */
    hearth__store *store;
    char *store_later; /* in memory until a write: then a store here */
    int store_later_fsync;
    int64_t retain_ms; /* the store's retention (hearth__db_set_retention) */
    hearth__list unacked; /* applied, waiting for the commit (ops, by link) */
    /* The root as of the last good commit: a failed commit reverts to it,
     * undoing every write not yet committed. */
    hearth_node_t *durable_root;
    hearth_node_t *batch_root; /* what the commit in flight makes durable */
    bool flushing;
    bool group_commit; /* loop-thread writes commit once per iteration */
    uv_idle_t commit_idle;
    /* group commit: one batch written and synced on a worker thread while
     * the loop goes on; the writes applied meanwhile form the next one */
    bool committing;
    /* what a sync has cost lately (db/commit.c, sync_estimate): a batch
     * that syncs stays on the loop while this is small */
    uint64_t sync_estimate_ns;
    uv_work_t commit_work;
    hearth__store_batch batch;
    hearth__list inflight; /* the batch's ops, by link */
    bool snapshotting;
    uv_work_t snapshot_work;
    hearth_node_t *snapshot_root;
    uint64_t snapshot_gen;
    int snapshot_rc;
    int last_snapshot_rc;
    /* a replicated log's hooks, or NULL */
    const hearth__db_replica *replica;
    void *replica_ctx;
    /* the owner's view of committed writes (db.h), or NULL */
    const hearth__db_tap *tap;
    void *tap_ctx;
    void (*tap_ctx_free)(void *ctx);
} hearth__embedded;

/* The embedded state of db, or NULL for another backend. */
hearth__embedded *hearth__embedded_of(hearth_db_t *db);

/* Queues the events of every view the written paths touch, going from
 * old_root to the current root. */
int hearth__embedded_generate(hearth_db_t *db, const hearth_node_t *old_root,
                              const hearth__path *const *paths, size_t n);

/* ---- db/commit.c: acknowledgements after the commit ---- */

/* A durable write is acknowledged after its commit: keeps o (true), or
 * false to acknowledge it at once (in memory, or failed). */
bool hearth__commit_defer_ack(hearth_db_t *db, hearth__db_op *o, int status);
/* Commits the writes applied since the last commit (one fsync for all),
 * then acknowledges them, all before returning. */
void hearth__commit_flush(hearth_db_t *db);
/* After a batch of operations: commit now, or (group commit, may_wait)
 * once this loop iteration's I/O callbacks have run. */
void hearth__commit_settle(hearth_db_t *db, bool may_wait);
/* Whether no write waits and no commit or snapshot runs. */
bool hearth__commit_quiet(hearth_db_t *db);
/* A batch that syncs is committed on the loop while syncs have lately
 * cost less than this, on a worker thread otherwise. 0.2 ms keeps the
 * loop's answers prompt, and holds a fast NVMe's or a virtual disk's
 * syncs (tens of microseconds); flash without power-loss protection
 * (milliseconds) and spinning disks sync on the worker. */
#define HEARTH__SYNC_ON_LOOP_NS (200u * 1000u)

#endif
