/* test_console.c - the data console's server side, over real sockets to a
 * real server: its embedded files (ETags, Content-Security-Policy, the
 * same bytes as console/), and the admin endpoints it uses: the rules
 * playground, the list of namespaces, the usage counters and the stream
 * tickets that stand for the admin's credential on its event stream. */
#include "test.h"

#include "http_raw.h"
#include "server_fixture.h"

#include "server/console.h"
#include "server/ticket.h"

#include <jansson.h>

#include <ctype.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* The server stopped and its data removed. */
static void finish(hearth_server_t *s) {
    stop(s);
    remove_tree(data_dir);
}

typedef struct answer {
    int status;
    char *head; /* status line and headers */
    char *body;
} answer;

/* One request on its own connection (Connection: close), read to EOF. */
static answer ask(int port, const char *method, const char *target,
                  const char *headers, const char *body) {
    int fd = test_connect(port);
    char *req = NULL;
    size_t blen = body ? strlen(body) : 0;
    int n = asprintf(&req,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Length: "
                     "%zu\r\nConnection: close\r\n\r\n%s",
                     method, target, headers ? headers : "", blen,
                     body ? body : "");
    send_all(fd, req, (size_t)n);
    free(req);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (ssize_t got; (got = read(fd, buf + len, cap - len - 1)) > 0;) {
        len += (size_t)got;
        if (cap - len < 4096)
            buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    close(fd);
    answer r = {0};
    sscanf(buf, "HTTP/1.1 %d", &r.status);
    char *end = strstr(buf, "\r\n\r\n");
    r.body = strdup(end ? end + 4 : "");
    if (end)
        *end = '\0';
    r.head = buf;
    return r;
}

static void answer_free(answer *r) {
    free(r->head);
    free(r->body);
}

/* Whether the head holds the header line `line` (without CRLF). */
static bool has_header(const answer *r, const char *line) {
    for (const char *at = r->head; (at = strstr(at, line)); at++)
        if (at > r->head + 1 && at[-1] == '\n' && at[-2] == '\r' &&
            (at[strlen(line)] == '\r' || at[strlen(line)] == '\0'))
            return true;
    return false;
}

#define CHECK_HEADER(r, line)                                                  \
    do {                                                                       \
        if (!has_header(&(r), line))                                           \
            CHECK_STR_AS((r).head, "the head", "... " line " ...");            \
    } while (0)

static void test_console_files(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    answer r = ask(port, "GET", "/.console/", NULL, NULL);
    CHECK_INT(r.status, 200);
    CHECK_HEADER(r, "Content-Type: text/html; charset=utf-8");
    CHECK_HEADER(r, "Cache-Control: no-cache");
    CHECK_HEADER(r, "X-Content-Type-Options: nosniff");
    CHECK_HEADER(r, "Referrer-Policy: no-referrer");
    const char *csp = strstr(r.head, "Content-Security-Policy: ");
    CHECK(csp && strstr(csp, "script-src 'self';") &&
          strstr(csp, "default-src 'none'") && !strstr(r.head, "unsafe"));
    CHECK(strstr(r.body, "<script") != NULL);
    const char *etag = strstr(r.head, "ETag: ");
    CHECK(etag != NULL);
    /* Asked again with its ETag: not modified, no body. */
    char cond[128];
    snprintf(cond, sizeof cond, "If-None-Match: %.*s\r\n",
             etag ? (int)strcspn(etag + 6, "\r") : 0, etag ? etag + 6 : "");
    answer again = ask(port, "GET", "/.console/index.html", cond, NULL);
    CHECK_INT(again.status, 304);
    CHECK_STR(again.body, "");
    answer_free(&again);
    answer_free(&r);
    /* /.console goes to /.console/ with its query (?auth=). */
    r = ask(port, "GET", "/.console?auth=owner", NULL, NULL);
    CHECK_INT(r.status, 301);
    CHECK_HEADER(r, "Location: /.console/?auth=owner");
    answer_free(&r);
    r = ask(port, "GET", "/.console/nothing.js", NULL, NULL);
    CHECK_INT(r.status, 404);
    answer_free(&r);
    r = ask(port, "PUT", "/.console/index.html", NULL, "x");
    CHECK_INT(r.status, 405);
    answer_free(&r);
    /* Data is never stored by the browser. */
    r = ask(port, "GET", "/a.json", NULL, NULL);
    CHECK_HEADER(r, "Cache-Control: no-store");
    answer_free(&r);
    finish(s);
}

/* The embedded files are console/'s bytes: a change there without
 * scripts/gen-console-assets.py fails here. */
static void test_console_assets_match_sources(void) {
    size_t embedded = 0;
    for (const hearth__console_asset *a = hearth__console_assets; a->name; a++) {
        char path[256];
        snprintf(path, sizeof path, "console/%s", a->name);
        size_t len = 0;
        char *data = read_file(path, &len);
        if (!data || len != a->len || memcmp(data, a->data, len))
            CHECK_STR_AS(a->name, "an embedded file",
                         "the same as console/ (run scripts/gen-console-assets.py)");
        free(data);
        embedded++;
    }
    size_t files = 0;
    DIR *d = opendir("console");
    CHECK(d != NULL);
    for (struct dirent *e; d && (e = readdir(d));)
        files += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK_INT(embedded, files);
    CHECK(embedded >= 3); /* index.html, console.js, console.css */
}

#define RULES                                                                  \
    "{\"rules\":{\"users\":{\"$uid\":{"                                        \
    "\".read\":\"auth != null && auth.uid == $uid\","                          \
    "\".write\":\"auth.uid == $uid\","                                         \
    "\"age\":{\".validate\":\"newData.isNumber()\"}}},"                        \
    "\"public\":{\".read\":true}}}"

/* The playground's answer to body, as compact JSON. */
static void expect_verdict(int port, const char *body, const char *expected) {
    answer r = ask(port, "POST", "/.settings/playground.json?ns=play", OWNER, body);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, expected);
    answer_free(&r);
}

static void test_playground_allow_deny_and_rule(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    answer r = ask(port, "PUT", "/.settings/rules.json?ns=play", OWNER, RULES);
    CHECK_INT(r.status, 200);
    answer_free(&r);
    r = ask(port, "PUT", "/users/ada.json?ns=play", OWNER, "{\"age\":36}");
    CHECK_INT(r.status, 200);
    answer_free(&r);
    const char *ada_rule = "{\"kind\":\".read\",\"path\":\"/users/$uid\","
                           "\"expression\":\"auth != null && auth.uid == $uid\"}";
    char expected[512];
    snprintf(expected, sizeof expected, "{\"allowed\":true,\"rule\":%s}", ada_rule);
    expect_verdict(port, "{\"op\":\"read\",\"path\":\"/users/ada\","
                         "\"auth\":{\"uid\":\"ada\"}}", expected);
    snprintf(expected, sizeof expected, "{\"allowed\":false,\"rule\":%s}", ada_rule);
    expect_verdict(port, "{\"op\":\"read\",\"path\":\"/users/ada\",\"auth\":null}",
                   expected);
    expect_verdict(port, "{\"op\":\"read\",\"path\":\"/public/x\"}",
                   "{\"allowed\":true,\"rule\":{\"kind\":\".read\",\"path\":"
                   "\"/public\",\"expression\":\"true\"}}");
    expect_verdict(port, "{\"op\":\"read\",\"path\":\"/secret\"}",
                   "{\"allowed\":false,\"rule\":null}");
    /* Writes: the granting .write, else the .validate that failed. */
    const char *ada_write = "{\"kind\":\".write\",\"path\":\"/users/$uid\","
                            "\"expression\":\"auth.uid == $uid\"}";
    snprintf(expected, sizeof expected, "{\"allowed\":true,\"rule\":%s}", ada_write);
    expect_verdict(port, "{\"op\":\"set\",\"path\":\"/users/ada/age\","
                         "\"auth\":{\"uid\":\"ada\"},\"data\":37}", expected);
    expect_verdict(port, "{\"op\":\"set\",\"path\":\"/users/ada/age\","
                         "\"auth\":{\"uid\":\"ada\"},\"data\":\"old\"}",
                   "{\"allowed\":false,\"rule\":{\"kind\":\".validate\",\"path\":"
                   "\"/users/$uid/age\",\"expression\":\"newData.isNumber()\"}}");
    snprintf(expected, sizeof expected, "{\"allowed\":false,\"rule\":%s}", ada_write);
    expect_verdict(port, "{\"op\":\"update\",\"path\":\"/users\","
                         "\"auth\":{\"uid\":\"bob\",\"token\":{\"admin\":true}},"
                         "\"data\":{\"ada/age\":1}}", expected);
    /* Nothing was written by the dry runs. */
    r = ask(port, "GET", "/users.json?ns=play", OWNER, NULL);
    CHECK_STR(r.body, "{\"ada\":{\"age\":36}}");
    answer_free(&r);
    finish(s);
}

static void expect_refusal(int port, const char *method, const char *headers,
                           const char *body, int status, const char *words) {
    answer r = ask(port, method, "/.settings/playground.json", headers, body);
    CHECK_INT(r.status, status);
    if (!strstr(r.body, words))
        CHECK_STR_AS(r.body, "the error", words);
    answer_free(&r);
}

static void test_playground_bad_input(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    const char *read = "{\"op\":\"read\",\"path\":\"/a\"}";
    expect_refusal(port, "POST", NULL, read, 401, "for the admin");
    expect_refusal(port, "POST", "Authorization: Bearer nobody\r\n", read, 401,
                   "invalid token");
    expect_refusal(port, "GET", OWNER, NULL, 405, "POST");
    expect_refusal(port, "POST", OWNER, "{not json", 400, "couldn't parse");
    expect_refusal(port, "POST", OWNER, "[1]", 400, "JSON object");
    expect_refusal(port, "POST", OWNER, "{\"path\":\"/a\"}", 400, "op must be");
    expect_refusal(port, "POST", OWNER, "{\"op\":\"delete\",\"path\":\"/a\"}", 400,
                   "op must be");
    expect_refusal(port, "POST", OWNER, "{\"op\":\"read\",\"path\":\"/a.b\"}", 400,
                   "path must be");
    expect_refusal(port, "POST", OWNER, "{\"op\":\"read\"}", 400, "path must be");
    expect_refusal(port, "POST", OWNER,
                   "{\"op\":\"read\",\"path\":\"/a\",\"auth\":\"ada\"}", 400,
                   "auth must be");
    expect_refusal(port, "POST", OWNER, "{\"op\":\"set\",\"path\":\"/a\"}", 400,
                   "data is required");
    expect_refusal(port, "POST", OWNER,
                   "{\"op\":\"set\",\"path\":\"/a\",\"data\":{\"a.b\":1}}", 400,
                   "data must be valid");
    expect_refusal(port, "POST", OWNER,
                   "{\"op\":\"update\",\"path\":\"/a\",\"data\":5}", 400,
                   "data of an update must be an object");
    expect_refusal(port, "POST", OWNER,
                   "{\"op\":\"update\",\"path\":\"/a\",\"data\":{\"x.y\":1}}",
                   400, "valid paths");
    answer r = ask(port, "GET", "/.settings/nothing.json", OWNER, NULL);
    CHECK_INT(r.status, 404);
    answer_free(&r);
    finish(s);
}

static void test_namespaces_listed_for_the_admin(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    answer r = ask(port, "PUT", "/x.json?ns=zeta", OWNER, "1");
    answer_free(&r);
    r = ask(port, "PUT", "/x.json?ns=alpha", OWNER, "1");
    answer_free(&r);
    r = ask(port, "GET", "/.settings/namespaces.json", OWNER, NULL);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "[\"alpha\",\"default\",\"zeta\"]");
    answer_free(&r);
    r = ask(port, "GET", "/.settings/namespaces.json", NULL, NULL);
    CHECK_INT(r.status, 401);
    answer_free(&r);
    finish(s);
}

static void test_usage_counts_per_namespace(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    answer r = ask(port, "PUT", "/x.json?ns=used", OWNER, "\"hello\"");
    answer_free(&r);
    for (int i = 0; i < 3; i++) {
        r = ask(port, "GET", "/x.json?ns=used", NULL, NULL);
        answer_free(&r);
    }
    r = ask(port, "GET", "/.settings/usage.json", OWNER, NULL);
    CHECK_INT(r.status, 200);
    json_t *u = json_loads(r.body, 0, NULL);
    json_t *row = json_object_get(u, "used");
    CHECK_INT(json_integer_value(json_object_get(row, "reads")), 3);
    CHECK_INT(json_integer_value(json_object_get(row, "writes")), 1);
    CHECK_INT(json_integer_value(json_object_get(row, "connections")), 0);
    /* Each GET's answer holds "hello" (7 bytes) and a head. */
    CHECK(json_integer_value(json_object_get(row, "bytes_out")) > 4 * 7 + 200);
    CHECK(json_integer_value(json_object_get(row, "bytes_in")) >= 7);
    CHECK(json_object_get(u, "default") == NULL);
    /* /.metrics shows the same row: one count, two views. */
    answer m = ask(port, "GET", "/.metrics", OWNER, NULL);
    CHECK_INT(m.status, 200);
    const struct { const char *series, *field; } same[] = {
        {"hearth_namespace_requests_total{namespace=\"used\",kind=\"read\"} ", "reads"},
        {"hearth_namespace_requests_total{namespace=\"used\",kind=\"write\"} ", "writes"},
        {"hearth_namespace_bytes_total{namespace=\"used\",direction=\"in\"} ", "bytes_in"}};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        const char *at = m.body ? strstr(m.body, same[i].series) : NULL;
        CHECK(at != NULL);
        if (at)
            CHECK_INT(strtoll(at + strlen(same[i].series), NULL, 10),
                      json_integer_value(json_object_get(row, same[i].field)));
    }
    answer_free(&m);
    json_decref(u);
    answer_free(&r);
    r = ask(port, "GET", "/.settings/usage.json", NULL, NULL);
    CHECK_INT(r.status, 401);
    answer_free(&r);
    finish(s);
}

/* ---- stream tickets ---- */


/* GET target as an event stream, read until its first event (a 200) or
 * its head (any other status); the stream is then closed. */
static answer ask_stream(int port, const char *target) {
    int fd = test_connect(port);
    struct timeval limit = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    char *req = NULL;
    int n = asprintf(&req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           "Accept: text/event-stream\r\n\r\n", target);
    send_all(fd, req, (size_t)n);
    free(req);
    char buf[8192];
    size_t len = 0;
    answer r = {0};
    for (ssize_t got; len < sizeof buf - 1 &&
                      (got = read(fd, buf + len, sizeof buf - 1 - len)) > 0;) {
        len += (size_t)got;
        buf[len] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (end && (sscanf(buf, "HTTP/1.1 %d", &r.status) != 1 ||
                    r.status != 200 || strstr(end + 4, "\n\n")))
            break;
    }
    buf[len] = '\0';
    close(fd);
    char *end = strstr(buf, "\r\n\r\n");
    r.body = strdup(end ? end + 4 : "");
    if (end)
        *end = '\0';
    r.head = strdup(buf);
    return r;
}

/* A ticket minted by the admin for path in namespace ns (asserting 200). */
static void mint(int port, const char *ns, const char *path,
                 char ticket[HEARTH__TICKET_TEXT]) {
    char target[128], body[160];
    snprintf(target, sizeof target, "/.settings/stream-ticket.json?ns=%s", ns);
    snprintf(body, sizeof body, "{\"path\": \"%s\"}", path);
    answer r = ask(port, "POST", target, ADMIN, body);
    CHECK_INT(r.status, 200);
    json_t *doc = json_loads(r.body, 0, NULL);
    const char *t = json_string_value(json_object_get(doc, "ticket"));
    CHECK(t && strlen(t) == HEARTH__TICKET_TEXT - 1);
    CHECK_INT(json_integer_value(json_object_get(doc, "expires_in_ms")),
              HEARTH__TICKET_TTL_MS);
    snprintf(ticket, HEARTH__TICKET_TEXT, "%s", t ? t : "");
    json_decref(doc);
    answer_free(&r);
}

/* The status of the stream at path?ns=ns&ticket=ticket. */
static int stream_status(int port, const char *path, const char *ns,
                         const char *ticket) {
    char target[160];
    snprintf(target, sizeof target, "%s.json?ns=%s&ticket=%s", path, ns, ticket);
    answer r = ask_stream(port, target);
    int status = r.status;
    answer_free(&r);
    return status;
}

/* With keys, the data is the admin's only: a ticket the admin minted opens
 * its one stream, once; not another path, namespace or kind of request,
 * and not without the admin's credential. */
static void test_stream_ticket_opens_one_stream_once(void) {
    hearth_server_t *s = start_with((hearth_server_config_t){
        .auth_secret = "a-signing-secret", .admin_secret = ADMIN_SECRET});
    int port = hearth_server_port(s);
    answer r = ask(port, "PUT", "/a/b.json?ns=t", ADMIN, "1");
    CHECK_INT(r.status, 200);
    answer_free(&r);
    r = ask_stream(port, "/a.json?ns=t");
    CHECK_INT(r.status, 401); /* locked without a credential */
    answer_free(&r);

    char ticket[HEARTH__TICKET_TEXT];
    mint(port, "t", "/a", ticket);
    char target[160];
    snprintf(target, sizeof target, "/a.json?ns=t&ticket=%s", ticket);
    r = ask_stream(port, target);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "event: put\ndata: {\"path\":\"/\",\"data\":{\"b\":1}}") != NULL);
    answer_free(&r);
    CHECK_INT(stream_status(port, "/a", "t", ticket), 401); /* used */

    mint(port, "t", "/a", ticket);
    CHECK_INT(stream_status(port, "/a/b", "t", ticket), 401); /* another path */
    CHECK_INT(stream_status(port, "/a", "t", ticket), 401);   /* and spent */
    mint(port, "t", "/a", ticket);
    CHECK_INT(stream_status(port, "/a", "u", ticket), 401); /* another namespace */
    mint(port, "t", "/a", ticket);
    snprintf(target, sizeof target, "/a.json?ns=t&ticket=%s", ticket);
    /* Neither a plain read nor a write, and neither spends it. */
    const struct {
        const char *method, *target, *headers, *body;
        int status;
    } asks[] = {
        {"GET", target, NULL, NULL, 401},
        {"PUT", target, NULL, "2", 401},
        /* Minting is the admin's, with POST, and names a valid path. */
        {"POST", "/.settings/stream-ticket.json?ns=t", NULL, "{\"path\": \"/a\"}", 401},
        {"POST", "/.settings/stream-ticket.json?ns=t", ADMIN, "{\"path\": \"/a.b\"}", 400},
        {"POST", "/.settings/stream-ticket.json?ns=t", ADMIN, "[]", 400},
        {"GET", "/.settings/stream-ticket.json?ns=t", ADMIN, NULL, 405},
    };
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        r = ask(port, asks[i].method, asks[i].target, asks[i].headers, asks[i].body);
        CHECK_INT(r.status, asks[i].status);
        answer_free(&r);
    }
    CHECK_INT(stream_status(port, "/a", "t", ticket), 200); /* still unspent */
    CHECK_INT(stream_status(port, "/a", "t", "00112233445566778899aabbccddeeff"), 401);
    finish(s);
}

/* The table itself, on a clock of the test's: a ticket lives
 * HEARTH__TICKET_TTL_MS, is spent by any use that names it, and minting
 * past the table's size forgets the oldest. */
static void test_stream_tickets_expire_and_are_spent(void) {
    static hearth__tickets t; /* zeroed: every slot free */
    char a[HEARTH__TICKET_TEXT], b[HEARTH__TICKET_TEXT];
    uint64_t now = 1000000;
    CHECK_INT(hearth__ticket_mint(&t, "ns", "/p", now, a), 0);
    CHECK(!hearth__ticket_redeem(&t, a, "ns", "/p", now + HEARTH__TICKET_TTL_MS));
    CHECK(!hearth__ticket_redeem(&t, a, "ns", "/p", now)); /* spent by the late use */
    CHECK_INT(hearth__ticket_mint(&t, "ns", "/p", now, a), 0);
    CHECK(hearth__ticket_redeem(&t, a, "ns", "/p", now + HEARTH__TICKET_TTL_MS - 1));
    CHECK(!hearth__ticket_redeem(&t, a, "ns", "/p", now));
    /* Upper-case hex is the same ticket; anything else is none. */
    CHECK_INT(hearth__ticket_mint(&t, "ns", "/p", now, a), 0);
    for (char *c = a; *c; c++)
        *c = (char)toupper((unsigned char)*c);
    CHECK(hearth__ticket_redeem(&t, a, "ns", "/p", now));
    CHECK(!hearth__ticket_redeem(&t, "", "ns", "/p", now));
    CHECK(!hearth__ticket_redeem(&t, "zz", "ns", "/p", now));
    /* Bound to both names: "n" + "s/p" is not "ns" + "/p". */
    CHECK_INT(hearth__ticket_mint(&t, "ns", "/p", now, a), 0);
    CHECK(!hearth__ticket_redeem(&t, a, "n", "s/p", now));
    /* A full table forgets the ticket closest to expiry. */
    CHECK_INT(hearth__ticket_mint(&t, "ns", "/first", now, a), 0);
    for (int i = 1; i < HEARTH__TICKETS; i++)
        CHECK_INT(hearth__ticket_mint(&t, "ns", "/other", now + (uint64_t)i, b), 0);
    CHECK_INT(hearth__ticket_mint(&t, "ns", "/last", now + 100, b), 0);
    CHECK(!hearth__ticket_redeem(&t, a, "ns", "/first", now + 100));
    CHECK(hearth__ticket_redeem(&t, b, "ns", "/last", now + 100));
}

const test_case console_tests[] = {
    {"console_stream_ticket_opens_one_stream_once",
     test_stream_ticket_opens_one_stream_once},
    {"console_stream_tickets_expire_and_are_spent",
     test_stream_tickets_expire_and_are_spent},
    {"console_files", test_console_files},
    {"console_assets_match_sources", test_console_assets_match_sources},
    {"console_playground_allow_deny_and_rule",
     test_playground_allow_deny_and_rule},
    {"console_playground_bad_input", test_playground_bad_input},
    {"console_namespaces_listed_for_the_admin",
     test_namespaces_listed_for_the_admin},
    {"console_usage_counts_per_namespace", test_usage_counts_per_namespace},
    {NULL, NULL},
};
