/* internal.h - what every job of the cluster layer shares (cluster/cluster.h
 * says what the layer does; docs/ARCHITECTURE.md which file owns what):
 * the timings, the message NATS's threads hand the loop, and the names of
 * the node and of a namespace, whose state cluster/node.h composes from
 * each job's own part. Internal to cluster/. */
#ifndef HEARTH_CLUSTER_INTERNAL_H
#define HEARTH_CLUSTER_INTERNAL_H

#include "cluster/cluster.h"
#include "common/list.h"
#include "db/check.h"
#include "db/embedded.h"

#include <nats/nats.h>
#include <stdatomic.h>

#define HEARTH__CLUSTER_PARTITIONS 32
#define HEARTH__CLUSTER_LEASE_MS 4000 /* a lease or liveness key's TTL */
#define HEARTH__CLUSTER_TICK_MS 500   /* renewals, elections, retries */
#define HEARTH__CLUSTER_WAIT_MS 5000  /* a JetStream call's bound */
/* how long a node starting waits for JetStream to be ready (its meta
 * leader elected) before it gives up */
#define HEARTH__CLUSTER_START_WAIT_MS 20000
/* ... on the leases' round (round_js): three calls that each wait it out
 * (a JetStream electing its leaders) still renew a lease within its TTL */
#define HEARTH__CLUSTER_ROUND_WAIT_MS 1000
#define HEARTH__CLUSTER_FORWARD_MS 15000 /* a forwarded write's bound */
#define HEARTH__CLUSTER_HEARTBEAT_MS 500 /* of the tail's consumer */
/* a record the log is known to hold, and nothing delivered this long: the
 * tail's consumer is made again (tail.c). libnats makes an ordered
 * consumer again itself after missed heartbeats, but not always: after a
 * nats-server's kill -9, tails were seen silent for good. A live
 * consumer delivers a record within milliseconds of its append (three
 * heartbeats pass in this time), and a new leader orders nothing until
 * its tail brings the log's end, so this wait is the cluster's. */
#define HEARTH__CLUSTER_TAIL_STALL_MS 1500
/* how soon making it again is tried again when JetStream did not answer
 * (electing its leaders); each try waits HEARTH__CLUSTER_WAIT_MS, on a
 * worker: just after an election JetStream can take seconds to make a
 * consumer, and a request given up sooner is made again, and waits
 * again */
#define HEARTH__CLUSTER_TAIL_RETRY_MS 500
#define HEARTH__CLUSTER_REJECT_KINDS 6 /* sealing.h */

/* What a NATS thread hands to the loop. */
typedef enum { MSG_LOG, MSG_FORWARD, MSG_REPLY, MSG_RULES } hearth__cluster_msg_kind;
#define HEARTH__CLUSTER_SID_READ UINT64_MAX
typedef struct hearth__cluster_msg {
    hearth__list link; /* in the link's queue, or a tail's records or
                          unsettled */
    hearth__cluster_msg_kind kind;
    natsMsg *msg;
    uint64_t seq; /* MSG_LOG: its stream sequence */
    uint64_t sid; /* MSG_LOG: the subscription that received it, or
                     HEARTH__CLUSTER_SID_READ: read by its sequence, its
                     prev set by the reader (tail.c) */
    /* MSG_LOG, set by the tail: the sequence of the subject's message
     * before it (what its leader fenced it on, if it is genuine), and
     * once opened (1; -1: it does not, a no-op) where its plaintext is */
    uint64_t prev;
    int opened;
    const char *plain;
    size_t plain_len;
} hearth__cluster_msg;

typedef struct hearth__cluster_ns hearth__cluster_ns;

/* Frees every message of list (and its NATS message); list ends empty
 * (cluster/tail.c). */
void hearth__cluster_msg_free_all(hearth__list *list);

#endif
