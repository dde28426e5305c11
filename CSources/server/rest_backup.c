/* rest_backup.c - GET /.backup (the admin's, `hearth backup --url`): a
 * namespace's data as export JSON, from one root. The root is immutable
 * and held by a reference, so it is written out on libuv's pool while the
 * loop goes on taking writes; the answer is that root, as of one commit,
 * however long it takes to write. With ?at=MS or ?seq=N, the namespace as
 * it was then, rebuilt on the worker from the history its keeper holds
 * (server/keeper.h: the directory's retained snapshots and logs, or a
 * cluster's stream; 404 when not retained). GET /.log (the admin's,
 * `hearth log --url`): the retained changes as JSON lines, the same way. */
#include "server/rest_internal.h"

#include "server/keeper.h"

#include "store/files.h"
#include "tree/json.h"
#include "tree/pool.h"

#include <errno.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

typedef struct backup_job {
    uv_work_t work;
    hearth__http_conn *conn;
    hearth_node_t *root;
    hearth__buf out;
    /* ?at= / ?seq= (point-in-time recovery) and /.log: the namespace's
     * name and directory, its history read on the worker through the
     * keeper. */
    hearth__keeper *keeper;
    char *name, *dir;
    int64_t at_ms;
    uint64_t at_seq;
    /* /.log: the changes at, above or below path, within [since, until] */
    bool listing;
    char *path;
    int64_t since_ms, until_ms;
    int rc;
    hearth_error_t err;
} backup_job;

/* One change as `hearth log` prints it, a JSON line. */
static int list_change(const hearth_change_t *c, void *ctx) {
    hearth__buf *out = ctx;
    if (c->time_ms) {
        time_t s = (time_t)(c->time_ms / 1000);
        struct tm tm;
        gmtime_r(&s, &tm);
        char when[32];
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
        hearth__buf_printf(out, "{\"time\":\"%s.%03dZ\"", when,
                           (int)(c->time_ms % 1000));
    } else {
        hearth__buf_add(out, "{\"time\":null", 12);
    }
    hearth__buf_printf(out, ",\"sequence\":%llu,\"path\":",
                       (unsigned long long)c->sequence);
    hearth__json_write_string(out, c->path, strlen(c->path));
    hearth__buf_add(out, ",\"identity\":", 12);
    if (c->identity)
        hearth__json_write_string(out, c->identity, strlen(c->identity));
    else
        hearth__buf_add(out, "null", 4);
    hearth__buf_printf(out, ",\"bytes\":%zu}\n", c->bytes);
    return out->failed ? HEARTH_ENOMEM : 0;
}

static void write_on_worker(uv_work_t *w) {
    backup_job *j = w->data;
    const hearth__keeper_ops *ops = j->keeper ? j->keeper->ops : NULL;
    if (j->listing) {
        j->rc = ops->changes(j->keeper, j->name, j->dir, j->path, j->since_ms,
                             j->until_ms, list_change, &j->out, &j->err);
        hearth__pool_drain();
        return;
    }
    if (ops) {
        j->rc = ops->state_at(j->keeper, j->name, j->dir, j->at_ms, j->at_seq,
                              &j->root, &j->err);
        /* The replay freed its records' nodes here, on a pool thread that
         * seldom builds trees: back to malloc, not kept waiting. */
        hearth__pool_drain();
        if (j->rc)
            return;
    }
    hearth__node_write_json(&j->out, j->root, HEARTH_JSON_EXPORT);
}

static void answer(uv_work_t *w, int status) {
    backup_job *j = w->data;
    if (!status && j->rc)
        hearth__rest_reply_error(j->conn,
                                 j->rc == HEARTH_ENOTFOUND       ? 404
                                 : j->rc == HEARTH_ENOMEM        ? 503
                                 : j->rc == HEARTH_EDISCONNECTED ? 503
                                                                 : 500,
                                 j->err.message);
    else if (status || j->out.failed)
        hearth__rest_reply_error(j->conn, 503, j->listing
                                                   ? "Log failed: out of memory"
                                                   : "Backup failed: out of memory");
    else if (j->listing)
        hearth__http_respond(j->conn, 200, "application/x-ndjson", NULL,
                             j->out.data ? j->out.data : "", j->out.len);
    else
        hearth__http_respond(j->conn, 200, JSON_TYPE,
                             "Content-Disposition: attachment; "
                             "filename=\"backup.json\"\r\n",
                             j->out.data, j->out.len);
    hearth_node_decref(j->root);
    hearth__buf_free(&j->out);
    hearth__free(j->name);
    hearth__free(j->dir);
    hearth__free(j->path);
    hearth__free(j);
}

/* A whole decimal number in text (0 when absent); false when malformed. */
static bool number_param(const rest *r, const char *name, uint64_t *out) {
    const char *v = hearth__rest_param_get(r, name);
    *out = 0;
    if (!v)
        return true;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (end == v || *end || errno || v[0] == '-' || n > INT64_MAX)
        return false;
    *out = n;
    return true;
}

/* A job reading r's namespace's history (its name and directory copied),
 * or NULL without memory. */
static backup_job *history_job(rest *r) {
    backup_job *j = hearth__calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->keeper = r->srv->keeper;
    j->name = hearth__strndup(r->ns->name, strlen(r->ns->name));
    j->dir = hearth__strndup(r->ns->dir, strlen(r->ns->dir));
    if (!j->name || !j->dir) {
        hearth__free(j->name);
        hearth__free(j->dir);
        hearth__free(j);
        return NULL;
    }
    return j;
}

static void start(rest *r, backup_job *j) {
    j->conn = r->conn;
    hearth__buf_init(&j->out);
    j->work.data = j;
    if (uv_queue_work(&r->srv->loop, &j->work, write_on_worker, answer))
        answer(&j->work, UV_ENOMEM);
}

void hearth__rest_backup(rest *r, const char *ns_name) {
    hearth_error_t err;
    if (hearth__server_namespace(r->srv, ns_name, &r->ns, &err)) {
        hearth__rest_reply_error(r->conn, 400, err.message);
        return;
    }
    uint64_t at, seq;
    if (!number_param(r, "at", &at) || !number_param(r, "seq", &seq)) {
        hearth__rest_reply_error(r->conn, 400, "at must be a time in Unix "
                                 "milliseconds and seq a write sequence "
                                 "(whole numbers)");
        return;
    }
    backup_job *j = at || seq ? history_job(r) : hearth__calloc(1, sizeof *j);
    if (!j) {
        hearth__rest_reply_error(r->conn, 503, "Backup failed: out of memory");
        return;
    }
    j->at_ms = (int64_t)at;
    j->at_seq = seq;
    if (!j->keeper)
        j->root = (hearth_node_t *)hearth_node_incref(hearth__db_root(r->ns->db));
    start(r, j);
}

/* Whether p is a path as the log records them: "/", or "/" and keys
 * joined by "/" (no empty key, no "/" at the end). */
static bool log_path(const char *p) {
    if (!p || p[0] != '/')
        return false;
    return !strstr(p, "//") && (p[1] == '\0' || p[strlen(p) - 1] != '/');
}

void hearth__rest_log(rest *r, const char *ns_name) {
    hearth_error_t err;
    if (hearth__server_namespace(r->srv, ns_name, &r->ns, &err)) {
        hearth__rest_reply_error(r->conn, 400, err.message);
        return;
    }
    uint64_t since, until;
    const char *path = hearth__rest_param_get(r, "path");
    if (!number_param(r, "since", &since) || !number_param(r, "until", &until)) {
        hearth__rest_reply_error(r->conn, 400, "since and until must be times "
                                 "in Unix milliseconds (whole numbers)");
        return;
    }
    if (path && !log_path(path)) {
        hearth__rest_reply_error(r->conn, 400, "path must be absolute, such "
                                 "as /users/ada (no empty key, no / at the "
                                 "end)");
        return;
    }
    backup_job *j = history_job(r);
    if (j && path && !(j->path = hearth__strndup(path, strlen(path)))) {
        hearth__free(j->name);
        hearth__free(j->dir);
        hearth__free(j);
        j = NULL;
    }
    if (!j) {
        hearth__rest_reply_error(r->conn, 503, "Log failed: out of memory");
        return;
    }
    j->listing = true;
    j->since_ms = (int64_t)since;
    j->until_ms = (int64_t)until;
    start(r, j);
}
