/* backend.c - the cluster backend: the embedded engine (db/embedded.h)
 * whose commits go to the namespace's log first. On the leader a write is
 * applied at once (its events raised before the ok, as on one node) and
 * acknowledged once its group's record is in the log and in the local
 * log; elsewhere it is forwarded (cluster/forward.c). Records that came
 * from the log are committed locally but never appended again. */
#include "cluster/internal.h"
#include "cluster/sealing.h"

#include "store/logfile.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

hearth__cluster_ns *hearth__cluster_ns_of(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    return e->replica_ctx;
}

#define EMBEDDED hearth__db_embedded

/* ---- the replica hooks (db/commit.c) ---- */

static bool replica_begin(void *ctx) {
    hearth__cluster_ns *n = ctx;
    /* Records from the log and this node's own writes never share a
     * commit (writes wait while the log's are uncommitted). */
    n->batch_published = n->own_writes > 0;
    n->batch_seq = 0;
    n->batch_jerr = 0;
    n->batch_applied = n->applied_seq;
    n->log_writes = n->own_writes = 0;
    return n->batch_published;
}

/* Worker thread: the records in the local log's bytes, sent to the log
 * fenced by the sequence of the subject's last record this node's tree
 * holds; the local log writes them while the stream answers. */
static int replica_publish(void *ctx, const hearth__records *records) {
    hearth__cluster_ns *n = ctx;
    if (!n->batch_published)
        return 0;
    hearth__buf bytes;
    hearth__buf_init(&bytes);
    /* room for the seal's header: the group is sealed where it lies */
    static const char room[HEARTH__SEAL_HEADER];
    hearth__buf_add(&bytes, room, hearth__cluster_seal_room(n->c));
    hearth__buf_add(&bytes, HEARTH__LOG_HEADER, HEARTH__LOG_HEADER_LEN);
    int rc = hearth__records_write(records, &bytes);
    if (!rc && bytes.failed)
        rc = HEARTH_ENOMEM;
    if (!rc)
        rc = hearth__cluster_append_start(n, &bytes, n->batch_applied);
    hearth__buf_free(&bytes);
    return rc;
}

/* Worker thread: the stream's answer to what replica_publish sent. */
static int replica_published(void *ctx) {
    hearth__cluster_ns *n = ctx;
    if (n->batch_published && n->c->append_delay_ms)
        uv_sleep(n->c->append_delay_ms);
    return n->batch_published ? hearth__cluster_append_wait(n) : 0;
}

static void replica_end(void *ctx, int rc, bool synced) {
    hearth__cluster_ns *n = ctx;
    if (!rc && n->batch_published) {
        /* Nothing of the log applied while this commit was in flight
         * (hearth__cluster_tree_exact): the tree is the log up to the
         * fence, and now up to this record. */
        if (n->applied_seq != n->batch_applied)
            hearth__log(HEARTH_LOG_WARNING, "cluster: %s: records applied during "
                    "an append (%llu, fence %llu)", n->name,
                    (unsigned long long)n->applied_seq,
                    (unsigned long long)n->batch_applied);
        n->applied_seq = n->committed_seq = n->batch_seq;
        n->durable_seq = n->batch_seq;
    } else if (!rc) {
        n->committed_seq = n->batch_applied;
        /* Records from the log count once synced (seq_file never runs
         * ahead of the disk: a restart replays from there). */
        if (synced)
            n->durable_seq = n->batch_applied;
    }
    if (!rc) {
        hearth__cluster_tail_settled(n);
        hearth__cluster_seq_write(n);
    }
    if (n->records) /* waiting for this commit: apply them now */
        uv_async_send(&n->c->wake);
    if (rc && n->batch_published) {
        hearth__log(HEARTH_LOG_WARNING, "cluster: %s: append refused (%s%s); "
                "catching up from the log", n->name, hearth_strerror(rc),
                n->batch_jerr == 10071 ? ", a newer record is there" : "");
        if (n->batch_seq == 0)
            hearth__cluster_step_down(n);
    }
}

/* Loop: a failed commit undid every write since the last good one, the
 * records of the log among them: they apply again from there. */
static void replica_reverted(void *ctx) {
    hearth__cluster_ns *n = ctx;
    n->own_writes = n->log_writes = 0; /* all undone */
    hearth__cluster_tail_rewind(n);
    if (n->records)
        uv_async_send(&n->c->wake);
}

static const hearth__db_replica replica = {
    .begin = replica_begin,
    .publish = replica_publish,
    .published = replica_published,
    .end = replica_end,
    .reverted = replica_reverted,
};

void hearth__cluster_set_append_delay(hearth__cluster *c, unsigned ms) {
    c->append_delay_ms = ms;
}

/* ---- writes ---- */

/* Whether this node may order a write now: it leads, and no record of
 * the log waits in the store to be committed without being appended. */
static bool may_order(hearth_db_t *db, hearth__cluster_ns *n) {
    if (!n->leader || n->applied_seq < n->lead_from)
        return false;
    hearth__embedded *e = db->impl;
    if (n->log_writes && !e->committing)
        hearth__commit_flush(db);
    return n->log_writes == 0;
}

static void hold(hearth__cluster_ns *n, hearth__db_op *o) {
    o->next = NULL;
    if (n->held_tail)
        n->held_tail->next = o;
    else
        n->held = o;
    n->held_tail = o;
}

static bool cluster_write(hearth_db_t *db, hearth__db_op *o) {
    hearth__cluster_ns *n = hearth__cluster_ns_of(db);
    if (!n->leader) {
        hearth__cluster_forward(n, o);
        return true;
    }
    if (!may_order(db, n)) {
        hold(n, o);
        return true;
    }
    bool kept = EMBEDDED.write(db, o);
    n->own_writes += kept; /* applied ahead of the log */
    return kept;
}

/* On the leader a function's transaction runs as on one node (held while
 * leadership settles, as writes are); elsewhere it runs here and goes to
 * the leader as a compare-and-set (cluster/transaction.c). */
static bool cluster_transaction(hearth_db_t *db, hearth__db_op *o) {
    hearth__cluster_ns *n = hearth__cluster_ns_of(db);
    if (!n->leader)
        return hearth__cluster_transaction_forward(n, o);
    if (!may_order(db, n)) {
        hold(n, o);
        return true;
    }
    bool kept = EMBEDDED.transaction(db, o);
    n->own_writes += kept;
    return kept;
}

void hearth__cluster_release_held(hearth__cluster_ns *n) {
    hearth__db_op *o = n->held;
    n->held = n->held_tail = NULL;
    while (o) {
        hearth__db_op *next = o->next;
        o->next = NULL;
        bool kept = o->kind == OP_TRANSACTION ? cluster_transaction(n->db, o)
                                              : cluster_write(n->db, o);
        if (!kept)
            hearth__db_op_done(o);
        o = next;
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
    return EMBEDDED.quiet(db) && !n->held && !n->waiting &&
           !n->forwarding && !n->log_writes;
}

/* The namespace leaves the cluster: no more forwarded writes served, no
 * more records tailed, its lease left to expire. */
static void leave(hearth__cluster_ns *n) {
    hearth__cluster *c = n->c;
    for (hearth__cluster_ns **p = &c->spaces; *p; p = &(*p)->next)
        if (*p == n) {
            *p = n->next;
            break;
        }
    hearth__cluster_step_down(n);
    hearth__cluster_snapshot_stop(n);
    hearth__cluster_unsubscribe(c, &n->tail_sub);
    hearth__cluster_forward_cancel(n, HEARTH_ECANCELED);
    hearth__db_op *o = n->held;
    n->held = n->held_tail = NULL;
    while (o) {
        hearth__db_op *next = o->next;
        hearth__db_op_cancel(o);
        o = next;
    }
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
        if (n->seq_fd > 0)
            close(n->seq_fd);
        jsCtx_Destroy(n->js);
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

/* n's own JetStream context, whose ack handler ends its appends. */
static int jetstream(hearth__cluster_ns *n, hearth_error_t *err) {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = HEARTH__CLUSTER_WAIT_MS;
    jo.PublishAsync.AckHandler = hearth__cluster_on_ack;
    jo.PublishAsync.AckHandlerClosure = n;
    natsStatus s = natsConnection_JetStream(&n->js, n->c->nc, &jo);
    return s == NATS_OK ? 0 : hearth__error(err, hearth__cluster_error(s), NULL,
                                            "cluster: cannot open JetStream");
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
    hearth__buf_init(&n->chain);
    snprintf(n->seq_file, sizeof n->seq_file, "%s/cluster.seq",
             config->data_dir);
    int rc = hearth__cluster_stream(c, n, err);
    if (!rc)
        rc = jetstream(n, err);
    if (!rc)
        hearth__cluster_trust_stream(n, config->data_dir);
    uint64_t joined = !rc ? join(n, config->data_dir) : 0;
    /* The local log is fsynced before every ok (see the durability note
     * in README's Cluster section). */
    hearth_db_config_t local = *config;
    local.fsync_mode = HEARTH_FSYNC_ALWAYS;
    if (!rc)
        rc = hearth__db_open_backend(&hearth__db_cluster, &local, &n->db, err);
    if (rc) {
        jsCtx_Destroy(n->js);
        hearth__free(n->name);
        hearth__free(n);
        return rc;
    }
    hearth__embedded *e = n->db->impl;
    e->replica = &replica;
    e->replica_ctx = n;
    c->open_spaces++;
    n->applied_seq = n->durable_seq = n->stored_seq =
        hearth__cluster_seq_read(n);
    if (joined) {
        n->applied_seq = n->durable_seq = joined;
        hearth__cluster_seq_write(n);
    }
    n->committed_seq = n->applied_seq;
    n->next = c->spaces;
    c->spaces = n;
    rc = hearth__cluster_tail_start(n, err);
    if (!rc)
        rc = hearth__cluster_snapshot_serve(n);
    if (rc) {
        hearth_db_close(n->db); /* frees n */
        return rc;
    }
    *out = n->db;
    return 0;
}
