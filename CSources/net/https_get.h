/*
 * https_get.h - one bounded HTTPS GET, blocking, meant for a thread of its
 * own (the server fetches token keys with it, off its loop). TLS as
 * tls.h's client sets it up: the system's trust store (OpenSSL honours
 * SSL_CERT_FILE and SSL_CERT_DIR), the certificate checked against the
 * host. Everything, name lookup aside, happens within the deadline; the
 * body may hold at most max_bytes; a byte written to cancel_fd from
 * another thread ends the request at once. So a slow, endless or huge
 * answer costs at most the deadline and max_bytes of memory.
 */
#ifndef HEARTH_NET_HTTPS_GET_H
#define HEARTH_NET_HTTPS_GET_H

#include "common/internal.h"

#include <stdint.h>

typedef struct hearth__https_limits {
    size_t max_bytes; /* of the body */
    int deadline_ms;  /* for the whole request, from its start */
    int cancel_fd;    /* readable: stop now (-1: none) */
} hearth__https_limits;

typedef struct hearth__https_result {
    int status;        /* the HTTP status, 0 when none arrived */
    char *body;        /* NUL-terminated (hearth__https_result_free) */
    size_t len;
    int64_t max_age_s; /* Cache-Control max-age less Age, or -1: none */
    char error[256];   /* why it failed */
} hearth__https_result;

/* Checks that url is https://HOST[:PORT][/PATH] (HOST a name, an IPv4
 * address or a [bracketed] IPv6 one; no user, no fragment, no spaces or
 * control characters). HEARTH_EINVAL naming what is wrong. */
int hearth__https_url_check(const char *url, hearth_error_t *err);

/* GETs url (Connection: close, no compression) and fills *out: 0 for a
 * 200 answer with its whole body, else HEARTH_EIO with out->error saying
 * why (the URL, the connection, the certificate, the status, the size,
 * the deadline, the cancel). Free out with hearth__https_result_free
 * either way. */
int hearth__https_get(const char *url, const hearth__https_limits *limits,
                      hearth__https_result *out);
void hearth__https_result_free(hearth__https_result *r);

#endif
