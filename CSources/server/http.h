/*
 * http.h - an HTTP/1.1 server on libuv, parsing with http-parser.
 *
 * One request is handled at a time per connection: after a complete request
 * the parser pauses until the handler has answered it (now or later), so
 * pipelined requests are answered in order. Keep-alive, chunked bodies and
 * limits are handled here: a header block over the parser's limit gets 431,
 * a body over `max_body` 413, anything malformed 400, a head or body that
 * does not arrive in time 408 — then the connection closes; the server and
 * its other connections carry on. Idle connections time out, and the
 * number of connections is bounded (hearth__http_limits).
 *
 * Responses are either whole (hearth__http_respond) or a stream
 * (hearth__http_stream_*, for server-sent events). A stream whose client
 * stops reading is closed once its unsent data passes `max_backlog`.
 */
#ifndef HEARTH_SERVER_HTTP_H
#define HEARTH_SERVER_HTTP_H

#include "common/internal.h"

#include <uv.h>

typedef struct hearth__http_server hearth__http_server;
typedef struct hearth__http_conn hearth__http_conn;

typedef struct hearth__http_request {
    int method;  /* enum http_method */
    char *target; /* the request target as sent ("/a/b.json?x=y") */
    /* The head's fields in one block (one allocation a request, not two
     * a field): "name\0value\0" each, names in lower case, then where
     * each name and value begins (field_at, two a field). Read them with
     * hearth__http_get_header. */
    char *fields;
    const char **field_at;
    size_t nheaders;
    char *body;
    size_t body_len;
    bool keep_alive;
} hearth__http_request;

/* Called once per request; the handler must answer it exactly once, with
 * hearth__http_respond or a stream, now or later. */
typedef void (*hearth__http_handler)(hearth__http_conn *conn,
                                     const hearth__http_request *req,
                                     void *ctx);

/* Called when a request's head has arrived and a large body is to follow
 * (over HEARTH__HTTP_EARLY_BODY bytes, or chunked); req has no body yet.
 * A nonzero status answers the request at once with {"error": why}; what
 * arrives of its body is then dropped unread, never held or parsed. */
#define HEARTH__HTTP_EARLY_BODY (64 * 1024)
typedef int (*hearth__http_head_handler)(const hearth__http_request *req,
                                         void *ctx, char *why,
                                         size_t why_size);

typedef struct hearth__http_limits {
    size_t max_body;    /* bytes of request body */
    size_t max_backlog; /* unsent bytes of a stream before it is dropped */
    /* Timeouts in ms (0: none). A request's head must arrive within
     * header_ms of its first byte (and a new connection's first request
     * within header_ms); a body may pause at most body_ms; a connection
     * between requests, or a reply the client stops reading, is closed
     * after idle_ms. An upgraded connection silent for idle_ms is asked to
     * answer (on_idle) and closed when still silent after twice that. */
    uint64_t header_ms, body_ms, idle_ms;
    /* Open connections at most: at the bound a new one closes the longest
     * idle (or the slowest still sending its head) to make room, else it
     * is answered 503 and closed. */
    size_t max_connections;
    /* Of which one peer (remote address) may hold at most this many: past
     * it, a new connection of that peer closes the peer's own longest
     * idle one, else it is answered 503. */
    size_t max_peer_connections;
    /* Request bodies (and what an upgraded connection assembles, through
     * hearth__http_hold) held at once, server-wide and by one peer (remote
     * address): past either, a body is refused 503 and its connection
     * closed. */
    size_t max_held, peer_share;
} hearth__http_limits;

int hearth__http_listen(uv_loop_t *loop, const char *host, int port,
                        const hearth__http_limits *limits,
                        hearth__http_handler handler, void *ctx,
                        hearth__http_server **out, hearth_error_t *err);
/* Asks on_head (with the handler's ctx) about large bodies before they
 * are read. */
void hearth__http_set_head_handler(hearth__http_server *s,
                                   hearth__http_head_handler on_head);
/* Serves HTTPS (and WSS) from now on with config (taken over; NULL:
 * plain HTTP again), replacing the certificate of connections accepted
 * from now on; any thread. */
struct hearth__tls_config;
int hearth__http_set_tls(hearth__http_server *s,
                         struct hearth__tls_config *config);
/* The port actually bound (useful with port 0). */
int hearth__http_port(const hearth__http_server *s);
/* Stops listening and closes every connection; `done` runs when all
 * handles are closed and the server is freed. */
void hearth__http_close(hearth__http_server *s, void (*done)(void *ctx),
                        void *ctx);

/* What the handler tells of the request it answers, for the observer
 * (metrics, access logs, the profiler); empty at each new request. */
typedef struct hearth__http_note {
    char ns[64];    /* the namespace ("" when none) */
    char path[192]; /* the location, cut when longer */
    bool unindexed; /* a query that had to scan */
} hearth__http_note;
hearth__http_note *hearth__http_note_of(hearth__http_conn *conn);

/* One answered request, as the observer sees it. kind: "rest" for a
 * whole answer, "sse" for a stream begun, "websocket" for an upgrade. */
typedef struct hearth__http_record {
    const hearth__http_request *req;
    const hearth__http_note *note;
    const char *kind;
    int status;
    size_t bytes_out;     /* the answer's body */
    uint64_t duration_ns; /* from the request's arrival to its answer */
} hearth__http_record;
/* Called (loop thread) for each answered request. */
void hearth__http_set_observer(hearth__http_server *s,
                               void (*observe)(void *ctx,
                                               const hearth__http_record *r));
/* Bytes read from and written to the server's sockets so far (TLS
 * records included), the writes begun, and the connections open now. */
void hearth__http_traffic(const hearth__http_server *s, uint64_t *in,
                          uint64_t *out, uint64_t *writes, size_t *open);
/* Of those writes, the ones a second thread made (a big fan-out's half). */
uint64_t hearth__http_helper_writes(const hearth__http_server *s);
/* Connections closed unanswered: their address had started too many TLS
 * handshakes (handshake_rate.h). */
uint64_t hearth__http_handshakes_refused(const hearth__http_server *s);
/* Test hook: the handshakes one address may start, a second and at once
 * (default handshake_rate.h's). Any thread. */
void hearth__http_set_handshake_rate(hearth__http_server *s, unsigned per_s,
                                     unsigned burst);

/* A header's value by lower-case name, or NULL. */
const char *hearth__http_get_header(const hearth__http_request *req,
                                    const char *name);

/* Whether text (NULL: none) is "Name: value\r\n" lines with no other
 * control character, no empty line and no folded one. The writers below
 * refuse anything else (500 instead): a value that came from a request
 * must never start a header of its own or end the head early. */
bool hearth__http_header_lines_ok(const char *text);

/* Sends a whole response. `headers` holds extra "Name: value\r\n" lines or
 * is NULL. */
void hearth__http_respond(hearth__http_conn *conn, int status,
                          const char *content_type, const char *headers,
                          const char *body, size_t len);

/* Streams: the status line and headers go out at once; the connection then
 * belongs to the stream until hearth__http_stream_end or the client goes.
 * `on_close` runs once when the connection closes, whichever side ends it.
 * HEARTH_ECLOSED (and no on_close) when the client is already gone. */
int hearth__http_stream_begin(hearth__http_conn *conn, int status,
                              const char *content_type, const char *headers,
                              void (*on_close)(void *ctx), void *ctx);
/* Queues data; HEARTH_ECLOSED once the connection is gone or was dropped
 * for exceeding the backlog. */
int hearth__http_stream_send(hearth__http_conn *conn, const char *data,
                             size_t len);
void hearth__http_stream_end(hearth__http_conn *conn);

/* Upgrades the connection of the request being answered (WebSocket):
 * answers 101 with the extra `headers`, then every byte that arrives goes
 * to on_data, and raw bytes are sent with hearth__http_raw_send; on_close
 * runs once when the connection closes. on_data's bytes are lent for the
 * call, and on_data may change them (they are the server's read buffer or
 * the connection's own copy). */
int hearth__http_upgrade(hearth__http_conn *conn, const char *headers,
                         void (*on_data)(void *ctx, char *data, size_t len),
                         void (*on_close)(void *ctx), void *ctx);
/* Called when an upgraded connection has been silent for the idle
 * timeout (a WebSocket sends a ping); any byte received resets it. */
void hearth__http_on_idle(hearth__http_conn *conn, void (*on_idle)(void *ctx));
/* Counts n more bytes that an upgraded connection holds (a message being
 * assembled) against the server's budget and its peer's share; false
 * (nothing counted) when either would be passed. */
bool hearth__http_hold(hearth__http_conn *conn, size_t n);
/* Gives back n bytes counted by hearth__http_hold. */
void hearth__http_unhold(hearth__http_conn *conn, size_t n);
/* Sends a and then b (blen may be 0) on an upgraded connection in one
 * write; HEARTH_ECLOSED as hearth__http_stream_send. */
int hearth__http_raw_send(hearth__http_conn *conn, const char *a, size_t alen,
                          const char *b, size_t blen);

/* Byte counters of a connection (usage per namespace): every byte sent,
 * and every byte received once upgraded (the request handler counts the
 * requests). The meter must outlive the connection. */
typedef struct hearth__http_meter {
    uint64_t in, out;
} hearth__http_meter;
void hearth__http_set_meter(hearth__http_conn *conn, hearth__http_meter *m);

/* Bytes sent to many streams without a copy each (loop thread only). */
typedef struct hearth__shared_buf {
    int refs;
    size_t len;
    char data[];
} hearth__shared_buf;
hearth__shared_buf *hearth__shared_buf_create(const char *data, size_t len);
void hearth__shared_buf_release(hearth__shared_buf *b);
int hearth__http_stream_send_shared(hearth__http_conn *conn,
                                    hearth__shared_buf *b);

#endif
