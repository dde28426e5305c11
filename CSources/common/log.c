/* log.c - the library's one way to say something (hearth_set_log): every
 * message goes to the function the program set, or nowhere. A library
 * inside an app must not write to the app's stderr uninvited. */
#include "common/internal.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic(hearth_log_fn) log_fn;
static _Atomic(void *) log_user;

void hearth_set_log(hearth_log_fn fn, void *user) {
    atomic_store(&log_user, user);
    atomic_store(&log_fn, fn);
}

bool hearth__log_on(void) {
    return atomic_load_explicit(&log_fn, memory_order_relaxed) != NULL;
}

void hearth__log_line(hearth_log_level level, const char *line) {
    hearth_log_fn fn = atomic_load(&log_fn);
    if (fn)
        fn(atomic_load(&log_user), level, line);
}

void hearth__log(hearth_log_level level, const char *fmt, ...) {
    hearth_log_fn fn = atomic_load(&log_fn);
    if (!fn)
        return; /* nothing formatted for no one */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line) /* a long one is cut, and says so */
        memcpy(line + sizeof line - 4, "...", 4);
    fn(atomic_load(&log_user), level, line);
}

void hearth_log_stderr(void *user, hearth_log_level level,
                       const char *message) {
    (void)user;
    const char *prefix = level == HEARTH_LOG_ACCESS ? "" : "hearth: ";
    size_t plen = strlen(prefix), mlen = strlen(message);
    char small[2048];
    char *line = plen + mlen + 1 <= sizeof small ? small
                                                  : malloc(plen + mlen + 1);
    if (!line) { /* no room to join them: two writes rather than none */
        fprintf(stderr, "%s%s\n", prefix, message);
        return;
    }
    memcpy(line, prefix, plen);
    memcpy(line + plen, message, mlen);
    line[plen + mlen] = '\n';
    fwrite(line, 1, plen + mlen + 1, stderr); /* one write: stderr is unbuffered */
    if (line != small)
        free(line);
}
