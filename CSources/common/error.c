/* error.c - the error table, hearth_strerror / hearth_err_name, and the
 * helper that fills a hearth_error_t. */
#include "common/internal.h"

#include <stdio.h>
#include <string.h>

/* The table is HEARTH_ERRNO_MAP in hearth.h. Its values must run 0, -1,
 * -2 ... in row order (HEARTH_ERRNO_LAST and the Swift wrapper count on
 * it): each row's value is checked against its position. */
#define XX(name, value, msg) HEARTH__ROW_##name,
enum { HEARTH_ERRNO_MAP(XX) };
#undef XX
#define XX(name, value, msg)                                                   \
    _Static_assert(HEARTH_##name == -HEARTH__ROW_##name,                       \
                   "HEARTH_" #name " is out of order in HEARTH_ERRNO_MAP");
HEARTH_ERRNO_MAP(XX)
#undef XX

const char *hearth_strerror(int err) {
#define XX(name, value, msg)                                                   \
    if (err == HEARTH_##name)                                                  \
        return msg;
    HEARTH_ERRNO_MAP(XX)
#undef XX
    return "unknown error";
}

const char *hearth_err_name(int err) {
#define XX(name, value, msg)                                                   \
    if (err == HEARTH_##name)                                                  \
        return "HEARTH_" #name;
    HEARTH_ERRNO_MAP(XX)
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

/* The detail of the failure the completions now running on this thread
 * report: set by the code that calls them, around the call. */
static _Thread_local const hearth_error_t *completion_error;

const hearth_error_t *hearth_completion_error(void) { return completion_error; }

const hearth_error_t *hearth__completion_error_begin(const hearth_error_t *err) {
    const hearth_error_t *previous = completion_error;
    completion_error = err && err->code ? err : NULL;
    return previous;
}

void hearth__completion_error_end(const hearth_error_t *previous) {
    completion_error = previous;
}
