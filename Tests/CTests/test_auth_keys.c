/* test_auth_keys.c - token keys that rotate by themselves: a server with
 * auth_keys_url against a real HTTPS key server run here (its CA made
 * here, SSL_CERT_FILE pointing at it), rotating its keys while requests
 * go on; an unknown kid's refetch and its rate limit; a key server that is
 * down, slow, endless or huge, which must change nothing; the key file
 * read again when it changes and on reload; and Firebase ID tokens
 * (firebase_project) with the rules' auth as the service documents it.
 * Keys are made and tokens signed with OpenSSL (test_keys.h). */
#include "test.h"
#include "test_keys.h"

#include <jansson.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#define ADMIN_SECRET "0123456789abcdef-admin"
#define PROJECT "demo-hearth"

static char dir[64];  /* the server's data */
static char pki[64];  /* the CA, the rules, the key file */

/* ---- a CA and the key server's certificate, made with OpenSSL ---- */

static X509 *new_cert(EVP_PKEY *key, const char *cn, X509 *issuer,
                      EVP_PKEY *issuer_key, bool ca) {
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), ca ? 1 : 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(issuer ? issuer : x));
    X509_set_pubkey(x, key);
    X509V3_CTX v3;
    X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(
        NULL, &v3, ca ? NID_basic_constraints : NID_subject_alt_name,
        ca ? "critical,CA:TRUE" : "IP:127.0.0.1");
    CHECK(e != NULL);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    CHECK(X509_sign(x, issuer_key, EVP_sha256()) > 0);
    return x;
}

/* ---- the key server: HTTPS on a thread, one connection at a time ---- */

typedef enum {
    SERVE_KEYS,    /* 200 with the document and Cache-Control max-age */
    SERVE_DOWN,    /* closes each connection at once */
    SERVE_DRIP,    /* a byte of the answer every 300 ms, forever */
    SERVE_HUGE,    /* Content-Length: 100 MB, and sends it */
    SERVE_ENDLESS, /* chunked, never ending */
    SERVE_GARBAGE, /* 200 with text that is no key set */
} serve_mode;

static struct key_server {
    pthread_mutex_t lock;
    serve_mode mode;
    char doc[16384];
    int max_age;
    int requests; /* connections that reached an answer */
    int odd_requests; /* of those, not a GET of the key URL's path */
    int port, listener, stop_pipe[2];
    SSL_CTX *ctx;
    pthread_t thread;
} ks = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void ks_set(serve_mode mode, const char *doc, int max_age) {
    pthread_mutex_lock(&ks.lock);
    ks.mode = mode;
    if (doc)
        snprintf(ks.doc, sizeof ks.doc, "%s", doc);
    ks.max_age = max_age;
    pthread_mutex_unlock(&ks.lock);
}

static int ks_requests(void) {
    pthread_mutex_lock(&ks.lock);
    int n = ks.requests;
    pthread_mutex_unlock(&ks.lock);
    return n;
}

/* Whether the test is ending (the stop pipe readable), waiting up to ms. */
static bool ks_stopping(int ms) {
    struct pollfd p = {ks.stop_pipe[0], POLLIN, 0};
    return poll(&p, 1, ms) > 0;
}

static bool ks_write(SSL *ssl, const char *data, size_t len) {
    return len == 0 || SSL_write(ssl, data, (int)len) > 0;
}

static void ks_answer(SSL *ssl) {
    char req[4096];
    size_t got = 0;
    while (got < sizeof req - 1) { /* the request's head */
        int n = SSL_read(ssl, req + got, (int)(sizeof req - 1 - got));
        if (n <= 0)
            return;
        got += (size_t)n;
        req[got] = '\0';
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    pthread_mutex_lock(&ks.lock);
    serve_mode mode = ks.mode;
    char doc[sizeof ks.doc];
    memcpy(doc, ks.doc, sizeof doc);
    int max_age = ks.max_age;
    ks.requests++;
    ks.odd_requests += strncmp(req, "GET /robot/v1/keys?alt=json HTTP/1.1\r\nHost: 127.0.0.1:", 54) != 0;
    pthread_mutex_unlock(&ks.lock);
    char head[512];
    if (mode == SERVE_KEYS || mode == SERVE_GARBAGE) {
        const char *body = mode == SERVE_KEYS ? doc : "<html>not keys</html>";
        snprintf(head, sizeof head,
                 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 "Cache-Control: public, max-age=%d, must-revalidate, no-transform\r\n"
                 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                 max_age, strlen(body));
        if (ks_write(ssl, head, strlen(head)))
            ks_write(ssl, body, strlen(body));
    } else if (mode == SERVE_DRIP) {
        static const char slow[] = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n";
        for (size_t i = 0; !ks_stopping(300); i++)
            if (!ks_write(ssl, i < sizeof slow - 1 ? slow + i : "{", 1))
                break;
    } else if (mode == SERVE_HUGE || mode == SERVE_ENDLESS) {
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\n%s\r\n\r\n",
                 mode == SERVE_HUGE ? "Content-Length: 104857600"
                                    : "Transfer-Encoding: chunked");
        static char chunk[65536 + 16];
        size_t len = 65536;
        memset(chunk, ' ', sizeof chunk);
        if (mode == SERVE_ENDLESS) {
            memcpy(chunk, "10000\r\n", 7);
            memcpy(chunk + 7 + 65536, "\r\n", 2);
            len = 7 + 65536 + 2;
        }
        bool ok = ks_write(ssl, head, strlen(head));
        for (int i = 0; ok && i < 1600 && !ks_stopping(0); i++) /* 100 MB */
            ok = ks_write(ssl, chunk, len);
    }
    /* SERVE_DOWN: nothing; the connection just closes. */
}

static void *ks_main(void *arg) {
    (void)arg;
    for (;;) {
        struct pollfd p[2] = {{ks.listener, POLLIN, 0}, {ks.stop_pipe[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0 || p[1].revents)
            return NULL;
        int fd = accept(ks.listener, NULL, NULL);
        if (fd < 0)
            continue;
        pthread_mutex_lock(&ks.lock);
        bool down = ks.mode == SERVE_DOWN;
        pthread_mutex_unlock(&ks.lock);
        if (!down) {
            SSL *ssl = SSL_new(ks.ctx);
            SSL_set_fd(ssl, fd);
            if (SSL_accept(ssl) == 1)
                ks_answer(ssl);
            SSL_free(ssl);
        }
        close(fd);
        ERR_clear_error();
    }
}

/* Makes the CA (pki/ca.pem, which SSL_CERT_FILE names) and starts the key
 * server with a certificate it signed for 127.0.0.1. */
static void ks_start(void) {
    EVP_PKEY *ca_key = test_new_key("EC"), *key = test_new_key("EC");
    X509 *ca = new_cert(ca_key, "hearth test CA", NULL, ca_key, true);
    X509 *cert = new_cert(key, "127.0.0.1", ca, ca_key, false);
    char path[128];
    snprintf(path, sizeof path, "%s/ca.pem", pki);
    FILE *f = fopen(path, "w");
    PEM_write_X509(f, ca);
    fclose(f);
    setenv("SSL_CERT_FILE", path, 1); /* this child process's trust */
    signal(SIGPIPE, SIG_IGN); /* a write after the server hung up */
    ks.ctx = SSL_CTX_new(TLS_server_method());
    CHECK(SSL_CTX_use_certificate(ks.ctx, cert) == 1);
    CHECK(SSL_CTX_use_PrivateKey(ks.ctx, key) == 1);
    X509_free(ca);
    X509_free(cert);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(key);
    ks.listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    CHECK(bind(ks.listener, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(ks.listener, 16) == 0);
    getsockname(ks.listener, (struct sockaddr *)&a, &len);
    ks.port = ntohs(a.sin_port);
    CHECK(pipe(ks.stop_pipe) == 0);
    pthread_create(&ks.thread, NULL, ks_main, NULL);
}

static void ks_stop(void) {
    CHECK(write(ks.stop_pipe[1], "x", 1) == 1);
    pthread_join(ks.thread, NULL);
    close(ks.listener);
    close(ks.stop_pipe[0]);
    close(ks.stop_pipe[1]);
    SSL_CTX_free(ks.ctx);
}

/* ---- keys, documents, tokens ---- */

static EVP_PKEY *key1, *key2, *key3;

/* A JWKS of the keys (kids "k1", "k2", "k3" by position in all three). */
static void jwks(char *out, bool k1, bool k2, bool k3) {
    char one[2048];
    strcpy(out, "{\"keys\":[");
    EVP_PKEY *keys[3] = {key1, key2, key3};
    bool want[3] = {k1, k2, k3};
    const char *kids[3] = {"k1", "k2", "k3"};
    bool first = true;
    for (int i = 0; i < 3; i++) {
        if (!want[i])
            continue;
        test_jwk_of(keys[i], kids[i], one);
        strcat(out, first ? "" : ",");
        strcat(out, one);
        first = false;
    }
    strcat(out, "]}");
}

/* Google's form: {"kid": "PEM certificate", ...}. */
static void x509_map(char *out, bool k1, bool k2) {
    out[0] = '\0';
    strcat(out, "{");
    EVP_PKEY *keys[2] = {key1, key2};
    bool want[2] = {k1, k2};
    bool first = true;
    for (int i = 0; i < 2; i++) {
        if (!want[i])
            continue;
        char *pem = test_cert_of(keys[i]);
        json_t *s = json_string(pem);
        char *quoted = json_dumps(s, JSON_ENCODE_ANY);
        sprintf(out + strlen(out), "%s\"k%d\":%s", first ? "" : ",", i + 1, quoted);
        free(pem);
        free(quoted);
        json_decref(s);
        first = false;
    }
    strcat(out, "}");
}

/* A Firebase Auth ID token's claims, as the service issues them, with
 * overrides (a JSON object merged over them; NULL: none). */
static char *id_claims(const char *uid, const char *provider, bool verified,
                       const char *overrides) {
    long now = (long)(hearth_now_ms() / 1000);
    json_t *c = json_pack(
        "{s:s,s:s,s:s,s:s,s:i,s:s,s:s,s:i,s:i,s:s,s:b,s:{s:{s:[s],s:[s]},s:s}}",
        "name", "Ada Lovelace", "picture", "https://example.com/ada.png", "iss",
        "https://securetoken.google.com/" PROJECT, "aud", PROJECT, "auth_time",
        (int)(now - 60), "user_id", uid, "sub", uid, "iat", (int)(now - 10), "exp",
        (int)(now + 3600),
        "email", "ada@example.com", "email_verified", verified, "firebase",
        "identities", "google.com", "1234567890", "email", "ada@example.com",
        "sign_in_provider", provider);
    if (overrides) {
        json_t *o = json_loads(overrides, 0, NULL);
        CHECK(o != NULL);
        json_object_update(c, o);
        json_decref(o);
    }
    char *text = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    return text;
}

static char *id_token(EVP_PKEY *k, const char *kid, const char *overrides) {
    char *claims = id_claims("ada", "google.com", true, overrides);
    char *t = test_sign_token(k, "RS256", kid, claims, SIG_JWS);
    free(claims);
    return t;
}

/* ---- talking to the server ---- */

/* The status of GET target with the token as auth (NULL: none) and extra
 * head lines; *ms how long it took. */
static int get_status(int port, const char *target, const char *token,
                      const char *extra, double *ms) {
    double t0 = test_seconds();
    int fd = test_connect(port);
    char *req = malloc(8192);
    snprintf(req, 8192, "GET %s%s%s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n",
             target, token ? "?auth=" : "", token ? token : "", extra ? extra : "");
    CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    free(req);
    char buf[1024] = "";
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    close(fd);
    if (ms)
        *ms = (test_seconds() - t0) * 1000;
    if (getenv("AUTHK_DEBUG"))
        fprintf(stderr, "%s\n", buf);
    return got > 12 ? atoi(buf + 9) : -1;
}

static int read_as(int port, const char *token) {
    return get_status(port, "/data.json", token, NULL, NULL);
}

/* A number in the server's key status: "url.keys", "url.failures". */
static long long status_num(hearth_server_t *s, const char *section,
                            const char *field) {
    char *text = hearth_server_auth_keys_status(s);
    json_t *doc = json_loads(text, 0, NULL);
    long long v = json_integer_value(json_object_get(json_object_get(doc, section), field));
    json_decref(doc);
    hearth_free(text);
    return v;
}

static bool status_has_error(hearth_server_t *s, const char *section) {
    char *text = hearth_server_auth_keys_status(s);
    json_t *doc = json_loads(text, 0, NULL);
    bool has = json_is_string(json_object_get(json_object_get(doc, section), "error"));
    json_decref(doc);
    hearth_free(text);
    return has;
}

/* Waits (at most limit_s) until the server reports `count` failed
 * fetches: the barrier for "the fetch happened and failed". */
static bool wait_failures(hearth_server_t *s, long long count, double limit_s) {
    double end = test_seconds() + limit_s;
    while (test_seconds() < end) {
        if (status_num(s, "url", "failures") >= count)
            return true;
        usleep(20000);
    }
    return false;
}

static const char rules[] =
    "{\"rules\": {\"data\": {\".read\": \"auth != null\"},"
    " \"verified\": {\".read\": \"auth.token.email_verified == true\"},"
    " \"google\": {\".read\": \"auth.token.firebase.sign_in_provider == 'google.com'"
    " && auth.provider == 'google'\"},"
    " \"mine\": {\"$uid\": {\".read\": \"auth.uid == $uid\"}},"
    " \"claims\": {\".read\": \"auth.token.admin == true && auth.token.name == 'Ada Lovelace'"
    " && auth.token.email == 'ada@example.com' && auth.token.sub == auth.uid"
    " && auth.token.user_id == auth.uid"
    " && auth.token.firebase.identities['google.com'][0] == '1234567890'\"}}}";

static void setup(void) {
    strcpy(dir, "/tmp/hearth-authk-data-XXXXXX");
    strcpy(pki, "/tmp/hearth-authk-pki-XXXXXX");
    CHECK(mkdtemp(dir) && mkdtemp(pki));
    key1 = test_new_key("RSA");
    key2 = test_new_key("RSA");
    key3 = test_new_key("RSA");
    char path[128];
    snprintf(path, sizeof path, "%s/rules.json", pki);
    write_text(path, rules);
    ks_start();
}

static void teardown(void) {
    ks_stop();
    EVP_PKEY_free(key1);
    EVP_PKEY_free(key2);
    EVP_PKEY_free(key3);
    remove_tree(dir);
    remove_tree(pki);
}

static hearth_server_t *start_url_server(bool firebase) {
    char url[128], rules_path[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%d/robot/v1/keys?alt=json", ks.port);
    snprintf(rules_path, sizeof rules_path, "%s/rules.json", pki);
    hearth_server_config_t c = {.size = sizeof c,
                                .auth_keys_url = url,
                                .rules_file = rules_path,
                                .admin_secret = ADMIN_SECRET,
                                .firebase_project = firebase ? PROJECT : NULL};
    return start_test_server(c, dir);
}

/* setup(), the key server serving key 1 with max_age, and a server
 * fetching from it. */
static hearth_server_t *start_with_key1(int max_age, bool firebase, int *port) {
    setup();
    char doc[16384];
    jwks(doc, true, false, false);
    ks_set(SERVE_KEYS, doc, max_age);
    hearth_server_t *s = start_url_server(firebase);
    *port = hearth_server_port(s);
    return s;
}

static void finish(hearth_server_t *s) {
    CHECK_INT(hearth_server_stop(s), 0);
    teardown();
}

/* ---- the tests ---- */

/* Key 1, then keys 1 and 2, then key 2 alone, with max-age 2: each change
 * is seen within seconds, with no restart and no request failing. */
static void test_rotation(void) {
    int port;
    hearth_server_t *s = start_with_key1(2, true, &port);
    char doc[16384];
    char *t1 = id_token(key1, "k1", NULL), *t2 = id_token(key2, "k2", NULL);
    CHECK_INT(read_as(port, t1), 200);
    CHECK_INT(status_num(s, "url", "keys"), 1);
    CHECK_INT(read_as(port, t2), 401); /* key 2 is not published yet */

    /* Google's form this time, both keys. */
    x509_map(doc, true, true);
    ks_set(SERVE_KEYS, doc, 2);
    double t0 = test_seconds(), accepted_after = -1;
    int t1_failures = 0;
    while (test_seconds() - t0 < 8) {
        t1_failures += read_as(port, t1) != 200;
        if (read_as(port, t2) == 200) {
            accepted_after = test_seconds() - t0;
            break;
        }
        usleep(50000);
    }
    fprintf(stderr, "    key 2 accepted %.2f s after it was published\n", accepted_after);
    CHECK(accepted_after >= 0 && accepted_after < 4);
    CHECK_INT(t1_failures, 0);

    /* Key 1 withdrawn: refused once the server has fetched again, key 2
     * never failing meanwhile. */
    jwks(doc, false, true, false);
    ks_set(SERVE_KEYS, doc, 2);
    t0 = test_seconds();
    double refused_after = -1;
    int t2_failures = 0;
    while (test_seconds() - t0 < 8) {
        t2_failures += read_as(port, t2) != 200;
        if (read_as(port, t1) == 401) {
            refused_after = test_seconds() - t0;
            break;
        }
        usleep(50000);
    }
    fprintf(stderr, "    key 1 refused %.2f s after it was withdrawn\n", refused_after);
    CHECK(refused_after >= 0 && refused_after < 4);
    CHECK_INT(t2_failures, 0);

    /* The key server down: fetches fail, key 2 goes on working. */
    long long failed = status_num(s, "url", "failures");
    ks_set(SERVE_DOWN, NULL, 2);
    CHECK(wait_failures(s, failed + 1, 6));
    CHECK(status_has_error(s, "url"));
    CHECK_INT(status_num(s, "url", "keys"), 1);
    for (int i = 0; i < 5; i++)
        CHECK_INT(read_as(port, t2), 200);
    /* ... and a document that is no key set changes nothing either. */
    ks_set(SERVE_GARBAGE, NULL, 2);
    CHECK(hearth_server_reload_auth_keys(s, NULL) == 0);
    CHECK(wait_failures(s, status_num(s, "url", "failures") + 1, 6));
    CHECK_INT(read_as(port, t2), 200);
    /* /.metrics counts both. */
    char *metrics = NULL;
    {
        int fd = test_connect(port);
        const char req[] = "GET /.metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                           ADMIN_SECRET "\r\nConnection: close\r\n\r\n";
        CHECK(write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1));
        metrics = calloc(1, 1 << 20);
        size_t got = 0;
        ssize_t n;
        while ((n = read(fd, metrics + got, (1 << 20) - 1 - got)) > 0)
            got += (size_t)n;
        close(fd);
    }
    CHECK(strstr(metrics, "hearth_auth_keys{source=\"url\"} 1\n") != NULL);
    CHECK(strstr(metrics, "hearth_auth_keys_fetch_failing 1\n") != NULL);
    CHECK(strstr(metrics, "hearth_auth_keys_fetches_total{result=\"failed\"} 0\n") == NULL);
    free(metrics);
    /* Back up: recovered. */
    ks_set(SERVE_KEYS, doc, 2);
    CHECK(hearth_server_reload_auth_keys(s, NULL) == 0);
    double end = test_seconds() + 6;
    while (status_has_error(s, "url") && test_seconds() < end)
        usleep(20000);
    CHECK(!status_has_error(s, "url"));
    CHECK_INT(ks.odd_requests, 0); /* (its thread is between requests) */
    free(t1);
    free(t2);
    finish(s);
}

/* A kid nobody knows fetches again at once, but at most once per 5 s. */
static void test_unknown_kid_refetch(void) {
    int port; /* max-age 3600: no refresh on its own in this test */
    hearth_server_t *s = start_with_key1(3600, true, &port);
    char doc[16384];
    CHECK_INT(ks_requests(), 1); /* the first fetch, before the start returned */
    char *t3 = id_token(key3, "k3", NULL), *t1 = id_token(key1, "k1", NULL);
    /* The start's fetch was just now: the gap holds off a refetch. */
    for (int i = 0; i < 20; i++)
        CHECK_INT(read_as(port, t3), 401);
    CHECK_INT(ks_requests(), 1);
    /* k3 published; after the gap, one unknown kid fetches it. */
    jwks(doc, true, false, true);
    ks_set(SERVE_KEYS, doc, 3600);
    usleep(5100 * 1000);
    double t0 = test_seconds();
    int status = 0;
    while (test_seconds() - t0 < 5 && (status = read_as(port, t3)) != 200)
        usleep(20000);
    CHECK_INT(status, 200);
    fprintf(stderr, "    unknown kid k3 accepted %.2f s after its first refusal\n",
            test_seconds() - t0);
    CHECK_INT(ks_requests(), 2);
    /* A flood of unknown kids makes at most one fetch per gap. */
    char *t9 = id_token(key2, "k9", NULL);
    for (int i = 0; i < 50; i++)
        CHECK_INT(read_as(port, t9), 401);
    CHECK_INT(read_as(port, t1), 200);
    CHECK_INT(ks_requests(), 2); /* within the gap of k3's fetch: none */
    free(t9);
    free(t1);
    free(t3);
    finish(s);
}

/* The server's answers while its key server drips, sends 100 MB or never
 * ends: every request is answered at once, the keys stay, and a stop
 * during a fetch does not wait for it. */
static void test_hostile_key_server(void) {
    int port;
    hearth_server_t *s = start_with_key1(3600, true, &port);
    char *t1 = id_token(key1, "k1", NULL);
    static const serve_mode modes[] = {SERVE_HUGE, SERVE_ENDLESS};
    for (size_t m = 0; m < 2; m++) {
        long long failed = status_num(s, "url", "failures");
        ks_set(modes[m], NULL, 0);
        double t0 = test_seconds();
        CHECK_INT(hearth_server_reload_auth_keys(s, NULL), 0);
        double worst = 0, ms;
        while (status_num(s, "url", "failures") == failed && test_seconds() - t0 < 9) {
            CHECK_INT(get_status(port, "/data.json", t1, NULL, &ms), 200);
            worst = ms > worst ? ms : worst;
        }
        CHECK(wait_failures(s, failed + 1, 1));
        fprintf(stderr, "    %s: refused after %.2f s; slowest request %.1f ms\n",
                m ? "endless body" : "100 MB body", test_seconds() - t0, worst);
        CHECK(worst < 500);
        CHECK_INT(status_num(s, "url", "keys"), 1);
    }
    /* A drip: ends at the deadline (10 s); meanwhile all is answered. */
    long long failed = status_num(s, "url", "failures");
    ks_set(SERVE_DRIP, NULL, 0);
    double t0 = test_seconds(), worst = 0, ms;
    CHECK_INT(hearth_server_reload_auth_keys(s, NULL), 0);
    while (test_seconds() - t0 < 2) {
        CHECK_INT(get_status(port, "/data.json", t1, NULL, &ms), 200);
        worst = ms > worst ? ms : worst;
    }
    fprintf(stderr, "    drip: slowest request %.1f ms in its first 2 s\n", worst);
    CHECK(worst < 500);
    CHECK(wait_failures(s, failed + 1, 10));
    double took = test_seconds() - t0;
    fprintf(stderr, "    drip: refused after %.2f s\n", took);
    CHECK(took > 9 && took < 12);
    CHECK_INT(read_as(port, t1), 200);
    /* Stopping during a drip ends the fetch at once. */
    int asked = ks_requests();
    CHECK_INT(hearth_server_reload_auth_keys(s, NULL), 0);
    /* (The key server's one thread may still be dripping to the last,
     * timed-out fetch for a moment.) */
    double end = test_seconds() + 3;
    while (ks_requests() == asked && test_seconds() < end)
        usleep(10000);
    CHECK(ks_requests() > asked); /* the fetch is in the drip now */
    usleep(300 * 1000);
    t0 = test_seconds();
    CHECK_INT(hearth_server_stop(s), 0);
    fprintf(stderr, "    stop during a fetch took %.3f s\n", test_seconds() - t0);
    CHECK(test_seconds() - t0 < 2);
    free(t1);
    teardown();
}

/* The key server down at the start: the server starts anyway, refuses
 * signed tokens (never unsigned ones), and takes the keys once up. */
static void test_first_fetch_fails(void) {
    setup();
    char doc[16384];
    jwks(doc, true, false, false);
    ks_set(SERVE_DOWN, doc, 3600);
    hearth_server_t *s = start_url_server(false);
    int port = hearth_server_port(s);
    CHECK(status_has_error(s, "url"));
    CHECK_INT(status_num(s, "url", "keys"), 0);
    char *t1 = id_token(key1, "k1", NULL);
    CHECK_INT(read_as(port, t1), 401);
    char unsigned_token[512];
    static const char header[] = "{\"alg\":\"none\",\"typ\":\"JWT\"}";
    b64url(header, sizeof header - 1, unsigned_token);
    strcat(unsigned_token, ".");
    b64url("{\"sub\":\"ada\"}", 13, unsigned_token + strlen(unsigned_token));
    strcat(unsigned_token, ".");
    CHECK_INT(read_as(port, unsigned_token), 401);
    ks_set(SERVE_KEYS, doc, 3600);
    double t0 = test_seconds();
    while (read_as(port, t1) != 200 && test_seconds() - t0 < 6)
        usleep(50000);
    CHECK_INT(read_as(port, t1), 200);
    free(t1);
    finish(s);
}

/* The key file is read again when it changes and on reload; a bad one
 * keeps the keys in force. */
static void test_file_reload(void) {
    setup();
    char doc[16384], keys_path[128], rules_path[128];
    snprintf(keys_path, sizeof keys_path, "%s/keys.json", pki);
    snprintf(rules_path, sizeof rules_path, "%s/rules.json", pki);
    jwks(doc, true, false, false);
    write_text(keys_path, doc);
    hearth_server_config_t c = {.size = sizeof c, .auth_keys_file = keys_path,
                                .rules_file = rules_path};
    hearth_server_t *s = start_test_server(c, dir);
    int port = hearth_server_port(s);
    char *t1 = id_token(key1, "k1", NULL), *t2 = id_token(key2, "k2", NULL);
    CHECK_INT(read_as(port, t1), 200);
    CHECK_INT(read_as(port, t2), 401);
    /* Changed on disk: seen by the watch. */
    jwks(doc, false, true, false);
    write_text(keys_path, doc);
    double t0 = test_seconds();
    while (read_as(port, t2) != 200 && test_seconds() - t0 < 5)
        usleep(50000);
    CHECK_INT(read_as(port, t2), 200);
    CHECK_INT(read_as(port, t1), 401);
    /* A broken file: reload says so, naming it; the keys stay. */
    write_text(keys_path, "{\"keys\": [{\"kty\": \"RSA\"");
    hearth_error_t err = {0};
    CHECK_INT(hearth_server_reload_auth_keys(s, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, keys_path) != NULL);
    CHECK(status_has_error(s, "file"));
    usleep(1500 * 1000); /* the watch sees it too */
    CHECK_INT(read_as(port, t2), 200);
    CHECK_INT(status_num(s, "file", "keys"), 1);
    /* Both keys, by reload (the loop adopts them: wait for it). */
    jwks(doc, true, true, false);
    write_text(keys_path, doc);
    CHECK_INT(hearth_server_reload_auth_keys(s, NULL), 0);
    t0 = test_seconds();
    while (read_as(port, t1) != 200 && test_seconds() - t0 < 3)
        usleep(20000);
    CHECK_INT(read_as(port, t1), 200);
    CHECK_INT(read_as(port, t2), 200);
    free(t1);
    free(t2);
    finish(s);
}

/* A token shaped like Firebase Auth's passes firebase_project's checks;
 * rules on auth.token.* decide as the service's; each bad claim is
 * refused. */
static void test_firebase_id_tokens(void) {
    int port;
    hearth_server_t *s = start_with_key1(3600, true, &port);
    char *good = id_token(key1, "k1", NULL);
    CHECK_INT(read_as(port, good), 200);
    CHECK_INT(get_status(port, "/verified.json", good, NULL, NULL), 200);
    CHECK_INT(get_status(port, "/google.json", good, NULL, NULL), 200);
    CHECK_INT(get_status(port, "/mine/ada.json", good, NULL, NULL), 200);
    CHECK_INT(get_status(port, "/mine/bob.json", good, NULL, NULL), 401);
    char *admin = id_token(key1, "k1", "{\"admin\": true}");
    CHECK_INT(get_status(port, "/claims.json", admin, NULL, NULL), 200);
    CHECK_INT(get_status(port, "/claims.json", good, NULL, NULL), 401);
    free(admin);
    /* Unverified email, another provider: those rules say no. */
    char *claims = id_claims("ada", "password", false, NULL);
    char *other = test_sign_token(key1, "RS256", "k1", claims, SIG_JWS);
    CHECK_INT(read_as(port, other), 200);
    CHECK_INT(get_status(port, "/verified.json", other, NULL, NULL), 401);
    CHECK_INT(get_status(port, "/google.json", other, NULL, NULL), 401);
    free(claims);
    free(other);
    /* Each claim check refuses its bad token. */
    long now = (long)(hearth_now_ms() / 1000);
    char future[64], big_sub[200];
    snprintf(future, sizeof future, "{\"auth_time\": %ld}", now + 3600);
    memset(big_sub, 'u', 129);
    big_sub[129] = '\0';
    char overlong[256];
    snprintf(overlong, sizeof overlong, "{\"sub\": \"%s\"}", big_sub);
    const char *bad[] = {
        "{\"iss\": \"https://securetoken.google.com/other-project\"}",
        "{\"aud\": \"other-project\"}",
        future,
        "{\"sub\": \"\"}",
        overlong,
        "{\"sub\": 7}",
        "{\"exp\": 1600000000}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *t = id_token(key1, "k1", bad[i]);
        int st = read_as(port, t);
        if (st != 401)
            fprintf(stderr, "  accepted with %s\n", bad[i]);
        CHECK_INT(st, 401);
        free(t);
    }
    /* No auth_time, no iat, no kid, ES256: refused too. */
    char *c2 = id_claims("ada", "google.com", true, NULL);
    json_t *j = json_loads(c2, 0, NULL);
    const char *drop[] = {"auth_time", "iat"};
    for (size_t i = 0; i < 2; i++) {
        json_t *copy = json_deep_copy(j);
        json_object_del(copy, drop[i]);
        char *text = json_dumps(copy, JSON_COMPACT);
        char *t = test_sign_token(key1, "RS256", "k1", text, SIG_JWS);
        CHECK_INT(read_as(port, t), 401);
        free(t);
        free(text);
        json_decref(copy);
    }
    char *no_kid = test_sign_token(key1, "RS256", NULL, c2, SIG_JWS);
    CHECK_INT(read_as(port, no_kid), 401);
    free(no_kid);
    json_decref(j);
    free(c2);
    free(good);
    finish(s);
}

/* The private key's PEM (free()). */
static char *private_pem(EVP_PKEY *k) {
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL);
    char *data;
    long n = BIO_get_mem_data(bio, &data);
    char *s = strndup(data, (size_t)n);
    BIO_free(bio);
    return s;
}

/* hearth_token_create_with_key signs as Firebase Auth does: the server
 * accepts its RS256 token under firebase_project; an ES256 one verifies
 * with the EC key's JWK; bad keys are refused, naming why. */
static void test_token_create_with_key(void) {
    int port;
    hearth_server_t *s = start_with_key1(3600, true, &port);
    char *pem = private_pem(key1), *token = NULL;
    char *claims = id_claims("ada", "google.com", true, NULL);
    CHECK_INT(hearth_token_create_with_key(NULL, claims, pem, "k1", 600, &token, NULL), 0);
    CHECK_INT(get_status(port, "/verified.json", token, NULL, NULL), 200);
    hearth_free(token);
    /* Signed right, but with the kid of no key. */
    CHECK_INT(hearth_token_create_with_key(NULL, claims, pem, "nope", 600, &token, NULL), 0);
    CHECK_INT(read_as(port, token), 401);
    hearth_free(token);
    free(pem);
    EVP_PKEY *ec = test_new_key("EC");
    char jwk[2048], set_text[2200];
    test_jwk_of(ec, "e1", jwk);
    snprintf(set_text, sizeof set_text, "{\"keys\":[%s]}", jwk);
    pem = private_pem(ec);
    CHECK_INT(hearth_token_create_with_key("ada", NULL, pem, "e1", 600, &token, NULL), 0);
    char header[64] = "";
    b64url("{\"alg\":\"ES256\",\"kid\":\"e1\",\"typ\":\"JWT\"}", 36, header);
    CHECK(token && !strncmp(token, header, strlen(header)));
    char keys_path[128], rules_path[128];
    snprintf(keys_path, sizeof keys_path, "%s/ec.json", pki);
    snprintf(rules_path, sizeof rules_path, "%s/rules.json", pki);
    write_text(keys_path, set_text);
    hearth_server_config_t c = {.size = sizeof c, .auth_keys_file = keys_path,
                                .rules_file = rules_path};
    hearth_server_t *es = start_test_server(c, dir);
    CHECK_INT(read_as(hearth_server_port(es), token), 200);
    CHECK_INT(hearth_server_stop(es), 0);
    hearth_free(token);
    free(pem);
    EVP_PKEY_free(ec);
    hearth_error_t err = {0};
    CHECK_INT(hearth_token_create_with_key("ada", NULL, "not a key", NULL, 600, &token, &err),
              HEARTH_EINVAL);
    CHECK(strstr(err.message, "not a PEM private key") != NULL);
    free(claims);
    finish(s);
}

/* Settings that cannot work fail the start, naming what is wrong. */
static void test_settings_refused(void) {
    strcpy(dir, "/tmp/hearth-authk-data-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    struct {
        const char *url, *project, *audience, *why;
    } cases[] = {
        {"http://127.0.0.1/keys", NULL, NULL, "is not https://"},
        {"https://user:pw@example.com/keys", NULL, NULL, "credentials"},
        {"https://example.com:99999/keys", NULL, NULL, "port"},
        {"https://exa mple.com/", NULL, NULL, "space"},
        {NULL, "Bad_Project", NULL, "invalid Firebase project id"},
        {NULL, PROJECT, "someone-else", "not the Firebase project id"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hearth_server_config_t c = {.size = sizeof c, .host = "127.0.0.1",
                                    .data_dir = dir, .auth_keys_url = cases[i].url,
                                    .firebase_project = cases[i].project,
                                    .auth_audience = cases[i].audience};
        hearth_server_t *s = NULL;
        hearth_error_t err = {0};
        CHECK_INT(hearth_server_start(&c, &s, &err), HEARTH_EINVAL);
        if (!strstr(err.message, cases[i].why))
            fprintf(stderr, "  case %zu: \"%s\"\n", i, err.message);
        CHECK(strstr(err.message, cases[i].why) != NULL);
    }
    remove_tree(dir);
}

const test_case auth_key_tests[] = {
    {"auth_keys_url_rotation", test_rotation},
    {"auth_keys_unknown_kid_refetch", test_unknown_kid_refetch},
    {"auth_keys_hostile_key_server", test_hostile_key_server},
    {"auth_keys_first_fetch_fails", test_first_fetch_fails},
    {"auth_keys_file_reload", test_file_reload},
    {"auth_keys_firebase_id_tokens", test_firebase_id_tokens},
    {"auth_keys_settings_refused", test_settings_refused},
    {"auth_keys_token_create_with_key", test_token_create_with_key},
    {NULL, NULL},
};
