/* natsopts.c - how a node proves itself to NATS and reaches it: the
 * credentials (a .creds file, an NKey seed, a user and password, a token)
 * and TLS (a CA to trust, a client certificate), each from a file, never
 * from a command line (where `ps` shows them); and URLs' credentials
 * masked wherever a URL is shown. */
#include "cluster/node.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define MAX_FILE 16384 /* a user, token or seed file */

void hearth__cluster_mask_urls(const char *text, char *out, size_t cap) {
    size_t o = 0;
    if (!cap)
        return;
    for (const char *p = text ? text : ""; *p && o + 1 < cap;) {
        const char *scheme = strstr(p, "://");
        if (!scheme)
            scheme = p + strlen(p);
        else
            scheme += 3;
        while (p < scheme && o + 1 < cap) /* up to and with "://" */
            out[o++] = *p++;
        if (!*p || o + 1 >= cap)
            break;
        /* A URL ends at a list's comma, a space or a quote (not at a
         * '/': a password may hold one); userinfo is what precedes its
         * last '@'. Masking too much is harmless. */
        size_t end = strcspn(p, ", \t\r\n\"'");
        const char *at = NULL;
        for (size_t i = 0; i < end; i++)
            if (p[i] == '@')
                at = p + i;
        if (at) {
            for (const char *m = "***"; *m && o + 1 < cap; m++)
                out[o++] = *m;
            p = at;
        }
    }
    out[o] = '\0';
}

/* ---- files ---- */

/* path's text (at most MAX_FILE bytes), or NULL with err naming the file
 * as `what`. To wipe and free with wipe(). */
static char *read_secret(const char *path, const char *what, size_t *len,
                         hearth_error_t *err) {
    errno = 0;
    char *text = hearth__read_file(path, MAX_FILE, len);
    if (!text)
        hearth__error(err, errno == ENOENT ? HEARTH_ENOTFOUND : HEARTH_EIO,
                      NULL, "cluster: cannot read the %s %s: %s", what, path,
                      errno ? strerror(errno) : "too large or unreadable");
    return text;
}

static void wipe(char *text, size_t len) {
    if (text)
        OPENSSL_cleanse(text, len);
    hearth__free(text);
}

/* Line i (0 first) of text, cut at its end ('\r' dropped), in place;
 * NULL when there is none. */
static char *line_of(char *text, int i) {
    char *p = text;
    for (; i > 0 && p; i--) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p || !*p)
        return NULL;
    size_t n = strcspn(p, "\n");
    if (n && p[n - 1] == '\r')
        n--;
    char *line = hearth__strndup(p, n);
    return line;
}

static int user_file(natsOptions *opts, const char *path, hearth_error_t *err) {
    size_t len;
    char *text = read_secret(path, "NATS user file", &len, err);
    if (!text)
        return err ? err->code : HEARTH_EIO;
    char *user = line_of(text, 0), *password = line_of(text, 1);
    int rc = 0;
    if (!user || !password || !*user)
        rc = hearth__error(err, HEARTH_EINVAL, NULL,
                           "cluster: the NATS user file %s must hold the user "
                           "on its first line and the password on its second",
                           path);
    else if (natsOptions_SetUserInfo(opts, user, password) != NATS_OK)
        rc = hearth__error_code(err, HEARTH_ENOMEM);
    wipe(user, user ? strlen(user) : 0);
    wipe(password, password ? strlen(password) : 0);
    wipe(text, len);
    return rc;
}

static int token_file(natsOptions *opts, const char *path,
                      hearth_error_t *err) {
    size_t len;
    char *text = read_secret(path, "NATS token file", &len, err);
    if (!text)
        return err ? err->code : HEARTH_EIO;
    size_t n = len;
    while (n && isspace((unsigned char)text[n - 1]))
        text[--n] = '\0';
    int rc = 0;
    if (!n || memchr(text, '\n', n))
        rc = hearth__error(err, HEARTH_EINVAL, NULL,
                           "cluster: the NATS token file %s must hold the "
                           "token on one line",
                           path);
    else if (natsOptions_SetToken(opts, text) != NATS_OK)
        rc = hearth__error_code(err, HEARTH_ENOMEM);
    wipe(text, len);
    return rc;
}

/* ---- NKeys: a seed file holds "SU...", its public key is "U..." ---- */

static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
#define NKEY_SEED_PREFIX (18 << 3) /* 'S' */
#define NKEY_USER_PREFIX (20 << 3) /* 'U' */

/* CRC-16/XMODEM, as NKeys check their bytes. */
static uint16_t crc16(const unsigned char *p, size_t n) {
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

/* Base32 without padding; false on a character outside the alphabet or
 * more than cap bytes. */
static bool b32_decode(const char *s, size_t n, unsigned char *out,
                       size_t cap, size_t *len) {
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const char *c = memchr(b32, s[i], 32);
        if (!c || !s[i])
            return false;
        acc = (acc << 5) | (uint32_t)(c - b32);
        bits += 5;
        if (bits >= 8) {
            if (o == cap)
                return false;
            out[o++] = (unsigned char)(acc >> (bits - 8));
            bits -= 8;
        }
    }
    *len = o;
    return true;
}

static void b32_encode(const unsigned char *p, size_t n, char *out) {
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        acc = (acc << 8) | p[i];
        bits += 8;
        while (bits >= 5) {
            out[o++] = b32[(acc >> (bits - 5)) & 31];
            bits -= 5;
        }
    }
    if (bits)
        out[o++] = b32[(acc << (5 - bits)) & 31];
    out[o] = '\0';
}

/* The public key ("U...", 56 characters) of the user seed s. */
static bool seed_public(const char *s, char pub[64]) {
    size_t n = strspn(s, b32);
    unsigned char raw[64], key[35];
    size_t len = 0;
    bool ok = n == 58 && b32_decode(s, n, raw, sizeof raw, &len) && len == 36;
    if (ok) {
        unsigned prefix = ((raw[0] & 7u) << 5) | ((raw[1] & 0xf8u) >> 3);
        uint16_t crc = (uint16_t)(raw[34] | raw[35] << 8);
        ok = (raw[0] & 0xf8u) == NKEY_SEED_PREFIX &&
             prefix == NKEY_USER_PREFIX && crc16(raw, 34) == crc;
    }
    EVP_PKEY *pk = ok ? EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL,
                                                     raw + 2, 32)
                      : NULL;
    size_t publen = 32;
    ok = pk && EVP_PKEY_get_raw_public_key(pk, key + 1, &publen) == 1 &&
         publen == 32;
    EVP_PKEY_free(pk);
    OPENSSL_cleanse(raw, sizeof raw);
    if (!ok)
        return false;
    key[0] = NKEY_USER_PREFIX;
    uint16_t crc = crc16(key, 33);
    key[33] = (unsigned char)(crc & 0xff);
    key[34] = (unsigned char)(crc >> 8);
    b32_encode(key, sizeof key, pub);
    return true;
}

/* The same for the first user seed in text (a file may say more). */
static bool nkey_public(const char *text, char pub[64]) {
    for (const char *s = strstr(text, "SU"); s; s = strstr(s + 1, "SU"))
        if ((s == text || !strchr(b32, s[-1])) && seed_public(s, pub))
            return true;
    return false;
}

static int nkey_file(natsOptions *opts, const char *path,
                     hearth_error_t *err) {
    size_t len;
    char *text = read_secret(path, "NATS NKey seed file", &len, err);
    if (!text)
        return err ? err->code : HEARTH_EIO;
    char pub[64];
    bool found = nkey_public(text, pub);
    wipe(text, len);
    if (!found)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "cluster: the NATS NKey seed file %s holds no "
                             "user seed (SU..., as `nk -gen user` writes)",
                             path);
    /* The library reads the seed again for each signature, and wipes it. */
    natsStatus s = natsOptions_SetNKeyFromSeed(opts, pub, path);
    return s == NATS_OK ? 0 : hearth__error_code(err, hearth__cluster_error(s));
}

/* ---- all of them ---- */

static bool tls_url(const char *urls) {
    for (const char *p = urls; p && *p; p += strcspn(p, ",")) {
        p += strspn(p, ", ");
        if (strncasecmp(p, "tls://", 6) == 0)
            return true;
    }
    return false;
}

static int tls_fail(hearth_error_t *err, const char *what, const char *path) {
    const char *why = nats_GetLastError(NULL);
    return hearth__error(err, HEARTH_EINVAL, NULL,
                         "cluster: cannot load the NATS %s %s: %s", what, path,
                         why ? why : "not PEM, or unreadable");
}

int hearth__cluster_nats_auth(natsOptions *opts,
                              const hearth__cluster_options *o,
                              hearth_error_t *err) {
    if (o->creds_file && o->nkey_seed_file)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "cluster: give a NATS credentials file or an "
                             "NKey seed file, not both");
    if (o->user_file && o->token_file)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "cluster: give a NATS user file or a token "
                             "file, not both");
    if (!o->cert_file != !o->key_file)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "cluster: a NATS client certificate needs both "
                             "its certificate and its key file (only the %s "
                             "%s is given)",
                             o->cert_file ? "certificate" : "key",
                             o->cert_file ? o->cert_file : o->key_file);
    int rc = 0;
    if (o->creds_file) {
        /* The library reads it at each connect: read it now, so that a
         * file that cannot be fails the start naming it. */
        if (access(o->creds_file, R_OK))
            return hearth__error(err, HEARTH_EIO, NULL,
                                 "cluster: cannot read the NATS credentials "
                                 "file %s: %s",
                                 o->creds_file, strerror(errno));
        natsStatus s =
            natsOptions_SetUserCredentialsFromFiles(opts, o->creds_file, NULL);
        if (s != NATS_OK)
            return hearth__error_code(err, hearth__cluster_error(s));
    }
    if (o->nkey_seed_file && (rc = nkey_file(opts, o->nkey_seed_file, err)))
        return rc;
    if (o->user_file && (rc = user_file(opts, o->user_file, err)))
        return rc;
    if (o->token_file && (rc = token_file(opts, o->token_file, err)))
        return rc;
    if (o->ca_file || o->cert_file || tls_url(o->urls)) {
        if (natsOptions_SetSecure(opts, true) != NATS_OK)
            return tls_fail(err, "TLS context", "(secure)");
    }
    if (o->ca_file &&
        natsOptions_LoadCATrustedCertificates(opts, o->ca_file) != NATS_OK)
        return tls_fail(err, "CA file", o->ca_file);
    if (o->cert_file &&
        natsOptions_LoadCertificatesChain(opts, o->cert_file, o->key_file) !=
            NATS_OK)
        return tls_fail(err, "client certificate (or its key)", o->cert_file);
    return 0;
}
