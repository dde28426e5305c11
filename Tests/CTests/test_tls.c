/* test_tls.c - HTTPS and WSS on the server's port, against a CA made
 * here with the openssl command: curl --cacert, Hearth's own client over
 * wss://, refusals of old protocol versions, weak ciphers and plain HTTP,
 * certificate files that cannot be used, and the reload (SIGHUP). */
#include "test.h"

#include "net/url.h"

#include "http_raw.h"

#include "server/handshake_rate.h"
#include "server/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

static char dir[64];      /* the data directory */
static char pki[64];      /* CAs, certificates and keys */
static char path_buf[4][192];

/* pki/name, in one of a few rotating buffers. */
static const char *in_pki(const char *name) {
    static int next;
    char *p = path_buf[next++ % 4];
    snprintf(p, sizeof path_buf[0], "%s/%s", pki, name);
    return p;
}

/* A CA `ca` (ca.pem, ca.key) and a certificate it signs for 127.0.0.1 and
 * localhost (name.pem, name.key), all P-256. */
static void make_ca(const char *ca) {
    CHECK_INT(test_sh("cd %s && openssl req -x509 -newkey ec -pkeyopt "
                 "ec_paramgen_curve:P-256 -nodes -keyout %s.key -out %s.pem "
                 "-days 2 -subj /CN=%s >/dev/null 2>&1",
                 pki, ca, ca, ca),
              0);
}

static void make_cert(const char *ca, const char *name) {
    CHECK_INT(test_sh("cd %s && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n'"
                 " > san.ext && openssl req -newkey ec -pkeyopt "
                 "ec_paramgen_curve:P-256 -nodes -keyout %s.key -out %s.csr "
                 "-subj /CN=localhost >/dev/null 2>&1 && openssl x509 -req -in "
                 "%s.csr -CA %s.pem -CAkey %s.key -set_serial 7 -days 2 "
                 "-extfile san.ext -out %s.pem >/dev/null 2>&1",
                 pki, name, name, name, ca, ca, name),
              0);
}

static void setup(void) {
    strcpy(dir, "/tmp/hearth-tls-data-XXXXXX");
    strcpy(pki, "/tmp/hearth-tls-pki-XXXXXX");
    CHECK(mkdtemp(dir) && mkdtemp(pki));
    make_ca("ca");
    make_cert("ca", "server");
}

static void teardown(void) {
    remove_tree(dir);
    remove_tree(pki);
}

static hearth_server_t *start_tls(void) {
    hearth_server_config_t c = {.size = sizeof c,
                                .tls_cert_file = in_pki("server.pem"),
                                .tls_key_file = in_pki("server.key")};
    return start_test_server(c, dir);
}

/* curl's output (status code, then the body) for one request; `opts`
 * are extra curl options. */
static char *curl(const char *opts, const char *ca, int port,
                  const char *target) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "curl -sS --max-time 10 --cacert %s %s -w ' %%{http_code}' "
             "'https://127.0.0.1:%d%s' 2>&1",
             in_pki(ca), opts, port, target);
    FILE *p = popen(cmd, "r");
    char *out = calloc(1, 4096);
    size_t n = fread(out, 1, 4095, p);
    out[n] = '\0';
    pclose(p);
    return out;
}

#define CHECK_CURL(opts, ca, port, target, expected)                           \
    do {                                                                       \
        char *out_ = curl(opts, ca, port, target);                             \
        CHECK_STR_AS(out_, "curl's output", expected);                         \
        free(out_);                                                            \
    } while (0)

static void test_https_with_curl(void) {
    setup();
    hearth_server_t *s = start_tls();
    int port = hearth_server_port(s);
    CHECK_CURL("-X PUT -d '{\"name\":\"Ada\"}'", "ca.pem", port,
               "/users/ada.json", "{\"name\":\"Ada\"} 200");
    CHECK_CURL("", "ca.pem", port, "/users/ada/name.json", "\"Ada\" 200");
    /* Keep-alive: two requests on one TLS connection. */
    char two[128];
    snprintf(two, sizeof two,
             "/users/ada/name.json' 'https://127.0.0.1:%d/users/ada.json", port);
    CHECK_CURL("", "ca.pem", port, two, "\"Ada\" 200{\"name\":\"Ada\"} 200");
    /* TLS 1.1 and a weak TLS 1.2 cipher (no forward secrecy, CBC) are
     * refused; so is plain HTTP, and the server goes on. */
    char *old = curl("--tlsv1.1 --tls-max 1.1", "ca.pem", port, "/.json");
    CHECK(strstr(old, " 000") != NULL);
    free(old);
    char *weak = curl("--tls-max 1.2 --ciphers AES128-SHA", "ca.pem", port,
                      "/.json");
    CHECK(strstr(weak, " 000") != NULL);
    free(weak);
    CHECK_INT(test_sh("curl -s --max-time 5 http://127.0.0.1:%d/.json | grep -q "
                 "Ada",
                 port),
              1);
    CHECK_CURL("", "ca.pem", port, "/users/ada/name.json", "\"Ada\" 200");
    /* A certificate from another CA is not trusted by curl (the server
     * really is presenting the one it was given). */
    make_ca("other");
    char *untrusted = curl("", "other.pem", port, "/.json");
    CHECK(strstr(untrusted, " 000") != NULL);
    free(untrusted);
    CHECK_INT(hearth_server_stop(s), 0);
    teardown();
}

/* A body of megabytes both ways: many TLS records per read and per
 * answer, and the large body parsed off the loop. */
static void test_large_bodies_over_https(void) {
    setup();
    hearth_server_t *s = start_tls();
    int port = hearth_server_port(s);
    char body_path[192];
    snprintf(body_path, sizeof body_path, "%s", in_pki("big.json"));
    FILE *f = fopen(body_path, "w");
    fputc('{', f);
    for (int i = 0; i < 60000; i++)
        fprintf(f, "%s\"k%05d\":\"%040d\"", i ? "," : "", i, i);
    fputc('}', f);
    long size = ftell(f);
    fclose(f);
    char opts[256];
    snprintf(opts, sizeof opts, "-X PUT --data-binary @%s -o /dev/null", body_path);
    CHECK_CURL(opts, "ca.pem", port, "/big.json", " 200");
    char got_path[192];
    snprintf(got_path, sizeof got_path, "%s", in_pki("got.json"));
    snprintf(opts, sizeof opts, "-o %s", got_path);
    CHECK_CURL(opts, "ca.pem", port, "/big.json", " 200");
    size_t got_len = 0, sent_len = 0;
    char *got = read_file(got_path, &got_len);
    char *sent = read_file(body_path, &sent_len);
    CHECK_INT(got_len, size);
    CHECK(got && sent && got_len == sent_len && memcmp(got, sent, got_len) == 0);
    free(got);
    free(sent);
    CHECK_INT(hearth_server_stop(s), 0);
    teardown();
}

/* A request and the client's close_notify in one segment: the request
 * is handled before the connection closes, as the bytes before a plain
 * connection's end are. */
static void test_request_then_close_notify(void) {
    setup();
    hearth_server_t *s = start_tls();
    int port = hearth_server_port(s);
    int fd = test_connect(port);
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    CHECK_INT(SSL_connect(ssl), 1);
    /* From here the records go to memory, then out in one send(). */
    BIO *mem = BIO_new(BIO_s_mem());
    SSL_set0_wbio(ssl, mem);
    const char *put = "PUT /said.json HTTP/1.1\r\nHost: x\r\n"
                      "Content-Length: 5\r\n\r\n\"bye\"";
    CHECK(SSL_write(ssl, put, (int)strlen(put)) > 0);
    SSL_shutdown(ssl);
    char *bytes;
    long n = BIO_get_mem_data(mem, &bytes);
    CHECK(n > 0 && send(fd, bytes, (size_t)n, 0) == n);
    char sink[256];
    while (read(fd, sink, sizeof sink) > 0) { /* until the server closes */
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);
    CHECK_CURL("", "ca.pem", port, "/said.json", "\"bye\" 200");
    CHECK_INT(hearth_server_stop(s), 0);
    teardown();
}

/* ---- Hearth's own client over wss:// ---- */

static void test_own_client_over_wss(void) {
    setup();
    hearth_server_t *s = start_tls();
    int port = hearth_server_port(s);
    CHECK_CURL("-X PUT -d '\"from curl\"'", "ca.pem", port, "/a.json",
               "\"from curl\" 200");
    /* The client trusts the system's store; the test's CA stands in for
     * it (OpenSSL reads SSL_CERT_FILE; tests run one per process). */
    setenv("SSL_CERT_FILE", in_pki("ca.pem"), 1);
    char url[128];
    snprintf(url, sizeof url, "wss://127.0.0.1:%d?ns=default", port);
    hearth_db_t *db = test_db_open((hearth_db_config_t){.url = url});
    hearth_error_t err;
    hearth_node_t *got = NULL;
    CHECK_INT(hearth_db_get(db, "/a", NULL, &got, &err), 0);
    CHECK_JSON(got, "\"from curl\"");
    hearth_node_decref(got);
    CHECK_INT(set_and_wait(db, "/b", "{\"over\":\"wss\"}"), 0);
    CHECK_INT(hearth_db_close(db), 0);
    unsetenv("SSL_CERT_FILE");
    CHECK_CURL("", "ca.pem", port, "/b.json", "{\"over\":\"wss\"} 200");
    CHECK_INT(hearth_server_stop(s), 0);
    teardown();
}

/* ---- files that cannot be used ---- */

/* Starting with these files fails, naming `named`. */
static void expect_refused(const char *cert, const char *key,
                           const char *named) {
    hearth_server_config_t c = {.size = sizeof c, .host = "127.0.0.1",
                                .data_dir = dir, .tls_cert_file = cert,
                                .tls_key_file = key};
    hearth_server_t *s = NULL;
    hearth_error_t err = {0};
    CHECK_INT(hearth_server_start(&c, &s, &err), HEARTH_EIO);
    CHECK(s == NULL);
    if (!strstr(err.message, named))
        fprintf(stderr, "  expected %s named in: %s\n", named, err.message);
    CHECK(strstr(err.message, named) != NULL);
}

static void test_bad_files_fail_start(void) {
    setup();
    make_cert("ca", "second");
    char cert[192], key[192], missing[192], garbage[192], other_key[192];
    snprintf(cert, sizeof cert, "%s", in_pki("server.pem"));
    snprintf(key, sizeof key, "%s", in_pki("server.key"));
    snprintf(missing, sizeof missing, "%s", in_pki("missing.pem"));
    snprintf(garbage, sizeof garbage, "%s", in_pki("san.ext"));
    snprintf(other_key, sizeof other_key, "%s", in_pki("second.key"));
    expect_refused(missing, key, missing);
    expect_refused(garbage, key, garbage);
    expect_refused(cert, missing, missing);
    expect_refused(cert, garbage, garbage);
    expect_refused(cert, other_key, other_key); /* not the cert's key */
    hearth_server_config_t half = {.size = sizeof half, .data_dir = dir,
                                   .tls_cert_file = cert};
    hearth_server_t *s = NULL;
    hearth_error_t err;
    CHECK_INT(hearth_server_start(&half, &s, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, "key file") != NULL);
    teardown();
}

/* ---- reload ---- */

static void test_reload_takes_new_certificate(void) {
    setup();
    hearth_server_t *s = start_tls();
    int port = hearth_server_port(s);
    CHECK_CURL("", "ca.pem", port, "/.json", "null 200");
    /* The files are replaced by a certificate of another CA. */
    make_ca("next");
    make_cert("next", "renewed");
    CHECK_INT(test_sh("cd %s && cp renewed.pem server.pem && cp renewed.key "
                 "server.key",
                 pki),
              0);
    CHECK_CURL("", "ca.pem", port, "/.json", "null 200"); /* not yet */
    hearth_error_t err;
    CHECK_INT(hearth_server_reload_tls(s, &err), 0);
    CHECK_CURL("", "next.pem", port, "/.json", "null 200");
    char *old = curl("", "ca.pem", port, "/.json");
    CHECK(strstr(old, " 000") != NULL);
    free(old);
    /* A reload that cannot read the files names them and changes
     * nothing. */
    CHECK_INT(test_sh("echo broken > %s", in_pki("server.pem")), 0);
    CHECK_INT(hearth_server_reload_tls(s, &err), HEARTH_EIO);
    CHECK(strstr(err.message, in_pki("server.pem")) != NULL);
    CHECK_CURL("", "next.pem", port, "/.json", "null 200");
    CHECK_INT(hearth_server_stop(s), 0);
    /* A server without TLS has nothing to reload. */
    hearth_server_t *plain = start_test_server((hearth_server_config_t){0}, dir);
    CHECK_INT(hearth_server_reload_tls(plain, &err), HEARTH_EINVAL);
    CHECK_INT(hearth_server_stop(plain), 0);
    teardown();
}

/* ---- handshakes per address ---- */

/* One address may start 40 handshakes at once, then 20 a second: past
 * that its connections are closed unanswered (a full handshake costs the
 * loop over a millisecond before the peer proves anything). The host's
 * own 127.0.0.1 is not limited. */
static void test_handshakes_per_address_bounded(void) {
    setup();
    hearth_server_t *s = start_tls();
    int port = hearth_server_port(s);
    /* No refill at first: what follows does not depend on the pace. */
    hearth__http_server *http = ((hearth__server *)s)->http;
    hearth__http_set_handshake_rate(http, 0, 40);
    int held[40];
    for (int i = 0; i < 40; i++)
        held[i] = test_connect_from(port, "127.0.0.2");
    int over = test_connect_from(port, "127.0.0.2");
    CHECK(closed_within(over, 5000));
    close(over);
    char *refused = curl("--interface 127.0.0.2", "ca.pem", port, "/.json");
    CHECK(strstr(refused, " 000") != NULL);
    free(refused);
    /* Others, and the host itself, are served meanwhile. */
    CHECK_CURL("--interface 127.0.0.3", "ca.pem", port, "/.json", "null 200");
    CHECK_CURL("", "ca.pem", port, "/.json", "null 200");
    char *metrics = curl("-H 'Authorization: Bearer owner'", "ca.pem", port,
                         "/.metrics");
    CHECK(strstr(metrics, "hearth_tls_handshakes_refused_total 2\n") != NULL);
    free(metrics);
    /* The bucket refills: 20 a second by default. */
    hearth__http_set_handshake_rate(http, HEARTH__HANDSHAKES_PER_S,
                                     HEARTH__HANDSHAKE_BURST);
    bool served = false;
    for (double t0 = test_seconds(); !served && test_seconds() - t0 < 5;) {
        char *out = curl("--interface 127.0.0.2", "ca.pem", port, "/.json");
        served = strstr(out, "null 200") != NULL;
        free(out);
    }
    CHECK(served);
    for (int i = 0; i < 40; i++)
        close(held[i]);
    CHECK_INT(hearth_server_stop(s), 0);
    teardown();
}

/* The URLs the server dials out to: what a request needs, or an error
 * naming what is wrong. */
static void test_url_parse(void) {
    struct {
        const char *url;
        unsigned schemes;
        const char *host, *port, *authority, *path, *why;
    } cases[] = {
        {"http://h/", 3, "h", "80", "h", "/", NULL},
        {"HTTPS://h:8443?q=1", 3, "h", "8443", "h:8443", "/?q=1", NULL},
        {"https://[::1]:9/a/b", 3, "::1", "9", "[::1]:9", "/a/b", NULL},
        {"https://[::1]", 2, "::1", "443", "[::1]", "/", NULL},
        {"http://h/", 2, NULL, NULL, NULL, NULL, "is not https://"},
        {"ftp://h/", 3, NULL, NULL, NULL, NULL, "is not http:// or https://"},
        {"http://u:p@h/", 3, NULL, NULL, NULL, NULL, "credentials"},
        {"http://h/#top", 3, NULL, NULL, NULL, NULL, "fragment"},
        {"http://h:0/", 3, NULL, NULL, NULL, NULL, "port"},
        {"http://h:65536/", 3, NULL, NULL, NULL, NULL, "port"},
        {"http://h:/", 3, NULL, NULL, NULL, NULL, "port"},
        {"http://:80/", 3, NULL, NULL, NULL, NULL, "no host"},
        {"http:///x", 3, NULL, NULL, NULL, NULL, "no host"},
        {"http://[::1/", 3, NULL, NULL, NULL, NULL, "without ']'"},
        {"http://[::1]x/", 3, NULL, NULL, NULL, NULL, "after the IPv6"},
        {"http://h/a b", 3, NULL, NULL, NULL, NULL, "space"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hearth__url u;
        hearth_error_t err = {0};
        int rc = hearth__url_parse(cases[i].url, cases[i].schemes, "URL", &u,
                                   &err);
        if (cases[i].why) {
            CHECK_INT(rc, HEARTH_EINVAL);
            CHECK(strstr(err.message, cases[i].why) != NULL);
            continue;
        }
        CHECK_INT(rc, 0);
        CHECK_STR(u.host, cases[i].host);
        CHECK_STR(u.port, cases[i].port);
        CHECK_STR(u.authority, cases[i].authority);
        CHECK_STR(u.path, cases[i].path);
        CHECK_INT(u.tls, (cases[i].url[4] | 0x20) == 's');
        hearth__url_free(&u);
    }
}

const test_case tls_tests[] = {
    {"tls_url_parse", test_url_parse},
    {"tls_handshakes_per_address_bounded", test_handshakes_per_address_bounded},
    {"tls_https_with_curl", test_https_with_curl},
    {"tls_own_client_over_wss", test_own_client_over_wss},
    {"tls_large_bodies_over_https", test_large_bodies_over_https},
    {"tls_request_then_close_notify", test_request_then_close_notify},
    {"tls_bad_files_fail_start", test_bad_files_fail_start},
    {"tls_reload_takes_new_certificate", test_reload_takes_new_certificate},
    {NULL, NULL},
};
