/* tls.c - TLS sessions over OpenSSL memory BIOs (see tls.h). */
#include "net/tls.h"

#include "common/internal.h"

#include <limits.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <uv.h>

#define TLS_CHUNK (1 << 20) /* SSL_write takes an int length */

struct hearth__tls {
    SSL_CTX *ctx;
    SSL *ssl;
    BIO *net_in, *net_out; /* ciphertext from and to the socket */
};

static bool is_ip_literal(const char *host) {
    unsigned char addr[16];
    return uv_inet_pton(AF_INET, host, addr) == 0 ||
           uv_inet_pton(AF_INET6, host, addr) == 0;
}

/* The SSL of t on t->ctx, reading and writing memory BIOs. */
static int attach_bios(hearth__tls *t) {
    t->ssl = SSL_new(t->ctx);
    t->net_in = BIO_new(BIO_s_mem());
    t->net_out = BIO_new(BIO_s_mem());
    if (!t->ssl || !t->net_in || !t->net_out) {
        BIO_free(t->net_in);
        BIO_free(t->net_out);
        t->net_in = t->net_out = NULL;
        return HEARTH_ENOMEM;
    }
    SSL_set_bio(t->ssl, t->net_in, t->net_out); /* the SSL owns them now */
    return 0;
}

static int client_setup(hearth__tls *t, const char *host) {
    static const unsigned char alpn[] = "\x08http/1.1";
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (!t->ctx)
        return HEARTH_ENOMEM;
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_set_default_verify_paths(t->ctx) != 1)
        return HEARTH_EIO;
    int rc = attach_bios(t);
    if (rc)
        return rc;
    int ok = is_ip_literal(host)
                 ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), host)
                 : SSL_set_tlsext_host_name(t->ssl, host) == 1 &&
                       SSL_set1_host(t->ssl, host) == 1;
    if (ok != 1 || SSL_set_alpn_protos(t->ssl, alpn, sizeof alpn - 1) != 0)
        return HEARTH_EIO;
    SSL_set_connect_state(t->ssl);
    return 0;
}

bool hearth__tls_client_available(void) {
    return true;
}

int hearth__tls_client_create(const char *host, hearth__tls **out) {
    hearth__tls *t = hearth__calloc(1, sizeof *t);
    if (!t)
        return HEARTH_ENOMEM;
    int rc = client_setup(t, host);
    if (rc) {
        ERR_clear_error(); /* the caller has the code; nothing is left */
        hearth__tls_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

/* ---- the server's side ---- */

/* The TLS 1.2 suites kept: ephemeral key exchange (forward secrecy) and
 * AEAD only, no CBC, no RSA key transport, no SHA-1 MACs. TLS 1.3's own
 * suites are all of that already. */
static const char SERVER_CIPHERS_1_2[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

struct hearth__tls_config {
    SSL_CTX *ctx;
};

/* OpenSSL's first queued reason, or `fallback` (the queue is cleared). */
static const char *openssl_reason(const char *fallback) {
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    ERR_clear_error();
    return r ? r : fallback;
}

/* Offers http/1.1 to a client that asks for ALPN (curl offers h2 first:
 * this server speaks HTTP/1.1 only). */
static int select_alpn(SSL *ssl, const unsigned char **out,
                       unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg) {
    (void)ssl;
    (void)arg;
    static const unsigned char http11[] = "\x08http/1.1";
    unsigned char *chosen;
    if (SSL_select_next_proto(&chosen, outlen, http11, sizeof http11 - 1, in,
                              inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
}

static int server_ctx_setup(SSL_CTX *ctx, const char *cert_file,
                            const char *key_file, hearth_error_t *err) {
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_set_cipher_list(ctx, SERVER_CIPHERS_1_2) != 1)
        return hearth__error(err, HEARTH_EIO, NULL, "TLS: %s",
                             openssl_reason("no cipher suite available"));
    SSL_CTX_set_alpn_select_cb(ctx, select_alpn, NULL);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1)
        return hearth__error(err, HEARTH_EIO, cert_file,
                             "cannot use the TLS certificate file %s: %s",
                             cert_file, openssl_reason("not a PEM certificate"));
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1)
        return hearth__error(err, HEARTH_EIO, key_file,
                             "cannot use the TLS key file %s: %s", key_file,
                             openssl_reason("not a PEM private key"));
    if (SSL_CTX_check_private_key(ctx) != 1)
        return hearth__error(err, HEARTH_EIO, key_file,
                             "the TLS key file %s does not match the "
                             "certificate in %s: %s",
                             key_file, cert_file, openssl_reason("mismatch"));
    return 0;
}

int hearth__tls_config_load(const char *cert_file, const char *key_file,
                            hearth__tls_config **out, hearth_error_t *err) {
    hearth__tls_config *c = hearth__calloc(1, sizeof *c);
    if (!c || !(c->ctx = SSL_CTX_new(TLS_server_method()))) {
        hearth__free(c);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    int rc = server_ctx_setup(c->ctx, cert_file, key_file, err);
    if (rc) {
        hearth__tls_config_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void hearth__tls_config_free(hearth__tls_config *c) {
    if (!c)
        return;
    SSL_CTX_free(c->ctx);
    hearth__free(c);
}

int hearth__tls_server_create(hearth__tls_config *c, hearth__tls **out) {
    hearth__tls *t = hearth__calloc(1, sizeof *t);
    if (!t)
        return HEARTH_ENOMEM;
    SSL_CTX_up_ref(c->ctx); /* the session outlives a reload */
    t->ctx = c->ctx;
    if (attach_bios(t)) {
        hearth__tls_free(t);
        return HEARTH_ENOMEM;
    }
    SSL_set_accept_state(t->ssl);
    *out = t;
    return 0;
}

void hearth__tls_free(hearth__tls *t) {
    if (!t)
        return;
    SSL_free(t->ssl); /* and its BIOs */
    SSL_CTX_free(t->ctx);
    hearth__free(t);
}

int hearth__tls_feed(hearth__tls *t, const char *data, size_t len) {
    if (BIO_write(t->net_in, data, (int)len) != (int)len) {
        ERR_clear_error();
        return HEARTH_ENOMEM;
    }
    return 0;
}

int hearth__tls_handshake(hearth__tls *t) {
    ERR_clear_error();
    int r = SSL_do_handshake(t->ssl);
    if (r == 1)
        return 1;
    return SSL_get_error(t->ssl, r) == SSL_ERROR_WANT_READ ? 0 : HEARTH_EIO;
}

int hearth__tls_read(hearth__tls *t, char *buf, size_t cap) {
    ERR_clear_error();
    int n = SSL_read(t->ssl, buf, cap > INT_MAX ? INT_MAX : (int)cap);
    if (n > 0)
        return n;
    int e = SSL_get_error(t->ssl, n);
    if (e == SSL_ERROR_WANT_READ)
        return 0;
    return e == SSL_ERROR_ZERO_RETURN ? HEARTH_ECLOSED : HEARTH_EIO;
}

int hearth__tls_write(hearth__tls *t, const char *data, size_t len) {
    ERR_clear_error();
    while (len) {
        int chunk = len < TLS_CHUNK ? (int)len : TLS_CHUNK;
        /* A memory BIO takes everything: no partial writes, no retries. */
        int n = SSL_write(t->ssl, data, chunk);
        if (n <= 0) {
            ERR_clear_error();
            return HEARTH_EIO;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

int hearth__tls_take(hearth__tls *t, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    size_t pending = BIO_ctrl_pending(t->net_out);
    if (!pending)
        return 0;
    char *data = hearth__malloc(pending);
    if (!data)
        return HEARTH_ENOMEM;
    int n = BIO_read(t->net_out, data, (int)pending);
    if (n <= 0) {
        hearth__free(data);
        return HEARTH_EIO;
    }
    *out = data;
    *len = (size_t)n;
    return 0;
}

void hearth__tls_close_notify(hearth__tls *t) {
    ERR_clear_error();
    SSL_shutdown(t->ssl);
    ERR_clear_error();
}

void hearth__tls_why(hearth__tls *t, const char *what, char *out, size_t cap) {
    long verify = SSL_get_verify_result(t->ssl);
    unsigned long err = ERR_get_error();
    const char *reason = err ? ERR_reason_error_string(err) : NULL;
    if (verify != X509_V_OK)
        snprintf(out, cap, "%s: certificate not trusted: %s", what,
                 X509_verify_cert_error_string(verify));
    else
        snprintf(out, cap, "%s failed: %s", what,
                 reason ? reason : "connection error");
    ERR_clear_error();
}
