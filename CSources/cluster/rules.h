/* rules.h - each namespace's rules, the same on every node
 * (cluster/rules.c; what the server sees is in cluster.h). Internal to
 * cluster/. */
#ifndef HEARTH_CLUSTER_RULES_H
#define HEARTH_CLUSTER_RULES_H

#include "cluster/internal.h"

/* The node's part (rules.c writes it). */
typedef struct hearth__cluster_rules {
    kvStore *rules_kv; /* each namespace's rules */
    natsSubscription *rules_sub;
    struct hearth__rules_copy *rules; /* this node's copy of the bucket */
    hearth__cluster_rules_cb on_rules;
    void *on_rules_ctx;
} hearth__cluster_rules;

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
/* Loop: a change of the bucket, from its stream. */
void hearth__cluster_rules_changed(hearth__cluster *c, natsMsg *m);

#endif
