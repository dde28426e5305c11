/* test_tree_pool.c - the per-thread free lists of nodes and pages
 * (tree/pool.c): a freed block is reused for its size class, waits
 * poisoned under ASan, goes back to malloc past the bound and when its
 * thread ends, never hides an injected allocation failure; and snapshots
 * keep their values while the nodes and pages around them are recycled. */
#include "test_tree.h"

#include "tree/pool.h"

#include <pthread.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

/* A freed block serves the next allocation of its class, at the class's
 * full size (17 and 24 bytes share a class: ASan checks the write). */
static void test_pool_reuse(void) {
    hearth__pool_drain();
    char *a = hearth__pool_alloc(17);
    CHECK(a != NULL);
    memset(a, 1, 17);
    hearth__pool_free(a, 17);
    CHECK(hearth__pool_bytes() == 24);
#if defined(__SANITIZE_ADDRESS__)
    CHECK(__asan_address_is_poisoned(a + 8)); /* a use after free is caught */
#endif
    char *b = hearth__pool_alloc(24);
    CHECK(b == a);
    memset(b, 2, 24);
    CHECK(hearth__pool_bytes() == 0);
    hearth__pool_free(b, 24);
    /* Other classes do not take it. */
    char *c = hearth__pool_alloc(32);
    CHECK(c != NULL && c != a);
    hearth__pool_free(c, 32);
    hearth__pool_drain();
    CHECK(hearth__pool_bytes() == 0);
}

/* While failures are injected, allocations do not come from the lists, so
 * each one can fail (and a test of failure atomicity reaches it). */
static void test_pool_injected_failure(void) {
    hearth_node_t *n = hearth_node_number(1);
    hearth_node_decref(n); /* its block now waits in the list */
    CHECK(hearth__pool_bytes() > 0);
    hearth__alloc_fail_after(0);
    CHECK(hearth_node_number(2) == NULL);
    hearth__alloc_fail_after(-1);
    hearth_node_t *m = hearth_node_number(3);
    CHECK(m == n); /* reused again once injection is off */
    hearth_node_decref(m);
    hearth__pool_drain();
}

/* A thread keeps a bounded amount; the rest goes back to malloc. */
static void test_pool_bound(void) {
    enum { N = 8192, SIZE = 1048 }; /* 8 MiB: over any sensible bound */
    void **blocks = malloc(N * sizeof *blocks);
    for (int i = 0; i < N; i++) {
        blocks[i] = hearth__pool_alloc(SIZE);
        CHECK(blocks[i] != NULL);
    }
    for (int i = 0; i < N; i++)
        hearth__pool_free(blocks[i], SIZE);
    size_t kept = hearth__pool_bytes();
    CHECK(kept > 0 && kept < (size_t)N * SIZE / 2);
    free(blocks);
    hearth__pool_drain();
}

/* Blocks a thread frees go back to malloc when it ends: LeakSanitizer
 * fails this test at exit otherwise (nothing else points at them). */
static void *free_on_thread(void *arg) {
    hearth_node_t *root = arg;
    hearth_node_decref(root); /* the last reference: frees the whole tree */
    return NULL;
}

static void test_pool_thread_exit(void) {
    hearth_node_t *root = hearth_node_null();
    for (int i = 0; i < 200; i++) {
        char path[32];
        snprintf(path, sizeof path, "a%d/b%d", i % 20, i);
        hearth_node_t *v = hearth_node_number(i);
        CHECK(hearth_node_set(&root, path, v, NULL) == 0);
        hearth_node_decref(v);
    }
    pthread_t t;
    CHECK(pthread_create(&t, NULL, free_on_thread, root) == 0);
    pthread_join(t, NULL);
}

/* What an exit handler frees after the pool's own exit drain goes back to
 * malloc, not to lists nobody drains any more (LeakSanitizer, at exit,
 * fails the test otherwise). The handler is registered before this
 * thread's first free, which registers the pool's, so it runs after. */
static hearth_node_t *kept_for_exit;

static void free_at_exit(void) { hearth_node_decref(kept_for_exit); }

static void test_pool_exit_handler_frees(void) {
    CHECK(atexit(free_at_exit) == 0);
    kept_for_exit = hearth_node_null();
    for (int i = 0; i < 50; i++) {
        char path[16];
        snprintf(path, sizeof path, "k%d/v", i);
        hearth_node_t *v = hearth_node_number(i);
        CHECK(hearth_node_set(&kept_for_exit, path, v, NULL) == 0);
        hearth_node_decref(v);
    }
    /* The first free (the number replaced): the pool's exit drain. */
    hearth_node_t *w = hearth_node_number(-1);
    CHECK(hearth_node_set(&kept_for_exit, "k0/v", w, NULL) == 0);
    hearth_node_decref(w);
    CHECK(hearth__pool_bytes() > 0);
}

/* Random sets on a tree while snapshots come and go: each snapshot, read
 * back at the end, still holds exactly the text it had when taken, while
 * the copies made since reuse the blocks of the snapshots released. */
enum { SNAPS = 8, SETS = 20000, EVERY = 250 };

static void set_random(hearth_node_t **root, int i) {
    char path[32];
    snprintf(path, sizeof path, "%c/%c/%c", 'a' + (int)(rng() % 6),
             'a' + (int)(rng() % 6), 'a' + (int)(rng() % 6));
    hearth_node_t *v = rng() % 7 ? hearth_node_number(i)
                                 : hearth_node_string("a longer string", 15);
    CHECK(hearth_node_set(root, path, v, NULL) == 0);
    hearth_node_decref(v);
}

static void test_pool_snapshots_keep_values(void) {
    hearth_node_t *root = hearth_node_null();
    hearth_node_t *snap[SNAPS] = {0};
    char *text[SNAPS] = {0};
    for (int i = 0; i < SETS; i++) {
        if (i % EVERY == 0) {
            int s = (int)(rng() % SNAPS); /* release one, keep the others */
            if (snap[s]) {
                char *now = hearth_node_to_json(snap[s], 0, NULL);
                CHECK(now && strcmp(now, text[s]) == 0);
                hearth_free(now);
            }
            hearth_node_decref(snap[s]);
            hearth_free(text[s]);
            snap[s] = hearth_node_incref(root);
            text[s] = hearth_node_to_json(root, 0, NULL);
        }
        set_random(&root, i);
    }
    for (int s = 0; s < SNAPS; s++) {
        if (!snap[s])
            continue;
        char *now = hearth_node_to_json(snap[s], 0, NULL);
        CHECK(now && strcmp(now, text[s]) == 0);
        CHECK(!hearth__node_is_obj(snap[s]) ||
              hearth__bt_check(snap[s]->u.obj.tree));
        hearth_free(now);
        hearth_free(text[s]);
        hearth_node_decref(snap[s]);
    }
    hearth_node_decref(root);
}

const test_case pool_tests[] = {
    {"tree_pool_reuse", test_pool_reuse},
    {"tree_pool_injected_failure", test_pool_injected_failure},
    {"tree_pool_bound", test_pool_bound},
    {"tree_pool_thread_exit", test_pool_thread_exit},
    {"tree_pool_exit_handler_frees", test_pool_exit_handler_frees},
    {"tree_pool_snapshots_keep_values", test_pool_snapshots_keep_values},
    {NULL, NULL},
};
