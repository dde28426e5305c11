/* calls.c - the public calls that write, read and listen: arguments
 * checked (db/check.h), then queued as one operation for the backend. */
#include "db/check.h"

#include <string.h>

/* Marks o to be judged as who when it is applied (who NULL: not judged). */
static void judge_as(hearth__db_op *o, const hearth__db_caller *who) {
    if (!who)
        return;
    o->quiet = who->quiet;
    if (who->unjudged)
        return;
    o->judged = true;
    o->auth = hearth_node_incref(who->auth);
    o->door = who->door;
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
    return hearth__db_set_if_as(db, who, NULL, path, value, cb, ctx, ctx_free,
                                err);
}

int hearth__db_set_if_as(hearth_db_t *db, const hearth__db_caller *who,
                         const char *if_hash, const char *path,
                         const hearth_node_t *value, hearth_completion_cb cb,
                         void *ctx, hearth_free_cb ctx_free,
                         hearth_error_t *err) {
    if (!db)
        return hearth__error(err, HEARTH_EINVAL, NULL, "db is NULL");
    if (if_hash && strlen(if_hash) >= HEARTH_HASH_SIZE)
        return hearth__error(err, HEARTH_EINVAL, NULL, "not a hash: %.40s",
                             if_hash);
    hearth__db_op *o;
    int rc = hearth__db_set_op(path, value, cb, ctx, ctx_free, &o, err);
    if (rc)
        return rc;
    judge_as(o, who);
    if (if_hash) {
        o->conditional = true;
        strcpy(o->if_hash, if_hash);
    }
    return hearth__db_queue(db, o, err);
}

int hearth_db_remove(hearth_db_t *db, const char *path, hearth_completion_cb cb,
                     void *ctx, hearth_free_cb ctx_free, hearth_error_t *err) {
    return hearth_db_set(db, path, hearth__node_empty(), cb, ctx, ctx_free,
                         err);
}

static int update_as(hearth_db_t *db, const hearth__db_caller *who,
                     const char *path, size_t count, const char *const *paths,
                     const hearth_node_t *const *values,
                     hearth_completion_cb cb, void *ctx,
                     hearth_free_cb ctx_free, hearth_error_t *err) {
    if (!db)
        return hearth__error(err, HEARTH_EINVAL, NULL, "db is NULL");
    hearth__db_op *o;
    int rc = hearth__db_update_op(path, count, paths, values, cb, ctx, ctx_free,
                                  &o, err);
    if (rc)
        return rc;
    judge_as(o, who);
    return hearth__db_queue(db, o, err);
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

int hearth__db_update_parts_as(hearth_db_t *db, const hearth__db_caller *who,
                               const char *path, const hearth__update_parts *u,
                               hearth_completion_cb cb, void *ctx,
                               hearth_free_cb ctx_free, hearth_error_t *err) {
    return update_as(db, who, path, u->n, u->paths,
                     (const hearth_node_t *const *)u->values, cb, ctx,
                     ctx_free, err);
}

int hearth_db_push(hearth_db_t *db, const char *path,
                   const hearth_node_t *value,
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
    char *full = hearth__db_join(path, key);
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
    hearth__db_op *o;
    if (hearth__db_op_create(OP_TRANSACTION, &o))
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = hearth__db_parse_write_path(path, 0, &o->text, &o->path, err);
    if (rc)
        return hearth__db_drop_op(o, rc);
    o->u.tx.fn = update;
    o->u.tx.done = done;
    o->ctx = ctx;
    o->ctx_free = ctx_free;
    return hearth__db_queue(db, o, err);
}

static int read_op(hearth__db_op_kind kind, const char *path, unsigned flags,
                   const hearth_query_t *query, hearth__db_op **out,
                   hearth_error_t *err) {
    hearth__db_op *o;
    if (hearth__db_op_create(kind, &o))
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = hearth__db_parse_path(path, flags, &o->text, &o->path, err);
    if (!rc && query && !(o->query = hearth_query_copy(query)))
        rc = hearth__error_code(err, HEARTH_ENOMEM);
    if (rc)
        return hearth__db_drop_op(o, rc);
    *out = o;
    return 0;
}

/* A read from another thread: queued, and waited for. */
static int get_waiting(hearth_db_t *db, hearth__db_op *o, hearth_node_t **out,
                       hearth_error_t *err) {
    uv_sem_t sem;
    if (uv_sem_init(&sem, 0)) {
        hearth__db_op_free(o);
        return hearth__error_code(err, HEARTH_ELOOP);
    }
    int result = 0;
    o->u.get.sem = &sem;
    o->u.get.out = out;
    o->u.get.rc = &result;
    int rc = hearth__db_submit(db, o);
    if (!rc) {
        uv_sem_wait(&sem);
        rc = result;
    }
    uv_sem_destroy(&sem);
    return rc;
}

int hearth_db_get(hearth_db_t *db, const char *path,
                  const hearth_query_t *query, hearth_node_t **out,
                  hearth_error_t *err) {
    if (!db || !out)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    hearth__db_op *o;
    int rc = read_op(OP_GET, path, HEARTH__PATH_ALLOW_PRIORITY, query, &o, err);
    if (rc)
        return rc;
    if (hearth__db_on_loop_thread(db)) {
        /* Reads need no ordering against deferred work: answer now. */
        rc = db->backend->get_now(db, &o->path, o->query, out, err);
        hearth__db_op_free(o);
        return rc;
    }
    rc = get_waiting(db, o, out, err);
    hearth__path at;
    if (rc == HEARTH_EOFFLINE && db->backend->offline_error &&
        !hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &at, NULL))
        return db->backend->offline_error(err, &at, query);
    return rc ? hearth__error_code(err, rc) : 0;
}

int hearth_db_get_async(hearth_db_t *db, const char *path,
                        const hearth_query_t *query, hearth_get_cb cb,
                        void *ctx, hearth_free_cb ctx_free,
                        hearth_error_t *err) {
    if (!db || !cb)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    hearth__db_op *o;
    int rc = read_op(OP_GET, path, HEARTH__PATH_ALLOW_PRIORITY |
                     (db->backend->client ? HEARTH__PATH_ALLOW_INFO : 0),
                     query, &o, err);
    if (rc)
        return rc;
    o->u.get.cb = cb;
    o->ctx = ctx;
    o->ctx_free = ctx_free;
    return hearth__db_queue(db, o, err);
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
    hearth__db_op *o;
    unsigned flags = db->backend->client ? HEARTH__PATH_ALLOW_INFO : 0;
    int rc = read_op(OP_OBSERVE, path, flags, query, &o, err);
    if (rc)
        return rc;
    hearth__reg *reg = hearth__calloc(1, sizeof *reg);
    if (!reg)
        return hearth__db_drop_op(o, hearth__error_code(err, HEARTH_ENOMEM));
    reg->handle = atomic_fetch_add(&db->next_handle, 1);
    reg->mask = mask;
    reg->cb = cb;
    reg->ctx = ctx;
    reg->ctx_free = ctx_free;
    o->u.reg = reg;
    *handle = reg->handle;
    rc = hearth__db_submit(db, o);
    if (rc) { /* submit freed o, not the registration */
        hearth__free(reg);
        return hearth__error_code(err, rc);
    }
    return 0;
}

int hearth_db_remove_observer(hearth_db_t *db, hearth_observer_t handle) {
    if (!db || !handle)
        return HEARTH_EINVAL;
    if (hearth__db_on_loop_thread(db)) {
        hearth__listeners *l = db->backend->listeners(db);
        hearth__reg *reg = l ? hearth__listeners_find(l, handle) : NULL;
        if (!reg || reg->removed)
            return HEARTH_ENOTFOUND;
        hearth__db_remove_reg(db, reg);
        return 0;
    }
    hearth__db_op *o;
    if (hearth__db_op_create(OP_UNOBSERVE, &o))
        return HEARTH_ENOMEM;
    o->u.handle = handle;
    return hearth__db_submit(db, o);
}

int hearth_db_remove_observers_at(hearth_db_t *db, const char *path,
                                  hearth_error_t *err) {
    if (!db)
        return hearth__error(err, HEARTH_EINVAL, NULL, "db is NULL");
    hearth__db_op *o;
    int rc = read_op(OP_UNOBSERVE_AT, path, 0, NULL, &o, err);
    if (rc)
        return rc;
    return hearth__db_queue(db, o, err);
}