/* backend.h - where a database's data lives, behind one interface.
 *
 * The handle (db/handle.h) validates public calls, queues them and runs
 * them in order on its loop thread, with one raising discipline; what an
 * operation does to data is the backend's:
 *   - embedded (db/backend_embedded.c, with db/commit.c): the tree in
 *     this process, its listeners, rules, durable store and group commit;
 *   - remote (db/backend_remote.c): the client engine of client/remote.c,
 *     talking to a server;
 *   - cluster (cluster/backend.c): the embedded engine whose commits are
 *     appended to a replicated log first, opened by the cluster layer
 *     through hearth__db_open_backend.
 * As hiredis keeps its transports behind redisContextFuncs, the handle
 * knows backends only through this table. Every entry runs on the loop
 * thread unless it says otherwise. Internal to db/.
 */
#ifndef HEARTH_DB_BACKEND_H
#define HEARTH_DB_BACKEND_H

#include "db/op.h"

typedef struct hearth__db_backend {
    const char *name;
    /* db->impl is a hearth__embedded (db/embedded.h): the embedded
     * backend, or one built on it (the cluster's), which the owner's hooks
     * of db/db.h reach too. */
    bool embedded_impl;
    /* A client of a server: onDisconnect, auth tokens, online/offline and
     * /.info locations are its own. */
    bool client;

    /* Opening, before the loop exists (any thread): takes what config
     * asks of it into db->impl, checked by db/open.c. On failure it
     * leaves nothing behind. */
    int (*create)(hearth_db_t *db, const hearth_db_config_t *config,
                  hearth_error_t *err);
    /* Once the loop and the handle's wake-up exist. */
    int (*start)(hearth_db_t *db);

    /* Running operations. Those returning bool say whether the backend
     * keeps o (and ends it later); else the handle ends it. */
    bool (*write)(hearth_db_t *db, hearth__db_op *o);
    bool (*transaction)(hearth_db_t *db, hearth__db_op *o);
    bool (*get)(hearth_db_t *db, hearth__db_op *o);
    void (*observe)(hearth_db_t *db, hearth__db_op *o); /* takes o->reg */
    /* The kinds only a client runs (OP_ONLINE .. OP_AUTH_PROVIDER). */
    bool (*client_op)(hearth_db_t *db, hearth__db_op *o);
    /* hearth_db_get on the loop thread: answered at once, or never. */
    int (*get_now)(hearth_db_t *db, const hearth__path *path,
                   const hearth_query_t *q, hearth_node_t **out,
                   hearth_error_t *err);
    /* The words for a read that found the client offline (NULL: none;
     * any thread). */
    int (*offline_error)(hearth_error_t *err, const hearth__path *path,
                         const hearth_query_t *q);

    /* The listener index (NULL once closed) and leaving it. */
    hearth__listeners *(*listeners)(hearth_db_t *db);
    void (*unlink)(hearth_db_t *db, hearth__reg *reg);

    /* After a batch of operations: acknowledge what waits (may_wait: the
     * batch ran on the loop thread, which may gather writes a little). */
    void (*settle)(hearth_db_t *db, bool may_wait);
    /* Nothing of the backend's under way (hearth__db_quiet). */
    bool (*quiet)(hearth_db_t *db);
    /* Whether nothing of the data may be served now (hearth__db_unavailable;
     * a cluster node rebuilding a tree found wrong). NULL: always served. */
    bool (*unavailable)(hearth_db_t *db);

    /* The loop's last operation (the loop is the handle's own): finish
     * and close every handle of the backend. */
    void (*stop)(hearth_db_t *db);
    /* hearth_db_close on a loop shared with the caller: release what can
     * be now; returns how many hearth__db_release calls are to follow. */
    int (*close)(hearth_db_t *db);
    /* Frees db->impl (the loop has let go of it). */
    void (*free)(hearth_db_t *db);
} hearth__db_backend;

extern const hearth__db_backend hearth__db_embedded;
extern const hearth__db_backend hearth__db_remote;

/* hearth_db_open with a backend chosen by a layer above db/ (the cluster):
 * the same checks, loop and queue. */
int hearth__db_open_backend(const hearth__db_backend *backend,
                            const hearth_db_config_t *config,
                            hearth_db_t **out, hearth_error_t *err);

#endif
