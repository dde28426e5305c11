/* rules.h - each namespace's rules, the same on every node
 * (cluster/rules.c; what the server sees is in cluster.h). Internal to
 * cluster/. */
#ifndef HEARTH_CLUSTER_RULES_H
#define HEARTH_CLUSTER_RULES_H

#include "cluster/internal.h"

/* A KV bucket of documents, the same on every node (rules.c): a copy
 * of each key's document, kept newest first by version, and the
 * callback told of each change that reaches this node. */
typedef struct hearth__cluster_docs {
    const char *bucket;
    kvStore *kv;
    natsSubscription *sub;
    hearth__list copies; /* of rules.c's copies, newest key first */
    void (*changed)(void *ctx, const char *key);
    void *changed_ctx;
} hearth__cluster_docs;

/* Opens bucket as d (at start); closes it (with the link). Reads it
 * whole (before serving); follows its changes (once the link's wake-up
 * exists; again each tick until it does); stops following; frees the
 * copies. */
natsStatus hearth__cluster_docs_open(hearth__cluster *c,
                                     hearth__cluster_docs *d,
                                     const char *bucket);
void hearth__cluster_docs_close(hearth__cluster_docs *d);
int hearth__cluster_docs_start(hearth__cluster *c, hearth__cluster_docs *d,
                               hearth_error_t *err);
void hearth__cluster_docs_follow_bucket(hearth__cluster *c,
                                        hearth__cluster_docs *d);
void hearth__cluster_docs_stop(hearth__cluster *c,
                               hearth__cluster_docs *d);
void hearth__cluster_docs_free(hearth__cluster_docs *d);
/* Loop: m, from a followed bucket's stream, if it is d's (true). */
bool hearth__cluster_docs_changed(hearth__cluster *c, hearth__cluster_docs *d,
                                  natsMsg *m);
/* key's document (NULL: none, or removed), borrowed until the next
 * change; each key's, with cb. */
const char *hearth__cluster_docs_of(const hearth__cluster_docs *d,
                                    const char *key);
void hearth__cluster_docs_each(const hearth__cluster_docs *d,
                               void (*cb)(void *ctx, const char *key,
                                          const char *text),
                               void *ctx);
/* Sets key's document for every node (NULL: removes it); d's callback
 * runs here once the bucket holds it, then done (as rules_put's). */
void hearth__cluster_docs_put(hearth__cluster *c, hearth__cluster_docs *d,
                              const char *key, const char *text,
                              hearth__cluster_kept_cb done, void *ctx);

/* The node's part (rules.c writes it): bucket hearth_rules, keyed by
 * namespace. */
typedef hearth__cluster_docs hearth__cluster_rules;

/* Opens the rules bucket (at start); closes it (with the link). */
natsStatus hearth__cluster_rules_open(hearth__cluster *c);
void hearth__cluster_rules_close(hearth__cluster *c);
/* Reads the rules bucket whole (at start, before serving); follows its
 * changes (once the link's wake-up exists; again each tick until it
 * does); stops following (at stop); frees this node's copy. */
int hearth__cluster_rules_start(hearth__cluster *c, hearth_error_t *err);
void hearth__cluster_rules_follow_bucket(hearth__cluster *c);
void hearth__cluster_rules_stop(hearth__cluster *c);
void hearth__cluster_rules_free(hearth__cluster *c);
/* Loop: a change of the bucket, from its stream (false: m is another
 * bucket's). */
bool hearth__cluster_rules_changed(hearth__cluster *c, natsMsg *m);

#endif
