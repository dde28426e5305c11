/* test_server.c - a real server on a free loopback port, spoken to over
 * real sockets: every REST method and parameter, errors as the service
 * words them, conditional requests, namespaces, bad HTTP of every kind,
 * pipelining, server-sent events, and data surviving a restart (the
 * realtime protocol: test_realtime.c). */
#include "test.h"

#include "http_raw.h"
#include "server_fixture.h"
#include "ws_raw.h"

#include "server/http.h"
#include "server/server.h"

#include <jansson.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

static void test_rest_methods(void) {
    struct sigaction before;
    sigaction(SIGPIPE, NULL, &before);
    CHECK(before.sa_handler == SIG_DFL);
    hearth_server_t *s = start();
    /* A client leaving before its reply must not end the process. */
    struct sigaction after;
    sigaction(SIGPIPE, NULL, &after);
    CHECK(after.sa_handler == SIG_IGN);
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "GET", "/.json", NULL, NULL, 200, "null");
    EXPECT_REQ(port, "PUT", "/users/ada.json", NULL, "{\"name\":\"Ada\"}", 200,
               "{\"name\":\"Ada\"}");
    EXPECT_REQ(port, "GET", "/users/ada/name.json", NULL, NULL, 200, "\"Ada\"");
    response r = request(port, "POST", "/log.json", NULL, "{\"n\":1}");
    CHECK_INT(r.status, 200);
    CHECK(strncmp(r.body, "{\"name\":\"-", 10) == 0 && strlen(r.body) == 31);
    free(r.body);
    EXPECT_REQ(port, "PATCH", "/users.json", NULL,
               "{\"ada/born\":1815,\"bob\":{\"name\":\"Bob\"}}", 200,
               "{\"ada/born\":1815,\"bob\":{\"name\":\"Bob\"}}");
    EXPECT_REQ(port, "GET", "/users.json", NULL, NULL, 200,
               "{\"ada\":{\"born\":1815,\"name\":\"Ada\"},\"bob\":{\"name\":\"Bob\"}}");
    EXPECT_REQ(port, "DELETE", "/users/bob.json", NULL, NULL, 200, "null");
    EXPECT_REQ(port, "PUT", "/x.json?print=silent", NULL, "1", 204, "");
    EXPECT_REQ(port, "POST", "/x.json", "X-HTTP-Method-Override: DELETE\r\n",
               NULL, 200, "null");
    EXPECT_REQ(port, "POST", "/y.json?x-http-method-override=PUT", NULL, "2",
               200, "2");
    EXPECT_REQ(port, "GET", "/.json?shallow=true", NULL, NULL, 200,
               "{\"log\":true,\"users\":true,\"y\":true}");
    EXPECT_REQ(port, "GET", "/y.json?shallow=true", NULL, NULL, 200, "2");
    EXPECT_REQ(port, "PUT", "/p.json", NULL,
               "{\".value\":1,\".priority\":\"hi\"}", 200, "1");
    EXPECT_REQ(port, "GET", "/p.json?format=export", NULL, NULL, 200,
               "{\".value\":1,\".priority\":\"hi\"}");
    EXPECT_REQ(port, "GET", "/y.json?print=pretty", NULL, NULL, 200, "2");
    EXPECT_REQ(port, "GET", "/y.json?callback=cb", NULL, NULL, 200, "/**/ cb(2);");
    r = request(port, "PUT", "/t.json", NULL, "{\".sv\":\"timestamp\"}");
    CHECK_INT(r.status, 200);
    CHECK(atoll(r.body) > 1700000000000LL);
    free(r.body);
    EXPECT_REQ(port, "PUT", "/c.json", NULL, "{\".sv\":{\"increment\":5}}", 200, "5");
    EXPECT_REQ(port, "PUT", "/c.json", NULL, "{\".sv\":{\"increment\":5}}", 200, "10");
    stop(s);
    remove_tree(data_dir);
}

static void test_rest_errors(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "PUT", "/x.json", NULL, "{bad", 400,
               "{\"error\":\"Invalid data; couldn't parse JSON object, array, or value.\"}");
    EXPECT_REQ(port, "PUT", "/a.b.json", NULL, "1", 400,
               "{\"error\":\"Invalid path: Invalid token in path\"}");
    EXPECT_REQ(port, "GET", "/a%5Bb.json", NULL, NULL, 400,
               "{\"error\":\"Invalid path: Invalid token in path\"}");
    EXPECT_REQ(port, "PUT", "/x.json", NULL, "{\"a\":{\"b$\":1}}", 400, NULL);
    EXPECT_REQ(port, "PUT", "/x.json", NULL, "{\".sv\":\"nope\"}", 400, NULL);
    EXPECT_REQ(port, "GET", "/x.json?limitToFirst=1", NULL, NULL, 400,
               "{\"error\":\"orderBy must be defined when other query parameters are defined\"}");
    EXPECT_REQ(port, "GET", "/x.json?orderBy=name", NULL, NULL, 400,
               "{\"error\":\"orderBy must be a valid JSON encoded path\"}");
    EXPECT_REQ(port, "GET", "/users.json?orderBy=%22age%22", NULL, NULL, 400,
               "{\"error\":\"Index not defined, add \\\".indexOn\\\": \\\"age\\\", for path \\\"/users\\\", to the rules\"}");
    EXPECT_REQ(port, "GET", "/x.json?print=loud", NULL, NULL, 400, NULL);
    EXPECT_REQ(port, "GET", "/x.json?timeout=20min", NULL, NULL, 400, NULL);
    EXPECT_REQ(port, "GET", "/x.json?auth_variable_override=%7Bnope", NULL,
               NULL, 400, NULL);
    EXPECT_REQ(port, "GET", "/x.json?auth_variable_override=%7B%22uid%22%3A%22u%22%7D",
               "Authorization: Bearer owner\r\n", NULL, 200, "null");
    EXPECT_REQ(port, "GET", "/x", NULL, NULL, 404, NULL);
    EXPECT_REQ(port, "GET", "/.json?ns=bad!name", NULL, NULL, 400, NULL);
    /* Nothing above wrote anything. */
    EXPECT_REQ(port, "GET", "/.json", NULL, NULL, 200, "null");
    stop(s);
    remove_tree(data_dir);
}

static void test_queries_and_rules(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "PUT", "/.settings/rules.json", OWNER,
               "{\"rules\":{/* comment */\".read\":true,\".write\":true,"
               "\"users\":{\".indexOn\":[\"age\"]}}}",
               200, NULL);
    EXPECT_REQ(port, "PUT", "/users.json", NULL,
               "{\"a\":{\"age\":30},\"b\":{\"age\":20},\"c\":{\"age\":40}}", 200,
               NULL);
    EXPECT_REQ(port, "GET", "/users.json?orderBy=%22age%22&limitToFirst=2",
               NULL, NULL, 200, "{\"a\":{\"age\":30},\"b\":{\"age\":20}}");
    EXPECT_REQ(port, "GET", "/users.json?orderBy=%22age%22&startAt=25&endAt=35",
               NULL, NULL, 200, "{\"a\":{\"age\":30}}");
    EXPECT_REQ(port, "GET", "/users.json?orderBy=%22$key%22&equalTo=%22c%22",
               NULL, NULL, 200, "{\"c\":{\"age\":40}}");
    EXPECT_REQ(port, "GET", "/users.json?orderBy=%22$key%22&limitToLast=1",
               NULL, NULL, 200, "{\"c\":{\"age\":40}}");
    response r = request(port, "GET", "/.settings/rules.json", OWNER, NULL);
    CHECK(strstr(r.body, "\".indexOn\"") != NULL);
    free(r.body);
    /* As the Admin SDKs read them (db.reference().get_rules()). */
    r = request(port, "GET", "/.settings/rules.json?format=strict", OWNER, NULL);
    CHECK_INT(r.status, 200);
    json_t *doc = json_loads(r.body, 0, NULL);
    CHECK(json_is_object(json_object_get(doc, "rules")));
    json_decref(doc);
    free(r.body);
    EXPECT_REQ(port, "GET", "/.settings/rules.json?format=export", OWNER, NULL,
               400, "{\"error\":\"format must be 'strict'\"}");
    EXPECT_REQ(port, "GET", "/users.json?format=strict", NULL, NULL, 400,
               "{\"error\":\"format must be 'export'\"}");
    EXPECT_REQ(port, "PUT", "/.settings/rules.json", OWNER, "{\"rules\":", 400,
               NULL);
    stop(s);
    remove_tree(data_dir);
}

/* Unsigned tokens ({"alg":"none"}) for ada and bob, as the emulator
 * accepts them when no keys are configured. */
#define ADA "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZGEifQ."
#define BOB "eyJhbGciOiJub25lIn0.eyJzdWIiOiJib2IifQ."
#define DENIED "{\"error\":\"Permission denied\"}"

static void test_rules_enforced_over_rest(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "PUT", "/.settings/rules.json?ns=guard", OWNER,
               "{\"rules\":{\"users\":{\"$uid\":{"
               "\".read\":\"auth != null && auth.uid == $uid\","
               "\".write\":\"auth != null && auth.uid == $uid\","
               "\"name\":{\".validate\":\"newData.isString()\"}}},"
               "\"public\":{\".read\":true}}}",
               200, NULL);
    EXPECT_REQ(port, "GET", "/.settings/rules.json?ns=guard", NULL, NULL, 401, NULL);
    EXPECT_REQ(port, "PUT", "/users/ada.json?ns=guard&auth=" ADA, NULL,
               "{\"name\":\"Ada\"}", 200, NULL);
    /* Refused writes change nothing. */
    EXPECT_REQ(port, "PUT", "/users/ada.json?ns=guard&auth=" BOB, NULL,
               "{\"name\":\"Eve\"}", 401, DENIED);
    EXPECT_REQ(port, "PUT", "/users/ada/name.json?ns=guard&auth=" ADA, NULL, "5",
               401, DENIED);
    EXPECT_REQ(port, "DELETE", "/users/ada.json?ns=guard&auth=" BOB, NULL, NULL,
               401, DENIED);
    EXPECT_REQ(port, "PATCH", "/users.json?ns=guard&auth=" ADA, NULL,
               "{\"ada/name\":\"A\",\"bob/name\":\"B\"}", 401, DENIED);
    EXPECT_REQ(port, "GET", "/users.json?ns=guard", OWNER, NULL, 200,
               "{\"ada\":{\"name\":\"Ada\"}}");
    EXPECT_REQ(port, "PATCH", "/users.json?ns=guard&auth=" ADA, NULL,
               "{\"ada/name\":\"A\"}", 200, NULL);
    EXPECT_REQ(port, "POST", "/users/ada/notes.json?ns=guard&auth=" ADA, NULL,
               "{\"t\":1}", 200, NULL);
    EXPECT_REQ(port, "POST", "/users/bob/notes.json?ns=guard&auth=" ADA, NULL,
               "{\"t\":1}", 401, DENIED);
    /* Reads: the user's own, not another's, and no filtering. */
    EXPECT_REQ(port, "GET", "/users/ada/name.json?ns=guard&auth=" ADA, NULL, NULL,
               200, "\"A\"");
    EXPECT_REQ(port, "GET", "/users/ada/name.json?ns=guard",
               "Authorization: Bearer " ADA "\r\n", NULL, 200, "\"A\"");
    EXPECT_REQ(port, "GET", "/users/ada.json?ns=guard", NULL, NULL, 401, DENIED);
    EXPECT_REQ(port, "GET", "/users/ada.json?ns=guard&auth=" BOB, NULL, NULL, 401,
               DENIED);
    EXPECT_REQ(port, "GET", "/users.json?ns=guard&auth=" ADA, NULL, NULL, 401, DENIED);
    EXPECT_REQ(port, "GET", "/public.json?ns=guard", NULL, NULL, 200, "null");
    /* A stream is a read too. */
    EXPECT_REQ(port, "GET", "/users/bob.json?ns=guard&auth=" ADA,
               "Accept: text/event-stream\r\n", NULL, 401, DENIED);
    /* An admin evaluated as a user. */
    EXPECT_REQ(port, "GET",
               "/users/ada/name.json?ns=guard&auth_variable_override="
               "%7B%22uid%22%3A%22ada%22%7D",
               OWNER, NULL, 200, "\"A\"");
    EXPECT_REQ(port, "GET",
               "/users/ada.json?ns=guard&auth_variable_override="
               "%7B%22uid%22%3A%22bob%22%7D",
               OWNER, NULL, 401, DENIED);
    /* A token that does not verify. */
    response r = request(port, "GET", "/public.json?ns=guard&auth=garbage", NULL, NULL);
    CHECK_INT(r.status, 401);
    CHECK(r.body && strstr(r.body, "invalid token"));
    free(r.body);
    stop(s);
    remove_tree(data_dir);
}

/* A rules change that revokes a stream's read ends it with `cancel`. */
static void test_rules_change_cancels_streams(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "PUT", "/.settings/rules.json?ns=revoke", OWNER,
               "{\"rules\":{\"public\":{\".read\":true},\"kept\":{\".read\":true}}}",
               200, NULL);
    int fd = test_connect(port);
    const char *get = "GET /public.json?ns=revoke HTTP/1.1\r\nHost: x\r\n"
                      "Accept: text/event-stream\r\n\r\n";
    send_all(fd, get, strlen(get));
    char buf[8192];
    size_t got = 0;
    /* Until the first event (the initial put). */
    while (got < sizeof buf - 1 && !memmem(buf, got, "event: put", 10)) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 5000) <= 0)
            break;
        ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    CHECK(memmem(buf, got, "event: put", 10) != NULL);
    EXPECT_REQ(port, "PUT", "/.settings/rules.json?ns=revoke", OWNER,
               "{\"rules\":{\"public\":{\".read\":false},\"kept\":{\".read\":true}}}",
               200, NULL);
    bool closed = false;
    while (got < sizeof buf - 1) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 5000) <= 0)
            break;
        ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0) {
            closed = true;
            break;
        }
        got += (size_t)n;
    }
    buf[got] = '\0';
    CHECK(strstr(buf, "event: cancel") != NULL);
    CHECK(closed);
    close(fd);
    stop(s);
    remove_tree(data_dir);
}

/* With --auth-secret, tokens must be signed with it. */
static void test_signed_tokens(void) {
    hearth_server_t *s =
        start_with((hearth_server_config_t){.auth_secret = "s3cret",
                                             .admin_secret = ADMIN_SECRET});
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "PUT", "/.settings/rules.json?ns=signed", ADMIN,
               "{\"rules\":{\"users\":{\"$uid\":{\".read\":\"auth.uid == $uid\"}}}}",
               200, NULL);
    /* {"sub":"ada","exp":4102444800} signed with "s3cret". */
    EXPECT_REQ(port, "GET",
               "/users/ada.json?ns=signed&auth=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
               "eyJzdWIiOiJhZGEiLCJleHAiOjQxMDI0NDQ4MDB9."
               "BFoeApGRQpBu2iwTS8NkZ5zZIbZjhZNs8-qWnQCP3Xc",
               NULL, NULL, 200, "null");
    response r = request(port, "GET", "/users/ada.json?ns=signed&auth=" ADA, NULL,
                         NULL);
    CHECK_INT(r.status, 401); /* unsigned: refused once there is a secret */
    CHECK(r.body && strstr(r.body, "unsigned"));
    free(r.body);
    stop(s);
    remove_tree(data_dir);
}

/* A stream held with a token ends with auth_revoked when the token
 * expires. */
static void test_expired_token_ends_stream(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "PUT", "/.settings/rules.json?ns=expiry", OWNER,
               "{\"rules\":{\".read\":\"auth != null\"}}", 200, NULL);
    char *token = NULL;
    CHECK_INT(hearth_token_create("ada", NULL, NULL, 2, &token, NULL), 0);
    int fd = test_connect(port);
    char get[1024];
    snprintf(get, sizeof get,
             "GET /.json?ns=expiry&auth=%s HTTP/1.1\r\nHost: x\r\n"
             "Accept: text/event-stream\r\n\r\n",
             token);
    send_all(fd, get, strlen(get));
    char buf[8192];
    bool closed;
    size_t got = read_until(fd, buf, sizeof buf, 0, "event: put", 5000, &closed);
    CHECK(strstr(buf, "event: put") != NULL);
    got = read_until(fd, buf, sizeof buf, got, "no longer valid", 4000, &closed);
    CHECK(strstr(buf, "event: auth_revoked\ndata: \"credential is no longer valid\"") != NULL);
    read_until(fd, buf, sizeof buf, got, "never", 3000, &closed);
    CHECK(closed);
    close(fd);
    /* The token is refused from now on. */
    char target[1024];
    snprintf(target, sizeof target, "/.json?ns=expiry&auth=%s", token);
    response r = request(port, "GET", target, NULL, NULL);
    CHECK_INT(r.status, 401);
    CHECK(r.body && strstr(r.body, "expired"));
    free(r.body);
    hearth_free(token);
    stop(s);
    remove_tree(data_dir);
}

/* --rules FILE is read again when it changes; a bad version is refused
 * and the rules in force stay. */
static void test_rules_file_reloads(void) {
    strcpy(data_dir, "/tmp/hearth-server-XXXXXX");
    CHECK(mkdtemp(data_dir) != NULL);
    char rules[1100];
    snprintf(rules, sizeof rules, "%s.rules", data_dir);
    write_text(rules, "{\"rules\": {\".read\": true, \".write\": true}}");
    hearth_server_t *s = start_with((hearth_server_config_t){.rules_file = rules});
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "PUT", "/a.json", NULL, "1", 200, "1");
    write_text(rules, "// read-only now\n{\"rules\": {\".read\": true}}");
    int status = 200;
    for (int i = 0; i < 60 && status == 200; i++) {
        usleep(100 * 1000);
        response r = request(port, "PUT", "/a.json", NULL, "1");
        status = r.status;
        free(r.body);
    }
    CHECK_INT(status, 401);
    /* A broken file changes nothing: the server says it refused it (the
     * barrier), and the rules in force stay. */
    char said[1100];
    snprintf(said, sizeof said, "%s.stderr", data_dir);
    int saved = test_capture_stderr(said);
    write_text(rules, "{\"rules\": {\".read\": \"auth.uid ==\"}}");
    bool refused = false;
    for (int i = 0; i < 600 && !refused; i++) {
        usleep(10 * 1000);
        char *text = read_file(said, NULL);
        refused = text && strstr(text, "not reloaded");
        free(text);
    }
    test_restore_stderr(saved);
    unlink(said);
    CHECK(refused);
    EXPECT_REQ(port, "GET", "/a.json", NULL, NULL, 200, "1");
    EXPECT_REQ(port, "PUT", "/a.json", NULL, "3", 401, NULL);
    stop(s);
    unlink(rules);
    remove_tree(data_dir);
}

/* With an admin secret, it (not "owner") bypasses the rules; with keys, a
 * new namespace starts locked. */
static void test_admin_secret_and_locked_default(void) {
    strcpy(data_dir, "/tmp/hearth-server-XXXXXX");
    CHECK(mkdtemp(data_dir) != NULL);
    hearth_server_config_t config = {.size = sizeof config, .host = "127.0.0.1", .data_dir = data_dir,
                                     .fsync_mode = HEARTH_FSYNC_OFF,
                                     .auth_secret = "s3cret",
                                     .auth_audience = "my-project",
                                     .admin_secret = "short"};
    hearth_server_t *s = NULL;
    hearth_error_t err;
    CHECK_INT(hearth_server_start(&config, &s, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, "16 characters") != NULL);
    config.admin_secret = "0123456789abcdef-admin";
    CHECK_INT(hearth_server_start(&config, &s, NULL), 0);
    int port = hearth_server_port(s);
    char *ada = NULL, *elsewhere = NULL;
    CHECK_INT(hearth_token_create("ada", "{\"aud\": \"my-project\"}", "s3cret",
                                  3600, &ada, NULL),
              0);
    CHECK_INT(hearth_token_create("ada", "{\"aud\": \"other\"}", "s3cret", 3600,
                                  &elsewhere, NULL),
              0);
    char target[1024];
    snprintf(target, sizeof target, "/x.json?auth=%s", elsewhere);
    response wrong = request(port, "GET", target, NULL, NULL);
    CHECK_INT(wrong.status, 401);
    CHECK(wrong.body && strstr(wrong.body, "aud"));
    free(wrong.body);
    hearth_free(elsewhere);
    snprintf(target, sizeof target, "/x.json?auth=%s", ada);
    response locked = request(port, "GET", target, NULL, NULL);
    CHECK_INT(locked.status, 401); /* a valid token, but locked by default */
    CHECK(locked.body && strstr(locked.body, "Permission denied"));
    free(locked.body);
    EXPECT_REQ(port, "GET", "/x.json", OWNER, NULL, 401, NULL);
    EXPECT_REQ(port, "PUT", "/x.json",
               "Authorization: Bearer 0123456789abcdef-admin\r\n", "7", 200, "7");
    EXPECT_REQ(port, "GET", "/.settings/rules.json",
               "Authorization: Bearer 0123456789abcdef-admin\r\n", NULL, 200,
               NULL);
    EXPECT_REQ(port, "GET", "/.settings/rules.json", OWNER, NULL, 401, NULL);
    hearth_free(ada);
    stop(s);
    remove_tree(data_dir);
}

static void test_etags(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    response r = request(port, "GET", "/e.json", "X-Firebase-ETag: true\r\n", NULL);
    CHECK(strstr(r.head, "ETag: null_etag") != NULL);
    free(r.body);
    EXPECT_REQ(port, "PUT", "/e.json", "if-match: null_etag\r\n", "1", 200, "1");
    EXPECT_REQ(port, "PUT", "/e.json", "if-match: null_etag\r\n", "2", 412, "1");
    r = request(port, "GET", "/e.json", "X-Firebase-ETag: true\r\n", NULL);
    char *etag = strstr(r.head, "ETag: ");
    CHECK(etag != NULL);
    char tag[64] = "";
    if (etag)
        sscanf(etag + 6, "%63s", tag);
    free(r.body);
    char header[128];
    snprintf(header, sizeof header, "if-none-match: %s\r\n", tag);
    EXPECT_REQ(port, "GET", "/e.json", header, NULL, 304, "");
    snprintf(header, sizeof header, "if-match: %s\r\n", tag);
    EXPECT_REQ(port, "PUT", "/e.json", header, "3", 200, "3");
    EXPECT_REQ(port, "DELETE", "/e.json", header, NULL, 412, "3");
    stop(s);
    remove_tree(data_dir);
}

static void test_namespaces(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "PUT", "/v.json?ns=alpha", NULL, "\"a\"", 200, NULL);
    EXPECT_REQ(port, "PUT", "/v.json", "Host: beta.example.com\r\n", "\"b\"",
               200, NULL);
    EXPECT_REQ(port, "GET", "/v.json?ns=alpha", NULL, NULL, 200, "\"a\"");
    EXPECT_REQ(port, "GET", "/v.json?ns=beta", NULL, NULL, 200, "\"b\"");
    EXPECT_REQ(port, "GET", "/v.json", NULL, NULL, 200, "null"); /* default */
    stop(s);
    remove_tree(data_dir);
}

static void test_bad_http(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    int fd = test_connect(port);
    send_all(fd, "NONSENSE\r\n\r\n", 12);
    char *raw = read_responses(fd, 1);
    CHECK(strncmp(raw, "HTTP/1.1 400", 12) == 0);
    free(raw);
    close(fd);
    fd = test_connect(port);
    const char *big = "PUT /x.json HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n";
    send_all(fd, big, strlen(big));
    raw = read_responses(fd, 1);
    CHECK(strncmp(raw, "HTTP/1.1 413", 12) == 0);
    free(raw);
    close(fd);
    fd = test_connect(port);
    send_all(fd, "GET /x.json HTTP/1.1\r\nX-Big: ", 29);
    char filler[4096];
    memset(filler, 'a', sizeof filler);
    for (int i = 0; i < 30; i++)
        send_all(fd, filler, sizeof filler);
    send_all(fd, "\r\n\r\n", 4);
    raw = read_responses(fd, 1);
    CHECK(strncmp(raw, "HTTP/1.1 431", 12) == 0);
    free(raw);
    close(fd);
    /* Clients that leave before their reply (writes then fail with EPIPE)
     * harm nobody: no SIGPIPE ends the process. */
    for (int i = 0; i < 20; i++) {
        fd = test_connect(port);
        const char *put = "PUT /gone.json HTTP/1.1\r\nContent-Length: 1\r\n\r\n7";
        send_all(fd, put, strlen(put));
        struct linger hard = {1, 0}; /* reset: the reply hits a closed socket */
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
        close(fd);
    }
    EXPECT_REQ(port, "GET", "/gone.json", NULL, NULL, 200, "7");
    /* A client vanishing mid-request harms nobody. */
    fd = test_connect(port);
    send_all(fd, "PUT /x.json HTTP/1.1\r\nContent-Length: 10\r\n\r\n12", 46);
    close(fd);
    EXPECT_REQ(port, "GET", "/x.json", NULL, NULL, 200, "null");
    stop(s);
    remove_tree(data_dir);
}

/* Checks that each of the n texts comes in raw, after the one before. */
static void check_in_order(const char *raw, const char *const *texts,
                           int n) {
    const char *at = raw;
    for (int i = 0; i < n; i++) {
        const char *b = strstr(at, texts[i]);
        CHECK(b != NULL);
        at = b ? b + 5 : at;
    }
}

static void test_keep_alive_pipelining(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    int fd = test_connect(port);
    const char *reqs =
        "PUT /n.json HTTP/1.1\r\nContent-Length: 1\r\n\r\n1"
        "GET /n.json HTTP/1.1\r\n\r\n"
        "PUT /n.json HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n2\r\n0\r\n\r\n"
        "GET /n.json HTTP/1.1\r\n\r\n";
    send_all(fd, reqs, strlen(reqs));
    char *raw = read_responses(fd, 4);
    /* In order: 1, 1, 2, 2. */
    const char *bodies[] = {"\r\n\r\n1", "\r\n\r\n1", "\r\n\r\n2", "\r\n\r\n2"};
    check_in_order(raw, bodies, 4);
    free(raw);
    close(fd);
    stop(s);
    remove_tree(data_dir);
}

static void test_server_sent_events(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "PUT", "/room.json", NULL, "{\"a\":1}", 200, NULL);
    int fds_before = open_fds();
    int fd = test_connect(port);
    const char *req = "GET /room.json HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n";
    send_all(fd, req, strlen(req));
    char buf[8192];
    size_t len = 0;
    struct pollfd p = {fd, POLLIN, 0};
    while (!strstr(buf, "\"a\":1}}\n\n") && poll(&p, 1, 5000) > 0) {
        ssize_t n = read(fd, buf + len, sizeof buf - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
    }
    CHECK(strstr(buf, "Content-Type: text/event-stream") != NULL);
    CHECK(strstr(buf, "event: put\ndata: {\"path\":\"/\",\"data\":{\"a\":1}}\n\n") != NULL);
    EXPECT_REQ(port, "PATCH", "/room.json", NULL, "{\"b\":2}", 200, NULL);
    EXPECT_REQ(port, "PATCH", "/room.json", NULL, "{\"c\":{\"d\":3},\"e\":4}",
               200, NULL);
    EXPECT_REQ(port, "PUT", "/room/c/d.json", NULL, "5", 200, NULL);
    while (!strstr(buf, "\"path\":\"/c/d\"") && poll(&p, 1, 5000) > 0) {
        ssize_t n = read(fd, buf + len, sizeof buf - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
    }
    /* The smallest equivalent events: a put where one location changed, a
     * patch where several children did. */
    CHECK(strstr(buf, "event: put\ndata: {\"path\":\"/b\",\"data\":2}\n\n") != NULL);
    CHECK(strstr(buf, "event: patch\ndata: {\"path\":\"/\",\"data\":{\"c\":{\"d\":3},\"e\":4}}\n\n") != NULL);
    CHECK(strstr(buf, "event: put\ndata: {\"path\":\"/c/d\",\"data\":5}\n\n") != NULL);
    close(fd);
    /* The stream goes with its client at once (not at the next write): its
     * connection is closed, and the server carries on. */
    for (int i = 0; i < 100 && open_fds() > fds_before; i++)
        usleep(10000);
    CHECK(open_fds() <= fds_before); /* earlier replies may close too */
    EXPECT_REQ(port, "PUT", "/room/c.json", NULL, "3", 200, "3");
    stop(s);
    remove_tree(data_dir);
}

/* A stream whose client stops reading is dropped once its unsent data
 * passes the bound (8 MiB): the server's memory does not grow with it. */
static void test_slow_stream_is_dropped(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    int fd = test_connect(port);
    const char *req = "GET /big.json HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n";
    send_all(fd, req, strlen(req));
    /* 80 writes of 400 KB: 32 MB the client does not read, more than the
     * bound plus what the kernel's socket buffers hold. */
    size_t size = 400 * 1024;
    char *body = malloc(size + 3);
    body[0] = '"';
    memset(body + 1, 'x', size);
    body[size + 1] = '"';
    body[size + 2] = '\0';
    for (int i = 0; i < 80; i++) {
        body[1] = (char)('a' + i % 26); /* each value differs */
        response r = request(port, "PUT", "/big.json", NULL, body);
        CHECK_INT(r.status, 200);
        free(r.body);
    }
    free(body);
    /* Reading now finds the stream cut short: less than was written, then
     * the end of the connection. */
    size_t got = 0;
    char buf[65536];
    struct pollfd p = {fd, POLLIN, 0};
    bool ended = false;
    while (poll(&p, 1, 5000) > 0) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) {
            ended = true;
            break;
        }
        got += (size_t)n;
    }
    CHECK(ended);
    CHECK(got < 80 * size);
    close(fd);
    EXPECT_REQ(port, "GET", "/big.json?shallow=true", NULL, NULL, 200, NULL);
    stop(s);
    remove_tree(data_dir);
}

static void test_restart_keeps_data(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "PUT", "/keep.json", NULL, "{\"x\":[1,2,3]}", 200, NULL);
    EXPECT_REQ(port, "PUT", "/keep.json?ns=other", NULL, "\"o\"", 200, NULL);
    stop(s);
    s = start();
    port = hearth_server_port(s);
    EXPECT_REQ(port, "GET", "/keep.json", NULL, NULL, 200, "{\"x\":[1,2,3]}");
    EXPECT_REQ(port, "GET", "/keep.json?ns=other", NULL, NULL, 200, "\"o\"");
    stop(s);
    remove_tree(data_dir);
}

/* Requests nobody may make, to 500 invented namespaces, leave nothing
 * behind: no directory, no open file; the admin still creates one. */
static void test_junk_namespaces_create_nothing(void) {
    make_data_dir();
    char rules[1100];
    snprintf(rules, sizeof rules, "%s.rules", data_dir);
    write_text(rules, "{\"rules\": {\".read\": false, \".write\": false}}");
    hearth_server_t *s = start_with((hearth_server_config_t){
        .rules_file = rules, .auth_secret = "a-secret-for-tests",
        .admin_secret = ADMIN_SECRET});
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "GET", "/.json?ns=warmup", NULL, NULL, 401, NULL);
    int fds_before = open_fds();
    static const char *const methods[] = {"GET", "PUT", "PATCH", "DELETE"};
    char target[64];
    for (int i = 0; i < 500; i++) {
        snprintf(target, sizeof target, "/x.json?ns=junk%d", i);
        const char *m = methods[i % 4];
        EXPECT_REQ(port, m, target, NULL, strcmp(m, "GET") ? "{\"a\":1}" : NULL,
                   401, NULL);
    }
    for (int i = 0; i < 20; i++) { /* realtime sessions, closed */
        snprintf(target, sizeof target, "ws%d", i);
        int fd = ws_open(port, target);
        CHECK(fd >= 0);
        free(ws_recv(fd)); /* the hello */
        char *got = ws_request(fd, 1, "p", "{\"p\":\"/a\",\"d\":1}");
        CHECK(got && strstr(got, "permission_denied"));
        free(got);
        close(fd);
    }
    EXPECT_REQ(port, "GET", "/.json?ns=last", NULL, NULL, 401, NULL);
    CHECK(open_fds() <= fds_before + 4); /* a few closing connections */
    CHECK_INT(dir_entries(data_dir), 0);
    /* The admin's write creates its namespace. */
    EXPECT_REQ(port, "PUT", "/v.json?ns=legit", ADMIN, "1", 200, "1");
    EXPECT_REQ(port, "GET", "/v.json?ns=legit", ADMIN, NULL, 200, "1");
    CHECK_INT(dir_entries(data_dir), 1);
    stop(s);
    unlink(rules);
    s = start_with((hearth_server_config_t){.auth_secret = "a-secret-for-tests",
                                            .admin_secret = ADMIN_SECRET});
    port = hearth_server_port(s);
    EXPECT_REQ(port, "GET", "/v.json?ns=legit", ADMIN, NULL, 200, "1");
    stop(s);
    remove_tree(data_dir);
}

/* Namespaces nobody uses close (their files released) and open again with
 * their data; one in use stays open; at most 64 unused stay open. */
static void test_idle_namespaces_close(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    hearth__server_set_namespace_idle_ms(s, 0);
    EXPECT_REQ(port, "GET", "/.json?ns=ghost", NULL, NULL, 200, "null");
    CHECK_INT(dir_entries(data_dir), 0); /* a read creates nothing */
    int fds_before = open_fds();
    EXPECT_REQ(port, "PUT", "/v.json?ns=sleepy", NULL, "1", 200, "1");
    for (int i = 0; i < 500 && open_fds() > fds_before; i++)
        usleep(10000);
    CHECK(open_fds() <= fds_before);
    EXPECT_REQ(port, "GET", "/v.json?ns=sleepy", NULL, NULL, 200, "1");
    /* A session's namespace stays open while others close around it: its
     * listen (null: nothing there yet; no h, so the null is sent) still
     * hears writes. */
    int fd = ws_open(port, "held");
    CHECK(fd >= 0);
    free(ws_recv(fd)); /* the hello */
    ws_send(fd, "{\"t\":\"d\",\"d\":{\"r\":1,\"a\":\"q\",\"b\":{\"p\":\"/\"}}}");
    char *push = ws_recv(fd);
    CHECK_STR(push, "{\"t\":\"d\",\"d\":{\"a\":\"d\",\"b\":{\"p\":\"/\",\"d\":null}}}");
    free(push);
    free(ws_recv(fd)); /* its ok */
    EXPECT_REQ(port, "GET", "/.json?ns=other", NULL, NULL, 200, "null");
    EXPECT_REQ(port, "PUT", "/w.json?ns=held", NULL, "2", 200, "2");
    push = ws_recv(fd);
    CHECK_STR(push, "{\"t\":\"d\",\"d\":{\"a\":\"d\",\"b\":{\"p\":\"/\",\"d\":{\"w\":2}}}}");
    free(push);
    close(fd);
    /* 100 namespaces written: the 64 used last stay open. */
    hearth__server_set_namespace_idle_ms(s, 60000);
    fds_before = open_fds();
    char target[64];
    for (int i = 0; i < 100; i++) {
        snprintf(target, sizeof target, "/n.json?ns=many%d", i);
        EXPECT_REQ(port, "PUT", target, NULL, "7", 200, "7");
    }
    CHECK(open_fds() <= fds_before + 2 * 64 + 4);
    EXPECT_REQ(port, "GET", "/n.json?ns=many0", NULL, NULL, 200, "7");
    stop(s);
    remove_tree(data_dir);
}

/* Regression: after a disk-full error a namespace answered 500 to every
 * write until restart, and a write answered 500 had been applied. Now the
 * failed write changes nothing and is answered 507, and writes succeed
 * again as soon as space is back. */
static void test_disk_full_answers_507_and_heals(void) {
    char dir[] = "/tmp/hearth-full-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    if (!mount_tmpfs(dir, "256k")) {
        rmdir(dir);
        return;
    }
    static char big[8200];
    memset(big, 'x', sizeof big - 1);
    big[0] = big[sizeof big - 2] = '"';
    hearth_server_t *s = start_test_server((hearth_server_config_t){0}, dir);
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "PUT", "/a.json", NULL, "1", 200, "1");
    fill_disk(dir);
    response r = request(port, "PUT", "/big.json", NULL, big);
    CHECK_INT(r.status, 507);
    CHECK(strstr(r.body, "\"error\":\"Insufficient storage") != NULL);
    free(r.body);
    EXPECT_REQ(port, "GET", "/.json", NULL, NULL, 200, "{\"a\":1}");
    free_disk(dir);
    EXPECT_REQ(port, "PUT", "/b.json", NULL, "2", 200, "2");
    stop(s);
    s = start_test_server((hearth_server_config_t){0}, dir);
    EXPECT_REQ(hearth_server_port(s), "GET", "/.json", NULL, NULL, 200,
               "{\"a\":1,\"b\":2}");
    stop(s);
    unmount_tmpfs(dir);
    remove_tree(dir);
}

/* ---- safe to expose: injection (limits: test_limits.c) ---- */

static void test_download_header_injection(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    response r = request(port, "GET",
                         "/x.json?download=a%0D%0ASet-Cookie:%20pwned=1", NULL,
                         NULL);
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.head, "Set-Cookie") == NULL);
    CHECK(strstr(r.body, "download") != NULL);
    free(r.body);
    r = request(port, "GET", "/x.json?download=a%0Ab", NULL, NULL);
    CHECK_INT(r.status, 400);
    free(r.body);
    r = request(port, "GET", "/x.json?download=data.json", NULL, NULL);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.head, "Content-Disposition: attachment; "
                         "filename=\"data.json\"") != NULL);
    free(r.body);
    stop(s);
    remove_tree(data_dir);
    /* The response writer's own check, whatever a handler hands it. */
    CHECK(hearth__http_header_lines_ok(NULL));
    CHECK(hearth__http_header_lines_ok(""));
    CHECK(hearth__http_header_lines_ok("ETag: x\r\nA: b c\r\n"));
    CHECK(!hearth__http_header_lines_ok("A: x\r\nSet-Cookie: y\n"));
    CHECK(!hearth__http_header_lines_ok("A: x\ry\r\n"));
    CHECK(!hearth__http_header_lines_ok("A: x\r\n\r\nbody"));
    CHECK(!hearth__http_header_lines_ok("A: x\r\n y\r\n"));
    CHECK(!hearth__http_header_lines_ok("A: x"));
    CHECK(!hearth__http_header_lines_ok("A: \x01\r\n"));
}

/* Whether a log file of a namespace under data_dir holds `text`. */
static bool log_holds(const char *text) {
    bool found = false;
    DIR *top = opendir(data_dir);
    for (struct dirent *ns; !found && top && (ns = readdir(top));) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s", data_dir, ns->d_name);
        DIR *d = ns->d_name[0] == '.' ? NULL : opendir(dir);
        for (struct dirent *e; !found && d && (e = readdir(d));) {
            if (strncmp(e->d_name, "log.", 4))
                continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            size_t len;
            char *data = read_file(path, &len);
            found = data && memmem(data, len, text, strlen(text));
            free(data);
        }
        if (d)
            closedir(d);
    }
    if (top)
        closedir(top);
    return found;
}

/* Regression: with --fsync off each batch of writes still went to a
 * worker thread to be written and came back (thread switches, a futex, a
 * wake-up: a fifth of a PUT's cost). A batch that does not sync is
 * written on the loop: with every worker held, pipelined PUTs are in the
 * log and answered, in order. */
static void test_unsynced_writes_answered_from_the_loop(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "PUT", "/warm.json", NULL, "1", 200, "1");
    pool_hold *hold = pool_hold_start();
    int fd = test_connect(port);
    const char *reqs =
        "PUT /n.json HTTP/1.1\r\nContent-Length: 7\r\n\r\n\"first\""
        "PUT /n.json HTTP/1.1\r\nContent-Length: 8\r\n\r\n\"second\""
        "GET /n.json HTTP/1.1\r\n\r\n"
        "PUT /m.json HTTP/1.1\r\nContent-Length: 7\r\n\r\n\"third\"";
    send_all(fd, reqs, strlen(reqs));
    char *raw = read_responses(fd, 4);
    bool logged = log_holds("\"third\"");
    pool_hold_end(hold);
    const char *bodies[] = {"\r\n\r\n\"first\"", "\r\n\r\n\"second\"",
                            "\r\n\r\n\"second\"", "\r\n\r\n\"third\""};
    check_in_order(raw, bodies, 4);
    CHECK(logged);
    free(raw);
    close(fd);
    stop(s);
    remove_tree(data_dir);
}

static void *stop_server(void *s) {
    hearth_server_stop(s);
    return NULL;
}

/* Regression (a use-after-free found by ASan, about 1 run in 12 of
 * server_bad_http): a client that reset its connection while its write
 * waited for the commit, then the server stopping, freed the HTTP server
 * before that write's answer reached it. The server is freed only once
 * every connection's answer is in. (Syncing: only a commit that syncs
 * waits for a worker.) */
static void test_stop_with_an_answer_pending(void) {
    hearth_server_t *s = start_syncing();
    int port = hearth_server_port(s);
    EXPECT_REQ(port, "PUT", "/warm.json", NULL, "1", 200, "1");
    pool_hold *hold = pool_hold_start(); /* commits wait */
    int fd = test_connect(port);
    const char *put = "PUT /x.json HTTP/1.1\r\nContent-Length: 1\r\n\r\n2";
    send_all(fd, put, strlen(put));
    /* Applied once a read sees it; its answer waits for the commit. */
    bool applied = false;
    for (int tries = 0; !applied && tries < 5000; tries++) {
        response r = request(port, "GET", "/x.json", NULL, NULL);
        applied = r.body && strcmp(r.body, "2") == 0;
        free(r.body);
    }
    CHECK(applied);
    struct linger reset = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    close(fd); /* RST */
    pthread_t stopper;
    CHECK_INT(pthread_create(&stopper, NULL, stop_server, s), 0);
    /* The stop has begun once the listener is gone. */
    for (;;) {
        int probe = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int refused = connect(probe, (struct sockaddr *)&a, sizeof a) != 0;
        close(probe);
        if (refused)
            break;
        usleep(1000);
    }
    pool_hold_end(hold); /* the commit, then the answer to a gone client */
    pthread_join(stopper, NULL);
    remove_tree(data_dir);
}

/* The server's config carries its size too: a struct as long as version
 * 0.2's (in a block of exactly that size) starts a server; a later
 * header's longer struct that sets a field this library lacks, a size
 * below any version, or none at all, is refused. */
static void test_config_sizes(void) {
    make_data_dir();
    size_t base = offsetof(hearth_server_config_t, max_held_bytes) +
                  sizeof(int64_t);
    hearth_server_config_t *old = calloc(1, base);
    old->size = base;
    old->host = "127.0.0.1";
    old->data_dir = data_dir;
    old->max_held_bytes = 1 << 20; /* its last field */
    hearth_server_t *s = NULL;
    hearth_error_t err;
    CHECK_INT(hearth_server_start(old, &s, &err), 0);
    stop(s);
    free(old);

    struct {
        hearth_server_config_t config;
        uint64_t later;
    } newer;
    memset(&newer, 0, sizeof newer);
    newer.config.size = sizeof newer;
    newer.config.data_dir = data_dir;
    newer.later = 7;
    s = NULL;
    CHECK_INT(hearth_server_start(&newer.config, &s, &err), HEARTH_EUNSUPPORTED);
    CHECK(strstr(err.message, "hearth_server_config_t sets a field") != NULL);
    CHECK(s == NULL);
    newer.config.size = 1;
    CHECK_INT(hearth_server_start(&newer.config, &s, &err), HEARTH_EINVAL);
    CHECK(s == NULL);
    /* TLS asked for, the size not set: refused, never a plain HTTP
     * server that dropped the TLS fields unseen. */
    hearth_server_config_t unsized = {.data_dir = data_dir,
                                      .tls_cert_file = "cert.pem",
                                      .tls_key_file = "key.pem"};
    CHECK_INT(hearth_server_start(&unsized, &s, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, "hearth_server_config_t.size is 0") != NULL);
    CHECK(s == NULL);
}


const test_case server_tests[] = {
    {"server_config_sizes", test_config_sizes},
    {"server_rest_methods", test_rest_methods},
    {"server_rest_errors", test_rest_errors},
    {"server_queries_and_rules", test_queries_and_rules},
    {"server_rules_enforced_over_rest", test_rules_enforced_over_rest},
    {"server_rules_change_cancels_streams", test_rules_change_cancels_streams},
    {"server_signed_tokens", test_signed_tokens},
    {"server_expired_token_ends_stream", test_expired_token_ends_stream},
    {"server_rules_file_reloads", test_rules_file_reloads},
    {"server_admin_secret_and_locked_default", test_admin_secret_and_locked_default},
    {"server_etags", test_etags},
    {"server_namespaces", test_namespaces},
    {"server_bad_http", test_bad_http},
    {"server_keep_alive_pipelining", test_keep_alive_pipelining},
    {"server_unsynced_writes_answered_from_the_loop",
     test_unsynced_writes_answered_from_the_loop},
    {"server_server_sent_events", test_server_sent_events},
    {"server_slow_stream_is_dropped", test_slow_stream_is_dropped},
    {"server_restart_keeps_data", test_restart_keeps_data},
    {"server_junk_namespaces_create_nothing", test_junk_namespaces_create_nothing},
    {"server_idle_namespaces_close", test_idle_namespaces_close},
    {"server_disk_full_answers_507_and_heals",
     test_disk_full_answers_507_and_heals},
    {"server_download_header_injection", test_download_header_injection},
    {"server_stop_with_an_answer_pending", test_stop_with_an_answer_pending},
    {NULL, NULL},
};
