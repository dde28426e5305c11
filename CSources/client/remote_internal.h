/* remote_internal.h - what the realtime client's files share (internal to
 * client/): the client's state (its listens, writes, gets, requests in
 * flight and transactions) and the functions one file calls in another.
 * The files are named in remote.c's opening comment. */
#ifndef HEARTH_CLIENT_REMOTE_INTERNAL_H
#define HEARTH_CLIENT_REMOTE_INTERNAL_H

#include "client/remote.h"

#include "client/disk.h"
#include "client/ondisconnect.h"
#include "client/link.h"
#include "common/list.h"
#include "net/v5.h"
#include "tree/codec.h"

#include <jansson.h>
#include <stdatomic.h>

enum {
    FIRST_DELAY_MS = 1000,    /* reconnect backoff: from 1 s */
    MAX_DELAY_MS = 30000,     /* to 30 s */
    AUTH_REFUSALS_SLOW = 3,   /* a provider's refused tokens, then 30 s */
    KEEPALIVE_MS = 45000,     /* "0" after this long without sending, as
                                 the SDK's WebSocket does: proxies and NATs
                                 drop a connection silent for minutes */
    MAX_TX_ATTEMPTS = 25,
    GET_CONNECT_MS = 3000,    /* a get waits this long for a connection */
};

typedef enum { REQ_LISTEN, REQ_WRITE, REQ_GET, REQ_AUTH, REQ_PLAIN } req_kind;

/* A server listen for one view of the sync tree. */
typedef struct listen_rec {
    hearth__view *view;
    char *path;            /* "/a/b" */
    hearth_query_t *query; /* NULL: default */
    int64_t tag;
    bool sent;             /* on this connection */
    hearth__list link;     /* in the client's listens, newest first */
} listen_rec;

typedef struct tx tx;
typedef struct batch batch;

/* A write on its way to the server, in send order. */
typedef struct write_rec {
    int64_t id;          /* its id in the sync tree; -1: not in it */
    const char *action;  /* "p", "m", "o", "om", "oc" */
    json_t *body;
    bool cas;            /* compare-and-set: dropped when the line drops */
    bool sent;
    hearth__remote_done done;
    void *arg;
    batch *owner;        /* the transactions it carries */
    hearth__list link;   /* in the client's writes, in send order */
} write_rec;

typedef struct get_rec {
    json_t *body;
    bool sent;
    uint64_t deadline;       /* loop time by which it must be sent */
    char *path;
    hearth_query_t *query;
    hearth__remote_get_done done;
    void *arg;
    hearth__list link; /* in the client's gets, newest first */
} get_rec;

/* A request in flight on this connection. */
typedef struct outreq {
    int64_t r;
    req_kind kind;
    void *item;
    hearth__list link; /* in the client's requests, newest first */
} outreq;

struct tx {
    hearth__remote *r;
    char *path_text;
    hearth__path path;
    hearth_transaction_fn fn;
    void *fn_ctx;
    hearth__remote_tx_done done;
    void *arg;
    hearth__reg *reg;    /* keeps the server's value here in the cache */
    int attempts;
    batch *in;           /* the batch carrying it, or NULL while it waits */
    int status;          /* once finished: how */
    bool committed;
    hearth_node_t *result; /* what its update function made of the value
                              (server values estimated): the snapshot a
                              committed transaction reports */
    hearth__list link;   /* in the client's queue, oldest first; then in
                            the queue of finished ones */
};

/* A client's transactions at one path run one after another on the local
 * value and go to the server as one compare-and-set: they never race each
 * other, only other clients. */
struct batch {
    char *path_text;     /* the path all its transactions share */
    hearth__path path;
    tx **txs;
    size_t n;
    write_rec *write;    /* the attempt in flight */
    hearth__list link;   /* in the client's batches, newest first */
};

struct hearth__remote {
    uv_loop_t *loop;
    hearth__remote_url url;
    char resource[256];
    hearth__sync sync;
    hearth__remote_hooks hooks;

    hearth__link *ws;      /* NULL when not connected */
    bool connected;        /* hello received */
    bool ready;            /* and the credential settled: requests may go */
    char *auth_token;      /* sent first on every connection; NULL: none */
    bool want_token;       /* ask the owner for one on every connection */
    unsigned auth_refusals; /* the provider's tokens refused in a row */
    bool awaiting_token;   /* asked; nothing goes out until it answers */
    bool online;           /* wanted: goOnline / goOffline */
    bool closing;
    bool shut_down;        /* the server said stop */
    uv_timer_t retry;
    uv_timer_t get_timer;  /* fails gets that waited too long to be sent */
    uv_timer_t save_timer; /* stores changed server data, coalesced */
    uv_timer_t keepalive;  /* while connected: "0" when nothing was sent */
    uint64_t last_send_ms; /* uv_now of the last message sent */
    int open_handles;
    hearth__disk *disk;    /* the cache on disk, or NULL */
    uint64_t delay_ms;
    hearth__rng jitter;    /* spreads the reconnect delays */
    int64_t next_r;
    int64_t next_write;
    int64_t time_offset;   /* server clock minus ours, ms */

    /* v5 pieces of a long message, up to what one message may hold */
    hearth__v5_joiner pieces;

    hearth__list listens; /* listen_rec */
    hearth__list writes;  /* write_rec */
    hearth__list gets;    /* get_rec */
    hearth__list reqs;     /* outreq */
    hearth__list txs;      /* tx, waiting or in a batch */
    hearth__list finished; /* tx: their completions still to run */
    hearth__list batches;  /* batch */
    hearth_observer_t next_handle; /* internal registrations */
    hearth__od_list on_disconnect; /* what the server will write when the
                                      connection ends */
};

/* Whether messages are logged (hearth_set_logging, to hearth_set_log's
 * function). */
extern atomic_bool hearth__remote_logging;

/* ---- remote.c ---- */

void hearth__remote_log_message(char direction, const char *text, size_t len);

/* ---- remote_wire.c ---- */

void hearth__remote_raise_events(hearth__remote *r);

char *hearth__remote_path_text(const hearth__path *p);

/* Sends a request and remembers what its answer is for. */
int hearth__remote_send_request(hearth__remote *r, const char *action, json_t *body,
                                req_kind kind, void *item);

/* Forgets every request in flight (the connection is gone). */
void hearth__remote_free_requests(hearth__remote *r);
/* Forgets requests for item (it is going away). */
void hearth__remote_drop_requests_for(hearth__remote *r, const void *item);

void hearth__remote_on_message(void *user, const char *text, size_t len);

/* ---- remote_listen.c ---- */

void hearth__remote_set_info(hearth__remote *r, const char *key, hearth_node_t *value);

bool hearth__remote_is_info(const char *path);

/* The client's own locations: the sync tree keeps data only where views
 * are, so a new view under .info is given the current values. */
void hearth__remote_publish_info(hearth__remote *r);

void hearth__remote_send_listen(hearth__remote *r, listen_rec *l);

/* The server refused or revoked the listen of view v: each of its
 * registrations gets a cancel event, then its owner drops it. The handles
 * are taken first: a callback may remove observers itself. */
void hearth__remote_cancel_view(hearth__remote *r, hearth__view *v, int status);

/* The listen the server names by path and query (`c` carries no tag). */
listen_rec *hearth__remote_find_listen(hearth__remote *r, const char *path,
                                       json_t *query);

void hearth__remote_listen_done(hearth__remote *r, listen_rec *l, const char *status);

void hearth__remote_listen_free(listen_rec *l);

/* ---- remote_write.c ---- */

void hearth__remote_write_free(write_rec *w);

void hearth__remote_send_write(hearth__remote *r, write_rec *w);

void hearth__remote_enqueue_write(hearth__remote *r, write_rec *w);

void hearth__remote_unlink_write(hearth__remote *r, write_rec *w);

int hearth__remote_status_code(const char *status);

void hearth__remote_forget_write(hearth__remote *r, const write_rec *w);

void hearth__remote_write_answered(hearth__remote *r, write_rec *w, int status);

/* The wire form of a value: priorities and server values as written. */
json_t *hearth__remote_wire_value(const hearth_node_t *v);

/* The local estimate of a value with server values (resolved against
 * what the client shows there, at the estimated server time). */
hearth_node_t *hearth__remote_estimate(hearth__remote *r, const hearth__path *path,
                                       const hearth_node_t *value);

/* ---- remote_get.c ---- */

void hearth__remote_get_free(get_rec *g);

void hearth__remote_get_answered(hearth__remote *r, get_rec *g, int status,
                                 json_t *data);

void hearth__remote_send_get(hearth__remote *r, get_rec *g);

void hearth__remote_on_get_timer(uv_timer_t *timer);

/* ---- remote_transaction.c ---- */

/* Takes t out of the queue; its completion runs in flush_finished, once
 * the client's state is consistent again (a completion may start new
 * transactions or writes). */
void hearth__remote_tx_finish(tx *t, int status, bool committed);
/* Ends every queued transaction with HEARTH_ECANCELED. */
void hearth__remote_finish_all_txs(hearth__remote *r);

/* Runs the completions of finished transactions, oldest first. */
void hearth__remote_flush_finished(hearth__remote *r);

bool hearth__remote_same_path(const hearth__path *a, const hearth__path *b);

/* Ends every transaction of b with status, then b itself. */
void hearth__remote_batch_finish(hearth__remote *r, batch *b, int status,
                                 bool committed);

void hearth__remote_batch_answer(hearth__remote *r, batch *b, int status);

/* Ends batch b's attempt without an answer (the line dropped, or a set
 * replaced the value): revert it locally and end its transactions. */
void hearth__remote_batch_abandon(hearth__remote *r, batch *b, int status);

void hearth__remote_abort_overridden_transactions(hearth__remote *r,
                                                  const hearth__path *path);

/* ---- remote_connection.c ---- */

/* The hello: the connection is usable once the credential is known. */
void hearth__remote_on_hello(hearth__remote *r, json_t *d);

void hearth__remote_auth_answered(hearth__remote *r, const char *status, json_t *d);

/* Ends the connection from our side; the next one comes after the usual
 * backoff. */
void hearth__remote_drop_connection(hearth__remote *r);

/* The first reconnect delay: FIRST_DELAY_MS, or the tests' (remote.h). */
uint64_t hearth__remote_first_delay(void);
/* Sends the keep-alive, "0". */
int hearth__remote_send_keepalive(hearth__remote *r);
void hearth__remote_connect_now(hearth__remote *r);

/* ---- remote_cache.c ---- */

void hearth__remote_schedule_save(hearth__remote *r);

/* Stored data a new view starts from (new reference), or NULL. */
hearth_node_t *hearth__remote_stored_view(hearth__remote *r, const char *path,
                                          const hearth_query_t *q);

/* Stores the server data of every view that has it complete, then prunes
 * what no view holds past the bound. */
void hearth__remote_save_views(hearth__remote *r);

#endif
