/* pitr.h - point-in-time recovery of a cluster's namespaces (README
 * "Point-in-time recovery"). With a retention window (hearth serve
 * --retain), each namespace's leader keeps, in its purge rounds,
 * checkpoints of its tree in stream HEARTH_HIST (subject
 * hearth.hist.<name>; checkpoint.c), and purges the log only below the
 * newest checkpoint older than the window: every instant of the window is
 * a checkpoint plus the records after it. Any node rebuilds a namespace as
 * of a moment, or lists its changes, from there (history.c, on a worker).
 *
 * The checkpoints' index lives beside the purge floor in the namespace's
 * key of KV bucket hearth_retained (sealed like the floor): the floor's
 * line, then one line per checkpoint, oldest first,
 * "cp SEQ TIME_MS FIRST PARTS": the tree exactly the log up to SEQ, noted
 * no earlier than TIME_MS, in PARTS messages of the subject from stream
 * sequence FIRST. A node of an earlier version reads the floor alone.
 * Internal to cluster/. */
#ifndef HEARTH_CLUSTER_PITR_H
#define HEARTH_CLUSTER_PITR_H

#include "cluster/internal.h"

/* The node's part: the window (0: off), whether the checkpoints' stream
 * is made (by the first checkpoint), and the checkpoints being written
 * (a stop waits for them). */
typedef struct hearth__cluster_pitr {
    int64_t retain_ms;
    atomic_bool hist_made;
    unsigned writing;
} hearth__cluster_pitr;

/* A namespace's part: whether its checkpoint is being written. */
typedef struct hearth__cluster_ns_pitr {
    bool writing;
} hearth__cluster_ns_pitr;

#define HEARTH__PITR_STREAM "HEARTH_HIST"
/* At most this many checkpoints are kept per namespace: one every eighth
 * of the window keeps about nine. */
#define HEARTH__PITR_MAX_CHECKPOINTS 32

typedef struct hearth__pitr_checkpoint {
    uint64_t seq;     /* the log up to here */
    int64_t time_ms;  /* noted then or later (leader's clock) */
    uint64_t first;   /* its first part's sequence in HEARTH_HIST */
    uint32_t parts;
} hearth__pitr_checkpoint;

typedef struct hearth__pitr_index {
    uint64_t floor; /* records below it are purged (0: none) */
    hearth__pitr_checkpoint cp[HEARTH__PITR_MAX_CHECKPOINTS];
    size_t n;
} hearth__pitr_index;

/* ---- checkpoint.c ---- */
/* name's index (none kept: empty, floor 0) and its revision in the
 * bucket (*rev, may be NULL; 0: none). HEARTH_EDENIED when the value
 * does not open, HEARTH_EIO when it does not read (err says which),
 * HEARTH_EDISCONNECTED when JetStream does not answer. Any thread. */
int hearth__pitr_index_read(hearth__cluster *c, const char *name,
                            hearth__pitr_index *idx, uint64_t *rev,
                            hearth_error_t *err);
/* Writes idx as name's if the value is still at revision rev (0: there is
 * none): the purge round and a checkpoint each read, change and write it
 * (worker threads). 0, or HEARTH_EIO (another wrote first, or no answer). */
int hearth__pitr_index_put(hearth__cluster *c, const char *name,
                           const hearth__pitr_index *idx, uint64_t rev);
/* The subject of name's checkpoints (hearth.hist.<name>). */
void hearth__pitr_subject(const char *name, char out[160]);
/* The context a checkpoint's part is sealed for (history.c opens it
 * with the same): its subject, sequence, time and part. */
struct hearth__aad;
void hearth__pitr_part_context(struct hearth__aad *a, const char *subject,
                               const hearth__pitr_checkpoint *cp, size_t i);

struct hearth__retain_job;
/* A leader's purge round with a window (worker thread): notes in j
 * whether a checkpoint is due (none yet, or the newest is an eighth of
 * the window old; written once the round ends if the log moved past
 * it), lowers *floor to keep every record after the newest checkpoint
 * older than the window (none: every record), and drops the checkpoints
 * before that one from idx (*hist_below: purge HEARTH_HIST's subject
 * below it; 0: nothing). Whether idx changed. */
bool hearth__pitr_round(struct hearth__retain_job *j, hearth__pitr_index *idx,
                        uint64_t *floor, uint64_t *hist_below);
/* Loop, the round ended: writes n's tree as a checkpoint, on a worker of
 * its own (never the leases' round, which a big tree would hold past the
 * leases' TTL), if the tree is past sequence newest and no checkpoint of
 * n is being written. */
void hearth__pitr_checkpoint_start(hearth__cluster_ns *n, uint64_t newest);
/* Whether a checkpoint is being written (a stop waits for it). */
bool hearth__cluster_pitr_busy(const hearth__cluster *c);

#endif
