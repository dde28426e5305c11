/* ondisconnect.c - onDisconnect writes that outlive their node. A session's
 * writes are kept in the KV bucket hearth_ondisconnect under
 * "<namespace>.<node>.<run>.<session>" (run: this process's start, also in
 * the node's liveness value, so a node restarted under the same name does
 * not keep its dead run's sessions alive). The session's own node runs
 * them when the session ends and forgets them; the namespace's leader,
 * every 2 s, runs those whose run is no longer the live one of their node
 * (its liveness key expired or changed), judged as they say, then forgets
 * them. */
#include "cluster/internal.h"

#include "tree/json.h"

#include <stdio.h>
#include <string.h>

void hearth__cluster_ondisconnect_keep(hearth_db_t *db, uint64_t session,
                                       const char *writes) {
    if (db->backend != &hearth__db_cluster)
        return;
    hearth__cluster_ns *n = hearth__cluster_ns_of(db);
    char key[256];
    snprintf(key, sizeof key, "%s.%s.%s.%llx", n->name, n->c->node, n->c->run,
             (unsigned long long)session);
    uint64_t rev;
    if (writes && strcmp(writes, "[]") != 0)
        kvStore_PutString(&rev, n->c->orphans, key, writes);
    else
        kvStore_Delete(n->c->orphans, key);
}

/* Whether run is the live run of node. */
static bool run_alive(hearth__cluster *c, const char *node, const char *run) {
    if (strcmp(node, c->node) == 0)
        return strcmp(run, c->run) == 0;
    kvEntry *e = NULL;
    bool alive = false;
    if (kvStore_Get(&e, c->nodes, node) == NATS_OK) {
        json_t *v = json_loads(kvEntry_ValueString(e), 0, NULL);
        const char *live = json_string_value(json_object_get(v, "run"));
        alive = live && strcmp(live, run) == 0;
        json_decref(v);
    }
    kvEntry_Destroy(e);
    return alive;
}

/* Runs the writes kept under key, then forgets them. */
static void run_orphan(hearth__cluster_ns *n, const char *key) {
    kvEntry *e = NULL;
    if (kvStore_Get(&e, n->c->orphans, key) != NATS_OK)
        return;
    json_t *writes = NULL;
    hearth__json_load(kvEntry_ValueString(e), strlen(kvEntry_ValueString(e)),
                      &writes, NULL);
    kvEntry_Destroy(e);
    for (size_t i = 0; i < json_array_size(writes); i++) {
        hearth_error_t err;
        if (hearth__cluster_submit(n, json_array_get(writes, i), NULL, NULL,
                                   NULL, &err))
            fprintf(stderr, "hearth: cluster: %s: an onDisconnect write of a "
                    "dead node's session: %s\n", n->name, err.message);
    }
    json_decref(writes);
    kvStore_Delete(n->c->orphans, key);
}

void hearth__cluster_orphans_run(hearth__cluster *c) {
    bool leads = false;
    for (hearth__cluster_ns *n = c->spaces; n && !leads; n = n->next)
        leads = n->leader;
    kvKeysList keys = {0};
    if (!leads || kvStore_Keys(&keys, c->orphans, NULL) != NATS_OK)
        return; /* nothing to sweep, or no key */
    for (int i = 0; i < keys.Count; i++) {
        char ns[130], node[64], run[24];
        if (sscanf(keys.Keys[i], "%129[^.].%63[^.].%23[^.].", ns, node, run) != 3)
            continue;
        hearth__cluster_ns *n = hearth__cluster_find(c, ns);
        if (n && n->leader && !run_alive(c, node, run))
            run_orphan(n, keys.Keys[i]);
    }
    kvKeysList_Destroy(&keys);
}
