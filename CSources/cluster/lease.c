/* lease.c - who orders each namespace's writes. A lease is a key per
 * namespace in the KV bucket hearth_leases (TTL 4 s) holding the node's
 * name, made with create (only if absent) and renewed every second with
 * revision compare-and-set; a node that fails to renew stops leading at
 * once. The lease only decides who appends: the fence on every append
 * keeps the log right even when two nodes believe they lead. Liveness:
 * each node keeps a key in hearth_nodes (same TTL) whose value tells how
 * far it has applied each of its namespaces. */
#include "cluster/internal.h"

#include "tree/json.h"

#include <stdio.h>
#include <string.h>

static void on_forward_msg(natsConnection *nc, natsSubscription *sub,
                           natsMsg *m, void *closure) {
    (void)nc, (void)sub;
    hearth__cluster_post(closure, MSG_FORWARD, m, 0);
}

void hearth__cluster_step_down(hearth__cluster_ns *n) {
    if (!n->leader)
        return;
    n->leader = false;
    if (n->serving) {
        natsSubscription_Unsubscribe(n->serving);
        natsSubscription_Destroy(n->serving);
        n->serving = NULL;
    }
    /* Free the lease now if it is still ours, for a quicker successor. */
    kvEntry *e = NULL;
    if (kvStore_Get(&e, n->c->leases, n->name) == NATS_OK &&
        kvEntry_Revision(e) == n->lease_rev)
        kvStore_Delete(n->c->leases, n->name);
    kvEntry_Destroy(e);
    n->leader_name[0] = '\0';
}

/* The subject's last sequence in the log (0: none): where a new leader's
 * tree must be before it orders anything. */
static uint64_t log_end(hearth__cluster_ns *n) {
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    uint64_t seq = 0;
    if (js_GetLastMsg(&m, n->c->js, n->stream, n->subject, NULL, &jerr) ==
        NATS_OK)
        seq = natsMsg_GetSequence(m);
    natsMsg_Destroy(m);
    return seq;
}

static void lead(hearth__cluster_ns *n, uint64_t rev) {
    hearth__cluster *c = n->c;
    char subj[128];
    snprintf(subj, sizeof subj, "hearth.fwd.%s", n->name);
    if (natsConnection_Subscribe(&n->serving, c->nc, subj, on_forward_msg, c) !=
        NATS_OK)
        return; /* the lease expires; someone else leads */
    n->leader = true;
    n->lease_rev = rev;
    n->lead_from = log_end(n);
    snprintf(n->leader_name, sizeof n->leader_name, "%s", c->node);
    hearth__cluster_tail_drain(n);
}

static void lease_tick(hearth__cluster_ns *n, bool renew) {
    hearth__cluster *c = n->c;
    uint64_t rev = 0;
    if (n->leader) {
        if (renew && kvStore_Update(&rev, c->leases, n->name, c->node,
                                    (int)strlen(c->node), n->lease_rev) != NATS_OK)
            hearth__cluster_step_down(n); /* lost: someone else may lead */
        else if (renew)
            n->lease_rev = rev;
        return;
    }
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, c->leases, n->name);
    if (s == NATS_OK) {
        snprintf(n->leader_name, sizeof n->leader_name, "%s",
                 kvEntry_ValueString(e));
    } else if (s == NATS_NOT_FOUND &&
               kvStore_Create(&rev, c->leases, n->name, c->node,
                              (int)strlen(c->node)) == NATS_OK) {
        lead(n, rev);
    }
    kvEntry_Destroy(e);
}

/* This node's liveness key: {"ns": {"<name>": applied sequence}}. */
static void keep_alive(hearth__cluster *c) {
    json_t *ns = json_object();
    for (hearth__cluster_ns *n = c->spaces; n; n = n->next)
        json_object_set_new(ns, n->name, json_integer((json_int_t)n->applied_seq));
    json_t *doc = json_pack("{soss}", "ns", ns, "run", c->run);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (text) {
        uint64_t rev;
        kvStore_PutString(&rev, c->nodes, c->node, text);
    }
    free(text);
    json_decref(doc);
}

void hearth__cluster_on_tick(uv_timer_t *t) {
    hearth__cluster *c = t->data;
    bool second = c->ticks++ % 2 == 0;
    if (second)
        keep_alive(c);
    for (hearth__cluster_ns *n = c->spaces; n; n = n->next)
        lease_tick(n, second);
    if (c->ticks % 4 == 1)
        hearth__cluster_orphans_run(c);
    hearth__cluster_forward_tick(c);
    for (hearth__cluster_ns *n = c->spaces; n; n = n->next)
        hearth__cluster_tail_drain(n);
}
