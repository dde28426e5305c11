/* apple/tls.c - net/tls.h on macOS and iOS, whose SDK has no OpenSSL:
 * no TLS client of the core's own. The client there reaches servers
 * through the program's transport (hearth_db_config_t.transport: the
 * Swift module's URLSession one, with the system's TLS, trust store and
 * proxies). Without one, an https:// or wss:// database URL is refused
 * when the database opens (hearth__tls_client_available,
 * db/backend_remote.c), so no session is ever made and the functions
 * below past the constructor are never reached.
 * SwiftPM builds this file in place of net/tls.c on Apple platforms
 * (Package.swift, CHearthAppleTLS); the Makefile's Linux build never
 * does. */
#include "net/tls.h"

#include <stdio.h>

bool hearth__tls_client_available(void) {
    return false;
}

int hearth__tls_client_create(const char *host, hearth__tls **out) {
    (void)host;
    *out = NULL;
    return HEARTH_EUNSUPPORTED;
}

/* No session exists: each of these is given NULL or nothing at all. */
void hearth__tls_free(hearth__tls *t) {
    (void)t;
}

bool hearth__tls_ready(const hearth__tls *t) {
    (void)t;
    return false;
}

int hearth__tls_feed(hearth__tls *t, const char *data, size_t len) {
    (void)t, (void)data, (void)len;
    return HEARTH_EUNSUPPORTED;
}

int hearth__tls_handshake(hearth__tls *t) {
    (void)t;
    return HEARTH_EUNSUPPORTED;
}

int hearth__tls_read(hearth__tls *t, char *buf, size_t cap) {
    (void)t, (void)buf, (void)cap;
    return HEARTH_EUNSUPPORTED;
}

int hearth__tls_write(hearth__tls *t, const char *data, size_t len) {
    (void)t, (void)data, (void)len;
    return HEARTH_EUNSUPPORTED;
}

int hearth__tls_take(hearth__tls *t, char **out, size_t *len) {
    (void)t;
    *out = NULL;
    *len = 0;
    return HEARTH_EUNSUPPORTED;
}

void hearth__tls_close_notify(hearth__tls *t) {
    (void)t;
}

void hearth__tls_why(hearth__tls *t, const char *what, char *out, size_t cap) {
    (void)t;
    snprintf(out, cap, "%s: no TLS client in this build", what);
}
