/* triggers.h - database triggers in a cluster (cluster/triggers.c; what
 * the server sees is in cluster.h): each committed write's events, built
 * by every node as it applies the log, made durable in JetStream by the
 * namespace's leader and delivered from a durable consumer per trigger,
 * so that one node at a time delivers each and any node's death loses
 * none. Internal to cluster/. */
#ifndef HEARTH_CLUSTER_TRIGGERS_H
#define HEARTH_CLUSTER_TRIGGERS_H

#include "cluster/internal.h"
#include "common/list.h"
#include "common/map.h"
#include "cluster/rules.h"

#define HEARTH__CLUSTER_TRIG_STREAM "HEARTH_TRIGGERS"
/* The dead letters (dead.c): subject hearth.dead.TRIGGER.NAMESPACE. */
#define HEARTH__CLUSTER_DEAD_STREAM "HEARTH_DEAD"
/* A batch a deliverer holds is redelivered (to any node) this long after
 * its last sign of life: the takeover after a deliverer's death. The
 * tick sends the signs while the deliverer works (posts, backoffs). */
#define HEARTH__CLUSTER_TRIG_ACK_WAIT_MS 5000
#define HEARTH__CLUSTER_TRIG_PROGRESS_MS 1000
/* Events a node that does not lead keeps, in case the leader dies before
 * it has put them in JetStream (it does so at once, so seconds are
 * plenty; within JetStream's duplicate window, 2 minutes, which drops
 * what the leader did put): by age, and bytes per namespace. */
#define HEARTH__CLUSTER_TRIG_KEEP_MS 30000
#define HEARTH__CLUSTER_TRIG_KEEP_BYTES (16u << 20)

typedef struct hearth__trig_entry hearth__trig_entry;
typedef struct hearth__trig_pull hearth__trig_pull;
typedef struct hearth__cluster_batch hearth__cluster_batch;

/* The node's part (triggers.c writes it). The mutex guards the pulls and
 * the batches held: the deliverers' threads and the loop's tick use
 * them. */
typedef struct hearth__cluster_trig {
    bool started;
    jsCtx *js; /* the events' publishes (its ack handler notes failures) */
    atomic_bool failed; /* a publish failed: the leaders put theirs again */
    atomic_bool ack_warned; /* an acknowledgement failed, said once */
    /* the dead letters' listings and retries running (dead.c, on the
     * server's workers), and the stop they end early for: the stop waits
     * for them before the JetStream context goes */
    atomic_int dead_jobs;
    atomic_bool dead_stop;
    uv_mutex_t mu;
    hearth__map pulls;             /* hearth__trig_pull by trigger name */
    hearth__list held;             /* batches taken, not yet done */
    /* the admin's registrations, every node's (bucket hearth_triggers,
     * keyed by the trigger's name: rules.c's documents) */
    hearth__cluster_docs regs;
} hearth__cluster_trig;

/* A namespace's part (loop): the events kept, oldest first, and the
 * sequences below which records are too old to keep theirs. */
typedef struct hearth__cluster_ns_trig {
    hearth__list kept; /* of hearth__trig_entry */
    size_t bytes;
    uint64_t stale_to;
} hearth__cluster_ns_trig;

/* Loop, each tick: the leaders' events put (again) if due, the kept ones
 * aged, the held batches' signs of life sent. */
void hearth__cluster_triggers_tick(hearth__cluster *c);
/* Loop: a change of the registrations' bucket (false: m is not its). */
bool hearth__cluster_triggers_changed(hearth__cluster *c, natsMsg *m);
/* Frees a namespace's events kept (with its database). */
void hearth__cluster_triggers_ns_free(hearth__cluster_ns *n);
/* Stops following the registrations' bucket (a stop was asked). */
void hearth__cluster_triggers_unfollow(hearth__cluster *c);
/* At stop, before the connection goes (every deliverer joined; the
 * bucket unfollowed when the stop was asked). */
void hearth__cluster_triggers_free(hearth__cluster *c);
/* The message of a batch taken (its subject and id name its letters). */
natsMsg *hearth__cluster_batch_msg(hearth__cluster_batch *b);

/* dead.c: makes stream HEARTH_DEAD (at start, on the loop). */
int hearth__cluster_dead_start(hearth__cluster *c, hearth_error_t *err);
/* The trigger's dead letters in HEARTH_DEAD now, asked of JetStream
 * (blocking: a deliverer's thread, once a second with its lag). */
int hearth__cluster_dead_count(hearth__cluster *c, const char *trigger,
                               uint64_t *count);

#endif
