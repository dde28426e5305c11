/*
 * url.h - the http:// and https:// URLs the server dials out to (trigger
 * endpoints, token key sets), parsed once into what a request needs. One
 * parser, so every door that takes a URL refuses the same bad ones with the
 * same words.
 */
#ifndef HEARTH_NET_URL_H
#define HEARTH_NET_URL_H

#include "common/internal.h"

#include <stdbool.h>

enum {
    HEARTH__URL_HTTP = 1,  /* http:// allowed */
    HEARTH__URL_HTTPS = 2, /* https:// allowed */
    HEARTH__URL_MAX = 2048 /* bytes of a URL, at most */
};

typedef struct hearth__url {
    bool tls;        /* https:// */
    char *host;      /* a name or an address; an IPv6 one without brackets */
    char *port;      /* as given, else "80" or "443" */
    char *authority; /* the Host header: host[:port] as written */
    char *path;      /* "/" at least, with any query */
} hearth__url;

/* Parses url, of one of the schemes allowed. HEARTH_EINVAL with err naming
 * what is wrong, its message beginning "<what> \"<url>\": ": another
 * scheme, no host, user information, a bad port, a fragment, a space or a
 * control character, more than HEARTH__URL_MAX bytes. HEARTH_ENOMEM. On
 * success free *out with hearth__url_free. */
int hearth__url_parse(const char *url, unsigned schemes, const char *what,
                      hearth__url *out, hearth_error_t *err);
void hearth__url_free(hearth__url *u);

#endif
