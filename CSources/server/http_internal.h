/*
 * http_internal.h - what the parts of the HTTP server share: the server
 * and connection structs and the calls between http_conn.c (connections,
 * timeouts, the connection limit, listening), http_parse.c (requests in,
 * refusals), http_respond.c (answers and streams out) and http_upgrade.c
 * (connections handed to another protocol), http_tls.c (HTTPS) and
 * http_cork.c (a connection's fan-out frames of one loop turn written
 * together). Loop thread only, but for the TLS certificate's lock.
 */
#ifndef HEARTH_SERVER_HTTP_INTERNAL_H
#define HEARTH_SERVER_HTTP_INTERNAL_H

#include "server/http.h"

#include "common/list.h"
#include "server/budget.h"
#include "server/handshake_rate.h"

#include "net/tls.h"

#include <http_parser.h>
#include <stdatomic.h>

/* Bytes one read takes at most. */
#define HEARTH__HTTP_READ_CHUNK (64 * 1024)
/* Frames one connection holds for its one writev (http_cork.c). */
#define HEARTH__HTTP_CORK_MAX 16

typedef struct hearth__http_cork hearth__http_cork;
typedef struct hearth__http_cork_helper hearth__http_cork_helper;

struct hearth__http_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    hearth__http_limits limits;
    hearth__budget *budget; /* held bodies and messages, per peer */
    hearth__http_handler handler;
    hearth__http_head_handler on_head;
    void (*observe)(void *ctx, const hearth__http_record *r);
    uint64_t bytes_in, bytes_out;
    uint64_t writes; /* writes to sockets begun (a writev or a uv_write) */
    uint64_t helper_writes; /* ... of which the cork's helper thread made */
    void *ctx;
    hearth__list conns; /* newest first */
    size_t nconns;   /* open, not closing */
    uv_timer_t sweep; /* times connections out */
    int port;
    /* HTTPS: the certificate new connections use (NULL: plain HTTP),
     * replaced from any thread under tls_lock. */
    hearth__tls_config *tls;
    uv_mutex_t tls_lock;
    /* TLS handshakes each address may start (made with the first TLS
     * connection), and the connections refused for starting too many */
    hearth__handshake_rate *handshakes;
    uint64_t handshakes_refused;
    _Atomic unsigned handshakes_per_s, handshake_burst; /* test hook's */
    bool closing;
    int open_handles; /* listener + sweep timer + cork flush */
    /* http_cork.c: connections holding frames until the prepare callback
     * (cork_flush) writes them */
    uv_prepare_t cork_flush;
    hearth__http_conn **corked;
    size_t ncorked, corked_cap;
    hearth__http_cork_helper *helper; /* the second writer, once needed */
    /* Connection structs not yet freed: a closed connection whose request
     * still awaits its answer (a write waiting for its commit) keeps its
     * struct, which points here, until it is answered. */
    int live_conns;
    void (*done)(void *ctx);
    void *done_ctx;
    /* Every read lands here first (one read at a time on the loop); a
     * connection copies into its own `in` only what it must keep past
     * the read, so an idle connection holds no input buffer. */
    char read_buf[HEARTH__HTTP_READ_CHUNK];
    /* Where a note goes when no memory can be had for it: never read. */
    hearth__http_note spare_note;
};

#define HEARTH__CONN_OF(n) HEARTH__LIST_ITEM(n, hearth__http_conn, link)

struct hearth__http_conn {
    uv_tcp_t tcp;
    hearth__http_server *server;
    hearth__list link; /* in the server's conns */
    int refs; /* the handle, and a request being answered */
    http_parser parser;
    char *in; /* input kept past a read, unparsed from in_off; NULL: none */
    size_t in_len, in_off, in_cap;
    /* the request being parsed */
    hearth__http_request req;
    hearth__buf url, fields, body;
    size_t name_at; /* in fields: where the field being read begins */
    bool in_value;
    hearth__peer *peer; /* its remote address's share of the budget */
    size_t held;        /* bytes of the budget it holds (the body) */
    int reject_status; /* 413 etc. decided while parsing */
    /* The handler's note of the request answered: allocated when it is
     * first written, freed with the request, so that an idle connection
     * or realtime session (most of them) does not carry its 257 bytes. */
    hearth__http_note *note;
    uint64_t handed_ns;     /* when the request went to its handler */
    bool ready;        /* a complete request awaits its handler */
    bool busy;         /* handed to the handler, not yet answered */
    bool streaming;
    bool closing;
    bool close_when_sent;
    bool processing;
    bool reading;
    bool in_request;   /* a request's bytes have begun to arrive */
    bool head_done;    /* ... and its head is complete */
    bool no_more;      /* answered for good (timeout, refusal): close */
    bool lingering;    /* ... but only once the client has read it */
    /* What the connection waits for times out at `deadline` (loop ms, 0:
     * never), answered with timeout_status (0: closed silently). */
    uint64_t deadline;
    int timeout_status;
    uint64_t since;      /* when the current wait began */
    size_t last_backlog; /* unsent bytes at the last look */
    /* an upgraded connection: when a byte last arrived, whether on_idle
     * was called since */
    uint64_t last_in;
    bool pinged;
    void (*on_idle)(void *ctx);
    int writes_pending;
    void (*on_close)(void *ctx);
    void *on_close_ctx;
    /* HTTPS: the session (ciphertext is read into the server's buffer) */
    hearth__tls *tls;
    bool tls_closed; /* the peer's close_notify came: close once handled */
    /* an upgraded connection: raw bytes in both directions */
    void (*on_data)(void *ctx, char *data, size_t len);
    hearth__http_meter *meter; /* counts bytes out (and in, upgraded) */
    /* http_cork.c: the frames held this turn (NULL: none) */
    hearth__http_cork *cork;
};

/* http_conn.c */
/* Frees the request being parsed or answered, and its budget. */
void hearth__http_free_request(hearth__http_conn *c);
/* Drops one reference; the last frees the connection. */
void hearth__http_conn_release(hearth__http_conn *c);
/* Closes the connection (once); its struct lives on while referenced. */
void hearth__http_conn_close(hearth__http_conn *c);
/* What c waits for next may take timeout_ms (0: forever); past it, the
 * sweep answers `status` (0: closes silently). */
void hearth__http_wait_for(hearth__http_conn *c, uint64_t timeout_ms,
                           int status);

/* http_parse.c */
/* Sets up the parser's callbacks (once per process is enough). */
void hearth__http_init_parsing(void);
/* Parses what has arrived, one request at a time. */
void hearth__http_process(hearth__http_conn *c);
void hearth__http_start_reading(hearth__http_conn *c);
/* Answers whatever c was sending (or nothing yet) with status, then
 * closes: what else arrives is dropped unread. */
void hearth__http_give_up(hearth__http_conn *c, int status,
                          const char *message);

/* http_respond.c */
/* Queues a + b as one write; HEARTH_ECLOSED or HEARTH_ENOMEM (closing c)
 * when it cannot. */
int hearth__http_send_bytes(hearth__http_conn *c, const char *a, size_t alen,
                            const char *b, size_t blen);
/* Whether a head may be sent (no control characters); says why if not. */
bool hearth__http_head_ok(const char *content_type, const char *headers);
/* The handler's answer is in: the next request may be parsed. */
void hearth__http_finish_request(hearth__http_conn *c);
/* Before a stream or an upgrade takes the connection over: 0 when it may
 * (its head is clean, the client is still there); else the request is
 * answered (500 for a bad head) and HEARTH_ECLOSED / HEARTH_EINVAL. */
int hearth__http_may_take_over(hearth__http_conn *c, const char *content_type,
                               const char *headers);
/* The connection becomes the stream's or the new protocol's: its head
 * goes out and on_close runs when it closes. */
void hearth__http_take_over(hearth__http_conn *c, const char *head, size_t len,
                            void (*on_close)(void *ctx), void *ctx);

/* Queues data (taken over, freed when written) as it is: no TLS. */
int hearth__http_send_owned(hearth__http_conn *c, char *data, size_t len);
/* Writes bufs[0..n) in order (n <= HEARTH__HTTP_CORK_MAX), in one writev
 * when the socket takes them, queueing the rest with a reference each.
 * HEARTH_ECLOSED / HEARTH_ENOMEM (closing c) when it cannot. */
int hearth__http_send_shared_bufs(hearth__http_conn *c,
                                  hearth__shared_buf *const *bufs, size_t n);
/* The same after `done` bytes of them were written (done < 0: the write
 * failed and c closed), for a write made elsewhere (http_cork.c's helper
 * thread): queues the rest. */
int hearth__http_shared_bufs_sent(hearth__http_conn *c,
                                  hearth__shared_buf *const *bufs, size_t n,
                                  ssize_t done);
/* Counts a write of c that returned n (bytes, or a libuv error code):
 * the bytes written, 0 when the socket took none (EAGAIN), or
 * HEARTH_ECLOSED once a failed one closed c. */
ssize_t hearth__http_wrote(hearth__http_conn *c, int n);

/* http_cork.c */
/* Holds b (a reference) to go out with the connection's other frames of
 * this turn: false when it must be written now instead (HTTPS, no
 * memory, a closing server or connection), c then holding nothing. */
bool hearth__http_cork_take(hearth__http_conn *c, hearth__shared_buf *b);
/* Writes what c holds, before anything else is sent on it. */
int hearth__http_cork_flush(hearth__http_conn *c);
/* The prepare handle that writes held frames before each wait for I/O. */
void hearth__http_cork_start(hearth__http_server *s);
/* Writes what is held, then closes the handle (closed: its callback). */
void hearth__http_cork_stop(hearth__http_server *s,
                            void (*closed)(uv_handle_t *));

/* http_tls.c */
#define HEARTH__HTTP_TLS_CHUNK (64 * 1024) /* plaintext room made at once */
/* A TLS session for a new connection when the server has a certificate
 * (else nothing). HEARTH_ENOMEM. */
int hearth__http_tls_accept(hearth__http_conn *c);
/* Ciphertext read from the socket: decrypts what it can to after c->in's
 * unparsed bytes without counting it in c->in_len, and sends the session's
 * answers. The count of plaintext bytes, or -1: close the connection.
 * After the peer's close_notify, c->tls_closed: the bytes before it are
 * handled, then the connection closes. */
ssize_t hearth__http_tls_input(hearth__http_conn *c, const char *data,
                               size_t len);
/* Encrypts data into the session (records wait for the flush). */
int hearth__http_tls_seal(hearth__http_conn *c, const char *data, size_t len);
/* Queues what the session has for the peer: records, handshake messages,
 * alerts, session tickets. */
int hearth__http_tls_flush(hearth__http_conn *c);

/* Tells the observer how the request being answered ended. */
void hearth__http_observe(hearth__http_conn *c, const char *kind, int status,
                          size_t bytes_out);

/* http_upgrade.c */
/* The idle check of an upgraded connection (ping, then close). */
void hearth__http_check_upgraded(hearth__http_conn *c, uint64_t now);

#endif
