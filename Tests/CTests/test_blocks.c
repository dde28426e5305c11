/* test_blocks.c - the common layer's building blocks: the intrusive list
 * (common/list.h) and the hash map (common/map.h), each against a plain
 * model (an array) over random operations, and their contracts (zero is
 * empty, removal from no list, a failed growth leaves the map as it was). */
#include "test.h"

#include "common/list.h"
#include "common/map.h"

#include <stdint.h>
#include <string.h>

/* ---- the list ---- */

typedef struct item {
    int id;
    hearth__list node;
} item;

static int id_of(const hearth__list *n) {
    return HEARTH__LIST_ITEM(n, item, node)->id;
}

/* CHECKs that h holds exactly the ids of want, in order, both ways. */
static void check_order(const hearth__list *h, const int *want, size_t n) {
    size_t i = 0;
    HEARTH__LIST_EACH(q, h) {
        CHECK(i < n && id_of(q) == want[i]);
        i++;
    }
    CHECK_INT(i, n);
    for (hearth__list *q = hearth__list_last(h); q; q = hearth__list_prev(h, q)) {
        CHECK(i > 0 && id_of(q) == want[i - 1]);
        i--;
    }
    CHECK_INT(i, 0);
    CHECK(hearth__list_empty(h) == (n == 0));
}

static void test_list_basics(void) {
    hearth__list h = {0}; /* zero is an empty head */
    CHECK(hearth__list_empty(&h));
    CHECK(hearth__list_first(&h) == NULL && hearth__list_last(&h) == NULL);
    CHECK(hearth__list_pop_front(&h) == NULL);
    item it[4] = {{.id = 0}, {.id = 1}, {.id = 2}, {.id = 3}};
    CHECK(!hearth__list_linked(&it[0].node));
    hearth__list_remove(&it[0].node); /* in no list: nothing */
    hearth__list_push_back(&h, &it[1].node);
    hearth__list_push_back(&h, &it[2].node);
    hearth__list_push_front(&h, &it[0].node);
    hearth__list_push_back(&h, &it[3].node);
    check_order(&h, (int[]){0, 1, 2, 3}, 4);
    CHECK(hearth__list_linked(&it[2].node));
    hearth__list_remove(&it[2].node);
    CHECK(!hearth__list_linked(&it[2].node));
    hearth__list_remove(&it[2].node); /* twice: still nothing */
    check_order(&h, (int[]){0, 1, 3}, 3);
    /* Removing the current node while walking, and only it. */
    HEARTH__LIST_EACH_SAFE(q, &h) {
        if (id_of(q) != 3)
            hearth__list_remove(q);
    }
    check_order(&h, (int[]){3}, 1);
    CHECK(id_of(hearth__list_pop_front(&h)) == 3);
    check_order(&h, NULL, 0);

    hearth__list a, b;
    hearth__list_init(&a);
    hearth__list_init(&b);
    hearth__list_splice_back(&a, &b); /* empty into empty */
    check_order(&a, NULL, 0);
    hearth__list_push_back(&a, &it[0].node);
    hearth__list_push_back(&b, &it[1].node);
    hearth__list_push_back(&b, &it[2].node);
    hearth__list_splice_back(&a, &b);
    check_order(&a, (int[]){0, 1, 2}, 3);
    check_order(&b, NULL, 0);
    hearth__list z = {0}; /* into a zeroed head */
    hearth__list_splice_back(&z, &a);
    check_order(&z, (int[]){0, 1, 2}, 3);
    check_order(&a, NULL, 0);
}

/* Random pushes, pops and removals from the middle, against an array. */
static void test_list_random(void) {
    enum { N = 64 };
    item items[N];
    int model[N];
    size_t n = 0;
    hearth__list h = {0};
    for (int i = 0; i < N; i++)
        items[i] = (item){.id = i};
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int pick = (int)((seed >> 33) % N);
        hearth__list *node = &items[pick].node;
        switch ((seed >> 20) % 4) {
        case 0:
        case 1: /* add where absent, at either end */
            if (hearth__list_linked(node))
                break;
            if ((seed >> 40) & 1) {
                hearth__list_push_back(&h, node);
                model[n++] = pick;
            } else {
                hearth__list_push_front(&h, node);
                memmove(model + 1, model, n * sizeof *model);
                model[0] = pick;
                n++;
            }
            break;
        case 2: /* remove from wherever it is */
            for (size_t i = 0; i < n; i++)
                if (model[i] == pick) {
                    memmove(model + i, model + i + 1,
                            (n - i - 1) * sizeof *model);
                    n--;
                    break;
                }
            hearth__list_remove(node);
            break;
        default: /* a FIFO's take */
            if (n) {
                CHECK_INT(id_of(hearth__list_pop_front(&h)), model[0]);
                memmove(model, model + 1, (n - 1) * sizeof *model);
                n--;
            } else {
                CHECK(hearth__list_pop_front(&h) == NULL);
            }
        }
        if (step % 97 == 0)
            check_order(&h, model, n);
    }
    check_order(&h, model, n);
}

/* ---- the map ---- */

static void test_map_basics(void) {
    hearth__map m = {0}; /* zero is empty */
    CHECK(hearth__map_get_str(&m, "a") == NULL);
    CHECK(hearth__map_remove_str(&m, "a") == NULL);
    int one = 1, two = 2, three = 3;
    CHECK_INT(hearth__map_put_str(&m, "a", &one), 0);
    CHECK_INT(hearth__map_put_str(&m, "ab", &two), 0);
    CHECK(hearth__map_get_str(&m, "a") == &one);
    CHECK(hearth__map_get_str(&m, "ab") == &two);
    CHECK(hearth__map_get(&m, "abc", 2) == &two); /* bytes, not strings */
    CHECK(hearth__map_get(&m, "ab", 3) == NULL);  /* the NUL counts */
    CHECK_INT(hearth__map_count(&m), 2);
    /* An equal key replaces the value, not the count. */
    CHECK_INT(hearth__map_put_str(&m, "a", &three), 0);
    CHECK(hearth__map_get_str(&m, "a") == &three);
    CHECK_INT(hearth__map_count(&m), 2);
    /* Binary keys, the empty key among them. */
    const unsigned char addr[4] = {127, 0, 0, 1}, zero[4] = {0};
    CHECK_INT(hearth__map_put(&m, addr, 4, &one), 0);
    CHECK_INT(hearth__map_put(&m, zero, 4, &two), 0);
    CHECK_INT(hearth__map_put(&m, "", 0, &three), 0);
    CHECK(hearth__map_get(&m, addr, 4) == &one);
    CHECK(hearth__map_get(&m, zero, 4) == &two);
    CHECK(hearth__map_get(&m, zero, 3) == NULL);
    CHECK(hearth__map_get(&m, "", 0) == &three);
    size_t at = 0, seen = 0;
    const void *key;
    size_t len;
    while (hearth__map_next(&m, &at, &key, &len))
        seen++;
    CHECK_INT(seen, 5);
    CHECK(hearth__map_remove(&m, "", 0) == &three);
    CHECK(hearth__map_remove_str(&m, "a") == &three);
    CHECK(hearth__map_remove_str(&m, "a") == NULL);
    CHECK(hearth__map_get_str(&m, "ab") == &two);
    CHECK_INT(hearth__map_count(&m), 3);
    hearth__map_free(&m);
    CHECK_INT(hearth__map_count(&m), 0);
    CHECK(hearth__map_get_str(&m, "ab") == NULL);
}

/* Many keys in, a random half out, in again, against an array of what
 * should be there: each removal's backward shift keeps every other key
 * findable (checked for all keys, present and absent, as it goes). */
static void test_map_random(void) {
    enum { N = 3000 };
    static char keys[N][16];
    static bool in[N];
    static int values[N];
    hearth__map m = {0};
    uint64_t seed = 42;
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        values[i] = i;
    }
    size_t count = 0;
    for (int step = 0; step < 60000; step++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int k = (int)((seed >> 33) % N);
        if ((seed >> 20) % 3 == 0) {
            void *was = hearth__map_remove_str(&m, keys[k]);
            CHECK(was == (in[k] ? &values[k] : NULL));
            count -= in[k];
            in[k] = false;
        } else {
            CHECK_INT(hearth__map_put_str(&m, keys[k], &values[k]), 0);
            count += !in[k];
            in[k] = true;
        }
        if (step % 5000 == 0)
            for (int i = 0; i < N; i++)
                CHECK(hearth__map_get_str(&m, keys[i]) ==
                      (in[i] ? &values[i] : NULL));
    }
    CHECK_INT(hearth__map_count(&m), count);
    size_t at = 0, seen = 0;
    const void *key;
    for (int *v; (v = hearth__map_next(&m, &at, &key, NULL));) {
        CHECK(in[*v] && key == keys[*v]);
        seen++;
    }
    CHECK_INT(seen, count);
    CHECK(m.n * 2 <= m.cap); /* at most half full */
    hearth__map_free(&m);
}

/* Each allocation of growth failing in turn: HEARTH_ENOMEM and the map as
 * it was (every key still found, the new one absent). */
static void test_map_alloc_fails(void) {
    static char keys[40][16];
    hearth__map m = {0};
    int v = 0;
    for (int i = 0; i < 40; i++) {
        snprintf(keys[i], sizeof keys[i], "n%d", i);
        hearth__alloc_fail_after(0);
        int rc = hearth__map_put_str(&m, keys[i], &v);
        hearth__alloc_fail_after(-1);
        if (rc) {
            CHECK_INT(rc, HEARTH_ENOMEM);
            CHECK(hearth__map_get_str(&m, keys[i]) == NULL);
            CHECK_INT(hearth__map_count(&m), i);
            CHECK_INT(hearth__map_put_str(&m, keys[i], &v), 0);
        }
        for (int j = 0; j <= i; j++)
            CHECK(hearth__map_get_str(&m, keys[j]) == &v);
    }
    CHECK_INT(hearth__map_count(&m), 40);
    hearth__map_free(&m);
}

const test_case block_tests[] = {
    {"blocks_list_basics", test_list_basics},
    {"blocks_list_random", test_list_random},
    {"blocks_map_basics", test_map_basics},
    {"blocks_map_random", test_map_random},
    {"blocks_map_alloc_fails", test_map_alloc_fails},
    {NULL, NULL},
};
