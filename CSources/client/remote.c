/* remote.c - the client side of the realtime protocol: the connection's
 * life (connect, hello, restore, backoff), requests and their answers, the
 * server's pushes into the sync tree, and transactions. */
#include "client/remote.h"

#include "client/disk.h"
#include "client/ondisconnect.h"
#include "client/ws_client.h"
#include "common/v5.h"
#include "tree/codec.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    FIRST_DELAY_MS = 1000,    /* reconnect backoff: from 1 s */
    MAX_DELAY_MS = 30000,     /* to 30 s */
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
    struct listen_rec *next;
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
    struct write_rec *next;
} write_rec;

typedef struct get_rec {
    json_t *body;
    bool sent;
    uint64_t deadline;       /* loop time by which it must be sent */
    char *path;
    hearth_query_t *query;
    hearth__remote_get_done done;
    void *arg;
    struct get_rec *next;
} get_rec;

/* A request in flight on this connection. */
typedef struct outreq {
    int64_t r;
    req_kind kind;
    void *item;
    struct outreq *next;
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
    tx *next;            /* in the client's queue, oldest first; then in
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
    batch *next;
};

struct hearth__remote {
    uv_loop_t *loop;
    hearth__remote_url url;
    char resource[256];
    hearth__sync sync;
    hearth__remote_hooks hooks;

    hearth__wsc *ws;       /* NULL when not connected */
    bool connected;        /* hello received */
    bool ready;            /* and the credential settled: requests may go */
    char *auth_token;      /* sent first on every connection; NULL: none */
    bool want_token;       /* ask the owner for one on every connection */
    bool awaiting_token;   /* asked; nothing goes out until it answers */
    bool online;           /* wanted: goOnline / goOffline */
    bool closing;
    bool shut_down;        /* the server said stop */
    uv_timer_t retry;
    uv_timer_t get_timer;  /* fails gets that waited too long to be sent */
    uv_timer_t save_timer; /* stores changed server data, coalesced */
    int open_handles;
    hearth__disk *disk;    /* the cache on disk, or NULL */
    uint64_t delay_ms;
    int64_t next_r;
    int64_t next_write;
    int64_t time_offset;   /* server clock minus ours, ms */

    /* v5 pieces of a long message, up to what one message may hold */
    hearth__v5_joiner pieces;

    listen_rec *listens;
    write_rec *writes, *writes_tail;
    get_rec *gets;
    outreq *reqs;
    tx *txs, *txs_tail;
    tx *finished, *finished_tail; /* their completions still to run */
    batch *batches;
    hearth_observer_t next_handle; /* internal registrations */
    hearth__od_list on_disconnect; /* what the server will write when the
                                      connection ends */
};

/* ---- logging ---- */

static atomic_bool logging;

void hearth_set_logging(bool enabled) { atomic_store(&logging, enabled); }

static void log_message(char direction, const char *text, size_t len) {
    if (atomic_load_explicit(&logging, memory_order_relaxed))
        fprintf(stderr, "hearth: %c %.*s\n", direction,
                len > 2000 ? 2000 : (int)len, text);
}

/* ---- URLs ---- */

int hearth__remote_parse_url(const char *url, hearth__remote_url *out,
                             hearth_error_t *err) {
    memset(out, 0, sizeof *out);
    if (!url)
        return hearth__error(err, HEARTH_EINVAL, NULL, "url is NULL");
    const char *rest;
    if (!strncmp(url, "http://", 7) || !strncmp(url, "ws://", 5)) {
        rest = strstr(url, "//") + 2;
    } else if (!strncmp(url, "https://", 8) || !strncmp(url, "wss://", 6)) {
        rest = strstr(url, "//") + 2;
        out->tls = true;
    } else {
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "database URL \"%.64s\" must start with http://, "
                             "https://, ws:// or wss://",
                             url);
    }
    size_t hostlen = strcspn(rest, ":/?");
    if (hostlen == 0 || hostlen >= sizeof out->host)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "database URL \"%.64s\" has no host", url);
    memcpy(out->host, rest, hostlen);
    rest += hostlen;
    out->port = out->tls ? 443 : 80;
    if (*rest == ':') {
        char *end;
        long port = strtol(rest + 1, &end, 10);
        if (end == rest + 1 || port <= 0 || port > 65535)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "database URL \"%.64s\" has a bad port", url);
        out->port = (int)port;
        rest = end;
    }
    const char *ns = strstr(rest, "ns=");
    if (ns && (ns[-1] == '?' || ns[-1] == '&')) {
        size_t len = strcspn(ns + 3, "&#");
        if (len == 0 || len >= sizeof out->ns)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "database URL \"%.64s\" has a bad ns", url);
        memcpy(out->ns, ns + 3, len);
    } else if (strspn(out->host, "0123456789.:") == strlen(out->host) ||
               !strchr(out->host, '.')) {
        /* An address or a bare host name (localhost): a local server's
         * default namespace. */
        strcpy(out->ns, "default");
    } else {
        /* NAME.firebaseio.com and the like: the first label. */
        size_t len = strcspn(out->host, ".");
        if (len >= sizeof out->ns)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "database URL \"%.64s\" has a namespace "
                                 "over %zu bytes",
                                 url, sizeof out->ns - 1);
        memcpy(out->ns, out->host, len);
    }
    return 0;
}

/* ---- sending ---- */

static void raise_events(hearth__remote *r) { r->hooks.raise(r->hooks.ctx); }

static int status_code(const char *status);
static bool same_path(const hearth__path *a, const hearth__path *b);

static char *path_text(const hearth__path *p) {
    char buf[HEARTH_MAX_DEPTH * (HEARTH_MAX_KEY_BYTES + 1) + 64];
    hearth__path_format(p, p->n, buf, sizeof buf);
    size_t len = strlen(buf);
    if (p->priority) {
        snprintf(buf + len, sizeof buf - len, "%s.priority", len > 1 ? "/" : "");
        len = strlen(buf);
    }
    if (len == 0)
        return hearth__strndup("/", 1);
    return hearth__strndup(buf, len);
}

static int send_frame(void *ws, const char *frame, size_t len) {
    return hearth__wsc_send(ws, frame, len);
}

/* Sends one message, in v5 pieces when long; HEARTH_ETOOBIG past what the
 * server joins (it would drop the connection, and the message would be
 * sent again on the next one). */
static int send_text(hearth__remote *r, const char *text, size_t len) {
    if (!r->ws)
        return HEARTH_ECLOSED;
    log_message('>', text, len);
    return hearth__v5_send(text, len, HEARTH__V5_MAX_TO_SERVER, send_frame,
                           r->ws);
}

static int send_json(hearth__remote *r, json_t *msg) {
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!text)
        return HEARTH_ENOMEM;
    int rc = send_text(r, text, strlen(text));
    free(text);
    return rc;
}

/* Sends a request and remembers what its answer is for. */
static int send_request(hearth__remote *r, const char *action, json_t *body,
                        req_kind kind, void *item) {
    outreq *q = hearth__malloc(sizeof *q);
    if (!q)
        return HEARTH_ENOMEM;
    int64_t n = ++r->next_r;
    json_t *msg = json_pack("{s:s,s:{s:I,s:s,s:O}}", "t", "d", "d", "r",
                            (json_int_t)n, "a", action, "b", body);
    int rc = msg ? send_json(r, msg) : HEARTH_ENOMEM;
    if (rc) {
        hearth__free(q);
        return rc;
    }
    *q = (outreq){n, kind, item, r->reqs};
    r->reqs = q;
    return 0;
}

static outreq *take_request(hearth__remote *r, int64_t n) {
    for (outreq **p = &r->reqs; *p; p = &(*p)->next)
        if ((*p)->r == n) {
            outreq *q = *p;
            *p = q->next;
            return q;
        }
    return NULL;
}

/* Forgets requests for item (it is going away). */
static void drop_requests_for(hearth__remote *r, const void *item) {
    for (outreq **p = &r->reqs; *p;) {
        if ((*p)->item == item) {
            outreq *q = *p;
            *p = q->next;
            hearth__free(q);
        } else {
            p = &(*p)->next;
        }
    }
}

/* ---- .info ---- */

static void set_info(hearth__remote *r, const char *key, hearth_node_t *value) {
    hearth__path p;
    char text[64];
    snprintf(text, sizeof text, ".info/%s", key);
    if (!value || hearth__path_parse(text, HEARTH__PATH_ALLOW_INFO, &p, NULL)) {
        hearth_node_decref(value);
        return;
    }
    hearth__sync_server_set(&r->sync, &p, value, 0);
    hearth_node_decref(value);
}

static bool is_info(const char *path) { return !strncmp(path, "/.info", 6); }

/* The client's own locations: the sync tree keeps data only where views
 * are, so a new view under .info is given the current values. */
static void publish_info(hearth__remote *r) {
    set_info(r, "serverTimeOffset", hearth_node_number((double)r->time_offset));
    set_info(r, "connected", hearth_node_boolean(r->connected));
}

/* ---- the cache on disk ---- */

enum { SAVE_DELAY_MS = 100 }; /* server data is stored at most this late */

/* A view's name in the cache: "PATH|QUERY". */
static char *view_key(const char *path, const hearth_query_t *q) {
    char *identity = hearth__query_identity(q);
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_adds(&b, path);
    hearth__buf_addc(&b, '|');
    hearth__buf_adds(&b, identity ? identity : "default");
    hearth__free(identity);
    return hearth__buf_detach(&b, NULL);
}

static void save_views(hearth__remote *r);

static void on_save_timer(uv_timer_t *t) { save_views(t->data); }

static void schedule_save(hearth__remote *r) {
    if (r->disk && !r->closing && !uv_is_active((uv_handle_t *)&r->save_timer))
        uv_timer_start(&r->save_timer, on_save_timer, SAVE_DELAY_MS, 0);
}

/* The data stored under a view's name (new reference), or NULL. */
static hearth_node_t *stored_data(hearth__remote *r, const char *key) {
    size_t len = 0;
    void *data = key ? hearth__disk_get(r->disk, key, &len) : NULL;
    hearth_node_t *node = NULL;
    if (data && hearth__node_decode(data, len, &node))
        node = NULL; /* damaged: as if nothing were stored */
    hearth__free(data);
    return node;
}

/* Stored data a new view starts from (new reference), or NULL. */
static hearth_node_t *stored_view(hearth__remote *r, const char *path,
                                  const hearth_query_t *q) {
    if (!r->disk)
        return NULL;
    char *key = view_key(path, q);
    hearth_node_t *node = stored_data(r, key);
    hearth__free(key);
    return node;
}

static bool is_stored(hearth__remote *r, const char *key) {
    size_t n = 0;
    char **keys = hearth__disk_views(r->disk, key, &n);
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        found = found || !strcmp(keys[i], key);
        hearth__free(keys[i]);
    }
    hearth__free(keys);
    return found;
}

/* The data at path from a default view stored at path or above it (new
 * reference), or NULL. */
static hearth_node_t *stored_above(hearth__remote *r, const char *text,
                                   const hearth__path *path) {
    hearth__spath sp;
    hearth__spath_from(&sp, path);
    size_t end = 1; /* text[0, end) names the first i keys ("/": none) */
    for (unsigned i = 0; i <= sp.n; i++) {
        char *above = hearth__strndup(text, end);
        hearth_node_t *node = above ? stored_view(r, above, NULL) : NULL;
        hearth__free(above);
        if (node) {
            hearth_node_t *out =
                hearth_node_incref(hearth__sync_get(node, sp.seg + i, sp.n - i));
            hearth_node_decref(node);
            return out;
        }
        if (i < sp.n) {
            const char *slash = strchr(text + end + (i ? 1 : 0), '/');
            end = slash ? (size_t)(slash - text) : strlen(text);
        }
    }
    return NULL;
}

/* out with the children stored views hold whole at text: the windows of
 * views there ("TEXT|QUERY") and the data of default views just below
 * ("TEXT/KEY|default"). New reference; NULL when out of memory. */
static hearth_node_t *stored_children(hearth__remote *r, const char *text,
                                      hearth_node_t *out) {
    static const char dflt[] = "|default";
    for (int below = 0; below < 2 && out; below++) {
        hearth__buf b;
        hearth__buf_init(&b);
        hearth__buf_adds(&b, strcmp(text, "/") ? text : "");
        hearth__buf_addc(&b, below ? '/' : '|');
        char *prefix = hearth__buf_detach(&b, NULL);
        size_t n = 0, plen = prefix ? strlen(prefix) : 0;
        char **keys = prefix ? hearth__disk_views(r->disk, prefix, &n) : NULL;
        for (size_t i = 0; i < n; i++) {
            const char *rest = keys[i] + plen;
            size_t rlen = strlen(rest), klen = rlen - (sizeof dflt - 1);
            bool child = below && rlen > sizeof dflt - 1 &&
                         !strcmp(rest + klen, dflt) && !memchr(rest, '/', klen);
            bool here = !below && (!strcmp(rest, "default") || rest[0] == '{');
            hearth_node_t *node = out && (child || here) ? stored_data(r, keys[i])
                                                         : NULL;
            hearth_node_t *with = NULL;
            if (node && child) {
                hearth__name name;
                hearth__name_init(&name, rest, klen);
                with = !hearth__node_is_empty(hearth__sync_get(out, &name, 1))
                           ? hearth_node_incref(out)
                           : hearth__sync_update(out, &name, 1, node);
            } else if (node) {
                with = hearth__sync_add_children(out, node);
            }
            if (node) {
                hearth_node_decref(out);
                out = with;
            }
            hearth_node_decref(node);
            hearth__free(keys[i]);
        }
        hearth__free(keys);
        hearth__free(prefix);
    }
    return out;
}

/* The sync tree's question for a new view with nothing complete in
 * memory: what the cache on disk knows at path. A view stored under the
 * same name is applied whole by hearth__remote_observe; else a default
 * view at or above path has it all; else the children stored views hold
 * whole (the view shows them, its value waits for the server). */
static hearth_node_t *stored_for_view(void *ctx, const hearth__path *path,
                                      const hearth_query_t *q,
                                      bool *complete) {
    hearth__remote *r = ctx;
    if (!r->disk || path->info || path->priority)
        return NULL;
    char *text = path_text(path);
    char *exact = text ? view_key(text, q) : NULL;
    hearth_node_t *out = NULL;
    if (exact && !is_stored(r, exact)) {
        out = stored_above(r, text, path);
        *complete = out != NULL;
        if (!out)
            out = stored_children(r, text, hearth_node_null());
    }
    hearth__free(exact);
    hearth__free(text);
    return out;
}

/* ---- listens ---- */

static json_t *listen_body(const listen_rec *l, bool with_hash) {
    json_t *b = json_pack("{s:s}", "p", l->path);
    if (!b)
        return NULL;
    if (l->query) {
        char *q = hearth_query_to_json(l->query);
        json_t *qo = q ? json_loads(q, 0, NULL) : NULL;
        hearth__free(q);
        json_object_set_new(b, "q", qo ? qo : json_object());
        json_object_set_new(b, "t", json_integer(l->tag));
    }
    if (with_hash)
        json_object_set_new(b, "h", json_string(""));
    return b;
}

static void send_listen(hearth__remote *r, listen_rec *l) {
    if (!r->ready || l->sent || is_info(l->path))
        return;
    json_t *b = listen_body(l, true);
    if (b && !send_request(r, "q", b, REQ_LISTEN, l))
        l->sent = true;
    json_decref(b);
}

static void listen_free(listen_rec *l);

/* The server refused or revoked the listen of view v: each of its
 * registrations gets a cancel event, then its owner drops it. The handles
 * are taken first: a callback may remove observers itself. */
static void cancel_view(hearth__remote *r, hearth__view *v, int status) {
    size_t n = 0;
    for (hearth__reg *g = v->regs; g; g = g->next)
        n++;
    hearth_observer_t *handles = hearth__malloc((n ? n : 1) * sizeof *handles);
    if (!handles)
        return;
    size_t k = 0;
    for (hearth__reg *g = v->regs; g; g = g->next)
        if (!g->removed && !hearth__events_push_cancel(r->sync.events, g, status))
            handles[k++] = g->handle;
    raise_events(r);
    for (size_t i = 0; i < k; i++) {
        hearth__reg *g = hearth__listeners_find(&r->sync.listeners, handles[i]);
        if (g && !g->removed)
            r->hooks.drop(r->hooks.ctx, g);
    }
    hearth__free(handles);
}

/* The listen the server names by path and query (`c` carries no tag). */
static listen_rec *find_listen(hearth__remote *r, const char *path,
                               json_t *query) {
    hearth__path want, have;
    if (hearth__path_parse(path, 0, &want, NULL))
        return NULL;
    for (listen_rec *l = r->listens; l; l = l->next) {
        if (hearth__path_parse(l->path, 0, &have, NULL) ||
            !same_path(&want, &have))
            continue;
        json_t *body = listen_body(l, false);
        json_t *mine = json_object_get(body, "q");
        bool same = (!mine || json_object_size(mine) == 0)
                        ? (!query || json_object_size(query) == 0)
                        : query && json_equal(mine, query);
        json_decref(body);
        if (same)
            return l;
    }
    return NULL;
}

static void listen_done(hearth__remote *r, listen_rec *l, const char *status) {
    hearth__path p;
    if (strcmp(status, "ok") != 0) {
        /* Refused (rules): the registrations end; nothing more arrives. */
        if (logging)
            fprintf(stderr, "hearth: listen at %s refused: %s\n", l->path,
                    status);
        cancel_view(r, l->view, status_code(status));
        return;
    }
    if (!hearth__path_parse(l->path, 0, &p, NULL))
        hearth__sync_listen_complete(&r->sync, &p, l->tag);
    raise_events(r);
    schedule_save(r);
}

int hearth__remote_observe(hearth__remote *r, const hearth__path *path,
                           const hearth_query_t *q, hearth__reg *reg) {
    int64_t tag;
    bool created;
    int rc = hearth__sync_listen(&r->sync, path, q, reg, &tag, &created);
    if (rc)
        return rc;
    if (created) {
        listen_rec *l = hearth__calloc(1, sizeof *l);
        char *text = path_text(path);
        hearth_query_t *copy =
            hearth__query_is_default(q) ? NULL : hearth_query_copy(q);
        if (!l || !text || (!hearth__query_is_default(q) && !copy)) {
            hearth__free(l);
            hearth__free(text);
            hearth_query_free(copy);
            bool gone;
            hearth__sync_unlisten(&r->sync, reg, &gone);
            return HEARTH_ENOMEM;
        }
        *l = (listen_rec){reg->view, text, copy, tag, false, r->listens};
        r->listens = l;
        send_listen(r, l);
        if (is_info(text))
            publish_info(r);
        /* What the server sent last time, from disk, until it answers. */
        hearth_node_t *stored = is_info(text) ? NULL : stored_view(r, text, copy);
        if (stored) {
            hearth__sync_server_set(&r->sync, path, stored, tag);
            hearth_node_decref(stored);
        }
    }
    raise_events(r);
    return 0;
}

static void listen_free(listen_rec *l) {
    hearth__free(l->path);
    hearth_query_free(l->query);
    hearth__free(l);
}

void hearth__remote_unobserve(hearth__remote *r, hearth__reg *reg) {
    hearth__view *v = reg->view;
    bool gone;
    hearth__sync_unlisten(&r->sync, reg, &gone);
    if (!gone)
        return;
    for (listen_rec **p = &r->listens; *p; p = &(*p)->next) {
        if ((*p)->view != v)
            continue;
        listen_rec *l = *p;
        *p = l->next;
        drop_requests_for(r, l);
        if (r->ready && !is_info(l->path)) {
            json_t *b = listen_body(l, false);
            if (b)
                send_request(r, "n", b, REQ_PLAIN, NULL);
            json_decref(b);
        }
        listen_free(l);
        return;
    }
}

hearth__listeners *hearth__remote_listeners(hearth__remote *r) {
    return &r->sync.listeners;
}

/* ---- writes ---- */

static void write_free(write_rec *w) {
    json_decref(w->body);
    hearth__free(w);
}

static void send_write(hearth__remote *r, write_rec *w) {
    if (!r->ready || w->sent)
        return;
    if (send_request(r, w->action, w->body, REQ_WRITE, w) == 0)
        w->sent = true;
}

static void enqueue_write(hearth__remote *r, write_rec *w) {
    w->next = NULL;
    if (r->writes_tail)
        r->writes_tail->next = w;
    else
        r->writes = w;
    r->writes_tail = w;
    send_write(r, w);
}

static void unlink_write(hearth__remote *r, write_rec *w) {
    write_rec *prev = NULL;
    for (write_rec *x = r->writes; x; prev = x, x = x->next) {
        if (x != w)
            continue;
        if (prev)
            prev->next = x->next;
        else
            r->writes = x->next;
        if (r->writes_tail == x)
            r->writes_tail = prev;
        return;
    }
}

static int status_code(const char *status) {
    if (!strcmp(status, "ok"))
        return 0;
    if (!strcmp(status, "permission_denied"))
        return HEARTH_EDENIED;
    if (!strcmp(status, "too_big"))
        return HEARTH_ETOOBIG;
    if (!strcmp(status, "invalid_args"))
        return HEARTH_EINVAL;
    if (!strcmp(status, "datastale"))
        return HEARTH_EDATASTALE;
    return HEARTH_EREMOTE;
}

static void batch_answer(hearth__remote *r, batch *b, int status);

/* The server answered write w: settle it in the sync tree, then report. */
/* Keeps a write on disk until the server settled it (not compare-and-set
 * attempts: a transaction does not outlive its process). */
static int store_write(hearth__remote *r, write_rec *w) {
    if (!r->disk || w->id < 0 || w->cas)
        return 0;
    char *text = json_dumps(w->body, JSON_COMPACT);
    int rc = text ? hearth__disk_write_add(r->disk, w->id, w->action, text)
                  : HEARTH_ENOMEM;
    free(text);
    return rc;
}

static void forget_write(hearth__remote *r, const write_rec *w) {
    if (r->disk && w->id >= 0 && !w->cas)
        hearth__disk_write_remove(r->disk, w->id);
}

static void write_answered(hearth__remote *r, write_rec *w, int status) {
    unlink_write(r, w);
    drop_requests_for(r, w);
    forget_write(r, w);
    if (w->action[0] == 'o' && status == 0 &&
        hearth__od_accepted(&r->on_disconnect, w->action, w->body) &&
        logging)
        fprintf(stderr, "hearth: an onDisconnect write will not show locally "
                        "(out of memory)\n");
    if (w->id >= 0) {
        hearth__sync_ack(&r->sync, w->id, status != 0);
        raise_events(r);
    }
    if (w->owner) {
        batch *b = w->owner;
        b->write = NULL;
        write_free(w);
        batch_answer(r, b, status);
        return;
    }
    if (w->done)
        w->done(status, w->arg);
    write_free(w);
}

/* The wire form of a value: priorities and server values as written. */
static json_t *wire_value(const hearth_node_t *v) {
    return hearth_node_to_jansson(v, HEARTH_JSON_EXPORT);
}

int64_t hearth__remote_server_now(const hearth__remote *r) {
    return hearth_now_ms() + r->time_offset;
}

/* The local estimate of a value with server values (resolved against
 * what the client shows there, at the estimated server time). */
static hearth_node_t *estimate(hearth__remote *r, const hearth__path *path,
                               const hearth_node_t *value) {
    if (!hearth__node_has_sv(value))
        return hearth_node_incref(value);
    hearth_node_t *local = hearth__sync_local(&r->sync, path);
    const hearth_node_t *existing = local ? local : hearth__node_empty();
    if (path->priority)
        existing = hearth__prio(existing);
    hearth_node_t *out = NULL;
    if (hearth__node_resolve_sv(value, existing, hearth__remote_server_now(r),
                                &out))
        out = NULL;
    hearth_node_decref(local);
    return out;
}

static void abort_overridden_transactions(hearth__remote *r,
                                          const hearth__path *path);
static void flush_finished(hearth__remote *r);

int hearth__remote_write(hearth__remote *r, const hearth__path *const *paths,
                         hearth_node_t *const *values, size_t n,
                         hearth__remote_done done, void *arg) {
    write_rec *w = hearth__calloc(1, sizeof *w);
    if (!w)
        return HEARTH_ENOMEM;
    w->done = done;
    w->arg = arg;
    w->id = r->next_write++;
    int rc = 0;
    if (n == 1) {
        char *p = path_text(paths[0]);
        hearth_node_t *local = estimate(r, paths[0], values[0]);
        w->action = "p";
        w->body = p ? json_pack("{s:s,s:o}", "p", p, "d", wire_value(values[0]))
                    : NULL;
        hearth__free(p);
        if (!w->body || !local)
            rc = HEARTH_ENOMEM;
        else
            abort_overridden_transactions(r, paths[0]);
        if (!rc)
            rc = store_write(r, w);
        if (!rc)
            rc = hearth__sync_user_set(&r->sync, paths[0], local, w->id, true);
        hearth_node_decref(local);
    } else {
        /* One update at the root: keys are the written paths. */
        hearth__ptree *merge = hearth__ptree_new();
        json_t *d = json_object();
        w->action = "m";
        rc = merge && d ? 0 : HEARTH_ENOMEM;
        for (size_t i = 0; !rc && i < n; i++) {
            char *p = path_text(paths[i]);
            hearth_node_t *local = estimate(r, paths[i], values[i]);
            hearth__spath sp;
            hearth__spath_from(&sp, paths[i]);
            if (!p || !local || json_object_set_new(d, p + 1, wire_value(values[i])) ||
                hearth__ptree_set(merge, sp.seg, sp.n, local))
                rc = HEARTH_ENOMEM;
            hearth__free(p);
            hearth_node_decref(local);
        }
        w->body = rc ? NULL : json_pack("{s:s,s:o}", "p", "/", "d", d);
        if (!rc && !w->body)
            rc = HEARTH_ENOMEM;
        if (rc) {
            json_decref(d);
            hearth__ptree_free(merge);
        } else if ((rc = store_write(r, w))) {
            hearth__ptree_free(merge);
        } else {
            hearth__path root = {0};
            rc = hearth__sync_user_merge(&r->sync, &root, merge, w->id);
        }
    }
    if (rc) {
        write_free(w);
        flush_finished(r);
        return rc;
    }
    raise_events(r);
    enqueue_write(r, w);
    flush_finished(r); /* transactions the write overrode */
    return 0;
}

int hearth__remote_on_disconnect(hearth__remote *r, const char *action,
                                 const hearth__path *const *paths,
                                 hearth_node_t *const *values, size_t n,
                                 hearth__remote_done done, void *arg) {
    write_rec *w = hearth__calloc(1, sizeof *w);
    if (!w)
        return HEARTH_ENOMEM;
    w->id = -1; /* nothing changes locally until the connection ends */
    w->action = action;
    w->done = done;
    w->arg = arg;
    int rc = 0;
    if (!strcmp(action, "om")) {
        /* One update at the root, keyed by the written paths. */
        json_t *d = json_object();
        rc = d ? 0 : HEARTH_ENOMEM;
        for (size_t i = 0; !rc && i < n; i++) {
            char *p = path_text(paths[i]);
            if (!p || json_object_set_new(d, p + 1, wire_value(values[i])))
                rc = HEARTH_ENOMEM;
            hearth__free(p);
        }
        w->body = rc ? NULL : json_pack("{s:s,s:o}", "p", "/", "d", d);
        if (rc)
            json_decref(d);
    } else if (n == 1) {
        char *p = path_text(paths[0]);
        w->body = p ? json_pack("{s:s}", "p", p) : NULL;
        hearth__free(p);
        if (w->body && !strcmp(action, "o"))
            json_object_set_new(w->body, "d", wire_value(values[0]));
    }
    if (!w->body) {
        hearth__free(w);
        return rc ? rc : HEARTH_EINVAL;
    }
    enqueue_write(r, w);
    return 0;
}

/* ---- gets ---- */

/* One value of a query's wire parameters as Foundation describes it. */
static void describe_value(hearth__buf *b, const json_t *v) {
    if (json_is_string(v)) {
        const char *t = json_string_value(v);
        bool plain = *t != '\0';
        for (const char *c = t; *c && plain; c++)
            plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                    (*c >= '0' && *c <= '9') || *c == '_';
        hearth__buf_adds(b, plain ? "" : "\"");
        hearth__buf_adds(b, t);
        hearth__buf_adds(b, plain ? "" : "\"");
    } else if (json_is_boolean(v)) {
        hearth__buf_adds(b, json_is_true(v) ? "1" : "0");
    } else if (json_is_null(v)) {
        hearth__buf_adds(b, "<null>");
    } else {
        char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        hearth__buf_adds(b, t ? t : "?");
        free(t);
    }
}

static int compare_keys(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The iOS SDK's description of a query: "FQuerySpec (path: /a, params:
 * {})", the parameters as Foundation prints a dictionary (keys sorted,
 * one "    key = value;" line each). */
static void describe_query(hearth__buf *b, const hearth__path *path,
                           const hearth_query_t *q) {
    char *p = path_text(path);
    hearth__buf_adds(b, "FQuerySpec (path: ");
    hearth__buf_adds(b, p ? p : "/");
    hearth__buf_adds(b, ", params: {");
    hearth__free(p);
    char *text = q ? hearth_query_to_json(q) : NULL;
    json_t *params = text ? json_loads(text, 0, NULL) : NULL;
    hearth__free(text);
    size_t n = json_object_size(params), k = 0;
    const char **keys = n ? hearth__malloc(n * sizeof *keys) : NULL;
    const char *key;
    json_t *v;
    json_object_foreach(params, key, v) {
        if (keys)
            keys[k++] = key;
    }
    if (keys)
        qsort(keys, k, sizeof *keys, compare_keys);
    for (size_t i = 0; i < k; i++) {
        hearth__buf_adds(b, "\n    ");
        hearth__buf_adds(b, keys[i]);
        hearth__buf_adds(b, " = ");
        describe_value(b, json_object_get(params, keys[i]));
        hearth__buf_adds(b, ";");
    }
    hearth__buf_adds(b, k ? "\n})" : "})");
    hearth__free(keys);
    json_decref(params);
}

int hearth__remote_offline_error(hearth_error_t *err, const hearth__path *path,
                                 const hearth_query_t *q) {
    hearth__buf b;
    hearth__buf_init(&b);
    describe_query(&b, path, q);
    char *spec = hearth__buf_detach(&b, NULL);
    int rc = hearth__error(err, HEARTH_EOFFLINE, NULL,
                           "Unable to get latest value for query %s, %s",
                           spec ? spec : "?", hearth_strerror(HEARTH_EOFFLINE));
    hearth__free(spec);
    return rc;
}


static void get_free(get_rec *g) {
    json_decref(g->body);
    hearth__free(g->path);
    hearth_query_free(g->query);
    hearth__free(g);
}

hearth_node_t *hearth__remote_cached(hearth__remote *r, const hearth__path *path,
                                     const hearth_query_t *q) {
    hearth_node_t *local = hearth__sync_local(&r->sync, path);
    if (!local && r->disk) {
        /* Not listened to now: what the last listen here stored. */
        hearth__path at = *path;
        at.priority = false;
        char *text = path_text(&at);
        local = text ? stored_view(r, text, NULL) : NULL;
        hearth__free(text);
    }
    if (!local)
        return NULL;
    hearth_node_t *shown = NULL;
    const hearth_node_t *at = path->priority ? hearth__prio(local) : local;
    if (hearth__query_view_node(q, at, &shown))
        shown = NULL;
    hearth_node_decref(local);
    return shown;
}

static void unlink_get(hearth__remote *r, get_rec *g) {
    for (get_rec **p = &r->gets; *p; p = &(*p)->next)
        if (*p == g) {
            *p = g->next;
            return;
        }
}

static void get_answered(hearth__remote *r, get_rec *g, int status,
                         json_t *data) {
    unlink_get(r, g);
    drop_requests_for(r, g);
    hearth_node_t *value = NULL;
    if (!status && hearth_node_from_jansson(data, 0, &value, NULL))
        status = HEARTH_EREMOTE;
    if (status) {
        /* Fall back on complete cached data, as the SDKs do. */
        hearth__path p;
        if (!hearth__path_parse(g->path, HEARTH__PATH_ALLOW_PRIORITY, &p, NULL) &&
            (value = hearth__remote_cached(r, &p, g->query)))
            status = 0;
    }
    g->done(status, status ? NULL : value, g->arg);
    hearth_node_decref(value);
    get_free(g);
}

static void send_get(hearth__remote *r, get_rec *g) {
    if (r->ready && !g->sent &&
        send_request(r, "g", g->body, REQ_GET, g) == 0)
        g->sent = true;
}

static void on_get_timer(uv_timer_t *timer) {
    hearth__remote *r = timer->data;
    uint64_t now = uv_now(r->loop), next = 0;
    for (get_rec *g = r->gets; g;) {
        get_rec *following = g->next;
        if (!g->sent && g->deadline <= now)
            get_answered(r, g, HEARTH_EOFFLINE, NULL);
        else if (!g->sent && (!next || g->deadline < next))
            next = g->deadline;
        g = following;
    }
    if (next)
        uv_timer_start(&r->get_timer, on_get_timer, next - now, 0);
}

int hearth__remote_get(hearth__remote *r, const hearth__path *path,
                       const hearth_query_t *q, hearth__remote_get_done done,
                       void *arg) {
    if (!r->ready) {
        /* Cached data answers at once; else wait a little for the line. */
        hearth_node_t *cached = hearth__remote_cached(r, path, q);
        if (cached || !r->online) {
            done(cached ? 0 : HEARTH_EOFFLINE, cached, arg);
            hearth_node_decref(cached);
            return 0;
        }
    }
    get_rec *g = hearth__calloc(1, sizeof *g);
    char *p = path_text(path);
    if (!g || !p) {
        hearth__free(g);
        hearth__free(p);
        return HEARTH_ENOMEM;
    }
    g->path = p;
    g->done = done;
    g->arg = arg;
    g->body = json_pack("{s:s}", "p", p);
    if (q && !hearth__query_is_default(q)) {
        g->query = hearth_query_copy(q);
        char *qt = hearth_query_to_json(q);
        json_t *qo = qt ? json_loads(qt, 0, NULL) : NULL;
        hearth__free(qt);
        if (g->body && qo)
            json_object_set_new(g->body, "q", qo);
        else
            json_decref(qo);
    }
    if (!g->body || (q && !hearth__query_is_default(q) && !g->query)) {
        get_free(g);
        return HEARTH_ENOMEM;
    }
    g->next = r->gets;
    r->gets = g;
    send_get(r, g);
    if (!g->sent) {
        g->deadline = uv_now(r->loop) + GET_CONNECT_MS;
        if (!uv_is_active((uv_handle_t *)&r->get_timer))
            uv_timer_start(&r->get_timer, on_get_timer, GET_CONNECT_MS, 0);
    }
    return 0;
}

/* ---- transactions ---- */

static void ignore_event(const hearth_event_t *e, void *ctx) {
    (void)e;
    (void)ctx;
}

/* Takes t out of the queue; its completion runs in flush_finished, once
 * the client's state is consistent again (a completion may start new
 * transactions or writes). */
static void tx_finish(tx *t, int status, bool committed) {
    hearth__remote *r = t->r;
    tx *prev = NULL;
    for (tx *x = r->txs; x; prev = x, x = x->next)
        if (x == t) {
            if (prev)
                prev->next = t->next;
            else
                r->txs = t->next;
            if (r->txs_tail == t)
                r->txs_tail = prev;
            break;
        }
    t->status = status;
    t->committed = committed;
    t->next = NULL;
    if (r->finished_tail)
        r->finished_tail->next = t;
    else
        r->finished = t;
    r->finished_tail = t;
}

/* Runs the completions of finished transactions, oldest first. */
static void flush_finished(hearth__remote *r) {
    while (r->finished) {
        tx *t = r->finished;
        r->finished = t->next;
        if (!r->finished)
            r->finished_tail = NULL;
        hearth_node_t *now = t->committed && t->result
                                 ? hearth_node_incref(t->result)
                                 : hearth__sync_local(&r->sync, &t->path);
        const hearth_node_t *snap = now ? now : hearth__node_empty();
        if (t->path.priority && !(t->committed && t->result))
            snap = hearth__prio(snap);
        t->done(t->status, t->committed, snap, t->arg);
        hearth_node_decref(now);
        hearth_node_decref(t->result);
        if (t->reg && !r->closing)
            hearth__remote_unobserve(r, t->reg);
        hearth__free(t->path_text);
        hearth__free(t);
    }
}

static bool same_path(const hearth__path *a, const hearth__path *b) {
    return a->n == b->n && a->priority == b->priority &&
           hearth__path_is_prefix(a, b);
}

static bool overlaps(const hearth__path *a, const hearth__path *b) {
    return hearth__path_is_prefix(a, b) || hearth__path_is_prefix(b, a);
}

static void batch_free(hearth__remote *r, batch *b) {
    for (batch **p = &r->batches; *p; p = &(*p)->next)
        if (*p == b) {
            *p = b->next;
            break;
        }
    hearth__free(b->path_text);
    hearth__free(b->txs);
    hearth__free(b);
}

/* Ends every transaction of b with status, then b itself. */
static void batch_finish(hearth__remote *r, batch *b, int status,
                         bool committed) {
    for (size_t i = 0; i < b->n; i++)
        tx_finish(b->txs[i], status, committed);
    b->n = 0;
    batch_free(r, b);
}

/* The value of a path as this client knows it, for an update function. */
static hearth_node_t *tx_input(hearth__remote *r, const hearth__path *path) {
    hearth_node_t *current = hearth__sync_local(&r->sync, path);
    if (!current)
        return hearth_node_null();
    if (!path->priority)
        return current;
    hearth_node_t *prio = hearth_node_incref(hearth__prio(current));
    hearth_node_decref(current);
    return prio;
}

static void pump_transactions(hearth__remote *r);

/* Runs b's update functions in turn on the local value (each on the one
 * before's result), applies the outcome locally and sends it as one
 * compare-and-set against the value the first one saw. */
static void batch_run(hearth__remote *r, batch *b) {
    size_t kept = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (++b->txs[i]->attempts > MAX_TX_ATTEMPTS)
            tx_finish(b->txs[i], HEARTH_EMAXRETRY, false);
        else
            b->txs[kept++] = b->txs[i];
    }
    b->n = kept;
    if (!b->n) {
        batch_free(r, b);
        pump_transactions(r);
        return;
    }
    const hearth__path *path = &b->path;
    hearth_node_t *base = tx_input(r, path);
    hearth_node_t *value = hearth_node_incref(base);
    kept = 0;
    for (size_t i = 0; i < b->n; i++) {
        tx *t = b->txs[i];
        hearth_node_t *result = NULL;
        int verdict = t->fn(value, &result, t->fn_ctx);
        int rc = 0;
        if (verdict != HEARTH_TX_COMMIT || !result)
            rc = HEARTH_EABORTED;
        else if (path->n + (unsigned)hearth__node_depth(result) >
                 HEARTH_MAX_DEPTH)
            rc = HEARTH_EDEPTH;
        if (rc) {
            hearth_node_decref(result);
            tx_finish(t, rc, false);
            continue;
        }
        hearth_node_decref(value);
        value = result;
        hearth_node_t *shown = estimate(r, path, result);
        if (shown) {
            hearth_node_decref(t->result);
            t->result = shown;
        }
        b->txs[kept++] = t;
    }
    b->n = kept;
    char hash[HEARTH_HASH_SIZE];
    int rc = b->n ? hearth_node_hash(base, hash) : 0;
    hearth_node_decref(base);
    if (!b->n) {
        hearth_node_decref(value);
        batch_free(r, b);
        pump_transactions(r);
        return;
    }
    write_rec *w = rc ? NULL : hearth__calloc(1, sizeof *w);
    hearth_node_t *local = rc ? NULL : estimate(r, path, value);
    if (!rc && (!w || !local))
        rc = HEARTH_ENOMEM;
    if (!rc) {
        w->id = r->next_write++;
        w->action = "p";
        w->cas = true;
        w->owner = b;
        w->body = json_pack("{s:s,s:o,s:s}", "p", b->path_text, "d",
                            wire_value(value), "h", hash);
        rc = w->body ? hearth__sync_user_set(&r->sync, path, local, w->id, true)
                     : HEARTH_ENOMEM;
    }
    hearth_node_decref(value);
    hearth_node_decref(local);
    if (rc) {
        if (w)
            write_free(w);
        batch_finish(r, b, rc, false);
        pump_transactions(r);
        return;
    }
    b->write = w;
    raise_events(r);
    enqueue_write(r, w);
}

/* Starts a batch for each path whose transactions wait and that no batch
 * in flight overlaps. */
static void pump_transactions(hearth__remote *r) {
    for (tx *t = r->txs; t; t = t->next) {
        if (t->in)
            continue;
        bool blocked = false;
        for (batch *b = r->batches; b && !blocked; b = b->next)
            blocked = overlaps(&b->path, &t->path);
        if (blocked)
            continue;
        size_t n = 0;
        for (tx *x = t; x; x = x->next)
            n += !x->in && same_path(&x->path, &t->path);
        batch *b = hearth__calloc(1, sizeof *b);
        tx **txs = hearth__malloc(n * sizeof *txs);
        char *text = hearth__strndup(t->path_text, strlen(t->path_text));
        if (!b || !txs || !text) {
            hearth__free(b);
            hearth__free(txs);
            hearth__free(text);
            return; /* tried again on the next transaction's arrival */
        }
        b->path_text = text;
        /* Parsed before (t->path_text): cannot fail. */
        hearth__path_parse(text, HEARTH__PATH_ALLOW_PRIORITY, &b->path, NULL);
        for (tx *x = t; x; x = x->next)
            if (!x->in && same_path(&x->path, &t->path)) {
                x->in = b;
                txs[b->n++] = x;
            }
        b->txs = txs;
        b->next = r->batches;
        r->batches = b;
        batch_run(r, b); /* may finish transactions: restart the scan */
        pump_transactions(r);
        return;
    }
}

static void batch_answer(hearth__remote *r, batch *b, int status) {
    if (status == HEARTH_EDATASTALE) {
        batch_run(r, b); /* the server sent its value first: again */
    } else {
        batch_finish(r, b, status, status == 0);
        pump_transactions(r);
    }
    flush_finished(r);
}

/* Ends batch b's attempt without an answer (the line dropped, or a set
 * replaced the value): revert it locally and end its transactions. */
static void batch_abandon(hearth__remote *r, batch *b, int status) {
    write_rec *w = b->write;
    if (w) {
        unlink_write(r, w);
        drop_requests_for(r, w);
        hearth__sync_ack(&r->sync, w->id, true);
        raise_events(r);
        write_free(w);
        b->write = NULL;
    }
    batch_finish(r, b, status, false);
}

static void abort_overridden_transactions(hearth__remote *r,
                                          const hearth__path *path) {
    for (batch *b = r->batches; b;) {
        batch *next = b->next;
        if (overlaps(&b->path, path))
            batch_abandon(r, b, HEARTH_EOVERRIDDEN);
        b = next;
    }
    for (tx *t = r->txs; t;) {
        tx *next = t->next;
        if (!t->in && overlaps(&t->path, path))
            tx_finish(t, HEARTH_EOVERRIDDEN, false);
        t = next;
    }
}

int hearth__remote_transaction(hearth__remote *r, const hearth__path *path,
                               hearth_transaction_fn fn, void *fn_ctx,
                               hearth__remote_tx_done done, void *arg) {
    tx *t = hearth__calloc(1, sizeof *t);
    hearth__reg *reg = hearth__calloc(1, sizeof *reg);
    char *text = path_text(path);
    if (!t || !reg || !text ||
        hearth__path_parse(text, HEARTH__PATH_ALLOW_PRIORITY, &t->path, NULL)) {
        hearth__free(t);
        hearth__free(reg);
        hearth__free(text);
        return HEARTH_ENOMEM;
    }
    t->r = r;
    t->path_text = text;
    t->fn = fn;
    t->fn_ctx = fn_ctx;
    t->done = done;
    t->arg = arg;
    if (r->txs_tail)
        r->txs_tail->next = t;
    else
        r->txs = t;
    r->txs_tail = t;
    /* Listen at the path so that the server's value (pushed before a
     * datastale answer) is in the cache for the next attempt. Internal
     * handles count down from the top so they never meet the owner's. */
    reg->handle = UINT64_MAX - r->next_handle++;
    reg->mask = HEARTH_MASK_VALUE;
    reg->cb = ignore_event;
    hearth__path at = t->path;
    at.priority = false;
    if (hearth__remote_observe(r, &at, NULL, reg) == 0)
        t->reg = reg;
    else
        hearth__free(reg);
    pump_transactions(r);
    flush_finished(r);
    return 0;
}

/* ---- the server's messages ---- */

static hearth__ptree *merge_tree(json_t *data) {
    hearth__ptree *t = hearth__ptree_new();
    const char *key;
    json_t *value;
    json_object_foreach(data, key, value) {
        hearth__path p;
        hearth_node_t *n = NULL;
        if (!t || hearth__path_parse(key, HEARTH__PATH_ALLOW_PRIORITY, &p, NULL) ||
            hearth_node_from_jansson(value, 0, &n, NULL)) {
            hearth__ptree_free(t);
            return NULL;
        }
        hearth__spath sp;
        hearth__spath_from(&sp, &p);
        int rc = hearth__ptree_set(t, sp.seg, sp.n, n);
        hearth_node_decref(n);
        if (rc) {
            hearth__ptree_free(t);
            return NULL;
        }
    }
    return t;
}

/* Data the server pushed: an overwrite or a merge, perhaps tagged. */
static void on_push(hearth__remote *r, const char *action, json_t *b) {
    const char *path = json_string_value(json_object_get(b, "p"));
    json_t *data = json_object_get(b, "d");
    json_t *tag = json_object_get(b, "t");
    hearth__path p;
    if (!path || !data || hearth__path_parse(path, 0, &p, NULL))
        return;
    int64_t t = json_is_integer(tag) ? json_integer_value(tag) : 0;
    if (!strcmp(action, "d")) {
        hearth_node_t *n = NULL;
        if (hearth_node_from_jansson(data, 0, &n, NULL))
            return;
        hearth__sync_server_set(&r->sync, &p, n, t);
        hearth_node_decref(n);
    } else if (!strcmp(action, "m") && json_is_object(data)) {
        hearth__ptree *m = merge_tree(data);
        if (!m)
            return;
        hearth__sync_server_merge(&r->sync, &p, m, t);
        hearth__ptree_free(m);
    } else {
        return;
    }
    raise_events(r);
    schedule_save(r);
}

static void auth_answered(const char *status, json_t *d);

static void on_response(hearth__remote *r, int64_t n, json_t *b) {
    outreq *q = take_request(r, n);
    if (!q)
        return;
    const char *s = json_string_value(json_object_get(b, "s"));
    if (!s)
        s = "invalid";
    switch (q->kind) {
    case REQ_LISTEN:
        listen_done(r, q->item, s);
        break;
    case REQ_WRITE:
        write_answered(r, q->item, status_code(s));
        break;
    case REQ_GET:
        get_answered(r, q->item, status_code(s), json_object_get(b, "d"));
        break;
    case REQ_AUTH:
        auth_answered(s, json_object_get(b, "d"));
        break;
    case REQ_PLAIN:
        break;
    }
    hearth__free(q);
}

static void send_auth(hearth__remote *r) {
    json_t *b = r->auth_token ? json_pack("{s:s}", "cred", r->auth_token)
                              : json_object();
    if (b)
        send_request(r, r->auth_token ? "auth" : "unauth", b, REQ_AUTH, NULL);
    json_decref(b);
}

/* The credential is settled: send it, then the listens, writes and gets
 * not yet sent on this connection, in order (the server handles them in
 * that order, so they are judged as this user). */
static void become_ready(hearth__remote *r) {
    r->ready = true;
    r->awaiting_token = false;
    if (r->auth_token)
        send_auth(r);
    for (listen_rec *l = r->listens; l; l = l->next)
        send_listen(r, l);
    for (write_rec *w = r->writes; w; w = w->next)
        send_write(r, w);
    for (get_rec *g = r->gets; g; g = g->next)
        send_get(r, g);
}

/* The hello: the connection is usable once the credential is known. */
static void on_hello(hearth__remote *r, json_t *d) {
    json_t *ts = json_object_get(d, "ts");
    double t = json_number_value(ts); /* 0 when not a number */
    /* A time in ms since 1970 that a double holds exactly; anything else
     * (a hostile server's 1e300) is ignored rather than overflowed. */
    if (t > 0 && t < 9007199254740992.0)
        r->time_offset = (int64_t)t - hearth_now_ms();
    r->connected = true;
    r->delay_ms = FIRST_DELAY_MS;
    r->next_r = 0;
    publish_info(r);
    raise_events(r);
    if (r->want_token && r->hooks.token_wanted) {
        r->awaiting_token = true;
        r->hooks.token_wanted(r->hooks.ctx);
    } else {
        become_ready(r);
    }
}

int hearth__remote_set_auth(hearth__remote *r, const char *token) {
    char *copy = token ? hearth__strndup(token, strlen(token)) : NULL;
    if (token && !copy)
        return HEARTH_ENOMEM;
    bool had = r->auth_token != NULL;
    hearth__free(r->auth_token);
    r->auth_token = copy;
    if (r->awaiting_token)
        become_ready(r);
    else if (r->ready && (copy || had))
        send_auth(r);
    return 0;
}

void hearth__remote_wait_for_token(hearth__remote *r, bool wait) {
    r->want_token = wait;
    if (wait && r->ready && r->hooks.token_wanted) {
        /* For this connection too: what comes next waits for the token. */
        r->ready = false;
        r->awaiting_token = true;
        r->hooks.token_wanted(r->hooks.ctx);
    } else if (!wait && r->awaiting_token) {
        become_ready(r);
    }
}

static void auth_answered(const char *status, json_t *d) {
    if (!strcmp(status, "ok"))
        return;
    /* The server goes on with this connection unauthenticated. */
    fprintf(stderr, "hearth: the server refused the auth token: %s%s%s\n",
            status, json_is_string(d) ? ": " : "",
            json_is_string(d) ? json_string_value(d) : "");
}

/* `ac`: the server no longer accepts the token (it expired). The
 * connection goes on unauthenticated; a provider is asked for a new one. */
static void on_auth_revoked(hearth__remote *r, json_t *b) {
    const char *why = json_string_value(json_object_get(b, "s"));
    fprintf(stderr, "hearth: the server revoked the auth token: %s\n",
            why ? why : "(no reason)");
    hearth__free(r->auth_token);
    r->auth_token = NULL;
    if (r->want_token && r->hooks.token_wanted)
        r->hooks.token_wanted(r->hooks.ctx);
}

/* `c`: the server revoked a listen (the rules no longer allow it). */
static void on_listen_revoked(hearth__remote *r, json_t *b) {
    const char *path = json_string_value(json_object_get(b, "p"));
    json_t *q = json_object_get(b, "q");
    listen_rec *l = path ? find_listen(r, path, json_is_object(q) ? q : NULL)
                         : NULL;
    if (l && !is_info(l->path))
        cancel_view(r, l->view, HEARTH_EDENIED);
}

static void handle(hearth__remote *r, const char *text, size_t len) {
    log_message('<', text, len);
    json_t *msg = hearth__v5_parse(text, len);
    if (!msg)
        return; /* not a message: ignored */
    const char *t = json_string_value(json_object_get(msg, "t"));
    json_t *d = json_object_get(msg, "d");
    if (t && !strcmp(t, "c") && json_is_object(d)) {
        const char *ct = json_string_value(json_object_get(d, "t"));
        json_t *cd = json_object_get(d, "d");
        if (ct && !strcmp(ct, "h"))
            on_hello(r, cd);
        else if (ct && !strcmp(ct, "s"))
            r->shut_down = true; /* stop reconnecting */
    } else if (t && !strcmp(t, "d") && json_is_object(d)) {
        json_t *rn = json_object_get(d, "r");
        json_t *b = json_object_get(d, "b");
        const char *a = json_string_value(json_object_get(d, "a"));
        if (json_is_integer(rn) && json_is_object(b))
            on_response(r, json_integer_value(rn), b);
        else if (a && json_is_object(b) && !strcmp(a, "c"))
            on_listen_revoked(r, b);
        else if (a && json_is_object(b) && !strcmp(a, "ac"))
            on_auth_revoked(r, b);
        else if (a && json_is_object(b))
            on_push(r, a, b);
    }
    json_decref(msg);
}

static void drop_connection(hearth__remote *r);

static void on_message(void *user, const char *text, size_t len) {
    hearth__remote *r = user;
    const char *msg;
    size_t msg_len;
    int rc = hearth__v5_join(&r->pieces, text, len, &msg, &msg_len);
    if (rc < 0) {
        /* Pieces past what one message may hold (a broken or hostile
         * server): this connection ends rather than the client growing. */
        fprintf(stderr, "hearth: the server sent a message over %zu bytes "
                        "(or one that did not fit in memory); reconnecting\n",
                r->pieces.max);
        drop_connection(r);
        return;
    }
    if (rc == HEARTH__V5_MESSAGE)
        handle(r, msg, msg_len);
    if (rc == HEARTH__V5_MESSAGE && msg != text)
        hearth__v5_joiner_reset(&r->pieces); /* its memory, at once */
}

void hearth__remote_purge(hearth__remote *r) {
    while (r->batches)
        batch_abandon(r, r->batches, HEARTH_ECANCELED);
    while (r->txs)
        tx_finish(r->txs, HEARTH_ECANCELED, false);
    for (write_rec *w = r->writes; w;) {
        write_rec *next = w->next;
        if (w->id >= 0) {
            unlink_write(r, w);
            drop_requests_for(r, w);
            forget_write(r, w);
            hearth__sync_ack(&r->sync, w->id, true);
            if (w->done)
                w->done(HEARTH_ECANCELED, w->arg);
            write_free(w);
        }
        w = next;
    }
    raise_events(r);
    flush_finished(r);
}

void hearth__remote_set_max_message(hearth__remote *r, size_t max) {
    r->pieces.max = max;
}

void hearth__remote_feed(hearth__remote *r, const char *text, size_t len) {
    on_message(r, text, len);
}

/* ---- the connection's life ---- */

static void connect_now(hearth__remote *r);

static void on_retry(uv_timer_t *timer) { connect_now(timer->data); }

static void schedule_retry(hearth__remote *r) {
    if (r->closing || !r->online || r->shut_down)
        return;
    /* Jittered, so that clients cut off together do not return together. */
    uint64_t delay = r->delay_ms / 2 + (uint64_t)rand() % (r->delay_ms / 2 + 1);
    r->delay_ms = r->delay_ms * 13 / 10;
    if (r->delay_ms > MAX_DELAY_MS)
        r->delay_ms = MAX_DELAY_MS;
    uv_timer_start(&r->retry, on_retry, delay, 0);
}

/* The server runs the accepted onDisconnect writes as the connection
 * ends: the client shows them at once, as server data (the server's own
 * data follows on the next connection), server values estimated as for
 * its own writes. The server forgets them then, so the client does too. */
static void run_on_disconnect(hearth__remote *r) {
    hearth__od_list ops = r->on_disconnect;
    memset(&r->on_disconnect, 0, sizeof r->on_disconnect);
    for (size_t i = 0; i < ops.n; i++) {
        hearth__path p;
        if (hearth__path_parse(ops.e[i].path, HEARTH__PATH_ALLOW_PRIORITY, &p,
                               NULL))
            continue;
        hearth_node_t *local = estimate(r, &p, ops.e[i].value);
        if (local)
            hearth__sync_server_set(&r->sync, &p, local, 0);
        hearth_node_decref(local);
    }
    if (ops.n)
        schedule_save(r);
    hearth__od_clear(&ops);
}

/* The line dropped: requests in flight are lost. Listens and plain writes
 * are sent again after the next hello; a compare-and-set is not (its
 * guess may be stale by then): its transaction ends with "disconnected". */
static void went_offline(hearth__remote *r) {
    bool was = r->connected;
    r->connected = false;
    r->ready = false;
    r->awaiting_token = false;
    hearth__v5_joiner_reset(&r->pieces);
    while (r->reqs) {
        outreq *q = r->reqs;
        r->reqs = q->next;
        hearth__free(q);
    }
    for (batch *b = r->batches; b;) {
        batch *next = b->next;
        if (b->write && b->write->sent)
            batch_abandon(r, b, HEARTH_EDISCONNECTED);
        b = next;
    }
    for (write_rec *w = r->writes; w; w = w->next)
        w->sent = false;
    for (listen_rec *l = r->listens; l; l = l->next)
        l->sent = false;
    bool waiting = false;
    for (get_rec *g = r->gets; g; g = g->next) {
        g->sent = false;
        g->deadline = uv_now(r->loop) + GET_CONNECT_MS;
        waiting = true;
    }
    if (waiting && !r->closing)
        uv_timer_start(&r->get_timer, on_get_timer, GET_CONNECT_MS, 0);
    if (was) {
        set_info(r, "connected", hearth_node_boolean(false));
        run_on_disconnect(r);
        raise_events(r);
    }
    flush_finished(r);
}

static void on_open(void *user) { (void)user; /* the hello follows */ }

static void on_close(void *user, int status, const char *why) {
    hearth__remote *r = user;
    (void)status;
    (void)why;
    r->ws = NULL;
    went_offline(r);
    schedule_retry(r);
}

/* Ends the connection from our side; the next one comes after the usual
 * backoff. */
static void drop_connection(hearth__remote *r) {
    if (r->ws) {
        hearth__wsc_close(r->ws);
        r->ws = NULL;
    }
    went_offline(r);
    schedule_retry(r);
}

static void connect_now(hearth__remote *r) {
    if (r->ws || r->closing || !r->online || r->shut_down)
        return;
    static const hearth__wsc_callbacks cb = {on_open, on_message, on_close};
    if (hearth__wsc_connect(r->loop, r->url.host, r->url.port, r->resource,
                            r->url.tls, &cb, r, &r->ws)) {
        r->ws = NULL;
        schedule_retry(r);
    }
}

void hearth__remote_set_online(hearth__remote *r, bool online) {
    if (r->online == online)
        return;
    r->online = online;
    if (online) {
        r->delay_ms = FIRST_DELAY_MS;
        connect_now(r);
        return;
    }
    uv_timer_stop(&r->retry);
    if (r->ws) {
        hearth__wsc_close(r->ws);
        r->ws = NULL;
    }
    went_offline(r);
}

/* ---- the cache on disk: storing and replaying ---- */

/* Stores the server data of every view that has it complete, then prunes
 * what no view holds past the bound. */
static void save_views(hearth__remote *r) {
    if (!r->disk)
        return;
    size_t n = 0;
    for (listen_rec *l = r->listens; l; l = l->next)
        n++;
    char **keys = hearth__calloc(n ? n : 1, sizeof *keys);
    size_t k = 0;
    for (listen_rec *l = r->listens; keys && l; l = l->next) {
        const hearth__sview *sv = hearth__sview_of(l->view);
        if (is_info(l->path) || !sv || !sv->ready)
            continue;
        char *key = view_key(l->path, l->query);
        if (!key)
            continue;
        keys[k++] = key;
        if (!sv->server.complete)
            continue;
        hearth__buf b;
        hearth__buf_init(&b);
        hearth__node_encode(sv->server.node, &b);
        if (!b.failed)
            hearth__disk_put(r->disk, key, b.data, b.len);
        hearth__buf_free(&b);
    }
    hearth__disk_prune(r->disk, (const char *const *)keys, k);
    for (size_t i = 0; i < k; i++)
        hearth__free(keys[i]);
    hearth__free(keys);
}

/* A stored pending write, laid over the data again and queued to send. */
static void replay_write(int64_t id, const char *action, const char *body,
                         void *ctx) {
    hearth__remote *r = ctx;
    json_t *b = json_loads(body, 0, NULL);
    const char *path = json_string_value(json_object_get(b, "p"));
    json_t *data = json_object_get(b, "d");
    write_rec *w = hearth__calloc(1, sizeof *w);
    hearth__path p;
    int rc = b && path && data && w &&
                     !hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &p, NULL)
                 ? 0
                 : HEARTH_EINVAL;
    if (!rc && !strcmp(action, "p")) {
        hearth_node_t *value = NULL, *local = NULL;
        rc = hearth_node_from_jansson(data, HEARTH_JSON_ALLOW_SERVER_VALUES, &value, NULL);
        if (!rc && !(local = estimate(r, &p, value)))
            rc = HEARTH_ENOMEM;
        if (!rc)
            rc = hearth__sync_user_set(&r->sync, &p, local, id, true);
        hearth_node_decref(value);
        hearth_node_decref(local);
        if (w)
            w->action = "p";
    } else if (!rc && !strcmp(action, "m") && json_is_object(data)) {
        hearth__ptree *merge = hearth__ptree_new();
        const char *key;
        json_t *v;
        rc = merge ? 0 : HEARTH_ENOMEM;
        json_object_foreach(data, key, v) {
            hearth__path at;
            hearth_node_t *value = NULL, *local = NULL;
            if (!rc && (hearth__path_parse(key, HEARTH__PATH_ALLOW_PRIORITY, &at, NULL) ||
                        hearth_node_from_jansson(v, HEARTH_JSON_ALLOW_SERVER_VALUES,
                                                 &value, NULL)))
                rc = HEARTH_EINVAL;
            if (!rc && !(local = estimate(r, &at, value)))
                rc = HEARTH_ENOMEM;
            hearth__spath sp;
            if (!rc) {
                hearth__spath_from(&sp, &at);
                rc = hearth__ptree_set(merge, sp.seg, sp.n, local);
            }
            hearth_node_decref(value);
            hearth_node_decref(local);
        }
        if (!rc)
            rc = hearth__sync_user_merge(&r->sync, &p, merge, id);
        else
            hearth__ptree_free(merge);
        if (w)
            w->action = "m";
    } else if (!rc) {
        rc = HEARTH_EINVAL;
    }
    if (rc) {
        /* Unreadable: it can never be sent; drop it rather than block
         * the writes behind it. */
        fprintf(stderr, "hearth: dropping an unreadable stored write %lld\n",
                (long long)id);
        hearth__disk_write_remove(r->disk, id);
        json_decref(b);
        hearth__free(w);
        return;
    }
    w->id = id;
    w->body = b;
    if (id >= r->next_write)
        r->next_write = id + 1;
    enqueue_write(r, w);
}

int hearth__remote_use_disk(hearth__remote *r, hearth__disk *disk) {
    r->disk = disk;
    r->sync.stored = stored_for_view;
    r->sync.stored_ctx = r;
    hearth__disk_writes(disk, replay_write, r);
    raise_events(r);
    return 0;
}

int hearth__remote_open(uv_loop_t *loop, const hearth__remote_url *url,
                        hearth__event_queue *events,
                        const hearth__remote_hooks *hooks,
                        hearth__remote **out) {
    hearth__remote *r = hearth__calloc(1, sizeof *r);
    if (!r)
        return HEARTH_ENOMEM;
    int rc = hearth__sync_init(&r->sync);
    if (rc) {
        hearth__free(r);
        return rc;
    }
    r->loop = loop;
    r->url = *url;
    snprintf(r->resource, sizeof r->resource, "/.ws?v=5&ns=%s", url->ns);
    r->sync.events = events;
    r->hooks = *hooks;
    r->online = true;
    r->delay_ms = FIRST_DELAY_MS;
    hearth__v5_joiner_init(&r->pieces, HEARTH__V5_MAX_TO_CLIENT);
    uv_timer_init(loop, &r->retry);
    r->retry.data = r;
    uv_timer_init(loop, &r->get_timer);
    r->get_timer.data = r;
    uv_timer_init(loop, &r->save_timer);
    r->save_timer.data = r;
    r->open_handles = 3;
    set_info(r, "connected", hearth_node_boolean(false));
    *out = r;
    connect_now(r);
    return 0;
}

static void on_timer_closed(uv_handle_t *h) {
    hearth__remote *r = h->data;
    if (--r->open_handles)
        return;
    hearth__disk_close(r->disk);
    hearth__v5_joiner_reset(&r->pieces);
    hearth__free(r->auth_token);
    hearth__free(r);
}

void hearth__remote_close(hearth__remote *r) {
    if (r->disk)
        save_views(r); /* the last server data, before the views go */
    r->closing = true;
    if (r->ws) {
        hearth__wsc_close(r->ws);
        r->ws = NULL;
    }
    r->connected = false;
    r->ready = false;
    while (r->reqs) {
        outreq *q = r->reqs;
        r->reqs = q->next;
        hearth__free(q);
    }
    while (r->batches) {
        batch *b = r->batches;
        if (b->write) {
            unlink_write(r, b->write);
            write_free(b->write);
            b->write = NULL;
        }
        batch_finish(r, b, HEARTH_ECANCELED, false);
    }
    while (r->txs)
        tx_finish(r->txs, HEARTH_ECANCELED, false);
    flush_finished(r);
    while (r->writes) {
        write_rec *w = r->writes;
        r->writes = w->next;
        if (w->done)
            w->done(HEARTH_ECANCELED, w->arg);
        write_free(w);
    }
    r->writes_tail = NULL;
    while (r->gets) {
        get_rec *g = r->gets;
        r->gets = g->next;
        g->done(HEARTH_ECANCELED, NULL, g->arg);
        get_free(g);
    }
    while (r->listens) {
        listen_rec *l = r->listens;
        r->listens = l->next;
        listen_free(l);
    }
    hearth__od_clear(&r->on_disconnect);
    hearth__sync_destroy(&r->sync);
    uv_close((uv_handle_t *)&r->retry, on_timer_closed);
    uv_close((uv_handle_t *)&r->get_timer, on_timer_closed);
    uv_close((uv_handle_t *)&r->save_timer, on_timer_closed);
}
