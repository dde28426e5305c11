/*
 * internal.h - what every file of the C core shares: allocation (with the
 * failure injection used by the tests), error reporting and a growable
 * byte buffer. Internal names use the hearth__ prefix and are not exported.
 */
#ifndef HEARTH_COMMON_INTERNAL_H
#define HEARTH_COMMON_INTERNAL_H

#include "hearth.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEARTH__UNUSED(x) ((void)(x))
#define HEARTH__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__) || defined(__clang__)
#define HEARTH__LIKELY(x) __builtin_expect(!!(x), 1)
#define HEARTH__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HEARTH__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define HEARTH__LIKELY(x) (x)
#define HEARTH__UNLIKELY(x) (x)
#define HEARTH__PRINTF(f, a)
#endif

/* ---- allocation ----
 * Every allocation of the core goes through these so that tests can make
 * the N-th one fail (hearth__alloc_fail_after) and check that each caller
 * reports HEARTH_ENOMEM and leaves its state unchanged. */
void *hearth__malloc(size_t size);
void *hearth__calloc(size_t count, size_t size);
void *hearth__realloc(void *ptr, size_t size);
/* The array items (capacity *cap elements of size bytes) with room for at
 * least need elements: the same block when it has it, else one whose
 * capacity doubled (from 8) until it does, *cap updated. NULL, with items
 * and *cap untouched, when out of memory or when the bytes would not fit
 * a size_t. The one way arrays grow here. */
void *hearth__grow(void *items, size_t *cap, size_t need, size_t size);
/* The capacity hearth__grow would give (*cap doubled from 8 until it
 * holds need), for a table that is made anew rather than extended (a
 * hash map rehashing into zeroed memory); false, *cap untouched, when
 * the bytes would not fit a size_t. */
bool hearth__grow_capacity(size_t *cap, size_t need, size_t size);
void hearth__free(void *ptr);
char *hearth__strndup(const char *s, size_t len);

/* Test hook: after `n` more successful allocations, every allocation fails
 * (n < 0 disables). Returns the number of allocations attempted under the
 * previous setting (counted only while injection is on). Not thread-safe:
 * only for single-threaded tests. */
long hearth__alloc_fail_after(long n);
/* Whether failures are being injected: allocators that reuse blocks of
 * their own (tree/pool.c) then allocate afresh, so every allocation is
 * counted and can fail. */
bool hearth__alloc_injecting(void);

/* ---- errors ---- */

/* Fills err (when not NULL) and returns code. `path` may be NULL. */
int hearth__error(hearth_error_t *err, int code, const char *path,
                  const char *fmt, ...) HEARTH__PRINTF(4, 5);
/* Like hearth__error with the message text from hearth_strerror. */
int hearth__error_code(hearth_error_t *err, int code);
/* hearth_completion_error() is err (NULL: none) for the completions run
 * until the matching hearth__completion_error_end(the value returned),
 * on this thread; pairs nest. */
const hearth_error_t *hearth__completion_error_begin(const hearth_error_t *err);
void hearth__completion_error_end(const hearth_error_t *previous);

/* ---- extensible config structs ---- */

/* Where a struct's field ends: the size of the struct as it was when that
 * field was its last. */
#define HEARTH__END_OF(type, field)                                            \
    (offsetof(type, field) + sizeof(((type *)0)->field))

/* Copies a caller's config (NULL: all zero), whose first field is its size
 * (at least base_size, the struct of version 0.2), into out (this
 * library's struct of out_size bytes): fields past the caller's size read
 * as zero. HEARTH_EINVAL when the size is 0 or below base_size,
 * HEARTH_EUNSUPPORTED when
 * the caller sets a field this library does not have; `what` names the
 * struct in the message. */
int hearth__config_read(const void *config, size_t base_size, void *out,
                        size_t out_size, const char *what,
                        hearth_error_t *err);

/* ---- byte buffer ---- */

typedef struct hearth__buf {
    char *data;
    size_t len;
    size_t cap;
    bool failed; /* an allocation failed; data is then unusable */
} hearth__buf;

void hearth__buf_init(hearth__buf *b);
void hearth__buf_free(hearth__buf *b);
bool hearth__buf_reserve(hearth__buf *b, size_t extra);
void hearth__buf_add(hearth__buf *b, const void *data, size_t len);
void hearth__buf_addc(hearth__buf *b, char c);
void hearth__buf_adds(hearth__buf *b, const char *s);
void hearth__buf_printf(hearth__buf *b, const char *fmt, ...)
    HEARTH__PRINTF(2, 3);
/* Detaches the NUL-terminated contents (NULL if an allocation failed). */
char *hearth__buf_detach(hearth__buf *b, size_t *len);

/* A whole file, NUL-terminated (hearth__free it), or NULL with errno set
 * (EFBIG past max bytes). */
char *hearth__read_file(const char *path, size_t max, size_t *len);

/* ---- the log (common/log.c, hearth_set_log) ---- */

/* Whether a log function is set (to skip building a message for none). */
bool hearth__log_on(void);
/* A message to the log function, formatted (cut at about 1 KB), or
 * nothing when none is set. Any thread. */
void hearth__log(hearth_log_level level, const char *fmt, ...)
    HEARTH__PRINTF(2, 3);
/* A line already built (NUL-terminated, no newline), whatever its length. */
void hearth__log_line(hearth_log_level level, const char *line);

/* ---- a seeded generator (common/rng.c) ---- */

/* splitmix64: fast and spread evenly, not for secrets (hearth__os_random
 * is). One per user, not shared between threads. */
typedef struct hearth__rng {
    uint64_t state;
} hearth__rng;

/* Seeds g from the system's generator (os/os.h). */
void hearth__rng_seed(hearth__rng *g);
uint64_t hearth__rng_next(hearth__rng *g);
/* A draw in [0, n) (0 when n is 0). */
uint64_t hearth__rng_below(hearth__rng *g, uint64_t n);

/* ---- misc ---- */

/* FNV-1a over len bytes, going on from h (HEARTH__FNV_SEED to begin):
 * the hash of the in-memory tables keyed by text. */
#define HEARTH__FNV_SEED 0xcbf29ce484222325ULL
uint64_t hearth__fnv1a(uint64_t h, const void *data, size_t len);

/* Whether s is a plain name: 1 to max letters, digits, '-' and '_' (a
 * namespace, a trigger), so it is safe as a file name and in a URL. */
bool hearth__plain_name(const char *s, size_t max);
/* Base64 (RFC 4648, padded) of len bytes into out, NUL-terminated:
 * room for 4 * ((len + 2) / 3) + 1. Returns the length written. */
size_t hearth__base64(const unsigned char *in, size_t len, char *out);

/* Validates UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF). */
bool hearth__utf8_valid(const char *s, size_t len);

/* Formats a double the way JavaScript's Number#toString does (integers
 * without a fraction, shortest round-trip digits, exponent past 1e21 and
 * below 1e-6). Writes at most 32 bytes; returns the length. */
size_t hearth__format_number(double v, char out[32]);

#endif
