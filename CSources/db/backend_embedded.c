/* backend_embedded.c - the embedded backend: one immutable root in this
 * process and its listener index. Writes resolve server values, are
 * judged (the handle's rules, or the owner's judge for hearth__db_*_as),
 * applied as one new root, logged, and raise events; their
 * acknowledgements wait for the commit (db/commit.c). */
#include "db/embedded.h"
#include "tree/json.h"

#include <stdio.h>
#include <string.h>

hearth__embedded *hearth__embedded_of(hearth_db_t *db) {
    return db->backend->embedded_impl ? db->impl : NULL;
}

/* The path of a view, rebuilt from its trie node. */
static void view_path(const hearth__view *v, hearth__path *at) {
    hearth__tnode *chain[HEARTH_MAX_DEPTH + 1];
    unsigned depth = 0;
    for (hearth__tnode *t = v->at; t->parent; t = t->parent)
        chain[depth++] = t;
    at->n = depth;
    at->priority = at->info = false;
    for (unsigned d = 0; d < depth; d++)
        at->seg[d] = hearth__key_name(chain[depth - 1 - d]->key);
}

int hearth__embedded_generate(hearth_db_t *db, const hearth_node_t *old_root,
                              const hearth__path *const *paths, size_t n) {
    hearth__embedded *e = db->impl;
    hearth__view **views;
    size_t nviews;
    int rc = hearth__listeners_collect(&e->listeners, paths, n, &views,
                                       &nviews);
    hearth__path at;
    for (size_t i = 0; !rc && i < nviews; i++) {
        view_path(views[i], &at);
        rc = hearth__view_generate(views[i], hearth__node_at(old_root, &at),
                                   hearth__node_at(e->root, &at), &db->events);
    }
    hearth__free(views);
    return rc;
}

/* ---- writes ---- */

/* Whether the rules let o's write stand: judged against the data with the
 * whole write applied (new_root), exactly as it would be stored. */
static bool write_allowed(hearth__embedded *e, const hearth__db_op *o,
                          const hearth__path *const *paths,
                          const hearth_node_t *new_root, int64_t now) {
    if (e->rules) {
        hearth__access a = {e->auth, (double)now, e->root, NULL};
        return hearth__ruleset_can_write(e->rules, paths, o->nparts, new_root,
                                         &a);
    }
    if (!o->judged)
        return true;
    /* Fail closed: a judged write with nobody to judge it is refused. */
    return e->judge && e->judge(e->judge_ctx, o->auth, o->door, paths, o->nparts,
                                e->root, new_root, (double)now);
}

/* The first write that changes a database opened in memory with a place
 * for its store (hearth__db_store_on_write): the store is made there now,
 * its directory with it. Nothing else may have been stored there since. */
static int open_store_later(hearth__embedded *e) {
    hearth_node_t *stored = NULL;
    hearth_error_t err;
    int rc = hearth__store_open(e->store_later, e->store_later_fsync,
                                &e->store, &stored, NULL, &err);
    if (rc) /* the write fails with rc; operators see why */
        hearth__log(HEARTH_LOG_WARNING, "%s", err.message);
    if (!rc)
        hearth__store_set_retention(e->store, e->retain_ms);
    if (!rc && !hearth_node_equal(stored, e->root)) {
        hearth__store_close(e->store); /* someone else's data: keep out */
        e->store = NULL;
        rc = HEARTH_EIO;
    }
    hearth_node_decref(stored);
    if (!rc) {
        hearth__free(e->store_later);
        e->store_later = NULL;
    }
    return rc;
}

/* Who made o's write, as its log record names them (never a token):
 * "admin" (not judged: the server's admin, or the embedding program),
 * "anonymous", or "uid:" and the auth's uid. */
static const char *identity_of(const hearth__embedded *e,
                               const hearth__db_op *o, char *buf,
                               size_t size) {
    const hearth_node_t *auth = e->rules ? e->auth : o->auth;
    if (!e->rules && !o->judged && !o->judged_there)
        return o->quiet ? HEARTH__DB_QUIET_IDENTITY : "admin";
    if (!auth || hearth_node_is_null(auth))
        return "anonymous";
    size_t len = 0;
    const char *uid =
        hearth_node_string_value(hearth_node_child(auth, "uid"), &len);
    snprintf(buf, size, "uid:%.*s", uid ? (int)len : 0, uid ? uid : "");
    return buf;
}

/* Whether the new root stands: allowed, and logged when durable. */
static int admit(hearth__embedded *e, const hearth__db_op *o,
                 const hearth__path *const *paths,
                 const hearth_node_t *const *values, const hearth_node_t *root,
                 int64_t now) {
    if (!write_allowed(e, o, paths, root, now))
        return HEARTH_EDENIED;
    /* Only a write that stands and changes something makes the store. */
    int rc = 0;
    if (!e->store && e->store_later && !hearth_node_equal(root, e->root))
        rc = open_store_later(e);
    char who[HEARTH_MAX_KEY_BYTES + 8];
    if (!rc && e->store)
        rc = hearth__store_append_by(e->store, identity_of(e, o, who, sizeof who),
                                     now, paths, values, o->nparts);
    return rc;
}

/* Makes root the current one and queues the events of the change. */
static void install(hearth_db_t *db, const hearth__db_op *o,
                    hearth_node_t *root, const hearth__path *const *paths,
                    size_t n) {
    hearth__embedded *e = db->impl;
    hearth_node_t *old_root = e->root;
    e->root = root;
    if (e->tap && !o->quiet) /* an import's: no triggers */
        e->tap->applied(e->tap_ctx, old_root, root, paths, n,
                        o->judged || o->judged_there, o->auth,
                        e->store != NULL);
    /* The write stands even if its events cannot be built (no memory):
     * the data is consistent, only those notifications are lost. */
    if (hearth__embedded_generate(db, old_root, paths, n))
        hearth__events_clear(&db->events);
    hearth_node_decref(old_root);
}

/* A compare-and-set's condition: 0 when the data at its path still has
 * the hash, HEARTH_EDATASTALE when not (nothing is written then). */
static int hash_holds(const hearth__embedded *e, const hearth__db_op *o) {
    if (!o->conditional || o->nparts != 1)
        return 0;
    char have[HEARTH_HASH_SIZE];
    const hearth_node_t *now = hearth__node_at(e->root, &o->parts[0].path);
    if (hearth_node_hash(now, have))
        return HEARTH_ENOMEM;
    return strcmp(have, o->if_hash) ? HEARTH_EDATASTALE : 0;
}

/* Resolves server values and applies every part to the root as one write,
 * logs it, or changes nothing. */
/* Why a write was refused, where: its first part's path (err may be
 * NULL). */
static int refused(const hearth__db_op *o, int code, hearth_error_t *err) {
    char path[256] = "/";
    if (o->nparts)
        hearth__path_format(&o->parts[0].path, o->parts[0].path.n, path,
                            sizeof path);
    if (code == HEARTH_EDENIED)
        return hearth__error(err, code, path, "Permission denied: the rules "
                             "do not allow this write at %s", path);
    if (code == HEARTH_EDATASTALE)
        return hearth__error(err, code, path, "the data at %s changed since "
                             "its hash was read; nothing was written", path);
    return hearth__error_code(err, code);
}

static int apply_write(hearth_db_t *db, hearth__db_op *o, hearth_error_t *err) {
    hearth__embedded *e = db->impl;
    int64_t now = hearth_now_ms();
    hearth_node_t *root = hearth_node_incref(e->root);
    const hearth__path *paths_small[16];
    hearth_node_t *values_small[16];
    bool small = o->nparts <= 16;
    const hearth__path **paths =
        small ? paths_small : hearth__malloc(o->nparts * sizeof *paths);
    hearth_node_t **values =
        small ? values_small : hearth__calloc(o->nparts, sizeof *values);
    int rc = paths && values ? hash_holds(e, o) : HEARTH_ENOMEM;
    size_t resolved = 0;
    for (size_t i = 0; !rc && i < o->nparts; i++) {
        hearth__db_write_part *w = &o->parts[i];
        const hearth_node_t *existing = hearth__node_at(e->root, &w->path);
        if (w->path.priority)
            existing = hearth__prio(existing);
        paths[i] = &w->path;
        rc = hearth__node_resolve_sv(w->value, existing, now, &values[i]);
        if (!rc) {
            resolved++;
            rc = hearth__node_set_path(&root, &w->path, values[i], err);
        }
    }
    if (!rc)
        rc = admit(e, o, paths, (const hearth_node_t *const *)values, root,
                   now);
    if (rc == HEARTH_EDENIED || rc == HEARTH_EDATASTALE)
        refused(o, rc, err);
    for (size_t i = 0; i < resolved; i++)
        hearth_node_decref(values[i]);
    if (rc)
        hearth_node_decref(root);
    else
        install(db, o, root, paths, o->nparts);
    if (!small) {
        hearth__free(paths);
        hearth__free(values);
    }
    return rc;
}

static bool run_write(hearth_db_t *db, hearth__db_op *o) {
    hearth_error_t err = {0};
    int rc = apply_write(db, o, &err);
    hearth__db_raise(db);
    if (hearth__commit_defer_ack(db, o, rc))
        return true;
    if (o->done) {
        const hearth_error_t *outer = hearth__completion_error_begin(&err);
        o->done(rc, o->ctx);
        hearth__completion_error_end(outer);
    }
    return false;
}

static bool run_transaction(hearth_db_t *db, hearth__db_op *o) {
    hearth__embedded *e = db->impl;
    hearth_node_t *current = hearth_node_incref(hearth__node_at(e->root, &o->path));
    hearth_node_t *result = NULL;
    int verdict = o->u.tx.fn(current, &result, o->ctx);
    int rc = 0;
    if (verdict != HEARTH_TX_COMMIT || !result)
        rc = HEARTH_EABORTED;
    else if (o->path.n + (unsigned)hearth__node_depth(result) >
             HEARTH_MAX_DEPTH)
        rc = HEARTH_EDEPTH;
    else if (!(o->parts = hearth__calloc(1, sizeof *o->parts)))
        rc = HEARTH_ENOMEM;
    if (rc) {
        hearth_node_decref(result);
        o->u.tx.done(rc, false, current, o->ctx);
        hearth_node_decref(current);
        return false;
    }
    hearth_node_decref(current);
    o->nparts = 1;
    o->parts[0].path = o->path; /* views into o->text, freed with o */
    o->parts[0].value = result;
    hearth_error_t err = {0};
    rc = apply_write(db, o, &err);
    hearth__db_raise(db);
    o->u.tx.snapshot = hearth_node_incref(hearth__node_at(e->root, &o->path));
    if (hearth__commit_defer_ack(db, o, rc))
        return true;
    const hearth_error_t *outer = hearth__completion_error_begin(&err);
    o->u.tx.done(rc, rc == 0, o->u.tx.snapshot, o->ctx);
    hearth__completion_error_end(outer);
    return false;
}

/* ---- reads and listens ---- */

/* The value a read of path sees (its priority for ".priority" paths). */
static const hearth_node_t *read_at(const hearth_node_t *root,
                                    const hearth__path *p) {
    const hearth_node_t *n = hearth__node_at(root, p);
    return p->priority ? hearth__prio(n) : n;
}

/* Whether the rules (if any) let this handle read path with query. */
static bool may_read(hearth__embedded *e, const hearth__path *path,
                     const hearth_query_t *query) {
    if (!e->rules)
        return true;
    hearth_node_t *query_var = NULL;
    if (query && !hearth__query_is_default(query)) {
        char *wire = hearth_query_to_json(query);
        json_t *q = wire ? json_loads(wire, 0, NULL) : NULL;
        hearth__free(wire);
        query_var = hearth__rules_query_variable(q);
        json_decref(q);
    }
    hearth__access a = {e->auth, (double)hearth_now_ms(), e->root, query_var};
    bool ok = hearth__ruleset_can_read(e->rules, path, &a);
    hearth_node_decref(query_var);
    return ok;
}

/* What path with query shows now, as a new reference. */
static int read_now(hearth__embedded *e, const hearth__path *path,
                    const hearth_query_t *q, hearth_node_t **out) {
    if (!may_read(e, path, q))
        return HEARTH_EDENIED;
    return hearth__query_view_node(q, read_at(e->root, path), out);
}

static bool run_get(hearth_db_t *db, hearth__db_op *o) {
    hearth_node_t *shown = NULL;
    int rc = read_now(db->impl, &o->path, o->query, &shown);
    hearth__db_op_answer_get(o, rc, shown);
    hearth_node_decref(shown);
    return false;
}

static int get_now(hearth_db_t *db, const hearth__path *path,
                   const hearth_query_t *q, hearth_node_t **out,
                   hearth_error_t *err) {
    int rc = read_now(db->impl, path, q, out);
    return rc ? hearth__error_code(err, rc) : 0;
}

static void run_observe(hearth_db_t *db, hearth__db_op *o) {
    hearth__embedded *e = db->impl;
    hearth__reg *reg = o->u.reg;
    o->u.reg = NULL;
    if (hearth__listeners_add(&e->listeners, &o->path, o->query, reg)) {
        /* No memory for the registration: it ends at once. */
        if (reg->ctx_free)
            reg->ctx_free(reg->ctx);
        hearth__free(reg);
        return;
    }
    if (!may_read(e, &o->path, o->query)) {
        /* Refused: it hears why, then ends (as a server's refusal). */
        hearth__events_push_cancel(&db->events, reg, HEARTH_EDENIED);
        hearth__db_raise(db);
        hearth__db_remove_reg(db, reg);
        return;
    }
    if (hearth__reg_initial_events(reg, hearth__node_at(e->root, &o->path),
                                   &db->events))
        hearth__events_clear(&db->events);
    hearth__db_raise(db);
}

static hearth__listeners *listeners(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    return &e->listeners;
}

static void unlink_reg(hearth_db_t *db, hearth__reg *reg) {
    hearth__embedded *e = db->impl;
    hearth__listeners_remove(&e->listeners, reg);
}

/* ---- open and close ---- */

/* The rules and the user an embedded handle is judged by. */
static int open_rules(hearth__embedded *e, const hearth_db_config_t *config,
                      hearth_error_t *err) {
    if (!config->rules)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "auth_variable needs rules to judge it by");
    json_t *doc = NULL;
    int rc = hearth__rules_parse(config->rules, strlen(config->rules), &doc,
                                 err);
    if (!rc)
        rc = hearth__ruleset_compile(doc, &e->rules, err);
    json_decref(doc);
    if (rc || !config->auth_variable)
        return rc;
    rc = hearth_node_from_json(config->auth_variable, (size_t)-1, 0, &e->auth,
                               err);
    if (rc)
        return hearth__error(err, rc, NULL, "auth_variable: %s", err->message);
    if (hearth_node_is_null(e->auth)) {
        hearth_node_decref(e->auth);
        e->auth = NULL;
    }
    return 0;
}

/* The data: from data_dir, or an empty tree in memory. */
static int open_data(hearth__embedded *e, const hearth_db_config_t *config,
                     hearth_error_t *err) {
    if (!config || !config->data_dir) {
        e->root = hearth_node_null();
        return 0;
    }
    hearth__store_report report = {0};
    int rc = hearth__store_open(config->data_dir, config->fsync_mode,
                                &e->store, &e->root, &report, err);
    if (!rc && report.torn_bytes)
        /* Data was recovered up to a crash: say so where operators look. */
        hearth__log(HEARTH_LOG_ERROR,
                "%s: recovered up to the last complete commit; cut "
                "%llu bytes of a commit torn by a crash (never acknowledged) "
                "off log.%llu at offset %llu",
                config->data_dir, (unsigned long long)report.torn_bytes,
                (unsigned long long)report.torn_gen,
                (unsigned long long)report.torn_offset);
    if (!rc)
        e->durable_root = hearth_node_incref(e->root);
    return rc;
}

static void embedded_free(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    if (!e)
        return;
    if (e->tap_ctx_free)
        e->tap_ctx_free(e->tap_ctx);
    hearth__free(e->store_later);
    hearth__ruleset_free(e->rules);
    hearth_node_decref(e->auth);
    hearth__store_close(e->store); /* commits and syncs what is left */
    hearth__listeners_destroy(&e->listeners); /* runs every ctx_free */
    hearth_node_decref(e->root);
    hearth_node_decref(e->durable_root);
    hearth__free(e);
    db->impl = NULL;
}

static int embedded_create(hearth_db_t *db, const hearth_db_config_t *config,
                           hearth_error_t *err) {
    hearth__embedded *e = hearth__calloc(1, sizeof *e);
    if (!e)
        return hearth__error_code(err, HEARTH_ENOMEM);
    db->impl = e;
    int rc = 0;
    if (config && (config->rules || config->auth_variable))
        rc = open_rules(e, config, err);
    if (!rc)
        rc = open_data(e, config, err);
    if (!rc && (rc = hearth__listeners_init(&e->listeners)))
        rc = hearth__error_code(err, rc);
    if (rc)
        embedded_free(db);
    return rc;
}

static int embedded_start(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    uv_idle_init(db->loop, &e->commit_idle);
    e->commit_idle.data = db;
    e->sync_estimate_ns = 2 * HEARTH__SYNC_ON_LOOP_NS; /* the disk is new */
    return 0;
}

static void embedded_stop(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    hearth__commit_flush(db);
    uv_close((uv_handle_t *)&e->commit_idle, NULL);
}

static void on_idle_closed(uv_handle_t *handle) {
    hearth__db_release(handle->data);
}

static int embedded_close(hearth_db_t *db) {
    hearth__embedded *e = db->impl;
    hearth__commit_flush(db);
    if (!e->committing && !e->snapshotting) {
        /* Nothing uses the files any more: they are released now, so
         * that the directory may be opened again at once. */
        hearth__store_close(e->store);
        e->store = NULL;
    }
    uv_close((uv_handle_t *)&e->commit_idle, on_idle_closed);
    /* Freed once the idle handle is closed and any snapshot and commit
     * have finished (the commit then acknowledges what is left). */
    return 1 + e->snapshotting + e->committing;
}

const hearth__db_backend hearth__db_embedded = {
    .name = "embedded",
    .embedded_impl = true,
    .client = false,
    .create = embedded_create,
    .start = embedded_start,
    .write = run_write,
    .transaction = run_transaction,
    .get = run_get,
    .observe = run_observe,
    .client_op = NULL,
    .get_now = get_now,
    .offline_error = NULL,
    .listeners = listeners,
    .unlink = unlink_reg,
    .settle = hearth__commit_settle,
    .quiet = hearth__commit_quiet,
    .stop = embedded_stop,
    .close = embedded_close,
    .free = embedded_free,
};

/* ---- the owner's hooks (db/db.h) ---- */

hearth__store *hearth__db_store(hearth_db_t *db) {
    hearth__embedded *e = hearth__embedded_of(db);
    return e ? e->store : NULL;
}

int hearth__db_store_on_write(hearth_db_t *db, const char *dir,
                              int fsync_mode) {
    hearth__embedded *e = hearth__embedded_of(db);
    if (!e || e->store)
        return HEARTH_EINVAL;
    char *copy = hearth__strndup(dir, strlen(dir));
    if (!copy)
        return HEARTH_ENOMEM;
    hearth__free(e->store_later);
    e->store_later = copy;
    e->store_later_fsync = fsync_mode;
    return 0;
}

void hearth__db_set_retention(hearth_db_t *db, int64_t retain_ms) {
    hearth__embedded *e = hearth__embedded_of(db);
    if (!e)
        return;
    e->retain_ms = retain_ms;
    if (e->store)
        hearth__store_set_retention(e->store, retain_ms);
}

void hearth__db_set_group_commit(hearth_db_t *db, bool on) {
    hearth__embedded *e = hearth__embedded_of(db);
    if (e)
        e->group_commit = on;
}

void hearth__db_set_judge(hearth_db_t *db, hearth__db_judge_fn fn, void *ctx) {
    hearth__embedded *e = hearth__embedded_of(db);
    if (e) {
        e->judge = fn;
        e->judge_ctx = ctx;
    }
}

void hearth__db_set_tap(hearth_db_t *db, const hearth__db_tap *tap, void *ctx,
                        void (*ctx_free)(void *ctx)) {
    hearth__embedded *e = hearth__embedded_of(db);
    if (!e) {
        if (ctx_free)
            ctx_free(ctx);
        return;
    }
    if (e->tap_ctx_free)
        e->tap_ctx_free(e->tap_ctx);
    e->tap = tap;
    e->tap_ctx = ctx;
    e->tap_ctx_free = ctx_free;
}

const hearth_node_t *hearth__db_root(hearth_db_t *db) {
    hearth__embedded *e = hearth__embedded_of(db);
    return e ? e->root : hearth__node_empty();
}
