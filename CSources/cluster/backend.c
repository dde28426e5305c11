/* backend.c - the cluster backend: the embedded engine (db/embedded.h)
 * whose commits go to the namespace's log first. On the leader a write is
 * applied at once (its events raised before the ok, as on one node) and
 * acknowledged once its group's record is in the log and in the local
 * log; elsewhere it is forwarded (cluster/forward.c). Records that came
 * from the log are committed locally but never appended again (the
 * commits' hooks: cluster/commit.c). This file routes each write (ordered
 * here, held while leadership settles, or forwarded), and opens and
 * closes namespaces. */
#include "cluster/node.h"

#include <stdio.h>
#include <string.h>

hearth__cluster_ns *hearth__cluster_ns_of(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    return e->replica_ctx;
}

hearth__cluster_ns *hearth__cluster_find(hearth__cluster *c, const char *name) {
    return hearth__map_get_str(&c->names, name);
}

#define EMBEDDED hearth__db_embedded

/* ---- writes ---- */

/* Whether this node may order a write now: it leads, and no record of
 * the log waits in the store to be committed without being appended. */
static bool may_order(hearth_db_t *db, hearth__cluster_ns *n) {
    if (!hearth__cluster_lead_settled(n))
        return false;
    hearth__embedded *e = db->impl;
    if (hearth__cluster_log_buffered(n) && !e->committing)
        hearth__commit_flush(db);
    return !hearth__cluster_log_buffered(n);
}

static void hold(hearth__cluster_ns *n, hearth__db_op *o) {
    hearth__list_push_back(&n->hold.held, &o->link);
}

static bool cluster_write(hearth_db_t *db, hearth__db_op *o) {
    hearth__cluster_ns *n = hearth__cluster_ns_of(db);
    if (!hearth__cluster_leads(n)) {
        hearth__cluster_forward(n, o);
        return true;
    }
    if (!may_order(db, n)) {
        hold(n, o);
        return true;
    }
    bool kept = EMBEDDED.write(db, o);
    hearth__cluster_own_written(n, kept); /* applied ahead of the log */
    return kept;
}

/* On the leader a function's transaction runs as on one node (held while
 * leadership settles, as writes are); elsewhere it runs here and goes to
 * the leader as a compare-and-set (cluster/transaction.c). */
static bool cluster_transaction(hearth_db_t *db, hearth__db_op *o) {
    hearth__cluster_ns *n = hearth__cluster_ns_of(db);
    if (!hearth__cluster_leads(n))
        return hearth__cluster_transaction_forward(n, o);
    if (!may_order(db, n)) {
        hold(n, o);
        return true;
    }
    bool kept = EMBEDDED.transaction(db, o);
    hearth__cluster_own_written(n, kept);
    return kept;
}

bool hearth__cluster_holding(const hearth__cluster_ns *n) {
    return !hearth__list_empty(&n->hold.held);
}

void hearth__cluster_release_held(hearth__cluster_ns *n) {
    hearth__list held = {0};
    hearth__list_splice_back(&held, &n->hold.held);
    for (hearth__list *l; (l = hearth__list_pop_front(&held));) {
        hearth__db_op *o = HEARTH__LIST_ITEM(l, hearth__db_op, link);
        bool kept = o->kind == OP_TRANSACTION ? cluster_transaction(n->db, o)
                                              : cluster_write(n->db, o);
        if (!kept)
            hearth__db_op_done(o);
    }
    n->db->backend->settle(n->db, false);
}

/* ---- the rest is the embedded engine's ---- */

static int cluster_create(hearth_db_t *db, const hearth_db_config_t *config,
                          hearth_error_t *err) {
    return EMBEDDED.create(db, config, err);
}
static int cluster_start(hearth_db_t *db) { return EMBEDDED.start(db); }
static bool cluster_get(hearth_db_t *db, hearth__db_op *o) {
    return EMBEDDED.get(db, o);
}
static void cluster_observe(hearth_db_t *db, hearth__db_op *o) {
    EMBEDDED.observe(db, o);
}
static int cluster_get_now(hearth_db_t *db, const hearth__path *path,
                           const hearth_query_t *q, hearth_node_t **out,
                           hearth_error_t *err) {
    return EMBEDDED.get_now(db, path, q, out, err);
}
static hearth__listeners *cluster_listeners(hearth_db_t *db) {
    return EMBEDDED.listeners(db);
}
static void cluster_unlink(hearth_db_t *db, hearth__reg *reg) {
    EMBEDDED.unlink(db, reg);
}
static void cluster_settle(hearth_db_t *db, bool may_wait) {
    EMBEDDED.settle(db, may_wait);
}

static bool cluster_quiet(hearth_db_t *db) {
    hearth__cluster_ns *n = hearth__cluster_ns_of(db);
    return EMBEDDED.quiet(db) && hearth__list_empty(&n->hold.held) &&
           hearth__cluster_forward_idle(n) && !hearth__cluster_log_buffered(n);
}

/* The namespace leaves the cluster: no more forwarded writes served, no
 * more records tailed, its lease left to expire. */
static void leave(hearth__cluster_ns *n) {
    hearth__cluster *c = n->c;
    hearth__list_remove(&n->link);
    if (hearth__map_get_str(&c->names, n->name) == n)
        hearth__map_remove_str(&c->names, n->name);
    hearth__cluster_step_down(n);
    hearth__cluster_snapshot_stop(n);
    hearth__cluster_tail_stop(n);
    hearth__cluster_forward_cancel(n, HEARTH_ECANCELED);
    hearth__list held = {0};
    hearth__list_splice_back(&held, &n->hold.held);
    for (hearth__list *l; (l = hearth__list_pop_front(&held));)
        hearth__db_op_cancel(HEARTH__LIST_ITEM(l, hearth__db_op, link));
    hearth__cluster_tail_clear(n);
}

static void cluster_stop(hearth_db_t *db) {
    hearth__cluster_ns *n = hearth__cluster_ns_of(db);
    leave(n);
    EMBEDDED.stop(db);
}

static int cluster_close(hearth_db_t *db) {
    hearth__cluster_ns *n = hearth__cluster_ns_of(db);
    leave(n);
    return EMBEDDED.close(db);
}

static void cluster_free(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    hearth__cluster_ns *n = e ? e->replica_ctx : NULL;
    EMBEDDED.free(db);
    if (n) {
        hearth__cluster *c = n->c;
        hearth__cluster_triggers_ns_free(n);
        hearth__cluster_log_free(n);
        hearth__free(n->name);
        hearth__free(n);
        hearth__cluster_space_freed(c);
    }
}

const hearth__db_backend hearth__db_cluster = {
    .name = "cluster",
    .embedded_impl = true,
    .client = false,
    .create = cluster_create,
    .start = cluster_start,
    .write = cluster_write,
    .transaction = cluster_transaction,
    .get = cluster_get,
    .observe = cluster_observe,
    .client_op = NULL,
    .get_now = cluster_get_now,
    .offline_error = NULL,
    .listeners = cluster_listeners,
    .unlink = cluster_unlink,
    .settle = cluster_settle,
    .quiet = cluster_quiet,
    .unavailable = hearth__cluster_db_unavailable,
    .stop = cluster_stop,
    .close = cluster_close,
    .free = cluster_free,
};

/* ---- opening ---- */

/* A node with nothing of the namespace, or behind what the log still
 * holds, loads a peer's snapshot: its log sequence (0: none loaded). */
static uint64_t join(hearth__cluster_ns *n, const char *dir) {
    uint64_t seq = hearth__cluster_seq_read(n);
    uint64_t floor = hearth__cluster_retained(n->c, n->name);
    if (seq && seq + 1 >= floor)
        return 0; /* the log holds all it needs */
    uint64_t joined = hearth__cluster_snapshot_join(n->c, n->name, dir);
    if (joined < seq)
        return 0;
    if (joined + 1 < floor && floor != UINT64_MAX)
        hearth__log(HEARTH_LOG_WARNING, "cluster: %s: the log below %llu is purged "
                "and no peer had a snapshot: records are missing here",
                n->name, (unsigned long long)floor);
    return joined;
}

int hearth__cluster_open(hearth__cluster *c, const char *name,
                         const hearth_db_config_t *config, hearth_db_t **out,
                         hearth_error_t *err) {
    if (!config->data_dir || !config->loop)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "cluster: a namespace needs a loop and a data "
                             "directory");
    hearth__cluster_ns *n = hearth__calloc(1, sizeof *n);
    if (!n || !(n->name = hearth__strndup(name, strlen(name)))) {
        hearth__free(n);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    n->c = c;
    int rc = hearth__cluster_log_open(n, config->data_dir, err);
    uint64_t joined = !rc ? join(n, config->data_dir) : 0;
    /* The local log is fsynced before every ok (see the durability note
     * in README's Cluster section). */
    hearth_db_config_t local = *config;
    local.fsync_mode = HEARTH_FSYNC_ALWAYS;
    if (!rc)
        rc = hearth__db_open_backend(&hearth__db_cluster, &local, &n->db, err);
    if (rc) {
        hearth__cluster_log_free(n);
        hearth__free(n->name);
        hearth__free(n);
        return rc;
    }
    hearth__embedded *e = n->db->impl;
    e->replica = &hearth__cluster_replica;
    e->replica_ctx = n;
    hearth__cluster_space_opened(c);
    hearth__cluster_log_begin(n, joined);
    rc = hearth__map_put_str(&c->names, n->name, n);
    if (rc) {
        hearth__error_code(err, rc);
    } else {
        hearth__list_push_front(&c->spaces, &n->link);
        /* A consumer JetStream cannot make now (electing its leaders, or
         * refusing while it tidies a dead node's consumers) is made again
         * by the tail's watchdog, on a worker: the namespace opens. */
        hearth_error_t tail_err;
        if (hearth__cluster_tail_start(n, &tail_err))
            hearth__log(HEARTH_LOG_WARNING, "%s; tried again in %d ms",
                        tail_err.message, HEARTH__CLUSTER_TAIL_RETRY_MS);
        n->tail.retry_at = uv_now(c->loop) + HEARTH__CLUSTER_TAIL_RETRY_MS;
    }
    if (!rc)
        rc = hearth__cluster_snapshot_serve(n);
    if (rc) {
        hearth_db_close(n->db); /* frees n */
        return rc;
    }
    *out = n->db;
    return 0;
}
