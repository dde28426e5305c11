/* op.h - one operation on a database: what a public call asked for, queued
 * to the loop thread and run there by the handle's backend (db/backend.h).
 * Internal to db/. */
#ifndef HEARTH_DB_OP_H
#define HEARTH_DB_OP_H

#include "events/listeners.h"

#include <uv.h>

typedef enum hearth__db_op_kind {
    OP_WRITE,
    OP_TRANSACTION,
    OP_GET,
    OP_OBSERVE,
    OP_UNOBSERVE,
    OP_UNOBSERVE_AT,
    OP_CALL,
    OP_STOP,
    /* Only queued for a client of a server (backend->client_op): */
    OP_ONLINE,        /* go online or offline (o->status) */
    OP_ON_DISCONNECT, /* o->status is the kind (HEARTH__ON_DISCONNECT_*) */
    OP_PURGE,         /* cancel unacknowledged writes */
    OP_AUTH,          /* the token to send (o->text, may be NULL) */
    OP_AUTH_PROVIDER, /* o->auth_provider, o->ctx, o->ctx_free */
} hearth__db_op_kind;

/* onDisconnect operations, as op->status. */
enum {
    HEARTH__ON_DISCONNECT_SET,
    HEARTH__ON_DISCONNECT_UPDATE,
    HEARTH__ON_DISCONNECT_CANCEL
};

/* One path written by a write operation. */
typedef struct hearth__db_write_part {
    char *text;
    hearth__path path; /* views into text */
    hearth_node_t *value;
} hearth__db_write_part;

typedef struct hearth__db_op {
    hearth__db_op_kind kind;
    struct hearth__db_op *next;
    hearth__db_write_part *parts; /* OP_WRITE: 1 (set) or more (update) */
    size_t nparts;
    char *text; /* other kinds: the path */
    hearth__path path;
    hearth_query_t *query;
    hearth__reg *reg;
    hearth_observer_t handle;
    hearth_completion_cb done;
    hearth_transaction_fn tx_fn;
    hearth_transaction_done_cb tx_done;
    void (*call_fn)(void *ctx);
    void *ctx;
    hearth_free_cb ctx_free;
    /* OP_GET: get_cb answers (hearth_db_get_async), or the caller waits on
     * `sem` (hearth_db_get from another thread). */
    hearth_get_cb get_cb;
    uv_sem_t *sem;
    hearth_node_t **get_out;
    int *get_rc;
    /* A durable write waiting for its group commit: the transaction's
     * result to report, the write's own status. */
    hearth_node_t *tx_snapshot;
    int status;
    hearth_auth_provider_cb auth_provider;
    /* OP_WRITE from hearth__db_*_as: judged by the owner's judge, as
     * `auth` (NULL: unauthenticated), when it is applied. */
    bool judged;
    hearth_node_t *auth;
} hearth__db_op;

hearth__db_op *hearth__db_op_new(hearth__db_op_kind kind);
/* Frees o without running any of its callbacks. */
void hearth__db_op_free(hearth__db_op *o);
/* Frees o after running its ctx_free: the end of an operation that ran. */
void hearth__db_op_done(hearth__db_op *o);
/* Ends an operation that never ran: completions learn it was canceled. */
void hearth__db_op_cancel(hearth__db_op *o);
/* Hands a read's result to whoever waits for it (value borrowed). */
void hearth__db_op_answer_get(hearth__db_op *o, int status,
                           const hearth_node_t *value);

#endif
