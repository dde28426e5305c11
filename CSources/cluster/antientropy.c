/* antientropy.c - the safety net under the log. A node's tree must be
 * exactly the log up to the sequence it reports (tail.c keeps it so); if
 * a bug, a damaged disk or a hand-edited file ever makes it otherwise,
 * nothing else would notice: every later record applies on top of the
 * hole. So each node keeps the root hash of its tree at a few recent
 * sequences (checkpoints), publishes them in its liveness value, and
 * compares its own with its peers' at the same sequences. A node most of
 * whose peers saw another tree there stops serving the namespace (503,
 * never wrong data), says so in the log, in the status and in /.metrics,
 * and rebuilds it by itself from a peer's snapshot and the log.
 *
 * Where checkpoints come from: every second, the tree of the last good
 * commit (durable_root), exact at committed_seq on the leader and on a
 * follower alike; and, when a peer published a sequence this node has not
 * reached, its tree as the tail passes that sequence (followers lag, so
 * they would rarely commit at the leader's very sequences). */
#include "cluster/node.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* ---- checkpoints ---- */

static const hearth__checkpoint *find(const hearth__cluster_ns *n,
                                      uint64_t seq) {
    for (unsigned i = 0; i < n->ae.check_count; i++)
        if (n->ae.checks[i].seq == seq)
            return &n->ae.checks[i];
    return NULL;
}

/* Keeps root's hash at seq, replacing the oldest checkpoint. */
static void keep(hearth__cluster_ns *n, uint64_t seq, const hearth_node_t *root) {
    if (!seq || find(n, seq))
        return;
    hearth__checkpoint *slot = &n->ae.checks[n->ae.check_next];
    if (hearth_node_hash(root, slot->hash))
        return; /* out of memory: no checkpoint this time */
    slot->seq = seq;
    n->ae.check_next = (n->ae.check_next + 1) % HEARTH__CLUSTER_CHECKS;
    if (n->ae.check_count < HEARTH__CLUSTER_CHECKS)
        n->ae.check_count++;
}

void hearth__cluster_checks_note(hearth__cluster_ns *n) {
    hearth__embedded *e = n->db->impl;
    if (!n->ae.rebuilding && e->durable_root)
        keep(n, hearth__cluster_committed_seq(n), e->durable_root);
}

void hearth__cluster_checks_applied(hearth__cluster_ns *n) {
    for (unsigned i = 0; i < n->ae.nwanted; i++) {
        if (n->ae.wanted[i] > hearth__cluster_applied_seq(n))
            continue;
        if (n->ae.wanted[i] == hearth__cluster_applied_seq(n)) {
            hearth__embedded *e = n->db->impl;
            keep(n, hearth__cluster_applied_seq(n), e->root);
        }
        /* reached or passed */
        n->ae.wanted[i--] = n->ae.wanted[--n->ae.nwanted];
    }
}

static void want(hearth__cluster_ns *n, uint64_t seq) {
    for (unsigned i = 0; i < n->ae.nwanted; i++)
        if (n->ae.wanted[i] == seq)
            return;
    if (n->ae.nwanted < HEARTH__CLUSTER_CHECKS)
        n->ae.wanted[n->ae.nwanted++] = seq;
}

json_t *hearth__cluster_checks_json(const hearth__cluster_ns *n) {
    json_t *list = json_array();
    for (unsigned i = 0; list && i < n->ae.check_count; i++)
        json_array_append_new(list, json_pack("[Is]",
                                              (json_int_t)n->ae.checks[i].seq,
                                              n->ae.checks[i].hash));
    return list;
}

/* ---- comparing ---- */

/* How a peer's checkpoints (a JSON list of [seq, hash]) compare with
 * this node's: 1 the same tree at some sequence and never another, -1
 * another tree at some sequence, 0 no sequence in common yet (those ahead
 * of this node are noted, to be hashed as the tail passes them). */
static int compare(hearth__cluster_ns *n, json_t *theirs) {
    int verdict = 0;
    size_t i;
    json_t *c;
    json_array_foreach(theirs, i, c) {
        json_int_t seq = json_integer_value(json_array_get(c, 0));
        const char *hash = json_string_value(json_array_get(c, 1));
        if (seq <= 0 || !hash)
            continue;
        const hearth__checkpoint *mine = find(n, (uint64_t)seq);
        if (mine && strcmp(mine->hash, hash) != 0)
            return -1;
        if (mine)
            verdict = 1;
        else if ((uint64_t)seq > hearth__cluster_applied_seq(n))
            want(n, (uint64_t)seq);
    }
    return verdict;
}

static void diverge(hearth__cluster_ns *n, int agree, int disagree);

void hearth__cluster_checks_compare(hearth__cluster *c, json_t *live) {
    HEARTH__LIST_EACH_ITEM(n, &c->spaces, hearth__cluster_ns, link) {
        if (n->ae.diverged)
            continue;
        int peers = 0, agree = 0, disagree = 0;
        bool leader_disagrees = false;
        const char *node;
        json_t *v;
        json_object_foreach(live, node, v) {
            if (strcmp(node, c->node) == 0)
                continue;
            json_t *theirs = json_object_get(json_object_get(v, "sums"), n->name);
            if (!json_is_array(theirs))
                continue; /* a node that does not serve it */
            peers++;
            int verdict = compare(n, theirs);
            agree += verdict > 0;
            disagree += verdict < 0;
            if (verdict < 0 &&
                strcmp(node, hearth__cluster_leader_name(n)) == 0)
                leader_disagrees = true;
        }
        /* A verdict needs two peers to compare with where there are two:
         * one disagreeing peer alone may be the odd one. With a single
         * peer, the follower yields to the leader. */
        if (!disagree || agree + disagree < (peers < 2 ? peers : 2))
            continue;
        if (peers == 1 ? leader_disagrees && !hearth__cluster_leads(n)
                       : disagree > agree)
            diverge(n, agree, disagree);
    }
}

/* ---- rebuilding ---- */

typedef struct rebuild_job {
    uv_work_t work;
    hearth__cluster *c;
    char name[130];
    hearth_node_t *root; /* the peer's tree, or NULL: none answered */
    uint64_t seq;        /* its place in the log */
} rebuild_job;

static void rebuild_work(uv_work_t *w) {
    rebuild_job *j = w->data;
    if (hearth__cluster_snapshot_fetch(j->c, j->name, &j->root, &j->seq))
        j->root = NULL;
}

/* Replaces the tree with root, the log up to seq (at or past applied_seq:
 * the tail goes on as it is, its records up to seq passed over), as one
 * record of the log would: events raised for what differs, the local
 * store committing it with the records that follow. The tail is never
 * made again: messages of the old consumer still on their way would come
 * after the new one's, out of order. */
static int replace_tree(hearth__cluster_ns *n, hearth_node_t *root,
                        uint64_t seq, hearth_error_t *err) {
    hearth__db_op *o;
    if (hearth__db_write_op_create(1, NULL, NULL, NULL, &o))
        return hearth__error_code(err, HEARTH_ENOMEM);
    hearth__db_write_part *w = &o->parts[0];
    int rc = hearth__db_parse_write_path("/", 0, &w->text, &w->path, err);
    if (rc) {
        hearth__db_drop_op(o, rc);
        return rc;
    }
    w->value = hearth_node_incref(root);
    hearth__cluster_tail_replace(n, o, seq);
    n->ae.check_count = n->ae.check_next = n->ae.nwanted = 0;
    n->db->backend->settle(n->db, true);
    return 0;
}

static void rebuild_done(uv_work_t *w, int status) {
    (void)status;
    rebuild_job *j = w->data;
    hearth__cluster_ns *n = hearth__cluster_find(j->c, j->name);
    if (n && n->ae.rebuilding && !j->root)
        hearth__log(HEARTH_LOG_WARNING, "cluster: %s: no peer answered with a "
                "snapshot; asking again", n->name);
    else if (n && n->ae.rebuilding && j->seq < hearth__cluster_applied_seq(n))
        hearth__log(HEARTH_LOG_WARNING, "cluster: %s: a peer's snapshot at %llu is "
                "behind this node's tail (%llu); asking again", n->name,
                (unsigned long long)j->seq,
                (unsigned long long)hearth__cluster_applied_seq(n));
    else if (n && n->ae.rebuilding) {
        hearth_error_t err = {0};
        if (replace_tree(n, j->root, j->seq, &err))
            hearth__log(HEARTH_LOG_ERROR, "cluster: %s: rebuild failed (%s); "
                    "trying again", n->name, err.message);
        else {
            hearth__log(HEARTH_LOG_WARNING, "cluster: %s: rebuilt from a peer's "
                    "snapshot at sequence %llu; serving it again",
                    n->name,
                    (unsigned long long)hearth__cluster_applied_seq(n));
            n->ae.diverged = false;
            hearth__cluster_snapshot_serve(n);
        }
    }
    if (n)
        n->ae.rebuilding = false;
    hearth__cluster *c = j->c;
    hearth_node_decref(j->root);
    hearth__free(j);
    c->ae.rebuilds--;
    hearth__cluster_round_ended(c);
}

/* Starts a rebuild of diverged n unless one runs, once nothing of its own
 * is in flight (the tick calls it again until then). */
void hearth__cluster_rebuild_maybe(hearth__cluster_ns *n) {
    if (!n->ae.diverged || n->ae.rebuilding ||
        hearth__cluster_stop_asked(n->c) || !hearth__cluster_tree_exact(n))
        return;
    rebuild_job *j = hearth__calloc(1, sizeof *j);
    if (!j)
        return; /* the next tick tries again */
    j->c = n->c;
    snprintf(j->name, sizeof j->name, "%s", n->name);
    j->work.data = j;
    n->ae.rebuilding = true;
    n->c->ae.rebuilds++;
    if (uv_queue_work(n->c->loop, &j->work, rebuild_work, rebuild_done)) {
        rebuild_work(&j->work);
        rebuild_done(&j->work, 0);
    }
}

static void diverge(hearth__cluster_ns *n, int agree, int disagree) {
    n->ae.diverged = true;
    n->c->ae.divergences++;
    hearth__log(HEARTH_LOG_WARNING, "cluster: %s: this node's tree differs from "
            "its peers' at the same log sequence (%d of %d disagree); not "
            "serving it until it is rebuilt from a peer's snapshot and the "
            "log", n->name, disagree, agree + disagree);
    hearth__cluster_step_down(n);
    hearth__cluster_snapshot_stop(n); /* its tree must not seed a peer */
    hearth__cluster_rebuild_maybe(n);
}

/* ---- what the server sees ---- */

bool hearth__cluster_db_unavailable(hearth_db_t *db) {
    return hearth__cluster_ns_of(db)->ae.diverged;
}

bool hearth__cluster_diverged(const hearth__cluster_ns *n) {
    return n->ae.diverged;
}

bool hearth__cluster_checks_wanted(const hearth__cluster_ns *n) {
    return n->ae.nwanted != 0;
}

int hearth__cluster_rebuilds(const hearth__cluster *c) {
    return c->ae.rebuilds;
}

uint64_t hearth__cluster_divergences(const hearth__cluster *c) {
    return c->ae.divergences;
}
