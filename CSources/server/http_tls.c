/* http_tls.c - HTTPS and WSS on the server's port: a connection of a TLS
 * server decrypts what it reads before anything parses it and encrypts
 * what it writes as it is queued, through net/tls.h, so requests,
 * answers, streams and upgrades above never see TLS. The certificate can
 * be replaced while the server runs (from any thread): connections
 * accepted afterwards use the new one, open ones keep theirs. */
#include "server/http_internal.h"

#include <string.h>

int hearth__http_set_tls(hearth__http_server *s, hearth__tls_config *config) {
    uv_mutex_lock(&s->tls_lock);
    hearth__tls_config *old = s->tls;
    s->tls = config;
    uv_mutex_unlock(&s->tls_lock);
    hearth__tls_config_free(old);
    return 0;
}

int hearth__http_tls_accept(hearth__http_conn *c) {
    hearth__http_server *s = c->server;
    int rc = 0;
    uv_mutex_lock(&s->tls_lock);
    if (s->tls)
        rc = hearth__tls_server_create(s->tls, &c->tls);
    uv_mutex_unlock(&s->tls_lock);
    return rc;
}

int hearth__http_tls_flush(hearth__http_conn *c) {
    char *out;
    size_t len;
    int rc = hearth__tls_take(c->tls, &out, &len);
    if (rc || !out)
        return rc;
    return hearth__http_send_owned(c, out, len);
}

/* Room for at least `want` more bytes after c->in_len. */
static bool in_room(hearth__http_conn *c, size_t want) {
    if (c->in_cap - c->in_len >= want)
        return true;
    char *in = hearth__realloc(c->in, c->in_len + want);
    if (!in)
        return false;
    c->in = in;
    c->in_cap = c->in_len + want;
    return true;
}

ssize_t hearth__http_tls_input(hearth__http_conn *c, const char *data,
                               size_t len) {
    if (hearth__tls_feed(c->tls, data, len))
        return -1;
    size_t plain = 0;
    for (;;) {
        /* The bytes decrypted go after those not yet parsed, uncounted:
         * the reader counts them as if they had been read there. */
        if (!in_room(c, plain + HEARTH__HTTP_TLS_CHUNK))
            return -1;
        c->in_len += plain;
        int n = hearth__tls_read(c->tls, c->in + c->in_len,
                                 c->in_cap - c->in_len);
        c->in_len -= plain;
        if (n <= 0) {
            /* A failed handshake's alert still goes out (best effort). */
            if (hearth__http_tls_flush(c) || (n < 0 && n != HEARTH_ECLOSED))
                return -1;
            /* close_notify: what came before it is handled first, as the
             * bytes before a plain connection's end are. */
            c->tls_closed = n == HEARTH_ECLOSED;
            return c->tls_closed && !plain ? -1 : (ssize_t)plain;
        }
        plain += (size_t)n;
    }
}

int hearth__http_tls_seal(hearth__http_conn *c, const char *data,
                          size_t len) {
    return len ? hearth__tls_write(c->tls, data, len) : 0;
}
