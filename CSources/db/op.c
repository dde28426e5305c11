/* op.c - the life of one queued operation: made, answered, canceled,
 * freed. */
#include "db/op.h"

hearth__db_op *hearth__db_op_new(hearth__db_op_kind kind) {
    hearth__db_op *o = hearth__calloc(1, sizeof *o);
    if (o)
        o->kind = kind;
    return o;
}

void hearth__db_op_free(hearth__db_op *o) {
    hearth_node_decref(o->tx_snapshot);
    hearth_node_decref(o->auth);
    for (size_t i = 0; i < o->nparts; i++) {
        hearth__free(o->parts[i].text);
        hearth_node_decref(o->parts[i].value);
    }
    hearth__free(o->parts);
    hearth__free(o->text);
    hearth_query_free(o->query);
    hearth__free(o);
}

void hearth__db_op_done(hearth__db_op *o) {
    if (o->ctx_free)
        o->ctx_free(o->ctx);
    hearth__db_op_free(o);
}

void hearth__db_op_answer_get(hearth__db_op *o, int status,
                              const hearth_node_t *value) {
    if (o->get_cb) {
        o->get_cb(status, status ? NULL : value, o->ctx);
        return;
    }
    *o->get_rc = status;
    if (!status)
        *o->get_out = hearth_node_incref(value);
    uv_sem_post(o->sem);
}

void hearth__db_op_cancel(hearth__db_op *o) {
    switch (o->kind) {
    case OP_WRITE:
        if (o->done)
            o->done(HEARTH_ECANCELED, o->ctx);
        break;
    case OP_TRANSACTION:
        o->tx_done(HEARTH_ECANCELED, false, hearth__node_empty(), o->ctx);
        break;
    case OP_GET:
        hearth__db_op_answer_get(o, HEARTH_ECANCELED, NULL);
        break;
    case OP_OBSERVE:
        if (o->reg->ctx_free)
            o->reg->ctx_free(o->reg->ctx);
        hearth__free(o->reg);
        o->ctx_free = NULL;
        break;
    default:
        break;
    }
    hearth__db_op_done(o);
}
