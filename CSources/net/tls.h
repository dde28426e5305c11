/*
 * tls.h - TLS over memory buffers (OpenSSL memory BIOs), internal to the
 * core: the caller moves the bytes between the socket and this session,
 * so TLS sits on any libuv stream and runs on the loop's thread without
 * blocking. The realtime client uses it for wss://, the server for
 * https:// and wss:// (only the constructor differs).
 *
 * The flow: bytes read from the socket go in with hearth__tls_feed;
 * hearth__tls_handshake, then hearth__tls_read give what they decrypt;
 * hearth__tls_write encrypts; after each step, hearth__tls_take hands
 * over what must go to the socket (handshake messages, alerts, records).
 * Not thread-safe.
 */
#ifndef HEARTH_NET_TLS_H
#define HEARTH_NET_TLS_H

#include "common/internal.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct hearth__tls hearth__tls;

/* Whether this build has a TLS client: net/tls.c (OpenSSL, Linux) has;
 * net/apple/tls.c (macOS, iOS, whose SDK has no OpenSSL) has not, so
 * there an https:// or wss:// database URL needs the program's transport
 * (hearth_db_config_t.transport) and is refused at open without one. */
bool hearth__tls_client_available(void);

/* A TLS client for host (a name or an IP literal): TLS 1.2 or later, the
 * system's trust store, the peer's certificate checked against host, SNI
 * for names, ALPN http/1.1. HEARTH_ENOMEM, or HEARTH_EIO when OpenSSL
 * refuses the setup (nothing is left allocated then). */
int hearth__tls_client_create(const char *host, hearth__tls **out);
void hearth__tls_free(hearth__tls *t);

/* A server's certificate chain and key, loaded from PEM files: TLS 1.2 or
 * later, forward-secret AEAD ciphers only, no renegotiation, no
 * compression. Errors name the file at fault (HEARTH_EIO). Sessions made
 * from it keep what they need, so it may be freed (or replaced by a new
 * load, as on SIGHUP) while they go on. */
typedef struct hearth__tls_config hearth__tls_config;
int hearth__tls_config_load(const char *cert_file, const char *key_file,
                            hearth__tls_config **out, hearth_error_t *err);
void hearth__tls_config_free(hearth__tls_config *c);
/* A server session for one accepted connection. HEARTH_ENOMEM. */
int hearth__tls_server_create(hearth__tls_config *c, hearth__tls **out);

/* Ciphertext read from the socket. HEARTH_ENOMEM when it cannot be held. */
int hearth__tls_feed(hearth__tls *t, const char *data, size_t len);
/* Advances the handshake: 1 when it is complete, 0 when it waits for more
 * input, HEARTH_EIO when it failed (hearth__tls_why says why; an alert
 * may wait in hearth__tls_take for the peer). */
int hearth__tls_handshake(hearth__tls *t);
/* Decrypted bytes into buf: their count, 0 when none until more input,
 * HEARTH_ECLOSED when the peer ended TLS (close_notify), HEARTH_EIO. */
int hearth__tls_read(hearth__tls *t, char *buf, size_t cap);
/* Encrypts all of data (the records wait for hearth__tls_take). */
int hearth__tls_write(hearth__tls *t, const char *data, size_t len);
/* The ciphertext waiting for the socket, in a new buffer (*out, *len), or
 * *out NULL when there is none. HEARTH_ENOMEM, HEARTH_EIO. */
int hearth__tls_take(hearth__tls *t, char **out, size_t *len);
/* Queues close_notify (best effort; take it afterwards). */
void hearth__tls_close_notify(hearth__tls *t);
/* Why `what` failed, into out: the certificate check, else OpenSSL's
 * error queue (which this clears). */
void hearth__tls_why(hearth__tls *t, const char *what, char *out, size_t cap);

#endif
