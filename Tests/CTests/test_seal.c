/* test_seal.c - the cluster's envelopes (cluster/seal.h): round trips for
 * each purpose and context; a message that does not open under another
 * purpose, context or secret, nor damaged in any bit, cut at any length or
 * with another version, and leaves out as it was; two runs of one secret
 * open each other's messages; counters never repeat and refuse to wrap;
 * the secret file's errors name it and its mode is warned about; every
 * allocation may fail without a leak; threads share a seal. */
#include "test.h"

#include "cluster/seal.h"
#include "common/internal.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

/* seal.c's test hook: the counter the next message takes. */
void hearth__seal_test_counter(hearth__seal *s, uint64_t next);

static const char secret[] = "0123456789abcdef0123456789abcdef-the-secret";
static const char *const purposes[] = {"log", "fwd", "reply", "snap", "kv"};

static hearth__seal *new_seal(const char *text) {
    hearth__seal *s = NULL;
    hearth_error_t err = {0};
    CHECK_INT(hearth__seal_create(text, strlen(text), &s, &err), 0);
    CHECK(s != NULL);
    return s;
}

/* Seals plain into a fresh buffer (the test fails when it cannot). */
static hearth__buf sealed_of(hearth__seal *s, const char *purpose,
                             const char *aad, const void *plain, size_t len) {
    hearth__buf b;
    hearth__buf_init(&b);
    CHECK_INT(hearth__seal_close(s, purpose, aad, aad ? strlen(aad) : 0, plain,
                                 len, &b),
              0);
    return b;
}

static uint64_t counter_of(const hearth__buf *b) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | (unsigned char)b->data[17 + i];
    return v;
}

/* Opening refuses with `code` and leaves a buffer holding "kept" as it
 * was. */
static void check_refused_code(hearth__seal *s, const char *purpose,
                               const void *aad, size_t aad_len,
                               const void *sealed, size_t len, int code,
                               int line) {
    hearth__buf out;
    hearth__buf_init(&out);
    hearth__buf_adds(&out, "kept");
    int rc = hearth__seal_open(s, purpose, aad, aad_len, sealed, len, &out);
    if (rc != code || out.len != 4 || memcmp(out.data, "kept", 5) != 0 ||
        out.failed) {
        fprintf(stderr, "  line %d: open of %zu bytes gave %d (out %zu bytes), "
                        "expected %d\n", line, len, rc, out.len, code);
        test_failures++;
    }
    hearth__buf_free(&out);
}
#define CHECK_REFUSED(s, purpose, aad, aad_len, sealed, len)                   \
    check_refused_code(s, purpose, aad, aad_len, sealed, len, HEARTH_EDENIED,  \
                       __LINE__)

/* Opens sealed after "kept", expecting exactly plain after it. */
static void check_opens(hearth__seal *s, const char *purpose, const void *aad,
                        size_t aad_len, const hearth__buf *sealed,
                        const void *plain, size_t len) {
    hearth__buf out;
    hearth__buf_init(&out);
    hearth__buf_adds(&out, "kept");
    CHECK_INT(hearth__seal_open(s, purpose, aad, aad_len, sealed->data,
                                sealed->len, &out),
              0);
    CHECK_INT(out.len, 4 + len);
    CHECK(out.len == 4 + len && memcmp(out.data, "kept", 4) == 0 &&
          memcmp(out.data + 4, plain, len) == 0 && out.data[out.len] == '\0');
    hearth__buf_free(&out);
}

static void test_round_trip(void) {
    hearth__seal *s = new_seal(secret);
    static const size_t sizes[] = {0, 1, 15, 16, 17, 100, 1000, 70000};
    char *plain = malloc(70000);
    for (size_t i = 0; i < 70000; i++)
        plain[i] = (char)(i * 31 + 7);
    /* A context with a NUL inside is bound whole, not as a C string. */
    static const char binary_aad[] = {'n', 's', 0, 'k', 0};
    for (size_t p = 0; p < HEARTH__ARRAY_SIZE(purposes); p++)
        for (size_t z = 0; z < HEARTH__ARRAY_SIZE(sizes); z++)
            for (int a = 0; a < 3; a++) {
                const void *aad = a == 0 ? NULL : a == 1 ? "/ns/users/ada" : binary_aad;
                size_t aad_len = a == 0 ? 0 : a == 1 ? 13 : sizeof binary_aad;
                hearth__buf b;
                hearth__buf_init(&b);
                hearth__buf_adds(&b, "prefix");
                CHECK_INT(hearth__seal_close(s, purposes[p], aad, aad_len,
                                             plain, sizes[z], &b),
                          0);
                CHECK_INT(b.len, 6 + sizes[z] + HEARTH__SEAL_OVERHEAD);
                CHECK(memcmp(b.data, "prefix", 6) == 0);
                CHECK_INT((unsigned char)b.data[6], 1); /* the version */
                hearth__buf sealed;
                hearth__buf_init(&sealed);
                hearth__buf_add(&sealed, b.data + 6, b.len - 6);
                check_opens(s, purposes[p], aad, aad_len, &sealed, plain,
                            sizes[z]);
                /* Nothing of the plaintext shows through. */
                if (sizes[z] >= 16)
                    CHECK(memmem(sealed.data, sealed.len, plain, 16) == NULL);
                hearth__buf_free(&sealed);
                hearth__buf_free(&b);
            }
    free(plain);
    hearth__seal_free(s);
}

/* Sealing and opening where the bytes lie: the same envelopes as the
 * copying calls (each opens the other's), no copy of the plaintext left
 * behind, and a message that does not open leaves nothing of what it
 * decrypted to. */
static void test_in_place(void) {
    hearth__seal *s = new_seal(secret);
    static const size_t sizes[] = {0, 1, 16, 1000, 70000};
    char *plain = malloc(70000);
    for (size_t i = 0; i < 70000; i++)
        plain[i] = (char)(i * 13 + 5);
    for (size_t z = 0; z < HEARTH__ARRAY_SIZE(sizes); z++) {
        size_t len = sizes[z];
        unsigned char *msg = malloc(len + HEARTH__SEAL_OVERHEAD);
        memcpy(msg + HEARTH__SEAL_HEADER, plain, len);
        CHECK_INT(hearth__seal_close_in_place(s, "log", "ctx", 3, msg, len), 0);
        CHECK_INT(msg[0], 1);
        if (len >= 16)
            CHECK(memmem(msg, len + HEARTH__SEAL_OVERHEAD, plain, 16) == NULL);
        hearth__buf sealed;
        hearth__buf_init(&sealed);
        hearth__buf_add(&sealed, msg, len + HEARTH__SEAL_OVERHEAD);
        check_opens(s, "log", "ctx", 3, &sealed, plain, len);
        size_t got = 0;
        CHECK_INT(hearth__seal_open_in_place(s, "log", "ctx", 3, msg,
                                             len + HEARTH__SEAL_OVERHEAD, &got),
                  0);
        CHECK_INT(got, len);
        CHECK(memcmp(msg + HEARTH__SEAL_HEADER, plain, len) == 0);
        /* a copying seal opens in place; another context does not */
        hearth__buf_free(&sealed);
        sealed = sealed_of(s, "log", "ctx", plain, len);
        CHECK_INT(hearth__seal_open_in_place(s, "log", "ctx", 3, sealed.data,
                                             sealed.len, &got),
                  0);
        CHECK(memcmp(sealed.data + HEARTH__SEAL_HEADER, plain, len) == 0);
        hearth__buf_free(&sealed);
        sealed = sealed_of(s, "log", "ctx", plain, len);
        CHECK_INT(hearth__seal_open_in_place(s, "log", "other", 5, sealed.data,
                                             sealed.len, &got),
                  HEARTH_EDENIED);
        for (size_t i = 0; i < len; i++)
            CHECK(sealed.data[HEARTH__SEAL_HEADER + i] == 0);
        CHECK_INT(hearth__seal_open_in_place(s, "log", "ctx", 3, sealed.data,
                                             HEARTH__SEAL_OVERHEAD - 1, &got),
                  HEARTH_EDENIED);
        hearth__buf_free(&sealed);
        free(msg);
    }
    free(plain);
    hearth__seal_free(s);
}

static void test_empty_plaintext(void) {
    hearth__seal *s = new_seal(secret);
    hearth__buf b = sealed_of(s, "log", NULL, NULL, 0);
    CHECK_INT(b.len, HEARTH__SEAL_OVERHEAD);
    hearth__buf out;
    hearth__buf_init(&out);
    CHECK_INT(hearth__seal_open(s, "log", NULL, 0, b.data, b.len, &out), 0);
    CHECK_INT(out.len, 0);
    CHECK(out.data != NULL && out.data[0] == '\0');
    hearth__buf_free(&out);
    /* Still bound to its purpose and context. */
    CHECK_REFUSED(s, "fwd", NULL, 0, b.data, b.len);
    CHECK_REFUSED(s, "log", "x", 1, b.data, b.len);
    hearth__buf_free(&b);
    hearth__seal_free(s);
}

static void test_other_context(void) {
    hearth__seal *s = new_seal(secret);
    static const char msg[] = "{\"set\":1}";
    hearth__buf b = sealed_of(s, "log", "ns/a", msg, sizeof msg - 1);
    check_opens(s, "log", "ns/a", 4, &b, msg, sizeof msg - 1);
    for (size_t p = 1; p < HEARTH__ARRAY_SIZE(purposes); p++)
        CHECK_REFUSED(s, purposes[p], "ns/a", 4, b.data, b.len);
    CHECK_REFUSED(s, "", "ns/a", 4, b.data, b.len);
    CHECK_REFUSED(s, "Log", "ns/a", 4, b.data, b.len);
    CHECK_REFUSED(s, "log", "ns/b", 4, b.data, b.len);
    CHECK_REFUSED(s, "log", "ns/", 3, b.data, b.len);
    CHECK_REFUSED(s, "log", "ns/a\0", 5, b.data, b.len);
    CHECK_REFUSED(s, "log", NULL, 0, b.data, b.len);
    /* The purpose and the context do not run into each other. */
    CHECK_REFUSED(s, "logn", "s/a", 3, b.data, b.len);
    CHECK_REFUSED(s, "lo", "gns/a", 5, b.data, b.len);
    /* A purpose past the bound opens nothing and seals nothing. */
    char long_purpose[80];
    memset(long_purpose, 'p', sizeof long_purpose - 1);
    long_purpose[sizeof long_purpose - 1] = '\0';
    CHECK_REFUSED(s, long_purpose, "ns/a", 4, b.data, b.len);
    hearth__buf other;
    hearth__buf_init(&other);
    CHECK_INT(hearth__seal_close(s, long_purpose, NULL, 0, "x", 1, &other),
              HEARTH_EINVAL);
    CHECK_INT(other.len, 0);
    hearth__buf_free(&other);

    /* Another secret, even one byte off, opens nothing; nor does it when
     * it seals: the first seal refuses its messages. */
    char off[sizeof secret];
    memcpy(off, secret, sizeof secret);
    off[0] ^= 1;
    hearth__seal *t = new_seal(off);
    CHECK_REFUSED(t, "log", "ns/a", 4, b.data, b.len);
    hearth__buf forged = sealed_of(t, "log", "ns/a", msg, sizeof msg - 1);
    CHECK_REFUSED(s, "log", "ns/a", 4, forged.data, forged.len);
    hearth__buf_free(&forged);
    hearth__seal_free(t);
    hearth__buf_free(&b);
    hearth__seal_free(s);
}

static void test_damaged(void) {
    hearth__seal *s = new_seal(secret);
    static const char msg[] = "a message long enough for two blocks of AES";
    hearth__buf b = sealed_of(s, "log", "ctx", msg, sizeof msg - 1);
    unsigned char *copy = malloc(b.len + 1);
    /* Every single bit of the envelope, flipped. */
    for (size_t i = 0; i < b.len * 8; i++) {
        memcpy(copy, b.data, b.len);
        copy[i / 8] ^= (unsigned char)(1u << (i % 8));
        CHECK_REFUSED(s, "log", "ctx", 3, copy, b.len);
    }
    /* Cut at every length (the empty message, NULL, included). */
    for (size_t len = 0; len < b.len; len++)
        CHECK_REFUSED(s, "log", "ctx", 3, b.data, len);
    CHECK_REFUSED(s, "log", "ctx", 3, NULL, 0);
    /* A byte more. */
    memcpy(copy, b.data, b.len);
    copy[b.len] = 0;
    CHECK_REFUSED(s, "log", "ctx", 3, copy, b.len + 1);
    /* Every other version byte. */
    for (int v = 0; v < 256; v++) {
        if (v == 1)
            continue;
        memcpy(copy, b.data, b.len);
        copy[0] = (unsigned char)v;
        CHECK_REFUSED(s, "log", "ctx", 3, copy, b.len);
    }
    /* Two messages' parts swapped: another counter under the same key. */
    hearth__buf c = sealed_of(s, "log", "ctx", msg, sizeof msg - 1);
    memcpy(copy, b.data, b.len);
    memcpy(copy + 17, c.data + 17, 8);
    CHECK_REFUSED(s, "log", "ctx", 3, copy, b.len);
    /* And the untouched message still opens. */
    check_opens(s, "log", "ctx", 3, &b, msg, sizeof msg - 1);
    hearth__buf_free(&c);
    free(copy);
    hearth__buf_free(&b);
    hearth__seal_free(s);
}

static void test_two_runs(void) {
    hearth__seal *a = new_seal(secret), *b = new_seal(secret);
    hearth__buf from_a = sealed_of(a, "fwd", "k", "from a", 6);
    hearth__buf from_b = sealed_of(b, "fwd", "k", "from b", 6);
    /* Each run has its own id, so its own keys. */
    CHECK(memcmp(from_a.data + 1, from_b.data + 1, 16) != 0);
    check_opens(a, "fwd", "k", 1, &from_b, "from b", 6);
    check_opens(b, "fwd", "k", 1, &from_a, "from a", 6);
    check_opens(a, "fwd", "k", 1, &from_a, "from a", 6);
    check_opens(b, "fwd", "k", 1, &from_b, "from b", 6);
    /* Again, from the cache this time. */
    check_opens(a, "fwd", "k", 1, &from_b, "from b", 6);
    CHECK_REFUSED(a, "reply", "k", 1, from_b.data, from_b.len);
    hearth__buf_free(&from_a);
    hearth__buf_free(&from_b);
    hearth__seal_free(a);
    hearth__seal_free(b);
}

/* More runs than the key cache holds, and forgeries with made-up run ids
 * between them: every message opens, first time and again. */
static void test_many_runs(void) {
    enum { RUNS = 150 };
    hearth__seal *r = new_seal(secret);
    hearth__buf msgs[RUNS];
    for (int i = 0; i < RUNS; i++) {
        hearth__seal *s = new_seal(secret);
        char text[16];
        snprintf(text, sizeof text, "run %d", i);
        msgs[i] = sealed_of(s, purposes[i % 5], NULL, text, strlen(text));
        hearth__seal_free(s);
    }
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < RUNS; i++) {
            char text[16];
            snprintf(text, sizeof text, "run %d", i);
            check_opens(r, purposes[i % 5], NULL, 0, &msgs[i], text,
                        strlen(text));
            msgs[i].data[1] ^= 0x55; /* another run id: a forgery */
            CHECK_REFUSED(r, purposes[i % 5], NULL, 0, msgs[i].data,
                          msgs[i].len);
            msgs[i].data[1] ^= 0x55;
        }
    for (int i = 0; i < RUNS; i++)
        hearth__buf_free(&msgs[i]);
    hearth__seal_free(r);
}

static void test_counters(void) {
    enum { N = 1000 };
    hearth__seal *s = new_seal(secret);
    hearth__buf first = sealed_of(s, "log", NULL, "same", 4);
    CHECK_INT(counter_of(&first), 0);
    for (uint64_t i = 1; i < N; i++) {
        /* Any purpose: one counter for all of a run's keys. */
        hearth__buf b = sealed_of(s, purposes[i % 5], NULL, "same", 4);
        CHECK_INT(counter_of(&b), i);
        CHECK(memcmp(b.data + 1, first.data + 1, 16) == 0);
        /* The same plaintext never seals the same. */
        CHECK(memcmp(b.data + 25, first.data + 25, 4 + 16) != 0);
        hearth__buf_free(&b);
    }
    hearth__buf_free(&first);

    /* The last counter value is never taken: the next would wrap. */
    hearth__seal_test_counter(s, UINT64_MAX - 1);
    hearth__buf last = sealed_of(s, "log", NULL, "last", 4);
    CHECK(counter_of(&last) == UINT64_MAX - 1);
    check_opens(s, "log", NULL, 0, &last, "last", 4);
    hearth__buf out;
    hearth__buf_init(&out);
    hearth__buf_adds(&out, "kept");
    CHECK_INT(hearth__seal_close(s, "log", NULL, 0, "x", 1, &out), HEARTH_EIO);
    CHECK_INT(hearth__seal_close(s, "fwd", NULL, 0, "x", 1, &out), HEARTH_EIO);
    CHECK(out.len == 4 && strcmp(out.data, "kept") == 0 && !out.failed);
    /* Opening is not affected. */
    check_opens(s, "log", NULL, 0, &last, "last", 4);
    hearth__buf_free(&out);
    hearth__buf_free(&last);
    hearth__seal_free(s);
}

static void test_create_errors(void) {
    hearth__seal *s = (hearth__seal *)1;
    hearth_error_t err = {0};
    CHECK_INT(hearth__seal_create(secret, HEARTH__SEAL_MIN_SECRET - 1, &s, &err),
              HEARTH_EINVAL);
    CHECK(s == NULL);
    CHECK(strstr(err.message, "31 bytes") && strstr(err.message, "32"));
    CHECK_INT(hearth__seal_create(NULL, 0, &s, NULL), HEARTH_EINVAL);
    CHECK_INT(hearth__seal_create(secret, HEARTH__SEAL_MIN_SECRET, &s, &err), 0);
    hearth__seal_free(s);
    hearth__seal_free(NULL);
}

/* ---- the secret file ---- */

static void write_file(const char *path, const void *data, size_t len,
                       mode_t mode) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK_INT(fwrite(data, 1, len, f), len);
    fclose(f);
    CHECK_INT(chmod(path, mode), 0);
}

/* Loading path fails with code and a message naming it and holding
 * `word`. */
static void check_load_error(const char *path, int code, const char *word) {
    hearth__seal *s = (hearth__seal *)1;
    hearth_error_t err = {0};
    CHECK_INT(hearth__seal_load_file(path, &s, &err), code);
    CHECK(s == NULL);
    CHECK_INT(err.code, code);
    if (!strstr(err.message, path) || !strstr(err.message, word)) {
        fprintf(stderr, "  the message \"%s\" should name %s and say %s\n",
                err.message, path, word);
        test_failures++;
    }
}

static void test_load_file(void) {
    char dir[64] = "/tmp/hearth-seal-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128], log[128];
    snprintf(log, sizeof log, "%s/stderr", dir);
    int saved = test_capture_stderr(log);

    snprintf(path, sizeof path, "%s/missing", dir);
    check_load_error(path, HEARTH_ENOTFOUND, "No such file");
    check_load_error(dir, HEARTH_EIO, "directory");

    /* 31 bytes after the newline goes: too short. */
    snprintf(path, sizeof path, "%s/short", dir);
    write_file(path, "0123456789012345678901234567890\n", 32, 0600);
    check_load_error(path, HEARTH_EINVAL, "31 bytes");
    write_file(path, "0123456789012345678901234567890\r\n", 33, 0600);
    check_load_error(path, HEARTH_EINVAL, "31 bytes");
    write_file(path, "", 0, 0600);
    check_load_error(path, HEARTH_EINVAL, "0 bytes");

    /* Over 4096 bytes: refused, not cut. */
    char big[5000];
    memset(big, 'k', sizeof big);
    snprintf(path, sizeof path, "%s/big", dir);
    write_file(path, big, 4097, 0600);
    check_load_error(path, HEARTH_EINVAL, "4096");
    write_file(path, big, sizeof big, 0600);
    check_load_error(path, HEARTH_EINVAL, "4096");
    write_file(path, big, 4096, 0600);
    hearth__seal *s = NULL;
    CHECK_INT(hearth__seal_load_file(path, &s, NULL), 0);
    hearth__seal_free(s);

    /* `openssl rand -base64 32 > file`: 44 characters and a newline; the
     * secret is the 44 characters, as a seal made of them shows. */
    static const char b64[] = "q2v9Zb0yV8h1mXo4cN7sTt3LwEaJfR5uPgKdYiHxBnM=";
    CHECK_INT(strlen(b64), 44);
    char line[64];
    snprintf(line, sizeof line, "%s\n", b64);
    snprintf(path, sizeof path, "%s/secret", dir);
    write_file(path, line, 45, 0600);
    s = NULL;
    hearth_error_t err = {0};
    CHECK_INT(hearth__seal_load_file(path, &s, &err), 0);
    hearth__seal *same = new_seal(b64), *with_newline = new_seal(line);
    hearth__buf b = sealed_of(s, "kv", "lease", "v", 1);
    check_opens(same, "kv", "lease", 5, &b, "v", 1);
    CHECK_REFUSED(with_newline, "kv", "lease", 5, b.data, b.len);
    hearth__buf_free(&b);
    hearth__seal_free(same);
    hearth__seal_free(with_newline);
    hearth__seal_free(s);
    /* CRLF goes too, but only one line end. */
    snprintf(line, sizeof line, "%s\r\n", b64);
    write_file(path, line, 46, 0600);
    CHECK_INT(hearth__seal_load_file(path, &s, NULL), 0);
    same = new_seal(b64);
    b = sealed_of(s, "kv", NULL, "v", 1);
    check_opens(same, "kv", NULL, 0, &b, "v", 1);
    hearth__buf_free(&b);
    hearth__seal_free(same);
    hearth__seal_free(s);

    /* Unreadable (root reads anything: then skipped). */
    if (geteuid() != 0) {
        write_file(path, line, 46, 0000);
        check_load_error(path, HEARTH_EIO, "denied");
    }

    /* No warning so far (every file was 0600); a file others may read is
     * used, with one warning however often it is read. */
    FILE *f = fopen(log, "rb");
    CHECK(f && fgetc(f) == EOF);
    if (f)
        fclose(f);
    write_file(path, line, 46, 0644);
    for (int i = 0; i < 2; i++) {
        CHECK_INT(hearth__seal_load_file(path, &s, NULL), 0);
        hearth__seal_free(s);
    }
    write_file(path, line, 46, 0640);
    CHECK_INT(hearth__seal_load_file(path, &s, NULL), 0);
    hearth__seal_free(s);
    test_restore_stderr(saved);
    size_t len = 0;
    char *text = read_file(log, &len);
    char expected[256];
    snprintf(expected, sizeof expected,
             "hearth: cluster: %s is readable by others; chmod 600 it\n", path);
    CHECK_STR_AS(text, "stderr", expected);
    free(text);
    remove_tree(dir);
}

/* ---- failures ---- */

static void test_out_of_memory(void) {
    char dir[64] = "/tmp/hearth-seal-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/secret", dir);
    write_file(path, secret, sizeof secret - 1, 0600);

    /* Making a seal, from bytes and from a file. */
    for (int from_file = 0; from_file < 2; from_file++) {
        int rc = -1;
        long n;
        for (n = 0; n < 50 && rc; n++) {
            hearth__seal *s = (hearth__seal *)1;
            hearth_error_t err = {0};
            hearth__alloc_fail_after(n);
            rc = from_file ? hearth__seal_load_file(path, &s, &err)
                           : hearth__seal_create(secret, sizeof secret - 1, &s,
                                                 &err);
            hearth__alloc_fail_after(-1);
            if (rc) {
                CHECK_INT(rc, HEARTH_ENOMEM);
                CHECK_INT(err.code, HEARTH_ENOMEM);
                CHECK(s == NULL);
            } else {
                hearth__seal_free(s);
            }
        }
        CHECK_INT(rc, 0);
        CHECK(n > 1); /* the seal and its copy of the secret */
    }

    /* Sealing and opening into an empty buffer and onto one that has
     * room for nothing more: refused, the buffer as it was. */
    hearth__seal *s = new_seal(secret);
    char plain[300];
    memset(plain, 'p', sizeof plain);
    hearth__buf sealed = sealed_of(s, "log", "a", plain, sizeof plain);
    for (int op = 0; op < 2; op++)
        for (int prefixed = 0; prefixed < 2; prefixed++) {
            hearth__buf out;
            hearth__buf_init(&out);
            if (prefixed) { /* a full buffer: 63 bytes of its 64 */
                char fill[62];
                memset(fill, 'f', sizeof fill);
                hearth__buf_add(&out, fill, sizeof fill);
                CHECK_INT(out.cap, 64);
            }
            size_t len = out.len;
            hearth__alloc_fail_after(0);
            int rc = op ? hearth__seal_open(s, "log", "a", 1, sealed.data,
                                            sealed.len, &out)
                        : hearth__seal_close(s, "log", "a", 1, plain,
                                             sizeof plain, &out);
            hearth__alloc_fail_after(-1);
            CHECK_INT(rc, HEARTH_ENOMEM);
            CHECK_INT(out.len, len);
            CHECK(!out.failed);
            CHECK(!prefixed || (out.data[0] == 'f' && out.data[61] == 'f' &&
                                out.data[62] == '\0'));
            /* And once memory is back, the same call works. */
            rc = op ? hearth__seal_open(s, "log", "a", 1, sealed.data,
                                        sealed.len, &out)
                    : hearth__seal_close(s, "log", "a", 1, plain, sizeof plain,
                                         &out);
            CHECK_INT(rc, 0);
            CHECK_INT(out.len, len + sizeof plain +
                                   (op ? 0 : HEARTH__SEAL_OVERHEAD));
            hearth__buf_free(&out);
        }
    /* A buffer that failed before stays failed and is not written. */
    hearth__buf out;
    hearth__buf_init(&out);
    out.failed = true;
    CHECK_INT(hearth__seal_close(s, "log", NULL, 0, "x", 1, &out), HEARTH_ENOMEM);
    CHECK_INT(hearth__seal_open(s, "log", "a", 1, sealed.data, sealed.len, &out),
              HEARTH_ENOMEM);
    CHECK(out.failed && out.data == NULL);
    hearth__buf_free(&sealed);
    hearth__seal_free(s);
    remove_tree(dir);
}

/* ---- threads ---- */

enum { THREADS = 4, PER_THREAD = 400 };
typedef struct seal_worker {
    pthread_t thread;
    hearth__seal *mine, *theirs;
    uint64_t counters[PER_THREAD];
    int failures;
} seal_worker;

/* Seals with one seal and opens with the other, both shared by every
 * thread: the counter and the key cache under contention. */
static void *seal_worker_run(void *arg) {
    seal_worker *w = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        char text[32];
        snprintf(text, sizeof text, "message %d", i);
        const char *purpose = purposes[i % 5];
        hearth__buf b, out;
        hearth__buf_init(&b);
        hearth__buf_init(&out);
        if (hearth__seal_close(w->mine, purpose, text, 4, text, strlen(text),
                               &b) ||
            hearth__seal_open(w->theirs, purpose, text, 4, b.data, b.len,
                              &out) ||
            out.len != strlen(text) || memcmp(out.data, text, out.len) != 0)
            w->failures++;
        else
            w->counters[i] = counter_of(&b);
        hearth__buf_free(&b);
        hearth__buf_free(&out);
    }
    return NULL;
}

static int compare_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_threads(void) {
    hearth__seal *a = new_seal(secret), *b = new_seal(secret);
    seal_worker w[THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < THREADS; i++) {
        w[i].mine = a;
        w[i].theirs = b;
        CHECK_INT(pthread_create(&w[i].thread, NULL, seal_worker_run, &w[i]), 0);
    }
    static uint64_t all[THREADS * PER_THREAD];
    for (int i = 0; i < THREADS; i++) {
        pthread_join(w[i].thread, NULL);
        CHECK_INT(w[i].failures, 0);
        memcpy(all + i * PER_THREAD, w[i].counters, sizeof w[i].counters);
    }
    /* Every counter taken once: exactly 0 .. N-1. */
    qsort(all, THREADS * PER_THREAD, sizeof all[0], compare_u64);
    for (size_t i = 0; i < THREADS * PER_THREAD; i++)
        if (all[i] != i) {
            CHECK_INT(all[i], i);
            break;
        }
    hearth__seal_free(a);
    hearth__seal_free(b);
}

const test_case seal_tests[] = {
    {"seal_round_trip", test_round_trip},
    {"seal_in_place", test_in_place},
    {"seal_empty_plaintext", test_empty_plaintext},
    {"seal_other_context", test_other_context},
    {"seal_damaged", test_damaged},
    {"seal_two_runs", test_two_runs},
    {"seal_many_runs", test_many_runs},
    {"seal_counters", test_counters},
    {"seal_create_errors", test_create_errors},
    {"seal_load_file", test_load_file},
    {"seal_out_of_memory", test_out_of_memory},
    {"seal_threads", test_threads},
    {NULL, NULL},
};
