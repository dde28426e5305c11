/* lease.c - who orders each namespace's writes. A lease is a key per
 * namespace in the KV bucket hearth_leases (TTL 4 s) holding the node's
 * name, made with create (only if absent) and renewed every second with
 * revision compare-and-set; a node that fails to renew stops leading at
 * once. The lease only decides who appends: the fence on every append
 * keeps the log right even when two nodes believe they lead. Liveness:
 * each node keeps a key in hearth_nodes (same TTL) whose value tells how
 * far it has applied each of its namespaces (its value, and the reading
 * of every node's: liveness.c; the round writes it).
 *
 * The KV calls of a tick run as one round on a worker thread (a slow NATS
 * server never pauses the loop): the loop hands it each open namespace's
 * name and lease, and applies its findings (won, kept, lost, who holds
 * it) when it ends; at most one round runs at a time. */
#include "cluster/node.h"

#include "tree/json.h"

#include <stdio.h>
#include <string.h>

/* One namespace in a round: what the loop knew, what the round found. */
typedef enum { SEEN_NOTHING, HELD_BY, WON, KEPT, LOST } lease_outcome;
typedef struct lease_job {
    char name[130], stream[32], subject[96];
    bool leader;
    uint64_t rev;
    lease_outcome outcome;
    uint64_t new_rev, log_end;
    char holder[64];
    bool stand_aside; /* diverged: does not try to win the lease */
    bool retain; /* a purge round for this namespace (leader) */
    hearth__retain_job purge;
} lease_job;

typedef struct lease_round {
    uv_work_t work;
    hearth__cluster *c;
    bool renew; /* every second: liveness and leases renewed */
    char *alive; /* the liveness value */
    struct json_t *live; /* renewal rounds: every live node's liveness */
    lease_job *jobs;
    size_t njobs;
    hearth__list releases; /* leases given up, to delete */
} lease_round;

natsStatus hearth__cluster_lease_open(hearth__cluster *c) {
    natsStatus s = hearth__cluster_bucket(c, c->round_js, "hearth_leases",
                                          true, &c->lease.leases);
    if (s == NATS_OK)
        s = hearth__cluster_bucket(c, c->round_js, "hearth_nodes", true,
                                   &c->lease.nodes);
    return s;
}

void hearth__cluster_lease_close(hearth__cluster *c) {
    kvStore_Destroy(c->lease.leases);
    kvStore_Destroy(c->lease.nodes);
}

void hearth__cluster_lease_free(hearth__cluster *c) {
    json_decref(c->lease.live);
}

bool hearth__cluster_lease_running(const hearth__cluster *c) {
    return c->lease.round_running;
}

bool hearth__cluster_leads(const hearth__cluster_ns *n) {
    return n->lead.leader;
}

bool hearth__cluster_lead_settled(const hearth__cluster_ns *n) {
    return n->lead.leader &&
           hearth__cluster_applied_seq(n) >= n->lead.lead_from;
}

const char *hearth__cluster_leader_name(const hearth__cluster_ns *n) {
    return n->lead.leader_name;
}

json_t *hearth__cluster_live(hearth__cluster *c) {
    return c->lease.live ? json_incref(c->lease.live) : json_object();
}

/* Deletes the leases given up, if still as they were (any thread): a
 * delete appended on the condition that the key's last revision is the
 * one given up, judged by the bucket's leader (a read first may come from
 * a replica behind it, as a KV read may, and miss the lease, left to
 * expire: a successor would wait 4 s more). */
static void release_all(hearth__cluster *c, hearth__list *releases) {
    for (hearth__list *n; (n = hearth__list_pop_front(releases));) {
        hearth__lease_release *r =
            HEARTH__LIST_ITEM(n, hearth__lease_release, link);
        char subject[160];
        snprintf(subject, sizeof subject, "$KV.hearth_leases.%s", r->name);
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.ExpectLastSubjectSeq = r->rev;
        natsMsg *m = NULL;
        if (natsMsg_Create(&m, subject, NULL, NULL, 0) == NATS_OK &&
            natsMsgHeader_Set(m, "KV-Operation", "DEL") == NATS_OK)
            js_PublishMsg(NULL, c->round_js, m, &po, NULL);
        natsMsg_Destroy(m);
        hearth__free(r);
    }
}

void hearth__cluster_releases_flush(hearth__cluster *c) {
    release_all(c, &c->lease.releases);
}

void hearth__cluster_step_down(hearth__cluster_ns *n) {
    if (!n->lead.leader)
        return;
    n->lead.leader = false;
    hearth__cluster_serve_stop(n);
    /* The lease goes with the next round, if still ours, for a quicker
     * successor (else it expires). */
    hearth__lease_release *r = hearth__calloc(1, sizeof *r);
    if (r) {
        snprintf(r->name, sizeof r->name, "%s", n->name);
        r->rev = n->lead.lease_rev;
        hearth__list_push_front(&n->c->lease.releases, &r->link);
    }
    n->lead.leader_name[0] = '\0';
}

/* The subject's last sequence in the log (0: none): where a new leader's
 * tree must be before it orders anything. */
static uint64_t log_end(hearth__cluster *c, const lease_job *j) {
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    uint64_t seq = 0;
    if (js_GetLastMsg(&m, c->round_js, j->stream, j->subject, NULL, &jerr) ==
        NATS_OK)
        seq = natsMsg_GetSequence(m);
    natsMsg_Destroy(m);
    return seq;
}

/* Worker thread: whoever holds a lease, from its value (sealed for its
 * key: one a NATS user wrote without the secret names nobody). */
static void holder_of(hearth__cluster *c, const lease_job *j, kvEntry *e,
                      char *holder, size_t size) {
    hearth__buf name;
    hearth__buf_init(&name);
    holder[0] = '\0';
    if (!hearth__cluster_open_value(c, "hearth_leases", j->name,
                                    kvEntry_Value(e),
                                    (size_t)kvEntry_ValueLen(e), &name))
        snprintf(holder, size, "%.*s", (int)name.len, name.data);
    hearth__buf_free(&name);
}

/* Worker thread: one namespace's lease. Its value is this node's name,
 * sealed for the key. */
static void lease_job_run(hearth__cluster *c, lease_job *j, bool renew) {
    if (j->leader && !renew)
        return;
    hearth__buf me;
    hearth__buf_init(&me);
    if (hearth__cluster_seal_value(c, "hearth_leases", j->name, c->node,
                                   strlen(c->node), &me)) {
        hearth__buf_free(&me);
        j->outcome = j->leader ? LOST : SEEN_NOTHING;
        return;
    }
    if (j->leader) {
        bool kept = kvStore_Update(&j->new_rev, c->lease.leases, j->name,
                                   me.data, (int)me.len, j->rev) == NATS_OK;
        j->outcome = kept ? KEPT : LOST;
        hearth__buf_free(&me);
        return;
    }
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, c->lease.leases, j->name);
    if (s == NATS_OK) {
        j->outcome = HELD_BY;
        holder_of(c, j, e, j->holder, sizeof j->holder);
    } else if (s == NATS_NOT_FOUND && !j->stand_aside &&
               kvStore_Create(&j->new_rev, c->lease.leases, j->name, me.data,
                              (int)me.len) == NATS_OK) {
        j->outcome = WON;
        j->log_end = log_end(c, j);
    }
    kvEntry_Destroy(e);
    hearth__buf_free(&me);
}

static void round_work(uv_work_t *w) {
    lease_round *r = w->data;
    hearth__cluster *c = r->c;
    if (r->renew && r->alive) {
        hearth__buf alive;
        hearth__buf_init(&alive);
        uint64_t rev;
        if (!hearth__cluster_seal_value(c, "hearth_nodes", c->node, r->alive,
                                        strlen(r->alive), &alive))
            kvStore_Put(&rev, c->lease.nodes, c->node, alive.data,
                        (int)alive.len);
        hearth__buf_free(&alive);
    }
    release_all(c, &r->releases);
    if (r->renew)
        r->live = hearth__cluster_live_nodes(c);
    for (size_t i = 0; i < r->njobs; i++)
        lease_job_run(c, &r->jobs[i], r->renew);
}

static void lead(hearth__cluster_ns *n, const lease_job *j) {
    hearth__cluster *c = n->c;
    if (hearth__cluster_serve_start(n))
        return; /* the lease expires; someone else leads */
    n->lead.leader = true;
    n->lead.lease_rev = j->new_rev;
    n->lead.lead_from = j->log_end;
    snprintf(n->lead.leader_name, sizeof n->lead.leader_name, "%s", c->node);
    /* It orders nothing until its tree holds the log's end: records its
     * consumer owes it (one on a server that died may never deliver
     * them, as may this node's own last append, given up when its
     * connection was lost) are watched for like any known to be there. */
    hearth__cluster_tail_expect(n, j->log_end);
    hearth__cluster_tail_drain(n);
}

/* A renewal in flight as its namespace stepped down (or closed, at a
 * stop): the release queued then names the revision before it and would
 * miss the lease, left to expire (a successor waits 4 s more); it names
 * the renewed one. */
static void release_renewed(hearth__cluster *c, const lease_job *j) {
    HEARTH__LIST_EACH_ITEM(r, &c->lease.releases, hearth__lease_release, link)
        if (strcmp(r->name, j->name) == 0 && r->rev == j->rev)
            r->rev = j->new_rev;
}

/* Loop: what the round found, for the namespaces still open. */
static void round_done(uv_work_t *w, int status) {
    (void)status;
    lease_round *r = w->data;
    hearth__cluster *c = r->c;
    c->lease.round_running = false;
    const hearth__retain_job **due =
        r->njobs ? hearth__calloc(r->njobs, sizeof *due) : NULL;
    size_t ndue = 0;
    for (size_t i = 0; i < r->njobs; i++) {
        lease_job *j = &r->jobs[i];
        hearth__cluster_ns *n = hearth__cluster_find(c, j->name);
        if (j->outcome == KEPT && !(n && n->lead.leader))
            release_renewed(c, j); /* stepped down or closed meanwhile */
        if (!n)
            continue; /* closed meanwhile: a lease won expires */
        if (j->outcome == WON && !n->lead.leader &&
            !hearth__cluster_diverged(n))
            lead(n, j);
        else if (j->outcome == KEPT && n->lead.leader) {
            n->lead.lease_rev = j->new_rev;
            if (j->retain && due) /* a leader's, its lease just renewed */
                due[ndue++] = &j->purge;
        } else if (j->outcome == LOST && n->lead.leader)
            hearth__cluster_step_down(n); /* someone else may lead */
        else if (j->outcome == HELD_BY && !n->lead.leader)
            snprintf(n->lead.leader_name, sizeof n->lead.leader_name, "%s",
                     j->holder);
    }
    hearth__cluster_retain_start(c, due, ndue); /* copies them */
    hearth__free(due);
    if (r->live) { /* the operator's view, as of this round */
        json_decref(c->lease.live);
        c->lease.live = r->live;
        hearth__cluster_checks_compare(c, c->lease.live);
    }
    free(r->alive);
    hearth__free(r->jobs);
    hearth__free(r);
    hearth__cluster_round_ended(c);
}

/* A leader's purge every retain_ticks (renewal rounds only): as far as
 * the log reached at the previous one, at most. */
static void plan_purge(hearth__cluster_ns *n, lease_job *j, bool renew,
                       uint64_t ticks) {
    if (!n->lead.leader || !renew)
        return;
    j->purge = (hearth__retain_job){.name = j->name, .stream = j->stream,
                                    .subject = j->subject};
    j->retain = hearth__cluster_retain_plan(n, ticks, &j->purge);
}

static void start_round(hearth__cluster *c, bool renew, uint64_t ticks) {
    size_t count = 0;
    HEARTH__LIST_EACH_ITEM(n, &c->spaces, hearth__cluster_ns, link)
        count++;
    lease_round *r = hearth__calloc(1, sizeof *r);
    lease_job *jobs = count ? hearth__calloc(count, sizeof *jobs) : NULL;
    if (!r || (count && !jobs)) {
        hearth__free(r);
        hearth__free(jobs);
        return; /* the next tick tries again */
    }
    size_t i = 0;
    HEARTH__LIST_EACH_ITEM(n, &c->spaces, hearth__cluster_ns, link) {
        snprintf(jobs[i].name, sizeof jobs[i].name, "%s", n->name);
        snprintf(jobs[i].stream, sizeof jobs[i].stream, "%s",
                 hearth__cluster_log_stream(n));
        snprintf(jobs[i].subject, sizeof jobs[i].subject, "%s",
                 hearth__cluster_log_subject(n));
        jobs[i].leader = n->lead.leader;
        jobs[i].rev = n->lead.lease_rev;
        /* never leads a wrong tree */
        jobs[i].stand_aside = hearth__cluster_diverged(n);
        plan_purge(n, &jobs[i], renew, ticks);
        i++;
    }
    r->c = c;
    r->renew = renew;
    r->alive = renew ? hearth__cluster_liveness(c) : NULL;
    r->jobs = jobs;
    r->njobs = count;
    hearth__list_splice_back(&r->releases, &c->lease.releases);
    r->work.data = r;
    c->lease.round_running = true;
    if (uv_queue_work(c->loop, &r->work, round_work, round_done)) {
        round_work(&r->work); /* no worker: here */
        round_done(&r->work, 0);
    }
}

void hearth__cluster_lease_tick(hearth__cluster *c, uint64_t ticks) {
    bool second = (ticks - 1) % 2 == 0; /* the first tick renews */
    if (!c->lease.round_running && !hearth__cluster_stop_asked(c))
        start_round(c, second, ticks);
}
