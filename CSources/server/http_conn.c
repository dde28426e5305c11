/* http_conn.c - HTTP connections: their lifetime, timeouts, the limit on
 * how many are open, and listening for them. */
#include "server/http_internal.h"

#include <string.h>

/* ---- connection lifetime ---- */

void hearth__http_free_request(hearth__http_conn *c) {
    hearth__free(c->req.fields);
    hearth__free(c->req.target);
    hearth__free(c->req.body);
    memset(&c->req, 0, sizeof c->req);
    hearth__buf_free(&c->url);
    hearth__buf_free(&c->fields);
    hearth__buf_free(&c->body);
    hearth__free(c->note);
    c->note = NULL;
    c->name_at = 0;
    c->in_value = false;
    hearth__http_unhold(c, c->held); /* the body is gone */
    c->held = 0;
}

/* Frees a closing server once nothing refers to it: no handle open and
 * no connection struct left (its late answer would reach the server). */
static void server_maybe_free(hearth__http_server *s) {
    if (s->closing && s->open_handles == 0 && s->live_conns == 0) {
        void (*done)(void *) = s->done;
        void *ctx = s->done_ctx;
        hearth__budget_free(s->budget);
        hearth__handshake_rate_free(s->handshakes);
        hearth__tls_config_free(s->tls);
        uv_mutex_destroy(&s->tls_lock);
        hearth__free(s);
        if (done)
            done(ctx);
    }
}

static void server_handle_closed(hearth__http_server *s) {
    s->open_handles--;
    server_maybe_free(s);
}

void hearth__http_conn_release(hearth__http_conn *c) {
    if (--c->refs > 0)
        return;
    hearth__http_server *s = c->server;
    hearth__http_free_request(c);
    hearth__budget_peer_release(s->budget, c->peer);
    hearth__tls_free(c->tls);
    hearth__free(c->in);
    hearth__free(c);
    s->live_conns--;
    server_maybe_free(s);
}

static void on_conn_closed(uv_handle_t *h) {
    hearth__http_conn *c = h->data;
    hearth__http_server *s = c->server;
    hearth__list_remove(&c->link);
    if (c->on_close) {
        void (*cb)(void *) = c->on_close;
        c->on_close = NULL;
        cb(c->on_close_ctx);
    }
    hearth__http_conn_release(c);
    server_handle_closed(s);
}

void hearth__http_conn_close(hearth__http_conn *c) {
    if (c->closing)
        return;
    c->closing = true;
    c->server->nconns--;
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

/* ---- waiting ---- */

void hearth__http_wait_for(hearth__http_conn *c, uint64_t timeout_ms,
                           int status) {
    c->since = uv_now(c->server->loop);
    c->deadline = timeout_ms ? c->since + timeout_ms : 0;
    c->timeout_status = status;
}

/* ---- timeouts ---- */

static void check_deadline(hearth__http_conn *c, uint64_t now) {
    if (c->on_data) {
        hearth__http_check_upgraded(c, now);
        return;
    }
    if (!c->deadline || now < c->deadline)
        return;
    size_t backlog = uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
    if (c->writes_pending && backlog != c->last_backlog) {
        /* A reply still going out, but the client reads it: more time. */
        c->last_backlog = backlog;
        c->deadline = now + c->server->limits.idle_ms;
    } else if (c->timeout_status && !c->busy) {
        hearth__http_give_up(c, c->timeout_status, "Request timeout");
    } else {
        hearth__http_conn_close(c);
    }
}

static void on_sweep(uv_timer_t *t) {
    hearth__http_server *s = t->data;
    uint64_t now = uv_now(s->loop);
    HEARTH__LIST_EACH_SAFE(n, &s->conns) {
        hearth__http_conn *c = HEARTH__CONN_OF(n);
        if (!c->closing)
            check_deadline(c, now);
    }
}

/* How often deadlines are looked at: a quarter of the shortest timeout
 * (so one is overshot by at most that), between 10 ms and 1 s. */
static uint64_t sweep_interval(const hearth__http_limits *l) {
    uint64_t t = 4000;
    const uint64_t all[] = {l->header_ms, l->body_ms, l->idle_ms};
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(all); i++)
        if (all[i] && all[i] < t)
            t = all[i];
    t /= 4;
    return t < 10 ? 10 : t;
}

/* ---- the connection limit ---- */

/* Whether c may be closed to make room: between requests with nothing
 * left to send (idle keep-alive or a new connection that sent nothing),
 * or still sending its head. */
static int eviction_rank(const hearth__http_conn *c) {
    if (c->closing || c->busy || c->streaming || c->no_more ||
        c->writes_pending)
        return 0;
    if (!c->in_request)
        return 2;
    return c->head_done ? 0 : 1;
}

/* At a connection limit: closes the connection that waited longest among
 * the idle ones, else among those still sending their head; of one peer
 * only when peer is not NULL, and never `keep`. */
static bool make_room(hearth__http_server *s, const hearth__peer *peer,
                      const hearth__http_conn *keep) {
    hearth__http_conn *victim = NULL;
    int best = 0;
    HEARTH__LIST_EACH(n, &s->conns) {
        hearth__http_conn *c = HEARTH__CONN_OF(n);
        if (c == keep || (peer && c->peer != peer))
            continue;
        int rank = eviction_rank(c);
        if (rank > best || (rank && rank == best && c->since < victim->since)) {
            victim = c;
            best = rank;
        }
    }
    if (victim)
        hearth__http_conn_close(victim);
    return victim != NULL;
}

/* ---- listening ---- */

/* The part of addr a handshake rate is kept for: an IPv4 address; an
 * IPv6 address's /64, the block one subscriber is usually given (an IPv4
 * address mapped into IPv6 counts as IPv4). 0 for the host's own loopback
 * address (127.0.0.1, ::1): local tools, health checks and a reverse
 * proxy on the same host are not limited. */
static size_t rate_key(const struct sockaddr_storage *addr,
                       unsigned char key[16]) {
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                             0xff, 0xff};
    static const unsigned char loopback6[16] = {[15] = 1};
    const unsigned char *v4 = NULL;
    if (addr->ss_family == AF_INET) {
        v4 = (const unsigned char *)&((const struct sockaddr_in *)addr)->sin_addr;
    } else if (addr->ss_family == AF_INET6) {
        const unsigned char *a =
            ((const struct sockaddr_in6 *)addr)->sin6_addr.s6_addr;
        if (memcmp(a, loopback6, 16) == 0)
            return 0;
        if (memcmp(a, mapped, 12) != 0) {
            memcpy(key, a, 8);
            return 8;
        }
        v4 = a + 12;
    } else {
        return 0;
    }
    if (v4[0] == 127 && v4[1] == 0 && v4[2] == 0 && v4[3] == 1)
        return 0;
    memcpy(key, v4, 4);
    return 4;
}

/* Whether a connection from addr may start its TLS handshake (always on
 * a plain HTTP server); a refusal is counted. */
static bool handshake_allowed(hearth__http_server *s,
                              const struct sockaddr_storage *addr) {
    uv_mutex_lock(&s->tls_lock);
    bool tls = s->tls != NULL;
    uv_mutex_unlock(&s->tls_lock);
    unsigned char key[16];
    size_t len = tls ? rate_key(addr, key) : 0;
    if (!len)
        return true;
    if (!s->handshakes && hearth__handshake_rate_create(&s->handshakes))
        return false; /* no memory: refuse rather than pay unbounded */
    if (hearth__handshake_allowed(s->handshakes, key, len, uv_now(s->loop),
                                  atomic_load(&s->handshakes_per_s),
                                  atomic_load(&s->handshake_burst)))
        return true;
    s->handshakes_refused++;
    return false;
}

static void on_listener_closed(uv_handle_t *h);

static void on_connection(uv_stream_t *listener, int status) {
    hearth__http_server *s = listener->data;
    if (status < 0 || s->closing)
        return;
    bool room = s->nconns < s->limits.max_connections || make_room(s, NULL, NULL);
    hearth__http_conn *c = hearth__calloc(1, sizeof *c);
    if (!c)
        return;
    c->server = s;
    c->refs = 1;
    s->live_conns++;
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    hearth__list_push_front(&s->conns, &c->link);
    s->open_handles++;
    s->nconns++;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp)) {
        hearth__http_conn_close(c);
        return;
    }
    struct sockaddr_storage addr = {0};
    int addr_len = sizeof addr;
    uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&addr, &addr_len);
    if (!(c->peer = hearth__budget_peer(s->budget, &addr)) ||
        !handshake_allowed(s, &addr) || hearth__http_tls_accept(c)) {
        hearth__http_conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    /* One address may not take every connection: past its share it makes
     * room among its own. */
    if (room && hearth__budget_peer_connections(c->peer) > s->limits.max_peer_connections &&
        !make_room(s, c->peer, c)) {
        hearth__http_give_up(
            c, 503, "Server busy: too many connections from this address");
        return;
    }
    if (!room) {
        /* Every connection is busy: say so rather than leave it hanging
         * (the bound is below the file limit, so accepting still works). */
        hearth__http_give_up(c, 503, "Server busy: too many connections");
        return;
    }
    hearth__http_wait_for(c, s->limits.header_ms, 0);
    hearth__http_start_reading(c);
}

int hearth__http_listen(uv_loop_t *loop, const char *host, int port,
                        const hearth__http_limits *limits,
                        hearth__http_handler handler, void *ctx,
                        hearth__http_server **out, hearth_error_t *err) {
    hearth__http_init_parsing();
    if (strcmp(host, "localhost") == 0)
        host = "127.0.0.1";
    struct sockaddr_storage addr;
    int rc = strchr(host, ':')
                 ? uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr)
                 : uv_ip4_addr(host, port, (struct sockaddr_in *)&addr);
    if (rc)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "invalid host \"%s\": give an IP address", host);
    hearth__http_server *s = hearth__calloc(1, sizeof *s);
    if (!s)
        return hearth__error_code(err, HEARTH_ENOMEM);
    s->loop = loop;
    s->limits = *limits;
    atomic_init(&s->handshakes_per_s, HEARTH__HANDSHAKES_PER_S);
    atomic_init(&s->handshake_burst, HEARTH__HANDSHAKE_BURST);
    if (hearth__budget_create(limits->max_held, limits->peer_share,
                              &s->budget) ||
        uv_mutex_init(&s->tls_lock)) {
        hearth__budget_free(s->budget);
        hearth__free(s);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    s->handler = handler;
    s->ctx = ctx;
    uv_tcp_init(loop, &s->listener);
    s->listener.data = s;
    s->open_handles = 3;
    hearth__http_cork_start(s);
    uv_timer_init(loop, &s->sweep);
    s->sweep.data = s;
    uv_timer_start(&s->sweep, on_sweep, sweep_interval(limits),
                   sweep_interval(limits));
    rc = uv_tcp_bind(&s->listener, (const struct sockaddr *)&addr, 0);
    if (!rc)
        rc = uv_listen((uv_stream_t *)&s->listener, 4096, on_connection);
    if (rc) {
        hearth__error(err, HEARTH_EIO, NULL, "cannot listen on %s:%d: %s", host,
                      port, uv_strerror(rc));
        /* Freed by the close callbacks, when the loop next runs. */
        s->closing = true;
        uv_close((uv_handle_t *)&s->listener, on_listener_closed);
        uv_close((uv_handle_t *)&s->sweep, on_listener_closed);
        hearth__http_cork_stop(s, on_listener_closed);
        return HEARTH_EIO;
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &len);
    s->port = ntohs(bound.ss_family == AF_INET6
                        ? ((struct sockaddr_in6 *)&bound)->sin6_port
                        : ((struct sockaddr_in *)&bound)->sin_port);
    *out = s;
    return 0;
}

int hearth__http_port(const hearth__http_server *s) { return s->port; }

void hearth__http_set_handshake_rate(hearth__http_server *s, unsigned per_s,
                                     unsigned burst) {
    atomic_store(&s->handshakes_per_s, per_s);
    atomic_store(&s->handshake_burst, burst);
}

uint64_t hearth__http_handshakes_refused(const hearth__http_server *s) {
    return s->handshakes_refused;
}

uint64_t hearth__http_helper_writes(const hearth__http_server *s) {
    return s->helper_writes;
}

void hearth__http_set_observer(hearth__http_server *s,
                               void (*observe)(void *ctx,
                                               const hearth__http_record *r)) {
    s->observe = observe;
}

hearth__http_note *hearth__http_note_of(hearth__http_conn *c) {
    if (!c->note)
        c->note = hearth__calloc(1, sizeof *c->note);
    return c->note ? c->note : &c->server->spare_note;
}

void hearth__http_traffic(const hearth__http_server *s, uint64_t *in,
                          uint64_t *out, uint64_t *writes, size_t *open) {
    *in = s->bytes_in;
    *out = s->bytes_out;
    *writes = s->writes;
    *open = s->nconns;
}

void hearth__http_set_head_handler(hearth__http_server *s,
                                   hearth__http_head_handler on_head) {
    s->on_head = on_head;
}

/* The listener's, the sweep timer's or the cork flush's close. */
static void on_listener_closed(uv_handle_t *h) {
    server_handle_closed(h->data);
}

void hearth__http_close(hearth__http_server *s, void (*done)(void *ctx),
                        void *ctx) {
    s->closing = true;
    s->done = done;
    s->done_ctx = ctx;
    HEARTH__LIST_EACH_SAFE(n, &s->conns) {
        hearth__http_conn *c = HEARTH__CONN_OF(n);
        if (!c->busy || c->streaming)
            hearth__http_conn_close(c); /* busy ones close once answered */
        else
            c->close_when_sent = true;
    }
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
    uv_close((uv_handle_t *)&s->sweep, on_listener_closed);
    hearth__http_cork_stop(s, on_listener_closed);
}

const char *hearth__http_get_header(const hearth__http_request *req,
                                const char *name) {
    for (size_t i = 0; i < req->nheaders; i++) {
        const char *field = req->field_at[2 * i];
        if (field[0] == name[0] && strcmp(field, name) == 0)
            return req->field_at[2 * i + 1];
    }
    return NULL;
}

void hearth__http_set_meter(hearth__http_conn *c, hearth__http_meter *m) {
    c->meter = m;
}
