/* rest_backup.c - GET /.backup (the admin's, `hearth backup --url`): a
 * namespace's data as export JSON, from one root. The root is immutable
 * and held by a reference, so it is written out on libuv's pool while the
 * loop goes on taking writes; the answer is that root, as of one commit,
 * however long it takes to write. With ?at=MS or ?seq=N, the namespace as
 * it was then, rebuilt on the worker from the snapshots and logs its
 * directory retains (store/history.c; 404 when not retained). */
#include "server/rest_internal.h"

#include "store/files.h"
#include "tree/json.h"
#include "tree/pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct backup_job {
    uv_work_t work;
    hearth__http_conn *conn;
    hearth_node_t *root;
    hearth__buf out;
    /* ?at= / ?seq= (point-in-time recovery): the namespace's directory,
     * rebuilt on the worker from its retained history. */
    char *dir;
    int64_t at_ms;
    uint64_t at_seq;
    int rc;
    hearth_error_t err;
} backup_job;

static void write_on_worker(uv_work_t *w) {
    backup_job *j = w->data;
    if (j->dir) {
        j->rc = hearth__store_state_at(j->dir, j->at_ms, j->at_seq, &j->root,
                                       &j->err);
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
                                 j->rc == HEARTH_ENOTFOUND ? 404
                                 : j->rc == HEARTH_ENOMEM  ? 503
                                                           : 500,
                                 j->err.message);
    else if (status || j->out.failed)
        hearth__rest_reply_error(j->conn, 503, "Backup failed: out of memory");
    else
        hearth__http_respond(j->conn, 200, JSON_TYPE,
                             "Content-Disposition: attachment; "
                             "filename=\"backup.json\"\r\n",
                             j->out.data, j->out.len);
    hearth_node_decref(j->root);
    hearth__buf_free(&j->out);
    hearth__free(j->dir);
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
    backup_job *j = hearth__calloc(1, sizeof *j);
    if (j && (at || seq) &&
        !(j->dir = hearth__strndup(r->ns->dir, strlen(r->ns->dir)))) {
        hearth__free(j);
        j = NULL;
    }
    if (!j) {
        hearth__rest_reply_error(r->conn, 503, "Backup failed: out of memory");
        return;
    }
    j->conn = r->conn;
    j->at_ms = (int64_t)at;
    j->at_seq = seq;
    if (!j->dir)
        j->root = (hearth_node_t *)hearth_node_incref(hearth__db_root(r->ns->db));
    hearth__buf_init(&j->out);
    j->work.data = j;
    if (uv_queue_work(&r->srv->loop, &j->work, write_on_worker, answer))
        answer(&j->work, UV_ENOMEM);
}
