/* rest_backup.c - GET /.backup (the admin's, `hearth backup --url`): a
 * namespace's data as export JSON, from one root. The root is immutable
 * and held by a reference, so it is written out on libuv's pool while the
 * loop goes on taking writes; the answer is that root, as of one commit,
 * however long it takes to write. */
#include "server/rest_internal.h"

#include "tree/json.h"

typedef struct backup_job {
    uv_work_t work;
    hearth__http_conn *conn;
    hearth_node_t *root;
    hearth__buf out;
} backup_job;

static void write_on_worker(uv_work_t *w) {
    backup_job *j = w->data;
    hearth__node_write_json(&j->out, j->root, HEARTH_JSON_EXPORT);
}

static void answer(uv_work_t *w, int status) {
    backup_job *j = w->data;
    if (status || j->out.failed)
        hearth__rest_reply_error(j->conn, 503, "Backup failed: out of memory");
    else
        hearth__http_respond(j->conn, 200, JSON_TYPE,
                             "Content-Disposition: attachment; "
                             "filename=\"backup.json\"\r\n",
                             j->out.data, j->out.len);
    hearth_node_decref(j->root);
    hearth__buf_free(&j->out);
    hearth__free(j);
}

void hearth__rest_backup(rest *r, const char *ns_name) {
    hearth_error_t err;
    if (hearth__server_namespace(r->srv, ns_name, &r->ns, &err)) {
        hearth__rest_reply_error(r->conn, 400, err.message);
        return;
    }
    backup_job *j = hearth__calloc(1, sizeof *j);
    if (!j) {
        hearth__rest_reply_error(r->conn, 503, "Backup failed: out of memory");
        return;
    }
    j->conn = r->conn;
    j->root = (hearth_node_t *)hearth_node_incref(hearth__db_root(r->ns->db));
    hearth__buf_init(&j->out);
    j->work.data = j;
    if (uv_queue_work(&r->srv->loop, &j->work, write_on_worker, answer))
        answer(&j->work, UV_ENOMEM);
}
