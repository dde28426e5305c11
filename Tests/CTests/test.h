/*
 * test.h - the C test harness. Each test runs in its own child process with
 * a time limit, so a crash, a hang or a leak (LeakSanitizer runs when the
 * child exits) fails that test alone. Suites are arrays of test_case ending
 * in {NULL, NULL}, listed in test_main.c (SUITES); a table-driven suite is
 * a test_table (TABLES).
 */
#ifndef HEARTH_TEST_H
#define HEARTH_TEST_H

#include "hearth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

typedef struct test_case {
    const char *name;
    void (*fn)(void);
} test_case;

/* A test per row of a table read at run time (such as a file of
 * scenarios), each run in its own child and reported as "prefix/name". */
typedef struct test_table {
    const char *prefix;
    int (*count)(size_t *n);          /* rows; nonzero when unreadable */
    const char *(*name)(size_t row);  /* a row's name */
    void (*run)(size_t row);
} test_table;

extern int test_failures; /* checks failed in the current test */

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__,           \
                    __LINE__, #cond);                                          \
            test_failures++;                                                   \
        }                                                                      \
    } while (0)

#define CHECK_INT(a, b)                                                        \
    do {                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                    \
        if (a_ != b_) {                                                        \
            fprintf(stderr, "  %s:%d: %s == %lld, expected %s == %lld\n",      \
                    __FILE__, __LINE__, #a, a_, #b, b_);                       \
            test_failures++;                                                   \
        }                                                                      \
    } while (0)

/* CHECK that string a equals b, naming a as `what` when it fails. */
#define CHECK_STR_AS(a, what, b)                                               \
    do {                                                                       \
        const char *a_ = (a), *b_ = (b);                                       \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                               \
            fprintf(stderr, "  %s:%d: %s is \"%s\", expected \"%s\"\n",        \
                    __FILE__, __LINE__, what, a_ ? a_ : "(null)",              \
                    b_ ? b_ : "(null)");                                       \
            test_failures++;                                                   \
        }                                                                      \
    } while (0)
#define CHECK_STR(a, b) CHECK_STR_AS(a, #a, b)

/* Helpers shared by the suites (test_main.c). */
hearth_node_t *node_from(const char *json); /* aborts on invalid JSON */
char *to_json(const hearth_node_t *n);      /* free() the result */
/* CHECK that n serializes to the JSON text `expected`. */
#define CHECK_JSON(n, expected)                                                \
    do {                                                                       \
        char *j_ = to_json(n);                                                 \
        CHECK_STR_AS(j_, "the JSON of " #n, expected);                         \
        free(j_);                                                              \
    } while (0)
/* Fails the test, naming `what` and file:line, unless a call returned
 * code (rc and err->code) with err->path equal to at_path (when not NULL)
 * and err->message holding in_message (when not NULL). */
void check_error(const char *what, int rc, const hearth_error_t *err,
                 int code, const char *at_path, const char *in_message,
                 const char *file, int line);
/* Key-joining visitor of children: appends each key to the string ctx
 * (large enough), separated by spaces. */
int join_keys(const char *key, const hearth_node_t *child, void *ctx);
/* xorshift64: the next number from *state (never 0): a test's random
 * choices repeat from one run to the next. */
uint64_t test_rand(uint64_t *state);
/* A JSON object of n members, member i being item_fmt filled with (i, i)
 * ("\"k%d\":%d"); free() it. */
char *object_json(int n, const char *item_fmt);
/* base64url without padding of len bytes into out (4/3 len + 1 bytes). */
void b64url(const void *data, size_t len, char *out);
/* Token payloads every verifier must refuse, with a word its reason
 * names; aud "my-project" and iss "https://issuer.example" are the good
 * ones. Ends with {NULL, NULL}. */
typedef struct {
    const char *payload, *why;
} claims_case;
extern const claims_case refused_claims[];
/* rm -rf dir (the test fails when that fails). */
void remove_tree(const char *dir);
/* Starts a server on 127.0.0.1 keeping its data in data_dir, fsync off,
 * with config's other settings (port 0: a free one); the test fails, with
 * the reason on stderr, when it cannot start. */
hearth_server_t *start_test_server(hearth_server_config_t config,
                                   const char *data_dir);
/* A database opened with config (its size set here); the test fails,
 * with the reason on stderr, when it cannot open. */
hearth_db_t *test_db_open(hearth_db_config_t config);
/* A socket connected to 127.0.0.1:port (the test fails when it cannot). */
int test_connect(int port);
/* The same from the loopback address source ("127.0.0.2"), as another
 * client machine would be. */
int test_connect_from(int port, const char *source);
/* Sends stderr to the file path (created or emptied) until
 * test_restore_stderr(the result). */
int test_capture_stderr(const char *path);
void test_restore_stderr(int saved);
/* Mounts a tmpfs of `size` ("512k") on the existing directory dir (needs
 * root): false, with the reason printed, when it cannot (the caller skips
 * its test). unmount_tmpfs undoes it. */
bool mount_tmpfs(const char *dir, const char *size);
void unmount_tmpfs(const char *dir);
/* Fills dir's filesystem with dir/filler until it refuses a page more;
 * free_disk removes the filler. */
void fill_disk(const char *dir);
void free_disk(const char *dir);
/* Holds every thread of libuv's pool (shared by every loop of the
 * process) until pool_hold_end, so that work queued meanwhile (a commit,
 * a body being parsed) waits. */
typedef struct pool_hold pool_hold;
pool_hold *pool_hold_start(void);
void pool_hold_end(pool_hold *h);
/* Writes text to path as an editor saves: a file beside it, renamed over
 * it (a reader sees the old text or the new, never part). */
void write_text(const char *path, const char *text);
/* A completion that a callback (test_done_cb, with the test_done as its
 * ctx) reports from another thread and the test waits for. */
typedef struct test_done {
    uv_sem_t sem;
    int status;
} test_done;
void test_done_init(test_done *d);
void test_done_cb(int status, void *ctx);
/* Waits for the next report; its status. */
int test_done_wait(test_done *d);
void test_done_destroy(test_done *d);
/* Sets path to json (node_from's) and waits for its completion: its
 * status. */
int set_and_wait(hearth_db_t *db, const char *path, const char *json);
/* Reads a whole file (NULL when missing); free() the result. */
char *read_file(const char *path, size_t *len);
/* The monotonic clock in seconds: differences time a test's steps. */
double test_seconds(void);
/* Runs a shell command made from fmt (quiet unless it says otherwise);
 * its exit status, -1 when it did not exit. */
int test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A shell command's stdout (free() it). */
char *test_sh_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A transaction's function: the number there (0 if none) plus one. */
int test_tx_increment(const hearth_node_t *current, hearth_node_t **result,
                      void *ctx);
/* Path of a file in ../shared (or $HEARTH_SHARED). */
const char *shared_path(const char *relative);
/* A suite may define this: the test binary runs it instead of the tests
 * when started with HEARTH_TEST_CHILD set (its value is the argument), so
 * that a test can run a helper process it can kill. */
int test_child_main(const char *arg) __attribute__((weak));

/* The non-empty JSON array in ../shared/RELATIVE (a jansson json_t *,
 * json_decref it), or NULL after reporting why and failing the test. */
struct json_t *shared_json_array(const char *relative);

#endif
