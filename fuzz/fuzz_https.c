/* fuzz_https.c - libFuzzer target for the server's TLS glue (HTTPS and
 * WSS on one port): a real server with a certificate made at start, and
 * per input one loopback connection that either sends the input raw
 * (odd first byte: bytes that are not TLS, or a broken handshake), or
 * completes a TLS handshake and then sends the rest as plaintext in TLS
 * records of (first byte / 2 + 1) bytes, so requests, bodies and
 * WebSocket frames arrive cut at every place. Whatever arrives, the
 * server must answer or close that connection, and keep serving others
 * (the next input's connection finds it). */
#include "hearth.h"

#include "fuzz_socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static hearth_server_t *server;
static int port;
static char dir[64];
static SSL_CTX *client_ctx;

static void stop(void) {
    hearth_server_stop(server);
    SSL_CTX_free(client_ctx);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* A self-signed P-256 certificate and its key, as PEM files in dir. */
static void make_certificate(const char *cert_path, const char *key_path) {
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    X509 *x = X509_new();
    if (!key || !x)
        abort();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"localhost", -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    if (!X509_sign(x, key, EVP_sha256()))
        abort();
    FILE *c = fopen(cert_path, "w"), *k = fopen(key_path, "w");
    if (!c || !k || !PEM_write_X509(c, x) ||
        !PEM_write_PrivateKey(k, key, NULL, NULL, 0, NULL, NULL))
        abort();
    fclose(c);
    fclose(k);
    X509_free(x);
    EVP_PKEY_free(key);
}

static void start_once(void) {
    if (server)
        return;
    snprintf(dir, sizeof dir, "/tmp/hearth-fuzz-https-%d", (int)getpid());
    char cert[96], key[96];
    snprintf(cert, sizeof cert, "%s.cert.pem", dir);
    snprintf(key, sizeof key, "%s.key.pem", dir);
    make_certificate(cert, key);
    hearth_server_config_t config = {.size = sizeof config,
                                     .host = "127.0.0.1",
                                     .data_dir = dir,
                                     .fsync_mode = HEARTH_FSYNC_OFF,
                                     .tls_cert_file = cert,
                                     .tls_key_file = key};
    hearth_error_t err;
    if (hearth_server_start(&config, &server, &err)) {
        fprintf(stderr, "fuzz_https: %s\n", err.message);
        abort();
    }
    unlink(cert);
    unlink(key);
    port = hearth_server_port(server);
    client_ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(client_ctx, SSL_VERIFY_NONE, NULL);
    atexit(stop);
}

static int connect_to_server(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* Reads give up after 2 s: a server that neither answers nor closes
     * is a hang, which the handshake check below reports. */
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        if (errno != EINTR) {
            fprintf(stderr, "fuzz_https: the server stopped accepting: %s\n",
                    strerror(errno));
            abort();
        }
    }
    return fd;
}

/* Raw bytes: sent, then whatever comes back until the server closes. */
static void send_raw(const uint8_t *data, size_t size) {
    int fd = connect_to_server();
    fuzz_send_all(fd, data, size);
    shutdown(fd, SHUT_WR);
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    close(fd);
}

/* A handshake, then data as plaintext in records of `record` bytes. */
static void send_over_tls(const uint8_t *data, size_t size, size_t record) {
    int fd = connect_to_server();
    SSL *ssl = SSL_new(client_ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) != 1) {
        fprintf(stderr, "fuzz_https: the server refused a good handshake\n");
        abort();
    }
    for (size_t off = 0; off < size; off += record) {
        size_t n = size - off < record ? size - off : record;
        if (SSL_write(ssl, data + off, (int)n) <= 0)
            break; /* the server answered and closed */
    }
    SSL_shutdown(ssl); /* close_notify, then the end of our side */
    shutdown(fd, SHUT_WR);
    char buf[4096];
    while (SSL_read(ssl, buf, sizeof buf) > 0) {
    }
    SSL_free(ssl);
    close(fd);
    ERR_clear_error();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    start_once();
    if (size == 0)
        return 0;
    if (data[0] & 1)
        send_raw(data + 1, size - 1);
    else
        send_over_tls(data + 1, size - 1, (size_t)(data[0] >> 1) + 1);
    return 0;
}
