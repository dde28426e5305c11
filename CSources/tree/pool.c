/* pool.c - per-thread free lists for the tree's nodes and pages.
 *
 * One list per size (in steps of 8 bytes, up to an inner B+tree page),
 * per thread, so neither end takes a lock: a block freed on one thread is
 * reused there. A thread keeps at most MAX_BYTES waiting (a snapshot
 * released after a thousand sets frees about a megabyte of copied nodes
 * and pages, which the next thousand sets allocate again); beyond that,
 * blocks go back to malloc. Not much more: after a large tree is freed,
 * the blocks waiting are cold and scattered, and a tree built from them
 * builds slower than from malloc's coalesced memory (bench-tree's 16^5
 * build: about 8 % at 2 MiB; at 1 MiB a snapshot's release no longer
 * fits and the sets lose most of the gain). A thread's lists go back to malloc when it
 * ends (a thread-exit destructor; at exit() for the thread calling it), or
 * when it calls hearth__pool_drain.
 *
 * Under AddressSanitizer a waiting block is poisoned, so a use after its
 * free is still reported. While the tests inject allocation failures,
 * allocations bypass the lists, so each one is counted and can fail.
 */
#include "tree/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* AddressSanitizer: gcc says so with a macro, clang with a feature. */
#if defined(__SANITIZE_ADDRESS__)
#define POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ASAN 1
#endif
#endif

#if defined(POOL_ASAN)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define GRAIN 8
#define MAX_BLOCK 1048 /* an inner page of order 32 */
#define CLASSES (MAX_BLOCK / GRAIN + 1)
#define MAX_BYTES ((size_t)2 << 20)

typedef struct block {
    struct block *next;
} block;

typedef struct pool {
    block *head[CLASSES]; /* class c: blocks of c * GRAIN bytes */
    size_t bytes;         /* waiting in all lists */
    bool registered;      /* the thread-exit destructor will drain it */
} pool;

static _Thread_local pool tls;
static pthread_key_t exit_key;
static bool exit_key_made;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void on_thread_exit(void *unused) {
    HEARTH__UNUSED(unused);
    hearth__pool_drain();
    tls.registered = false; /* a later free registers again */
}

/* exit() runs no thread-exit destructor for the thread calling it (the
 * main thread, usually): its blocks go back here, so that LeakSanitizer,
 * which runs after, finds none waiting unreachable; and whatever later
 * exit handlers free goes straight back too. */
static atomic_bool exiting;

static void on_process_exit(void) {
    atomic_store_explicit(&exiting, true, memory_order_relaxed);
    hearth__pool_drain();
    tls.registered = false;
}

static void make_exit_key(void) {
    exit_key_made = pthread_key_create(&exit_key, on_thread_exit) == 0 &&
                    atexit(on_process_exit) == 0;
}

/* Whether this thread's blocks will be handed back when it ends: only
 * then may it keep any. */
static bool registered(void) {
    if (HEARTH__LIKELY(tls.registered))
        return true;
    if (atomic_load_explicit(&exiting, memory_order_relaxed))
        return false;
    pthread_once(&exit_once, make_exit_key);
    tls.registered = exit_key_made && pthread_setspecific(exit_key, &tls) == 0;
    return tls.registered;
}

static inline size_t size_class(size_t size) {
    return (size + GRAIN - 1) / GRAIN;
}

void *hearth__pool_alloc(size_t size) {
    size_t c = size_class(size);
    block *b = c < CLASSES ? tls.head[c] : NULL;
    if (!b || hearth__alloc_injecting())
        return hearth__malloc(c * GRAIN); /* whole class: any may reuse it */
    UNPOISON(b, c * GRAIN);
    tls.head[c] = b->next;
    tls.bytes -= c * GRAIN;
    /* Waiting blocks lie anywhere and are cold by now: the next one's
     * line (its link is the first thing the next allocation reads) is
     * asked for here, so a run of allocations overlaps its misses. */
    __builtin_prefetch(tls.head[c], 1);
    return b;
}

void hearth__pool_free(void *p, size_t size) {
    size_t c = size_class(size);
    if (!p || c >= CLASSES || tls.bytes + c * GRAIN > MAX_BYTES ||
        !registered()) {
        hearth__free(p);
        return;
    }
    block *b = p;
    b->next = tls.head[c];
    tls.head[c] = b;
    tls.bytes += c * GRAIN;
    POISON(b, c * GRAIN);
}

void hearth__pool_drain(void) {
    for (size_t c = 0; c < CLASSES; c++) {
        while (tls.head[c]) {
            block *b = tls.head[c];
            UNPOISON(b, c * GRAIN);
            tls.head[c] = b->next;
            hearth__free(b);
        }
    }
    tls.bytes = 0;
}

size_t hearth__pool_bytes(void) { return tls.bytes; }
