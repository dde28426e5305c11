/* test_main.c - runs every suite, each test in a child process with a time
 * limit; prints "N passed, M failed" last. `ctest NAME...` runs the tests
 * whose names contain one of the words. */
#include "test.h"

#include <uv.h>
#include "common/internal.h"
#include "rules/jwt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int test_failures;

#define SUITES(X)                                                              \
    X(common_tests) X(block_tests) X(path_tests) X(v5_tests) X(key_tests) X(children_tests) X(node_tests) X(pool_tests) \
    X(json_tests) X(query_tests) X(db_tests) X(store_tests) X(server_tests)    \
    X(conformance_tests) X(ws_client_tests) X(sync_random_tests)               \
    X(codec_tests) X(rules_tests) X(ruleset_tests) X(jwt_tests)                \
    X(jwt_key_tests) X(client_tests) X(console_tests) X(cluster_tests)          \
    X(tls_tests) X(operator_tests) X(backup_tests) X(http_tests)                \
    X(ws_server_tests) X(seal_tests) X(auth_key_tests) X(trigger_tests)    \
    X(coverage_tests) X(pitr_tests) X(os_tests) X(realtime_tests)          \
    X(limits_tests)

/* Table-driven suites: one test per row of a table read at run time. */
#define TABLES(X) X(syncpoint_spec_table)

/* Strong declarations: a suite listed here and defined nowhere (renamed,
 * or its file left out of the build) is a link error, not an empty run. */
#define DECLARE(s) extern const test_case s[];
SUITES(DECLARE)
#undef DECLARE
#define DECLARE(t) extern const test_table t;
TABLES(DECLARE)
#undef DECLARE

enum { TIME_LIMIT_S = 30 };

hearth_node_t *node_from(const char *json) {
    hearth_node_t *n = NULL;
    hearth_error_t err;
    if (hearth_node_from_json(json, (size_t)-1, HEARTH_JSON_ALLOW_SERVER_VALUES,
                              &n, &err)) {
        fprintf(stderr, "node_from(%s): %s\n", json, err.message);
        abort();
    }
    return n;
}

char *to_json(const hearth_node_t *n) {
    return hearth_node_to_json(n, HEARTH_JSON_EXPORT, NULL);
}

void check_error(const char *what, int rc, const hearth_error_t *err,
                 int code, const char *at_path, const char *in_message,
                 const char *file, int line) {
    if (rc == code && err->code == code &&
        (!at_path || strcmp(err->path, at_path) == 0) &&
        (!in_message || strstr(err->message, in_message)))
        return;
    fprintf(stderr,
            "  %s:%d: %s gave %s (path \"%s\": %s), expected %s at \"%s\" "
            "naming \"%s\"\n",
            file, line, what, hearth_err_name(rc), err->path, err->message,
            hearth_err_name(code), at_path ? at_path : "",
            in_message ? in_message : "");
    test_failures++;
}

int join_keys(const char *key, const hearth_node_t *child, void *ctx) {
    (void)child;
    char *out = ctx;
    if (*out)
        strcat(out, " ");
    strcat(out, key);
    return 0;
}

uint64_t test_rand(uint64_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

char *object_json(int n, const char *item_fmt) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_addc(&b, '{');
    for (int i = 0; i < n; i++) {
        if (i)
            hearth__buf_addc(&b, ',');
        hearth__buf_printf(&b, item_fmt, i, i);
    }
    hearth__buf_addc(&b, '}');
    CHECK(!b.failed);
    return hearth__buf_detach(&b, NULL);
}

void b64url(const void *data, size_t len, char *out) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__jwt_b64url_encode(&b, data, len);
    char *text = hearth__buf_detach(&b, NULL);
    strcpy(out, text ? text : "");
    free(text);
}

/* Each case is valid but for the one claim it is refused for (an expiry
 * far ahead where that is not the point). */
#define LATER "\"exp\":4102444800"
const claims_case refused_claims[] = {
    {"{\"sub\":\"ada\",\"aud\":\"my-project\",\"iss\":\"https://issuer.example\","
     "\"exp\":1600000000}", "expired"},
    {"{\"sub\":\"ada\",\"aud\":\"my-project\",\"iss\":\"https://issuer.example\","
     "\"nbf\":1900000000," LATER "}", "nbf"},
    {"{\"sub\":\"ada\",\"aud\":\"my-project\",\"iss\":\"https://issuer.example\","
     "\"iat\":1900000000," LATER "}", "iat"},
    {"{\"sub\":\"ada\",\"aud\":\"other\",\"iss\":\"https://issuer.example\"," LATER "}",
     "audience"},
    {"{\"sub\":\"ada\",\"aud\":[\"other\",\"more\"],\"iss\":\"https://issuer.example\","
     LATER "}", "audience"},
    {"{\"sub\":\"ada\",\"aud\":\"my-project\",\"iss\":\"x\"," LATER "}", "issuer"},
    {"{\"aud\":\"my-project\",\"iss\":\"https://issuer.example\"," LATER "}", "uid"},
    /* A signed token that never expires is refused. */
    {"{\"sub\":\"ada\",\"aud\":\"my-project\",\"iss\":\"https://issuer.example\"}",
     "no expiry"},
    {NULL, NULL},
};
#undef LATER

void remove_tree(const char *dir) {
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_INT(system(cmd), 0);
}

bool mount_tmpfs(const char *dir, const char *size) {
    char opts[64];
    snprintf(opts, sizeof opts, "size=%s", size);
    if (mount("tmpfs", dir, "tmpfs", 0, opts) == 0)
        return true;
    fprintf(stderr, "  SKIPPED: cannot mount a tmpfs on %s (%s); this test "
                    "needs root\n", dir, strerror(errno));
    return false;
}

void unmount_tmpfs(const char *dir) { CHECK_INT(umount(dir), 0); }

void fill_disk(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/filler", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    CHECK(fd >= 0);
    static char page[4096];
    /* Down to single bytes: a partly used page of the filler is used up. */
    for (size_t chunk = sizeof page; chunk; chunk /= 2)
        while (write(fd, page, chunk) == (ssize_t)chunk)
            ;
    close(fd);
}

void free_disk(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/filler", dir);
    CHECK_INT(unlink(path), 0);
}

int test_connect_from(int port, const char *source) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (source) {
        struct sockaddr_in from = {.sin_family = AF_INET};
        CHECK_INT(inet_pton(AF_INET, source, &from.sin_addr), 1);
        CHECK_INT(bind(fd, (struct sockaddr *)&from, sizeof from), 0);
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_INT(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

int test_connect(int port) { return test_connect_from(port, NULL); }

int test_capture_stderr(const char *path) {
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    return saved;
}

void test_restore_stderr(int saved) {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

hearth_server_t *start_test_server(hearth_server_config_t config,
                                   const char *data_dir) {
    config.size = sizeof config;
    config.host = "127.0.0.1";
    config.data_dir = data_dir;
    config.fsync_mode = HEARTH_FSYNC_OFF;
    hearth_server_t *s = NULL;
    hearth_error_t err;
    int rc = hearth_server_start(&config, &s, &err);
    if (rc)
        fprintf(stderr, "  server: %s\n", err.message);
    CHECK_INT(rc, 0);
    return s;
}

hearth_db_t *test_db_open(hearth_db_config_t config) {
    config.size = sizeof config;
    hearth_db_t *db = NULL;
    hearth_error_t err;
    int rc = hearth_db_open(&config, &db, &err);
    if (rc)
        fprintf(stderr, "  client: %s\n", err.message);
    CHECK_INT(rc, 0);
    return db;
}

struct pool_hold {
    uv_loop_t loop;
    uv_work_t jobs[128];
    uv_sem_t started, release;
    int n;
};

static void hold_job(uv_work_t *w) {
    pool_hold *h = w->data;
    uv_sem_post(&h->started);
    uv_sem_wait(&h->release);
}

static void hold_done(uv_work_t *w, int status) {
    (void)w;
    (void)status;
}

int test_sh(const char *fmt, ...) {
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

char *test_sh_out(const char *fmt, ...) {
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    size_t cap = 1 << 16, len = 0, k;
    char *out = malloc(cap);
    while (p && (k = fread(out + len, 1, cap - len - 1, p)) > 0)
        if ((len += k) + 1 == cap)
            out = realloc(out, cap *= 2);
    out[len] = '\0';
    if (p)
        pclose(p);
    return out;
}

double test_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

pool_hold *pool_hold_start(void) {
    pool_hold *h = calloc(1, sizeof *h);
    const char *size = getenv("UV_THREADPOOL_SIZE");
    h->n = size && atoi(size) > 0 ? atoi(size) : 4;
    CHECK(h->n <= 128);
    CHECK_INT(uv_loop_init(&h->loop), 0);
    uv_sem_init(&h->started, 0);
    uv_sem_init(&h->release, 0);
    for (int i = 0; i < h->n; i++) {
        h->jobs[i].data = h;
        CHECK_INT(uv_queue_work(&h->loop, &h->jobs[i], hold_job, hold_done), 0);
    }
    for (int i = 0; i < h->n; i++)
        uv_sem_wait(&h->started); /* every thread is held now */
    return h;
}

void pool_hold_end(pool_hold *h) {
    for (int i = 0; i < h->n; i++)
        uv_sem_post(&h->release);
    CHECK_INT(uv_run(&h->loop, UV_RUN_DEFAULT), 0);
    CHECK_INT(uv_loop_close(&h->loop), 0);
    uv_sem_destroy(&h->started);
    uv_sem_destroy(&h->release);
    free(h);
}

int test_tx_increment(const hearth_node_t *current, hearth_node_t **result,
                      void *ctx) {
    (void)ctx;
    double n = hearth_node_type(current) == HEARTH_TYPE_NUMBER
                   ? hearth_node_number_value(current)
                   : 0;
    *result = hearth_node_number(n + 1);
    return HEARTH_TX_COMMIT;
}

void write_text(const char *path, const char *text) {
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
    CHECK_INT(rename(tmp, path), 0);
}

void test_done_init(test_done *d) {
    d->status = 0;
    CHECK_INT(uv_sem_init(&d->sem, 0), 0);
}

void test_done_cb(int status, void *ctx) {
    test_done *d = ctx;
    d->status = status;
    uv_sem_post(&d->sem);
}

int test_done_wait(test_done *d) {
    uv_sem_wait(&d->sem);
    return d->status;
}

void test_done_destroy(test_done *d) { uv_sem_destroy(&d->sem); }

int set_and_wait(hearth_db_t *db, const char *path, const char *json) {
    test_done d;
    test_done_init(&d);
    hearth_node_t *v = node_from(json);
    int rc = hearth_db_set(db, path, v, test_done_cb, &d, NULL, NULL);
    CHECK_INT(rc, 0);
    hearth_node_decref(v);
    int status = rc ? rc : test_done_wait(&d);
    test_done_destroy(&d);
    return status;
}

char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)size + 1);
    if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
        free(data);
        data = NULL;
    }
    fclose(f);
    if (data) {
        data[size] = '\0';
        if (len)
            *len = (size_t)size;
    }
    return data;
}

const char *shared_path(const char *relative) {
    static char buf[1024];
    const char *root = getenv("HEARTH_SHARED");
    snprintf(buf, sizeof buf, "%s/%s", root ? root : "../shared", relative);
    return buf;
}

struct json_t *shared_json_array(const char *relative) {
    const char *path = shared_path(relative);
    size_t len = 0;
    char *text = read_file(path, &len);
    if (!text) {
        fprintf(stderr, "  missing %s\n", path);
        test_failures++;
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!root || !json_is_array(root) || json_array_size(root) == 0) {
        fprintf(stderr, "  %s: not a non-empty array (%s, line %d)\n", path,
                root ? "" : jerr.text, jerr.line);
        test_failures++;
        json_decref(root);
        return NULL;
    }
    return root;
}

static bool selected(const char *name, int argc, char **argv) {
    if (argc < 2)
        return true;
    for (int i = 1; i < argc; i++)
        if (strstr(name, argv[i]))
            return true;
    return false;
}

/* Runs fn(arg) in a child process; nonzero when it failed. */
static int run_child(void (*fn)(size_t), size_t arg) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(TIME_LIMIT_S);
        test_failures = 0;
        fn(arg);
        exit(test_failures ? 1 : 0); /* LeakSanitizer reports here */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "  killed by signal %d%s\n", WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? " (time limit)" : "");
        return 1;
    }
    return WEXITSTATUS(status) != 0;
}

typedef struct tally {
    int passed, failed;
} tally;

/* Runs fn(arg) as the test `name` and prints its line. */
static void run_named(const char *name, void (*fn)(size_t), size_t arg,
                      tally *t) {
    double t0 = test_seconds();
    int bad = run_child(fn, arg);
    double ms = (test_seconds() - t0) * 1e3;
    printf("%s %s (%.0f ms)\n", bad ? "FAIL" : "ok  ", name, ms);
    bad ? t->failed++ : t->passed++;
}

static const test_case *current_case;
static void run_case(size_t unused) {
    (void)unused;
    current_case->fn();
}

static void run_suite(const test_case *suite, int argc, char **argv,
                      tally *t) {
    for (const test_case *c = suite; c->name; c++) {
        if (!selected(c->name, argc, argv))
            continue;
        current_case = c;
        run_named(c->name, run_case, 0, t);
    }
}

/* Each row as the test "prefix/row name". A table that cannot be read
 * is one failed test named after the table. */
static void run_table(const test_table *table, int argc, char **argv,
                      tally *t) {
    size_t n = 0;
    if (table->count(&n)) {
        fprintf(stderr, "  %s: the table cannot be read\n", table->prefix);
        printf("FAIL %s\n", table->prefix);
        t->failed++;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char name[512];
        snprintf(name, sizeof name, "%s/%s", table->prefix, table->name(i));
        if (selected(name, argc, argv))
            run_named(name, table->run, i, t);
    }
}

int main(int argc, char **argv) {
    /* As the CLI does: the library's messages on stderr, where the tests
     * that read them look (client_log_hook sets its own). */
    hearth_set_log(hearth_log_stderr, NULL);
    /* A test may run this binary again as a helper process. */
    const char *child = getenv("HEARTH_TEST_CHILD");
    if (child && test_child_main)
        return test_child_main(child);
    const test_case *suites[] = {
#define LIST(s) s,
        SUITES(LIST)
#undef LIST
    };
    const test_table *tables[] = {
#define LIST(t) &t,
        TABLES(LIST)
#undef LIST
    };
    tally t = {0, 0};
    for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++)
        run_suite(suites[s], argc, argv, &t);
    for (size_t s = 0; s < sizeof tables / sizeof tables[0]; s++)
        run_table(tables[s], argc, argv, &t);
    printf("%d passed, %d failed\n", t.passed, t.failed);
    return t.failed ? 1 : 0;
}
