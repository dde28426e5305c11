/* queue.c - the handle's operation queue and raising discipline: posts
 * from any thread, runs each operation on the loop thread through the
 * backend (one dispatch for every backend), defers what callbacks ask for
 * until their batch of events is raised. */
#include "db/handle.h"
#include "db/db.h"

bool hearth__db_on_loop_thread(hearth_db_t *db) {
    uv_thread_t self = uv_thread_self();
    return uv_thread_equal(&self, &db->loop_thread);
}

static hearth__listeners *listeners_of(hearth_db_t *db) {
    return db->backend->listeners(db);
}

static void sweep_doomed(hearth_db_t *db) {
    for (size_t i = 0; i < db->ndoomed; i++)
        db->backend->unlink(db, db->doomed[i]);
    db->ndoomed = 0;
}

void hearth__db_raise(hearth_db_t *db) {
    db->raising++;
    hearth__events_raise(&db->events);
    db->raising--;
    if (!db->raising)
        sweep_doomed(db);
}

void hearth__db_remove_reg(hearth_db_t *db, hearth__reg *reg) {
    if (reg->removed)
        return;
    reg->removed = true;
    if (!db->raising) {
        db->backend->unlink(db, reg);
        return;
    }
    hearth__reg **d = hearth__grow(db->doomed, &db->doomed_cap,
                                   db->ndoomed + 1, sizeof *d);
    if (!d) /* cannot defer: it is marked removed, free it at close */
        return;
    db->doomed = d;
    db->doomed[db->ndoomed++] = reg;
}

static void run_unobserve(hearth_db_t *db, hearth__db_op *o) {
    hearth__listeners *l = listeners_of(db);
    hearth__reg *reg = l ? hearth__listeners_find(l, o->u.handle) : NULL;
    if (reg)
        hearth__db_remove_reg(db, reg);
}

static void run_unobserve_at(hearth_db_t *db, hearth__db_op *o) {
    hearth__listeners *l = listeners_of(db);
    hearth__tnode *t = l ? hearth__listeners_at(l, &o->path) : NULL;
    if (!t)
        return;
    /* Collect first: removal may free the trie node when not raising. */
    size_t n = 0;
    for (hearth__view *v = hearth__view_first(t); v;
         v = hearth__view_next(t, v))
        for (hearth__reg *r = hearth__reg_first(v); r;
             r = hearth__reg_next(v, r))
            n++;
    hearth__reg **regs = hearth__malloc((n ? n : 1) * sizeof *regs);
    if (!regs)
        return;
    n = 0;
    for (hearth__view *v = hearth__view_first(t); v;
         v = hearth__view_next(t, v))
        for (hearth__reg *r = hearth__reg_first(v); r;
             r = hearth__reg_next(v, r))
            regs[n++] = r;
    for (size_t i = 0; i < n; i++)
        hearth__db_remove_reg(db, regs[i]);
    hearth__free(regs);
}

/* Runs o through the backend; ends it unless the backend keeps it. */
static void run_op(hearth_db_t *db, hearth__db_op *o) {
    const hearth__db_backend *be = db->backend;
    bool keep = false;
    switch (o->kind) {
    case OP_WRITE:
        keep = be->write(db, o);
        break;
    case OP_TRANSACTION:
        keep = be->transaction(db, o);
        break;
    case OP_GET:
        keep = be->get(db, o);
        break;
    case OP_OBSERVE:
        be->observe(db, o);
        break;
    case OP_UNOBSERVE:
        run_unobserve(db, o);
        break;
    case OP_UNOBSERVE_AT:
        run_unobserve_at(db, o);
        break;
    case OP_CALL:
        o->u.call(o->ctx);
        break;
    case OP_STOP:
        be->stop(db);
        uv_close((uv_handle_t *)&db->wake, NULL);
        break;
    default: /* only queued for a client of a server */
        keep = be->client_op && be->client_op(db, o);
        break;
    }
    if (!keep)
        hearth__db_op_done(o);
}

/* Runs o and then whatever its callbacks asked for, in order. */
static void run_now(hearth_db_t *db, hearth__db_op *o) {
    run_op(db, o);
    hearth__list *n;
    while (!db->raising && (n = hearth__list_pop_front(&db->deferred)))
        run_op(db, HEARTH__LIST_ITEM(n, hearth__db_op, link));
}

void hearth__db_on_wake(uv_async_t *handle) {
    hearth_db_t *db = handle->data;
    hearth__list batch = {0};
    uv_mutex_lock(&db->lock);
    hearth__list_splice_back(&batch, &db->queue);
    uv_mutex_unlock(&db->lock);
    for (hearth__list *n; (n = hearth__list_pop_front(&batch));) {
        hearth__db_op *o = HEARTH__LIST_ITEM(n, hearth__db_op, link);
        if (db->closed && o->kind != OP_STOP) /* closed by a callback */
            hearth__db_op_cancel(o);
        else
            run_now(db, o);
    }
    db->backend->settle(db, false);
}

/* On the loop thread: now, or after the batch being raised. */
static int submit_here(hearth_db_t *db, hearth__db_op *o) {
    if (db->closed) {
        hearth__db_op_free(o);
        return HEARTH_ECLOSED;
    }
    if (db->raising) {
        hearth__list_push_back(&db->deferred, &o->link);
    } else {
        run_now(db, o);
        db->backend->settle(db, true);
    }
    return 0;
}

int hearth__db_submit(hearth_db_t *db, hearth__db_op *o) {
    if (hearth__db_on_loop_thread(db))
        return submit_here(db, o);
    uv_mutex_lock(&db->lock);
    bool closed = db->closed;
    if (!closed)
        hearth__list_push_back(&db->queue, &o->link);
    uv_mutex_unlock(&db->lock);
    if (closed) {
        hearth__db_op_free(o);
        return HEARTH_ECLOSED;
    }
    uv_async_send(&db->wake);
    return 0;
}

bool hearth__db_unavailable(hearth_db_t *db) {
    return db->backend->unavailable && db->backend->unavailable(db);
}

bool hearth__db_quiet(hearth_db_t *db) {
    uv_mutex_lock(&db->lock);
    bool queued = !hearth__list_empty(&db->queue);
    uv_mutex_unlock(&db->lock);
    return !queued && !db->raising && hearth__list_empty(&db->deferred) &&
           db->backend->quiet(db);
}

int hearth_db_call(hearth_db_t *db, void (*fn)(void *ctx), void *ctx,
                   hearth_free_cb ctx_free) {
    if (!db || !fn)
        return HEARTH_EINVAL;
    hearth__db_op *o;
    if (hearth__db_op_create(OP_CALL, &o))
        return HEARTH_ENOMEM;
    o->u.call = fn;
    o->ctx = ctx;
    o->ctx_free = ctx_free;
    return hearth__db_submit(db, o);
}
