/* status.c - what the operator sees: /.metrics' cluster lines, and
 * GET /.cluster/status.json: this node, the live nodes (their
 * liveness keys), who leads each namespace open here, how far the log of
 * each has reached here and how far behind it each other node that tails
 * it was at its last liveness report (each second), and whether this
 * node holds it unavailable while rebuilding it. The live nodes are
 * read by the leases' round on its worker (each second), never on the
 * loop: the answer shows them as of the last round. */
#include "cluster/node.h"

#include <jansson.h>
#include <string.h>

static json_t *namespace_status(hearth__cluster_ns *n, json_t *live) {
    json_t *lag = json_object();
    const char *node;
    json_t *v;
    json_object_foreach(live, node, v) {
        json_t *seq = json_object_get(json_object_get(v, "ns"), n->name);
        if (strcmp(node, n->c->node) == 0) /* this node: as it is now */
            json_object_set_new(lag, node, json_integer(0));
        else if (json_is_integer(seq)) {
            json_int_t behind = (json_int_t)hearth__cluster_applied_seq(n) -
                                json_integer_value(seq);
            json_object_set_new(lag, node, json_integer(behind > 0 ? behind : 0));
        }
    }
    return json_pack(
        "{s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:o, s:i}", "stream",
        hearth__cluster_log_stream(n), "role",
        hearth__cluster_leads(n) ? "leader" : "follower", "diverged",
        hearth__cluster_diverged(n), "seq",
        (json_int_t)hearth__cluster_applied_seq(n), "durable_seq",
        (json_int_t)hearth__cluster_durable_seq(n), "snapshot_seq",
        (json_int_t)hearth__cluster_snapshot_seq(n), "purged_through",
        (json_int_t)hearth__cluster_purged(n), "lag", lag, "pending",
        (int)hearth__cluster_forward_waiting(n) +
            (int)hearth__cluster_holding(n));
}

char *hearth__cluster_status(hearth__cluster *c) {
    json_t *live = hearth__cluster_live(c);
    json_t *nodes = json_array(), *leaders = json_object(),
           *spaces = json_object();
    const char *node;
    json_t *v;
    json_object_foreach(live, node, v) json_array_append_new(nodes, json_string(node));
    HEARTH__LIST_EACH_ITEM(n, &c->spaces, hearth__cluster_ns, link) {
        if (hearth__cluster_leader_name(n)[0])
            json_object_set_new(leaders, n->name,
                                json_string(hearth__cluster_leader_name(n)));
        json_object_set_new(spaces, n->name, namespace_status(n, live));
    }
    /* Which NATS server this node talks to now (credentials cut out). */
    char connected[256] = "", url[256];
    if (natsConnection_GetConnectedUrl(c->nc, connected, sizeof connected) !=
        NATS_OK)
        connected[0] = '\0';
    hearth__cluster_mask_urls(connected, url, sizeof url);
    json_t *doc = json_pack("{s:s, s:s, s:o, s:o, s:o, s:i, s:I}", "node",
                            c->node, "nats", url, "nodes", nodes, "leaders",
                            leaders, "namespaces", spaces, "replicas",
                            c->replicas, "divergences",
                            (json_int_t)hearth__cluster_divergences(c));
    json_decref(live);
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(doc);
    return text;
}

void hearth__cluster_metrics(hearth__cluster *c, hearth__buf *out) {
    hearth__buf_printf(out,
                       "# HELP hearth_cluster_divergences_total Namespaces "
                       "this node found its tree differing from its peers' "
                       "and rebuilt.\n"
                       "# TYPE hearth_cluster_divergences_total counter\n"
                       "hearth_cluster_divergences_total %llu\n"
                       "# HELP hearth_cluster_diverged Whether this node "
                       "holds the namespace unavailable while it rebuilds "
                       "it.\n"
                       "# TYPE hearth_cluster_diverged gauge\n",
                       (unsigned long long)hearth__cluster_divergences(c));
    HEARTH__LIST_EACH_ITEM(n, &c->spaces, hearth__cluster_ns, link)
        hearth__buf_printf(out, "hearth_cluster_diverged{namespace=\"%s\"} %d\n",
                           n->name, hearth__cluster_diverged(n) ? 1 : 0);
    hearth__cluster_rejected_metrics(c, out); /* cluster/sealing.c */
}
