/* link.h - this node's link to NATS (cluster/link.c, cluster/natsopts.c):
 * the connection and its JetStream contexts, the streams, the one way
 * from NATS's threads to the loop, and the stop that waits for every
 * user of the link. Internal to cluster/. */
#ifndef HEARTH_CLUSTER_LINK_H
#define HEARTH_CLUSTER_LINK_H

#include "cluster/internal.h"

/* link.c's state: the way from NATS's threads to the loop, and the stop.
 * (The connection and its JetStream contexts, made at start and read by
 * every job, are in hearth__cluster itself: cluster/node.h.) */
typedef struct hearth__cluster_link {
    bool made_stream[HEARTH__CLUSTER_PARTITIONS];
    /* NATS threads -> loop */
    uv_mutex_t lock;
    hearth__list queue; /* hearth__cluster_msg, under lock */
    bool stopping; /* under lock: NATS threads drop what they get */
    uv_async_t wake;
    int closing; /* handles still to close at stop */
    /* Namespaces whose databases are not yet freed: a commit of theirs
     * may still be appending on a worker thread, so the link outlives
     * them (a stop asked meanwhile finishes with the last). */
    int open_spaces;
    bool stop_asked;
    /* what NATS's callback thread reports (the connection lost: what was
     * sent on it and not answered never will be); its own block, freed
     * by the connection's last callback, since that may come after the
     * node is freed. NULL once the connection is closing. */
    struct hearth__link_events *events;
} hearth__cluster_link;

/* ---- link.c ---- */
/* Any thread: wakes the loop to drain what NATS's threads queued and each
 * namespace's tail. */
void hearth__cluster_wake(hearth__cluster *c);
/* Loop: that drain, now. */
void hearth__cluster_take_queued(hearth__cluster *c);
/* How many times the connection to NATS was lost (any thread). */
unsigned hearth__cluster_disconnects(hearth__cluster *c);
/* Whether the node was asked to stop (hearth__cluster_stop). */
bool hearth__cluster_stop_asked(const hearth__cluster *c);
/* Any thread: queues m for the loop (or drops it when stopping). */
void hearth__cluster_post(hearth__cluster *c, hearth__cluster_msg_kind kind,
                          natsMsg *m, uint64_t seq);
/* The same, noting the subscription (sid) that received m. */
void hearth__cluster_post_log(hearth__cluster *c, hearth__cluster_msg_kind kind,
                              natsMsg *m, uint64_t seq, uint64_t sid);
/* The same for a message made whole (the loop owns q from here). */
void hearth__cluster_post_msg(hearth__cluster *c, hearth__cluster_msg *q);
/* A NATS status as a Hearth error (EIO unless it says more). */
int hearth__cluster_error(natsStatus s);
/* A namespace's database is open; freed: the last lets a stop finish. */
void hearth__cluster_space_opened(hearth__cluster *c);
void hearth__cluster_space_freed(hearth__cluster *c);
/* The keys of a KV bucket, deleted ones included (their last message is
 * the delete's: a get finds nothing); freed with _free. */
typedef struct hearth__kv_keys {
    char **keys;
    int count;
} hearth__kv_keys;
/* Bucket's keys into out, on js (any thread but the loop: one JetStream
 * request, bounded by js's wait). */
natsStatus hearth__cluster_kv_keys(jsCtx *js, const char *bucket,
                                   hearth__kv_keys *out);
void hearth__cluster_kv_keys_free(hearth__kv_keys *keys);
/* The names of namespace name's stream and subject (any thread); its
 * partition. */
unsigned hearth__cluster_stream_names(const char *name, char stream[32],
                                      char subject[96]);
/* Makes stream name of subjects (file storage, the cluster's replicas;
 * flags: HEARTH__STREAM_WORK_QUEUE, a message goes once a consumer
 * acknowledges it; HEARTH__STREAM_DIRECT, any replica answers direct
 * gets; 0 or false: neither), or finds it made (by another node, perhaps
 * with other settings: used as it is). Any thread. */
#define HEARTH__STREAM_WORK_QUEUE 1u
#define HEARTH__STREAM_DIRECT 2u
natsStatus hearth__cluster_make_stream(hearth__cluster *c, const char *name,
                                       const char *subjects, unsigned flags);
/* Makes the stream of namespace name if this node has not yet; its
 * stream's and subject's names into stream and subject. */
int hearth__cluster_stream(hearth__cluster *c, const char *name,
                           char stream[32], char subject[96],
                           hearth_error_t *err);
/* Bucket name, made if missing (on c->js: making one waits for
 * JetStream to place it; ttl: HEARTH__CLUSTER_LEASE_MS), opened for calls
 * on js (each job opens its own at start). */
natsStatus hearth__cluster_bucket(hearth__cluster *c, jsCtx *js,
                                  const char *name, bool ttl, kvStore **out);
/* Ends *sub (NULL after). A JetStream consumer it made is deleted while
 * NATS is connected; otherwise the server drops it once nobody listens,
 * and nothing waits for a NATS that cannot answer. */
void hearth__cluster_unsubscribe(hearth__cluster *c, natsSubscription **sub);
/* A worker using the link ended (a leases' round, the KV lane, a tail's
 * consumer made again): a stop waiting for it may finish. */
void hearth__cluster_round_ended(hearth__cluster *c);

/* ---- natsopts.c ---- */
/* The NATS credentials and TLS of o into opts (tls:// URLs and a CA make
 * the connection secure); an error names the file at fault. */
int hearth__cluster_nats_auth(natsOptions *opts,
                              const hearth__cluster_options *o,
                              hearth_error_t *err);

#endif
