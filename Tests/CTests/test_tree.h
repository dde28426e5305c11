/* test_tree.h - helpers the tree-layer suites share (test_key.c,
 * test_children.c, test_node.c). */
#ifndef HEARTH_TEST_TREE_H
#define HEARTH_TEST_TREE_H

#include "test.h"

#include "common/internal.h"
#include "tree/node.h"

/* A fixed xorshift sequence: each test starts it afresh (its own child). */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static inline uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static inline void shuffle(int *a, size_t n) {
    for (size_t i = n; i > 1; i--) {
        size_t j = rng() % i;
        int t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

static inline hearth__name name_of(const char *s) {
    hearth__name n;
    hearth__name_init(&n, s, strlen(s));
    return n;
}

/* A malloc()ed copy of s (exact size, so ASan sees any overread). */
static inline char *heap_copy(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    memcpy(c, s, n);
    return c;
}

#endif
