/* test_os.c - the platform layer (CSources/os/) on the system the tests
 * run on, and the seeded generator built on it (common/rng.c). */
#include "test.h"

#include "common/internal.h"
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* The reconnect jitter's generator: seeded differently each time, and
 * drawing from it leaves the host program's rand() sequence alone. */
static void test_rng_seeded_and_private(void) {
    srand(7);
    int expected[4];
    for (int i = 0; i < 4; i++)
        expected[i] = rand();
    srand(7);
    hearth__rng a, b;
    hearth__rng_seed(&a);
    hearth__rng_seed(&b);
    CHECK(a.state != b.state);
    bool differ = false;
    for (int i = 0; i < 100; i++) {
        uint64_t x = hearth__rng_below(&a, 1000), y = hearth__rng_below(&b, 1000);
        CHECK(x < 1000 && y < 1000);
        differ |= x != y;
    }
    CHECK(differ);
    CHECK_INT(hearth__rng_below(&a, 0), 0);
    for (int i = 0; i < 4; i++)
        CHECK_INT(rand(), expected[i]);
}

/* Draws spread over the range: each tenth of [0, 1000) gets some of 10,000
 * (a generator stuck on a value or a stripe fails). */
static void test_rng_spread(void) {
    hearth__rng g;
    hearth__rng_seed(&g);
    int tenths[10] = {0};
    for (int i = 0; i < 10000; i++)
        tenths[hearth__rng_below(&g, 1000) / 100]++;
    for (int i = 0; i < 10; i++)
        CHECK(tenths[i] > 800 && tenths[i] < 1200);
}

static void test_os_random(void) {
    unsigned char a[600], b[600]; /* past getentropy's 256 a call */
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    CHECK_INT(hearth__os_random(a, sizeof a), 0);
    CHECK_INT(hearth__os_random(b, sizeof b), 0);
    CHECK(memcmp(a, b, sizeof a) != 0);
    int zeros = 0;
    for (size_t i = 300; i < sizeof a; i++) /* the tail was filled too */
        zeros += a[i] == 0;
    CHECK(zeros < 20);
}

static void test_os_sync(void) {
    char dir[] = "/tmp/hearth-os-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/f", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK_INT(write(fd, "abc", 3), 3);
    CHECK_INT(hearth__os_datasync(fd), 0);
    CHECK_INT(hearth__os_sync(fd), 0);
    close(fd);
    errno = 0;
    CHECK_INT(hearth__os_datasync(fd), -1); /* closed: the error comes back */
    CHECK_INT(errno, EBADF);
    CHECK_INT(hearth__os_sync(fd), -1);
    int dfd = open(dir, O_RDONLY);
    CHECK_INT(hearth__os_sync(dfd), 0); /* a directory after a rename */
    close(dfd);
    hearth__os_trim_memory(); /* best effort: it returns */
    remove_tree(dir);
}

static char *read_all(const char *path) {
    size_t len;
    return hearth__read_file(path, 1 << 20, &len);
}

/* A pin opens the file held open even after its name is removed, and
 * after another file took the name. */
static void test_os_pin(void) {
    char dir[] = "/tmp/hearth-os-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char data[256], path[PATH_MAX], other[PATH_MAX], pins[PATH_MAX],
        link_path[PATH_MAX + 8];
    snprintf(data, sizeof data, "%s/data", dir);
    CHECK_INT(mkdir(data, 0700), 0);
    snprintf(path, sizeof path, "%s/log.1", data);
    snprintf(other, sizeof other, "%s/other", data);
    FILE *f = fopen(path, "w");
    fputs("first", f);
    fclose(f);
    f = fopen(other, "w");
    fputs("second", f);
    fclose(f);

    CHECK_INT(hearth__os_pin_template(data, pins, sizeof pins), 0);
    CHECK(strstr(pins, "backup-pin-XXXXXX") != NULL);
    CHECK(mkdtemp(pins) != NULL);
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    snprintf(link_path, sizeof link_path, "%s/log.1", pins);
    CHECK_INT(hearth__os_pin(fd, path, link_path), 0);
    CHECK_INT(rename(other, path), 0); /* the name now holds another file */
    char *text = read_all(link_path);
    CHECK_STR(text, "first");
    hearth__free(text);
    CHECK_INT(unlink(path), 0);
    text = read_all(link_path);
    CHECK_STR(text, "first");
    hearth__free(text);

    char small[8];
    CHECK_INT(hearth__os_pin_template(data, small, sizeof small), HEARTH_EINVAL);
    CHECK_INT(unlink(link_path), 0);
    CHECK_INT(rmdir(pins), 0);
    close(fd);
    remove_tree(dir);
}

const test_case os_tests[] = {
    {"os_rng_seeded_and_private", test_rng_seeded_and_private},
    {"os_rng_spread", test_rng_spread},
    {"os_random", test_os_random},
    {"os_sync", test_os_sync},
    {"os_pin", test_os_pin},
    {NULL, NULL},
};
