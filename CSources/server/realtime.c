/* realtime.c - the realtime protocol (v5) on the server: one session per
 * WebSocket, speaking to its namespace's database on the server's loop.
 *
 * Listens are value observers whose events become `d` pushes (tagged for
 * tagged queries); the initial push goes out before the listen's `ok`
 * because the observer raises it while the request is handled. Writes are
 * applied at once (the writer's own listeners see them first) and answered
 * `ok` after their commit. onDisconnect writes run when the connection
 * closes. Malformed messages get an `invalid_args` answer; malformed frames
 * close that one connection. */
#include "server/realtime.h"

#include "server/access.h"

#include "common/v5.h"
#include "query/query.h"
#include "server/changes.h"
#include "server/ws.h"
#include "tree/json.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    char *path;
    char *identity; /* the query's identity: "default" or its wire form */
    json_t *tag;    /* NULL for untagged */
    bool filtered;  /* a query with bounds or a limit: whole values */
    hearth_node_t *last; /* what the client holds now */
    hearth_observer_t handle;
    json_t *wire_query;  /* as asked: checked again when the rules change */
    listen_t *next;
};

/* An onDisconnect write: set (d) or merge (m) at path. */
typedef struct od_op {
    bool merge;
    char *path;
    json_t *data;
    size_t bytes; /* data as compact JSON */
    struct od_op *next;
} od_op;

struct session {
    hearth__server *srv;
    hearth__namespace *ns;
    hearth__principal who; /* set by auth / gauth, cleared by unauth */
    session *prev, *next;  /* the server's open sessions */
    hearth__ws *ws; /* NULL once the connection closed */
    listen_t *listens;
    size_t nlistens; /* listens not yet freed, MAX_LISTENS at most */
    od_op *ondisconnect;
    size_t nondisconnect, ondisconnect_bytes; /* within the MAX_ONDISCONNECTs */
    int refs;       /* the connection, and each write awaiting its commit */
    /* a message arriving in pieces, up to what one message may hold */
    hearth__v5_joiner pieces;
};

/* ---- sending ---- */

static int send_frame(void *ws, const char *frame, size_t len) {
    return hearth__ws_send_text(ws, frame, len);
}

/* Sends one message, in v5 pieces when long. */
static void send_json(session *s, json_t *msg) {
    char *text = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(msg);
    if (text && s->ws)
        hearth__v5_send(text, strlen(text), SIZE_MAX, send_frame, s->ws);
    free(text);
}

static void reply(session *s, json_int_t r, const char *status, json_t *data) {
    send_json(s, json_pack("{s:s,s:{s:I,s:{s:s,s:o}}}", "t", "d", "d", "r", r,
                           "b", "s", status, "d", data ? data : json_object()));
}

static void push_data(session *s, const char *path, const hearth_node_t *value,
                      json_t *tag) {
    json_t *body = json_pack("{s:s,s:o}", "p", path,
                             "d", hearth_node_to_jansson(value, HEARTH_JSON_EXPORT));
    if (body && tag)
        json_object_set(body, "t", tag);
    send_json(s, json_pack("{s:s,s:{s:s,s:o}}", "t", "d", "d", "a", "d", "b",
                           body));
}

/* ---- sessions ---- */

static void session_release(session *s) {
    if (--s->refs > 0)
        return;
    hearth__principal_clear(&s->who);
    hearth__v5_joiner_reset(&s->pieces);
    hearth__free(s);
}

static void listen_free(void *ctx) {
    listen_t *l = ctx;
    l->s->nlistens--;
    json_decref(l->wire_query);
    hearth_node_decref(l->last);
    hearth__free(l->path);
    hearth__free(l->identity);
    json_decref(l->tag);
    session_release(l->s);
    hearth__free(l);
}

/* listen path + relative change path ("/" means the listen path). */
static char *join_path(const char *base, const char *rel) {
    size_t blen = strlen(base);
    while (blen > 1 && base[blen - 1] == '/')
        blen--;
    if (strcmp(rel, "/") == 0)
        return hearth__strndup(base, blen);
    size_t rlen = strlen(rel);
    char *p = hearth__malloc(blen + rlen + 1);
    if (p) {
        size_t skip = blen == 1 && base[0] == '/'; /* "/" + "/a" is "/a" */
        memcpy(p, base, blen - skip);
        memcpy(p + blen - skip, rel, rlen + 1);
    }
    return p;
}

/* The smallest push that brings the client from l->last to now: a `d` at
 * the deepest changed location, or an `m` of several changed children.
 * Filtered (tagged) queries get whole values: their windows move. */
static void push_change(listen_t *l, const hearth_node_t *now) {
    session *s = l->s;
    if (!l->last || l->filtered) {
        push_data(s, l->path, now, l->tag);
        return;
    }
    hearth__buf scratch;
    hearth__buf_init(&scratch);
    hearth__change c;
    if (hearth__smallest_change(l->last, now, HEARTH_JSON_EXPORT, &scratch, &c)) {
        char *path = join_path(l->path, c.path);
        if (!path) {
            push_data(s, l->path, now, l->tag);
        } else if (!c.nkeys) {
            push_data(s, path, c.node, l->tag);
        } else {
            json_t *merge = json_object();
            for (size_t i = 0; merge && i < c.nkeys; i++) {
                hearth__name name = hearth__key_name(c.keys[i]);
                json_object_set_new(merge, c.keys[i]->s,
                                    hearth_node_to_jansson(
                                        hearth__node_child(c.node, &name),
                                        HEARTH_JSON_EXPORT));
            }
            json_t *body = json_pack("{s:s,s:o}", "p", path, "d", merge);
            send_json(s, json_pack("{s:s,s:{s:s,s:o}}", "t", "d", "d", "a", "m",
                                   "b", body));
        }
        hearth__free(path);
    }
    hearth__buf_free(&scratch);
}

static void on_value(const hearth_event_t *ev, void *ctx) {
    listen_t *l = ctx;
    if (l->s->ws)
        push_change(l, ev->node);
    hearth_node_decref(l->last);
    l->last = hearth_node_incref(ev->node);
}

/* The query of a wire query object (see wire-v5.md); NULL for none. */
static int wire_query(json_t *qo, hearth_query_t **out, hearth_error_t *err) {
    *out = NULL;
    if (!qo || json_is_null(qo) || (json_is_object(qo) && !json_object_size(qo)))
        return 0;
    if (!json_is_object(qo))
        return hearth__error(err, HEARTH_EQUERY, NULL, "q must be an object");
    hearth_query_t *q;
    int rc = hearth_query_new(&q);
    json_t *i = json_object_get(qo, "i");
    if (!rc && json_is_string(i)) {
        const char *by = json_string_value(i);
        rc = strcmp(by, ".key") == 0     ? hearth_query_order_by_key(q, err)
             : strcmp(by, ".value") == 0 ? hearth_query_order_by_value(q, err)
             : strcmp(by, ".priority") == 0
                 ? hearth_query_order_by_priority(q, err)
                 : hearth_query_order_by_child(q, by, err);
    }
    static const char *const ends[2][3] = {{"sp", "sn", "sin"},
                                           {"ep", "en", "ein"}};
    for (int e = 0; !rc && e < 2; e++) {
        json_t *v = json_object_get(qo, ends[e][0]);
        if (!v)
            continue;
        json_t *name = json_object_get(qo, ends[e][1]);
        const char *key = json_string_value(name);
        if (key && (strcmp(key, "[MIN_NAME]") == 0 || strcmp(key, "[MAX_NAME]") == 0))
            key = NULL; /* the sentinel the builder picks itself */
        json_t *inc = json_object_get(qo, ends[e][2]);
        bool inclusive = !inc || json_is_true(inc);
        hearth_node_t *value;
        rc = hearth_node_from_jansson(v, 0, &value, err);
        if (rc)
            break;
        rc = e == 0 ? (inclusive ? hearth_query_start_at : hearth_query_start_after)(
                          q, value, key, err)
                    : (inclusive ? hearth_query_end_at : hearth_query_end_before)(
                          q, value, key, err);
        hearth_node_decref(value);
    }
    json_t *l = json_object_get(qo, "l");
    if (!rc && l) {
        json_t *vf = json_object_get(qo, "vf");
        bool last = json_is_string(vf) && strcmp(json_string_value(vf), "r") == 0;
        rc = !json_is_integer(l) || json_integer_value(l) <= 0 ||
                     json_integer_value(l) > UINT32_MAX
                 ? hearth__error(err, HEARTH_EQUERY, NULL, "l must be a positive integer")
             : last ? hearth_query_limit_to_last(q, (uint32_t)json_integer_value(l), err)
                    : hearth_query_limit_to_first(q, (uint32_t)json_integer_value(l), err);
    }
    if (rc) {
        hearth_query_free(q);
        return rc;
    }
    *out = q;
    return 0;
}

/* ---- the rules ---- */

/* Requests are checked in this order: malformed ones are answered
 * invalid_args and nothing else; then reads are checked before they start;
 * writes are judged by the rules as they are applied (hearth__db_set_as),
 * as the identity the session has at that moment. */

/* Whether the session may read a valid path (a malformed one: never). */
static bool may_read(session *s, const char *path, json_t *wire_q) {
    hearth_node_t *q = s->who.admin ? NULL : hearth__rules_query_variable(wire_q);
    bool ok = hearth__ns_may_read(s->ns, &s->who, path, q);
    hearth_node_decref(q);
    return ok;
}

/* A dry run of a set (merge false) or an update of relative paths (merge
 * true) of valid data, for onDisconnect writes as they are queued. */
static bool may_write(session *s, const char *path, json_t *data, bool merge) {
    if (!merge) {
        hearth_node_t *v = NULL;
        if (hearth_node_from_jansson(data, HEARTH_JSON_ALLOW_SERVER_VALUES, &v, NULL))
            return false;
        bool ok = hearth__ns_may_write(s->ns, &s->who, &path,
                                       (const hearth_node_t *const *)&v, 1);
        hearth_node_decref(v);
        return ok;
    }
    return hearth__ns_may_update(s->ns, &s->who, path, data);
}

/* The session's writes, judged as who it is now (the admin: not judged). */
static int judged_set(session *s, const char *path, const hearth_node_t *value,
                      hearth_completion_cb cb, void *ctx, hearth_free_cb ctx_free,
                      hearth_error_t *err) {
    hearth__db_caller caller;
    return hearth__db_set_as(s->ns->db, hearth__principal_caller(&s->who, &caller),
                             path, value, cb, ctx, ctx_free, err);
}

static int judged_update(session *s, const char *path, json_t *data,
                         hearth_completion_cb cb, void *ctx,
                         hearth_free_cb ctx_free, hearth_error_t *err) {
    char *text = json_dumps(data, JSON_COMPACT);
    if (!text)
        return hearth__error_code(err, HEARTH_ENOMEM);
    hearth__db_caller caller;
    int rc = hearth__db_update_json_as(
        s->ns->db, hearth__principal_caller(&s->who, &caller), path, text,
        strlen(text), cb, ctx, ctx_free, err);
    free(text);
    return rc;
}

static void recheck_session(session *s);

static void deny(session *s, json_int_t r) {
    reply(s, r, "permission_denied", json_string("Permission denied"));
}

/* auth / gauth: "owner" is the admin; a token becomes the rules' auth. */
static void do_auth(session *s, json_int_t r, json_t *b) {
    const char *cred = json_string_value(json_object_get(b, "cred"));
    if (!cred) {
        reply(s, r, "invalid_args", json_string("cred is required"));
        return;
    }
    hearth__principal who;
    bool expired;
    char why[256];
    if (!hearth__principal_of_token(s->srv, cred, &who, &expired, why, sizeof why)) {
        reply(s, r, expired ? "expired_token" : "invalid_token", json_string(why));
        return;
    }
    hearth__principal_clear(&s->who);
    s->who = who;
    json_t *auth = who.auth ? hearth_node_to_jansson(who.auth, 0) : json_null();
    reply(s, r, "ok", json_pack("{s:o}", "auth", auth ? auth : json_null()));
    /* A new identity reads what it may: listens it may not are revoked. */
    recheck_session(s);
}

static void do_unauth(session *s, json_int_t r) {
    hearth__principal_clear(&s->who);
    s->who.admin = false;
    reply(s, r, "ok", NULL);
    recheck_session(s);
}

/* A listen's or get's path and query: answered (invalid_args, else
 * permission_denied) and false unless both are valid and may be read. */
static bool read_request(session *s, json_int_t r, json_t *b,
                         const char **path, hearth_query_t **q) {
    *path = json_string_value(json_object_get(b, "p"));
    hearth_error_t err = {0};
    *q = NULL;
    if (!*path || wire_query(json_object_get(b, "q"), q, &err) ||
        hearth_validate_path(*path, &err)) {
        hearth_query_free(*q);
        reply(s, r, "invalid_args", json_string(*path ? err.message : "p is missing"));
        return false;
    }
    if (!may_read(s, *path, json_object_get(b, "q"))) {
        hearth_query_free(*q);
        deny(s, r);
        return false;
    }
    return true;
}

static void do_listen(session *s, json_int_t r, json_t *b) {
    const char *path;
    hearth_query_t *q;
    hearth_error_t err = {0};
    if (!read_request(s, r, b, &path, &q))
        return;
    if (s->nlistens >= MAX_LISTENS) {
        hearth_query_free(q);
        reply(s, r, "too_many_listens",
              json_sprintf("This connection holds %d listens, the most it may",
                           MAX_LISTENS));
        return;
    }
    listen_t *l = hearth__calloc(1, sizeof *l);
    if (l) {
        s->nlistens++; /* listen_free counts it out */
        l->s = s;
        json_t *wq = json_object_get(b, "q");
        l->wire_query = wq ? json_incref(wq) : NULL;
        l->path = hearth__strndup(path, strlen(path));
        l->identity = hearth__query_identity(q);
        json_t *tag = json_object_get(b, "t");
        l->tag = tag && !json_is_null(tag) ? json_incref(tag) : NULL;
        l->filtered = !hearth__query_loads_all(q);
    }
    if (!l || !l->path || !l->identity) {
        if (l) {
            s->refs++; /* listen_free releases one */
            listen_free(l);
        }
        hearth_query_free(q);
        reply(s, r, "unavailable", json_string("out of memory"));
        return;
    }
    s->refs++;
    /* The data goes out (raised now, on the loop) before the ok. */
    int rc = hearth_db_observe(s->ns->db, path, q, HEARTH_MASK_VALUE, on_value, l,
                               listen_free, &l->handle, &err);
    hearth_query_free(q);
    if (rc) {
        listen_free(l);
        reply(s, r, "invalid_args", json_string(err.message));
        return;
    }
    l->next = s->listens;
    s->listens = l;
    reply(s, r, "ok", NULL);
}

static void do_unlisten(session *s, json_int_t r, json_t *b) {
    const char *path = json_string_value(json_object_get(b, "p"));
    hearth_error_t err = {0};
    hearth_query_t *q = NULL;
    if (!path || wire_query(json_object_get(b, "q"), &q, &err)) {
        reply(s, r, "invalid_args", json_string(path ? err.message : "p is missing"));
        return;
    }
    char *identity = hearth__query_identity(q);
    hearth_query_free(q);
    for (listen_t **p = &s->listens; *p; p = &(*p)->next) {
        listen_t *l = *p;
        if (strcmp(l->path, path) == 0 && identity &&
            strcmp(l->identity, identity) == 0) {
            *p = l->next;
            hearth_db_remove_observer(s->ns->db, l->handle); /* frees l */
            break;
        }
    }
    hearth__free(identity);
    reply(s, r, "ok", NULL);
}

/* A write awaiting its commit answers its request then. */
typedef struct pending {
    session *s;
    json_int_t r;
} pending;

static void on_written(int status, void *ctx) {
    pending *p = ctx;
    if (!p->s->ws)
        return;
    if (status == HEARTH_EDENIED)
        deny(p->s, p->r);
    else
        reply(p->s, p->r, status ? "unavailable" : "ok",
              status ? json_string(hearth_strerror(status)) : NULL);
}

static void pending_free(void *ctx) {
    pending *p = ctx;
    session_release(p->s);
    hearth__free(p);
}

static pending *new_pending(session *s, json_int_t r) {
    pending *p = hearth__malloc(sizeof *p);
    if (p) {
        p->s = s;
        p->r = r;
        s->refs++;
    }
    return p;
}

/* A write refused before it was queued: its callbacks will never run. */
static void write_refused(session *s, pending *p, json_int_t r,
                          const hearth_error_t *err) {
    if (p)
        pending_free(p); /* the connection still holds the session */
    reply(s, r, err->code == HEARTH_ENOMEM ? "unavailable" : "invalid_args",
          json_string(err->message));
}

/* A put's value, checked as the write will be: path and data both valid. */
static int put_value(const char *path, json_t *data, hearth_node_t **out,
                     hearth_error_t *err) {
    hearth__path p;
    int rc = hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &p, err);
    return rc ? rc
              : hearth__node_from_jansson_at(data, HEARTH_JSON_ALLOW_SERVER_VALUES,
                                             path, p.n, out, err);
}

/* Compare-and-set's condition: whether the data at path still has the
 * hash the client saw. A mismatch pushes the current data (the client
 * reruns its transaction on it) and answers datastale. Both tell what the
 * data is, so only a reader may ask. Answers and returns false when the
 * write must not go on. */
static bool hash_matches(session *s, json_int_t r, const char *path,
                         const char *hash) {
    if (!may_read(s, path, NULL)) {
        deny(s, r);
        return false;
    }
    const hearth_node_t *current;
    char have[HEARTH_HASH_SIZE] = "";
    hearth_error_t err = {0};
    if (hearth_node_get(hearth__db_root(s->ns->db), path, &current, &err) ||
        hearth_node_hash(current, have)) {
        reply(s, r, "invalid_args", json_string(err.message));
        return false;
    }
    if (strcmp(have, hash) == 0)
        return true;
    push_data(s, path, current, NULL);
    reply(s, r, "datastale", json_string("hash mismatch"));
    return false;
}

static void do_put(session *s, json_int_t r, json_t *b) {
    const char *path = json_string_value(json_object_get(b, "p"));
    json_t *data = json_object_get(b, "d");
    json_t *hash = json_object_get(b, "h");
    hearth_error_t err = {0};
    hearth_node_t *value = NULL;
    if (!path || !data || (hash && !json_is_string(hash))) {
        reply(s, r, "invalid_args",
              json_string("p and d are required; h must be a string"));
        return;
    }
    if (put_value(path, data, &value, &err)) {
        reply(s, r, "invalid_args", json_string(err.message));
        return;
    }
    /* Compare-and-set: atomic, since nothing else runs on the loop. */
    if (hash && !hash_matches(s, r, path, json_string_value(hash))) {
        hearth_node_decref(value);
        return;
    }
    pending *pd = new_pending(s, r);
    int rc = pd ? judged_set(s, path, value, on_written, pd, pending_free, &err)
                : hearth__error_code(&err, HEARTH_ENOMEM);
    hearth_node_decref(value);
    if (rc)
        write_refused(s, pd, r, &err);
}

static void do_merge(session *s, json_int_t r, json_t *b) {
    const char *path = json_string_value(json_object_get(b, "p"));
    json_t *data = json_object_get(b, "d");
    if (!path || !json_is_object(data)) {
        reply(s, r, "invalid_args", json_string("p and an object d are required"));
        return;
    }
    hearth_error_t err = {0};
    pending *pd = new_pending(s, r);
    int rc = pd ? judged_update(s, path, data, on_written, pd, pending_free, &err)
                : hearth__error_code(&err, HEARTH_ENOMEM);
    if (rc)
        write_refused(s, pd, r, &err);
}

static void do_get(session *s, json_int_t r, json_t *b) {
    const char *path;
    hearth_query_t *q;
    hearth_error_t err = {0};
    hearth_node_t *value;
    if (!read_request(s, r, b, &path, &q))
        return;
    if (hearth_db_get(s->ns->db, path, q, &value, &err)) {
        hearth_query_free(q);
        reply(s, r, "invalid_args", json_string(err.message));
        return;
    }
    hearth_query_free(q);
    reply(s, r, "ok", hearth_node_to_jansson(value, HEARTH_JSON_EXPORT));
    hearth_node_decref(value);
}

/* Whether an onDisconnect write would be accepted when it runs: checked
 * when it is queued, so that the client hears about bad data. */
static bool ondisconnect_data_valid(const char *path, bool merge, json_t *data,
                                    hearth_error_t *err) {
    hearth_node_t *value = NULL;
    if (!merge) {
        int rc = put_value(path, data, &value, err);
        hearth_node_decref(value);
        return rc == 0;
    }
    if (!json_is_object(data)) {
        hearth__error(err, HEARTH_EINVAL, path, "an update's d must be an object");
        return false;
    }
    const char *key;
    json_t *v;
    json_object_foreach(data, key, v) {
        hearth__buf b;
        hearth__buf_init(&b);
        hearth__buf_adds(&b, path);
        hearth__buf_addc(&b, '/');
        hearth__buf_adds(&b, key);
        char *full = hearth__buf_detach(&b, NULL);
        bool ok = full && !hearth_validate_path(full, err) &&
                  !hearth__node_from_jansson_at(
                      v, HEARTH_JSON_ALLOW_SERVER_VALUES, full, 0, &value, err);
        if (!full)
            hearth__error(err, HEARTH_ENOMEM, NULL, "out of memory");
        hearth__free(full);
        hearth_node_decref(value);
        value = NULL;
        if (!ok)
            return false;
    }
    return true;
}

static void od_free(session *s, od_op *op) {
    s->nondisconnect--;
    s->ondisconnect_bytes -= op->bytes;
    hearth__free(op->path);
    json_decref(op->data);
    hearth__free(op);
}

static void do_ondisconnect(session *s, json_int_t r, const char *a, json_t *b) {
    const char *path = json_string_value(json_object_get(b, "p"));
    if (!path || hearth_validate_path(path, NULL)) {
        reply(s, r, "invalid_args", json_string("a valid p is required"));
        return;
    }
    if (strcmp(a, "oc") == 0) {
        /* Cancel what was set at path or below. */
        hearth__path cancel, at;
        hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &cancel, NULL);
        for (od_op **p = &s->ondisconnect; *p;) {
            od_op *op = *p;
            hearth__path_parse(op->path, HEARTH__PATH_ALLOW_PRIORITY, &at, NULL);
            if (hearth__path_is_prefix(&cancel, &at)) {
                *p = op->next;
                od_free(s, op);
            } else {
                p = &op->next;
            }
        }
        reply(s, r, "ok", NULL);
        return;
    }
    json_t *data = json_object_get(b, "d");
    hearth_error_t err = {0};
    if (data && !ondisconnect_data_valid(path, strcmp(a, "om") == 0, data, &err)) {
        reply(s, r, "invalid_args", json_string(err.message));
        return;
    }
    if (data && !may_write(s, path, data, strcmp(a, "om") == 0)) {
        deny(s, r); /* checked as queued, against the data now */
        return;
    }
    size_t bytes = data ? json_dumpb(data, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY) : 0;
    if (s->nondisconnect >= MAX_ONDISCONNECT ||
        bytes > MAX_ONDISCONNECT_BYTES - s->ondisconnect_bytes) {
        reply(s, r, "too_big",
              json_sprintf("This connection holds %zu onDisconnect writes "
                           "(%zu bytes); at most %d of %u bytes in all",
                           s->nondisconnect, s->ondisconnect_bytes,
                           MAX_ONDISCONNECT, MAX_ONDISCONNECT_BYTES));
        return;
    }
    od_op *op = hearth__calloc(1, sizeof *op);
    if (!data || !op || !(op->path = hearth__strndup(path, strlen(path)))) {
        hearth__free(op);
        reply(s, r, data ? "unavailable" : "invalid_args",
              json_string(data ? "out of memory" : "d is required"));
        return;
    }
    op->merge = strcmp(a, "om") == 0;
    op->data = json_incref(data);
    op->bytes = bytes;
    s->nondisconnect++;
    s->ondisconnect_bytes += bytes;
    od_op **tail = &s->ondisconnect;
    while (*tail)
        tail = &(*tail)->next;
    *tail = op;
    reply(s, r, "ok", NULL);
}

/* Runs the onDisconnect writes, in the order they were asked for. Each
 * is judged again as it runs, as the service does: against the data and
 * rules of that moment, as the identity the session has then (a session
 * that signed out writes as nobody). */
static void run_ondisconnect(session *s) {
    while (s->ondisconnect) {
        od_op *op = s->ondisconnect;
        s->ondisconnect = op->next;
        if (op->merge) {
            judged_update(s, op->path, op->data, NULL, NULL, NULL, NULL);
        } else {
            hearth_node_t *value;
            if (!put_value(op->path, op->data, &value, NULL)) {
                judged_set(s, op->path, value, NULL, NULL, NULL, NULL);
                hearth_node_decref(value);
            }
        }
        od_free(s, op);
    }
}

static void handle(session *s, json_t *msg) {
    const char *t = json_string_value(json_object_get(msg, "t"));
    json_t *d = json_object_get(msg, "d");
    if (t && strcmp(t, "c") == 0) {
        const char *ct = json_string_value(json_object_get(d, "t"));
        if (ct && strcmp(ct, "p") == 0) /* ping: pong */
            send_json(s, json_pack("{s:s,s:{s:s,s:{}}}", "t", "c", "d", "t", "o",
                                   "d"));
        return;
    }
    json_t *rj = json_object_get(d, "r");
    const char *a = json_string_value(json_object_get(d, "a"));
    json_t *b = json_object_get(d, "b");
    if (!t || strcmp(t, "d") != 0 || !json_is_integer(rj) || !a ||
        !json_is_object(b)) {
        if (json_is_integer(rj))
            reply(s, json_integer_value(rj), "invalid_args",
                  json_string("malformed request"));
        return;
    }
    json_int_t r = json_integer_value(rj);
    if (strcmp(a, "q") == 0)
        do_listen(s, r, b);
    else if (strcmp(a, "n") == 0)
        do_unlisten(s, r, b);
    else if (strcmp(a, "p") == 0)
        do_put(s, r, b);
    else if (strcmp(a, "m") == 0)
        do_merge(s, r, b);
    else if (strcmp(a, "g") == 0)
        do_get(s, r, b);
    else if (!strcmp(a, "o") || !strcmp(a, "om") || !strcmp(a, "oc"))
        do_ondisconnect(s, r, a, b);
    else if (!strcmp(a, "auth") || !strcmp(a, "gauth"))
        do_auth(s, r, b);
    else if (!strcmp(a, "unauth"))
        do_unauth(s, r);
    else if (!strcmp(a, "s"))
        reply(s, r, "ok", NULL);
    else
        reply(s, r, "invalid_args", json_string("unknown action"));
}

static void on_message(void *user, const char *text, size_t len) {
    session *s = user;
    const char *joined;
    size_t joined_len;
    int rc = hearth__v5_join(&s->pieces, text, len, &joined, &joined_len);
    if (rc < 0) {
        /* The pieces pass what one message may hold: end this one
         * connection rather than buffer without bound. */
        if (s->ws)
            hearth__ws_close(s->ws);
        return;
    }
    if (rc == HEARTH__V5_MORE)
        return;
    json_t *msg = hearth__v5_parse(joined, joined_len);
    hearth__v5_joiner_reset(&s->pieces); /* a joined message's memory */
    if (msg)
        handle(s, msg);
    json_decref(msg);
}

static void unlink_session(session *s) {
    if (s->prev)
        s->prev->next = s->next;
    else if (s->srv->sessions == s)
        s->srv->sessions = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

/* Ends the session's listens it may no longer read: the client cancels
 * its registrations there. */
static void recheck_session(session *s) {
    for (listen_t **p = &s->listens; *p;) {
        listen_t *l = *p;
        if (may_read(s, l->path, l->wire_query)) {
            p = &l->next;
            continue;
        }
        json_t *body = json_pack("{s:s}", "p", l->path);
        if (body && l->wire_query)
            json_object_set(body, "q", l->wire_query);
        if (body)
            send_json(s, json_pack("{s:s,s:{s:s,s:o}}", "t", "d", "d", "a",
                                   "c", "b", body));
        *p = l->next;
        hearth_db_remove_observer(s->ns->db, l->handle); /* frees l */
    }
}

void hearth__realtime_recheck(hearth__server *srv, hearth__namespace *ns) {
    for (session *s = srv->sessions; s; s = s->next)
        if (s->ns == ns && s->ws)
            recheck_session(s);
}

void hearth__realtime_expire(hearth__server *srv, int64_t now_ms) {
    for (session *s = srv->sessions; s; s = s->next) {
        if (!s->ws || !hearth__principal_expired(&s->who, now_ms))
            continue;
        hearth__principal_clear(&s->who);
        send_json(s, json_pack("{s:s,s:{s:s,s:{s:s,s:s}}}", "t", "d", "d", "a",
                               "ac", "b", "s", "expired_token", "d",
                               "Auth token is expired."));
        recheck_session(s);
    }
}

static void on_close(void *user) {
    session *s = user;
    s->ws = NULL;
    unlink_session(s);
    run_ondisconnect(s);
    while (s->listens) {
        listen_t *l = s->listens;
        s->listens = l->next;
        hearth_db_remove_observer(s->ns->db, l->handle);
    }
    hearth__ns_release(s->srv, s->ns); /* what is left never uses it */
    session_release(s);
}

void hearth__realtime_accept(hearth__server *srv, hearth__http_conn *conn,
                             const hearth__http_request *req,
                             hearth__namespace *ns) {
    session *s = hearth__calloc(1, sizeof *s);
    if (!s) {
        hearth__http_respond(conn, 503, "application/json", NULL,
                             "{\"error\":\"out of memory\"}", 25);
        return;
    }
    s->srv = srv;
    s->ns = ns;
    s->refs = 1;
    hearth__v5_joiner_init(&s->pieces, HEARTH__V5_MAX_TO_SERVER);
    /* The request is gone once the connection is upgraded: keep its host
     * for the hello. */
    const char *host_header = hearth__http_get_header(req, "host");
    if (!host_header)
        host_header = "localhost";
    char *host = hearth__strndup(host_header, strlen(host_header));
    int rc = host ? hearth__ws_accept(conn, req, on_message, on_close, s, &s->ws)
                  : HEARTH_ENOMEM;
    if (rc == HEARTH_EINVAL) {
        hearth__free(host);
        hearth__free(s);
        hearth__http_respond(conn, 400, "application/json", NULL,
                             "{\"error\":\"not a WebSocket request\"}", 35);
        return;
    }
    if (rc) {
        if (!host)
            hearth__http_respond(conn, 503, "application/json", NULL,
                                 "{\"error\":\"out of memory\"}", 25);
        hearth__free(host);
        hearth__free(s);
        return;
    }
    /* Open: rules changes check its listens; the namespace stays open
     * until the connection closes. */
    hearth__ns_hold(ns);
    s->next = srv->sessions;
    if (srv->sessions)
        srv->sessions->prev = s;
    srv->sessions = s;
    /* The hello: server time, version, host, session id. */
    static atomic_ullong sessions; /* servers may share the process */
    char sid[32];
    snprintf(sid, sizeof sid, "hearth-%llu",
             (unsigned long long)atomic_fetch_add(&sessions, 1) + 1);
    json_t *h = json_string(host); /* NULL when not UTF-8 */
    hearth__free(host);
    send_json(s, json_pack("{s:s,s:{s:s,s:{s:I,s:s,s:o,s:s}}}", "t", "c", "d", "t",
                           "h", "d", "ts", (json_int_t)hearth_now_ms(), "v", "5",
                           "h", h ? h : json_string("localhost"), "s", sid));
}
