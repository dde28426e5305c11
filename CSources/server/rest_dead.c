/* rest_dead.c - a cluster's dead letters through the admin's endpoint
 * (GET /.settings/triggers/NAME/dead.json, POST NAME/retry.json): they are
 * the remote's (JetStream's, every node's), so listing or queueing them
 * again blocks on it; done on a worker, answered on the loop. One
 * server's are its spools', answered at once (triggers.c). */
#include "server/rest_internal.h"
#include "triggers/triggers.h"

#include <string.h>

typedef struct dead_job {
    uv_work_t work;
    hearth__http_conn *conn;
    /* a copy: the keeper's goes with it at stop; the cluster it names
     * waits for the jobs running (cluster/dead.c) */
    hearth__triggers_remote remote;
    char name[80];
    size_t max;
    bool retry;
    int rc;
    json_t *list; /* listed */
    size_t n;     /* queued again */
} dead_job;

static void on_worker(uv_work_t *w) {
    dead_job *j = w->data;
    if (j->retry)
        j->rc = hearth__triggers_retry_remote(&j->remote, j->name, &j->n);
    else
        j->list = hearth__triggers_dead_remote(&j->remote, j->name, j->max,
                                               &j->rc);
}

static void answer(uv_work_t *w, int status) {
    dead_job *j = w->data;
    int rc = status ? HEARTH_ENOMEM : j->rc;
    if (rc && !(j->retry && j->n)) {
        char why[160];
        snprintf(why, sizeof why, "Dead letters: the cluster's could not be "
                 "%s: %s", j->retry ? "queued again" : "read",
                 hearth_strerror(rc));
        hearth__rest_reply_error(j->conn, 503, why);
    } else if (j->retry) {
        /* some queued before a failure: said, the rest stay dead */
        hearth__rest_reply_json(j->conn, 200,
                                json_pack("{s:I, s:b}", "requeued",
                                          (json_int_t)j->n, "complete",
                                          rc == 0));
    } else {
        hearth__rest_reply_json(j->conn, 200, j->list);
        j->list = NULL;
    }
    json_decref(j->list);
    hearth__free(j);
}

void hearth__rest_dead_remote(rest *r, const char *name, size_t max,
                              bool retry) {
    dead_job *j = hearth__calloc(1, sizeof *j);
    if (!j) {
        hearth__rest_reply_error(r->conn, 503, "Server out of memory");
        return;
    }
    j->conn = r->conn;
    j->remote = *hearth__triggers_remote_of(r->srv->triggers);
    snprintf(j->name, sizeof j->name, "%s", name);
    j->max = max;
    j->retry = retry;
    j->work.data = j;
    if (uv_queue_work(&r->srv->loop, &j->work, on_worker, answer))
        answer(&j->work, UV_ENOMEM);
}
