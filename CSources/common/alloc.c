/* alloc.c - allocation wrappers with failure injection for tests. */
#include "common/internal.h"

#include <stdlib.h>
#include <string.h>

/* Allocations left before injected failures start; negative: never fail.
 * Only tests set it, from one thread. */
static long fail_after = -1;
static long alloc_count;

/* Counts only while a test injects failures, so that threads allocating
 * in normal use share no written state. */
static bool should_fail(void) {
    if (HEARTH__LIKELY(fail_after < 0))
        return false;
    alloc_count++;
    if (fail_after == 0)
        return true;
    fail_after--;
    return false;
}

long hearth__alloc_fail_after(long n) {
    long made = alloc_count;
    fail_after = n;
    alloc_count = 0;
    return made;
}

bool hearth__alloc_injecting(void) { return fail_after >= 0; }

void *hearth__malloc(size_t size) {
    if (should_fail())
        return NULL;
    return malloc(size ? size : 1);
}

void *hearth__calloc(size_t count, size_t size) {
    if (should_fail())
        return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *hearth__realloc(void *ptr, size_t size) {
    if (should_fail())
        return NULL;
    return realloc(ptr, size ? size : 1);
}

void hearth__free(void *ptr) { free(ptr); }

void hearth_free(void *ptr) { free(ptr); }

char *hearth__strndup(const char *s, size_t len) {
    char *copy = hearth__malloc(len + 1);
    if (copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

bool hearth__grow_capacity(size_t *cap, size_t need, size_t size) {
    size_t n = *cap ? *cap : 8;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return false;
        n *= 2;
    }
    if (size && n > SIZE_MAX / size)
        return false;
    *cap = n;
    return true;
}

void *hearth__grow(void *items, size_t *cap, size_t need, size_t size) {
    if (need <= *cap && items)
        return items;
    size_t n = *cap;
    if (!hearth__grow_capacity(&n, need, size))
        return NULL;
    void *grown = hearth__realloc(items, n * size);
    if (grown)
        *cap = n;
    return grown;
}
