/* liveness.c - which nodes are alive, and how far: each node keeps a key
 * in hearth_nodes (TTL 4 s, renewed by each renewal round of the leases'
 * round, cluster/lease.c) whose value, sealed for its key, tells how far
 * it has applied each of its namespaces, its checkpoints (antientropy.c)
 * and its run (ondisconnect.c). The round reads every live node's value
 * on its worker; the loop keeps the last (status.c shows it, anti-entropy
 * compares with it), and retention reads its own (retain.c). */
#include "cluster/node.h"

#include <jansson.h>
#include <string.h>

/* This node's liveness value: {"ns": {"<name>": applied sequence},
 * "sums": {"<name>": its checkpoints (antientropy.c)}, "run": its run}. */
char *hearth__cluster_liveness(hearth__cluster *c) {
    json_t *ns = json_object(), *sums = json_object();
    HEARTH__LIST_EACH_ITEM(n, &c->spaces, hearth__cluster_ns, link) {
        json_object_set_new(
            ns, n->name,
            json_integer((json_int_t)hearth__cluster_applied_seq(n)));
        hearth__cluster_checks_note(n);
        /* a diverged tree is nobody's reference */
        if (!hearth__cluster_diverged(n))
            json_object_set_new(sums, n->name, hearth__cluster_checks_json(n));
    }
    json_t *doc = json_pack("{sososs}", "ns", ns, "sums", sums, "run", c->run);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    return text;
}

json_t *hearth__cluster_liveness_of(hearth__cluster *c, const char *node,
                                    bool *forged) {
    kvEntry *e = NULL;
    json_t *v = NULL;
    hearth__buf text;
    hearth__buf_init(&text);
    bool found = kvStore_Get(&e, c->lease.nodes, node) == NATS_OK;
    if (found &&
        !hearth__cluster_open_value(c, "hearth_nodes", node, kvEntry_Value(e),
                                    (size_t)kvEntry_ValueLen(e), &text))
        v = json_loadb(text.data, text.len, 0, NULL);
    if (forged)
        *forged = found && !v;
    hearth__buf_free(&text);
    kvEntry_Destroy(e);
    return json_is_object(v) ? v : (json_decref(v), NULL);
}

/* Every live node's liveness value, {"<node>": {"ns": {...}}}: keys whose
 * value does not open (not a node's: written without the secret) are no
 * live node. */
json_t *hearth__cluster_live_nodes(hearth__cluster *c) {
    json_t *all = json_object();
    hearth__kv_keys keys;
    if (hearth__cluster_kv_keys(c->round_js, "hearth_nodes", &keys) != NATS_OK)
        return all;
    for (int i = 0; i < keys.count; i++) {
        json_t *v = hearth__cluster_liveness_of(c, keys.keys[i], NULL);
        if (v)
            json_object_set_new(all, keys.keys[i], v);
    }
    hearth__cluster_kv_keys_free(&keys);
    return all;
}

void hearth__cluster_liveness_delete(hearth__cluster *c) {
    kvStore_Delete(c->lease.nodes, c->node);
}
