/* sealing.h - how the cluster uses its seal (cluster/seal.h): everything
 * a node puts into NATS is sealed for a purpose and bound to where it
 * goes (its context, as additional data); everything it takes out is
 * opened for the purpose and context it is found in, or dropped, counted
 * (hearth_cluster_rejected_total{kind} in /.metrics) and logged once per
 * kind. A node without a seal (--cluster-insecure) passes every message
 * through as it is, byte for byte.
 *
 * Purposes and contexts (each field of a context ends with a NUL):
 *   "log"        a log message: subject, the fence (the subject's
 *                sequence before it, decimal), its part ("i/k" or "")
 *   "fwd"        a forwarded write's part: subject, reply subject, part
 *   "reply"      the leader's answer: the reply subject
 *   "snap"       a snapshot request: subject, reply subject
 *   "snap.part"  its answer's parts: reply subject, the request's nonce,
 *                part, sequence, answering node
 *   "kv"         a KV value: bucket, key
 * Any thread. */
#ifndef HEARTH_CLUSTER_SEALING_H
#define HEARTH_CLUSTER_SEALING_H

#include "cluster/internal.h"
#include "cluster/seal.h"

/* Why something taken from NATS was dropped, by kind (the metric's
 * label). */
typedef enum {
    HEARTH__REJECT_LOG,
    HEARTH__REJECT_FWD,
    HEARTH__REJECT_REPLY,
    HEARTH__REJECT_SNAP,
    HEARTH__REJECT_KV,
    HEARTH__REJECT_TRIG,
} hearth__reject_kind;
_Static_assert(HEARTH__REJECT_TRIG + 1 == HEARTH__CLUSTER_REJECT_KINDS,
               "internal.h counts every kind");

/* sealing.c's and replay.c's state (written by them alone). */
typedef struct hearth__cluster_sealing {
    /* made from the cluster secret at start, freed with the link; NULL
     * when the node runs --cluster-insecure (cluster/seal.h) */
    struct hearth__seal *seal;
    /* what was taken from NATS and dropped, by kind, and which kinds'
     * first was logged */
    _Atomic uint64_t rejected[HEARTH__CLUSTER_REJECT_KINDS];
    atomic_uint rejected_logged;
    struct hearth__replay *replay; /* forwarded writes served (replay.c) */
} hearth__cluster_sealing;

/* The node's seal, from the cluster secret's file (at start; an error
 * names the file); freed (with the link). */
int hearth__cluster_sealing_load(hearth__cluster *c, const char *file,
                                 hearth_error_t *err);
void hearth__cluster_sealing_free(hearth__cluster *c);

/* A context: fields, each followed by a NUL. A field past the room
 * (only what arrives from NATS can be that long) makes it `over`: it
 * seals nothing and opens nothing. */
typedef struct hearth__aad {
    char text[512];
    size_t len;
    bool over;
} hearth__aad;
void hearth__aad_init(hearth__aad *a);
void hearth__aad_str(hearth__aad *a, const char *field);
void hearth__aad_bytes(hearth__aad *a, const void *field, size_t len);
void hearth__aad_u64(hearth__aad *a, uint64_t v);
/* A part marker: "i/k", or "" for a whole message (k 0). */
void hearth__aad_part(hearth__aad *a, size_t i, size_t k);

/* Whether this node seals (it has the cluster secret). */
bool hearth__cluster_sealed(const hearth__cluster *c);

/* Appends plain sealed for purpose and ctx to out; without a seal, plain
 * itself. HEARTH_EINVAL (ctx over), HEARTH_ENOMEM, HEARTH_EIO. */
int hearth__cluster_seal(hearth__cluster *c, const char *purpose,
                         const hearth__aad *ctx, const void *plain,
                         size_t len, hearth__buf *out);
/* The same in msg's own buffer (hearth__seal_close_in_place: room of
 * HEARTH__SEAL_HEADER before the plaintext and HEARTH__SEAL_TAG after
 * it); without a seal, nothing to do. */
int hearth__cluster_seal_in_place(hearth__cluster *c, const char *purpose,
                                  const hearth__aad *ctx, void *msg,
                                  size_t len);
/* The room a message's buffer keeps before its plaintext for sealing in
 * place: HEARTH__SEAL_HEADER, or 0 without a seal. */
size_t hearth__cluster_seal_room(const hearth__cluster *c);

/* Appends what data opens to for purpose and ctx to out (without a seal,
 * data itself). HEARTH_EDENIED when it does not open: counted as kind,
 * logged once. HEARTH_ENOMEM, HEARTH_EIO. */
int hearth__cluster_unseal(hearth__cluster *c, hearth__reject_kind kind,
                         const char *purpose, const hearth__aad *ctx,
                         const void *data, size_t len, hearth__buf *out);
/* The same where msg lies: *plain and *plain_len say where its plaintext
 * is (without a seal: msg itself). */
int hearth__cluster_unseal_in_place(hearth__cluster *c, hearth__reject_kind kind,
                                  const char *purpose, const hearth__aad *ctx,
                                  void *msg, size_t len, const char **plain,
                                  size_t *plain_len);

/* A KV value: text sealed for the bucket and key (a value cannot be moved
 * to another key), appended to out; without a seal, text itself. The
 * open: appended to out, or HEARTH_EDENIED (counted as kind "kv", logged
 * once), HEARTH_ENOMEM, HEARTH_EIO. Any thread. */
int hearth__cluster_seal_value(hearth__cluster *c, const char *bucket,
                               const char *key, const char *text, size_t len,
                               hearth__buf *out);
int hearth__cluster_open_value(hearth__cluster *c, const char *bucket,
                               const char *key, const void *data, size_t len,
                               hearth__buf *out);

/* Counts a message of kind dropped and logs the first of each kind (and
 * reason): one that does not open, or one that opens but was replayed
 * (sealed for another time or place: a log message's fence, a forwarded
 * write already served or too old, an older rules document). */
void hearth__cluster_rejected(hearth__cluster *c, hearth__reject_kind kind,
                              bool replayed);
uint64_t hearth__cluster_rejected_count(hearth__cluster *c,
                                        hearth__reject_kind kind);
/* hearth_cluster_rejected_total's lines of /.metrics. */
void hearth__cluster_rejected_metrics(hearth__cluster *c, hearth__buf *out);

/* ---- replay.c: forwarded writes a leader has served (loop thread) ---- */
/* How far a request's sealing time (the sender's clock) may be from the
 * leader's, either way: above a forward's bound (15 s), with room for the
 * nodes' clocks to disagree. */
#define HEARTH__CLUSTER_FRESH_MS 60000
/* 0 when the request named by reply (its sender's inbox and number),
 * sealed at sealed_at, is fresh and not served before (it is noted now);
 * HEARTH_EDENIED when it was, or is too old, or not such a name;
 * HEARTH_ENOMEM. */
int hearth__cluster_replay_check(hearth__cluster *c, const char *reply,
                                 uint64_t sealed_at);
/* Forgets senders not heard from in twice the bound (each tick); all of
 * them (with the link). */
void hearth__cluster_replay_expire(hearth__cluster *c);
void hearth__cluster_replay_free(hearth__cluster *c);

#endif
