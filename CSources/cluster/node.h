/* node.h - the state of this node (hearth__cluster) and of each open
 * namespace (hearth__cluster_ns), each made of the parts of the jobs that
 * own them: a part is declared in its job's header and written by that
 * job's files alone; other jobs call the job's functions. Internal to
 * cluster/. */
#ifndef HEARTH_CLUSTER_NODE_H
#define HEARTH_CLUSTER_NODE_H

#include "cluster/internal.h"

#include "cluster/antientropy.h"
#include "cluster/backend.h"
#include "cluster/forward.h"
#include "cluster/lease.h"
#include "cluster/link.h"
#include "cluster/log.h"
#include "cluster/ondisconnect.h"
#include "cluster/rules.h"
#include "cluster/sealing.h"
#include "cluster/snapshot.h"
#include "cluster/tick.h"


struct hearth__cluster {
    uv_loop_t *loop;
    char *node;
    int replicas;
    natsConnection *nc;
    jsCtx *js;
    jsCtx *round_js; /* the leases' round's calls (ROUND_WAIT_MS) */
    kvStore *retained; /* each namespace's purge floor (retain.c) */
    kvStore *rules_kv; /* each namespace's rules (rules.c) */
    natsSubscription *rules_sub;
    struct hearth__rules_copy *rules; /* this node's copy of the bucket */
    hearth__cluster_rules_cb on_rules;
    void *on_rules_ctx;
    char run[24]; /* this process's run of the node, in liveness and keys */
    hearth__cluster_link link;     /* link.h: link.c */
    hearth__cluster_periodic tick; /* tick.h: tick.c */
    hearth__cluster_sealing sealing; /* sealing.h: sealing.c, replay.c */
    hearth__cluster_leases lease;    /* lease.h: lease.c, liveness.c */
    hearth__cluster_forwards fwd;    /* forward.h: forward.c, serve.c */
    kvStore *orphans; /* onDisconnect writes */
    int rebuilds; /* diverged namespaces' rebuilds on workers */
    uint64_t divergences; /* found since start (antientropy.c) */
    unsigned retain_ticks; /* a purge round every so many (retain.c) */
    unsigned append_delay_ms; /* test hook (backend.c) */
    hearth__cluster_ns *spaces; /* open namespaces */
    struct hearth__lane *lane;   /* KV calls off the loop (lane.c) */
    struct hearth__sweep *sweep; /* the onDisconnect sweep (ondisconnect.c) */
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
    hearth__cluster_lead lead; /* lease.h: lease.c */
    hearth__cluster_ns_forwards fwd; /* forward.h: forward.c, serve.c */
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
};

#endif
