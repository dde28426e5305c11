/* log.h - a namespace's log: the leader's append of each group commit
 * (cluster/append.c, from the commit's hooks in cluster/commit.c), every
 * node's tail applying the log's records (cluster/tail.c), the local
 * store's place in the log and the cut at open (cluster/recover.c), and
 * the log's retention (cluster/retain.c). The invariant all of it keeps:
 * the tree is exactly the log up to applied_seq. Internal to cluster/. */
#ifndef HEARTH_CLUSTER_LOG_H
#define HEARTH_CLUSTER_LOG_H

#include "cluster/internal.h"

/* ---- commit.c ---- */
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

/* ---- recover.c ---- */
/* At open, before the store: cuts the local log back to where it ended
 * when seq_file was written. */
void hearth__cluster_trust_stream(const hearth__cluster_ns *n,
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
/* Loop, as a leases' round begins, for a namespace this node leads: true
 * when its purge is due at this tick (every retain_ticks), j then filled
 * in (its names set by the caller) and retain_cap moved to where the
 * log is now. */
bool hearth__cluster_retain_plan(hearth__cluster_ns *n, uint64_t ticks,
                                 hearth__retain_job *j);
/* Worker thread: purges j's subject as far as every live node allows. */
void hearth__cluster_retain(hearth__cluster *c, hearth__retain_job *j);
/* Loop, the round ended: what j purged. */
void hearth__cluster_retain_done(hearth__cluster_ns *n,
                                 const hearth__retain_job *j);
/* name's purge floor: records below it are gone (0: none; UINT64_MAX:
 * unknown, its value does not open). */
uint64_t hearth__cluster_retained(hearth__cluster *c, const char *name);

#endif
