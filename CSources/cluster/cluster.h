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

/* How a node joins (hearth_server_config_t's cluster fields). NATS is
 * untrusted: secret_file is the cluster secret every node holds (the
 * seal: cluster/seal.h); without one, insecure must say so. The NATS
 * credentials and TLS files are each optional: creds_file (a .creds file:
 * user JWT and seed) or nkey_seed_file (an NKey seed), user_file (the
 * user on its first line, the password on its second) or token_file (a
 * token); ca_file (the CA to trust; implies TLS, as a tls:// URL does),
 * cert_file with key_file (a client certificate). Strings are read during
 * hearth__cluster_start only. */
typedef struct hearth__cluster_options {
    const char *urls, *node;
    const char *secret_file; /* NULL with insecure */
    bool insecure;
    const char *creds_file, *nkey_seed_file, *user_file, *token_file;
    const char *ca_file, *cert_file, *key_file;
} hearth__cluster_options;

/* The refusal of a node with neither a secret nor insecure. */
#define HEARTH__CLUSTER_SECRET_REQUIRED                                       \
    "cluster: a cluster secret is required: --cluster-secret-file FILE "      \
    "(every node the same; e.g. `openssl rand -base64 32 > FILE`), or "       \
    "--cluster-insecure for experiments"

/* Joins the cluster at o->urls ("nats://h1:4222,nats://h2:4222") as
 * o->node (letters, digits, '-', '_'): the streams and buckets are made
 * if missing (as many replicas as urls, at most 3), this node's liveness
 * key is kept alive on loop. An error names the file at fault, and never
 * shows a URL's credentials. */
int hearth__cluster_start(uv_loop_t *loop, const hearth__cluster_options *o,
                          hearth__cluster **out, hearth_error_t *err);
/* text with the credentials of every URL in it (nats: //user:pw@h, the
 * space only for this comment) masked as ***@h, into out (cap bytes, cut
 * to fit). */
void hearth__cluster_mask_urls(const char *text, char *out, size_t cap);
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

/* Point-in-time recovery (cluster/pitr.h). The window (hearth serve
 * --retain; 0: off), set before the first namespace opens: the leaders'
 * purges keep every record younger than it and the checkpoints that
 * rebuild any instant of it. Give every node the same. */
void hearth__cluster_set_retention(hearth__cluster *c, int64_t retain_ms);
/* Namespace name as it was after the last write made at or before at_ms
 * (Unix ms; 0: any time) whose log sequence (the stream's) is at most
 * at_seq (0: any), into *out (new), from a checkpoint and the log in
 * JetStream. HEARTH_ENOTFOUND (err says the oldest moment retained) when
 * the moment is no longer retained or the sequence not written yet;
 * HEARTH_EIO naming what is damaged. A worker thread's: it waits on
 * JetStream, each call bounded; c must outlive it. */
int hearth__cluster_state_at(hearth__cluster *c, const char *name,
                             int64_t at_ms, uint64_t at_seq,
                             hearth_node_t **out, hearth_error_t *err);
/* Calls cb, in log order, for every part of every retained write of
 * name touching path (NULL: all) made within [since_ms, until_ms] (0:
 * unbounded), as hearth_log_changes does for a data directory; the
 * sequence is the record's message's in the stream. The same thread
 * rules as hearth__cluster_state_at. */
int hearth__cluster_changes(hearth__cluster *c, const char *name,
                            const char *path, int64_t since_ms,
                            int64_t until_ms, hearth_change_cb cb, void *ctx,
                            hearth_error_t *err);

/* Database triggers (cluster/triggers.c): the server's triggers/ layer
 * builds each write's events on every node as the write is applied, in
 * log order; the namespace's leader puts them in JetStream (stream
 * HEARTH_TRIGGERS, subject hearth.trig.TRIGGER.NAMESPACE, one message per
 * trigger and log record, JetStream's duplicate check on its place in the
 * log), the others keep theirs a while in case the leader dies first; a
 * durable consumer per trigger hands each batch to one node's deliverer
 * at a time, redelivered elsewhere if that node dies.
 *
 * Makes the stream (at start, on the loop). */
int hearth__cluster_triggers_start(hearth__cluster *c, hearth_error_t *err);
/* Loop, as db applies a write: its log sequence when it is a record of
 * the log, 0 when it is this node's own (then the commit's: committed). */
uint64_t hearth__cluster_triggers_applying(hearth_db_t *db);
uint64_t hearth__cluster_triggers_committed(hearth_db_t *db);
/* The admin's registrations (PUT /.settings/triggers/NAME.json on any
 * node), the same on every node: a KV bucket of documents as the rules'
 * (rules.c), keyed by the trigger's name, the registration's JSON text
 * (secret included; sealed) or none once removed. Read whole by
 * hearth__cluster_triggers_start; each calls cb with every name held
 * (text NULL: removed); follow's cb runs with each change reaching this
 * node (the document now: _registration_of); put sets one for every
 * node (NULL: removes it), follow's callback running here before done. */
void hearth__cluster_registrations_each(hearth__cluster *c,
                                        void (*cb)(void *ctx, const char *name,
                                                   const char *text),
                                        void *ctx);
void hearth__cluster_registrations_follow(hearth__cluster *c,
                                          void (*cb)(void *ctx,
                                                     const char *name),
                                          void *ctx);
const char *hearth__cluster_registration_of(hearth__cluster *c,
                                            const char *name);
void hearth__cluster_registration_put(hearth__cluster *c, const char *name,
                                      const char *text,
                                      hearth__cluster_kept_cb done, void *ctx);
/* Loop: trigger's events (framed, n of them) of the record at seq of
 * db's namespace, copied: put in JetStream when this node leads it (true),
 * else kept a while. */
bool hearth__cluster_triggers_put(hearth_db_t *db, uint64_t seq,
                                  const char *trigger, const void *frames,
                                  size_t len, size_t n);
/* Deliverer thread: trigger's next batch of framed events into frames,
 * waiting at most wait_ms: 0 with *batch (end it with _done), 1 none, < 0
 * JetStream cannot be reached. *waiting: the events its consumer holds,
 * when known. */
typedef struct hearth__cluster_batch hearth__cluster_batch;
int hearth__cluster_triggers_take(hearth__cluster *c, const char *trigger,
                                  int wait_ms, hearth__cluster_batch **batch,
                                  hearth__buf *frames, uint64_t *waiting);
/* Deliverer thread, while it retries a batch: *waiting asked again (at
 * most once a second). */
void hearth__cluster_triggers_waiting(hearth__cluster *c, const char *trigger,
                                      uint64_t *waiting);
/* Deliverer thread: the batch delivered (acknowledged), or given back. */
void hearth__cluster_triggers_done(hearth__cluster *c,
                                   hearth__cluster_batch *batch,
                                   bool delivered);

/* Dead letters (cluster/dead.c): stream HEARTH_DEAD, subject
 * hearth.dead.TRIGGER.NAMESPACE, one sealed message per event, every
 * node's to list and retry. All but _dead_waiting block on JetStream (at
 * most HEARTH__CLUSTER_WAIT_MS a call): never on the loop.
 *
 * Deliverer thread: the k-th event of batch (frame: framed as in the
 * batch) kept as a dead letter, the stream's answer awaited: 0 once it is
 * durable (then the batch may be acknowledged), < 0 when not. */
int hearth__cluster_triggers_bury(hearth__cluster *c,
                                  hearth__cluster_batch *batch, unsigned k,
                                  const void *frame, size_t len);
/* Worker: trigger's dead letters, oldest first, at most max, their frames
 * appended to frames (*n of them). Letters that do not open with the
 * cluster secret are deleted and counted, never listed. */
int hearth__cluster_dead_list(hearth__cluster *c, const char *trigger,
                              size_t max, hearth__buf *frames, size_t *n);
/* Worker: trigger's dead letters (those there when it begins), oldest
 * first, each put back in HEARTH_TRIGGERS for delivery and only then
 * deleted from HEARTH_DEAD; *n: how many were queued. */
int hearth__cluster_dead_retry(hearth__cluster *c, const char *trigger,
                               size_t *n);
/* Any thread: trigger's dead letters in the cluster as its deliverer here
 * last asked (once a second); false when it has not yet. */
bool hearth__cluster_triggers_dead_waiting(hearth__cluster *c,
                                           const char *trigger,
                                           uint64_t *count);

/* The cluster's lines of /.metrics (Prometheus text), appended to out. */
void hearth__cluster_metrics(hearth__cluster *c, hearth__buf *out);

/* The operator's view as JSON text (to free with hearth__free): node,
 * live nodes, each open namespace's leader, log sequence and lag. */
char *hearth__cluster_status(hearth__cluster *c);
/* Test hook: a leader's purge round every `ticks` ticks of 500 ms
 * (default HEARTH__CLUSTER_RETAIN_TICKS, a minute). */
void hearth__cluster_set_retain_ticks(hearth__cluster *c, unsigned ticks);
/* Test hook: each append's answer is awaited only after ms more (a leader
 * paused with its append in flight). */
void hearth__cluster_set_append_delay(hearth__cluster *c, unsigned ms);

#endif
