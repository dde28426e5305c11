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
#include "cluster/pitr.h"
#include "cluster/rules.h"
#include "cluster/sealing.h"
#include "cluster/snapshot.h"
#include "cluster/tick.h"
#include "cluster/triggers.h"
#include "common/map.h"

/* This node. */
struct hearth__cluster {
    /* Set at start by link.c and read by every job: the loop, the node's
     * name and this process's run of it (in liveness and keys), and the
     * connection with its JetStream contexts. */
    uv_loop_t *loop;
    char *node;
    char run[24];
    int replicas;
    natsConnection *nc;
    jsCtx *js;
    jsCtx *round_js; /* the leases' round's calls (ROUND_WAIT_MS) */
    /* The open namespaces (backend.c adds and removes them), newest
     * first, and the same by name (one namespace of a name at a time: the
     * server opens each once), for the lookups of every message. */
    hearth__list spaces; /* of hearth__cluster_ns, by link */
    hearth__map names;
    /* Each job's own part, written by the files named alone. */
    hearth__cluster_link link;       /* link.h: link.c */
    hearth__cluster_periodic tick;   /* tick.h: tick.c */
    hearth__cluster_sealing sealing; /* sealing.h: sealing.c, replay.c */
    hearth__cluster_leases lease;    /* lease.h: lease.c, liveness.c */
    hearth__cluster_logs log;        /* log.h: commit.c, retain.c */
    hearth__cluster_pitr pitr;       /* pitr.h: retain.c, checkpoint.c */
    hearth__cluster_forwards fwd;    /* forward.h: forward.c, serve.c */
    hearth__cluster_checks ae;       /* antientropy.h: antientropy.c */
    hearth__cluster_rules rules;     /* rules.h: rules.c */
    hearth__cluster_orphans odc;     /* ondisconnect.h: ondisconnect.c,
                                        lane.c */
    hearth__cluster_trig trig;       /* triggers.h: triggers.c */
};

/* One open namespace (hearth__embedded.replica_ctx of its database),
 * made and freed by backend.c. */
struct hearth__cluster_ns {
    hearth__cluster *c;
    hearth__list link; /* in c->spaces */
    hearth_db_t *db;
    char *name;
    /* Each job's own part, written by the files named alone. */
    hearth__cluster_log log;          /* log.h: commit.c, append.c, tail.c */
    hearth__cluster_tail tail;        /* log.h: tail.c */
    hearth__cluster_retention retain; /* log.h: retain.c */
    hearth__cluster_lead lead;        /* lease.h: lease.c */
    hearth__cluster_hold hold;        /* backend.h: backend.c */
    hearth__cluster_ns_forwards fwd;  /* forward.h: forward.c, serve.c */
    hearth__cluster_snap snap;        /* snapshot.h: snapshot.c */
    hearth__cluster_ns_pitr pitr;     /* pitr.h: checkpoint.c */
    hearth__cluster_ns_checks ae;     /* antientropy.h: antientropy.c */
    hearth__cluster_ns_trig trig;     /* triggers.h: triggers.c */
};

#endif
