/* internal.h - the cluster layer's shared state (cluster/cluster.h says
 * what it does). Internal to cluster/. */
#ifndef HEARTH_CLUSTER_INTERNAL_H
#define HEARTH_CLUSTER_INTERNAL_H

#include "cluster/cluster.h"
#include "cluster/tick.h"
#include "db/check.h"
#include "db/embedded.h"

#include <nats/nats.h>
#include <stdatomic.h>

#define HEARTH__CLUSTER_PARTITIONS 32
#define HEARTH__CLUSTER_LEASE_MS 4000 /* a lease or liveness key's TTL */
#define HEARTH__CLUSTER_TICK_MS 500   /* renewals, elections, retries */
#define HEARTH__CLUSTER_WAIT_MS 5000  /* a JetStream call's bound */
/* ... on the leases' round (round_js): three calls that each wait it out
 * (a JetStream electing its leaders) still renew a lease within its TTL */
#define HEARTH__CLUSTER_ROUND_WAIT_MS 1000
#define HEARTH__CLUSTER_FORWARD_MS 15000 /* a forwarded write's bound */
#define HEARTH__CLUSTER_HEARTBEAT_MS 500 /* of the tail's consumer */
#define HEARTH__CLUSTER_REJECT_KINDS 5 /* sealing.h */

/* What a NATS thread hands to the loop. */
typedef enum { MSG_LOG, MSG_FORWARD, MSG_REPLY, MSG_RULES } hearth__cluster_msg_kind;
typedef struct hearth__cluster_msg {
    struct hearth__cluster_msg *next;
    hearth__cluster_msg_kind kind;
    natsMsg *msg;
    uint64_t seq; /* MSG_LOG: its stream sequence */
    /* MSG_LOG, set by the tail: the sequence of the subject's message
     * before it (what its leader fenced it on, if it is genuine), and
     * once opened (1; -1: it does not, a no-op) where its plaintext is */
    uint64_t prev;
    int opened;
    const char *plain;
    size_t plain_len;
} hearth__cluster_msg;

typedef struct hearth__cluster_ns hearth__cluster_ns;

/* The root hash of a namespace's tree at a log sequence (antientropy.c). */
#define HEARTH__CLUSTER_CHECKS 4
typedef struct hearth__checkpoint {
    uint64_t seq;
    char hash[HEARTH_HASH_SIZE];
} hearth__checkpoint;
typedef struct hearth__snap_box hearth__snap_box; /* snapshot.c */

/* A lease given up, deleted by the next round if still as it was. */
typedef struct hearth__lease_release {
    struct hearth__lease_release *next;
    char name[130];
    uint64_t rev;
} hearth__lease_release;
typedef struct hearth__forward hearth__forward;

struct hearth__cluster {
    uv_loop_t *loop;
    char *node;
    /* made from the cluster secret at start, freed with the link; NULL
     * when the node runs --cluster-insecure (cluster/seal.h) */
    struct hearth__seal *seal;
    /* what was taken from NATS and dropped, by kind, and which kinds'
     * first was logged (sealing.h) */
    _Atomic uint64_t rejected[HEARTH__CLUSTER_REJECT_KINDS];
    atomic_uint rejected_logged;
    struct hearth__replay *replay; /* forwarded writes served (replay.c) */
    int replicas;
    natsConnection *nc;
    jsCtx *js;
    jsCtx *round_js; /* the leases' round's calls (ROUND_WAIT_MS) */
    kvStore *leases, *nodes, *orphans; /* orphans: onDisconnect writes */
    kvStore *retained; /* each namespace's purge floor (retain.c) */
    kvStore *rules_kv; /* each namespace's rules (rules.c) */
    natsSubscription *rules_sub;
    struct hearth__rules_copy *rules; /* this node's copy of the bucket */
    hearth__cluster_rules_cb on_rules;
    void *on_rules_ctx;
    char run[24]; /* this process's run of the node, in liveness and keys */
    bool made_stream[HEARTH__CLUSTER_PARTITIONS];
    /* NATS threads -> loop */
    uv_mutex_t lock;
    hearth__cluster_msg *head, *tail;
    bool stopping; /* under lock: NATS threads drop what they get */
    uv_async_t wake;
    hearth__cluster_periodic tick; /* tick.h */
    int closing; /* handles still to close at stop */
    /* Namespaces whose databases are not yet freed: a commit of theirs
     * may still be appending on a worker thread, so the link outlives
     * them (a stop asked meanwhile finishes with the last). */
    int open_spaces;
    bool stop_asked;
    bool round_running; /* the leases' round on a worker (lease.c) */
    int rebuilds; /* diverged namespaces' rebuilds on workers */
    uint64_t divergences; /* found since start (antientropy.c) */
    hearth__lease_release *releases;
    unsigned retain_ticks; /* a purge round every so many (retain.c) */
    unsigned append_delay_ms; /* test hook (backend.c) */
    hearth__cluster_ns *spaces; /* open namespaces */
    /* forwarded writes awaiting the leader's answer */
    natsSubscription *replies;
    char inbox[96];
    uint64_t next_id;
    hearth__forward *forwards;
    struct hearth__joining *joining; /* forwarded writes arriving in parts */
    struct hearth__lane *lane;   /* KV calls off the loop (lane.c) */
    struct hearth__sweep *sweep; /* the onDisconnect sweep (ondisconnect.c) */
    struct json_t *live; /* every live node's liveness, as of the last
                            renewal round (status.c shows it) */
};

/* One open namespace (hearth__embedded.replica_ctx of its database). */
struct hearth__cluster_ns {
    hearth__cluster *c;
    hearth__cluster_ns *next;
    hearth_db_t *db;
    char *name;
    char subject[96]; /* its log: hearth.ns.<partition>.<name> */
    char stream[32];
    /* its own JetStream context: appends in flight are this namespace's
     * alone (hearth__cluster_append_wait waits for them) */
    jsCtx *js;
    char seq_file[4096]; /* the local store's place in the log */
    /* The tree is exactly the log's records up to here (tail.c keeps it
     * so: hearth__cluster_tree_exact): the fence of the next append. */
    uint64_t applied_seq;
    /* ... and the tree of the last good commit (durable_root) up to here:
     * a failed commit puts applied_seq back to it. */
    uint64_t committed_seq;
    uint64_t durable_seq; /* ... and in the local store up to here */
    uint64_t stored_seq;  /* what seq_file says */
    int seq_fd;           /* seq_file, open once written (0: not yet) */
    /* leadership */
    bool leader;
    uint64_t lease_rev;
    uint64_t lead_from; /* the log's end when the lease was won: writes
                           wait until the tree has caught up to it */
    char leader_name[64]; /* who holds the lease, as last seen */
    natsSubscription *serving; /* forwarded writes, while leader */
    /* what the store buffers since the last commit began */
    size_t log_writes, own_writes;
    bool batch_published; /* the commit in flight goes to the log */
    uint64_t batch_seq;   /* its sequence once appended (worker thread) */
    uint64_t batch_applied; /* applied_seq when it began */
    int batch_jerr;       /* the log's refusal, if any */
    int batch_rc;         /* the append's outcome (set by its answer) */
    /* the tail */
    natsSubscription *tail_sub;
    uint64_t tail_last; /* the sequence of the last message it received */
    hearth__cluster_msg *records, *records_tail; /* received, not applied */
    /* applied, kept until a good commit holds them: a failed one undoes
     * them, and they apply again (with the parts of an unfinished chain,
     * which a commit never holds) */
    hearth__cluster_msg *unsettled, *unsettled_tail;
    hearth__buf chain;   /* the parts of a chain received so far */
    size_t chain_parts;  /* how many */
    uint64_t chain_first; /* the sequence of its first part (0: none) */
    /* client writes waiting: for leadership settled, or for the tail */
    hearth__db_op *held, *held_tail;
    /* the last whole tree, answered to joining peers (snapshot.c) */
    hearth__snap_box *snap;
    natsSubscription *snap_sub;
    /* retention, while leader: the log's end at the last purge round
     * (the next purges no further), and what is purged */
    uint64_t retain_cap, purged;
    /* anti-entropy (antientropy.c): this node's recent checkpoints (a
     * ring), sequences peers published that the tail has not reached, and
     * whether the tree was found to differ (not served, rebuilding) */
    hearth__checkpoint checks[HEARTH__CLUSTER_CHECKS];
    unsigned check_next, check_count;
    uint64_t wanted[HEARTH__CLUSTER_CHECKS];
    unsigned nwanted;
    bool diverged, rebuilding;
    /* the leader's run, as it last told this node: forwarded writes are
     * sealed for it alone (forward.c) */
    char leader_term[96];
    hearth__forward *waiting; /* answered, acknowledged at their seq */
    int forwarding;           /* sent, not yet answered */
};

/* ---- link.c ---- */
/* Any thread: queues m for the loop (or drops it when stopping). */
void hearth__cluster_post(hearth__cluster *c, hearth__cluster_msg_kind kind,
                          natsMsg *m, uint64_t seq);
hearth__cluster_ns *hearth__cluster_find(hearth__cluster *c, const char *name);
/* A NATS status as a Hearth error (EIO unless it says more). */
int hearth__cluster_error(natsStatus s);
/* A namespace's database is freed: the last lets a stop finish. */
void hearth__cluster_space_freed(hearth__cluster *c);
/* Makes namespace n's stream if this node has not yet. */
int hearth__cluster_stream(hearth__cluster *c, hearth__cluster_ns *n,
                           hearth_error_t *err);
/* Ends *sub (NULL after). A JetStream consumer it made is deleted while
 * NATS is connected; otherwise the server drops it once nobody listens,
 * and nothing waits for a NATS that cannot answer. */
void hearth__cluster_unsubscribe(hearth__cluster *c, natsSubscription **sub);

/* ---- natsopts.c ---- */
/* The NATS credentials and TLS of o into opts (tls:// URLs and a CA make
 * the connection secure); an error names the file at fault. */
int hearth__cluster_nats_auth(natsOptions *opts,
                              const hearth__cluster_options *o,
                              hearth_error_t *err);

/* ---- append.c ---- */
/* Appends a group commit's bytes after sequence `after` (0: none), as one
 * message or a chain of parts; *seq: the last one's. Worker thread. */
int hearth__cluster_append(hearth__cluster_ns *n, const char *data,
                           size_t len, uint64_t after, uint64_t *seq);
/* The same, overlapped with the local log: start sends the message (a
 * chain is appended whole, waiting for each part) and wait waits for the
 * stream's answer (hearth__cluster_on_ack, the jsCtx's ack handler, sets
 * batch_seq and batch_rc). bytes: hearth__cluster_seal_room bytes of room
 * (sealing.h), then the group; sealed where it lies. Worker thread. */
int hearth__cluster_append_start(hearth__cluster_ns *n, hearth__buf *bytes,
                                 uint64_t after);
int hearth__cluster_append_wait(hearth__cluster_ns *n);
void hearth__cluster_on_ack(jsCtx *js, natsMsg *m, jsPubAck *pa,
                            jsPubAckErr *pae, void *closure);
/* Whether m is part i of k of a chain; marking it so. */
bool hearth__cluster_part(natsMsg *m, size_t *i, size_t *k);
natsStatus hearth__cluster_part_mark(natsMsg *m, size_t i, size_t k);
/* The bytes a message may carry, less room for its headers. */
size_t hearth__cluster_room(hearth__cluster *c);

/* ---- backend.c ---- */
extern const hearth__db_backend hearth__db_cluster;
hearth__cluster_ns *hearth__cluster_ns_of(hearth_db_t *db);
/* Runs the writes held while leadership settled (loop thread). */
void hearth__cluster_release_held(hearth__cluster_ns *n);

/* ---- tail.c ---- */
int hearth__cluster_tail_start(hearth__cluster_ns *n, hearth_error_t *err);
void hearth__cluster_tail_push(hearth__cluster_ns *n, hearth__cluster_msg *m);
/* Applies the records received, unless this node's own writes wait for
 * the log (they come first: the log refuses them, or they are its next). */
void hearth__cluster_tail_drain(hearth__cluster_ns *n);
/* Whether the tree is exactly the log up to applied_seq: no write of this
 * node's own is applied ahead of the log (waiting for its commit, or in
 * the commit that appends it). Records apply only then. */
bool hearth__cluster_tree_exact(const hearth__cluster_ns *n);
/* After a good commit of records (up to committed_seq): forgets those it
 * holds. After a failed one (the tree back at committed_seq): the records
 * applied since go back to the front of the queue, to apply again. */
void hearth__cluster_tail_settled(hearth__cluster_ns *n);
void hearth__cluster_tail_rewind(hearth__cluster_ns *n);
/* Forgets the records kept and a chain in progress: the tree was
 * replaced by a peer's, past them (antientropy.c); the queue stays. */
void hearth__cluster_tail_settle_all(hearth__cluster_ns *n);
/* Drops every record received or kept (the namespace leaves). */
void hearth__cluster_tail_clear(hearth__cluster_ns *n);
/* The local store's place in the log (seq_file), read and written. */
uint64_t hearth__cluster_seq_read(const hearth__cluster_ns *n);
void hearth__cluster_seq_write(hearth__cluster_ns *n);
/* At open, before the store: cuts the local log back to where it ended
 * when seq_file was written (cluster/recover.c). */
void hearth__cluster_trust_stream(const hearth__cluster_ns *n,
                                  const char *dir);

/* ---- lease.c ---- */
/* The tick's part (tick.c): a leases' round unless one runs, renewing
 * every second (and a leader's purge round when retain.c says so). */
void hearth__cluster_lease_tick(hearth__cluster *c, uint64_t ticks);
/* Stops leading n at once; its lease is deleted by the next round. */
void hearth__cluster_step_down(hearth__cluster_ns *n);
/* Deletes the leases given up now (at stop: no round follows). */
void hearth__cluster_releases_flush(hearth__cluster *c);

/* ---- link.c ---- */
/* A worker using the link ended (a leases' round, the
 * KV lane): a stop waiting for it may finish. */
void hearth__cluster_round_ended(hearth__cluster *c);

/* ---- ondisconnect.c ---- */
/* The leaders' sweep (one listing for all the namespaces this node
 * leads, on the lane's worker): runs the onDisconnect writes of sessions
 * whose node's run is no longer alive, then forgets them. */
void hearth__cluster_orphans_tick(hearth__cluster *c, uint64_t ticks);
/* The sweep, on the lane (lane.c): begin (loop) says whether one is due
 * and notes the namespaces led; work (the lane's worker, after its
 * queued calls) finds the dead runs' lists; end (loop) runs them and
 * queues their deletes. Its state is made at start, freed with the link. */
bool hearth__cluster_sweep_begin(hearth__cluster *c);
void hearth__cluster_sweep_work(hearth__cluster *c);
void hearth__cluster_sweep_end(hearth__cluster *c);
int hearth__cluster_sweep_create(hearth__cluster *c);
void hearth__cluster_sweep_free(hearth__cluster *c);

/* ---- snapshot.c ---- */
/* Serves n's snapshots to joining peers (at open); stops (at leave). */
int hearth__cluster_snapshot_serve(hearth__cluster_ns *n);
void hearth__cluster_snapshot_stop(hearth__cluster_ns *n);
/* Loop: keeps n's tree as the snapshot if it is the log up to
 * applied_seq. */
void hearth__cluster_snapshot_note(hearth__cluster_ns *n);
/* The log sequence of the tree a peer would get now (0: none). */
uint64_t hearth__cluster_snapshot_seq(const hearth__cluster_ns *n);
/* Loop, before name's database opens on dir with nothing of the log:
 * loads a peer's tree into dir's store; its log sequence (0: none, read
 * the log from its start). */
uint64_t hearth__cluster_snapshot_join(hearth__cluster *c, const char *name,
                                       const char *dir);

/* ---- retain.c ---- */
/* A purge round every minute: a purge stalls the stream's appends for a
 * moment (measured: a round every 4 s took the leader's writes/s from
 * 32,628 to 14,760 with 64 in flight). */
#define HEARTH__CLUSTER_RETAIN_TICKS 120
/* One namespace's purge, as the loop saw it when the round began. */
typedef struct hearth__retain_job {
    const char *name, *stream, *subject;
    uint64_t kept; /* what this node has applied */
    uint64_t last; /* the subject's last record here */
    uint64_t cap;  /* retain_cap */
    uint64_t purged;
    uint64_t purged_to; /* set by the round: the new purged */
} hearth__retain_job;
/* Worker thread: purges j's subject as far as every live node allows. */
void hearth__cluster_retain(hearth__cluster *c, hearth__retain_job *j);
/* name's purge floor: records below it are gone (0: none; UINT64_MAX:
 * unknown, its value does not open). */
uint64_t hearth__cluster_retained(hearth__cluster *c, const char *name);

/* ---- status.c ---- */
/* One node's liveness value, opened (NULL: none, or not a node's:
 * *forged, when not NULL, says which); every live node's,
 * {"<node>": {...}} (any thread). */
struct json_t *hearth__cluster_liveness_of(hearth__cluster *c,
                                           const char *node, bool *forged);
/* Every live node's liveness value, {"<node>": {...}} (any thread). */
struct json_t *hearth__cluster_live_nodes(hearth__cluster *c);

/* ---- forward.c ---- */
/* A write on a node that does not lead: sent to the leader; o is kept. */
void hearth__cluster_forward(hearth__cluster_ns *n, hearth__db_op *o);

/* ---- lane.c ---- */
typedef struct hearth__lane hearth__lane;
/* Queues a put of value (len bytes, copied; sealed by the caller:
 * sealing.h) at key in kv (value NULL: a delete) down the lane of KV
 * calls (a worker, in order); done (may be NULL) then runs on the loop.
 * false without memory (done not called). */
bool hearth__cluster_lane_put(hearth__cluster *c, kvStore *kv,
                              const char *key, const void *value, size_t len,
                              hearth__cluster_kept_cb done, void *ctx);
/* Starts the worker on what is queued (and a due sweep) unless it runs. */
void hearth__cluster_lane_kick(hearth__cluster *c);
/* Made at start; busy while a call is queued or running (a stop waits);
 * freed with the link. */
int hearth__cluster_lane_create(hearth__cluster *c);
bool hearth__cluster_lane_busy(const hearth__cluster *c);
void hearth__cluster_lane_free(hearth__cluster *c);

/* ---- rules.c ---- */
/* Reads the rules bucket whole (at start, before serving); follows its
 * changes (once the link's wake-up exists; again each tick until it
 * does); stops following (at stop); frees this node's copy. */
int hearth__cluster_rules_start(hearth__cluster *c, hearth_error_t *err);
void hearth__cluster_rules_follow_bucket(hearth__cluster *c);
void hearth__cluster_rules_stop(hearth__cluster *c);
void hearth__cluster_rules_free(hearth__cluster *c);
/* Loop: a change of the bucket, from its stream. */
void hearth__cluster_rules_changed(hearth__cluster *c, natsMsg *m);

/* ---- antientropy.c ---- */
/* Loop, each renewal: a checkpoint of the last good commit's tree. */
void hearth__cluster_checks_note(hearth__cluster_ns *n);
/* Loop, the tail having applied up to applied_seq: a checkpoint there if
 * a peer published one. */
void hearth__cluster_checks_applied(hearth__cluster_ns *n);
/* n's checkpoints as liveness publishes them: [[seq, hash], ...]. */
struct json_t *hearth__cluster_checks_json(const hearth__cluster_ns *n);
/* Loop, with every live node's liveness: compares, and a namespace whose
 * tree most peers saw otherwise is no longer served, and rebuilt. */
void hearth__cluster_checks_compare(hearth__cluster *c, struct json_t *live);
/* Loop, each tick: the rebuild of a diverged namespace, once it may. */
void hearth__cluster_rebuild_maybe(hearth__cluster_ns *n);
/* The backend's unavailable: a diverged namespace is not served. */
bool hearth__cluster_db_unavailable(hearth_db_t *db);

/* ---- snapshot.c: a peer's tree (any thread; 0 with *root, new) ---- */
int hearth__cluster_snapshot_fetch(hearth__cluster *c, const char *name,
                                   hearth_node_t **root, uint64_t *seq);

/* ---- transaction.c ---- */
/* Runs a transaction with a function on a node that does not lead: true
 * when it took o (its done runs later), false when it ended at once. */
bool hearth__cluster_transaction_forward(hearth__cluster_ns *n,
                                         hearth__db_op *o);
/* The leader's side: one forwarded write (m's reply subject answers). */
void hearth__cluster_serve(hearth__cluster *c, natsMsg *m);
/* Queues one write as forward.c's body describes it (doc), judged as it
 * says, on n's database; cb as hearth__db_set_as's. */
struct json_t;
int hearth__cluster_submit(hearth__cluster_ns *n, struct json_t *doc,
                           hearth_completion_cb cb, void *ctx,
                           hearth_free_cb ctx_free, hearth_error_t *err);
void hearth__cluster_on_reply(hearth__cluster *c, natsMsg *m);
/* Forgets forwarded writes still arriving in parts after old ms (0:
 * all). */
void hearth__cluster_joins_expire(hearth__cluster *c, uint64_t old);
/* Retries and timeouts of forwarded writes; acknowledges those n's tail
 * has reached. */
void hearth__cluster_forward_tick(hearth__cluster *c);
void hearth__cluster_forward_applied(hearth__cluster_ns *n);
/* Ends every forwarded write of n (closing) with rc. */
void hearth__cluster_forward_cancel(hearth__cluster_ns *n, int rc);

#endif
