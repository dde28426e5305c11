/*
 * key.h - keys and their order.
 *
 * A hearth__name is a borrowed view of a key with its integer form
 * precomputed; a hearth__key is the reference-counted copy stored in trees.
 * The order is the service's "name compare": MIN sentinel, keys that read as
 * 32-bit integers (numerically, shorter first on ties), other keys by UTF-16
 * code units, MAX sentinel.
 */
#ifndef HEARTH_PATH_KEY_H
#define HEARTH_PATH_KEY_H

#include "common/internal.h"

#include <stdatomic.h>

enum { HEARTH__NAME_MIN = -1, HEARTH__NAME_PLAIN = 0, HEARTH__NAME_MAX = 1 };

typedef struct hearth__name {
    const char *s;
    uint32_t len;
    int32_t ival;     /* integer value when is_int */
    bool is_int;
    int8_t sentinel;  /* HEARTH__NAME_MIN / _PLAIN / _MAX */
} hearth__name;

typedef struct hearth__key {
    atomic_uint refs;
    uint32_t len;
    int32_t ival;
    bool is_int;
    char s[]; /* NUL-terminated */
} hearth__key;

void hearth__name_init(hearth__name *name, const char *s, size_t len);
hearth__name hearth__name_sentinel(int sentinel);

static inline hearth__name hearth__key_name(const hearth__key *key) {
    hearth__name n = {key->s, key->len, key->ival, key->is_int,
                      HEARTH__NAME_PLAIN};
    return n;
}

/* A 64-bit digest of a name that orders like the name: when two sorts
 * differ they give the names' order; when equal the names must be compared
 * in full. It lets a search stay inside a page instead of following a
 * pointer to each key. */
uint64_t hearth__name_sort(const hearth__name *name);

/* Order of two names: <0, 0, >0. */
int hearth__name_compare(const hearth__name *a, const hearth__name *b);
/* Order of two UTF-8 strings by UTF-16 code units (JavaScript's `<`). */
int hearth__utf16_compare(const char *a, size_t alen, const char *b,
                          size_t blen);

hearth__key *hearth__key_create(const hearth__name *name);
hearth__key *hearth__key_from_cstr(const char *s);
/* The count of a key shared for good (see key.c's interning): counting
 * leaves it alone. */
#define HEARTH__KEY_SHARED 0x80000000u

static inline bool hearth__key_shared(const hearth__key *key) {
    return atomic_load_explicit(&((hearth__key *)key)->refs,
                                memory_order_relaxed) == HEARTH__KEY_SHARED;
}

static inline hearth__key *hearth__key_incref(hearth__key *key) {
    if (!hearth__key_shared(key))
        atomic_fetch_add_explicit(&key->refs, 1, memory_order_relaxed);
    return key;
}
void hearth__key_decref(hearth__key *key);

#endif
