/* keeper_cluster.c - namespaces kept in a cluster (cluster/cluster.h):
 * each database a replica of the namespace's log, the admin's rules one
 * document for every node, onDisconnect writes kept so that the
 * namespace's leader runs them if this node dies. The only server file
 * that knows the cluster. */
#include "server/keeper.h"

#include "cluster/cluster.h"
#include "server/server.h"

typedef struct cluster_keeper {
    hearth__keeper base; /* first: the keeper is the cluster_keeper */
    hearth__cluster *cluster;
    hearth__triggers_remote remote;
} cluster_keeper;

static hearth__cluster *cluster_of(hearth__keeper *k) {
    return ((cluster_keeper *)k)->cluster;
}

static int cluster_open(hearth__keeper *k, const char *ns,
                        const hearth_db_config_t *config, hearth_db_t **out,
                        hearth_error_t *err) {
    return hearth__cluster_open(cluster_of(k), ns, config, out, err);
}

static const char *cluster_rules_of(hearth__keeper *k, const char *ns) {
    return hearth__cluster_rules_of(cluster_of(k), ns);
}

/* A change of the cluster's document for ns reached this node. */
static void on_rules(void *ctx, const char *ns) {
    hearth__keeper *k = ctx;
    if (k->rules_changed)
        k->rules_changed(k->rules_ctx, ns,
                         hearth__cluster_rules_of(cluster_of(k), ns));
}

/* The cluster adopts the document here before it answers (on_rules), so
 * the caller's next read sees it. dir is not used: the rules are every
 * node's, never one node's files. */
static void cluster_rules_put(hearth__keeper *k, const char *ns,
                              const char *dir, const char *text, size_t len,
                              hearth__keeper_done_cb done, void *ctx) {
    (void)dir;
    char *copy = hearth__strndup(text, len);
    if (!copy) {
        done(ctx, HEARTH_ENOMEM);
        return;
    }
    hearth__cluster_rules_put(cluster_of(k), ns, copy, done, ctx);
    hearth__free(copy);
}

static void cluster_ondisconnect_keep(hearth__keeper *k, hearth_db_t *db,
                                      uint64_t session, const char *writes,
                                      hearth__keeper_done_cb done, void *ctx) {
    (void)k;
    hearth__cluster_ondisconnect_keep(db, session, writes, done, ctx);
}

/* The cluster's history, not this node's files: dir is the node's copy,
 * which a peer's snapshot may have begun, with its own sequences. */
static int cluster_state_at(hearth__keeper *k, const char *ns, const char *dir,
                            int64_t at_ms, uint64_t at_seq,
                            hearth_node_t **out, hearth_error_t *err) {
    (void)dir;
    return hearth__cluster_state_at(cluster_of(k), ns, at_ms, at_seq, out,
                                    err);
}

static int cluster_changes(hearth__keeper *k, const char *ns, const char *dir,
                           const char *path, int64_t since_ms,
                           int64_t until_ms, hearth_change_cb cb, void *ctx,
                           hearth_error_t *err) {
    (void)dir;
    return hearth__cluster_changes(cluster_of(k), ns, path, since_ms, until_ms,
                                   cb, ctx, err);
}

static void cluster_metrics(hearth__keeper *k, hearth__buf *out) {
    hearth__cluster_metrics(cluster_of(k), out);
}

static char *cluster_status(hearth__keeper *k, bool *none) {
    *none = false;
    return hearth__cluster_status(cluster_of(k));
}

static void cluster_stop(hearth__keeper *k) {
    hearth__cluster_stop(cluster_of(k));
    hearth__free(k);
}

/* ---- database triggers: the cluster's queue (cluster/triggers.c) ---- */

static uint64_t trig_applying(void *ctx, hearth_db_t *db) {
    (void)ctx;
    return hearth__cluster_triggers_applying(db);
}

static uint64_t trig_committed(void *ctx, hearth_db_t *db) {
    (void)ctx;
    return hearth__cluster_triggers_committed(db);
}

static bool trig_put(void *ctx, hearth_db_t *db, uint64_t seq,
                     const char *trigger, const void *frames, size_t len,
                     size_t n) {
    (void)ctx;
    return hearth__cluster_triggers_put(db, seq, trigger, frames, len, n);
}

static int trig_take(void *ctx, const char *trigger, int wait_ms, void **batch,
                     hearth__buf *out, uint64_t *waiting) {
    hearth__cluster_batch *b = NULL;
    int rc = hearth__cluster_triggers_take(ctx, trigger, wait_ms, &b, out,
                                           waiting);
    *batch = b;
    return rc;
}

static void trig_waiting(void *ctx, const char *trigger, uint64_t *waiting) {
    hearth__cluster_triggers_waiting(ctx, trigger, waiting);
}

static void trig_done(void *ctx, void *batch, bool delivered) {
    hearth__cluster_triggers_done(ctx, batch, delivered);
}

static int trig_bury(void *ctx, void *batch, unsigned k, const void *frame,
                     size_t len) {
    return hearth__cluster_triggers_bury(ctx, batch, k, frame, len);
}

static bool trig_dead_count(void *ctx, const char *trigger, uint64_t *n) {
    return hearth__cluster_triggers_dead_waiting(ctx, trigger, n);
}

static int trig_dead_list(void *ctx, const char *trigger, size_t max,
                          hearth__buf *frames, size_t *n) {
    return hearth__cluster_dead_list(ctx, trigger, max, frames, n);
}

static int trig_dead_retry(void *ctx, const char *trigger, size_t *n) {
    return hearth__cluster_dead_retry(ctx, trigger, n);
}

/* A change of the admin's registrations reached this node. */
static void on_registration(void *ctx, const char *name) {
    hearth__keeper *k = ctx;
    hearth__cluster *c = cluster_of(k);
    if (k->triggers_changed)
        k->triggers_changed(k->triggers_ctx, name,
                            hearth__cluster_registration_of(c, name));
}

static void cluster_triggers_each(hearth__keeper *k,
                                  hearth__keeper_triggers_cb cb, void *ctx) {
    hearth__cluster_registrations_each(cluster_of(k), cb, ctx);
}

static void cluster_triggers_put(hearth__keeper *k, const char *name,
                                 const char *json, hearth__keeper_done_cb done,
                                 void *ctx) {
    hearth__cluster_registration_put(cluster_of(k), name, json, done, ctx);
}

static int cluster_triggers_remote(hearth__keeper *k,
                                   const hearth__triggers_remote **out,
                                   hearth_error_t *err) {
    cluster_keeper *ck = (cluster_keeper *)k;
    int rc = hearth__cluster_triggers_start(ck->cluster, err);
    if (rc)
        return rc;
    ck->remote = (hearth__triggers_remote){
        .ctx = ck->cluster,
        .applying = trig_applying,
        .committed = trig_committed,
        .put = trig_put,
        .take = trig_take,
        .waiting = trig_waiting,
        .done = trig_done,
        .bury = trig_bury,
        .dead_count = trig_dead_count,
        .dead_list = trig_dead_list,
        .dead_retry = trig_dead_retry,
    };
    *out = &ck->remote;
    return 0;
}

static const hearth__keeper_ops cluster_ops = {
    .open = cluster_open,
    .rules_of = cluster_rules_of,
    .rules_put = cluster_rules_put,
    .ondisconnect_keep = cluster_ondisconnect_keep,
    .state_at = cluster_state_at,
    .changes = cluster_changes,
    .metrics = cluster_metrics,
    .status = cluster_status,
    .stop = cluster_stop,
    .stores_every_namespace = true,
    .applies_at_once = false, /* the namespace's leader orders writes */
    .triggers_remote = cluster_triggers_remote,
    .triggers_each = cluster_triggers_each,
    .triggers_put = cluster_triggers_put,
};

int hearth__keeper_cluster_check(const hearth_server_config_t *config,
                                 hearth_error_t *err) {
    if (!config->cluster_secret_file && !config->cluster_insecure)
        return hearth__error(err, HEARTH_EINVAL, NULL, "%s",
                             HEARTH__CLUSTER_SECRET_REQUIRED);
    return 0;
}

int hearth__keeper_cluster(hearth__server *srv, hearth__keeper **out,
                           hearth_error_t *err) {
    cluster_keeper *k = hearth__calloc(1, sizeof *k);
    if (!k)
        return hearth__error_code(err, HEARTH_ENOMEM);
    hearth__cluster_options join = {
        .urls = srv->cluster_urls,
        .node = srv->node,
        .secret_file = srv->cluster_secret_file,
        .insecure = srv->cluster_insecure,
        .creds_file = srv->nats_creds_file,
        .nkey_seed_file = srv->nats_nkey_file,
        .user_file = srv->nats_user_file,
        .token_file = srv->nats_token_file,
        .ca_file = srv->nats_ca_file,
        .cert_file = srv->nats_cert_file,
        .key_file = srv->nats_key_file,
    };
    int rc = hearth__cluster_start(&srv->loop, &join,
                                   &k->cluster, err);
    if (rc) {
        hearth__free(k);
        return rc;
    }
    k->base.ops = &cluster_ops;
    hearth__cluster_set_retention(k->cluster, srv->retain_ms);
    hearth__cluster_rules_follow(k->cluster, on_rules, k);
    hearth__cluster_registrations_follow(k->cluster, on_registration, k);
    *out = &k->base;
    return 0;
}
