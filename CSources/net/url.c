/* url.c - http:// and https:// URLs (url.h). */
#include "net/url.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

void hearth__url_free(hearth__url *u) {
    hearth__free(u->host);
    hearth__free(u->port);
    hearth__free(u->authority);
    hearth__free(u->path);
    memset(u, 0, sizeof *u);
}

/* The scheme's length (7 or 8), 0 when it is not one allowed. */
static size_t scheme_of(const char *url, unsigned schemes, bool *tls) {
    if ((schemes & HEARTH__URL_HTTP) && !strncasecmp(url, "http://", 7)) {
        *tls = false;
        return 7;
    }
    if ((schemes & HEARTH__URL_HTTPS) && !strncasecmp(url, "https://", 8)) {
        *tls = true;
        return 8;
    }
    return 0;
}

static bool port_ok(const char *p, size_t len) {
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9' || len > 5)
            return false;
        v = v * 10 + (p[i] - '0');
    }
    return len > 0 && v >= 1 && v <= 65535;
}

int hearth__url_parse(const char *url, unsigned schemes, const char *what,
                      hearth__url *out, hearth_error_t *err) {
    memset(out, 0, sizeof *out);
#define BAD(...) hearth__error(err, HEARTH_EINVAL, NULL, __VA_ARGS__)
    if (!url)
        return BAD("no %s", what);
    size_t len = strlen(url);
    if (len > HEARTH__URL_MAX)
        return BAD("%s of %zu bytes (at most %d)", what, len, HEARTH__URL_MAX);
    for (const char *c = url; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7F)
            return BAD("%s \"%.200s\": a space or a control character", what,
                       url);
    size_t skip = scheme_of(url, schemes, &out->tls);
    if (!skip)
        return BAD("%s \"%.200s\" is not %s", what, url,
                   schemes == HEARTH__URL_HTTPS  ? "https://"
                   : schemes == HEARTH__URL_HTTP ? "http://"
                                                 : "http:// or https://");
    if (strchr(url, '#'))
        return BAD("%s \"%.200s\": a fragment (#) is never sent", what, url);
    const char *auth = url + skip;
    size_t alen = strcspn(auth, "/?");
    const char *rest = auth + alen;
    if (memchr(auth, '@', alen))
        return BAD("%s \"%.200s\": credentials in a URL are not supported",
                   what, url);
    const char *host = auth, *port = NULL;
    size_t hlen = alen, plen = 0;
    if (alen && auth[0] == '[') {
        const char *close = memchr(auth, ']', alen);
        if (!close)
            return BAD("%s \"%.200s\": '[' without ']'", what, url);
        host = auth + 1;
        hlen = (size_t)(close - host);
        if (close + 1 < rest && close[1] != ':')
            return BAD("%s \"%.200s\": text after the IPv6 address", what,
                       url);
        if (close + 1 < rest) {
            port = close + 2;
            plen = (size_t)(rest - port);
        }
    } else {
        const char *colon = memchr(auth, ':', alen);
        if (colon) {
            hlen = (size_t)(colon - auth);
            port = colon + 1;
            plen = (size_t)(rest - port);
        }
    }
    if (hlen == 0)
        return BAD("%s \"%.200s\": no host", what, url);
    if (port && !port_ok(port, plen))
        return BAD("%s \"%.200s\": the port must be 1 to 65535", what, url);
#undef BAD
    out->host = hearth__strndup(host, hlen);
    out->port = port ? hearth__strndup(port, plen)
                     : hearth__strndup(out->tls ? "443" : "80",
                                       out->tls ? 3 : 2);
    out->authority = hearth__strndup(auth, alen);
    size_t rlen = strlen(rest);
    out->path = hearth__malloc(rlen + 2); /* "?q" becomes "/?q" */
    if (out->path)
        snprintf(out->path, rlen + 2, "%s%s", *rest == '/' ? "" : "/", rest);
    if (!out->host || !out->port || !out->authority || !out->path) {
        hearth__url_free(out);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    return 0;
}
