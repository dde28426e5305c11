/* rest_write.c - the REST writes (PUT, POST, PATCH, DELETE): bodies parsed
 * on the loop or, when large, on a worker; writes judged by the rules as
 * the caller; the answer sent after the commit, echoing what was written. */
#include "server/rest_internal.h"

#include "tree/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A set judged by the rules as the caller when it is applied (the admin
 * is not judged); a refusal completes with HEARTH_EDENIED. */
static int judged_set(rest *r, const char *path, const hearth_node_t *value,
                      const char *if_hash, void *reply_ctx,
                      hearth_error_t *err);


/* A write is answered after its commit, with the reply prepared when it
 * was applied (the data as written, server values resolved). Two owners:
 * the database's completion and the handler; whichever comes second sends
 * (the completion can run before the handler has prepared the reply). */
typedef struct echo_later echo_later;
typedef struct pending_reply {
    int refs;
    hearth__http_conn *conn;
    bool prepared, completed;
    int status;
    char *body;
    size_t len;
    char *headers;
    bool silent;
    echo_later *later; /* a cluster node's echo, made at the completion */
} pending_reply;

/* On a cluster node the write is ordered by the leader and reaches this
 * node's tree by the time it completes (forward.c acknowledges once the
 * tail has applied it): its echo and ETag are made then, from the data
 * here, as one server makes them when it applies the write. What the
 * request said that they need is kept until then. */
struct echo_later {
    hearth__server *srv;
    hearth__namespace *ns; /* held open until then */
    char *path, *callback;
    unsigned json_flags;
    bool want_etag;
    hearth__principal who;
    hearth_node_t *sent; /* the echo to a caller who may not read it */
};

static echo_later *echo_later_create(const rest *r, const hearth_node_t *sent) {
    echo_later *l = hearth__calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->path = hearth__strndup(r->path, strlen(r->path));
    l->callback = r->callback ? hearth__strndup(r->callback, strlen(r->callback))
                              : NULL;
    if (!l->path || (r->callback && !l->callback)) {
        hearth__free(l->path);
        hearth__free(l->callback);
        hearth__free(l);
        return NULL;
    }
    l->srv = r->srv;
    l->ns = r->ns;
    hearth__ns_hold(r->ns);
    l->json_flags = r->json_flags;
    l->want_etag = r->want_etag;
    l->who = r->who;
    l->who.auth = r->who.auth ? hearth_node_incref(r->who.auth) : NULL;
    l->sent = hearth_node_incref(sent);
    return l;
}

static void echo_later_free(echo_later *l) {
    if (!l)
        return;
    hearth__ns_release(l->srv, l->ns);
    hearth__principal_clear(&l->who);
    hearth_node_decref(l->sent);
    hearth__free(l->path);
    hearth__free(l->callback);
    hearth__free(l);
}

/* The body and headers of a write's answer: echo, and for a caller who
 * may read the data the ETag of what the path holds. */
static void make_body(pending_reply *p, const rest *r,
                      const hearth_node_t *echo, bool readable) {
    p->body = hearth__rest_render(r, echo, &p->len);
    if (r->want_etag && readable) {
        char etag[HEARTH_HASH_SIZE + 16];
        hearth__rest_etag_of(hearth__rest_value_at(r), etag);
        size_t n = strlen(etag) + 16;
        p->headers = hearth__malloc(n);
        if (p->headers)
            snprintf(p->headers, n, "ETag: %s\r\n", etag);
    }
}

/* The echo made now, the write applied here (readers see the data as
 * stored; others what they sent). */
static void echo_now(pending_reply *p) {
    echo_later *l = p->later;
    rest r = {.srv = l->srv, .conn = p->conn, .path = l->path, .ns = l->ns,
              .json_flags = l->json_flags, .want_etag = l->want_etag,
              .callback = l->callback, .who = l->who};
    bool readable = hearth__rest_may_read_here(&r);
    make_body(p, &r, readable ? hearth__rest_value_at(&r) : l->sent, readable);
}

static void send_reply(pending_reply *p) {
    if (p->later && !p->status)
        echo_now(p);
    echo_later_free(p->later);
    p->later = NULL;
    if (!p->status && !p->body && !p->silent)
        p->status = HEARTH_ENOMEM; /* the echo could not be made */
    if (p->status)
        hearth__rest_reply_failure(p->conn, p->status, NULL);
    else if (p->silent)
        hearth__http_respond(p->conn, 204, NULL, p->headers, "", 0);
    else
        hearth__http_respond(p->conn, 200, JSON_TYPE, p->headers, p->body,
                             p->len);
}

static void release_reply(void *ctx) {
    pending_reply *p = ctx;
    if (--p->refs > 0)
        return;
    echo_later_free(p->later);
    hearth__free(p->body);
    hearth__free(p->headers);
    hearth__free(p);
}

static void on_write_done(int status, void *ctx) {
    pending_reply *p = ctx;
    p->status = status;
    p->completed = true;
    if (p->prepared)
        send_reply(p);
}

static pending_reply *new_reply(const rest *r) {
    pending_reply *p = hearth__calloc(1, sizeof *p);
    if (p) {
        p->refs = 2;
        p->conn = r->conn;
        p->silent = r->silent;
    }
    return p;
}

/* The handler's part, once the write is applied: the body, then sending
 * if the commit already happened. */
static void prepared(pending_reply *p) {
    if (!p->body && !p->later) {
        p->body = hearth__strndup("null", 4);
        p->len = p->body ? 4 : 0;
    }
    p->prepared = true;
    if (p->completed)
        send_reply(p);
    release_reply(p);
}

/* The reply to a write: echo (the data now, or for callers who may not
 * read it what they sent), and the ETag only for those who may. */
static void prepare_reply(pending_reply *p, const rest *r,
                          const hearth_node_t *echo, bool readable) {
    make_body(p, r, echo, readable);
    prepared(p);
}

/* Whether the echo is the data as applied: for those who may read it,
 * where the write is applied at once. Where it is not (a cluster's leader
 * orders it), a PUT's echo is made at its completion (echo_later), a
 * PATCH's is what was sent. */
static bool echo_applied(const rest *r) {
    return r->srv->keeper->ops->applies_at_once &&
           hearth__rest_may_read_here(r);
}

/* Whether a write's echo waits for its completion (echo_later). */
static bool echo_waits(const rest *r) {
    return !r->srv->keeper->ops->applies_at_once;
}

/* An if-match's ETag as the hash the write is conditional on (NULL:
 * none), checked again where the write is ordered (a cluster's leader). */
static const char *if_match_hash(const rest *r, char hash[HEARTH_HASH_SIZE]) {
    const char *want = hearth__http_get_header(r->req, "if-match");
    if (!want)
        return NULL;
    if (strcmp(want, "null_etag") == 0)
        return hearth_node_hash(hearth__node_empty(), hash) ? NULL : hash;
    if (strlen(want) >= HEARTH_HASH_SIZE)
        return NULL; /* no hash matches it: check_if_match refused it */
    strcpy(hash, want);
    return hash;
}

static int parse_body(const rest *r, const char *base, hearth_node_t **out,
                      hearth_error_t *err) {
    hearth__path p;
    unsigned depth = hearth__path_parse(base, HEARTH__PATH_ALLOW_PRIORITY, &p,
                                        NULL)
                         ? 0
                         : p.n;
    return hearth__node_from_json_at(r->req->body, r->req->body_len,
                                     HEARTH_JSON_ALLOW_SERVER_VALUES, base,
                                     depth, out, err);
}

/* A PUT's value, parsed: answered when the condition fails; else set,
 * applied (or refused) now, on the loop thread, and answered at its
 * commit. The echo is the data as stored (server values resolved), which
 * only a reader may see. */
static void put_value(rest *r, const hearth_node_t *value) {
    if (!hearth__rest_check_if_match(r))
        return;
    hearth_error_t err;
    pending_reply *p = new_reply(r);
    char hash[HEARTH_HASH_SIZE];
    int rc = p ? judged_set(r, r->path, value, if_match_hash(r, hash), p, &err)
               : hearth__error_code(&err, HEARTH_ENOMEM);
    if (rc) {
        hearth__free(p);
        hearth__rest_reply_failure(r->conn, rc, &err);
        return;
    }
    if (echo_waits(r) && (p->later = echo_later_create(r, value))) {
        prepared(p);
        return;
    }
    bool readable = echo_applied(r);
    prepare_reply(p, r, readable ? hearth__rest_value_at(r) : value, readable);
}

/* Who r's write is judged as (NULL: the admin, not judged), with
 * triggers=off (the admin's alone: checked before) carried along. */
static const hearth__db_caller *caller_of(const rest *r,
                                          hearth__db_caller *buf) {
    const hearth__db_caller *who = hearth__principal_caller(&r->who, buf);
    if (!r->quiet)
        return who;
    if (!who)
        *buf = (hearth__db_caller){.door = r->who.door, .unjudged = true};
    buf->quiet = true;
    return buf;
}

static int judged_set(rest *r, const char *path, const hearth_node_t *value,
                      const char *if_hash, void *reply_ctx,
                      hearth_error_t *err) {
    hearth__db_caller caller;
    return hearth__db_set_if_as(r->ns->db, caller_of(r, &caller),
                             if_hash, path, value, on_write_done, reply_ctx,
                             release_reply, err);
}

/* A POST's value under a new push ID (made first: the rules see the write
 * at its own location); the answer names the key. */
static void post_value(rest *r, const hearth_node_t *value) {
    hearth_error_t err;
    static hearth_push_id_state_t ids; /* the server's loop thread only */
    char key[HEARTH_PUSH_ID_SIZE];
    hearth_push_id(&ids, hearth_now_ms(), key);
    hearth__buf where;
    hearth__buf_init(&where);
    hearth__buf_printf(&where, "%s/%s", strcmp(r->path, "/") ? r->path : "", key);
    char *child = hearth__buf_detach(&where, NULL);
    pending_reply *p = child ? new_reply(r) : NULL;
    int rc = p ? judged_set(r, child, value, NULL, p, &err)
               : hearth__error_code(&err, HEARTH_ENOMEM);
    hearth__free(child);
    if (rc) {
        hearth__free(p);
        hearth__rest_reply_failure(r->conn, rc, &err);
        return;
    }
    hearth_node_t *name = hearth_node_null();
    hearth_node_t *k = hearth_node_string(key, strlen(key));
    if (k)
        hearth_node_set_child_new(&name, "name", k, NULL);
    rest plain = *r;
    plain.json_flags &= ~HEARTH_JSON_EXPORT;
    prepare_reply(p, &plain, name, false);
    hearth_node_decref(name);
}

/* A PATCH's parts, applied as one write; the echo gives each updated path
 * with what it holds now, or to a caller who may not read it what it
 * sent. */
static void patch_parts(rest *r, const hearth__update_parts *u) {
    hearth_error_t err;
    pending_reply *p = new_reply(r);
    hearth__db_caller caller;
    int rc = p ? hearth__db_update_parts_as(
                     r->ns->db, caller_of(r, &caller),
                     r->path, u, on_write_done, p, release_reply, &err)
               : hearth__error_code(&err, HEARTH_ENOMEM);
    if (rc) {
        hearth__free(p);
        hearth__rest_reply_failure(r->conn, rc, &err);
        return;
    }
    bool readable = echo_applied(r);
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__rest_jsonp_open(r, &b);
    hearth__buf_addc(&b, '{');
    bool first = true;
    for (size_t i = 0; i < u->n; i++) {
        const char *key = u->paths[i];
        const hearth_node_t *now = NULL;
        if (readable) {
            hearth__buf full;
            hearth__buf_init(&full);
            hearth__buf_printf(&full, "%s/%s", r->path, key);
            char *at = hearth__buf_detach(&full, NULL);
            if (!at || hearth_node_get(hearth__db_root(r->ns->db), at, &now, NULL))
                now = NULL;
            hearth__free(at);
            if (!now)
                continue;
        }
        if (!first)
            hearth__buf_addc(&b, ',');
        first = false;
        hearth__json_write_string(&b, key, strlen(key));
        hearth__buf_addc(&b, ':');
        if (now) {
            hearth__node_write_json(&b, now, r->json_flags & ~HEARTH_JSON_PRETTY);
        } else {
            char *sent = json_dumps(json_object_get(u->obj, key),
                                    JSON_COMPACT | JSON_ENCODE_ANY);
            hearth__buf_adds(&b, sent ? sent : "null");
            free(sent);
        }
    }
    hearth__buf_addc(&b, '}');
    hearth__rest_jsonp_close(r, &b);
    p->body = hearth__buf_detach(&b, &p->len);
    prepared(p);
}

/* ---- bodies: parsed on the loop when small, on a worker when large ---- */

/* Bodies from this size on are parsed on a worker thread (jansson, then
 * the nodes: pure work on the request alone), so that one large write
 * never holds every other client: parsing 1,000,000 keys takes about a
 * second. What must see the data in order (rules, apply, log) stays on
 * the loop. */
#define OFF_LOOP_BODY (256 * 1024)

/* A write's body, parsed: the value (PUT, POST) or the update's parts. */
typedef struct parsed_body {
    int rc;
    hearth_error_t err;
    hearth_node_t *value;
    hearth__update_parts parts;
} parsed_body;

/* Any thread: reads only the request. */
static void parse_request_body(const rest *r, parsed_body *b) {
    memset(b, 0, sizeof *b);
    if (r->method == HTTP_PATCH)
        b->rc = hearth__update_parts_parse(r->path, r->req->body,
                                           r->req->body_len, &b->parts, &b->err);
    else
        b->rc = parse_body(r, r->path, &b->value, &b->err);
}

/* Loop thread: answers a body that did not parse, else writes it. */
static void write_parsed(rest *r, parsed_body *b) {
    if (b->rc && r->method == HTTP_PATCH && b->parts.obj &&
        !json_is_object(b->parts.obj))
        hearth__rest_reply_error(r->conn, 400, MSG_BAD_DATA);
    else if (b->rc)
        hearth__rest_reply_failure(r->conn, b->rc, &b->err);
    else if (r->method == HTTP_PATCH)
        patch_parts(r, &b->parts);
    else if (r->method == HTTP_POST)
        post_value(r, b->value);
    else
        put_value(r, b->value);
    hearth_node_decref(b->value);
    hearth__update_parts_free(&b->parts);
}

typedef struct body_job {
    uv_work_t work;
    rest r; /* the request, moved here (valid until answered) */
    parsed_body body;
} body_job;

static void parse_on_worker(uv_work_t *w) {
    body_job *j = w->data;
    parse_request_body(&j->r, &j->body);
}

static void parsed_on_loop(uv_work_t *w, int status) {
    body_job *j = w->data;
    if (status) { /* canceled: the server is stopping */
        j->body.rc = hearth__error(&j->body.err, HEARTH_ECANCELED, NULL,
                                   "the server is stopping");
    }
    write_parsed(&j->r, &j->body);
    hearth__ns_release(j->r.srv, j->r.ns);
    hearth__rest_free(&j->r);
    hearth__free(j);
}

/* PUT, POST and PATCH. A large body moves the request to a job (r is
 * left empty) whose answer comes when the worker is done; the namespace
 * is held open until then. */
void hearth__rest_write(rest *r) {
    if (r->req->body_len >= OFF_LOOP_BODY) {
        body_job *j = hearth__calloc(1, sizeof *j);
        if (j) {
            j->r = *r;
            j->work.data = j;
            hearth__ns_hold(r->ns);
            if (uv_queue_work(&r->srv->loop, &j->work, parse_on_worker,
                              parsed_on_loop) == 0) {
                memset(r, 0, sizeof *r);
                return;
            }
            hearth__ns_release(r->srv, r->ns);
            hearth__free(j);
        }
        /* No memory or no worker: parse here, as small bodies are. */
    }
    parsed_body b;
    parse_request_body(r, &b);
    write_parsed(r, &b);
}

void hearth__rest_delete(rest *r) {
    if (!hearth__rest_check_if_match(r))
        return;
    hearth_error_t err;
    pending_reply *p = new_reply(r);
    char hash[HEARTH_HASH_SIZE];
    int rc = p ? judged_set(r, r->path, hearth__node_empty(),
                            if_match_hash(r, hash), p, &err)
               : hearth__error_code(&err, HEARTH_ENOMEM);
    if (rc) {
        hearth__free(p);
        hearth__rest_reply_failure(r->conn, rc, &err);
        return;
    }
    if (echo_waits(r) &&
        (p->later = echo_later_create(r, hearth__node_empty()))) {
        prepared(p); /* the ETag of the data once deleted here */
        return;
    }
    prepare_reply(p, r, hearth__node_empty(), hearth__rest_may_read_here(r));
}
