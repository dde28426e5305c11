/* ondisconnect.c - onDisconnect writes that outlive their node. A session's
 * writes are kept in the KV bucket hearth_ondisconnect under
 * "<namespace>.<node>.<run>.<session>" (run: this process's start, also in
 * the node's liveness value, so a node restarted under the same name does
 * not keep its dead run's sessions alive). The session's own node runs
 * them when the session ends and forgets them; the namespace's leader,
 * every 2 s, runs those whose run is no longer the live one of their node
 * (its liveness key expired or changed), judged as they say, then forgets
 * them. The keeps, the forgets and the sweep's reads run on the lane's
 * worker (lane.c), never on the loop. Each list is sealed for its key
 * (cluster/sealing.h): one put there by an outsider, or moved from
 * another session's key, does not open and is deleted unrun. */
#include "cluster/node.h"

#include "tree/json.h"

#include <stdio.h>
#include <string.h>

#define BUCKET "hearth_ondisconnect"

/* An onDisconnect list of a dead run, found by a sweep. */
typedef struct orphan {
    hearth__list link; /* in the sweep's found */
    char key[256];
    char ns[130];
    char *writes;
} orphan;

/* A live node's run, as a sweep read it ("" when it has none). */
typedef struct node_run {
    char node[64], run[24];
} node_run;

/* The sweep's state: due (asked by the tick), and while on the worker
 * the namespaces led when it began and what it found. */
struct hearth__sweep {
    bool due;
    char (*leads)[130];
    size_t nleads;
    hearth__list found; /* orphans, the last found first */
};

/* ---- the worker's side ---- */

/* The live run of node (read once per sweep); "" when none. */
static const char *live_run(hearth__cluster *c, node_run **runs, size_t *n,
                            const char *node) {
    if (strcmp(node, c->node) == 0)
        return c->run;
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*runs)[i].node, node) == 0)
            return (*runs)[i].run;
    node_run *grown = hearth__realloc(*runs, (*n + 1) * sizeof **runs);
    if (!grown)
        return NULL; /* unknown: not judged dead */
    *runs = grown;
    node_run *r = &grown[(*n)++];
    snprintf(r->node, sizeof r->node, "%s", node);
    r->run[0] = '\0';
    /* Opened (status.c). A value that does not open was written without
     * the secret over the node's own: unknown, not judged dead (the node
     * writes its own again within a second; running its sessions'
     * onDisconnect writes early is an outsider's to cause). */
    bool forged = false;
    json_t *v = hearth__cluster_liveness_of(c, node, &forged);
    if (forged) {
        (*n)--;
        return NULL;
    }
    const char *run = json_string_value(json_object_get(v, "run"));
    snprintf(r->run, sizeof r->run, "%s", run ? run : "");
    json_decref(v);
    return r->run;
}

static bool leads(const struct hearth__sweep *l, const char *ns) {
    for (size_t i = 0; i < l->nleads; i++)
        if (strcmp(l->leads[i], ns) == 0)
            return true;
    return false;
}

/* Finds the onDisconnect lists of dead runs in the namespaces led. */
void hearth__cluster_sweep_work(hearth__cluster *c) {
    struct hearth__sweep *l = c->odc.sweep;
    hearth__kv_keys keys;
    if (hearth__cluster_kv_keys(c->js, BUCKET, &keys) != NATS_OK)
        return; /* no answer: the next sweep */
    node_run *runs = NULL;
    size_t nruns = 0;
    for (int i = 0; i < keys.count; i++) {
        char ns[130], node[64], run[24];
        if (sscanf(keys.keys[i], "%129[^.].%63[^.].%23[^.].", ns, node, run) != 3 ||
            !leads(l, ns))
            continue;
        const char *live = live_run(c, &runs, &nruns, node);
        kvEntry *e = NULL;
        if (!live || strcmp(live, run) == 0 ||
            kvStore_Get(&e, c->odc.orphans, keys.keys[i]) != NATS_OK)
            continue;
        hearth__buf value;
        hearth__buf_init(&value);
        int rc = hearth__cluster_open_value(c, BUCKET, keys.keys[i],
                                            kvEntry_Value(e),
                                            (size_t)kvEntry_ValueLen(e), &value);
        if (rc == HEARTH_EDENIED) /* counted; never run */
            kvStore_Delete(c->odc.orphans, keys.keys[i]);
        orphan *o = rc ? NULL : hearth__calloc(1, sizeof *o);
        if (o && (o->writes = hearth__buf_detach(&value, NULL))) {
            snprintf(o->key, sizeof o->key, "%s", keys.keys[i]);
            snprintf(o->ns, sizeof o->ns, "%s", ns);
            hearth__list_push_front(&l->found, &o->link);
        } else {
            hearth__free(o);
        }
        hearth__buf_free(&value);
        kvEntry_Destroy(e);
    }
    hearth__free(runs);
    hearth__cluster_kv_keys_free(&keys);
}

/* ---- the loop's side ---- */

/* Runs a dead run's writes here (this node leads ns), then forgets them. */
static void run_orphan(hearth__cluster *c, const orphan *o) {
    hearth__cluster_ns *n = hearth__cluster_find(c, o->ns);
    if (!n || !hearth__cluster_leads(n))
        return; /* led elsewhere now: its leader's sweep runs them */
    json_t *writes = NULL;
    hearth__json_load(o->writes, strlen(o->writes), &writes, NULL);
    for (size_t i = 0; i < json_array_size(writes); i++) {
        hearth_error_t err;
        if (hearth__cluster_submit(n, json_array_get(writes, i), NULL, NULL,
                                   NULL, &err))
            hearth__log(HEARTH_LOG_WARNING, "cluster: %s: an onDisconnect write of a "
                    "dead node's session: %s", n->name, err.message);
    }
    json_decref(writes);
    if (!hearth__cluster_lane_put(c, c->odc.orphans, o->key, NULL, 0, NULL,
                                  NULL))
        hearth__log(HEARTH_LOG_WARNING, "cluster: out of memory forgetting %s",
                o->key);
}

void hearth__cluster_sweep_end(hearth__cluster *c) {
    struct hearth__sweep *l = c->odc.sweep;
    hearth__list found = {0};
    hearth__list_splice_back(&found, &l->found);
    hearth__free(l->leads);
    l->leads = NULL;
    for (hearth__list *n; (n = hearth__list_pop_front(&found));) {
        orphan *o = HEARTH__LIST_ITEM(n, orphan, link);
        if (!hearth__cluster_stop_asked(c))
            run_orphan(c, o);
        hearth__free(o->writes);
        hearth__free(o);
    }
}

/* The namespaces this node leads now (a sweep looks at theirs only). */
static size_t led(hearth__cluster *c, char (**names)[130]) {
    size_t n = 0;
    HEARTH__LIST_EACH_ITEM(s, &c->spaces, hearth__cluster_ns, link)
        n += hearth__cluster_leads(s);
    *names = n ? hearth__calloc(n, sizeof **names) : NULL;
    if (!*names)
        return 0;
    size_t i = 0;
    HEARTH__LIST_EACH_ITEM(s, &c->spaces, hearth__cluster_ns, link)
        if (hearth__cluster_leads(s))
            snprintf((*names)[i++], sizeof **names, "%s", s->name);
    return i;
}

bool hearth__cluster_sweep_begin(hearth__cluster *c) {
    struct hearth__sweep *l = c->odc.sweep;
    bool sweeping = l->due && !hearth__cluster_stop_asked(c) &&
                    (l->nleads = led(c, &l->leads)) > 0;
    l->due = false;
    return sweeping;
}

/* ---- what the rest of the node asks ---- */

natsStatus hearth__cluster_orphans_open(hearth__cluster *c) {
    return hearth__cluster_bucket(c, c->js, BUCKET, false, &c->odc.orphans);
}

void hearth__cluster_orphans_close(hearth__cluster *c) {
    kvStore_Destroy(c->odc.orphans);
}

int hearth__cluster_sweep_create(hearth__cluster *c) {
    c->odc.sweep = hearth__calloc(1, sizeof *c->odc.sweep);
    return c->odc.sweep ? 0 : HEARTH_ENOMEM;
}

void hearth__cluster_sweep_free(hearth__cluster *c) {
    hearth__free(c->odc.sweep);
    c->odc.sweep = NULL;
}

bool hearth__cluster_keeps_ondisconnect(const hearth_db_t *db) {
    return db->backend == &hearth__db_cluster;
}

void hearth__cluster_ondisconnect_keep(hearth_db_t *db, uint64_t session,
                                       const char *writes,
                                       hearth__cluster_kept_cb done,
                                       void *ctx) {
    hearth__cluster_ns *n = hearth__cluster_ns_of(db);
    char key[256];
    snprintf(key, sizeof key, "%s.%s.%s.%llx", n->name, n->c->node, n->c->run,
             (unsigned long long)session);
    if (writes && strcmp(writes, "[]") == 0)
        writes = NULL; /* nothing to keep: forgotten */
    hearth__buf sealed;
    hearth__buf_init(&sealed);
    bool queued =
        (!writes || !hearth__cluster_seal_value(n->c, BUCKET, key, writes,
                                                strlen(writes), &sealed)) &&
        hearth__cluster_lane_put(n->c, n->c->odc.orphans, key,
                                 writes ? sealed.data : NULL, sealed.len,
                                 done, ctx);
    hearth__buf_free(&sealed);
    if (!queued && done)
        done(ctx, HEARTH_ENOMEM);
}

void hearth__cluster_orphans_tick(hearth__cluster *c, uint64_t ticks) {
    if (ticks % 4 != 1)
        return; /* every 2 s */
    c->odc.sweep->due = true;
    hearth__cluster_lane_kick(c);
}
