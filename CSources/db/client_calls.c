/* client_calls.c - the public calls only a client of a server has:
 * onDisconnect, auth tokens, online/offline, purging writes. An embedded
 * database refuses or ignores them, as each says. */
#include "db/check.h"

#include <string.h>

int hearth_db_purge_outstanding_writes(hearth_db_t *db) {
    if (!db)
        return HEARTH_EINVAL;
    if (!db->backend->client)
        return 0; /* embedded writes never wait for anyone */
    hearth__db_op *o;
    int rc = hearth__db_op_create(OP_PURGE, &o);
    return rc ? rc : hearth__db_submit(db, o);
}

/* A client-only operation of kind for db, not yet submitted; or
 * HEARTH_EINVAL, HEARTH_EUNSUPPORTED (embedded) or HEARTH_ENOMEM. */
static int client_op(hearth_db_t *db, hearth__db_op_kind kind,
                     hearth__db_op **out) {
    if (!db)
        return HEARTH_EINVAL;
    if (!db->backend->client)
        return HEARTH_EUNSUPPORTED;
    return hearth__db_op_create(kind, out);
}

int hearth_db_set_auth_token(hearth_db_t *db, const char *token) {
    hearth__db_op *o;
    int rc = client_op(db, OP_AUTH, &o);
    if (rc)
        return rc;
    if (token && !(o->text = hearth__strndup(token, strlen(token)))) {
        hearth__db_op_free(o);
        return HEARTH_ENOMEM;
    }
    return hearth__db_submit(db, o);
}

int hearth_db_set_auth_provider(hearth_db_t *db, hearth_auth_provider_cb cb,
                                void *ctx, hearth_free_cb ctx_free) {
    hearth__db_op *o;
    int rc = client_op(db, OP_AUTH_PROVIDER, &o);
    if (rc)
        return rc;
    o->u.auth_provider = cb;
    o->ctx = ctx;
    o->ctx_free = ctx_free;
    return hearth__db_submit(db, o);
}

int hearth_db_set_online(hearth_db_t *db, bool online) {
    hearth__db_op *o;
    int rc = client_op(db, OP_ONLINE, &o);
    if (rc)
        return rc;
    o->u.online = online;
    return hearth__db_submit(db, o);
}

int hearth_db_reconnect_now(hearth_db_t *db) {
    hearth__db_op *o;
    int rc = client_op(db, OP_RECONNECT, &o);
    return rc ? rc : hearth__db_submit(db, o);
}

static int on_disconnect_submit(hearth_db_t *db, hearth__db_op *o, int kind,
                                hearth_error_t *err) {
    o->kind = OP_ON_DISCONNECT;
    o->u.on_disconnect = kind;
    return hearth__db_queue(db, o, err);
}

static int check_client(hearth_db_t *db, hearth_error_t *err) {
    if (!db)
        return hearth__error(err, HEARTH_EINVAL, NULL, "db is NULL");
    if (!db->backend->client)
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
    hearth__db_op *o;
    rc = hearth__db_set_op(path, value, cb, ctx, ctx_free, &o, err);
    if (rc)
        return rc;
    return on_disconnect_submit(db, o, HEARTH__ON_DISCONNECT_SET, err);
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
    hearth__db_op *o;
    rc = hearth__db_update_op(path, count, paths, values, cb, ctx, ctx_free,
                              &o, err);
    return rc ? rc
              : on_disconnect_submit(db, o, HEARTH__ON_DISCONNECT_UPDATE, err);
}

int hearth_db_on_disconnect_cancel(hearth_db_t *db, const char *path,
                                   hearth_completion_cb cb, void *ctx,
                                   hearth_free_cb ctx_free,
                                   hearth_error_t *err) {
    int rc = check_client(db, err);
    if (rc)
        return rc;
    hearth__db_op *o;
    if (hearth__db_write_op_create(1, cb, ctx, ctx_free, &o))
        return hearth__error_code(err, HEARTH_ENOMEM);
    rc = hearth__db_parse_write_path(path, 0, &o->parts[0].text,
                                     &o->parts[0].path, err);
    if (rc)
        return hearth__db_drop_op(o, rc);
    return on_disconnect_submit(db, o, HEARTH__ON_DISCONNECT_CANCEL, err);
}