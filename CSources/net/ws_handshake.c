/* ws_handshake.c - the client's opening handshake (see ws_handshake.h). */
#include "net/ws_handshake.h"

#include "net/ws_accept.h"
#include "os/os.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int hearth__ws_handshake_init(hearth__ws_handshake *h) {
    memset(h, 0, sizeof *h);
    hearth__buf_init(&h->reason);
    hearth__buf_init(&h->field);
    hearth__buf_init(&h->value);
    http_parser_init(&h->parser, HTTP_RESPONSE);
    h->parser.data = h;
    unsigned char raw[16];
    if (hearth__os_random(raw, sizeof raw))
        return HEARTH_EIO;
    hearth__base64(raw, sizeof raw, h->key);
    return hearth__ws_accept_key(h->key, h->accept);
}

void hearth__ws_handshake_free(hearth__ws_handshake *h) {
    hearth__buf_free(&h->reason);
    hearth__buf_free(&h->field);
    hearth__buf_free(&h->value);
}

void hearth__ws_handshake_request(const hearth__ws_handshake *h,
                                  hearth__buf *out, const char *host,
                                  int port, bool tls, const char *resource) {
    bool v6 = strchr(host, ':') != NULL;
    char port_text[16] = "";
    if (port != (tls ? 443 : 80))
        snprintf(port_text, sizeof port_text, ":%d", port);
    hearth__buf_printf(out,
                       "GET %s HTTP/1.1\r\n"
                       "Host: %s%s%s%s\r\n"
                       "Upgrade: websocket\r\n"
                       "Connection: Upgrade\r\n"
                       "Sec-WebSocket-Key: %s\r\n"
                       "Sec-WebSocket-Version: 13\r\n"
                       "User-Agent: Hearth/%s\r\n"
                       "\r\n",
                       resource, v6 ? "[" : "", host, v6 ? "]" : "",
                       port_text, h->key, hearth_version());
}

/* ---- what the headers say ---- */

static bool is_space(char ch) { return ch == ' ' || ch == '\t'; }

/* Does the text [s, s+len) equal word, ignoring case? */
static bool same_word(const char *s, size_t len, const char *word) {
    return strlen(word) == len && strncasecmp(s, word, len) == 0;
}

/* Does a comma-separated list hold the token, ignoring case? */
static bool has_token(const char *s, size_t len, const char *token) {
    const char *end = s + len;
    while (s < end) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *stop = comma ? comma : end;
        const char *a = s, *b = stop;
        while (a < b && is_space(*a))
            a++;
        while (b > a && is_space(b[-1]))
            b--;
        if (same_word(a, (size_t)(b - a), token))
            return true;
        s = comma ? comma + 1 : end;
    }
    return false;
}

/* Notes what the header just read (field, value) says about the upgrade. */
static void note_header(hearth__ws_handshake *h) {
    const char *name = h->field.data ? h->field.data : "";
    const char *v = h->value.data ? h->value.data : "";
    size_t nlen = h->field.len, vlen = h->value.len;
    while (vlen && is_space(v[vlen - 1]))
        vlen--;
    if (same_word(name, nlen, "upgrade"))
        h->upgrade = same_word(v, vlen, "websocket");
    else if (same_word(name, nlen, "connection"))
        h->connection |= has_token(v, vlen, "upgrade");
    else if (same_word(name, nlen, "sec-websocket-accept"))
        h->accepted = vlen == strlen(h->accept) && !memcmp(v, h->accept, vlen);
    else if (same_word(name, nlen, "sec-websocket-extensions") ||
             same_word(name, nlen, "sec-websocket-protocol"))
        h->extra |= vlen > 0; /* we asked for neither (RFC 6455 4.1) */
    h->field.len = h->value.len = 0;
    h->in_value = false;
}

/* ---- http-parser's callbacks ---- */

static int on_status(http_parser *p, const char *at, size_t len) {
    hearth__ws_handshake *h = p->data;
    hearth__buf_add(&h->reason, at, len);
    return h->reason.failed ? -1 : 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len) {
    hearth__ws_handshake *h = p->data;
    if (h->in_value)
        note_header(h);
    hearth__buf_add(&h->field, at, len);
    return h->field.failed ? -1 : 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len) {
    hearth__ws_handshake *h = p->data;
    h->in_value = true;
    hearth__buf_add(&h->value, at, len);
    return h->value.failed ? -1 : 0;
}

/* The head is complete: no body and no second response follow (2), so
 * that the parser stops where the frames begin. */
static int on_headers_complete(http_parser *p) {
    hearth__ws_handshake *h = p->data;
    if (h->in_value)
        note_header(h);
    h->done = true;
    return 2;
}

static const http_parser_settings settings = {
    .on_status = on_status,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
};

/* ---- reading the answer ---- */

/* Keeps the answer's first bytes, to name what came when it is refused. */
static void keep_start(hearth__ws_handshake *h, const char *data,
                       size_t len) {
    size_t room = sizeof h->first_line - 1 - h->first_len;
    size_t n = len < room ? len : room;
    memcpy(h->first_line + h->first_len, data, n);
    h->first_len += n;
}

/* Notes a header line of the head that starts with a space or tab:
 * obsolete folding, which http-parser joins but a handshake must not
 * use. */
static void watch_folding(hearth__ws_handshake *h, const char *data,
                          size_t len) {
    for (size_t i = 0; i < len; i++) {
        if (h->tail[0] == '\r' && h->tail[1] == '\n' && is_space(data[i]))
            h->folded = true;
        h->tail[0] = h->tail[1];
        h->tail[1] = data[i];
    }
}

/* The status line as sent (up to its end or 100 bytes), printable. */
static void describe_start(const hearth__ws_handshake *h, char *out,
                           size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < h->first_len && n + 1 < cap; i++) {
        char ch = h->first_line[i];
        if (ch == '\r' || ch == '\n')
            break;
        out[n++] = ch >= 0x20 && ch < 0x7f ? ch : '?';
    }
    out[n] = '\0';
}

/* Refuses the answer: HEARTH_EIO, with why. */
HEARTH__PRINTF(2, 3)
static int refuse(hearth__ws_handshake *h, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->why, sizeof h->why, fmt, ap);
    va_end(ap);
    return HEARTH_EIO;
}

/* A status line http-parser could not read, or not HTTP/1.x. */
static bool not_http(const hearth__ws_handshake *h) {
    return h->parser.http_major != 1 ||
           (!h->done && h->parser.status_code == 0);
}

/* Judges a complete head. */
static int check(hearth__ws_handshake *h) {
    char line[128];
    describe_start(h, line, sizeof line);
    if (not_http(h))
        return refuse(h, "not an HTTP response: \"%s\"", line);
    if (h->parser.status_code != 101)
        return refuse(h, "the server refused the upgrade: %s", line);
    if (h->folded)
        return refuse(h, "malformed header in the handshake response");
    const char *problem =
        !h->upgrade      ? "no Upgrade: websocket"
        : !h->connection ? "no Connection: Upgrade"
        : !h->accepted   ? "a wrong Sec-WebSocket-Accept"
        : h->extra       ? "an extension or subprotocol not asked for"
                         : NULL;
    if (problem)
        return refuse(h, "bad handshake response: %s", problem);
    return HEARTH__WSH_OPEN;
}

/* The parser stopped on an error before the head was complete. */
static int parse_error(hearth__ws_handshake *h) {
    enum http_errno e = HTTP_PARSER_ERRNO(&h->parser);
    if (h->reason.failed || h->field.failed || h->value.failed)
        return HEARTH_ENOMEM;
    char line[128];
    describe_start(h, line, sizeof line);
    if (h->parser.status_code == 0)
        return refuse(h, "not an HTTP response: \"%s\"", line);
    if (h->folded || e != HPE_HEADER_OVERFLOW)
        return refuse(h, "malformed header in the handshake response (%s)",
                      http_errno_name(e));
    return refuse(h, "the handshake response's headers are too large");
}

int hearth__ws_handshake_read(hearth__ws_handshake *h, const char *data,
                              size_t len, size_t *used) {
    keep_start(h, data, len);
    size_t n = http_parser_execute(&h->parser, &settings, data, len);
    watch_folding(h, data, n);
    h->head_len += n;
    *used = n;
    if (h->head_len > HEARTH__WSH_MAX_HEAD)
        return refuse(h, "the handshake response's headers are too large");
    if (h->done)
        return check(h);
    if (HTTP_PARSER_ERRNO(&h->parser) != HPE_OK)
        return parse_error(h);
    return HEARTH__WSH_MORE;
}
