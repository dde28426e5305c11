/* commit.c - the embedded backend's durability: writes applied in memory
 * are acknowledged only once their commit is on disk, one fsync for a
 * batch (group commit, on a worker thread while the loop goes on when
 * the batch must wait for the disk); a failed commit undoes them; the log is snapshotted on a worker thread as
 * it grows. */
#include "db/embedded.h"

bool hearth__commit_defer_ack(hearth_db_t *db, hearth__db_op *o, int status) {
    hearth__embedded *e = db->impl;
    if (!e->store || status)
        return false;
    hearth__list_push_back(&e->unacked, &o->link);
    return true;
}

/* ---- snapshots ---- */

static void snapshot_work(uv_work_t *req) {
    hearth_db_t *db = req->data;
    hearth__embedded *e = db->impl;
    e->snapshot_rc = hearth__store_write_snapshot_retaining(
        hearth__store_dir(e->store), e->snapshot_gen, e->snapshot_root,
        hearth__store_retention(e->store));
}

static void snapshot_done(uv_work_t *req, int status) {
    hearth_db_t *db = req->data;
    hearth__embedded *e = db->impl;
    hearth_node_decref(e->snapshot_root);
    e->snapshot_root = NULL;
    e->snapshotting = false;
    e->last_snapshot_rc = status ? HEARTH_ECANCELED : e->snapshot_rc;
    if (db->close_waits)
        hearth__db_release(db);
}

/* Snapshots the root on a worker thread once the log has grown enough:
 * the root is immutable, so the loop goes on meanwhile. */
static void maybe_snapshot(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    if (e->snapshotting || e->committing || db->closed ||
        !hearth__store_wants_snapshot(e->store))
        return;
    uint64_t gen;
    if (hearth__store_rotate(e->store, &gen))
        return; /* the next commit reports the disk's refusal */
    e->snapshot_gen = gen;
    e->snapshot_root = hearth_node_incref(e->root);
    e->snapshot_work.data = db;
    if (uv_queue_work(db->loop, &e->snapshot_work, snapshot_work,
                      snapshot_done) == 0) {
        e->snapshotting = true;
    } else {
        hearth_node_decref(e->snapshot_root);
        e->snapshot_root = NULL;
    }
}

/* ---- commits ---- */

/* Acknowledges a list of applied writes with the outcome of their commit,
 * first to last; the list ends empty. */
static void ack_ops(hearth__list *list, int rc) {
    for (hearth__list *n; (n = hearth__list_pop_front(list));) {
        hearth__db_op *o = HEARTH__LIST_ITEM(n, hearth__db_op, link);
        if (o->kind == OP_TRANSACTION)
            o->u.tx.done(rc, rc == 0, o->u.tx.snapshot, o->ctx);
        else if (o->done)
            o->done(rc, o->ctx);
        hearth__db_op_done(o);
    }
}

/* A failed commit changed nothing on disk: every write since the last
 * good one is undone in memory too, and listeners see the data as it is. */
static void revert(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    hearth__path everywhere = {0};
    const hearth__path *paths[] = {&everywhere};
    hearth_node_t *old_root = e->root;
    e->root = hearth_node_incref(e->durable_root);
    if (e->replica)
        e->replica->reverted(e->replica_ctx);
    if (hearth__embedded_generate(db, old_root, paths, 1))
        hearth__events_clear(&db->events);
    hearth_node_decref(old_root);
    hearth__db_raise(db);
}

/* Records a commit's outcome: root is durable, or everything after the
 * last durable root is undone. Takes the reference to root. */
static void commit_outcome(hearth_db_t *db, hearth_node_t *root, int rc) {
    hearth__embedded *e = db->impl;
    if (e->tap) /* before the acknowledgements: the owner's record first */
        e->tap->settled(e->tap_ctx, rc);
    if (rc) {
        hearth_node_decref(root);
        revert(db);
    } else {
        hearth_node_decref(e->durable_root);
        e->durable_root = root;
    }
}

/* The commit's steps that may run on a worker thread. With a replicated
 * log, its append is in flight while the local log writes and syncs (the
 * two waits overlap); a refused append takes the local records back out,
 * so the local log never holds what the replicated one does not. */
static void commit_write(hearth__embedded *e, hearth__store_batch *batch) {
    if (!e->replica) {
        hearth__store_commit_write(e->store, batch);
        if (!batch->rc && e->tap) /* the owner's records, as durable */
            e->tap->durable(e->tap_ctx, batch->sync);
        return;
    }
    batch->rc = e->replica->publish(e->replica_ctx, &batch->records);
    if (batch->rc)
        return;
    hearth__store_commit_write(e->store, batch);
    int rc = e->replica->published(e->replica_ctx);
    if (rc && !batch->rc)
        hearth__store_commit_undo(e->store, batch, rc);
}

static int commit_begin(hearth__embedded *e, hearth__store_batch *batch) {
    if (e->replica && !e->replica->begin(e->replica_ctx))
        hearth__store_relax_next(e->store);
    int rc = hearth__store_commit_begin(e->store, batch);
    if (!rc && e->tap)
        e->tap->sealed(e->tap_ctx);
    return rc;
}

/* The next estimate of a sync's cost: a slower sync counts at once, a
 * faster one an eighth, so that one slow sync moves the next batches off
 * the loop and only a run of fast ones brings them back (after a 10 ms
 * sync, some thirty of 80 us). */
static uint64_t sync_estimate(uint64_t estimate, uint64_t sync_ns) {
    return sync_ns >= estimate ? sync_ns : estimate - (estimate - sync_ns) / 8;
}

static int commit_end(hearth__embedded *e, hearth__store_batch *batch) {
    if (batch->sync_ns)
        e->sync_estimate_ns =
            sync_estimate(e->sync_estimate_ns, batch->sync_ns);
    int rc = hearth__store_commit_end(e->store, batch);
    if (e->replica)
        e->replica->end(e->replica_ctx, rc, batch->sync);
    return rc;
}

/* One commit on the loop thread. */
static int commit_here(hearth__embedded *e) {
    hearth__store_batch batch;
    int rc = commit_begin(e, &batch);
    if (rc)
        return rc;
    commit_write(e, &batch);
    return commit_end(e, &batch);
}

void hearth__commit_flush(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    /* Writes made by completions join the list and are acknowledged by the
     * outer call, after the ones before them. A commit on the worker
     * thread owns the log until it ends; it picks up what waits here. */
    if (!e->store || e->flushing || e->committing)
        return;
    e->flushing = true;
    while (!hearth__list_empty(&e->unacked)) {
        hearth_node_t *committed = hearth_node_incref(e->root);
        int rc = commit_here(e);
        hearth__list o = {0};
        hearth__list_splice_back(&o, &e->unacked);
        commit_outcome(db, committed, rc);
        ack_ops(&o, rc);
    }
    e->flushing = false;
    maybe_snapshot(db);
}

static void start_commit(hearth_db_t *db);

/* Ends the commit in flight (on the loop): its outcome recorded, its
 * writes acknowledged. False once the database closed meanwhile (it may
 * be gone: nothing more may touch it). */
static bool end_commit(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    int rc = commit_end(e, &e->batch);
    hearth__list o = {0}, later = {0};
    hearth__list_splice_back(&o, &e->inflight);
    e->committing = false;
    /* Closed before this commit ended: the close waits for it. A close
     * made by one of the completions below found no commit running and
     * does not (the server closes its databases once every answer is in,
     * which may be now). */
    bool awaited = db->closed;
    if (rc) /* the writes applied since were built on the failed ones */
        hearth__list_splice_back(&later, &e->unacked);
    commit_outcome(db, e->batch_root, rc);
    e->batch_root = NULL;
    ack_ops(&o, rc);
    ack_ops(&later, rc);
    if (awaited) {
        hearth__commit_flush(db); /* the rest, now, before the store closes */
        hearth__db_release(db);
        return false;
    }
    return !db->closed;
}

static void commit_work(uv_work_t *req) {
    hearth_db_t *db = req->data;
    hearth__embedded *e = db->impl;
    commit_write(e, &e->batch);
}

static void commit_done(uv_work_t *req, int status) {
    (void)status; /* never canceled */
    if (end_commit(req->data))
        start_commit(req->data);
}

/* Whether a batch waits on something slow enough to be worth the
 * hand-off to a worker thread and back: a replicated log's answer, or a
 * sync on a disk that has lately been slow. A write(2) alone costs the
 * loop microseconds. So does a sync on a fast disk: on this project's
 * 2-core machine (80 us a sync, of which 35 on the CPU) the hand-off
 * (thread switches, a futex, an async wake-up) cost more than the wait,
 * and a sync on a worker split the clients into two halves that took
 * turns (one half's batch syncing while the other's gathered): PUTs with
 * --fsync always went 1.2x faster once fast syncs stayed on the loop.
 * A sync blocks the loop at most SYNC_ON_LOOP_NS as long as the disk
 * keeps its pace; the one that does not (a stall, a slow device) sends
 * the batches after it to the worker. The first syncs of a database go
 * to the worker, as the disk is not yet known. */
static bool commit_waits(const hearth__embedded *e) {
    return e->replica ||
           (e->batch.sync && e->sync_estimate_ns >= HEARTH__SYNC_ON_LOOP_NS);
}

/* Takes the applied writes as the next batch. False if there are none or
 * the batch failed at once (its writes then acknowledged). */
static bool begin_batch(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    hearth__list o = {0};
    hearth__list_splice_back(&o, &e->unacked);
    int rc = commit_begin(e, &e->batch);
    if (rc) {
        commit_outcome(db, NULL, rc);
        ack_ops(&o, rc);
        return false;
    }
    e->batch_root = hearth_node_incref(e->root);
    hearth__list_splice_back(&e->inflight, &o);
    e->committing = true;
    return true;
}

/* Commits the applied writes unless a commit is under way (its end starts
 * the next): on a worker thread if the batch waits for the disk or the
 * log, else here; writes that the completions make form the next batch. */
static void start_commit(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    while (!e->committing && !hearth__list_empty(&e->unacked) &&
           !e->flushing && !db->closed) {
        if (!begin_batch(db))
            continue;
        e->commit_work.data = db;
        if (commit_waits(e) && uv_queue_work(db->loop, &e->commit_work,
                                             commit_work, commit_done) == 0)
            return;
        commit_write(e, &e->batch); /* here: no wait, or no worker */
        if (!end_commit(db))
            return;
    }
    maybe_snapshot(db);
}

/* Group commit for writes made on the loop thread (the server's request
 * handlers): an active idle handle makes the loop come back right after
 * this iteration's I/O callbacks, and one commit covers them all. */
static void on_commit_idle(uv_idle_t *idle) {
    uv_idle_stop(idle);
    start_commit(idle->data);
}

void hearth__commit_settle(hearth_db_t *db, bool may_wait) {
    hearth__embedded *e = db->impl;
    if (may_wait && e->group_commit && !hearth__list_empty(&e->unacked))
        uv_idle_start(&e->commit_idle, on_commit_idle);
    else
        hearth__commit_flush(db);
}

bool hearth__commit_quiet(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    return hearth__list_empty(&e->unacked) && !e->committing && !e->snapshotting &&
           !e->flushing && !uv_is_active((uv_handle_t *)&e->commit_idle);
}
