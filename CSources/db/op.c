/* op.c - the life of one queued operation: made, answered, canceled,
 * freed. */
#include "db/op.h"

int hearth__db_op_create(hearth__db_op_kind kind, hearth__db_op **out) {
    hearth__db_op *o = hearth__calloc(1, sizeof *o);
    if (!o)
        return HEARTH_ENOMEM;
    o->kind = kind;
    *out = o;
    return 0;
}

void hearth__db_op_free(hearth__db_op *o) {
    if (o->kind == OP_TRANSACTION)
        hearth_node_decref(o->u.tx.snapshot);
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
    if (o->u.get.cb) {
        o->u.get.cb(status, status ? NULL : value, o->ctx);
        return;
    }
    *o->u.get.rc = status;
    if (!status)
        *o->u.get.out = hearth_node_incref(value);
    uv_sem_post(o->u.get.sem);
}

void hearth__db_op_cancel(hearth__db_op *o) {
    switch (o->kind) {
    case OP_WRITE:
        if (o->done)
            o->done(HEARTH_ECANCELED, o->ctx);
        break;
    case OP_TRANSACTION:
        o->u.tx.done(HEARTH_ECANCELED, false, hearth__node_empty(), o->ctx);
        break;
    case OP_GET:
        hearth__db_op_answer_get(o, HEARTH_ECANCELED, NULL);
        break;
    case OP_OBSERVE:
        if (o->u.reg->ctx_free)
            o->u.reg->ctx_free(o->u.reg->ctx);
        hearth__free(o->u.reg);
        o->ctx_free = NULL;
        break;
    default:
        break;
    }
    hearth__db_op_done(o);
}
