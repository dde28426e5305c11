/*
 * keeper.h - where the server's namespaces are kept: on this node alone
 * (keeper_local.c) or in a cluster that every node serves
 * (keeper_cluster.c). The server asks its keeper, never "is this a
 * cluster?": which one it has is chosen once, when it starts.
 *
 * Per namespace, a keeper
 * - opens its database;
 * - stores the rules the admin sets (/.settings/rules) and tells the
 *   server, through the rules callback, when a namespace's rules change;
 * - may keep a realtime session's onDisconnect writes beyond the node's
 *   life (a cluster's leader runs those of a node that died).
 * Loop thread only.
 */
#ifndef HEARTH_SERVER_KEEPER_H
#define HEARTH_SERVER_KEEPER_H

#include "common/internal.h"
#include "db/db.h"
#include "triggers/triggers.h"

#include <uv.h>

typedef struct hearth__keeper hearth__keeper;

/* A namespace's rules changed: text is the document now in force there
 * (the server adopts it where the namespace is open), or NULL when the
 * keeper holds none any more (the server's own rules apply again). */
typedef void (*hearth__keeper_rules_cb)(void *ctx, const char *ns,
                                        const char *text);
/* An admin's trigger registration changed: json is the registration now
 * (JSON text, its secret included), or NULL when it was removed. */
typedef void (*hearth__keeper_triggers_cb)(void *ctx, const char *name,
                                           const char *json);
/* An asynchronous request finished: rc 0, or why not. */
typedef void (*hearth__keeper_done_cb)(void *ctx, int rc);

typedef struct hearth__keeper_ops {
    /* Opens namespace ns's database (config: its loop, and its data
     * directory or NULL for one in memory until written). */
    int (*open)(hearth__keeper *k, const char *ns,
                const hearth_db_config_t *config, hearth_db_t **out,
                hearth_error_t *err);
    /* The rules document the keeper holds for ns, as text, or NULL (the
     * server's own: --rules FILE, the namespace's file, the default).
     * Borrowed until the next change. */
    const char *(*rules_of)(hearth__keeper *k, const char *ns);
    /* Stores text (a rules document, checked by the caller) as ns's rules
     * (dir: the namespace's directory); the rules callback runs with it
     * before done does with 0, or done runs with why not. */
    void (*rules_put)(hearth__keeper *k, const char *ns, const char *dir,
                      const char *text, size_t len,
                      hearth__keeper_done_cb done, void *ctx);
    /* Keeps the onDisconnect writes of session (a JSON array as
     * hearth__cluster_ondisconnect_keep says; NULL: forget them) of
     * namespace database db; NULL where the node's own sessions are the
     * only ones that run them. */
    void (*ondisconnect_keep)(hearth__keeper *k, hearth_db_t *db,
                              uint64_t session, const char *writes,
                              hearth__keeper_done_cb done, void *ctx);
    /* Point-in-time recovery (README "Point-in-time recovery"), from the
     * history the keeper holds of namespace ns (its directory dir): the
     * directory's retained snapshots and logs, or the cluster's stream.
     * state_at: ns as it was after the last write made at or before
     * at_ms (0: any time) with a sequence at most at_seq (0: any), *out
     * new; HEARTH_ENOTFOUND when not retained or not written yet.
     * changes: cb for every part of every retained write touching path
     * (NULL: all) made within [since_ms, until_ms] (0: unbounded), in log
     * order. A worker thread's (they read files, or wait on JetStream);
     * the request making them keeps the server, and so the keeper,
     * alive until it is answered. */
    int (*state_at)(hearth__keeper *k, const char *ns, const char *dir,
                    int64_t at_ms, uint64_t at_seq, hearth_node_t **out,
                    hearth_error_t *err);
    int (*changes)(hearth__keeper *k, const char *ns, const char *dir,
                   const char *path, int64_t since_ms, int64_t until_ms,
                   hearth_change_cb cb, void *ctx, hearth_error_t *err);
    /* Appends the keeper's lines of /.metrics (may be NULL). */
    void (*metrics)(hearth__keeper *k, hearth__buf *out);
    /* The operator's view as JSON text to free with hearth__free, or NULL
     * with *none set when the keeper has none to give (NULL with *none
     * false: out of memory). */
    char *(*status)(hearth__keeper *k, bool *none);
    /* Frees the keeper once every namespace is closed; its handles close
     * on the loop (run it). */
    void (*stop)(hearth__keeper *k);
    /* Whether every namespace served is kept on disk from its first use
     * (a cluster node holds its place in the replicated log). */
    bool stores_every_namespace;
    /* Whether a write is in this node's tree when the call making it
     * returns (false: another node orders it, later). */
    bool applies_at_once;
    /* Where database triggers' events are queued and taken from: NULL
     * (the op, or *out) for this node's own spools (triggers/), or the
     * keeper's remote queue, made ready here (at start, on the loop). */
    int (*triggers_remote)(hearth__keeper *k,
                           const hearth__triggers_remote **out,
                           hearth_error_t *err);
    /* The admin's trigger registrations, when the keeper holds them for
     * every node (NULL: this node's own, DATA/.triggers/admin.json; both
     * or neither, and only once triggers_remote made the queue ready):
     * each calls cb with every one held; put stores one (json NULL:
     * removes it), the triggers callback running with it before done. */
    void (*triggers_each)(hearth__keeper *k, hearth__keeper_triggers_cb cb,
                          void *ctx);
    void (*triggers_put)(hearth__keeper *k, const char *name,
                         const char *json, hearth__keeper_done_cb done,
                         void *ctx);
} hearth__keeper_ops;

struct hearth__keeper {
    const hearth__keeper_ops *ops;
    hearth__keeper_rules_cb rules_changed;
    void *rules_ctx;
    hearth__keeper_triggers_cb triggers_changed;
    void *triggers_ctx;
};

/* This node alone: namespaces in data directories, rules in each one's
 * rules.json. */
int hearth__keeper_local(hearth__keeper **out, hearth_error_t *err);

struct hearth__server;
/* Whether config's cluster fields can join a cluster (checked before the
 * server makes or binds anything; hearth__keeper_cluster checks again). */
int hearth__keeper_cluster_check(const hearth_server_config_t *config,
                                 hearth_error_t *err);
/* Joins the cluster the server's configuration names (its cluster and
 * NATS fields), on its loop. */
int hearth__keeper_cluster(struct hearth__server *srv,
                           hearth__keeper **out, hearth_error_t *err);

/* rules_changed(ctx, ns, text) for every rules change (set before the
 * first namespace opens). */
static inline void hearth__keeper_follow_rules(hearth__keeper *k,
                                               hearth__keeper_rules_cb cb,
                                               void *ctx) {
    k->rules_changed = cb;
    k->rules_ctx = ctx;
}

/* triggers_changed(ctx, name, json) for every change of the admin's
 * trigger registrations that the keeper holds (triggers_put). */
static inline void hearth__keeper_follow_triggers(hearth__keeper *k,
                                                  hearth__keeper_triggers_cb cb,
                                                  void *ctx) {
    k->triggers_changed = cb;
    k->triggers_ctx = ctx;
}

#endif
