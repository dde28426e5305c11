/* op.h - one operation on a database: what a public call asked for, queued
 * to the loop thread and run there by the handle's backend (db/backend.h).
 * Internal to db/. */
#ifndef HEARTH_DB_OP_H
#define HEARTH_DB_OP_H

#include "common/list.h"
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
    OP_ONLINE,        /* go online or offline */
    OP_RECONNECT,     /* backoff over, reconnect now (hearth_db_reconnect_now) */
    OP_ON_DISCONNECT, /* one of HEARTH__ON_DISCONNECT_* */
    OP_PURGE,         /* cancel unacknowledged writes */
    OP_AUTH,          /* the token to send (o->text, may be NULL) */
    OP_AUTH_PROVIDER, /* the provider, with o->ctx and o->ctx_free */
} hearth__db_op_kind;

/* onDisconnect operations (op->u.on_disconnect). */
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
    /* in one queue at a time: the handle's (queue, deferred), the
     * embedded engine's (unacked, inflight) or the cluster's (held) */
    hearth__list link;
    void *ctx;               /* the caller's, given to its callbacks */
    hearth_free_cb ctx_free; /* runs when the operation ends */
    /* Where: a read, listen, transaction or removal of listens. */
    char *text;
    hearth__path path; /* views into text */
    hearth_query_t *query;
    /* A write (OP_WRITE, OP_ON_DISCONNECT; a transaction once it has its
     * result): 1 part (a set) or more (an update). */
    hearth__db_write_part *parts;
    size_t nparts;
    hearth_completion_cb done;
    /* From hearth__db_*_as: judged by the owner's judge, as `auth` (NULL:
     * unauthenticated), when it is applied. */
    bool judged;
    /* fires no database triggers (the admin's imports and restores:
     * hearth__db_caller.quiet); logged as HEARTH__DB_QUIET_IDENTITY */
    bool quiet;
    /* a record of a replicated log that its leader judged as `auth`
     * (cluster/tail.c): logged and told to the triggers as that caller's,
     * judged by no one here */
    bool judged_there;
    hearth_node_t *auth;
    const char *door; /* the caller's (static; for denial traces) or NULL */
    /* A compare-and-set (a one-part write): applied only if the data at
     * the path still has this hash then (null's hash is ""). */
    bool conditional;
    char if_hash[HEARTH_HASH_SIZE];
    /* What one kind alone needs. */
    union {
        struct {
            hearth_transaction_fn fn;
            hearth_transaction_done_cb done;
            /* the result to report once its commit is durable */
            hearth_node_t *snapshot;
        } tx; /* OP_TRANSACTION */
        /* OP_GET: cb answers (hearth_db_get_async), or the caller waits on
         * sem (hearth_db_get from another thread) for out and rc. */
        struct {
            hearth_get_cb cb;
            uv_sem_t *sem;
            hearth_node_t **out;
            int *rc;
        } get;
        hearth__reg *reg;                      /* OP_OBSERVE */
        hearth_observer_t handle;              /* OP_UNOBSERVE */
        void (*call)(void *ctx);               /* OP_CALL */
        bool online;                           /* OP_ONLINE */
        int on_disconnect;                     /* HEARTH__ON_DISCONNECT_* */
        hearth_auth_provider_cb auth_provider; /* OP_AUTH_PROVIDER */
    } u;
} hearth__db_op;

/* An operation of kind, nothing else set: 0 and *out, or HEARTH_ENOMEM. */
int hearth__db_op_create(hearth__db_op_kind kind, hearth__db_op **out);
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
