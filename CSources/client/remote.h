/*
 * remote.h - a database that lives on a server: the client side of the
 * realtime protocol (internal; hearth_db_* in remote mode drives it).
 *
 * Local writes go into the sync tree at once (listeners see them before
 * the call returns) and to the server in order; the server's answer
 * settles each (an acknowledgement, or a rejection that reverts it).
 * Listens become server listens; the data the server pushes goes into the
 * sync tree. While the connection is down, writes queue up and are sent
 * when it returns; the connection retries with a jittered backoff from 1 s
 * to 30 s. `.info/connected` and `.info/serverTimeOffset` are locations
 * like any other, set by the client itself.
 *
 * Everything runs on the loop thread that owns the database.
 */
#ifndef HEARTH_CLIENT_REMOTE_H
#define HEARTH_CLIENT_REMOTE_H

#include "sync/sync.h"

#include <uv.h>

typedef struct hearth__remote hearth__remote;

/* Where a client connects: parsed from a database URL such as
 * "http://127.0.0.1:9000?ns=demo", "ws://host:port/?ns=demo" or
 * "https://NAME.firebaseio.com". */
typedef struct hearth__remote_url {
    char host[256];
    int port;
    bool tls;
    char ns[128];
    /* How to reach it: the program's transport (open set), else the
     * built-in one. Not parsed: the owner sets it. */
    hearth_transport_t transport;
} hearth__remote_url;

int hearth__remote_parse_url(const char *url, hearth__remote_url *out,
                             hearth_error_t *err);

/* What the client asks of its owner, each called with ctx on the loop. */
typedef struct hearth__remote_hooks {
    /* Raise the events queued on `events` (the owner's raising
     * discipline). */
    void (*raise)(void *ctx);
    /* End a registration the server refused or revoked (its cancel event
     * has been raised): remove it as the owner removes observers. */
    void (*drop)(void *ctx, hearth__reg *reg);
    /* A token is wanted (hearth__remote_wait_for_token): the owner asks its
     * provider, which answers through hearth__remote_set_auth. */
    void (*token_wanted)(void *ctx);
    void *ctx;
} hearth__remote_hooks;

/* Starts a client on loop; events are queued on `events`. */
int hearth__remote_open(uv_loop_t *loop, const hearth__remote_url *url,
                        hearth__event_queue *events,
                        const hearth__remote_hooks *hooks,
                        hearth__remote **out);

/* The credential sent with `auth` (a JWT, or NULL for none): sent at once
 * when connected (NULL sends `unauth`), and first on every connection. */
int hearth__remote_set_auth(hearth__remote *r, const char *token);
/* With wait on, every new connection asks for a token (token_wanted) and
 * sends nothing else until hearth__remote_set_auth answers; a connection
 * already up is asked at once. */
void hearth__remote_wait_for_token(hearth__remote *r, bool wait);
/* Keeps the client's pending writes and the server data of its views in
 * disk (taken over): the writes stored by an earlier run are laid over the
 * data again and queued to send, in order. Right after open. */
struct hearth__disk;
int hearth__remote_use_disk(hearth__remote *r, struct hearth__disk *disk);

/* Ends the connection; pending writes, gets and transactions complete with
 * HEARTH_ECANCELED and every registration's ctx_free runs. The client
 * frees itself once its handles are closed (the loop must run on). */
void hearth__remote_close(hearth__remote *r);

hearth__listeners *hearth__remote_listeners(hearth__remote *r);

/* Completion of a write: status 0 or a negative HEARTH_E* code. */
typedef void (*hearth__remote_done)(int status, void *arg);

/* A write of n (path, value) parts as one operation (a set when n is 1,
 * else a multi-path update). Values are borrowed. */
int hearth__remote_write(hearth__remote *r, const hearth__path *const *paths,
                         hearth_node_t *const *values, size_t n,
                         hearth__remote_done done, void *arg);

int hearth__remote_observe(hearth__remote *r, const hearth__path *path,
                           const hearth_query_t *q, hearth__reg *reg);
void hearth__remote_unobserve(hearth__remote *r, hearth__reg *reg);

/* A one-time read: from the server when connected, else from complete
 * cached data, else HEARTH_EOFFLINE. done gets a borrowed value. */
typedef void (*hearth__remote_get_done)(int status, const hearth_node_t *value,
                                        void *arg);
int hearth__remote_get(hearth__remote *r, const hearth__path *path,
                       const hearth_query_t *q, hearth__remote_get_done done,
                       void *arg);
/* Fills err with the SDK's words for a read offline with nothing cached
 * ("Unable to get latest value for query FQuerySpec (path: /a, params:
 * {}), client offline with no active listeners and no matching disk cache
 * entries", as the iOS SDK says it); returns HEARTH_EOFFLINE. */
int hearth__remote_offline_error(hearth_error_t *err, const hearth__path *path,
                                 const hearth_query_t *q);
/* The cached value at path when complete (new reference), else NULL. */
hearth_node_t *hearth__remote_cached(hearth__remote *r, const hearth__path *path,
                                     const hearth_query_t *q);

/* A transaction: fn runs on the local value; the result is applied
 * locally and sent as a compare-and-set; a stale guess runs it again (25
 * attempts at most). */
typedef void (*hearth__remote_tx_done)(int status, bool committed,
                                       const hearth_node_t *snapshot,
                                       void *arg);
int hearth__remote_transaction(hearth__remote *r, const hearth__path *path,
                               hearth_transaction_fn fn, void *fn_ctx,
                               hearth__remote_tx_done done, void *arg);

/* onDisconnect operations: the server performs them when this client's
 * connection ends. action is "o" (set: one part), "om" (update: n parts)
 * or "oc" (cancel: one part, its value ignored). */
int hearth__remote_on_disconnect(hearth__remote *r, const char *action,
                                 const hearth__path *const *paths,
                                 hearth_node_t *const *values, size_t n,
                                 hearth__remote_done done, void *arg);

/* Reverts and cancels every write and transaction not yet acknowledged
 * (onDisconnect operations stay). */
void hearth__remote_purge(hearth__remote *r);

/* goOffline / goOnline. */
void hearth__remote_set_online(hearth__remote *r, bool online);
/* The network came back or the app is in front again: the backoff starts
 * over, and a client waiting to reconnect connects now. */
void hearth__remote_reconnect_now(hearth__remote *r);

/* Tests only: when nonzero, the first reconnect delay (else 1 s) and the
 * keep-alive interval (else 45 s), in ms, for clients made after. */
extern _Atomic uint64_t hearth__remote_test_first_delay_ms;
extern _Atomic uint64_t hearth__remote_test_keepalive_ms;

/* Test hook: the most one message from the server may hold, joined
 * (HEARTH__V5_MAX_TO_CLIENT unless set). */
void hearth__remote_set_max_message(hearth__remote *r, size_t max);

/* Handles text as one frame from the server (the fuzz target's way in). */
void hearth__remote_feed(hearth__remote *r, const char *text, size_t len);

/* The estimated server time (local clock plus the offset the server's
 * hello gave). */
int64_t hearth__remote_server_now(const hearth__remote *r);

#endif
