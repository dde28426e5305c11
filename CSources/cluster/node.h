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
    hearth__cluster_logs log;        /* log.h: commit.c, retain.c */
    hearth__cluster_checks ae;       /* antientropy.h: antientropy.c */
    kvStore *orphans; /* onDisconnect writes */
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
    hearth__cluster_log log;   /* log.h: commit.c, append.c, tail.c */
    hearth__cluster_tail tail; /* log.h: tail.c */
    hearth__cluster_retention retain; /* log.h: retain.c */
    hearth__cluster_lead lead; /* lease.h: lease.c */
    hearth__cluster_ns_forwards fwd; /* forward.h: forward.c, serve.c */
    hearth__cluster_ns_checks ae; /* antientropy.h: antientropy.c */
    /* client writes waiting: for leadership settled, or for the tail */
    hearth__db_op *held, *held_tail;
    /* the last whole tree, answered to joining peers (snapshot.c) */
    hearth__snap_box *snap;
    natsSubscription *snap_sub;
};

#endif
