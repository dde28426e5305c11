/* transaction.c - a transaction with a function (hearth_db_transaction) on
 * a node that does not lead the namespace. The function runs here, on
 * this node's tree, and its result goes to the leader as a compare-and-set
 * of the value it read (forward.c), judged and ordered there like any
 * forwarded write. When the leader's data had moved on, the refusal comes
 * back once this node's tail has caught up with what the leader held
 * (forward.c waits for it), and the function runs again on that: the
 * clients' own way with the service, at most as many attempts. */
#include "cluster/node.h"

#include "db/check.h"

#include <string.h>

/* As the SDKs give up (client/remote_transaction.c). */
#define MAX_ATTEMPTS 25

typedef struct remote_tx {
    hearth__cluster_ns *n;
    hearth__db_op *tx; /* the caller's OP_TRANSACTION */
    int attempts;
} remote_tx;

/* The data at the transaction's path in this node's tree. */
static const hearth_node_t *here(const remote_tx *t) {
    return hearth__node_at(hearth__db_root(t->n->db), &t->tx->path);
}

static void end(remote_tx *t, int rc, bool committed) {
    hearth_node_t *now = hearth_node_incref(here(t));
    t->tx->u.tx.done(rc, committed, now, t->tx->ctx);
    hearth_node_decref(now);
    hearth__db_op_done(t->tx);
    hearth__free(t);
}

static void attempt(remote_tx *t);

/* The leader's answer, given once this node's tail holds what it
 * decided on. */
static void on_answer(int rc, void *ctx) {
    remote_tx *t = ctx;
    if (rc == HEARTH_EDATASTALE && ++t->attempts < MAX_ATTEMPTS)
        attempt(t);
    else
        end(t, rc, rc == 0);
}

/* The compare-and-set of result at the transaction's path against what
 * was read (its hash); NULL without memory. */
static hearth__db_op *compare_and_set(remote_tx *t, const hearth_node_t *read,
                                      hearth_node_t *result) {
    hearth__db_op *w = NULL;
    const hearth__db_op *tx = t->tx;
    if (hearth__db_write_op_create(1, on_answer, t, NULL, &w) ||
        !(w->parts[0].text = hearth__strndup(tx->text, strlen(tx->text))) ||
        hearth_node_hash(read, w->if_hash)) {
        if (w)
            hearth__db_op_free(w);
        return NULL;
    }
    hearth__path_parse(w->parts[0].text, HEARTH__PATH_ALLOW_PRIORITY,
                       &w->parts[0].path, NULL); /* checked when asked */
    w->parts[0].value = hearth_node_incref(result);
    w->conditional = true;
    w->judged = tx->judged;
    w->auth = tx->auth ? hearth_node_incref(tx->auth) : NULL;
    return w;
}

static void attempt(remote_tx *t) {
    hearth_node_t *read = hearth_node_incref(here(t)), *result = NULL;
    int verdict = t->tx->u.tx.fn(read, &result, t->tx->ctx);
    int rc = 0;
    hearth__db_op *w = NULL;
    if (verdict != HEARTH_TX_COMMIT || !result)
        rc = HEARTH_EABORTED;
    else if (t->tx->path.n + (unsigned)hearth__node_depth(result) >
             HEARTH_MAX_DEPTH)
        rc = HEARTH_EDEPTH;
    else if (!(w = compare_and_set(t, read, result)))
        rc = HEARTH_ENOMEM;
    hearth_node_decref(read);
    hearth_node_decref(result);
    if (rc)
        end(t, rc, false);
    else
        hearth__cluster_forward(t->n, w); /* on_answer follows */
}

bool hearth__cluster_transaction_forward(hearth__cluster_ns *n,
                                         hearth__db_op *o) {
    remote_tx *t = hearth__calloc(1, sizeof *t);
    if (!t) {
        hearth_node_t *none = hearth_node_null();
        o->u.tx.done(HEARTH_ENOMEM, false, none, o->ctx);
        hearth_node_decref(none);
        return false;
    }
    t->n = n;
    t->tx = o;
    attempt(t);
    return true;
}
