/* usage.c - the counters of namespaces' use (see usage.h). */
#include "server/usage.h"

#include <inttypes.h>
#include <string.h>

static hearth__usage_row *row_create(const char *name) {
    hearth__usage_row *row = hearth__calloc(1, sizeof *row);
    if (row && !(row->name = hearth__strndup(name, strlen(name)))) {
        hearth__free(row);
        row = NULL;
    }
    return row;
}

static void row_free(hearth__usage_row *row) {
    if (row)
        hearth__free(row->name);
    hearth__free(row);
}

hearth__usage_row *hearth__usage_row_of(hearth__server *srv, const char *name) {
    if (!srv->usage && !(srv->usage = hearth__calloc(1, sizeof *srv->usage)))
        return NULL;
    hearth__usage *u = srv->usage;
    hearth__usage_row *found = hearth__map_get_str(&u->by_name, name);
    if (found)
        return found;
    if (u->n == HEARTH__USAGE_MAX_ROWS)
        return u->other ? u->other
                        : (u->other = row_create(HEARTH__USAGE_OTHER));
    hearth__usage_row **rows = hearth__grow(u->rows, &u->cap, u->n + 1,
                                            sizeof *rows);
    if (!rows)
        return NULL;
    u->rows = rows;
    hearth__usage_row *row = row_create(name);
    if (row && hearth__map_put_str(&u->by_name, row->name, row)) {
        row_free(row);
        row = NULL;
    }
    if (row)
        u->rows[u->n++] = row;
    return row;
}

/* ns's row, found by name once and kept in ns (rows live as long as the
 * server, longer than a namespace open): not a search per request. */
static hearth__usage_row *row_for(hearth__server *srv, hearth__namespace *ns) {
    if (!ns->usage)
        ns->usage = hearth__usage_row_of(srv, ns->name);
    return ns->usage;
}

static void count(hearth__usage_row *row, hearth__usage_kind kind) {
    if (row && kind == HEARTH__USAGE_READ)
        row->reads++;
    else if (row && kind == HEARTH__USAGE_LISTEN)
        row->listens++;
    else if (row && kind == HEARTH__USAGE_WRITE)
        row->writes++;
}

void hearth__usage_count_request(hearth__server *srv, hearth__namespace *ns,
                                 hearth__http_conn *conn,
                                 const hearth__http_request *req,
                                 hearth__usage_kind kind) {
    hearth__usage_row *row = row_for(srv, ns);
    hearth__http_set_meter(conn, row ? &row->bytes : NULL);
    count(row, kind);
    if (row)
        row->bytes.in += strlen(req->target) + req->body_len;
}

void hearth__usage_count(hearth__server *srv, hearth__namespace *ns,
                         hearth__usage_kind kind) {
    count(row_for(srv, ns), kind);
}

/* ---- as /.metrics shows them ---- */

static void add_row(hearth__usage_row *sum, const hearth__usage_row *row) {
    if (!row)
        return;
    sum->reads += row->reads;
    sum->listens += row->listens;
    sum->writes += row->writes;
    sum->bytes.in += row->bytes.in;
    sum->bytes.out += row->bytes.out;
}

/* One series per counter that is not zero (a kind never asked is not a
 * series, as with the other counters). */
static void write_requests(hearth__buf *out, const hearth__usage_row *row) {
    const struct { const char *kind; uint64_t n; } kinds[] = {
        {"read", row->reads}, {"listen", row->listens}, {"write", row->writes}};
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(kinds); i++)
        if (kinds[i].n)
            hearth__buf_printf(out, "hearth_namespace_requests_total{namespace="
                               "\"%s\",kind=\"%s\"} %" PRIu64 "\n",
                               row->name, kinds[i].kind, kinds[i].n);
}

static void write_bytes(hearth__buf *out, const hearth__usage_row *row) {
    if (row->bytes.in || row->bytes.out)
        hearth__buf_printf(out,
                           "hearth_namespace_bytes_total{namespace=\"%s\","
                           "direction=\"in\"} %" PRIu64 "\n"
                           "hearth_namespace_bytes_total{namespace=\"%s\","
                           "direction=\"out\"} %" PRIu64 "\n",
                           row->name, row->bytes.in, row->name, row->bytes.out);
}

void hearth__usage_write_metrics(const hearth__usage *u, hearth__buf *out) {
    size_t shown = u ? u->n : 0;
    if (shown > HEARTH__USAGE_METRICS_ROWS)
        shown = HEARTH__USAGE_METRICS_ROWS;
    hearth__usage_row other = {.name = HEARTH__USAGE_OTHER};
    for (size_t i = shown; u && i < u->n; i++)
        add_row(&other, u->rows[i]);
    if (u)
        add_row(&other, u->other);
    void (*const series[])(hearth__buf *, const hearth__usage_row *) = {
        write_requests, write_bytes};
    const char *help[] = {
        "# HELP hearth_namespace_requests_total Requests per namespace, by "
        "kind (read, listen, write).\n"
        "# TYPE hearth_namespace_requests_total counter\n",
        "# HELP hearth_namespace_bytes_total Bytes in and out of the "
        "connections that asked for a namespace (requests, answers, "
        "pushes), by direction.\n"
        "# TYPE hearth_namespace_bytes_total counter\n"};
    for (size_t k = 0; k < HEARTH__ARRAY_SIZE(series); k++) {
        hearth__buf_adds(out, help[k]);
        for (size_t i = 0; i < shown; i++)
            series[k](out, u->rows[i]);
        series[k](out, &other);
    }
}

void hearth__usage_free(hearth__usage *u) {
    if (!u)
        return;
    for (size_t i = 0; i < u->n; i++)
        row_free(u->rows[i]);
    row_free(u->other);
    hearth__free(u->rows);
    hearth__map_free(&u->by_name);
    hearth__free(u);
}
