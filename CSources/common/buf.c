/* buf.c - a growable byte buffer that remembers allocation failure, so
 * writers can append without checking each call and check once at the end;
 * and reading a whole file into one. */
#include "common/internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void hearth__buf_init(hearth__buf *b) {
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->failed = false;
}

void hearth__buf_free(hearth__buf *b) {
    hearth__free(b->data);
    hearth__buf_init(b);
}

bool hearth__buf_reserve(hearth__buf *b, size_t extra) {
    if (b->failed)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64; /* a first block: most are short */
    char *data = extra < SIZE_MAX - b->len - 1
                     ? hearth__grow(b->data, &cap, b->len + extra + 1, 1)
                     : NULL;
    if (!data) {
        b->failed = true;
        return false;
    }
    b->data = data;
    b->cap = cap;
    return true;
}

void hearth__buf_add(hearth__buf *b, const void *data, size_t len) {
    if (!hearth__buf_reserve(b, len))
        return;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void hearth__buf_addc(hearth__buf *b, char c) {
    if (!hearth__buf_reserve(b, 1))
        return;
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}

void hearth__buf_adds(hearth__buf *b, const char *s) {
    hearth__buf_add(b, s, strlen(s));
}

void hearth__buf_printf(hearth__buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !hearth__buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *hearth__buf_detach(hearth__buf *b, size_t *len) {
    if (b->failed) {
        hearth__buf_free(b);
        return NULL;
    }
    if (!hearth__buf_reserve(b, 0))
        return NULL;
    b->data[b->len] = '\0'; /* a buffer never written to has no NUL yet */
    char *data = b->data;
    if (len)
        *len = b->len;
    hearth__buf_init(b);
    return data;
}

char *hearth__read_file(const char *path, size_t max, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    hearth__buf b;
    hearth__buf_init(&b);
    size_t got;
    do {
        if (!hearth__buf_reserve(&b, 4096))
            break;
        got = fread(b.data + b.len, 1, 4096, f);
        b.len += got;
    } while (got && b.len <= max);
    int saved = b.failed ? ENOMEM : b.len > max ? EFBIG : ferror(f) ? EIO : 0;
    fclose(f);
    if (saved) {
        hearth__buf_free(&b);
        errno = saved;
        return NULL;
    }
    return hearth__buf_detach(&b, len);
}
