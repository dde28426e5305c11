/* log.h - a namespace's log: the leader's append of each group commit
 * (cluster/append.c, from the commit's hooks in cluster/commit.c), every
 * node's tail applying the log's records (cluster/tail.c), the local
 * store's place in the log and the cut at open (cluster/recover.c), and
 * the log's retention (cluster/retain.c). The invariant all of it keeps:
 * the tree is exactly the log up to applied_seq. Internal to cluster/. */
#ifndef HEARTH_CLUSTER_LOG_H
#define HEARTH_CLUSTER_LOG_H

#include "cluster/internal.h"

/* The node's part. */
typedef struct hearth__cluster_logs {
    kvStore *retained; /* each namespace's purge floor (retain.c) */
    unsigned retain_ticks; /* a purge round every so many (retain.c) */
    bool purging; /* the purges of a round on their worker (retain.c) */
    unsigned append_delay_ms; /* test hook (commit.c) */
    int tail_remakes; /* consumers being made again (tail.c) */
} hearth__cluster_logs;

/* A namespace's place in its log, and its commit in flight (commit.c,
 * append.c and tail.c write it). */
typedef struct hearth__cluster_log {
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
    /* what the store buffers since the last commit began */
    size_t log_writes, own_writes;
    bool batch_published; /* the commit in flight goes to the log */
    uint64_t batch_seq;   /* its sequence once appended (worker thread) */
    uint64_t batch_applied; /* applied_seq when it began */
    int batch_jerr;       /* the log's refusal, if any */
    int batch_status;     /* the append's natsStatus, if it failed */
    int batch_rc;         /* the append's outcome (set by its answer) */
    /* The answer awaited (append.c): the message in flight, and whether
     * its answer came; under ack_lock, since the answer comes on a NATS
     * thread. An append given up (its connection lost) leaves a message
     * whose late answer is ignored; abandoned: one may still come, so
     * the namespace's free waits for it. */
    uv_mutex_t ack_lock;
    uv_cond_t ack_cond;
    bool ack_ready; /* lock and condition made */
    const natsMsg *awaited;
    bool acked;
    bool abandoned;
    unsigned batch_disconnects; /* the link's count as it was sent */
} hearth__cluster_log;

/* A namespace's tail (tail.c writes it). */
typedef struct hearth__cluster_tail {
    natsSubscription *tail_sub;
    uint64_t sid; /* tail_sub's: messages of an earlier one are dropped */
    uint64_t tail_last; /* the sequence of the last message it received */
    hearth__list records; /* hearth__cluster_msg received, not applied */
    /* applied, kept until a good commit holds them: a failed one undoes
     * them, and they apply again (with the parts of an unfinished chain,
     * which a commit never holds) */
    hearth__list unsettled; /* hearth__cluster_msg, in sequence */
    hearth__buf chain;   /* the parts of a chain received so far */
    size_t chain_parts;  /* how many */
    uint64_t chain_first; /* the sequence of its first part (0: none) */
    /* The watchdog's: the log is known to hold `expected` (an answer or
     * a refusal said so), not yet delivered, and the consumer has
     * delivered nothing since behind_since (loop ms; 0: not behind). */
    uint64_t expected, behind_since;
    /* the record being applied (its writes' triggers ask), or NULL */
    const hearth__cluster_msg *applying;
    /* The consumer being made again on a worker (tail.c), or NULL;
     * meanwhile what the new one delivers waits in early (its sid is not
     * known until it is made). */
    struct hearth__tail_remake *remake;
    hearth__list early;
    /* With no consumer (tail_sub NULL, no remake: its making failed),
     * when the watchdog makes one again (loop ms; 0: at once). */
    uint64_t retry_at;
} hearth__cluster_tail;

/* A namespace's retention, while leader (retain.c writes it): the log's
 * end at the last purge round (the next purges no further), and what is
 * purged. */
typedef struct hearth__cluster_retention {
    uint64_t retain_cap, purged;
} hearth__cluster_retention;

/* ---- commit.c ---- */
/* Opens n's part of the log (at open, before its database: the stream,
 * n's own JetStream context, the local log cut back to seq_file's place,
 * recover.c); where the tree is once the database is open (joined: the
 * sequence of a peer's snapshot loaded, 0: none); frees it (with the
 * database). */
int hearth__cluster_log_open(hearth__cluster_ns *n, const char *dir,
                             hearth_error_t *err);
void hearth__cluster_log_begin(hearth__cluster_ns *n, uint64_t joined);
void hearth__cluster_log_free(hearth__cluster_ns *n);
/* Whether the store buffers records of the log since the last commit
 * began (this node's own writes may not join them); counts one own write
 * the engine kept (applied ahead of the log). */
bool hearth__cluster_log_buffered(const hearth__cluster_ns *n);
void hearth__cluster_own_written(hearth__cluster_ns *n, bool kept);
/* Where the tree is in the log: applied_seq (the tree is exactly the log
 * up to it), committed_seq (the last good commit's tree), durable_seq
 * (the local store's). */
uint64_t hearth__cluster_applied_seq(const hearth__cluster_ns *n);
uint64_t hearth__cluster_committed_seq(const hearth__cluster_ns *n);
uint64_t hearth__cluster_durable_seq(const hearth__cluster_ns *n);
/* n's stream and subject. */
const char *hearth__cluster_log_stream(const hearth__cluster_ns *n);
const char *hearth__cluster_log_subject(const hearth__cluster_ns *n);
/* The hooks of each namespace's commits (its embedded engine's replica,
 * set at open by backend.c). */
extern const hearth__db_replica hearth__cluster_replica;

/* ---- append.c ---- */
/* Appends a group commit's bytes after sequence `after` (0: none), as one
 * message or a chain of parts; *seq: the last one's. Worker thread. */
int hearth__cluster_append(hearth__cluster_ns *n, const char *data,
                           size_t len, uint64_t after, uint64_t *seq);
/* The same, overlapped with the local log: start sends the message (a
 * chain is appended whole, waiting for each part) and wait waits for the
 * stream's answer (hearth__cluster_on_ack, the jsCtx's ack handler, sets
 * batch_seq and batch_rc), or for the connection it went on to be lost:
 * its answer would have come back that way, and never will. bytes:
 * hearth__cluster_seal_room bytes of room (sealing.h), then the group;
 * sealed where it lies. Worker thread. */
int hearth__cluster_append_start(hearth__cluster_ns *n, hearth__buf *bytes,
                                 uint64_t after);
int hearth__cluster_append_wait(hearth__cluster_ns *n);
void hearth__cluster_on_ack(jsCtx *js, natsMsg *m, jsPubAck *pa,
                            jsPubAckErr *pae, void *closure);
/* The answers' lock and condition, made at open; freed with the
 * namespace, after any answer still owed to an append given up. */
int hearth__cluster_acks_init(hearth__cluster_ns *n);
void hearth__cluster_acks_free(hearth__cluster_ns *n);
/* Whether m is part i of k of a chain; marking it so. */
bool hearth__cluster_part(natsMsg *m, size_t *i, size_t *k);
natsStatus hearth__cluster_part_mark(natsMsg *m, size_t i, size_t k);
/* The bytes a message may carry, less room for its headers. */
size_t hearth__cluster_room(hearth__cluster *c);

/* ---- tail.c ---- */
/* Makes n's tail empty (at open, first). */
void hearth__cluster_tail_init(hearth__cluster_ns *n);
/* Whether records wait in n's queue (a commit in flight held them). */
bool hearth__cluster_tail_queued(const hearth__cluster_ns *n);
/* Starts n's consumer after applied_seq (at open; one not made is made
 * again by hearth__cluster_tail_watch); ends it (leaving). */
int hearth__cluster_tail_start(hearth__cluster_ns *n, hearth_error_t *err);
void hearth__cluster_tail_stop(hearth__cluster_ns *n);
void hearth__cluster_tail_push(hearth__cluster_ns *n, hearth__cluster_msg *m);
/* Applies the records received, unless this node's own writes wait for
 * the log (they come first: the log refuses them, or they are its next). */
void hearth__cluster_tail_drain(hearth__cluster_ns *n);
/* The log is known to hold seq (a forwarded write's answer; after a
 * refused append, the record after applied_seq): if the consumer does
 * not deliver it within HEARTH__CLUSTER_TAIL_STALL_MS, the tick's
 * hearth__cluster_tail_watch makes it again from applied_seq. A consumer
 * whose server stopped answering is made again by libnats only while
 * JetStream can make one; one that could not be is never heard from. */
void hearth__cluster_tail_expect(hearth__cluster_ns *n, uint64_t seq);
/* The consumer is made again on a worker: ending the old one deletes it
 * and making one is a JetStream request, each waiting out an election,
 * and the loop never waits for JetStream. */
void hearth__cluster_tail_watch(hearth__cluster_ns *n);
/* Consumers being made again (the link's stop waits for them). */
int hearth__cluster_tail_remakes(const hearth__cluster *c);
/* Whether the tree is exactly the log up to applied_seq: no write of this
 * node's own is applied ahead of the log (waiting for its commit, or in
 * the commit that appends it). Records apply only then. */
bool hearth__cluster_tree_exact(const hearth__cluster_ns *n);
/* After a good commit of records (up to committed_seq): forgets those it
 * holds. After a failed one (the tree back at committed_seq): the records
 * applied since go back to the front of the queue, to apply again. */
void hearth__cluster_tail_settled(hearth__cluster_ns *n);
void hearth__cluster_tail_rewind(hearth__cluster_ns *n);
/* This node's own record is in the log, right after what its tree held:
 * a chain half received is cut short for good (its next part, fenced on
 * the part before, can never be stored now), as the record cuts it on
 * every other node, which apply it. The leader never applies its own, so
 * it cuts it here: else a later rewind would go back to the chain's first
 * part, past its own records, which no queue holds. */
void hearth__cluster_tail_own_appended(hearth__cluster_ns *n);
/* Forgets the records kept and a chain in progress: the tree was
 * replaced by a peer's, past them (antientropy.c); the queue stays. */
void hearth__cluster_tail_settle_all(hearth__cluster_ns *n);
/* Applies o as a record of the log (not a write of this node's own),
 * through the embedded engine. */
void hearth__cluster_apply_record(hearth__cluster_ns *n, hearth__db_op *o);
/* The tree replaced by o, a peer's tree at seq (antientropy.c): the
 * records kept are forgotten, o applied as a record, applied_seq = seq. */
void hearth__cluster_tail_replace(hearth__cluster_ns *n, hearth__db_op *o,
                                  uint64_t seq);
/* The record being applied now (its sequence, and when the log took
 * it in Unix ns in *stamp), or 0 when none is (a write of this node's
 * own). */
uint64_t hearth__cluster_tail_applying(const hearth__cluster_ns *n,
                                       int64_t *stamp);
/* Whether a chain is half received (no tree of its is whole). */
bool hearth__cluster_chain_open(const hearth__cluster_ns *n);
/* Drops every record received or kept (the namespace leaves). */
void hearth__cluster_tail_clear(hearth__cluster_ns *n);
/* The local store's place in the log (seq_file), read and written. */
uint64_t hearth__cluster_seq_read(const hearth__cluster_ns *n);
void hearth__cluster_seq_write(hearth__cluster_ns *n);

/* ---- recover.c ---- */
/* At open, before the store: cuts the local log back to where it ended
 * when seq_file was written. */
void hearth__cluster_trust_stream(const hearth__cluster_ns *n,
                                  const char *dir);

/* ---- retain.c ---- */
/* Opens the purge floors' bucket (at start); closes it (with the link). */
natsStatus hearth__cluster_retain_open(hearth__cluster *c);
void hearth__cluster_retain_close(hearth__cluster *c);
/* What n's leader purged, as far as this node knows (status). */
uint64_t hearth__cluster_purged(const hearth__cluster_ns *n);
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
    /* point-in-time recovery (pitr.h): the window (0: off) and the time
     * the round began; set by the round: a checkpoint is due if the log
     * moved past the newest's sequence */
    int64_t retain_ms, now_ms;
    bool cp_due;
    uint64_t cp_newest;
} hearth__retain_job;
/* Loop, as a leases' round begins, for a namespace this node leads: true
 * when its purge is due at this tick (every retain_ticks), j then filled
 * in (its names set by the caller) and retain_cap moved to where the
 * log is now. */
bool hearth__cluster_retain_plan(hearth__cluster_ns *n, uint64_t ticks,
                                 hearth__retain_job *j);
/* Worker thread: purges j's subject as far as every live node allows
 * and the retention window keeps (pitr.h). */
void hearth__cluster_retain(hearth__cluster *c, hearth__retain_job *j);
/* Loop, a leases' round ended: runs the n purges due (their leases just
 * renewed; copied) on a worker of their own, never in the round: a purge
 * waits on JetStream (seconds, while it elects a leader), and a lease
 * renewal must not wait behind it. Then hearth__cluster_retain_done for
 * each namespace still open. Skipped while the last round's purges run,
 * or once a stop was asked. */
void hearth__cluster_retain_start(hearth__cluster *c,
                                  const hearth__retain_job *const *jobs,
                                  size_t n);
/* Whether purges are on their worker (a stop waits for them). */
bool hearth__cluster_retain_running(const hearth__cluster *c);
/* Loop, the round ended: what j purged; a checkpoint it found due is
 * begun (pitr.h). */
void hearth__cluster_retain_done(hearth__cluster_ns *n,
                                 const hearth__retain_job *j);
/* name's purge floor: records below it are gone (0: none; UINT64_MAX:
 * unknown, its value does not open or read). */
uint64_t hearth__cluster_retained(hearth__cluster *c, const char *name);

#endif
