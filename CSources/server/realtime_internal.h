/* realtime_internal.h - what the realtime protocol's files share (internal
 * to server/): the session and its listens and onDisconnect writes, sending,
 * the rules' checks, and the request handlers the dispatch calls. */
#ifndef HEARTH_SERVER_REALTIME_INTERNAL_H
#define HEARTH_SERVER_REALTIME_INTERNAL_H

#include "server/observe.h"
#include "server/realtime.h"

#include "net/v5.h"
#include "server/access.h"
#include "server/ws.h"

/* Listens one session may hold: each costs an observer and the data it
 * last sent (hundreds of bytes and up); past this a listen is refused with
 * too_many_listens, which the client reports as that query's cancel. */
#define MAX_LISTENS 10000
/* onDisconnect writes one session may queue, and their bytes (as JSON):
 * held until the connection closes, so bounded like listens (an app's
 * presence needs a handful); past either, too_big. */
#define MAX_ONDISCONNECT 1000
#define MAX_ONDISCONNECT_BYTES (16u * 1024 * 1024)

typedef struct listen listen_t;
typedef struct session session;

struct listen {
    session *s;
    char *key;      /* path, NUL, identity: the index's key (key_len) */
    size_t key_len;
    char *path;     /* in key */
    char *identity; /* in key: the query's identity ("default" or its
                       wire form) */
    json_t *tag;    /* NULL for untagged */
    bool filtered;  /* a query with bounds or a limit: whole values */
    hearth_node_t *last; /* what the client holds now */
    hearth_observer_t handle;
    json_t *wire_query;  /* as asked: checked again when the rules change */
    /* The client's hash of what it holds (the listen's h), until the
     * first value: when that value hashes the same, it is not sent. */
    char client_hash[HEARTH_HASH_SIZE];
    bool has_client_hash;
    hearth__list link;     /* in the session's listens, newest first */
    listen_t *same_key;    /* the older listen of the same key, if any */
};

/* An onDisconnect write: set (d) or merge (m) at path. */
typedef struct od_op {
    bool merge;
    char *path;
    json_t *data;
    size_t bytes; /* data as compact JSON */
    hearth__list link; /* in the session's, in the order asked */
} od_op;

struct session {
    hearth__server *srv;
    hearth__namespace *ns;
    hearth__principal who; /* set by auth / gauth, cleared by unauth */
    hearth__list link;     /* in the server's open sessions */
    hearth__ws *ws; /* NULL once the connection closed */
    hearth__list listens;
    size_t nlistens; /* listens not yet freed, MAX_LISTENS at most */
    /* (path, query) -> its newest listen, once the session holds more
     * than a few (realtime_listen.c): an unlisten walked every listen */
    hearth__map index;
    bool indexed;
    hearth__list ondisconnect;
    size_t nondisconnect, ondisconnect_bytes; /* within the MAX_ONDISCONNECTs */
    struct od_keeping *keeping; /* in a cluster: kept there (NULL: never) */
    int refs;       /* the connection, and each write awaiting its commit */
    /* a message arriving in pieces, up to what one message may hold */
    hearth__v5_joiner pieces;
};

#define HEARTH__LISTEN_OF(n) HEARTH__LIST_ITEM(n, listen_t, link)
#define HEARTH__SESSION_OF(n) HEARTH__LIST_ITEM(n, session, link)
#define HEARTH__OD_OF(n) HEARTH__LIST_ITEM(n, od_op, link)

/* ---- a session's listens (realtime_listen.c) ---- */

/* Puts l in s's list and index, or takes it out of them. */
void hearth__realtime_listen_link(session *s, listen_t *l);
void hearth__realtime_listen_unlink(session *s, listen_t *l);

/* ---- sending and the session (realtime.c) ---- */

/* Sends one message, in v5 pieces when long. */
void hearth__realtime_send_json(session *s, json_t *msg);
void hearth__realtime_reply(session *s, json_int_t r, const char *status,
                            json_t *data);
void hearth__realtime_push_data(session *s, const char *path,
                                const hearth_node_t *value, json_t *tag);
/* A `d` push of value at path (tagged when tag), as a message. */
json_t *hearth__realtime_data_msg(const char *path, const hearth_node_t *value,
                                  json_t *tag);
/* Sends the smallest push that brings l's client from l->last to now
 * (realtime_push.c). */
void hearth__realtime_push_change(listen_t *l, const hearth_node_t *now);
void hearth__realtime_session_release(session *s);
void hearth__realtime_deny(session *s, json_int_t r);

/* ---- the rules ---- */

/* Whether the session may read a valid path (a malformed one: never). */
bool hearth__realtime_may_read(session *s, const char *path, json_t *wire_q);
/* The session's writes, judged as who it is now (the admin: not judged). */
int hearth__realtime_judged_set(session *s, const char *path,
                                const hearth_node_t *value,
                                hearth_completion_cb cb, void *ctx,
                                hearth_free_cb ctx_free, hearth_error_t *err);
int hearth__realtime_judged_update(session *s, const char *path, json_t *data,
                                   hearth_completion_cb cb, void *ctx,
                                   hearth_free_cb ctx_free,
                                   hearth_error_t *err);
/* A put's value, checked as the write will be: path and data both valid. */
int hearth__realtime_put_value(const char *path, json_t *data,
                               hearth_node_t **out, hearth_error_t *err);

/* ---- the requests (realtime_listen.c, _write.c, _ondisconnect.c) ---- */

void hearth__realtime_listen(session *s, json_int_t r, json_t *b);
void hearth__realtime_unlisten(session *s, json_int_t r, json_t *b);
void hearth__realtime_get(session *s, json_int_t r, json_t *b);
void hearth__realtime_put(session *s, json_int_t r, json_t *b);
void hearth__realtime_merge(session *s, json_int_t r, json_t *b);
void hearth__realtime_ondisconnect(session *s, json_int_t r, const char *a,
                                   json_t *b);
/* Frees what the session kept for the cluster's copy of its list. */
void hearth__realtime_ondisconnect_free(session *s);
/* Runs the onDisconnect writes, in the order they were asked for. */
void hearth__realtime_run_ondisconnect(session *s);

#endif
