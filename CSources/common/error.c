/* error.c - the error table, hearth_strerror / hearth_err_name, and the
 * helper that fills a hearth_error_t. */
#include "common/internal.h"

#include <stdio.h>
#include <string.h>

/* One row per code: the single source of names and messages. */
#define HEARTH__ERRNO_MAP(XX)                                                  \
    XX(OK, "success")                                                          \
    XX(ENOMEM, "out of memory")                                                \
    XX(EINVAL, "invalid argument")                                             \
    XX(EJSON, "malformed JSON")                                                \
    XX(EKEY, "invalid key")                                                    \
    XX(EPATH, "invalid path")                                                  \
    XX(EDEPTH, "data nested deeper than 32 levels")                            \
    XX(ETOOBIG, "key, string or value over its size limit")                    \
    XX(ENUMBER, "number is NaN or infinite")                                   \
    XX(EPRIORITY, "invalid priority")                                          \
    XX(ESERVERVALUE, "invalid server value")                                   \
    XX(EVALUE, "invalid value")                                                \
    XX(EUPDATE, "update paths overlap")                                        \
    XX(EREADONLY, "location is read-only")                                     \
    XX(EQUERY, "invalid query")                                                \
    XX(ECLOSED, "database is closed")                                          \
    XX(ECANCELED, "operation canceled")                                        \
    XX(EABORTED, "transaction aborted")                                        \
    XX(ENOTFOUND, "not found")                                                 \
    XX(EIO, "input/output error")                                              \
    XX(ELOOP, "event loop error")                                              \
    XX(EUNSUPPORTED, "not supported")                                          \
    XX(EDENIED, "permission denied")                                           \
    XX(EOFFLINE, "client offline with no active listeners and no matching disk cache entries") \
    XX(EMAXRETRY, "transaction retried too many times")                        \
    XX(EDISCONNECTED, "the connection was lost")                               \
    XX(EOVERRIDDEN, "a later set replaced the transaction's value")            \
    XX(EREMOTE, "the server refused the request")                              \
    XX(EDATASTALE, "the value changed since it was read")                      \
    XX(ENOSPC, "no space left on the data directory's disk")

const char *hearth_strerror(int err) {
#define XX(name, msg)                                                          \
    if (err == HEARTH_##name)                                                  \
        return msg;
    HEARTH__ERRNO_MAP(XX)
#undef XX
    return "unknown error";
}

const char *hearth_err_name(int err) {
#define XX(name, msg)                                                          \
    if (err == HEARTH_##name)                                                  \
        return "HEARTH_" #name;
    HEARTH__ERRNO_MAP(XX)
#undef XX
    return "HEARTH_UNKNOWN";
}

/* Messages quote keys and paths cut to fit (%.64s, the 256-byte fields),
 * which can split a multi-byte character. Replace every byte that does not
 * start a valid UTF-8 sequence with '?', so that the texts stay valid UTF-8
 * (they end up in JSON bodies and Swift strings). */
static void make_utf8(char *s) {
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (n <= len - i && hearth__utf8_valid(s + i, n)) {
            i += n;
            continue;
        }
        s[i++] = '?';
    }
}

int hearth__error(hearth_error_t *err, int code, const char *path,
                  const char *fmt, ...) {
    if (err) {
        err->code = code;
        err->line = 0;
        err->column = 0;
        snprintf(err->path, sizeof err->path, "%s", path ? path : "");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        make_utf8(err->path);
        make_utf8(err->message);
    }
    return code;
}

int hearth__error_code(hearth_error_t *err, int code) {
    return hearth__error(err, code, NULL, "%s", hearth_strerror(code));
}

/* The version text, spelled from the header's numbers. */
#define HEARTH__STR(x) #x
#define HEARTH__XSTR(x) HEARTH__STR(x)

const char *hearth_version(void) {
    return HEARTH__XSTR(HEARTH_VERSION_MAJOR) "." HEARTH__XSTR(
        HEARTH_VERSION_MINOR) "." HEARTH__XSTR(HEARTH_VERSION_PATCH);
}

unsigned hearth_version_number(void) { return HEARTH_VERSION_HEX; }
