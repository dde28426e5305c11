/* db.c - the embedded database: one immutable root, the listener index,
 * and a libuv loop that applies operations in order and raises events.
 *
 * Threading: every field below `loop-owned` is touched only on the loop
 * thread. Other threads validate their arguments, then post an operation
 * to a mutex-protected queue and wake the loop with uv_async_send (which
 * coalesces). On the loop thread operations run at once, except while
 * events are being raised: then they wait in `deferred` and run right after
 * the batch, so callbacks may freely write, observe and remove observers.
 */
#include "db/db.h"
#include "events/listeners.h"
#include "rules/ruleset.h"
#include "store/store.h"
#include "tree/json.h"

#include "client/disk.h"
#include "client/remote.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

typedef enum op_kind {
    OP_WRITE,
    OP_TRANSACTION,
    OP_GET,
    OP_OBSERVE,
    OP_UNOBSERVE,
    OP_UNOBSERVE_AT,
    OP_CALL,
    OP_STOP,
    OP_ONLINE,        /* remote: go online or offline (o->status) */
    OP_ON_DISCONNECT, /* remote: o->status is the kind */
    OP_PURGE,         /* remote: cancel unacknowledged writes */
    OP_AUTH,          /* remote: the token to send (o->text, may be NULL) */
    OP_AUTH_PROVIDER, /* remote: o->auth_provider, o->ctx, o->ctx_free */
} op_kind;

/* One path written by a write operation. */
typedef struct write_part {
    char *text;
    hearth__path path; /* views into text */
    hearth_node_t *value;
} write_part;

typedef struct op {
    op_kind kind;
    struct op *next;
    write_part *parts; /* OP_WRITE: 1 (set) or more (update) */
    size_t nparts;
    char *text; /* other kinds: the path */
    hearth__path path;
    hearth_query_t *query;
    hearth__reg *reg;
    hearth_observer_t handle;
    hearth_completion_cb done;
    hearth_transaction_fn tx_fn;
    hearth_transaction_done_cb tx_done;
    void (*call_fn)(void *ctx);
    void *ctx;
    hearth_free_cb ctx_free;
    /* OP_GET: get_cb answers (hearth_db_get_async), or the caller waits on
     * `sem` (hearth_db_get from another thread). */
    hearth_get_cb get_cb;
    uv_sem_t *sem;
    hearth_node_t **get_out;
    int *get_rc;
    /* A durable write waiting for its group commit: the transaction's
     * result to report, the write's own status. */
    hearth_node_t *tx_snapshot;
    int status;
    hearth_auth_provider_cb auth_provider;
    /* OP_WRITE from hearth__db_*_as: judged by the owner's judge, as
     * `auth` (NULL: unauthenticated), when it is applied. */
    bool judged;
    hearth_node_t *auth;
} op;

struct hearth_db_s {
    uv_loop_t *loop;
    uv_loop_t own_loop;
    bool owns_loop;
    uv_thread_t thread;
    uv_thread_t loop_thread;
    uv_async_t wake;

    uv_mutex_t lock; /* guards: queue, closed, push_state */
    op *head, *tail;
    bool closed;
    hearth_push_id_state_t push_state;
    atomic_uint_fast64_t next_handle;

    /* loop-owned */
    hearth__remote *remote; /* a client of a server: data and listeners live
                               in its sync tree instead of root */
    bool client;            /* opened on a URL (set once, read anywhere) */
    /* The server's clock minus ours, from its hello: push IDs made on any
     * thread use the server's time, as the SDKs do. */
    atomic_int_fast64_t server_offset_ms;
    hearth_node_t *root;
    hearth__listeners listeners;
    hearth__event_queue events;
    int raising;       /* > 0 while callbacks run */
    op *deferred, *deferred_tail;
    /* embedded with rules: every call is judged as `auth` */
    hearth__ruleset *rules;
    hearth_node_t *auth;
    /* the owner's judge of hearth__db_*_as writes (the server's rules) */
    hearth__db_judge_fn judge;
    void *judge_ctx;
    hearth__reg **doomed; /* removed while raising: freed after */
    size_t ndoomed, doomed_cap;
    /* remote: asked for a token on every connection */
    hearth_auth_provider_cb auth_provider;
    void *auth_ctx;
    hearth_free_cb auth_ctx_free;

    /* durable store (NULL in memory), loop-owned */
    hearth__store *store;
    char *store_later;   /* in memory until a write: then a store here */
    int store_later_fsync;
    op *unacked, *unacked_tail; /* applied, waiting for the commit */
    /* The root as of the last good commit: a failed commit reverts to it,
     * undoing every write not yet committed. */
    hearth_node_t *durable_root;
    hearth_node_t *batch_root; /* what the commit in flight makes durable */
    bool flushing;
    bool group_commit;   /* loop-thread writes commit once per iteration */
    uv_idle_t commit_idle;
    /* group commit: one batch written and synced on a worker thread while
     * the loop goes on; the writes applied meanwhile form the next one */
    bool committing;
    uv_work_t commit_work;
    hearth__store_batch batch;
    op *inflight;
    bool snapshotting;
    uv_work_t snapshot_work;
    hearth_node_t *snapshot_root;
    uint64_t snapshot_gen;
    int snapshot_rc;
    int last_snapshot_rc;
    int close_waits; /* caller's loop: handles/work still to finish */
};

/* ---- operations ---- */

static op *op_new(op_kind kind) {
    op *o = hearth__calloc(1, sizeof *o);
    if (o)
        o->kind = kind;
    return o;
}

static void op_free(op *o) {
    hearth_node_decref(o->tx_snapshot);
    hearth_node_decref(o->auth);
    for (size_t i = 0; i < o->nparts; i++) {
        hearth__free(o->parts[i].text);
        hearth_node_decref(o->parts[i].value);
    }
    hearth__free(o->parts);
    hearth__free(o->text);
    hearth_query_free(o->query);
    hearth__free(o);
}

/* Hands a read's result to whoever waits for it. */
static void answer_get(op *o, int status, const hearth_node_t *value) {
    if (o->get_cb) {
        o->get_cb(status, status ? NULL : value, o->ctx);
        return;
    }
    *o->get_rc = status;
    if (!status)
        *o->get_out = hearth_node_incref(value);
    uv_sem_post(o->sem);
}

/* Ends an operation that never ran: completions learn it was canceled. */
static void op_cancel(op *o) {
    switch (o->kind) {
    case OP_WRITE:
        if (o->done)
            o->done(HEARTH_ECANCELED, o->ctx);
        break;
    case OP_TRANSACTION:
        o->tx_done(HEARTH_ECANCELED, false, hearth__node_empty(), o->ctx);
        break;
    case OP_GET:
        answer_get(o, HEARTH_ECANCELED, NULL);
        break;
    case OP_OBSERVE:
        if (o->reg->ctx_free)
            o->reg->ctx_free(o->reg->ctx);
        hearth__free(o->reg);
        o->ctx_free = NULL;
        break;
    default:
        break;
    }
    if (o->ctx_free)
        o->ctx_free(o->ctx);
    op_free(o);
}

static bool on_loop_thread(hearth_db_t *db) {
    uv_thread_t self = uv_thread_self();
    return uv_thread_equal(&self, &db->loop_thread);
}

/* ---- applying writes and raising events ---- */

static hearth__listeners *listeners_of(hearth_db_t *db) {
    return db->remote ? hearth__remote_listeners(db->remote) : &db->listeners;
}

static void unlink_reg(hearth_db_t *db, hearth__reg *reg) {
    if (db->remote)
        hearth__remote_unobserve(db->remote, reg);
    else
        hearth__listeners_remove(&db->listeners, reg);
}

static void sweep_doomed(hearth_db_t *db) {
    for (size_t i = 0; i < db->ndoomed; i++)
        unlink_reg(db, db->doomed[i]);
    db->ndoomed = 0;
}

static void raise_events(hearth_db_t *db) {
    db->raising++;
    hearth__events_raise(&db->events);
    db->raising--;
    if (!db->raising)
        sweep_doomed(db);
}

/* The data at path in root. */
static const hearth_node_t *node_at(const hearth_node_t *root,
                                    const hearth__path *p) {
    for (unsigned i = 0; i < p->n; i++)
        root = hearth__node_child(root, &p->seg[i]);
    return root;
}

/* Queues the events of every view the written paths touch. */
static int generate(hearth_db_t *db, const hearth_node_t *old_root,
                    const hearth__path *const *paths, size_t n) {
    hearth__view **views;
    size_t nviews;
    int rc = hearth__listeners_collect(&db->listeners, paths, n, &views,
                                       &nviews);
    hearth__path at;
    for (size_t i = 0; !rc && i < nviews; i++) {
        /* Rebuild the view's path from its trie node. */
        hearth__tnode *chain[HEARTH_MAX_DEPTH + 1];
        unsigned depth = 0;
        for (hearth__tnode *t = views[i]->at; t->parent; t = t->parent)
            chain[depth++] = t;
        at.n = depth;
        at.priority = at.info = false;
        for (unsigned d = 0; d < depth; d++)
            at.seg[d] = hearth__key_name(chain[depth - 1 - d]->key);
        rc = hearth__view_generate(views[i], node_at(old_root, &at),
                                   node_at(db->root, &at), &db->events);
    }
    hearth__free(views);
    return rc;
}

/* Whether the rules let o's write stand: judged against the data with the
 * whole write applied (new_root), exactly as it would be stored. */
static bool write_allowed(hearth_db_t *db, const op *o,
                          const hearth__path *const *paths,
                          const hearth_node_t *new_root, int64_t now) {
    if (db->rules) {
        hearth__access a = {db->auth, (double)now, db->root, NULL};
        return hearth__ruleset_can_write(db->rules, paths, o->nparts, new_root,
                                         &a);
    }
    if (!o->judged)
        return true;
    /* Fail closed: a judged write with nobody to judge it is refused. */
    return db->judge && db->judge(db->judge_ctx, o->auth, paths, o->nparts,
                                  db->root, new_root, (double)now);
}

/* The first write that changes a database opened in memory with a place
 * for its store (hearth__db_store_on_write): the store is made there now,
 * its directory with it. Nothing else may have been stored there since. */
static int open_store_later(hearth_db_t *db) {
    hearth_node_t *stored = NULL;
    hearth_error_t err;
    int rc = hearth__store_open(db->store_later, db->store_later_fsync,
                                &db->store, &stored, NULL, &err);
    if (rc) /* the write fails with rc; operators see why */
        fprintf(stderr, "hearth: %s\n", err.message);
    if (!rc && !hearth_node_equal(stored, db->root)) {
        hearth__store_close(db->store); /* someone else's data: keep out */
        db->store = NULL;
        rc = HEARTH_EIO;
    }
    hearth_node_decref(stored);
    if (!rc) {
        hearth__free(db->store_later);
        db->store_later = NULL;
    }
    return rc;
}

/* Resolves server values and applies every part to the root as one write,
 * logs it, or changes nothing. */
static int apply_write(hearth_db_t *db, op *o) {
    int64_t now = hearth_now_ms();
    hearth_node_t *root = hearth_node_incref(db->root);
    const hearth__path *paths_small[16];
    hearth_node_t *values_small[16];
    bool small = o->nparts <= 16;
    const hearth__path **paths =
        small ? paths_small : hearth__malloc(o->nparts * sizeof *paths);
    hearth_node_t **values =
        small ? values_small : hearth__calloc(o->nparts, sizeof *values);
    int rc = paths && values ? 0 : HEARTH_ENOMEM;
    size_t resolved = 0;
    for (size_t i = 0; !rc && i < o->nparts; i++) {
        write_part *w = &o->parts[i];
        const hearth_node_t *existing = node_at(db->root, &w->path);
        if (w->path.priority)
            existing = hearth__prio(existing);
        paths[i] = &w->path;
        rc = hearth__node_resolve_sv(w->value, existing, now, &values[i]);
        if (!rc) {
            resolved++;
            rc = hearth__node_set_path(&root, &w->path, values[i], NULL);
        }
    }
    if (!rc && !write_allowed(db, o, paths, root, now))
        rc = HEARTH_EDENIED;
    /* Only a write that stands and changes something makes the store. */
    if (!rc && !db->store && db->store_later &&
        !hearth_node_equal(root, db->root))
        rc = open_store_later(db);
    if (!rc && db->store)
        rc = hearth__store_append(db->store, paths, (const hearth_node_t *const *)values,
                                  o->nparts);
    for (size_t i = 0; i < resolved; i++)
        hearth_node_decref(values[i]);
    if (rc) {
        hearth_node_decref(root);
    } else {
        hearth_node_t *old_root = db->root;
        db->root = root;
        /* The write stands even if its events cannot be built (no memory):
         * the data is consistent, only those notifications are lost. */
        if (generate(db, old_root, paths, o->nparts))
            hearth__events_clear(&db->events);
        hearth_node_decref(old_root);
    }
    if (!small) {
        hearth__free(paths);
        hearth__free(values);
    }
    return rc;
}

/* A durable write is acknowledged after its group commit (flush_acks);
 * anything else at once. Returns whether o must be kept until then. */
static bool defer_ack(hearth_db_t *db, op *o, int status) {
    if (!db->store || status)
        return false;
    o->status = status;
    o->next = NULL;
    if (db->unacked_tail)
        db->unacked_tail->next = o;
    else
        db->unacked = o;
    db->unacked_tail = o;
    return true;
}

static bool run_write(hearth_db_t *db, op *o) {
    int rc = apply_write(db, o);
    raise_events(db);
    if (defer_ack(db, o, rc))
        return true;
    if (o->done)
        o->done(rc, o->ctx);
    return false;
}

static bool run_transaction(hearth_db_t *db, op *o) {
    hearth_node_t *current = hearth_node_incref(node_at(db->root, &o->path));
    hearth_node_t *result = NULL;
    int verdict = o->tx_fn(current, &result, o->ctx);
    int rc = 0;
    if (verdict != HEARTH_TX_COMMIT || !result)
        rc = HEARTH_EABORTED;
    else if (o->path.n + (unsigned)hearth__node_depth(result) > HEARTH_MAX_DEPTH)
        rc = HEARTH_EDEPTH;
    else if (!(o->parts = hearth__calloc(1, sizeof *o->parts)))
        rc = HEARTH_ENOMEM;
    if (rc) {
        hearth_node_decref(result);
        o->tx_done(rc, false, current, o->ctx);
        hearth_node_decref(current);
        return false;
    }
    hearth_node_decref(current);
    o->nparts = 1;
    o->parts[0].path = o->path; /* views into o->text, freed with o */
    o->parts[0].value = result;
    rc = apply_write(db, o);
    raise_events(db);
    o->tx_snapshot = hearth_node_incref(node_at(db->root, &o->path));
    if (defer_ack(db, o, rc))
        return true;
    o->tx_done(rc, rc == 0, o->tx_snapshot, o->ctx);
    return false;
}

/* The value a read of path sees (its priority for ".priority" paths). */
static const hearth_node_t *read_at(const hearth_node_t *root,
                                    const hearth__path *p) {
    const hearth_node_t *n = node_at(root, p);
    return p->priority ? hearth__prio(n) : n;
}

static void remove_reg(hearth_db_t *db, hearth__reg *reg);

/* Whether the rules (if any) let this handle read path with query. */
static bool may_read(hearth_db_t *db, const hearth__path *path,
                     const hearth_query_t *query) {
    if (!db->rules)
        return true;
    hearth_node_t *query_var = NULL;
    if (query && !hearth__query_is_default(query)) {
        char *wire = hearth_query_to_json(query);
        json_t *q = wire ? json_loads(wire, 0, NULL) : NULL;
        hearth__free(wire);
        query_var = hearth__rules_query_variable(q);
        json_decref(q);
    }
    hearth__access a = {db->auth, (double)hearth_now_ms(), db->root, query_var};
    bool ok = hearth__ruleset_can_read(db->rules, path, &a);
    hearth_node_decref(query_var);
    return ok;
}

static void run_get(hearth_db_t *db, op *o) {
    if (!may_read(db, &o->path, o->query)) {
        answer_get(o, HEARTH_EDENIED, NULL);
        return;
    }
    hearth_node_t *shown = NULL;
    int rc = hearth__query_view_node(o->query, read_at(db->root, &o->path),
                                     &shown);
    answer_get(o, rc, shown);
    hearth_node_decref(shown);
}

static void run_observe(hearth_db_t *db, op *o) {
    hearth__reg *reg = o->reg;
    o->reg = NULL;
    if (hearth__listeners_add(&db->listeners, &o->path, o->query, reg)) {
        /* No memory for the registration: it ends at once. */
        if (reg->ctx_free)
            reg->ctx_free(reg->ctx);
        hearth__free(reg);
        return;
    }
    if (!may_read(db, &o->path, o->query)) {
        /* Refused: it hears why, then ends (as a server's refusal). */
        hearth__events_push_cancel(&db->events, reg, HEARTH_EDENIED);
        raise_events(db);
        remove_reg(db, reg);
        return;
    }
    if (hearth__reg_initial_events(reg, node_at(db->root, &o->path),
                                   &db->events))
        hearth__events_clear(&db->events);
    raise_events(db);
}

static void remove_reg(hearth_db_t *db, hearth__reg *reg) {
    if (reg->removed)
        return;
    reg->removed = true;
    if (!db->raising) {
        unlink_reg(db, reg);
        return;
    }
    if (db->ndoomed == db->doomed_cap) {
        size_t cap = db->doomed_cap ? db->doomed_cap * 2 : 8;
        hearth__reg **d = hearth__realloc(db->doomed, cap * sizeof *d);
        if (!d) /* cannot defer: it is marked removed, free it at close */
            return;
        db->doomed = d;
        db->doomed_cap = cap;
    }
    db->doomed[db->ndoomed++] = reg;
}

static void run_unobserve_at(hearth_db_t *db, op *o) {
    hearth__tnode *t = hearth__listeners_at(listeners_of(db), &o->path);
    if (!t)
        return;
    /* Collect first: removal may free the trie node when not raising. */
    size_t n = 0;
    for (hearth__view *v = t->views; v; v = v->next)
        for (hearth__reg *r = v->regs; r; r = r->next)
            n++;
    hearth__reg **regs = hearth__malloc((n ? n : 1) * sizeof *regs);
    if (!regs)
        return;
    n = 0;
    for (hearth__view *v = t->views; v; v = v->next)
        for (hearth__reg *r = v->regs; r; r = r->next)
            regs[n++] = r;
    for (size_t i = 0; i < n; i++)
        remove_reg(db, regs[i]);
    hearth__free(regs);
}

/* ---- a client of a server ---- */

static void remote_raise(void *ctx) {
    hearth_db_t *db = ctx;
    if (db->remote)
        atomic_store(&db->server_offset_ms,
                     hearth__remote_server_now(db->remote) - hearth_now_ms());
    raise_events(db);
}

static void remote_drop(void *ctx, hearth__reg *reg) { remove_reg(ctx, reg); }

static void remote_token_wanted(void *ctx) {
    hearth_db_t *db = ctx;
    if (db->auth_provider)
        db->auth_provider(db, db->auth_ctx);
}

static void set_auth_provider(hearth_db_t *db, hearth_auth_provider_cb cb,
                              void *ctx, hearth_free_cb ctx_free) {
    if (db->auth_ctx_free)
        db->auth_ctx_free(db->auth_ctx);
    db->auth_provider = cb;
    db->auth_ctx = ctx;
    db->auth_ctx_free = ctx_free;
}

/* Ends an operation kept while the server had it. */
static void op_done(op *o) {
    if (o->ctx_free)
        o->ctx_free(o->ctx);
    op_free(o);
}

static void remote_write_done(int status, void *arg) {
    op *o = arg;
    if (o->done)
        o->done(status, o->ctx);
    op_done(o);
}

static bool run_remote_write(hearth_db_t *db, op *o) {
    const hearth__path *paths_small[16];
    hearth_node_t *values_small[16];
    bool small = o->nparts <= 16;
    const hearth__path **paths =
        small ? paths_small : hearth__malloc(o->nparts * sizeof *paths);
    hearth_node_t **values =
        small ? values_small : hearth__malloc(o->nparts * sizeof *values);
    int rc = paths && values ? 0 : HEARTH_ENOMEM;
    for (size_t i = 0; !rc && i < o->nparts; i++) {
        paths[i] = &o->parts[i].path;
        values[i] = o->parts[i].value;
    }
    if (!rc && o->nparts == 0)
        rc = 1; /* an empty update: nothing to send */
    if (!rc)
        rc = hearth__remote_write(db->remote, paths, values, o->nparts,
                                  remote_write_done, o);
    if (!small) {
        hearth__free(paths);
        hearth__free(values);
    }
    if (!rc)
        return true;
    if (o->done)
        o->done(rc == 1 ? 0 : rc, o->ctx);
    return false;
}

static void remote_tx_done(int status, bool committed,
                           const hearth_node_t *snapshot, void *arg) {
    op *o = arg;
    o->tx_done(status, committed, snapshot, o->ctx);
    op_done(o);
}

static bool run_remote_transaction(hearth_db_t *db, op *o) {
    int rc = hearth__remote_transaction(db->remote, &o->path, o->tx_fn, o->ctx,
                                        remote_tx_done, o);
    if (!rc)
        return true;
    o->tx_done(rc, false, hearth__node_empty(), o->ctx);
    return false;
}

static void remote_get_done(int status, const hearth_node_t *value,
                            void *arg) {
    op *o = arg;
    answer_get(o, status, value);
    op_done(o);
}

static void run_remote_observe(hearth_db_t *db, op *o) {
    hearth__reg *reg = o->reg;
    o->reg = NULL;
    if (hearth__remote_observe(db->remote, &o->path, o->query, reg)) {
        if (reg->ctx_free)
            reg->ctx_free(reg->ctx);
        hearth__free(reg);
    }
}

static void flush_acks(hearth_db_t *db);

/* Runs o in remote mode; false for the kinds that work as embedded. */
static bool run_remote_op(hearth_db_t *db, op *o) {
    bool keep = false;
    switch (o->kind) {
    case OP_WRITE:
        keep = run_remote_write(db, o);
        break;
    case OP_TRANSACTION:
        keep = run_remote_transaction(db, o);
        break;
    case OP_GET:
        if (hearth__remote_get(db->remote, &o->path, o->query,
                               remote_get_done, o) == 0)
            return true; /* remote_get_done frees o */
        answer_get(o, HEARTH_ENOMEM, NULL);
        break;
    case OP_OBSERVE:
        run_remote_observe(db, o);
        break;
    case OP_ONLINE:
        hearth__remote_set_online(db->remote, o->status != 0);
        break;
    case OP_PURGE:
        hearth__remote_purge(db->remote);
        break;
    case OP_AUTH:
        if (hearth__remote_set_auth(db->remote, o->text) && o->done)
            o->done(HEARTH_ENOMEM, o->ctx);
        break;
    case OP_AUTH_PROVIDER:
        set_auth_provider(db, o->auth_provider, o->ctx, o->ctx_free);
        o->ctx_free = NULL; /* the database keeps ctx */
        hearth__remote_wait_for_token(db->remote, o->auth_provider != NULL);
        break;
    case OP_ON_DISCONNECT: {
        static const char *const actions[] = {"o", "om", "oc"};
        size_t n = o->nparts;
        const hearth__path **paths = hearth__malloc((n ? n : 1) * sizeof *paths);
        hearth_node_t **values = hearth__malloc((n ? n : 1) * sizeof *values);
        int rc = paths && values ? 0 : HEARTH_ENOMEM;
        for (size_t i = 0; !rc && i < n; i++) {
            paths[i] = &o->parts[i].path;
            values[i] = o->parts[i].value;
        }
        if (!rc)
            rc = hearth__remote_on_disconnect(db->remote, actions[o->status],
                                              paths, values, n,
                                              remote_write_done, o);
        hearth__free(paths);
        hearth__free(values);
        if (!rc)
            return true; /* remote_write_done ends o */
        if (o->done)
            o->done(rc, o->ctx);
        break;
    }
    case OP_STOP:
        hearth__remote_close(db->remote);
        db->remote = NULL;
        uv_close((uv_handle_t *)&db->wake, NULL);
        uv_close((uv_handle_t *)&db->commit_idle, NULL);
        break;
    default:
        return false;
    }
    if (!keep)
        op_done(o);
    return true;
}

static void run_op(hearth_db_t *db, op *o) {
    if (db->remote && run_remote_op(db, o))
        return;
    bool keep = false;
    switch (o->kind) {
    case OP_WRITE:
        keep = run_write(db, o);
        break;
    case OP_TRANSACTION:
        keep = run_transaction(db, o);
        break;
    case OP_GET:
        run_get(db, o);
        break;
    case OP_OBSERVE:
        run_observe(db, o);
        break;
    case OP_UNOBSERVE: {
        hearth__reg *reg = hearth__listeners_find(listeners_of(db), o->handle);
        if (reg)
            remove_reg(db, reg);
        break;
    }
    case OP_UNOBSERVE_AT:
        run_unobserve_at(db, o);
        break;
    case OP_CALL:
        o->call_fn(o->ctx);
        break;
    case OP_STOP:
        flush_acks(db);
        uv_close((uv_handle_t *)&db->wake, NULL);
        uv_close((uv_handle_t *)&db->commit_idle, NULL);
        break;
    case OP_ONLINE:
    case OP_ON_DISCONNECT:
    case OP_PURGE:
    case OP_AUTH:
    case OP_AUTH_PROVIDER:
        break; /* only queued for a client of a server */
    }
    if (keep)
        return;
    if (o->ctx_free)
        o->ctx_free(o->ctx);
    op_free(o);
}

/* ---- group commit and snapshots ---- */

static void snapshot_work(uv_work_t *req) {
    hearth_db_t *db = req->data;
    db->snapshot_rc = hearth__store_write_snapshot(
        hearth__store_dir(db->store), db->snapshot_gen, db->snapshot_root);
}

static void free_db(hearth_db_t *db);

static void snapshot_done(uv_work_t *req, int status) {
    hearth_db_t *db = req->data;
    hearth_node_decref(db->snapshot_root);
    db->snapshot_root = NULL;
    db->snapshotting = false;
    db->last_snapshot_rc = status ? HEARTH_ECANCELED : db->snapshot_rc;
    if (db->close_waits && --db->close_waits == 0)
        free_db(db);
}

/* Snapshots the root on a worker thread once the log has grown enough:
 * the root is immutable, so the loop goes on meanwhile. */
static void maybe_snapshot(hearth_db_t *db) {
    if (db->snapshotting || db->committing || db->closed ||
        !hearth__store_wants_snapshot(db->store))
        return;
    uint64_t gen;
    if (hearth__store_rotate(db->store, &gen))
        return; /* the next commit reports the disk's refusal */
    db->snapshot_gen = gen;
    db->snapshot_root = hearth_node_incref(db->root);
    db->snapshot_work.data = db;
    if (uv_queue_work(db->loop, &db->snapshot_work, snapshot_work,
                      snapshot_done) == 0) {
        db->snapshotting = true;
    } else {
        hearth_node_decref(db->snapshot_root);
        db->snapshot_root = NULL;
    }
}

/* Acknowledges a list of applied writes with the outcome of their commit. */
static void ack_ops(op *o, int rc) {
    while (o) {
        op *next = o->next;
        if (o->kind == OP_TRANSACTION)
            o->tx_done(rc, rc == 0, o->tx_snapshot, o->ctx);
        else if (o->done)
            o->done(rc, o->ctx);
        if (o->ctx_free)
            o->ctx_free(o->ctx);
        op_free(o);
        o = next;
    }
}

/* A failed commit changed nothing on disk: every write since the last
 * good one is undone in memory too, and listeners see the data as it is. */
static void revert(hearth_db_t *db) {
    hearth__path everywhere = {0};
    const hearth__path *paths[] = {&everywhere};
    hearth_node_t *old_root = db->root;
    db->root = hearth_node_incref(db->durable_root);
    if (generate(db, old_root, paths, 1))
        hearth__events_clear(&db->events);
    hearth_node_decref(old_root);
    raise_events(db);
}

/* Records a commit's outcome: root is durable, or everything after the
 * last durable root is undone. Takes the reference to root. */
static void commit_outcome(hearth_db_t *db, hearth_node_t *root, int rc) {
    if (rc) {
        hearth_node_decref(root);
        revert(db);
    } else {
        hearth_node_decref(db->durable_root);
        db->durable_root = root;
    }
}

/* Commits the writes applied since the last commit (one fsync for all),
 * then acknowledges them, all before returning. */
static void flush_acks(hearth_db_t *db) {
    /* Writes made by completions join the list and are acknowledged by the
     * outer call, after the ones before them. A commit on the worker
     * thread owns the log until it ends; it picks up what waits here. */
    if (!db->store || db->flushing || db->committing)
        return;
    db->flushing = true;
    while (db->unacked) {
        hearth_node_t *committed = hearth_node_incref(db->root);
        int rc = hearth__store_commit(db->store);
        op *o = db->unacked;
        db->unacked = db->unacked_tail = NULL;
        commit_outcome(db, committed, rc);
        ack_ops(o, rc);
    }
    db->flushing = false;
    maybe_snapshot(db);
}

static void start_commit(hearth_db_t *db);

static void commit_work(uv_work_t *req) {
    hearth_db_t *db = req->data;
    hearth__store_commit_write(db->store, &db->batch);
}

static void commit_done(uv_work_t *req, int status) {
    (void)status; /* never canceled */
    hearth_db_t *db = req->data;
    int rc = hearth__store_commit_end(db->store, &db->batch);
    op *o = db->inflight, *later = NULL;
    db->inflight = NULL;
    db->committing = false;
    if (rc) { /* the writes applied since were built on the failed ones */
        later = db->unacked;
        db->unacked = db->unacked_tail = NULL;
    }
    commit_outcome(db, db->batch_root, rc);
    db->batch_root = NULL;
    ack_ops(o, rc);
    ack_ops(later, rc);
    if (db->closed) {
        flush_acks(db); /* the rest, now, before the store closes */
        if (--db->close_waits == 0)
            free_db(db);
        return;
    }
    start_commit(db);
    maybe_snapshot(db);
}

/* Starts committing the applied writes on a worker thread, unless a commit
 * is under way (its end starts the next). */
static void start_commit(hearth_db_t *db) {
    if (db->committing || !db->unacked || db->flushing)
        return;
    op *o = db->unacked;
    int rc = hearth__store_commit_begin(db->store, &db->batch);
    db->unacked = db->unacked_tail = NULL;
    if (rc) {
        commit_outcome(db, NULL, rc);
        ack_ops(o, rc);
        return;
    }
    db->batch_root = hearth_node_incref(db->root);
    db->inflight = o;
    db->committing = true;
    db->commit_work.data = db;
    if (uv_queue_work(db->loop, &db->commit_work, commit_work, commit_done)) {
        /* No worker: commit here. */
        hearth__store_commit_write(db->store, &db->batch);
        commit_done(&db->commit_work, 0);
    }
}

/* Runs o and then whatever its callbacks asked for, in order. */
static void run_now(hearth_db_t *db, op *o) {
    run_op(db, o);
    while (!db->raising && db->deferred) {
        op *next = db->deferred;
        db->deferred = next->next;
        if (!db->deferred)
            db->deferred_tail = NULL;
        run_op(db, next);
    }
}

static void on_wake(uv_async_t *handle) {
    hearth_db_t *db = handle->data;
    uv_mutex_lock(&db->lock);
    op *o = db->head;
    db->head = db->tail = NULL;
    uv_mutex_unlock(&db->lock);
    while (o) {
        op *next = o->next;
        if (db->closed && o->kind != OP_STOP) /* closed by a callback */
            op_cancel(o);
        else
            run_now(db, o);
        o = next;
    }
    flush_acks(db);
}

/* Group commit for writes made on the loop thread (the server's request
 * handlers): an active idle handle makes the loop come back right after
 * this iteration's I/O callbacks, and one commit covers them all. */
static void on_commit_idle(uv_idle_t *idle) {
    uv_idle_stop(idle);
    start_commit(idle->data);
}

/* Hands o to the loop: at once on the loop thread (after the current batch
 * of events when raising), else through the queue. */
static int submit(hearth_db_t *db, op *o) {
    if (on_loop_thread(db)) {
        if (db->closed) {
            op_free(o);
            return HEARTH_ECLOSED;
        }
        if (db->raising) {
            if (db->deferred_tail)
                db->deferred_tail->next = o;
            else
                db->deferred = o;
            db->deferred_tail = o;
        } else {
            run_now(db, o);
            if (db->group_commit && db->unacked)
                uv_idle_start(&db->commit_idle, on_commit_idle);
            else
                flush_acks(db);
        }
        return 0;
    }
    uv_mutex_lock(&db->lock);
    bool closed = db->closed;
    if (!closed) {
        if (db->tail)
            db->tail->next = o;
        else
            db->head = o;
        db->tail = o;
    }
    uv_mutex_unlock(&db->lock);
    if (closed) {
        op_free(o);
        return HEARTH_ECLOSED;
    }
    uv_async_send(&db->wake);
    return 0;
}

/* ---- open and close ---- */

static void loop_main(void *arg) {
    hearth_db_t *db = arg;
    uv_run(db->loop, UV_RUN_DEFAULT);
    hearth__thread_cleanup();
}

/* The rules and the user an embedded handle is judged by. */
static int open_rules(hearth_db_t *db, const hearth_db_config_t *config,
                      hearth_error_t *err) {
    if (!config->rules)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "auth_variable needs rules to judge it by");
    json_t *doc = NULL;
    int rc = hearth__rules_parse(config->rules, strlen(config->rules), &doc,
                                 err);
    if (!rc)
        rc = hearth__ruleset_compile(doc, &db->rules, err);
    json_decref(doc);
    if (rc || !config->auth_variable)
        return rc;
    rc = hearth_node_from_json(config->auth_variable, (size_t)-1, 0, &db->auth,
                               err);
    if (rc)
        return hearth__error(err, rc, NULL, "auth_variable: %s", err->message);
    if (hearth_node_is_null(db->auth)) {
        hearth_node_decref(db->auth);
        db->auth = NULL;
    }
    return 0;
}

static void close_rules(hearth_db_t *db) {
    hearth__ruleset_free(db->rules);
    hearth_node_decref(db->auth);
}

int hearth_db_open(const hearth_db_config_t *config, hearth_db_t **out,
                   hearth_error_t *err) {
    if (!out)
        return hearth__error(err, HEARTH_EINVAL, NULL, "out is NULL");
    hearth_db_t *db = hearth__calloc(1, sizeof *db);
    if (!db)
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = 0;
    hearth__remote_url url;
    if (config && config->cache_dir && !config->url) {
        hearth__free(db);
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "a cache directory is for a database opened on "
                             "a URL (an embedded one keeps data_dir)");
    }
    if (config && (config->rules || config->auth_variable)) {
        rc = config->url ? hearth__error(err, HEARTH_EINVAL, NULL,
                                         "rules are for an embedded database "
                                         "(a server applies its own)")
                         : open_rules(db, config, err);
        if (rc) {
            close_rules(db);
            hearth__free(db);
            return rc;
        }
    }
    hearth__disk *disk = NULL;
    if (config && config->url) {
        if (config->data_dir) {
            close_rules(db);
            hearth__free(db);
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "a database opened on a URL keeps no data "
                                 "directory");
        }
        rc = hearth__remote_parse_url(config->url, &url, err);
        if (!rc && config->cache_dir)
            rc = hearth__disk_open(config->cache_dir, config->url,
                                   config->cache_size, &disk, err);
        if (rc) {
            close_rules(db);
            hearth__free(db);
            return rc;
        }
    }
    hearth__store_report report = {0};
    if (config && config->data_dir)
        rc = hearth__store_open(config->data_dir, config->fsync_mode,
                                &db->store, &db->root, &report, err);
    else
        db->root = hearth_node_null();
    if (!rc && report.torn_bytes)
        /* Data was recovered up to a crash: say so where operators look. */
        fprintf(stderr,
                "hearth: %s: recovered up to the last complete commit; cut "
                "%llu bytes of a commit torn by a crash (never acknowledged) "
                "off log.%llu at offset %llu\n",
                config->data_dir, (unsigned long long)report.torn_bytes,
                (unsigned long long)report.torn_gen,
                (unsigned long long)report.torn_offset);
    if (rc) {
        close_rules(db);
        hearth__free(db);
        return rc;
    }
    if (db->store)
        db->durable_root = hearth_node_incref(db->root);
    atomic_init(&db->next_handle, 1);
    atomic_init(&db->server_offset_ms, 0);
    hearth__events_init(&db->events);
    rc = hearth__listeners_init(&db->listeners);
    if (rc) {
        hearth__disk_close(disk);
        hearth__store_close(db->store);
        hearth_node_decref(db->root);
        hearth_node_decref(db->durable_root);
        close_rules(db);
        hearth__free(db);
        return hearth__error_code(err, rc);
    }
    if (uv_mutex_init(&db->lock)) {
        hearth__disk_close(disk);
        hearth__store_close(db->store);
        hearth__listeners_destroy(&db->listeners);
        hearth_node_decref(db->root);
        hearth_node_decref(db->durable_root);
        close_rules(db);
        hearth__free(db);
        return hearth__error_code(err, HEARTH_ELOOP);
    }
    db->owns_loop = !config || !config->loop;
    db->loop = db->owns_loop ? &db->own_loop : config->loop;
    if (db->owns_loop && uv_loop_init(db->loop))
        goto fail_loop;
    if (uv_async_init(db->loop, &db->wake, on_wake))
        goto fail_async;
    db->wake.data = db;
    uv_idle_init(db->loop, &db->commit_idle);
    db->commit_idle.data = db;
    const hearth__remote_hooks hooks = {remote_raise, remote_drop,
                                        remote_token_wanted, db};
    if (config && config->url &&
        hearth__remote_open(db->loop, &url, &db->events, &hooks, &db->remote))
        goto fail_thread;
    db->client = db->remote != NULL;
    if (disk) {
        hearth__remote_use_disk(db->remote, disk); /* taken over */
        disk = NULL;
    }
    if (db->owns_loop) {
        if (uv_thread_create(&db->thread, loop_main, db))
            goto fail_thread;
        db->loop_thread = db->thread;
    } else {
        db->loop_thread = uv_thread_self();
    }
    *out = db;
    return 0;
fail_thread:
    if (db->remote)
        hearth__remote_close(db->remote);
    uv_close((uv_handle_t *)&db->wake, NULL);
    uv_close((uv_handle_t *)&db->commit_idle, NULL);
    uv_run(db->loop, UV_RUN_DEFAULT);
fail_async:
    if (db->owns_loop)
        uv_loop_close(db->loop);
fail_loop:
    hearth__disk_close(disk);
    uv_mutex_destroy(&db->lock);
    hearth__listeners_destroy(&db->listeners);
    hearth__store_close(db->store);
    hearth_node_decref(db->root);
    hearth_node_decref(db->durable_root);
    close_rules(db);
    hearth__free(db);
    return hearth__error_code(err, HEARTH_ELOOP);
}

static void free_db(hearth_db_t *db) {
    set_auth_provider(db, NULL, NULL, NULL);
    hearth__free(db->store_later);
    close_rules(db);
    hearth__store_close(db->store); /* commits and syncs what is left */
    hearth__events_clear(&db->events);
    hearth__listeners_destroy(&db->listeners); /* runs every ctx_free */
    hearth__free(db->doomed);
    hearth_node_decref(db->root);
    hearth_node_decref(db->durable_root);
    uv_mutex_destroy(&db->lock);
    hearth__free(db);
}

static void on_wake_closed(uv_handle_t *handle) {
    hearth_db_t *db = handle->data;
    if (--db->close_waits == 0)
        free_db(db);
}

int hearth_db_close(hearth_db_t *db) {
    if (!db)
        return HEARTH_EINVAL;
    uv_mutex_lock(&db->lock);
    bool was_closed = db->closed;
    db->closed = true;
    op *pending = db->head;
    db->head = db->tail = NULL;
    uv_mutex_unlock(&db->lock);
    if (was_closed)
        return HEARTH_ECLOSED;
    if (db->owns_loop) {
        if (on_loop_thread(db))
            return HEARTH_EINVAL; /* cannot join our own thread */
        /* Let the loop finish what it was doing, then stop it from inside:
         * only the loop thread may close its handles. */
        op *stop = op_new(OP_STOP);
        uv_mutex_lock(&db->lock);
        db->head = db->tail = stop;
        uv_mutex_unlock(&db->lock);
        if (!stop)
            return HEARTH_ENOMEM;
        uv_async_send(&db->wake);
        uv_thread_join(&db->thread);
        uv_loop_close(db->loop);
    }
    while (pending) {
        op *next = pending->next;
        op_cancel(pending);
        pending = next;
    }
    while (db->deferred) {
        op *next = db->deferred->next;
        op_cancel(db->deferred);
        db->deferred = next;
    }
    if (db->owns_loop) {
        free_db(db);
    } else {
        flush_acks(db);
        if (!db->committing && !db->snapshotting) {
            /* Nothing uses the files any more: they are released now, so
             * that the directory may be opened again at once. */
            hearth__store_close(db->store);
            db->store = NULL;
        }
        if (db->remote) {
            hearth__remote_close(db->remote);
            db->remote = NULL;
        }
        /* Freed once the handles are closed and any snapshot and commit
         * have finished (the commit then acknowledges what is left). */
        db->close_waits = 2 + db->snapshotting + db->committing;
        uv_close((uv_handle_t *)&db->wake, on_wake_closed);
        uv_close((uv_handle_t *)&db->commit_idle, on_wake_closed);
    }
    return 0;
}

hearth__store *hearth__db_store(hearth_db_t *db) { return db->store; }

int hearth__db_store_on_write(hearth_db_t *db, const char *dir,
                              int fsync_mode) {
    if (db->store || db->client)
        return HEARTH_EINVAL;
    char *copy = hearth__strndup(dir, strlen(dir));
    if (!copy)
        return HEARTH_ENOMEM;
    hearth__free(db->store_later);
    db->store_later = copy;
    db->store_later_fsync = fsync_mode;
    return 0;
}

bool hearth__db_quiet(hearth_db_t *db) {
    uv_mutex_lock(&db->lock);
    bool queued = db->head != NULL;
    uv_mutex_unlock(&db->lock);
    return !queued && !db->raising && !db->deferred && !db->unacked &&
           !db->committing && !db->snapshotting && !db->flushing &&
           !uv_is_active((uv_handle_t *)&db->commit_idle);
}

void hearth__db_set_group_commit(hearth_db_t *db, bool on) {
    db->group_commit = on;
}

void hearth__db_set_judge(hearth_db_t *db, hearth__db_judge_fn fn, void *ctx) {
    db->judge = fn;
    db->judge_ctx = ctx;
}

const hearth_node_t *hearth__db_root(hearth_db_t *db) { return db->root; }

/* ---- public operations ---- */

/* Copies path into *text and parses it there (segments point into it). */
static int parse_path_copy(const char *path, unsigned flags, char **text,
                           hearth__path *parsed, hearth_error_t *err) {
    if (!path)
        return hearth__error(err, HEARTH_EINVAL, NULL, "path is NULL");
    *text = hearth__strndup(path, strlen(path));
    if (!*text)
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = hearth__path_parse(*text, flags | HEARTH__PATH_ALLOW_INFO, parsed,
                                err);
    if (rc) {
        hearth__free(*text);
        *text = NULL;
    }
    return rc;
}

/* The same for a location to write to, which may not be under /.info. */
static int parse_write_path(const char *path, unsigned flags, char **text,
                            hearth__path *parsed, hearth_error_t *err) {
    int rc = parse_path_copy(path, flags, text, parsed, err);
    if (!rc && parsed->info) {
        hearth__free(*text);
        *text = NULL;
        rc = hearth__error(err, HEARTH_EREADONLY, path,
                           "cannot write to \"%s\": /.info is read-only", path);
    }
    return rc;
}

/* Checks one value written at a parsed path. */
static int check_value(const hearth__path *p, const hearth_node_t *value,
                       const char *text, hearth_error_t *err) {
    if (!value)
        return hearth__error(err, HEARTH_EINVAL, text, "value is NULL");
    if (p->priority) {
        hearth_type t = hearth_node_type(value);
        if ((t != HEARTH_TYPE_NULL && t != HEARTH_TYPE_NUMBER &&
             t != HEARTH_TYPE_STRING && t != HEARTH_TYPE_SERVER_VALUE) ||
            value->priority)
            return hearth__error(err, HEARTH_EPRIORITY, text,
                                 "invalid priority at %s: must be null, a "
                                 "number, a string or a server value",
                                 text);
        return 0;
    }
    if (p->n + (unsigned)hearth__node_depth(value) > HEARTH_MAX_DEPTH)
        return hearth__error(err, HEARTH_EDEPTH, text,
                             "writing at \"%s\" would nest data deeper than "
                             "%d levels",
                             text, HEARTH_MAX_DEPTH);
    return 0;
}

static op *write_op(size_t nparts, hearth_completion_cb cb, void *ctx,
                    hearth_free_cb ctx_free) {
    op *o = op_new(OP_WRITE);
    if (!o)
        return NULL;
    o->parts = hearth__calloc(nparts ? nparts : 1, sizeof *o->parts);
    if (!o->parts) {
        hearth__free(o);
        return NULL;
    }
    o->nparts = nparts;
    o->done = cb;
    o->ctx = ctx;
    o->ctx_free = ctx_free;
    return o;
}

/* Frees a write op that was never submitted, without its callbacks. */
static int drop_op(op *o, int rc) {
    o->ctx_free = NULL;
    op_free(o);
    return rc;
}

/* Marks o to be judged as who when it is applied (who NULL: not judged). */
static void judge_as(op *o, const hearth__db_caller *who) {
    if (!who)
        return;
    o->judged = true;
    o->auth = hearth_node_incref(who->auth);
}

int hearth_db_set(hearth_db_t *db, const char *path, const hearth_node_t *value,
                  hearth_completion_cb cb, void *ctx, hearth_free_cb ctx_free,
                  hearth_error_t *err) {
    return hearth__db_set_as(db, NULL, path, value, cb, ctx, ctx_free, err);
}

int hearth__db_set_as(hearth_db_t *db, const hearth__db_caller *who,
                      const char *path, const hearth_node_t *value,
                      hearth_completion_cb cb, void *ctx,
                      hearth_free_cb ctx_free, hearth_error_t *err) {
    if (!db)
        return hearth__error(err, HEARTH_EINVAL, NULL, "db is NULL");
    op *o = write_op(1, cb, ctx, ctx_free);
    if (!o)
        return hearth__error_code(err, HEARTH_ENOMEM);
    write_part *w = &o->parts[0];
    int rc = parse_write_path(path, HEARTH__PATH_ALLOW_PRIORITY, &w->text,
                              &w->path, err);
    if (!rc)
        rc = check_value(&w->path, value, path, err);
    if (rc)
        return drop_op(o, rc);
    w->value = hearth_node_incref(value);
    judge_as(o, who);
    rc = submit(db, o);
    return rc ? hearth__error_code(err, rc) : 0;
}

int hearth_db_remove(hearth_db_t *db, const char *path, hearth_completion_cb cb,
                     void *ctx, hearth_free_cb ctx_free, hearth_error_t *err) {
    return hearth_db_set(db, path, hearth__node_empty(), cb, ctx, ctx_free,
                         err);
}

/* Joins base and a relative path into one owned string ("/" and "a" make
 * "/a", not "//a": the text names the path in messages). */
static char *join(const char *base, const char *rel) {
    size_t bl = strlen(base), rl = strlen(rel);
    while (bl && base[bl - 1] == '/')
        bl--;
    char *s = hearth__malloc(bl + rl + 2);
    if (s) {
        memcpy(s, base, bl);
        s[bl] = '/';
        memcpy(s + bl + 1, rel, rl + 1);
    }
    return s;
}

/* Whether writing at a also writes at b: a is b, or an ancestor of b (a
 * node's ".priority" lies below the node; a priority covers only itself,
 * so "x/.priority" and "x/y" may be written together). */
static bool covers(const hearth__path *a, const hearth__path *b) {
    if (!hearth__path_is_prefix(a, b))
        return false;
    if (a->priority)
        return b->priority && a->n == b->n;
    return true;
}

/* A total order of paths in which a path comes right before the paths it
 * covers: segments compared as bytes, a prefix first, and a node before
 * its own ".priority". */
static int path_order(const void *pa, const void *pb) {
    const hearth__path *a = &(*(const write_part *const *)pa)->path;
    const hearth__path *b = &(*(const write_part *const *)pb)->path;
    for (unsigned i = 0; i < a->n && i < b->n; i++) {
        size_t la = a->seg[i].len, lb = b->seg[i].len;
        int c = memcmp(a->seg[i].s, b->seg[i].s, la < lb ? la : lb);
        if (c || la != lb)
            return c ? c : la < lb ? -1 : 1;
    }
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    return (int)a->priority - (int)b->priority;
}

/* No part may cover another. In path order everything between a path and
 * one it covers is covered by it too, so neighbours tell: O(n log n),
 * where comparing every pair would let one large update hold the loop. */
static int check_overlaps(const write_part *parts, size_t n,
                          hearth_error_t *err) {
    if (n < 2)
        return 0;
    const write_part **sorted = hearth__malloc(n * sizeof *sorted);
    if (!sorted)
        return hearth__error_code(err, HEARTH_ENOMEM);
    for (size_t i = 0; i < n; i++)
        sorted[i] = &parts[i];
    qsort(sorted, n, sizeof *sorted, path_order);
    int rc = 0;
    for (size_t i = 1; !rc && i < n; i++) {
        const write_part *a = sorted[i - 1], *b = sorted[i];
        if (covers(&a->path, &b->path))
            rc = hearth__error(err, HEARTH_EUPDATE, b->text,
                               "update paths overlap: \"%s\" contains \"%s\"",
                               a->text, b->text);
    }
    hearth__free(sorted);
    return rc;
}

/* Moves the parts that write a priority after the others, keeping each
 * group's order: "x/.priority" beside "x/y" of a new x gives x its
 * priority (a priority of nothing is nothing), as the SDKs apply merges.
 * The log keeps this order, so replay gives the same data. */
static void priorities_last(write_part *parts, size_t n) {
    for (size_t done = 0; done < n; done++) {
        size_t i = done;
        while (i < n && parts[i].path.priority)
            i++;
        if (i == n)
            return; /* only priorities left */
        write_part plain = parts[i];
        memmove(&parts[done + 1], &parts[done], (i - done) * sizeof *parts);
        parts[done] = plain;
    }
}

/* A checked multi-path update of `count` parts below path, not yet
 * submitted. */
static int update_op(const char *path, size_t count, const char *const *paths,
                     const hearth_node_t *const *values,
                     hearth_completion_cb cb, void *ctx,
                     hearth_free_cb ctx_free, op **out, hearth_error_t *err) {
    if (!path || (count && (!paths || !values)))
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    hearth__path base;
    int rc = hearth__path_parse(path, HEARTH__PATH_ALLOW_INFO, &base, err);
    if (rc)
        return rc;
    if (base.info)
        return hearth__error(err, HEARTH_EREADONLY, path,
                             "cannot write to \"%s\": /.info is read-only",
                             path);
    op *o = write_op(count, cb, ctx, ctx_free);
    if (!o)
        return hearth__error_code(err, HEARTH_ENOMEM);
    for (size_t i = 0; !rc && i < count; i++) {
        write_part *w = &o->parts[i];
        if (!paths[i] || !values[i]) {
            rc = hearth__error(err, HEARTH_EINVAL, NULL,
                               "update entry %zu is NULL", i);
            break;
        }
        char *full = join(path, paths[i]);
        if (!full) {
            rc = hearth__error_code(err, HEARTH_ENOMEM);
            break;
        }
        rc = parse_write_path(full, HEARTH__PATH_ALLOW_PRIORITY, &w->text,
                              &w->path, err);
        hearth__free(full);
        if (!rc)
            rc = check_value(&w->path, values[i], w->text, err);
        if (!rc)
            w->value = hearth_node_incref(values[i]);
    }
    if (!rc)
        rc = check_overlaps(o->parts, count, err);
    if (rc)
        return drop_op(o, rc);
    priorities_last(o->parts, count);
    *out = o;
    return 0;
}

static int update_as(hearth_db_t *db, const hearth__db_caller *who,
                     const char *path, size_t count, const char *const *paths,
                     const hearth_node_t *const *values,
                     hearth_completion_cb cb, void *ctx,
                     hearth_free_cb ctx_free, hearth_error_t *err) {
    if (!db)
        return hearth__error(err, HEARTH_EINVAL, NULL, "db is NULL");
    op *o;
    int rc = update_op(path, count, paths, values, cb, ctx, ctx_free, &o, err);
    if (rc)
        return rc;
    judge_as(o, who);
    rc = submit(db, o);
    return rc ? hearth__error_code(err, rc) : 0;
}

int hearth_db_update(hearth_db_t *db, const char *path, size_t count,
                     const char *const *paths,
                     const hearth_node_t *const *values,
                     hearth_completion_cb cb, void *ctx,
                     hearth_free_cb ctx_free, hearth_error_t *err) {
    return update_as(db, NULL, path, count, paths, values, cb, ctx, ctx_free,
                     err);
}

int hearth_db_update_json(hearth_db_t *db, const char *path, const char *json,
                          size_t len, hearth_completion_cb cb, void *ctx,
                          hearth_free_cb ctx_free, hearth_error_t *err) {
    return hearth__db_update_json_as(db, NULL, path, json, len, cb, ctx,
                                     ctx_free, err);
}

int hearth__db_update_json_as(hearth_db_t *db, const hearth__db_caller *who,
                              const char *path, const char *json, size_t len,
                              hearth_completion_cb cb, void *ctx,
                              hearth_free_cb ctx_free, hearth_error_t *err) {
    hearth__update_parts u;
    int rc = hearth__update_parts_parse(path, json, len, &u, err);
    if (!rc)
        rc = hearth__db_update_parts_as(db, who, path, &u, cb, ctx, ctx_free,
                                        err);
    hearth__update_parts_free(&u);
    return rc;
}

int hearth__update_parts_parse(const char *path, const char *json, size_t len,
                               hearth__update_parts *out,
                               hearth_error_t *err) {
    memset(out, 0, sizeof *out);
    int rc = hearth__json_load(json, len, &out->obj, err);
    if (rc)
        return rc;
    if (!json_is_object(out->obj))
        return hearth__error(err, HEARTH_EVALUE, path,
                             "an update must be a JSON object of paths to "
                             "values");
    size_t n = json_object_size(out->obj);
    out->paths = hearth__calloc(n ? n : 1, sizeof *out->paths);
    out->values = hearth__calloc(n ? n : 1, sizeof *out->values);
    if (!out->paths || !out->values)
        return hearth__error_code(err, HEARTH_ENOMEM);
    const char *key;
    json_t *value;
    json_object_foreach(out->obj, key, value) {
        char *full = join(path ? path : "", key);
        if (!full)
            return hearth__error_code(err, HEARTH_ENOMEM);
        /* Depth from the path when it parses (the update refuses it later
         * with a message naming it otherwise). */
        hearth__path p;
        unsigned depth = hearth__path_parse(full, HEARTH__PATH_ALLOW_PRIORITY |
                                                      HEARTH__PATH_ALLOW_INFO,
                                            &p, NULL)
                             ? 0
                             : p.n;
        rc = hearth__node_from_jansson_at(value, HEARTH_JSON_ALLOW_SERVER_VALUES,
                                          full, depth, &out->values[out->n],
                                          err);
        hearth__free(full);
        if (rc)
            return rc;
        out->paths[out->n++] = key;
    }
    return 0;
}

void hearth__update_parts_free(hearth__update_parts *u) {
    for (size_t i = 0; i < u->n; i++)
        hearth_node_decref(u->values[i]);
    hearth__free(u->values);
    hearth__free(u->paths);
    json_decref(u->obj);
    memset(u, 0, sizeof *u);
}

int hearth__db_update_parts_as(hearth_db_t *db, const hearth__db_caller *who,
                               const char *path, const hearth__update_parts *u,
                               hearth_completion_cb cb, void *ctx,
                               hearth_free_cb ctx_free, hearth_error_t *err) {
    return update_as(db, who, path, u->n, u->paths,
                     (const hearth_node_t *const *)u->values, cb, ctx,
                     ctx_free, err);
}

int hearth_db_push(hearth_db_t *db, const char *path, const hearth_node_t *value,
                   char key_out[HEARTH_PUSH_ID_SIZE], hearth_completion_cb cb,
                   void *ctx, hearth_free_cb ctx_free, hearth_error_t *err) {
    if (!db || !path || !key_out)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    char key[HEARTH_PUSH_ID_SIZE];
    uv_mutex_lock(&db->lock);
    int64_t now = hearth_now_ms() + atomic_load(&db->server_offset_ms);
    int rc = hearth_push_id(&db->push_state, now, key);
    uv_mutex_unlock(&db->lock);
    if (rc)
        return hearth__error_code(err, rc);
    char *full = join(path, key);
    if (!full)
        return hearth__error_code(err, HEARTH_ENOMEM);
    rc = hearth_db_set(db, full, value, cb, ctx, ctx_free, err);
    hearth__free(full);
    if (!rc)
        memcpy(key_out, key, HEARTH_PUSH_ID_SIZE);
    return rc;
}

int hearth_db_transaction(hearth_db_t *db, const char *path,
                          hearth_transaction_fn update,
                          hearth_transaction_done_cb done, void *ctx,
                          hearth_free_cb ctx_free, hearth_error_t *err) {
    if (!db || !update || !done)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    op *o = op_new(OP_TRANSACTION);
    if (!o)
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = parse_write_path(path, 0, &o->text, &o->path, err);
    if (rc)
        return drop_op(o, rc);
    o->tx_fn = update;
    o->tx_done = done;
    o->ctx = ctx;
    o->ctx_free = ctx_free;
    rc = submit(db, o);
    return rc ? hearth__error_code(err, rc) : 0;
}

static int read_op(op_kind kind, const char *path, unsigned flags,
                   const hearth_query_t *query, op **out, hearth_error_t *err) {
    op *o = op_new(kind);
    if (!o)
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = parse_path_copy(path, flags, &o->text, &o->path, err);
    if (!rc && query && !(o->query = hearth_query_copy(query)))
        rc = hearth__error_code(err, HEARTH_ENOMEM);
    if (rc)
        return drop_op(o, rc);
    *out = o;
    return 0;
}

int hearth_db_get(hearth_db_t *db, const char *path,
                  const hearth_query_t *query, hearth_node_t **out,
                  hearth_error_t *err) {
    if (!db || !out)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    op *o;
    int rc = read_op(OP_GET, path, HEARTH__PATH_ALLOW_PRIORITY, query, &o, err);
    if (rc)
        return rc;
    if (on_loop_thread(db)) {
        /* Reads need no ordering against deferred work: answer now. */
        if (db->remote) {
            /* The loop cannot wait for the server: only the cache. */
            *out = hearth__remote_cached(db->remote, &o->path, o->query);
            rc = *out ? 0
                      : hearth__remote_offline_error(err, &o->path, o->query);
            op_free(o);
            return rc;
        }
        rc = may_read(db, &o->path, o->query)
                 ? hearth__query_view_node(o->query,
                                           read_at(db->root, &o->path), out)
                 : HEARTH_EDENIED;
        op_free(o);
        return rc ? hearth__error_code(err, rc) : 0;
    }
    uv_sem_t sem;
    if (uv_sem_init(&sem, 0)) {
        op_free(o);
        return hearth__error_code(err, HEARTH_ELOOP);
    }
    int result = 0;
    o->sem = &sem;
    o->get_out = out;
    o->get_rc = &result;
    rc = submit(db, o);
    if (!rc) {
        uv_sem_wait(&sem);
        rc = result;
    }
    uv_sem_destroy(&sem);
    hearth__path at;
    if (rc == HEARTH_EOFFLINE && db->remote &&
        !hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &at, NULL))
        return hearth__remote_offline_error(err, &at, query);
    return rc ? hearth__error_code(err, rc) : 0;
}

int hearth_db_get_async(hearth_db_t *db, const char *path,
                        const hearth_query_t *query, hearth_get_cb cb,
                        void *ctx, hearth_free_cb ctx_free,
                        hearth_error_t *err) {
    if (!db || !cb)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    op *o;
    int rc = read_op(OP_GET, path, HEARTH__PATH_ALLOW_PRIORITY |
                                       (db->client ? HEARTH__PATH_ALLOW_INFO : 0),
                     query, &o, err);
    if (rc)
        return rc;
    o->get_cb = cb;
    o->ctx = ctx;
    o->ctx_free = ctx_free;
    rc = submit(db, o);
    return rc ? hearth__error_code(err, rc) : 0;
}

int hearth_db_observe(hearth_db_t *db, const char *path,
                      const hearth_query_t *query, unsigned mask,
                      hearth_event_cb cb, void *ctx, hearth_free_cb ctx_free,
                      hearth_observer_t *handle, hearth_error_t *err) {
    if (!db || !cb || !handle)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    if (!mask || (mask & ~HEARTH_MASK_ALL))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "event mask 0x%x is invalid", mask);
    op *o;
    int rc = read_op(OP_OBSERVE, path, db->client ? HEARTH__PATH_ALLOW_INFO : 0,
                     query, &o, err);
    if (rc)
        return rc;
    hearth__reg *reg = hearth__calloc(1, sizeof *reg);
    if (!reg)
        return drop_op(o, hearth__error_code(err, HEARTH_ENOMEM));
    reg->handle = atomic_fetch_add(&db->next_handle, 1);
    reg->mask = mask;
    reg->cb = cb;
    reg->ctx = ctx;
    reg->ctx_free = ctx_free;
    o->reg = reg;
    *handle = reg->handle;
    rc = submit(db, o);
    if (rc) { /* submit freed o, not the registration */
        hearth__free(reg);
        return hearth__error_code(err, rc);
    }
    return 0;
}

int hearth_db_remove_observer(hearth_db_t *db, hearth_observer_t handle) {
    if (!db || !handle)
        return HEARTH_EINVAL;
    if (on_loop_thread(db)) {
        hearth__reg *reg = hearth__listeners_find(listeners_of(db), handle);
        if (!reg || reg->removed)
            return HEARTH_ENOTFOUND;
        remove_reg(db, reg);
        return 0;
    }
    op *o = op_new(OP_UNOBSERVE);
    if (!o)
        return HEARTH_ENOMEM;
    o->handle = handle;
    return submit(db, o);
}

int hearth_db_remove_observers_at(hearth_db_t *db, const char *path,
                                  hearth_error_t *err) {
    if (!db)
        return hearth__error(err, HEARTH_EINVAL, NULL, "db is NULL");
    op *o;
    int rc = read_op(OP_UNOBSERVE_AT, path, 0, NULL, &o, err);
    if (rc)
        return rc;
    rc = submit(db, o);
    return rc ? hearth__error_code(err, rc) : 0;
}

int hearth_db_purge_outstanding_writes(hearth_db_t *db) {
    if (!db)
        return HEARTH_EINVAL;
    if (!db->client)
        return 0; /* embedded writes never wait for anyone */
    op *o = op_new(OP_PURGE);
    return o ? submit(db, o) : HEARTH_ENOMEM;
}

int hearth_db_set_auth_token(hearth_db_t *db, const char *token) {
    if (!db)
        return HEARTH_EINVAL;
    if (!db->client)
        return HEARTH_EUNSUPPORTED;
    op *o = op_new(OP_AUTH);
    if (!o)
        return HEARTH_ENOMEM;
    if (token && !(o->text = hearth__strndup(token, strlen(token)))) {
        op_free(o);
        return HEARTH_ENOMEM;
    }
    return submit(db, o);
}

int hearth_db_set_auth_provider(hearth_db_t *db, hearth_auth_provider_cb cb,
                                void *ctx, hearth_free_cb ctx_free) {
    if (!db)
        return HEARTH_EINVAL;
    if (!db->client)
        return HEARTH_EUNSUPPORTED;
    op *o = op_new(OP_AUTH_PROVIDER);
    if (!o)
        return HEARTH_ENOMEM;
    o->auth_provider = cb;
    o->ctx = ctx;
    o->ctx_free = ctx_free;
    return submit(db, o);
}

int hearth_db_set_online(hearth_db_t *db, bool online) {
    if (!db)
        return HEARTH_EINVAL;
    if (!db->client)
        return HEARTH_EUNSUPPORTED;
    op *o = op_new(OP_ONLINE);
    if (!o)
        return HEARTH_ENOMEM;
    o->status = online;
    return submit(db, o);
}

/* onDisconnect operations, as op->status. */
enum { ON_DISCONNECT_SET, ON_DISCONNECT_UPDATE, ON_DISCONNECT_CANCEL };

static int on_disconnect_submit(hearth_db_t *db, op *o, int kind,
                                hearth_error_t *err) {
    o->kind = OP_ON_DISCONNECT;
    o->status = kind;
    int rc = submit(db, o);
    return rc ? hearth__error_code(err, rc) : 0;
}

static int check_client(hearth_db_t *db, hearth_error_t *err) {
    if (!db)
        return hearth__error(err, HEARTH_EINVAL, NULL, "db is NULL");
    if (!db->client)
        return hearth__error(err, HEARTH_EUNSUPPORTED, NULL,
                             "onDisconnect needs a database opened on a URL");
    return 0;
}

int hearth_db_on_disconnect_set(hearth_db_t *db, const char *path,
                                const hearth_node_t *value,
                                hearth_completion_cb cb, void *ctx,
                                hearth_free_cb ctx_free, hearth_error_t *err) {
    int rc = check_client(db, err);
    if (rc)
        return rc;
    op *o = write_op(1, cb, ctx, ctx_free);
    if (!o)
        return hearth__error_code(err, HEARTH_ENOMEM);
    rc = parse_write_path(path, HEARTH__PATH_ALLOW_PRIORITY, &o->parts[0].text,
                          &o->parts[0].path, err);
    if (!rc)
        rc = check_value(&o->parts[0].path, value, o->parts[0].text, err);
    if (rc)
        return drop_op(o, rc);
    o->parts[0].value = hearth_node_incref(value);
    return on_disconnect_submit(db, o, ON_DISCONNECT_SET, err);
}

int hearth_db_on_disconnect_update(hearth_db_t *db, const char *path,
                                   size_t count, const char *const *paths,
                                   const hearth_node_t *const *values,
                                   hearth_completion_cb cb, void *ctx,
                                   hearth_free_cb ctx_free,
                                   hearth_error_t *err) {
    int rc = check_client(db, err);
    if (rc)
        return rc;
    op *o;
    rc = update_op(path, count, paths, values, cb, ctx, ctx_free, &o, err);
    return rc ? rc : on_disconnect_submit(db, o, ON_DISCONNECT_UPDATE, err);
}

int hearth_db_on_disconnect_cancel(hearth_db_t *db, const char *path,
                                   hearth_completion_cb cb, void *ctx,
                                   hearth_free_cb ctx_free,
                                   hearth_error_t *err) {
    int rc = check_client(db, err);
    if (rc)
        return rc;
    op *o = write_op(1, cb, ctx, ctx_free);
    if (!o)
        return hearth__error_code(err, HEARTH_ENOMEM);
    rc = parse_write_path(path, 0, &o->parts[0].text, &o->parts[0].path, err);
    if (rc)
        return drop_op(o, rc);
    return on_disconnect_submit(db, o, ON_DISCONNECT_CANCEL, err);
}

int hearth_db_call(hearth_db_t *db, void (*fn)(void *ctx), void *ctx,
                   hearth_free_cb ctx_free) {
    if (!db || !fn)
        return HEARTH_EINVAL;
    op *o = op_new(OP_CALL);
    if (!o)
        return HEARTH_ENOMEM;
    o->call_fn = fn;
    o->ctx = ctx;
    o->ctx_free = ctx_free;
    return submit(db, o);
}
