/* backend_remote.c - the remote backend: a database opened on a URL hands
 * every operation to the client engine (client/remote.c), whose sync tree
 * holds the data and listeners. The only part of db/ that knows client/. */
#include "db/handle.h"

#include "client/disk.h"
#include "client/remote.h"
#include "net/tls.h"

#include <string.h>

typedef struct remote_db {
    hearth__remote *remote; /* NULL once closed */
    hearth__remote_url url;
    /* The cache to open (config.cache_dir, config.url, cache_size), kept
     * until the loop opens it: NULL without one. */
    char *cache_dir;
    char *cache_url;
    size_t cache_size;
    /* asked for a token on every connection */
    hearth_auth_provider_cb auth_provider;
    void *auth_ctx;
    hearth_free_cb auth_ctx_free;
} remote_db;

static hearth__remote *client_of(hearth_db_t *db) {
    remote_db *r = db->impl;
    return r->remote;
}

/* ---- what the client asks of the handle ---- */

static void remote_raise(void *ctx) {
    hearth_db_t *db = ctx;
    hearth__remote *r = client_of(db);
    if (r)
        atomic_store(&db->server_offset_ms,
                     hearth__remote_server_now(r) - hearth_now_ms());
    hearth__db_raise(db);
}

static void remote_drop(void *ctx, hearth__reg *reg) {
    hearth__db_remove_reg(ctx, reg);
}

static void remote_token_wanted(void *ctx) {
    hearth_db_t *db = ctx;
    remote_db *r = db->impl;
    if (r->auth_provider)
        r->auth_provider(db, r->auth_ctx);
}

static void set_auth_provider(remote_db *r, hearth_auth_provider_cb cb,
                              void *ctx, hearth_free_cb ctx_free) {
    if (r->auth_ctx_free)
        r->auth_ctx_free(r->auth_ctx);
    r->auth_provider = cb;
    r->auth_ctx = ctx;
    r->auth_ctx_free = ctx_free;
}

/* ---- operations ---- */

static void remote_write_done(int status, void *arg) {
    hearth__db_op *o = arg;
    if (o->done)
        o->done(status, o->ctx);
    hearth__db_op_done(o);
}

/* Sends o's parts with send (a write or onDisconnect operation). */
typedef int (*send_fn)(hearth__remote *r, const char *action,
                       const hearth__path *const *paths,
                       hearth_node_t *const *values, size_t n,
                       hearth__db_op *o);

static int send_write(hearth__remote *r, const char *action,
                      const hearth__path *const *paths,
                      hearth_node_t *const *values, size_t n,
                      hearth__db_op *o) {
    (void)action;
    if (n == 0)
        return 1; /* an empty update: nothing to send */
    return hearth__remote_write(r, paths, values, n, remote_write_done, o);
}

static int send_on_disconnect(hearth__remote *r, const char *action,
                              const hearth__path *const *paths,
                              hearth_node_t *const *values, size_t n,
                              hearth__db_op *o) {
    return hearth__remote_on_disconnect(r, action, paths, values, n,
                                        remote_write_done, o);
}

/* Hands o's parts to send; true when the client keeps o. */
static bool send_parts(hearth_db_t *db, hearth__db_op *o, const char *action,
                       send_fn send) {
    /* zeroed: with no parts, nothing reads them (GCC cannot tell) */
    const hearth__path *paths_small[16] = {0};
    hearth_node_t *values_small[16] = {0};
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
    if (!rc)
        rc = send(client_of(db), action, paths, values, o->nparts, o);
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

static bool run_write(hearth_db_t *db, hearth__db_op *o) {
    return send_parts(db, o, NULL, send_write);
}

static void remote_tx_done(int status, bool committed,
                           const hearth_node_t *snapshot, void *arg) {
    hearth__db_op *o = arg;
    o->u.tx.done(status, committed, snapshot, o->ctx);
    hearth__db_op_done(o);
}

static bool run_transaction(hearth_db_t *db, hearth__db_op *o) {
    int rc = hearth__remote_transaction(client_of(db), &o->path, o->u.tx.fn,
                                        o->ctx, remote_tx_done, o);
    if (!rc)
        return true;
    o->u.tx.done(rc, false, hearth__node_empty(), o->ctx);
    return false;
}

static void remote_get_done(int status, const hearth_node_t *value,
                            void *arg) {
    hearth__db_op *o = arg;
    hearth__db_op_answer_get(o, status, value);
    hearth__db_op_done(o);
}

static bool run_get(hearth_db_t *db, hearth__db_op *o) {
    if (hearth__remote_get(client_of(db), &o->path, o->query, remote_get_done,
                           o) == 0)
        return true; /* remote_get_done ends o */
    hearth__db_op_answer_get(o, HEARTH_ENOMEM, NULL);
    return false;
}

static void run_observe(hearth_db_t *db, hearth__db_op *o) {
    hearth__reg *reg = o->u.reg;
    o->u.reg = NULL;
    if (hearth__remote_observe(client_of(db), &o->path, o->query, reg)) {
        if (reg->ctx_free)
            reg->ctx_free(reg->ctx);
        hearth__free(reg);
    }
}

static bool run_client_op(hearth_db_t *db, hearth__db_op *o) {
    static const char *const actions[] = {"o", "om", "oc"};
    remote_db *r = db->impl;
    switch (o->kind) {
    case OP_ONLINE:
        hearth__remote_set_online(r->remote, o->u.online);
        return false;
    case OP_RECONNECT:
        hearth__remote_reconnect_now(r->remote);
        return false;
    case OP_PURGE:
        hearth__remote_purge(r->remote);
        return false;
    case OP_AUTH:
        if (hearth__remote_set_auth(r->remote, o->text) && o->done)
            o->done(HEARTH_ENOMEM, o->ctx);
        return false;
    case OP_AUTH_PROVIDER:
        set_auth_provider(r, o->u.auth_provider, o->ctx, o->ctx_free);
        o->ctx_free = NULL; /* the database keeps ctx */
        hearth__remote_wait_for_token(r->remote, o->u.auth_provider != NULL);
        return false;
    case OP_ON_DISCONNECT:
        return send_parts(db, o, actions[o->u.on_disconnect],
                          send_on_disconnect);
    default:
        return false;
    }
}

/* On the loop thread the client cannot wait for the server: only what
 * it has cached answers. */
static int get_now(hearth_db_t *db, const hearth__path *path,
                   const hearth_query_t *q, hearth_node_t **out,
                   hearth_error_t *err) {
    hearth__remote *r = client_of(db);
    *out = r ? hearth__remote_cached(r, path, q) : NULL;
    return *out ? 0 : hearth__remote_offline_error(err, path, q);
}

static hearth__listeners *listeners(hearth_db_t *db) {
    hearth__remote *r = client_of(db);
    return r ? hearth__remote_listeners(r) : NULL;
}

static void unlink_reg(hearth_db_t *db, hearth__reg *reg) {
    hearth__remote *r = client_of(db);
    if (r)
        hearth__remote_unobserve(r, reg);
}

/* ---- open and close ---- */

static void remote_free(hearth_db_t *db) {
    remote_db *r = db->impl;
    if (!r)
        return;
    set_auth_provider(r, NULL, NULL, NULL);
    hearth__free(r->cache_dir);
    hearth__free(r->cache_url);
    hearth__free(r);
    db->impl = NULL;
}

static int remote_create(hearth_db_t *db, const hearth_db_config_t *config,
                         hearth_error_t *err) {
    remote_db *r = hearth__calloc(1, sizeof *r);
    if (!r)
        return hearth__error_code(err, HEARTH_ENOMEM);
    db->impl = r;
    int rc = hearth__remote_parse_url(config->url, &r->url, err);
    if (!rc && config->transport) {
        r->url.transport = *config->transport;
        if (!r->url.transport.open || !r->url.transport.send ||
            !r->url.transport.close)
            rc = hearth__error(err, HEARTH_EINVAL, NULL,
                               "the transport needs open, send and close");
    } else if (!rc && r->url.tls && !hearth__tls_client_available()) {
        rc = hearth__error(err, HEARTH_EUNSUPPORTED, NULL,
                           "database URL \"%.64s\": this build has no TLS "
                           "client of its own (on macOS and iOS the Swift "
                           "module's transport carries https://)",
                           config->url);
    }
    if (!rc && config->cache_dir) {
        /* The bound is the caller's mistake: said now. The file is opened
         * when the loop starts (open_cache). */
        rc = hearth__disk_check_bound(config->cache_size, err);
        r->cache_size = config->cache_size;
        if (!rc && (!(r->cache_dir = hearth__strndup(config->cache_dir, strlen(config->cache_dir))) ||
                    !(r->cache_url = hearth__strndup(config->url, strlen(config->url)))))
            rc = hearth__error_code(err, HEARTH_ENOMEM);
    }
    if (rc)
        remote_free(db);
    return rc;
}

/* Opens the cache and hands it to the client: its stored writes are
 * queued, in order, before any write made after hearth_db_open, and its
 * data answers the reads and listens that follow. On the loop thread:
 * SQLite's checks, and the salvage of a damaged file, may take a while,
 * and the caller is often an app's main thread. A failure leaves the
 * client without a cache, as a damaged file the disk cannot replace does
 * (client/disk.h: the cache never stops the client). */
static void open_cache(void *ctx) {
    hearth_db_t *db = ctx;
    remote_db *r = db->impl;
    hearth_error_t err;
    hearth__disk *disk = NULL;
    if (!r->remote || !r->cache_dir)
        return;
    if (hearth__disk_open(r->cache_dir, r->cache_url, r->cache_size, &disk,
                          &err)) {
        hearth__log(HEARTH_LOG_ERROR,
                    "the cache in %.200s cannot be used (%s): this client "
                    "keeps its writes and data in memory only",
                    r->cache_dir, err.message);
        return;
    }
    hearth__remote_use_disk(r->remote, disk); /* taken over */
}

static int remote_start(hearth_db_t *db) {
    remote_db *r = db->impl;
    const hearth__remote_hooks hooks = {remote_raise, remote_drop,
                                        remote_token_wanted, db};
    if (hearth__remote_open(db->loop, &r->url, &db->events, &hooks,
                            &r->remote))
        return HEARTH_ELOOP;
    if (!r->cache_dir)
        return 0;
    /* The caller's loop: this is its thread, and nothing can come before. */
    if (!db->owns_loop) {
        open_cache(db);
        return 0;
    }
    /* Its own loop: the first operation there, ahead of every call that
     * follows hearth_db_open (the queue runs in order). */
    return hearth_db_call(db, open_cache, db, NULL) ? HEARTH_ELOOP : 0;
}

static void settle(hearth_db_t *db, bool may_wait) {
    (void)db; /* the server acknowledges, in its own time */
    (void)may_wait;
}

static bool quiet(hearth_db_t *db) {
    (void)db;
    return true;
}

static void remote_stop(hearth_db_t *db) {
    remote_db *r = db->impl;
    if (r->remote)
        hearth__remote_close(r->remote);
    r->remote = NULL;
}

static int remote_close(hearth_db_t *db) {
    remote_stop(db);
    return 0;
}

const hearth__db_backend hearth__db_remote = {
    .name = "remote",
    .client = true,
    .create = remote_create,
    .start = remote_start,
    .write = run_write,
    .transaction = run_transaction,
    .get = run_get,
    .observe = run_observe,
    .client_op = run_client_op,
    .get_now = get_now,
    .offline_error = hearth__remote_offline_error,
    .listeners = listeners,
    .unlink = unlink_reg,
    .settle = settle,
    .quiet = quiet,
    .stop = remote_stop,
    .close = remote_close,
    .free = remote_free,
};
