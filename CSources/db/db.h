/* db.h - internal access to an embedded database, for tests and the
 * server built on it. */
#ifndef HEARTH_DB_DB_H
#define HEARTH_DB_DB_H

#include "store/store.h"

/* The database's durable store, or NULL in memory. Loop thread only. */
hearth__store *hearth__db_store(hearth_db_t *db);

/* A database opened in memory keeps no files until a write changes its
 * data: that write first makes a durable store in dir (creating it), and
 * fails if it cannot. HEARTH_EINVAL for a database already stored or on a
 * URL. Loop thread only. */
int hearth__db_store_on_write(hearth_db_t *db, const char *dir,
                              int fsync_mode);

/* Keeps the store's superseded snapshots and logs for retain_ms
 * (hearth__store_set_retention), now or when a write makes the store.
 * Nothing for a database that is not embedded. Loop thread only. */
void hearth__db_set_retention(hearth_db_t *db, int64_t retain_ms);

/* Whether nothing is under way: no operation queued or running, no write
 * waiting for its commit, no commit or snapshot in progress. A database
 * closed then releases its files before hearth_db_close returns (a
 * shared loop; else when its thread ends). Loop thread only. */
bool hearth__db_quiet(hearth_db_t *db);
/* Whether the database's data must not be served now (answer 503 and
 * try later): a cluster node rebuilding a tree that differs from its
 * peers'. Loop thread. */
bool hearth__db_unavailable(hearth_db_t *db);

/* Writes made on the loop thread are committed once per loop iteration
 * (their completions run then) instead of one by one. Loop thread only. */
void hearth__db_set_group_commit(hearth_db_t *db, bool on);

/* The current root (borrowed; valid until the next write). Loop thread. */
const hearth_node_t *hearth__db_root(hearth_db_t *db);

/* Writes judged by the database's owner. The server's namespaces judge
 * every write of a network caller by the namespace's rules *when it is
 * applied*: against the data of that moment, the rules in force then, and
 * exactly the values being stored (server values resolved). A refused
 * write changes nothing and completes with HEARTH_EDENIED. */
typedef struct hearth__db_caller {
    const hearth_node_t *auth; /* the rules' auth; NULL: unauthenticated */
    const char *door; /* where it came ("rest", "realtime"; static), for
                         the judge's denial traces; may be NULL */
    bool unjudged; /* not judged after all (the admin), but for quiet */
    bool quiet;    /* fires no database triggers (the owner's tap) */
} hearth__db_caller;
/* The identity a quiet write of the admin is logged as (what a replica
 * applying the log knows it by). */
#define HEARTH__DB_QUIET_IDENTITY "admin:no-triggers"

/* The judge: whether auth (come by door: hearth__db_caller) may write
 * paths (n parts), turning old_root into new_root at time now (Unix ms).
 * Runs on the loop thread. */
typedef bool (*hearth__db_judge_fn)(void *ctx, const hearth_node_t *auth,
                                    const char *door,
                                    const hearth__path *const *paths,
                                    size_t n, const hearth_node_t *old_root,
                                    const hearth_node_t *new_root,
                                    double now);
/* Sets the judge (loop thread; before any judged write). A judged write
 * on a database without one is refused. */
void hearth__db_set_judge(hearth_db_t *db, hearth__db_judge_fn fn, void *ctx);

/* hearth_db_set / hearth_db_update_json judged as who (NULL: not judged,
 * as the public calls). */
int hearth__db_set_as(hearth_db_t *db, const hearth__db_caller *who,
                      const char *path, const hearth_node_t *value,
                      hearth_completion_cb cb, void *ctx,
                      hearth_free_cb ctx_free, hearth_error_t *err);
/* hearth__db_set_as as a compare-and-set: applied only if the data at path
 * still has hash if_hash when the write is ordered, else it completes with
 * HEARTH_EDATASTALE and changes nothing. (One server checks it before
 * queueing too, at the same moment; a cluster's followers cannot, so the
 * leader checks it as it applies the write.) */
int hearth__db_set_if_as(hearth_db_t *db, const hearth__db_caller *who,
                         const char *if_hash, const char *path,
                         const hearth_node_t *value, hearth_completion_cb cb,
                         void *ctx, hearth_free_cb ctx_free,
                         hearth_error_t *err);
int hearth__db_update_json_as(hearth_db_t *db, const hearth__db_caller *who,
                              const char *path, const char *json, size_t len,
                              hearth_completion_cb cb, void *ctx,
                              hearth_free_cb ctx_free, hearth_error_t *err);

/* A multi-path update parsed from a JSON object whose keys are paths
 * relative to path: what hearth_db_update_json does before it queues,
 * split out so that a large one can be parsed on any thread (the server
 * parses big bodies off its loop). On failure *out is still to be freed. */
struct json_t;
typedef struct hearth__update_parts {
    size_t n;
    const char **paths;     /* the object's keys (borrowed from obj) */
    hearth_node_t **values; /* server values not yet resolved */
    struct json_t *obj;     /* the object as sent */
} hearth__update_parts;
int hearth__update_parts_parse(const char *path, const char *json, size_t len,
                               hearth__update_parts *out,
                               hearth_error_t *err);
/* The same from an object already parsed (kept with a new reference). */
int hearth__update_parts_from_json(const char *path, struct json_t *obj,
                                   hearth__update_parts *out,
                                   hearth_error_t *err);
void hearth__update_parts_free(hearth__update_parts *u);
/* Queues a parsed update, judged as who (NULL: not judged). */
int hearth__db_update_parts_as(hearth_db_t *db, const hearth__db_caller *who,
                               const char *path, const hearth__update_parts *u,
                               hearth_completion_cb cb, void *ctx,
                               hearth_free_cb ctx_free, hearth_error_t *err);

/* Committed writes, for the database's owner (the server's triggers,
 * triggers/). Every pointer is borrowed for the call. A write reaches
 * `applied` as it is applied (before its commit); the writes applied so
 * far form the commit that `sealed` announces (one at a time); `durable`
 * runs on the commit's own thread (a worker, or the loop) once its
 * records are written, and synced when `synced`, and only then: what the
 * owner writes there is as durable as the writes; `settled` then tells
 * the outcome before any of its writes is acknowledged: rc 0, they are
 * durable; else they, and every write applied after them, are undone
 * (the tree went back to the last durable one). Between `sealed` and
 * `settled` the loop goes on applying later writes (`applied`), so what
 * `durable` uses must be the sealed commit's alone. A write to a database
 * without a store (in memory) stands at once: `applied` says so with
 * durable_later false, and no commit follows for it. All but `durable`
 * run on the loop thread. */
typedef struct hearth__db_tap {
    void (*applied)(void *ctx, const hearth_node_t *old_root,
                    const hearth_node_t *new_root,
                    const hearth__path *const *paths, size_t n, bool judged,
                    const hearth_node_t *auth, bool durable_later);
    void (*sealed)(void *ctx);
    void (*durable)(void *ctx, bool synced);
    void (*settled)(void *ctx, int rc);
} hearth__db_tap;
/* Sets the tap (loop thread; one per database, tap itself must outlive
 * it). ctx_free(ctx) runs when the database is freed or the tap
 * replaced. */
void hearth__db_set_tap(hearth_db_t *db, const hearth__db_tap *tap, void *ctx,
                        void (*ctx_free)(void *ctx));

#endif
