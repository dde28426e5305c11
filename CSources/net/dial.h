/*
 * dial.h - one outgoing connection, plain or TLS, for a thread that may
 * block (a trigger's deliverer, the token key fetcher), never the loop.
 * Every wait ends at the caller's deadline, or at once when the cancel
 * descriptor becomes readable (the server stopping), so a slow or silent
 * peer costs at most the deadline. TLS as tls.h's client sets it up: the
 * system's trust store, the certificate checked against the URL's host.
 *
 * Errors: HEARTH_ECANCELED (cancel_fd readable), HEARTH_EDISCONNECTED (the
 * deadline passed), HEARTH_EIO (anything else); each leaves why[] saying
 * what happened. Not thread-safe: one thread uses a dial at a time.
 */
#ifndef HEARTH_NET_DIAL_H
#define HEARTH_NET_DIAL_H

#include "net/tls.h"
#include "net/url.h"

#include <stdint.h>
#include <sys/types.h>

typedef struct hearth__dial {
    int fd;               /* -1: not connected */
    hearth__tls *tls;     /* NULL on a plain connection */
    int cancel_fd;        /* readable: give up now (-1: none) */
    int64_t deadline_ms;  /* monotonic (hearth__dial_now_ms); the caller's */
    char why[200];
} hearth__dial;

int64_t hearth__dial_now_ms(void);

/* A dial with no connection: fd -1, the given cancel descriptor. */
void hearth__dial_init(hearth__dial *d, int cancel_fd);
/* Connects to u's host and port (each address in turn), then for https://
 * completes the TLS handshake. */
int hearth__dial_open(hearth__dial *d, const hearth__url *u);
/* Sends all of data (encrypted on TLS). */
int hearth__dial_send(hearth__dial *d, const char *data, size_t len);
/* Bytes received (decrypted) into buf: their count, 0 when the peer ended
 * the connection, or an error. */
ssize_t hearth__dial_recv(hearth__dial *d, char *buf, size_t cap);
/* Closes the connection (the dial may open again). */
void hearth__dial_close(hearth__dial *d);

#endif
