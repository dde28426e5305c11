/* cluster.h - cluster mode (what the server sees): this node's link to a
 * NATS JetStream cluster, and each namespace's database opened on it.
 *
 * A namespace's log is one subject of a replicated stream (one stream per
 * partition of namespaces). The node holding the namespace's lease (a key
 * with a TTL in a JetStream KV bucket) orders its writes: it applies them
 * through the embedded engine (rules, compare-and-set, server values,
 * multi-path atomicity), appends each group commit as one message with the
 * subject's last sequence as the fence, then writes and fsyncs it to its
 * local log before acknowledging. Every node tails the subject into its own
 * tree, serving reads and listens locally; writes made on another node are
 * forwarded to the leader by request/reply and acknowledged there once that
 * node's own tail has applied them. Loop thread only, unless a function
 * says otherwise.
 */
#ifndef HEARTH_CLUSTER_CLUSTER_H
#define HEARTH_CLUSTER_CLUSTER_H

#include "db/db.h"

#include <uv.h>

typedef struct hearth__cluster hearth__cluster;

/* Joins the cluster at urls ("nats://h1:4222,nats://h2:4222") as node
 * (letters, digits, '-', '_'): the streams and buckets are made if
 * missing (as many replicas as urls, at most 3), this node's liveness key
 * is kept alive on loop. */
int hearth__cluster_start(uv_loop_t *loop, const char *urls, const char *node,
                          hearth__cluster **out, hearth_error_t *err);
/* Leaves: every namespace must be closed first. The handles close on the
 * loop; *c is freed once they have (run the loop). */
void hearth__cluster_stop(hearth__cluster *c);

/* Opens namespace name's database on the cluster (config: its loop and
 * local data directory). */
int hearth__cluster_open(hearth__cluster *c, const char *name,
                         const hearth_db_config_t *config, hearth_db_t **out,
                         hearth_error_t *err);

/* Whether db (a namespace's database) is a cluster's: its sessions'
 * onDisconnect writes are then kept in the cluster. */
bool hearth__cluster_keeps_ondisconnect(const hearth_db_t *db);

/* Keeps the onDisconnect writes of a session of this node on cluster
 * database db in JetStream, under the namespace, this node's run and the
 * session, so that if the node dies the namespace's leader runs them,
 * judged as they say: writes is a JSON array of {"a": auth or null, "j":
 * judged, "h": null, "w": [[path, value], ...]}; NULL (or "[]") forgets
 * them (the session ran them itself). The KV call runs on a worker, after
 * every call asked before it; done (may be NULL) runs on the loop once it
 * is made: rc 0, or why the cluster does not hold them (out of memory:
 * at once, inside this call). writes is copied. */
typedef void (*hearth__cluster_kept_cb)(void *ctx, int rc);
void hearth__cluster_ondisconnect_keep(hearth_db_t *db, uint64_t session,
                                       const char *writes,
                                       hearth__cluster_kept_cb done,
                                       void *ctx);

/* A namespace's rules, the same on every node (cluster/rules.c). The
 * document set through any node, as text: NULL when none was (each node's
 * own rules apply). Borrowed until the next change reaches this node. */
const char *hearth__cluster_rules_of(hearth__cluster *c, const char *ns);
/* Called on the loop with each change that reaches this node (the
 * document now: hearth__cluster_rules_of), the server's to adopt where
 * the namespace is open. */
typedef void (*hearth__cluster_rules_cb)(void *ctx, const char *ns);
void hearth__cluster_rules_follow(hearth__cluster *c,
                                  hearth__cluster_rules_cb cb, void *ctx);
/* Sets ns's document for every node (text checked by the caller; NULL:
 * removes it); done runs on the loop once the cluster holds it (rc 0) or
 * not, as hearth__cluster_ondisconnect_keep's. Every node, this one
 * included, then gets it through the callback. */
void hearth__cluster_rules_put(hearth__cluster *c, const char *ns,
                               const char *text, hearth__cluster_kept_cb done,
                               void *ctx);

/* The operator's view as JSON text (to free with hearth__free): node,
 * live nodes, each open namespace's leader, log sequence and lag. */
char *hearth__cluster_status(hearth__cluster *c);
/* Test hook: a leader's purge round every `ticks` ticks of 500 ms
 * (default HEARTH__CLUSTER_RETAIN_TICKS, a minute). */
void hearth__cluster_set_retain_ticks(hearth__cluster *c, unsigned ticks);

#endif
