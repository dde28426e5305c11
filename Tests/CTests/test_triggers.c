/* test_triggers.c - database triggers: path patterns, the locations a
 * write fires, the events built for them (CloudEvents as the function
 * SDKs read them, webhooks), the durable spool, and delivery from a real
 * server to a real HTTP receiver on a socket. */
#include "test.h"

#include "common/internal.h"
#include "path/path.h"
#include "triggers/event.h"
#include "triggers/spool.h"

#include <jansson.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- patterns ---- */

static void test_pattern_parse(void) {
    hearth__pattern p;
    hearth_error_t err;
    CHECK_INT(hearth__pattern_parse("/messages/{id}/original", &p, &err), 0);
    CHECK_INT(p.n, 3);
    CHECK_STR(p.source, "messages/{id}/original");
    CHECK_INT(p.segs[0].kind, HEARTH__SEG_LITERAL);
    CHECK_INT(p.segs[1].kind, HEARTH__SEG_ONE);
    CHECK_STR(p.segs[1].capture, "id");
    CHECK(!p.rest);
    hearth__pattern_free(&p);

    CHECK_INT(hearth__pattern_parse("logs/{a=*}/{rest=**}", &p, &err), 0);
    CHECK(p.rest);
    CHECK_STR(p.segs[2].capture, "rest");
    hearth__pattern_free(&p);
    CHECK_INT(hearth__pattern_parse("/", &p, &err), 0);
    CHECK_INT(p.n, 0);
    hearth__pattern_free(&p);

    static const struct {
        const char *text, *says;
    } bad[] = {
        {"a//b", "an empty segment"},
        {"a/{id/b", "without its '}'"},
        {"a/{i-d}", "letters, digits and '_'"},
        {"a/{id=x}", "{name}, {name=*} or {name=**}"},
        {"a/**/b", "may only end it"},
        {"a/b{id}", "enclose a whole segment"},
        {"a/b.c", "b.c"},
        {"a/x**y", "stands alone"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        CHECK_INT(hearth__pattern_parse(bad[i].text, &p, &err), HEARTH_EINVAL);
        if (!strstr(err.message, bad[i].says))
            fprintf(stderr, "  pattern %s: \"%s\" lacks \"%s\"\n", bad[i].text,
                    err.message, bad[i].says);
        CHECK(strstr(err.message, bad[i].says) != NULL);
    }
}

static void test_pattern_match(void) {
    hearth__pattern p, inst;
    CHECK_INT(hearth__pattern_parse("users/{uid}/posts/*", &p, NULL), 0);
    hearth__path a, b, c;
    CHECK_INT(hearth__path_parse("/users/ada/posts/p1", 0, &a, NULL), 0);
    CHECK_INT(hearth__path_parse("/users/ada/posts", 0, &b, NULL), 0);
    CHECK_INT(hearth__path_parse("/users/ada/likes/p1", 0, &c, NULL), 0);
    CHECK(hearth__pattern_matches(&p, &a));
    CHECK(!hearth__pattern_matches(&p, &b));
    CHECK(!hearth__pattern_matches(&p, &c));
    CHECK(hearth__pattern_prefix_matches(&p, &b, 3));
    hearth__pattern_free(&p);

    CHECK_INT(hearth__pattern_parse("my-db-*", &inst, NULL), 0);
    CHECK(hearth__pattern_matches_name(&inst, "my-db-1"));
    CHECK(hearth__pattern_matches_name(&inst, "my-db-"));
    CHECK(!hearth__pattern_matches_name(&inst, "other"));
    hearth__pattern_free(&inst);
    CHECK_INT(hearth__pattern_parse("*", &inst, NULL), 0);
    CHECK(hearth__pattern_matches_name(&inst, "anything"));
    hearth__pattern_free(&inst);
    CHECK_INT(hearth__pattern_parse("a*b*c", &inst, NULL), 0);
    CHECK(hearth__pattern_matches_name(&inst, "axxbyyc"));
    CHECK(hearth__pattern_matches_name(&inst, "abc"));
    CHECK(!hearth__pattern_matches_name(&inst, "axxbyy"));
    hearth__pattern_free(&inst);
}

/* ---- locations ---- */

typedef struct seen {
    char text[2048];
} seen;

static int note(void *ctx, const char *path, const hearth_node_t *before,
                const hearth_node_t *after) {
    seen *s = ctx;
    char *b = hearth_node_to_json(before, 0, NULL);
    char *a = hearth_node_to_json(after, 0, NULL);
    size_t n = strlen(s->text);
    snprintf(s->text + n, sizeof s->text - n, "%s%s:%s>%s", n ? " " : "", path,
             b, a);
    hearth_free(b);
    hearth_free(a);
    return 0;
}

/* The locations pattern fires when the paths (comma-separated) of one
 * write turn old into new. */
static void locations(const char *pattern, const char *old_json,
                      const char *new_json, const char *paths_csv,
                      const char *expected) {
    hearth__pattern p;
    CHECK_INT(hearth__pattern_parse(pattern, &p, NULL), 0);
    hearth_node_t *old = node_from(old_json), *now = node_from(new_json);
    hearth__path parsed[8];
    const hearth__path *ptrs[8];
    char *texts[8];
    char copy[512];
    snprintf(copy, sizeof copy, "%s", paths_csv);
    size_t n = 0;
    for (char *save, *tok = strtok_r(copy, ",", &save); tok && n < 8;
         tok = strtok_r(NULL, ",", &save), n++) {
        char *keep = texts[n] = strdup(tok); /* the keys point into it */
        CHECK_INT(hearth__path_parse(keep, HEARTH__PATH_ALLOW_PRIORITY,
                                     &parsed[n], NULL), 0);
        ptrs[n] = &parsed[n];
    }
    seen s = {{0}};
    bool more = false;
    CHECK_INT(hearth__trigger_locations(&p, old, now, ptrs, n, 100, &more, note,
                                        &s),
              0);
    CHECK(!more);
    if (strcmp(s.text, expected))
        fprintf(stderr, "  %s after %s: got \"%s\"\n", pattern, paths_csv,
                s.text);
    CHECK_STR(s.text, expected);
    for (size_t i = 0; i < n; i++)
        free(texts[i]);
    hearth_node_decref(old);
    hearth_node_decref(now);
    hearth__pattern_free(&p);
}

static void test_locations(void) {
    /* at the location */
    locations("messages/{id}/original", "{}",
              "{\"messages\":{\"m1\":{\"original\":\"hi\"}}}",
              "/messages/m1/original", "/messages/m1/original:null>\"hi\"");
    /* below it: the location fires, with its whole values */
    locations("messages/{id}", "{\"messages\":{\"m1\":{\"a\":1}}}",
              "{\"messages\":{\"m1\":{\"a\":1,\"b\":2}}}", "/messages/m1/b",
              "/messages/m1:{\"a\":1}>{\"a\":1,\"b\":2}");
    /* above it: each changed location below, unchanged ones not */
    locations("a/{x}", "{\"a\":{\"p\":1,\"q\":2,\"r\":3}}",
              "{\"a\":{\"p\":1,\"q\":20,\"s\":4}}", "/a",
              "/a/q:2>20 /a/r:3>null /a/s:null>4");
    /* the example: a write at /a changing /a/b/c fires /a/{x} */
    locations("a/{x}", "{}", "{\"a\":{\"b\":{\"c\":1}}}", "/a/b/c",
              "/a/b:null>{\"c\":1}");
    /* a write that changes nothing fires nothing */
    locations("a/{x}", "{\"a\":{\"b\":1}}", "{\"a\":{\"b\":1}}", "/a/b", "");
    /* another branch fires nothing */
    locations("a/{x}", "{}", "{\"z\":{\"b\":1}}", "/z/b", "");
    /* a multi-path update: one event per location however many parts */
    locations("rooms/{r}", "{}",
              "{\"rooms\":{\"r1\":{\"a\":1,\"b\":2},\"r2\":{\"c\":3}}}",
              "/rooms/r1/a,/rooms/r1/b,/rooms/r2/c",
              "/rooms/r1:null>{\"a\":1,\"b\":2} /rooms/r2:null>{\"c\":3}");
    /* a literal after a wildcard, the write above both */
    locations("u/{id}/name", "{\"u\":{\"a\":{\"name\":\"x\",\"n\":1}}}",
              "{\"u\":{\"a\":{\"name\":\"y\",\"n\":2},\"b\":{\"n\":3}}}", "/u",
              "/u/a/name:\"x\">\"y\"");
    /* a trailing ** fires the written location itself */
    locations("logs/{day}/{rest=**}", "{}", "{\"logs\":{\"d1\":{\"x\":{\"y\":1}}}}",
              "/logs/d1/x/y", "/logs/d1/x/y:null>1");
    /* the root pattern */
    locations("/", "{\"a\":1}", "{\"a\":2}", "/a", "/:{\"a\":1}>{\"a\":2}");
    /* a priority write changes the location's value */
    locations("a/{x}", "{\"a\":{\"b\":1}}",
              "{\"a\":{\"b\":{\".value\":1,\".priority\":5}}}", "/a/b/.priority",
              "/a/b:1>1");
}

static void test_locations_bounded(void) {
    hearth__pattern p;
    CHECK_INT(hearth__pattern_parse("a/{x}", &p, NULL), 0);
    hearth_node_t *old = node_from("{}");
    hearth_node_t *now = node_from("{\"a\":{\"p\":1,\"q\":2,\"r\":3}}");
    hearth__path at;
    CHECK_INT(hearth__path_parse("/a", 0, &at, NULL), 0);
    const hearth__path *ptrs[] = {&at};
    seen s = {{0}};
    bool more = false;
    CHECK_INT(hearth__trigger_locations(&p, old, now, ptrs, 1, 2, &more, note,
                                        &s),
              0);
    CHECK(more);
    CHECK_STR(s.text, "/a/p:null>1 /a/q:null>2");
    hearth_node_decref(old);
    hearth_node_decref(now);
    hearth__pattern_free(&p);
}

/* ---- events ---- */

/* What the Python SDK does with data and delta: deep-merge delta into a
 * copy of data, then drop the null members (firebase_functions db_fn). */
static json_t *sdk_after(json_t *data, json_t *delta) {
    if (!json_is_object(data) || !json_is_object(delta))
        return json_incref(delta);
    json_t *out = json_deep_copy(data);
    const char *k;
    json_t *v;
    json_object_foreach(delta, k, v) {
        json_t *sub = json_is_object(v)
                          ? sdk_after(json_object_get(out, k)
                                          ? json_object_get(out, k)
                                          : json_object(),
                                      v)
                          : json_incref(v);
        if (json_is_null(sub)) {
            json_object_del(out, k);
            json_decref(sub);
        } else {
            json_object_set_new(out, k, sub);
        }
    }
    return out;
}

static json_t *cloudevent_at(const char *path, const char *before,
                             const char *after, bool judged, const char *auth) {
    hearth_node_t *b = node_from(before), *a = node_from(after);
    hearth_node_t *who = auth ? node_from(auth) : NULL;
    hearth__trigger_change c = {"ev-1", "chat", path, b, a,
                                judged, who, 1732723200123};
    size_t len = 0;
    char *text = hearth__trigger_cloudevent(
        &c, "google.firebase.database.ref.v1.written", "127.0.0.1:9000",
        "us-central1", &len);
    CHECK(text != NULL);
    json_t *ev = text ? json_loadb(text, len, 0, NULL) : NULL;
    CHECK(ev != NULL);
    hearth__free(text);
    hearth_node_decref(b);
    hearth_node_decref(a);
    hearth_node_decref(who);
    return ev;
}

static json_t *cloudevent(const char *before, const char *after, bool judged,
                          const char *auth) {
    return cloudevent_at("/messages/m1", before, after, judged, auth);
}

static void test_cloudevent(void) {
    json_t *ev = cloudevent("{\"text\":\"hi\",\"gone\":1,\"n\":{\"a\":1,\"b\":2}}",
                            "{\"text\":\"HI\",\"n\":{\"a\":1,\"c\":3}}", true,
                            "{\"uid\":\"ada\"}");
    CHECK_STR(json_string_value(json_object_get(ev, "specversion")), "1.0");
    CHECK_STR(json_string_value(json_object_get(ev, "id")), "ev-1");
    CHECK_STR(json_string_value(json_object_get(ev, "type")),
              "google.firebase.database.ref.v1.written");
    CHECK_STR(json_string_value(json_object_get(ev, "source")),
              "//firebasedatabase.googleapis.com/projects/_/locations/"
              "us-central1/instances/chat");
    CHECK_STR(json_string_value(json_object_get(ev, "subject")),
              "refs/messages/m1");
    CHECK_STR(json_string_value(json_object_get(ev, "time")),
              "2024-11-27T16:00:00.123Z");
    CHECK_STR(json_string_value(json_object_get(ev, "instance")), "chat");
    CHECK_STR(json_string_value(json_object_get(ev, "ref")), "messages/m1");
    CHECK_STR(json_string_value(json_object_get(ev, "firebasedatabasehost")),
              "127.0.0.1:9000");
    CHECK_STR(json_string_value(json_object_get(ev, "location")), "us-central1");
    CHECK_STR(json_string_value(json_object_get(ev, "authtype")), "app_user");
    CHECK_STR(json_string_value(json_object_get(ev, "authid")), "ada");
    json_t *data = json_object_get(ev, "data");
    CHECK_STR(json_string_value(json_object_get(data, "@type")),
              "type.googleapis.com/google.events.firebase.database.v1."
              "ReferenceEventData");
    char *delta = json_dumps(json_object_get(data, "delta"),
                             JSON_COMPACT | JSON_SORT_KEYS);
    CHECK_STR(delta, "{\"gone\":null,\"n\":{\"b\":null,\"c\":3},\"text\":\"HI\"}");
    free(delta);
    /* what the SDK computes from it is the value after */
    json_t *after = sdk_after(json_object_get(data, "data"),
                              json_object_get(data, "delta"));
    char *text = json_dumps(after, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK_STR(text, "{\"n\":{\"a\":1,\"c\":3},\"text\":\"HI\"}");
    free(text);
    json_decref(after);
    json_decref(ev);

    /* created: data null, delta the value; deleted: delta null */
    ev = cloudevent("null", "{\"a\":1}", false, NULL);
    data = json_object_get(ev, "data");
    CHECK(json_is_null(json_object_get(data, "data")));
    CHECK_INT(json_integer_value(
                  json_object_get(json_object_get(data, "delta"), "a")),
              1);
    CHECK_STR(json_string_value(json_object_get(ev, "authtype")), "admin");
    CHECK(json_object_get(ev, "authid") == NULL);
    json_decref(ev);
    ev = cloudevent("\"x\"", "null", true, NULL);
    data = json_object_get(ev, "data");
    CHECK_STR(json_string_value(json_object_get(data, "data")), "x");
    CHECK(json_is_null(json_object_get(data, "delta")));
    CHECK_STR(json_string_value(json_object_get(ev, "authtype")),
              "unauthenticated");
    json_decref(ev);

    /* keys may hold quotes, backslashes and any Unicode: escaped; an
     * array-like value goes whole (the SDKs merge only into objects) */
    ev = cloudevent_at("/q\"u\\o/\xc3\xa9", "{\"0\":\"a\",\"1\":\"b\"}",
                       "{\"0\":\"a\",\"1\":\"c\"}", true,
                       "{\"uid\":\"u\\\"1\"}");
    CHECK(ev != NULL);
    CHECK_STR(json_string_value(json_object_get(ev, "ref")), "q\"u\\o/\xc3\xa9");
    CHECK_STR(json_string_value(json_object_get(ev, "subject")),
              "refs/q\"u\\o/\xc3\xa9");
    CHECK_STR(json_string_value(json_object_get(ev, "authid")), "u\"1");
    data = json_object_get(ev, "data");
    CHECK(json_is_array(json_object_get(data, "data")));
    CHECK_STR(json_string_value(json_array_get(json_object_get(data, "delta"), 1)),
              "c");
    json_decref(ev);
}

static void test_webhook_body(void) {
    hearth__pattern p;
    CHECK_INT(hearth__pattern_parse("rooms/{room}/msgs/{rest=**}", &p, NULL), 0);
    hearth_node_t *b = node_from("null"), *a = node_from("{\"t\":1}");
    hearth__trigger_change c = {"id-9", "default", "/rooms/r1/msgs/x/y", b, a,
                                false, NULL, 0};
    size_t len;
    char *text = hearth__trigger_webhook(&c, "hook", &p, &len);
    json_t *v = json_loadb(text, len, 0, NULL);
    CHECK_STR(json_string_value(json_object_get(v, "event")), "created");
    CHECK_STR(json_string_value(json_object_get(v, "path")), "/rooms/r1/msgs/x/y");
    json_t *params = json_object_get(v, "params");
    CHECK_STR(json_string_value(json_object_get(params, "room")), "r1");
    CHECK_STR(json_string_value(json_object_get(params, "rest")), "x/y");
    CHECK_STR(json_string_value(json_object_get(json_object_get(v, "auth"), "type")),
              "admin");
    json_decref(v);
    hearth__free(text);
    hearth_node_decref(b);
    hearth_node_decref(a);
    hearth__pattern_free(&p);
}

/* ---- the spool ---- */

static void test_spool_durable(void) {
    char dir[] = "/tmp/hearth-spool-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char sdir[128];
    snprintf(sdir, sizeof sdir, "%s/s", dir);
    hearth__spool *s;
    CHECK_INT(hearth__spool_open(sdir, 1 << 20, &s, NULL), 0);
    hearth__buf b;
    hearth__buf_init(&b);
    uint64_t t;
    CHECK_INT(hearth__spool_peek(s, &b, &t), 1);
    CHECK_INT(hearth__spool_append(s, "one", 3, 11), 0);
    CHECK_INT(hearth__spool_append(s, "two", 3, 22), 0);
    CHECK_INT(hearth__spool_append(s, "three", 5, 33), 0);
    CHECK_INT(hearth__spool_peek(s, &b, &t), 0);
    CHECK_STR(b.data, "one");
    CHECK_INT(t, 11);
    hearth__spool_advance(s);
    CHECK_INT(hearth__spool_waiting(s), 2);
    hearth__spool_close(s);

    /* a torn record at the end (a crash mid-append) is cut at open */
    char seg[160];
    snprintf(seg, sizeof seg, "%s/seg.1", sdir);
    FILE *f = fopen(seg, "ab");
    CHECK(f != NULL);
    fwrite("\x40\0\0\0garbage", 1, 11, f);
    fclose(f);
    CHECK_INT(hearth__spool_open(sdir, 1 << 20, &s, NULL), 0);
    CHECK_INT(hearth__spool_waiting(s), 2);
    CHECK_INT(hearth__spool_peek(s, &b, &t), 0);
    CHECK_STR(b.data, "two"); /* the cursor survived */
    hearth__spool_advance(s);
    CHECK_INT(hearth__spool_append(s, "four", 4, 44), 0);
    CHECK_INT(hearth__spool_peek(s, &b, &t), 0);
    CHECK_STR(b.data, "three");
    hearth__spool_advance(s);
    CHECK_INT(hearth__spool_peek(s, &b, &t), 0);
    CHECK_STR(b.data, "four");
    CHECK_INT(t, 44);
    hearth__spool_advance(s);
    CHECK_INT(hearth__spool_peek(s, &b, &t), 1);
    /* bounded: past max_bytes an append is refused, nothing written */
    char big[600000];
    memset(big, 'x', sizeof big);
    CHECK_INT(hearth__spool_append(s, big, sizeof big, 1), 0);
    CHECK_INT(hearth__spool_append(s, big, sizeof big, 1), HEARTH_ETOOBIG);
    CHECK_INT(hearth__spool_waiting(s), 1);
    hearth__spool_close(s);
    hearth__buf_free(&b);
    remove_tree(dir);
}

static void test_spool_segments(void) {
    char dir[] = "/tmp/hearth-spool-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    hearth__spool *s;
    CHECK_INT(hearth__spool_open(dir, 1ull << 32, &s, NULL), 0);
    static char rec[100000];
    for (int i = 0; i < 100; i++) { /* 10 MB: three segments */
        snprintf(rec, sizeof rec, "record %d", i);
        CHECK_INT(hearth__spool_append(s, rec, sizeof rec, (uint64_t)i), 0);
    }
    char seg[160];
    snprintf(seg, sizeof seg, "%s/seg.3", dir);
    CHECK(access(seg, F_OK) == 0);
    hearth__buf b;
    hearth__buf_init(&b);
    uint64_t t;
    for (int i = 0; i < 100; i++) {
        CHECK_INT(hearth__spool_peek(s, &b, &t), 0);
        CHECK_INT(t, i);
        hearth__spool_advance(s);
    }
    CHECK_INT(hearth__spool_peek(s, &b, &t), 1);
    snprintf(seg, sizeof seg, "%s/seg.1", dir);
    CHECK(access(seg, F_OK) != 0); /* read segments are deleted */
    hearth__spool_close(s);
    hearth__buf_free(&b);
    remove_tree(dir);
}

/* ---- delivery from a real server to a real receiver ---- */

typedef struct receiver {
    int listen_fd, port;
    int fail_first; /* answer 503 to this many requests first */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int requests;
    char *bodies[64];
    char signatures[64][80];
    int nbodies;
    bool stop;
} receiver;

static void *receive(void *arg) {
    receiver *r = arg;
    for (;;) {
        struct pollfd p = {r->listen_fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) {
            pthread_mutex_lock(&r->mu);
            bool stop = r->stop;
            pthread_mutex_unlock(&r->mu);
            if (stop)
                return NULL;
            continue;
        }
        int fd = accept(r->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        char buf[65536];
        size_t len = 0;
        for (;;) { /* requests on this connection, one at a time */
            char *end = NULL;
            while (!(end = memmem(buf, len, "\r\n\r\n", 4))) {
                ssize_t n = read(fd, buf + len, sizeof buf - len - 1);
                if (n <= 0)
                    goto closed;
                len += (size_t)n;
            }
            buf[len] = '\0';
            const char *cl = strcasestr(buf, "Content-Length: ");
            size_t body_len = cl ? (size_t)atol(cl + 16) : 0;
            size_t head = (size_t)(end + 4 - buf);
            while (len < head + body_len) {
                ssize_t n = read(fd, buf + len, sizeof buf - len - 1);
                if (n <= 0)
                    goto closed;
                len += (size_t)n;
            }
            pthread_mutex_lock(&r->mu);
            bool ok = r->requests++ >= r->fail_first;
            if (ok && r->nbodies < 64) {
                const char *sig = strcasestr(buf, "X-Hearth-Signature: ");
                if (sig && sig < end)
                    snprintf(r->signatures[r->nbodies], 80, "%.*s",
                             (int)strcspn(sig + 20, "\r"), sig + 20);
                r->bodies[r->nbodies++] = strndup(buf + head, body_len);
            }
            pthread_cond_broadcast(&r->cond);
            pthread_mutex_unlock(&r->mu);
            const char *answer = ok ? "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
                                    : "HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy";
            if (write(fd, answer, strlen(answer)) < 0)
                break;
            memmove(buf, buf + head + body_len, len - head - body_len);
            len -= head + body_len;
        }
    closed:
        close(fd);
    }
}

static void receiver_start(receiver *r, int fail_first) {
    memset(r, 0, sizeof *r);
    r->fail_first = fail_first;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cond, NULL);
    r->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    CHECK(bind(r->listen_fd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(r->listen_fd, 16) == 0);
    getsockname(r->listen_fd, (struct sockaddr *)&a, &alen);
    r->port = ntohs(a.sin_port);
    pthread_create(&r->thread, NULL, receive, r);
}

/* Waits (at most 10 s) until n bodies arrived; false when they did not. */
static bool receiver_wait(receiver *r, int n) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&r->mu);
    while (r->nbodies < n &&
           pthread_cond_timedwait(&r->cond, &r->mu, &until) == 0) {
    }
    bool ok = r->nbodies >= n;
    pthread_mutex_unlock(&r->mu);
    return ok;
}

/* Waits (10 s at most) until a body's "after" is the number n: what a
 * count of bodies cannot tell when repeats are allowed. */
static bool receiver_wait_after(receiver *r, long long n) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&r->mu);
    bool seen = false;
    for (int i = 0;;) {
        for (; i < r->nbodies && !seen; i++) {
            json_t *v = json_loads(r->bodies[i], 0, NULL);
            json_t *after = json_object_get(v, "after");
            seen = json_is_integer(after) && json_integer_value(after) == n;
            json_decref(v);
        }
        if (seen || pthread_cond_timedwait(&r->cond, &r->mu, &until))
            break;
    }
    pthread_mutex_unlock(&r->mu);
    return seen;
}

static void receiver_stop(receiver *r) {
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    close(r->listen_fd);
    for (int i = 0; i < r->nbodies; i++)
        free(r->bodies[i]);
}

/* One admin request on a new connection; the status. */
static int admin_request(int port, const char *method, const char *target,
                         const char *body, char *answer, size_t size) {
    int fd = test_connect(port);
    char req[4096];
    int n = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: "
                     "Bearer owner\r\nContent-Length: %zu\r\nConnection: "
                     "close\r\n\r\n%s",
                     method, target, strlen(body), body);
    CHECK(write(fd, req, (size_t)n) == n);
    size_t len = 0;
    ssize_t got;
    while (len + 1 < size && (got = read(fd, answer + len, size - len - 1)) > 0)
        len += (size_t)got;
    answer[len] = '\0';
    close(fd);
    int status = 0;
    sscanf(answer, "HTTP/1.1 %d", &status);
    return status;
}

/* Asks target until its answer holds needle (10 s at most): the
 * deliverer counts an event once its answer is read, after the receiver
 * has it. */
static bool answer_holds(int port, const char *target, const char *needle,
                         char *answer, size_t size) {
    double until = test_seconds() + 10;
    do {
        admin_request(port, "GET", target, "", answer, size);
        if (strstr(answer, needle))
            return true;
        usleep(10000);
    } while (test_seconds() < until);
    fprintf(stderr, "  %s never held %s\n", target, needle);
    return false;
}

static void test_delivery_webhook_in_order(void) {
    receiver r;
    receiver_start(&r, 2); /* the first two attempts fail: retried */
    char json[512];
    snprintf(json, sizeof json,
             "{\"triggers\": [{\"name\": \"hook\", \"ref\": \"/rooms/{room}\", "
             "\"format\": \"webhook\", \"secret\": \"s3cret\", "
             "\"retry_min_ms\": 10, \"url\": \"http://127.0.0.1:%d/in\"}]}",
             r.port);
    char dir[] = "/tmp/hearth-trig-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    hearth_server_t *s =
        start_test_server(
        (hearth_server_config_t){.size = sizeof(hearth_server_config_t),
                                 .triggers_json = json},
        dir);
    int port = hearth_server_port(s);
    char answer[8192];
    for (int i = 0; i < 5; i++) {
        char body[64], target[64];
        snprintf(body, sizeof body, "{\"n\": %d}", i);
        snprintf(target, sizeof target, "/rooms/r%d.json", i % 2);
        CHECK_INT(admin_request(port, "PUT", target, body, answer, sizeof answer),
                  200);
    }
    CHECK(receiver_wait(&r, 5));
    pthread_mutex_lock(&r.mu);
    for (int i = 0; i < r.nbodies && i < 5; i++) { /* commit order */
        json_t *v = json_loads(r.bodies[i], 0, NULL);
        json_t *after = json_object_get(v, "after");
        CHECK_INT(json_integer_value(json_object_get(after, "n")), i);
        CHECK_STR(json_string_value(json_object_get(
                      json_object_get(v, "params"), "room")),
                  i % 2 ? "r1" : "r0");
        /* the signature is the body's HMAC-SHA256 under the secret */
        unsigned char mac[32];
        unsigned mlen = 0;
        HMAC(EVP_sha256(), "s3cret", 6, (const unsigned char *)r.bodies[i],
             strlen(r.bodies[i]), mac, &mlen);
        char hex[80] = "sha256=";
        for (unsigned k = 0; k < mlen; k++)
            sprintf(hex + 7 + 2 * k, "%02x", mac[k]);
        CHECK_STR(r.signatures[i], hex);
        json_decref(v);
    }
    CHECK_INT(r.requests, 7);
    pthread_mutex_unlock(&r.mu);
    CHECK(answer_holds(port, "/.metrics",
                       "hearth_trigger_delivered_total{trigger=\"hook\"} 5",
                       answer, sizeof answer));
    CHECK(strstr(answer, "hearth_trigger_retried_total{trigger=\"hook\"} 2"));
    CHECK(strstr(answer, "hearth_trigger_lag{trigger=\"hook\"} 0"));
    CHECK_INT(admin_request(port, "GET", "/.settings/triggers.json", "", answer,
                            sizeof answer),
              200);
    CHECK(strstr(answer, "\"delivered\":5") != NULL);
    CHECK(strstr(answer, "\"secret\":\"(hidden)\"") != NULL);
    CHECK_INT(hearth_server_stop(s), 0);
    receiver_stop(&r);
    remove_tree(dir);
}

static void test_dead_letters_and_admin(void) {
    receiver r;
    receiver_start(&r, 1000); /* refuses everything */
    char dir[] = "/tmp/hearth-trig-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    hearth_server_t *s = start_test_server((hearth_server_config_t){0}, dir);
    int port = hearth_server_port(s);
    char answer[16384], spec[512];
    /* bad registrations are refused, naming what is wrong */
    CHECK_INT(admin_request(port, "PUT", "/.settings/triggers/t1.json",
                            "{\"ref\": \"/a/{x\", \"url\": \"http://127.0.0.1:1/\"}",
                            answer, sizeof answer),
              400);
    CHECK(strstr(answer, "without its '}'") != NULL);
    CHECK_INT(admin_request(port, "PUT", "/.settings/triggers/t1.json",
                            "{\"ref\": \"/a\", \"url\": \"ftp://x/\"}", answer,
                            sizeof answer),
              400);
    CHECK(strstr(answer, "is not http:// or https://") != NULL);
    CHECK_INT(admin_request(port, "PUT", "/.settings/triggers/t1.json",
                            "{\"ref\": \"/a\", \"url\": \"http://x/\", \"colour\": 1}",
                            answer, sizeof answer),
              400);
    CHECK(strstr(answer, "unknown field \\\"colour\\\"") != NULL);
    snprintf(spec, sizeof spec,
             "{\"ref\": \"/jobs/{id}\", \"event\": \"created\", "
             "\"max_attempts\": 2, \"retry_min_ms\": 5, "
             "\"url\": \"http://127.0.0.1:%d/\"}",
             r.port);
    CHECK_INT(admin_request(port, "PUT", "/.settings/triggers/t1.json", spec,
                            answer, sizeof answer),
              200);
    CHECK_INT(admin_request(port, "PUT", "/jobs/j1.json", "{\"a\":1}", answer,
                            sizeof answer),
              200);
    /* an update is not a creation: nothing more is sent for it */
    CHECK_INT(admin_request(port, "PUT", "/jobs/j1.json", "{\"a\":2}", answer,
                            sizeof answer),
              200);
    CHECK_INT(admin_request(port, "PUT", "/jobs/j2.json", "{\"a\":3}", answer,
                            sizeof answer),
              200);
    /* a barrier: both creations dead-lettered after two attempts each */
    CHECK(answer_holds(port, "/.settings/triggers/t1/dead.json", "jobs/j2",
                       answer, sizeof answer));
    CHECK(strstr(answer, "jobs/j1") != NULL);
    CHECK(strstr(answer, "jobs/j2") != NULL);
    pthread_mutex_lock(&r.mu);
    CHECK_INT(r.requests, 4);
    r.fail_first = 0; /* the endpoint is fixed */
    pthread_mutex_unlock(&r.mu);
    CHECK_INT(admin_request(port, "POST", "/.settings/triggers/t1/retry.json",
                            "", answer, sizeof answer),
              200);
    CHECK(strstr(answer, "\"requeued\":2") != NULL);
    CHECK(receiver_wait(&r, 2));
    CHECK(strstr(r.bodies[0], "\"ref\":\"jobs/j1\"") != NULL);
    CHECK(strstr(r.bodies[1], "\"ref\":\"jobs/j2\"") != NULL);
    CHECK_INT(admin_request(port, "DELETE", "/.settings/triggers/t1.json", "",
                            answer, sizeof answer),
              200);
    CHECK_INT(admin_request(port, "DELETE", "/.settings/triggers/t1.json", "",
                            answer, sizeof answer),
              404);
    /* anyone but the admin is refused */
    int fd = test_connect(port);
    const char *anon = "GET /.settings/triggers.json HTTP/1.1\r\nHost: x\r\n"
                       "Connection: close\r\n\r\n";
    CHECK(write(fd, anon, strlen(anon)) == (ssize_t)strlen(anon));
    ssize_t n = read(fd, answer, sizeof answer - 1);
    answer[n > 0 ? n : 0] = '\0';
    close(fd);
    CHECK(strncmp(answer, "HTTP/1.1 401", 12) == 0);
    CHECK_INT(hearth_server_stop(s), 0);
    /* the admin's registrations survive a restart (t1 was removed) */
    s = start_test_server((hearth_server_config_t){0}, dir);
    CHECK_INT(admin_request(hearth_server_port(s), "GET",
                            "/.settings/triggers.json", "", answer,
                            sizeof answer),
              200);
    CHECK(strstr(answer, "\"triggers\":[]") != NULL);
    CHECK_INT(hearth_server_stop(s), 0);
    receiver_stop(&r);
    remove_tree(dir);
}

/* A trigger registered again while writes commit (with syncs: their
 * events go to the queue from the commit's thread) keeps one queue: every
 * event arrives once at least, in commit order. */
static void test_replaced_while_writing(void) {
    receiver r;
    receiver_start(&r, 0);
    char dir[] = "/tmp/hearth-trig-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    hearth_server_config_t c = {.size = sizeof c,
                                .host = "127.0.0.1",
                                .data_dir = dir,
                                .fsync_mode = HEARTH_FSYNC_ALWAYS};
    hearth_server_t *s = NULL;
    CHECK_INT(hearth_server_start(&c, &s, NULL), 0);
    int port = hearth_server_port(s);
    char spec[256], answer[8192];
    snprintf(spec, sizeof spec,
             "{\"ref\": \"/q/{id}\", \"format\": \"webhook\", "
             "\"url\": \"http://127.0.0.1:%d/\"}",
             r.port);
    CHECK_INT(admin_request(port, "PUT", "/.settings/triggers/q.json", spec,
                            answer, sizeof answer),
              200);
    for (int i = 0; i < 40; i++) {
        char target[64], body[32];
        snprintf(target, sizeof target, "/q/k%02d.json", i);
        snprintf(body, sizeof body, "%d", i);
        CHECK_INT(admin_request(port, "PUT", target, body, answer,
                                sizeof answer),
                  200);
        if (i % 10 == 5)
            CHECK_INT(admin_request(port, "PUT", "/.settings/triggers/q.json",
                                    spec, answer, sizeof answer),
                      200);
    }
    CHECK(receiver_wait_after(&r, 39)); /* repeats may come before it */
    pthread_mutex_lock(&r.mu);
    int next = 0;
    for (int i = 0; i < r.nbodies; i++) {
        json_t *v = json_loads(r.bodies[i], 0, NULL);
        int n = (int)json_integer_value(json_object_get(v, "after"));
        if (n == next)
            next++;
        else
            CHECK(n < next); /* a repeat of one delivered, never a skip */
        json_decref(v);
    }
    CHECK_INT(next, 40);
    pthread_mutex_unlock(&r.mu);
    CHECK_INT(hearth_server_stop(s), 0);
    receiver_stop(&r);
    remove_tree(dir);
}

/* While someone profiles, each delivery attempt is an operation of the
 * stream (door "trigger", the event's path, the answer's status). */
static void test_profiler_sees_deliveries(void) {
    receiver r;
    receiver_start(&r, 0);
    char json[256];
    snprintf(json, sizeof json,
             "{\"triggers\": [{\"name\": \"p\", \"ref\": \"/p/{id}\", "
             "\"url\": \"http://127.0.0.1:%d/\"}]}",
             r.port);
    char dir[] = "/tmp/hearth-trig-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    hearth_server_t *s = start_test_server(
        (hearth_server_config_t){.size = sizeof(hearth_server_config_t),
                                 .triggers_json = json},
        dir);
    int port = hearth_server_port(s);
    int fd = test_connect(port);
    const char *ask = "GET /.profile HTTP/1.1\r\nHost: x\r\n"
                      "Authorization: Bearer owner\r\n\r\n";
    CHECK(write(fd, ask, strlen(ask)) == (ssize_t)strlen(ask));
    /* Writes until one's delivery shows (recording starts within 0.1 s
     * of the stream): presence, so the loop is the barrier. */
    static char got[1 << 16];
    size_t len = 0;
    char answer[4096];
    const char *line = NULL;
    double until = test_seconds() + 10;
    for (int i = 0; !line && test_seconds() < until; i++) {
        char target[32];
        snprintf(target, sizeof target, "/p/k%d.json", i);
        admin_request(port, "PUT", target, "1", answer, sizeof answer);
        struct pollfd pf = {fd, POLLIN, 0};
        while (!line && poll(&pf, 1, 50) > 0 && len < sizeof got - 1) {
            ssize_t n = read(fd, got + len, sizeof got - 1 - len);
            if (n <= 0)
                break;
            len += (size_t)n;
            got[len] = '\0';
            line = strstr(got, "\"door\":\"trigger\"");
        }
    }
    CHECK(line != NULL);
    if (line) {
        const char *end = strchr(line, '\n');
        char one[512];
        snprintf(one, sizeof one, "%.*s", end ? (int)(end - line) : 200, line);
        CHECK(strstr(one, "\"type\":\"trigger\"") != NULL);
        CHECK(strstr(one, "\"ns\":\"default\"") != NULL);
        CHECK(strstr(one, "\"path\":\"/p/k") != NULL);
        CHECK(strstr(one, "\"status\":\"200\"") != NULL);
    }
    close(fd);
    CHECK_INT(hearth_server_stop(s), 0);
    receiver_stop(&r);
    remove_tree(dir);
}

static void test_bad_triggers_fail_start(void) {
    char dir[] = "/tmp/hearth-trig-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    hearth_server_config_t c = {.size = sizeof c,
                                .host = "127.0.0.1",
                                .data_dir = dir,
                                .triggers_json = "{\"triggers\": [{\"name\": "
                                                 "\"x\", \"ref\": \"/a\", "
                                                 "\"event\": \"changed\", "
                                                 "\"url\": \"http://h/\"}]}"};
    hearth_server_t *s = NULL;
    hearth_error_t err;
    CHECK_INT(hearth_server_start(&c, &s, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, "unknown event \"changed\"") != NULL);
    c.triggers_json = NULL;
    c.triggers_file = "/nonexistent/triggers.json";
    CHECK_INT(hearth_server_start(&c, &s, &err), HEARTH_EIO);
    CHECK(strstr(err.message, "/nonexistent/triggers.json") != NULL);
    /* the admin's registrations kept from before, damaged: named */
    c.triggers_file = NULL;
    char path[128];
    snprintf(path, sizeof path, "%s/.triggers", dir);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/.triggers/admin.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("{\"triggers\": [{\"name\": \"a\"", f);
    fclose(f);
    CHECK_INT(hearth_server_start(&c, &s, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, "admin.json: triggers: invalid JSON") != NULL);
    /* --no-triggers: nothing is registered, so nothing is read either */
    c.no_triggers = true;
    c.triggers_file = "/nonexistent/triggers.json";
    CHECK_INT(hearth_server_start(&c, &s, &err), 0);
    CHECK_INT(hearth_server_stop(s), 0);
    remove_tree(dir);
}

const test_case trigger_tests[] = {
    {"triggers_pattern_parse", test_pattern_parse},
    {"triggers_pattern_match", test_pattern_match},
    {"triggers_locations", test_locations},
    {"triggers_locations_bounded", test_locations_bounded},
    {"triggers_cloudevent", test_cloudevent},
    {"triggers_webhook_body", test_webhook_body},
    {"triggers_spool_durable", test_spool_durable},
    {"triggers_spool_segments", test_spool_segments},
    {"triggers_delivery_webhook_in_order", test_delivery_webhook_in_order},
    {"triggers_dead_letters_and_admin", test_dead_letters_and_admin},
    {"triggers_replaced_while_writing", test_replaced_while_writing},
    {"triggers_profiler_sees_deliveries", test_profiler_sees_deliveries},
    {"triggers_bad_triggers_fail_start", test_bad_triggers_fail_start},
    {NULL, NULL},
};
