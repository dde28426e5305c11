/* seal.c - AES-256-GCM envelopes for everything a node puts into NATS
 * (seal.h says why and what the envelope is).
 *
 * Keys: HKDF-SHA256(secret, salt = run id, info = "hearth cluster v1 " +
 * purpose). The run id is drawn afresh by each seal, so a key belongs to
 * one run, and its counter alone numbers that key's nonces: nonce =
 * 4 zero bytes || the counter, big-endian, never reused and never wrapped.
 * A receiver derives the sender's key from the run id in the envelope;
 * derived keys are kept in a small cache (a sender's key is derived once,
 * not per message). A key derived for an envelope enters the cache only
 * once that envelope has opened, so forgeries with made-up run ids cost
 * their sender an HKDF each and can never push real keys out.
 *
 * Additional data: the envelope's header, the purpose, a NUL (a purpose,
 * a C string, holds none, so the split is unambiguous) and the caller's
 * context. The purpose is in the key already; binding it again costs
 * nothing and keeps the rule in one visible place.
 *
 * Threads: the counter is atomic, the cache is behind a mutex, and each
 * call has its own cipher context (the fetched algorithms, shared, are
 * read-only). */
#include "cluster/seal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#define VERSION 1
#define RUN_LEN 16
#define COUNTER_LEN 8
#define HEADER_LEN (1 + RUN_LEN + COUNTER_LEN)
#define TAG_LEN 16
#define KEY_LEN 32
#define NONCE_LEN 12
/* Purposes are short names the code writes ("log", "fwd"); a bound keeps
 * them in a cache entry and the HKDF info on the stack. */
#define PURPOSE_MAX 64
#define INFO_PREFIX "hearth cluster v1 "
/* Enough for a few runs of every node of a cluster, each purpose. */
#define CACHE_SIZE 64
/* A secret file is a line of text; anything much longer is a mistake. */
#define FILE_MAX 4096
/* One EVP update at most (its lengths are ints). */
#define CHUNK (1u << 30)

_Static_assert(HEADER_LEN + TAG_LEN == HEARTH__SEAL_OVERHEAD,
               "seal.h's overhead is the envelope's header and tag");

typedef struct cache_entry {
    bool used;
    uint64_t last; /* the tick of its last use: the oldest goes first */
    unsigned char run[RUN_LEN];
    char purpose[PURPOSE_MAX + 1];
    unsigned char key[KEY_LEN];
} cache_entry;

struct hearth__seal {
    unsigned char *secret;
    size_t secret_len;
    unsigned char run[RUN_LEN];
    _Atomic uint64_t counter; /* the next message's */
    EVP_CIPHER *aes;
    EVP_KDF *hkdf;
    uv_mutex_t lock; /* guards tick and cache */
    uint64_t tick;
    cache_entry cache[CACHE_SIZE];
};

/* ---- keys ---- */

static bool purpose_ok(const char *purpose) {
    return purpose && strlen(purpose) <= PURPOSE_MAX;
}

static int derive(hearth__seal *s, const unsigned char run[RUN_LEN],
                  const char *purpose, unsigned char key[KEY_LEN]) {
    char info[sizeof INFO_PREFIX + PURPOSE_MAX];
    size_t plen = strlen(purpose);
    memcpy(info, INFO_PREFIX, sizeof INFO_PREFIX - 1);
    memcpy(info + sizeof INFO_PREFIX - 1, purpose, plen);
    EVP_KDF_CTX *k = EVP_KDF_CTX_new(s->hkdf);
    if (!k)
        return HEARTH_ENOMEM;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, s->secret,
                                          s->secret_len),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)run,
                                          RUN_LEN),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info,
                                          sizeof INFO_PREFIX - 1 + plen),
        OSSL_PARAM_construct_end(),
    };
    int ok = EVP_KDF_derive(k, key, KEY_LEN, params);
    EVP_KDF_CTX_free(k);
    return ok == 1 ? 0 : HEARTH_EIO;
}

/* The cached key for (run, purpose) into key; false when not cached. */
static bool cache_get(hearth__seal *s, const unsigned char run[RUN_LEN],
                      const char *purpose, unsigned char key[KEY_LEN]) {
    bool found = false;
    uv_mutex_lock(&s->lock);
    for (size_t i = 0; i < CACHE_SIZE; i++) {
        cache_entry *e = &s->cache[i];
        if (e->used && memcmp(e->run, run, RUN_LEN) == 0 &&
            strcmp(e->purpose, purpose) == 0) {
            e->last = ++s->tick;
            memcpy(key, e->key, KEY_LEN);
            found = true;
            break;
        }
    }
    uv_mutex_unlock(&s->lock);
    return found;
}

/* Keeps key for (run, purpose) in the place of the least recently used
 * entry (unless another thread has put it there meanwhile). */
static void cache_put(hearth__seal *s, const unsigned char run[RUN_LEN],
                      const char *purpose, const unsigned char key[KEY_LEN]) {
    uv_mutex_lock(&s->lock);
    cache_entry *victim = &s->cache[0];
    for (size_t i = 0; i < CACHE_SIZE; i++) {
        cache_entry *e = &s->cache[i];
        if (e->used && memcmp(e->run, run, RUN_LEN) == 0 &&
            strcmp(e->purpose, purpose) == 0) {
            victim = NULL;
            break;
        }
        if (!e->used ? victim->used : victim->used && e->last < victim->last)
            victim = e;
    }
    if (victim) {
        victim->used = true;
        victim->last = ++s->tick;
        memcpy(victim->run, run, RUN_LEN);
        strcpy(victim->purpose, purpose);
        memcpy(victim->key, key, KEY_LEN);
    }
    uv_mutex_unlock(&s->lock);
}

/* ---- making and freeing ---- */

int hearth__seal_create(const void *secret, size_t len, hearth__seal **out,
                        hearth_error_t *err) {
    *out = NULL;
    if (!secret || len < HEARTH__SEAL_MIN_SECRET)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "the cluster secret is %zu bytes; at least %d are "
                             "needed (openssl rand -base64 32)",
                             secret ? len : 0, HEARTH__SEAL_MIN_SECRET);
    hearth__seal *s = hearth__calloc(1, sizeof *s);
    if (!s || !(s->secret = hearth__malloc(len))) {
        hearth__free(s);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    memcpy(s->secret, secret, len);
    s->secret_len = len;
    atomic_init(&s->counter, 0);
    if (uv_mutex_init(&s->lock)) {
        OPENSSL_cleanse(s->secret, len);
        hearth__free(s->secret);
        hearth__free(s);
        return hearth__error(err, HEARTH_EIO, NULL,
                             "cannot make the cluster seal's lock");
    }
    /* Fetched once here: an implicit fetch per call takes the provider
     * store's lock each time. */
    s->aes = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    s->hkdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    if (!s->aes || !s->hkdf || RAND_bytes(s->run, RUN_LEN) != 1) {
        hearth__seal_free(s);
        return hearth__error(err, HEARTH_EIO, NULL,
                             "cannot set up the cluster seal: OpenSSL lacks "
                             "AES-256-GCM, HKDF or randomness");
    }
    *out = s;
    return 0;
}

/* Warns once per process: a secret others can read is no secret, but
 * refusing it would stop a cluster over a file mode. */
static void warn_mode(const char *path, mode_t mode) {
    static atomic_bool warned;
    if ((mode & (S_IRGRP | S_IROTH)) && !atomic_exchange(&warned, true))
        hearth__log(HEARTH_LOG_WARNING, "cluster: %s is readable by others; chmod 600 "
                        "it", path);
}

int hearth__seal_load_file(const char *path, hearth__seal **out,
                           hearth_error_t *err) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return hearth__error(err, errno == ENOENT ? HEARTH_ENOTFOUND : HEARTH_EIO,
                             NULL, "cannot read the cluster secret %s: %s",
                             path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) == 0)
        warn_mode(path, st.st_mode);
    /* On the stack, read once, wiped after: a growing heap buffer would
     * leave copies of the secret in memory it gave back. */
    unsigned char buf[FILE_MAX + 1];
    size_t len = 0;
    int rc = 0;
    while (len < sizeof buf) {
        ssize_t got = read(fd, buf + len, sizeof buf - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            rc = hearth__error(err, HEARTH_EIO, NULL,
                               "cannot read the cluster secret %s: %s", path,
                               strerror(errno));
            break;
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    close(fd);
    if (!rc && len > FILE_MAX)
        rc = hearth__error(err, HEARTH_EINVAL, NULL,
                           "the cluster secret %s is over %d bytes; it should "
                           "be one line (openssl rand -base64 32)",
                           path, FILE_MAX);
    if (!rc) {
        if (len && buf[len - 1] == '\n')
            len -= 1 + (len > 1 && buf[len - 2] == '\r');
        if (len < HEARTH__SEAL_MIN_SECRET)
            rc = hearth__error(err, HEARTH_EINVAL, NULL,
                               "the cluster secret %s holds %zu bytes; at "
                               "least %d are needed (openssl rand -base64 32)",
                               path, len, HEARTH__SEAL_MIN_SECRET);
    }
    if (!rc)
        rc = hearth__seal_create(buf, len, out, err);
    OPENSSL_cleanse(buf, sizeof buf);
    return rc;
}

void hearth__seal_free(hearth__seal *s) {
    if (!s)
        return;
    uv_mutex_destroy(&s->lock);
    EVP_CIPHER_free(s->aes);
    EVP_KDF_free(s->hkdf);
    OPENSSL_cleanse(s->secret, s->secret_len);
    hearth__free(s->secret);
    OPENSSL_cleanse(s, sizeof *s); /* the cached keys */
    hearth__free(s);
}

/* ---- sealing and opening ---- */

static void put_be64(unsigned char *p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static void nonce_of(const unsigned char *header, unsigned char nonce[NONCE_LEN]) {
    memset(nonce, 0, 4);
    memcpy(nonce + 4, header + 1 + RUN_LEN, COUNTER_LEN);
}

/* Room for `need` more bytes in out, or HEARTH_ENOMEM with out as it was
 * (a failed realloc keeps the data; only the flag would change). */
static int reserve(hearth__buf *out, size_t need) {
    if (out->failed)
        return HEARTH_ENOMEM;
    if (!hearth__buf_reserve(out, need)) {
        out->failed = false;
        return HEARTH_ENOMEM;
    }
    return 0;
}

/* Header, purpose, NUL and the caller's context, as additional data. */
static bool add_aad(EVP_CIPHER_CTX *c, bool enc, const unsigned char *header,
                    const char *purpose, const void *aad, size_t aad_len) {
    int (*update)(EVP_CIPHER_CTX *, unsigned char *, int *,
                  const unsigned char *, int) =
        enc ? EVP_EncryptUpdate : EVP_DecryptUpdate;
    int n;
    if (update(c, NULL, &n, header, HEADER_LEN) != 1 ||
        update(c, NULL, &n, (const unsigned char *)purpose,
               (int)strlen(purpose) + 1) != 1)
        return false;
    for (size_t at = 0; at < aad_len; at += CHUNK) {
        size_t part = aad_len - at < CHUNK ? aad_len - at : CHUNK;
        if (update(c, NULL, &n, (const unsigned char *)aad + at, (int)part) != 1)
            return false;
    }
    return true;
}

/* len bytes of in through the cipher into to (the same length: GCM is a
 * stream mode). */
static bool run_cipher(EVP_CIPHER_CTX *c, bool enc, const unsigned char *in,
                  size_t len, unsigned char *to) {
    int n;
    for (size_t at = 0; at < len; at += CHUNK) {
        size_t part = len - at < CHUNK ? len - at : CHUNK;
        if ((enc ? EVP_EncryptUpdate : EVP_DecryptUpdate)(c, to + at, &n,
                                                          in + at, (int)part) != 1 ||
            (size_t)n != part)
            return false;
    }
    return true;
}

/* The key for (run, purpose): cached, or derived (*fresh set). */
static int key_for(hearth__seal *s, const unsigned char *run,
                   const char *purpose, unsigned char key[KEY_LEN],
                   bool *fresh) {
    *fresh = !cache_get(s, run, purpose, key);
    return *fresh ? derive(s, run, purpose, key) : 0;
}

/* Test hook (declared by the tests, not in seal.h): the counter the next
 * message takes, to reach its end without 2^64 messages. */
void hearth__seal_test_counter(hearth__seal *s, uint64_t next);
void hearth__seal_test_counter(hearth__seal *s, uint64_t next) {
    atomic_store(&s->counter, next);
}

/* Seals len bytes of plain into env: the header at env, the ciphertext
 * after it (plain may be exactly there: GCM runs in place), the tag after
 * that. */
static int close_at(hearth__seal *s, const char *purpose, const void *aad,
                    size_t aad_len, const unsigned char *plain, size_t len,
                    unsigned char *env) {
    /* The last counter value is never taken: past it the next would wrap
     * onto a nonce already used. */
    uint64_t counter = atomic_load(&s->counter);
    do {
        if (counter == UINT64_MAX)
            return HEARTH_EIO;
    } while (!atomic_compare_exchange_weak(&s->counter, &counter, counter + 1));

    unsigned char key[KEY_LEN];
    bool fresh;
    int rc = key_for(s, s->run, purpose, key, &fresh);
    if (!rc && fresh)
        cache_put(s, s->run, purpose, key);
    if (rc) {
        OPENSSL_cleanse(key, sizeof key);
        return rc;
    }
    unsigned char *body = env + HEADER_LEN;
    env[0] = VERSION;
    memcpy(env + 1, s->run, RUN_LEN);
    put_be64(env + 1 + RUN_LEN, counter);
    unsigned char nonce[NONCE_LEN];
    nonce_of(env, nonce);

    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n;
    bool ok = c && EVP_EncryptInit_ex2(c, s->aes, key, nonce, NULL) == 1 &&
              add_aad(c, true, env, purpose, aad, aad_len) &&
              run_cipher(c, true, plain, len, body) &&
              EVP_EncryptFinal_ex(c, body + len, &n) == 1 && n == 0 &&
              EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, TAG_LEN,
                                  body + len) == 1;
    rc = !c ? HEARTH_ENOMEM : ok ? 0 : HEARTH_EIO;
    EVP_CIPHER_CTX_free(c);
    OPENSSL_cleanse(key, sizeof key);
    return rc;
}

/* Opens the envelope in[0, len) (len at least the overhead, checked) into
 * to, len - HEARTH__SEAL_OVERHEAD bytes (to may be exactly in's
 * ciphertext); what was decrypted is wiped on failure. */
static int open_at(hearth__seal *s, const char *purpose, const void *aad,
                   size_t aad_len, const unsigned char *in, size_t len,
                   unsigned char *to) {
    size_t plain_len = len - HEARTH__SEAL_OVERHEAD;
    const unsigned char *run = in + 1;
    unsigned char key[KEY_LEN];
    bool fresh;
    int rc = key_for(s, run, purpose, key, &fresh);
    if (rc) {
        OPENSSL_cleanse(key, sizeof key);
        return rc;
    }
    unsigned char nonce[NONCE_LEN], tag[TAG_LEN];
    nonce_of(in, nonce);
    memcpy(tag, in + len - TAG_LEN, TAG_LEN);

    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n;
    bool ok = c && EVP_DecryptInit_ex2(c, s->aes, key, nonce, NULL) == 1 &&
              add_aad(c, false, in, purpose, aad, aad_len) &&
              run_cipher(c, false, in + HEADER_LEN, plain_len, to) &&
              EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, TAG_LEN, tag) == 1 &&
              EVP_DecryptFinal_ex(c, to + plain_len, &n) == 1 && n == 0;
    rc = !c ? HEARTH_ENOMEM : ok ? 0 : HEARTH_EDENIED;
    EVP_CIPHER_CTX_free(c);
    if (!rc && fresh)
        cache_put(s, run, purpose, key);
    OPENSSL_cleanse(key, sizeof key);
    if (rc) /* what a damaged message decrypted to is not its content */
        OPENSSL_cleanse(to, plain_len);
    return rc;
}

/* Whether sealed[0, len) may be an envelope worth opening. */
static bool openable(const char *purpose, const void *aad, size_t aad_len,
                     const unsigned char *in, size_t len) {
    return purpose_ok(purpose) && (!aad_len || aad) && in &&
           len >= HEARTH__SEAL_OVERHEAD && in[0] == VERSION;
}

int hearth__seal_close(hearth__seal *s, const char *purpose, const void *aad,
                       size_t aad_len, const void *plain, size_t len,
                       hearth__buf *out) {
    if (!purpose_ok(purpose) || (aad_len && !aad) || (len && !plain))
        return HEARTH_EINVAL;
    if (len > SIZE_MAX - HEARTH__SEAL_OVERHEAD - 1)
        return HEARTH_ENOMEM;
    int rc = reserve(out, HEARTH__SEAL_OVERHEAD + len);
    if (rc)
        return rc;
    unsigned char *env = (unsigned char *)out->data + out->len;
    rc = close_at(s, purpose, aad, aad_len, plain, len, env);
    if (rc) {
        OPENSSL_cleanse(env, HEARTH__SEAL_OVERHEAD + len);
        return rc;
    }
    out->len += HEARTH__SEAL_OVERHEAD + len;
    out->data[out->len] = '\0';
    return 0;
}

int hearth__seal_close_in_place(hearth__seal *s, const char *purpose,
                                const void *aad, size_t aad_len, void *msg,
                                size_t len) {
    if (!purpose_ok(purpose) || (aad_len && !aad) || !msg)
        return HEARTH_EINVAL;
    unsigned char *env = msg;
    int rc = close_at(s, purpose, aad, aad_len, env + HEADER_LEN, len, env);
    if (rc)
        OPENSSL_cleanse(env, HEARTH__SEAL_OVERHEAD + len);
    return rc;
}

int hearth__seal_open(hearth__seal *s, const char *purpose, const void *aad,
                      size_t aad_len, const void *sealed, size_t len,
                      hearth__buf *out) {
    const unsigned char *in = sealed;
    if (!openable(purpose, aad, aad_len, in, len))
        return HEARTH_EDENIED;
    size_t plain_len = len - HEARTH__SEAL_OVERHEAD;
    int rc = reserve(out, plain_len);
    if (rc)
        return rc;
    unsigned char *to = (unsigned char *)out->data + out->len;
    rc = open_at(s, purpose, aad, aad_len, in, len, to);
    if (rc) {
        to[0] = '\0'; /* out's terminator, as it was */
        return rc;
    }
    out->len += plain_len;
    out->data[out->len] = '\0';
    return 0;
}

int hearth__seal_open_in_place(hearth__seal *s, const char *purpose,
                               const void *aad, size_t aad_len, void *msg,
                               size_t len, size_t *plain) {
    unsigned char *in = msg;
    if (!openable(purpose, aad, aad_len, in, len))
        return HEARTH_EDENIED;
    int rc = open_at(s, purpose, aad, aad_len, in, len, in + HEADER_LEN);
    if (!rc)
        *plain = len - HEARTH__SEAL_OVERHEAD;
    return rc;
}
