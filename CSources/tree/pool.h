/*
 * pool.h - per-thread free lists for the tree's nodes and B+tree pages.
 *
 * A write that keeps snapshots copies a node and a page per level and,
 * when the snapshot goes, frees as many: through malloc each such free
 * coalesces with its neighbours and each allocation sorts glibc's bins
 * (touching chunk headers all over the heap). Blocks freed here wait on a
 * list of their size for the next allocation of that size on the same
 * thread instead: a push and a pop.
 *
 * A block from hearth__pool_alloc(size) may also be freed with
 * hearth__free; hearth__pool_free(block, size) takes only blocks from
 * hearth__pool_alloc with the same size (it may hand them out for any size
 * of their class: sizes round up to 8 bytes).
 */
#ifndef HEARTH_TREE_POOL_H
#define HEARTH_TREE_POOL_H

#include "common/internal.h"

void *hearth__pool_alloc(size_t size);
void hearth__pool_free(void *block, size_t size);
/* Hands the calling thread's waiting blocks back to malloc. */
void hearth__pool_drain(void);
/* Bytes waiting in the calling thread's lists; for tests. */
size_t hearth__pool_bytes(void);

#endif
