/* forward.h - writes made on a node that does not lead, both sides: the
 * sender's (cluster/forward.c; transactions with a function,
 * cluster/transaction.c) and the leader's (cluster/serve.c; requests
 * already served, cluster/replay.c, declared in sealing.h). Internal to
 * cluster/. */
#ifndef HEARTH_CLUSTER_FORWARD_H
#define HEARTH_CLUSTER_FORWARD_H

#include "cluster/internal.h"

struct hearth__aad;
struct json_t;
typedef struct hearth__forward hearth__forward;

/* The node's part: forward.c's and serve.c's. */
typedef struct hearth__cluster_forwards {
    /* forwarded writes awaiting the leader's answer (forward.c) */
    natsSubscription *replies;
    char inbox[96];
    uint64_t next_id;
    hearth__forward *forwards;
    unsigned disconnects; /* the link's count when last looked at */
    hearth__list joining; /* arriving in parts (serve.c), newest first */
} hearth__cluster_forwards;

/* A namespace's part. */
typedef struct hearth__cluster_ns_forwards {
    natsSubscription *serving; /* forwarded writes, while leader (serve.c) */
    /* the leader's run, as it last told this node: forwarded writes are
     * sealed for it alone (forward.c) */
    char leader_term[96];
    hearth__forward *waiting; /* answered, acknowledged at their seq */
    int forwarding;           /* sent, not yet answered */
} hearth__cluster_ns_forwards;

/* ---- forward.c: the sender's side ---- */
/* The answers' subscription, on this node's inbox for this run (at
 * start, c->run made); drained (at stop, before the link goes); ended. */
natsStatus hearth__cluster_replies_start(hearth__cluster *c);
void hearth__cluster_replies_drain(hearth__cluster *c);
void hearth__cluster_replies_close(hearth__cluster *c);
/* Whether n has no forwarded write in flight (none sent unanswered, none
 * answered and waiting for the tail); ... one answered and waiting. */
bool hearth__cluster_forward_idle(const hearth__cluster_ns *n);
bool hearth__cluster_forward_waiting(const hearth__cluster_ns *n);
/* A write on a node that does not lead: sent to the leader; o is kept. */
void hearth__cluster_forward(hearth__cluster_ns *n, hearth__db_op *o);
/* Loop: the leader's answer to a forwarded write (its reply subject). */
void hearth__cluster_on_reply(hearth__cluster *c, natsMsg *m);
/* Retries and timeouts of forwarded writes; acknowledges those n's tail
 * has reached. */
void hearth__cluster_forward_tick(hearth__cluster *c);
void hearth__cluster_forward_applied(hearth__cluster_ns *n);
/* Ends every forwarded write of n (closing) with rc. */
void hearth__cluster_forward_cancel(hearth__cluster_ns *n, int rc);
/* What a forwarded write's part i of k (k 0: the whole) is sealed for. */
void hearth__cluster_request_context(struct hearth__aad *a, const char *subj,
                                     const char *reply, size_t i, size_t k);

/* ---- transaction.c ---- */
/* Runs a transaction with a function on a node that does not lead: true
 * when it took o (its done runs later), false when it ended at once. */
bool hearth__cluster_transaction_forward(hearth__cluster_ns *n,
                                         hearth__db_op *o);

/* ---- serve.c: the leader's side ---- */
/* Serves n's forwarded writes (its lease won: 0, or an error and none);
 * stops (stepping down). */
int hearth__cluster_serve_start(hearth__cluster_ns *n);
void hearth__cluster_serve_stop(hearth__cluster_ns *n);
/* The leader's side: one forwarded write (m's reply subject answers). */
void hearth__cluster_serve(hearth__cluster *c, natsMsg *m);
/* Queues one write as forward.c's body describes it (doc), judged as it
 * says, on n's database; cb as hearth__db_set_as's. */
int hearth__cluster_submit(hearth__cluster_ns *n, struct json_t *doc,
                           hearth_completion_cb cb, void *ctx,
                           hearth_free_cb ctx_free, hearth_error_t *err);
/* Forgets forwarded writes still arriving in parts after old ms (0:
 * all). */
void hearth__cluster_joins_expire(hearth__cluster *c, uint64_t old);
/* The tick's part: joins cut short, senders not heard from (replay.c). */
void hearth__cluster_serve_tick(hearth__cluster *c);

#endif
