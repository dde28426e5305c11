/* rest_operator.c - the operator's endpoints, all the admin's: GET
 * /.metrics (Prometheus text), GET /.profile (the operations stream), GET
 * /.backup and GET /.log (rest_backup.c) and GET /.inspect/coverage.json and
 * /.inspect/rules.txt (rest_coverage.c); and the
 * metrics port, which answers /.metrics to anyone who can reach it. */
#include "server/rest_internal.h"

#include "server/auth_keys.h"
#include "server/profile.h"
#include "server/usage.h"

#include <stdio.h>
#include <string.h>

#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"

static void gauge(hearth__buf *out, const char *name, const char *help) {
    hearth__buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

void hearth__metrics_render(hearth__server *srv, hearth__buf *out) {
    uint64_t in, sent, writes;
    size_t open, streams = hearth__sse_count(srv), sessions, listens;
    hearth__http_traffic(srv->http, &in, &sent, &writes, &open);
    hearth__realtime_count(srv, &sessions, &listens);
    gauge(out, "hearth_connections", "Open connections, by kind.");
    hearth__buf_printf(out,
                       "hearth_connections{kind=\"all\"} %zu\n"
                       "hearth_connections{kind=\"sse\"} %zu\n"
                       "hearth_connections{kind=\"websocket\"} %zu\n",
                       open, streams, sessions);
    gauge(out, "hearth_listens", "Active listens, by door.");
    hearth__buf_printf(out,
                       "hearth_listens{door=\"sse\"} %zu\n"
                       "hearth_listens{door=\"realtime\"} %zu\n",
                       streams, listens);
    gauge(out, "hearth_namespaces_open", "Namespaces open now.");
    hearth__buf_printf(out, "hearth_namespaces_open %zu\n", srv->nnamespaces);
    hearth__buf_printf(out,
                       "# HELP hearth_bytes_received_total Bytes read from "
                       "clients' sockets.\n"
                       "# TYPE hearth_bytes_received_total counter\n"
                       "hearth_bytes_received_total %llu\n"
                       "# HELP hearth_bytes_sent_total Bytes written to "
                       "clients' sockets.\n"
                       "# TYPE hearth_bytes_sent_total counter\n"
                       "hearth_bytes_sent_total %llu\n"
                       "# HELP hearth_socket_writes_total Writes begun to "
                       "clients' sockets (a fan-out's frames to one "
                       "connection in one loop turn go in one).\n"
                       "# TYPE hearth_socket_writes_total counter\n"
                       "hearth_socket_writes_total %llu\n"
                       "# HELP hearth_socket_writes_helper_total Of those, "
                       "the writes a second thread made (half of a "
                       "fan-out to many connections).\n"
                       "# TYPE hearth_socket_writes_helper_total counter\n"
                       "hearth_socket_writes_helper_total %llu\n",
                       (unsigned long long)in, (unsigned long long)sent,
                       (unsigned long long)writes,
                       (unsigned long long)hearth__http_helper_writes(srv->http));
    hearth__buf_printf(out,
                       "# HELP hearth_tls_handshakes_refused_total "
                       "Connections closed unanswered: their address had "
                       "started too many TLS handshakes.\n"
                       "# TYPE hearth_tls_handshakes_refused_total counter\n"
                       "hearth_tls_handshakes_refused_total %llu\n",
                       (unsigned long long)hearth__http_handshakes_refused(
                           srv->http));
    hearth__metrics_write_counters(&srv->metrics, out);
    hearth__usage_write_metrics(srv->usage, out);
    if (srv->keeper->ops->metrics)
        srv->keeper->ops->metrics(srv->keeper, out);
    hearth__auth_keys_metrics(srv->auth_keys, out);
    hearth__server_triggers_metrics(srv, out);
    hearth__metrics_write_histogram(out, "hearth_request_seconds",
                                    "Time from a REST request's arrival to "
                                    "its answer.",
                                    &srv->metrics.request_seconds);
    hearth__metrics_write_histogram(out, "hearth_log_fsync_seconds",
                                    "Time of each log fsync (a commit made "
                                    "durable).",
                                    &hearth__hist_log_fsync);
    hearth__metrics_write_histogram(out, "hearth_snapshot_seconds",
                                    "Time to write each snapshot.",
                                    &hearth__hist_snapshot);
}

static void answer_metrics(hearth__server *srv, hearth__http_conn *conn) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__metrics_render(srv, &b);
    if (b.failed)
        hearth__http_respond(conn, 503, NULL, NULL, "", 0);
    else
        hearth__http_respond(conn, 200, METRICS_TYPE, NULL, b.data, b.len);
    hearth__buf_free(&b);
}

void hearth__metrics_handle(hearth__http_conn *conn,
                            const hearth__http_request *req, void *srv) {
    const char *t = req->target;
    if (req->method == HTTP_GET &&
        (strcmp(t, "/.metrics") == 0 || strcmp(t, "/metrics") == 0))
        answer_metrics(srv, conn);
    else
        hearth__rest_reply_error(conn, 404, "Not found: only GET /.metrics here");
}

bool hearth__rest_operator(rest *r, const char *ns_name) {
    static const char *const paths[] = {"/.metrics", "/.profile", "/.backup",
                                        "/.inspect/coverage.json",
                                        "/.inspect/rules.txt",
                                        "/.inspect/denials.json", "/.log"};
    size_t which = 0;
    while (which < HEARTH__ARRAY_SIZE(paths) && strcmp(r->path, paths[which]))
        which++;
    if (which == HEARTH__ARRAY_SIZE(paths))
        return false;
    hearth__http_note *note = hearth__http_note_of(r->conn);
    snprintf(note->path, sizeof note->path, "%s", r->path);
    char why[256];
    const char *token = hearth__rest_param_get(r, "auth");
    if (!hearth__principal_of(r->srv, r->req, token, NULL, &r->who, why,
                              sizeof why) ||
        !r->who.admin)
        hearth__rest_reply_error(r->conn, 401,
                                 "Permission denied: the admin's only");
    else if (which == 5) /* GET, or PUT to turn tracing on or off */
        hearth__rest_denials(r, ns_name);
    else if (r->method != HTTP_GET)
        hearth__rest_reply_error(r->conn, 405, "Method not allowed");
    else if (which == 0)
        answer_metrics(r->srv, r->conn);
    else if (which == 1)
        hearth__profile_start(r->srv, r->conn);
    else if (which == 2)
        hearth__rest_backup(r, ns_name);
    else if (which == 6)
        hearth__rest_log(r, ns_name);
    else
        hearth__rest_coverage(r, ns_name, which == 4);
    return true;
}
