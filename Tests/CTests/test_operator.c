/* test_operator.c - what an operator watches, on a real server over real
 * sockets: GET /.metrics parsed by a strict Prometheus text parser with
 * counters that move with a known workload, the metrics port, and the
 * profiler's operations stream. */
#include "test.h"

#include "http_raw.h"

#include <jansson.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#define OWNER "-H 'Authorization: Bearer owner'"

static char dir[64];

/* A server (fsync always: the histogram counts) with a metrics port
 * from this session's range (22000-22999) when asked, trying a few in
 * case one is taken. */
static hearth_server_t *start_ops(bool metrics_port) {
    strcpy(dir, "/tmp/hearth-ops-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    hearth_server_config_t c = {.size = sizeof c, .host = "127.0.0.1",
                                .data_dir = dir,
                                .fsync_mode = HEARTH_FSYNC_ALWAYS};
    hearth_server_t *s = NULL;
    hearth_error_t err;
    int rc = -1;
    for (int attempt = 0; rc && attempt < 10; attempt++) {
        if (metrics_port)
            c.metrics_port = 22000 + (int)((getpid() + attempt * 97) % 1000);
        rc = hearth_server_start(&c, &s, &err);
    }
    if (rc)
        fprintf(stderr, "  server: %s\n", err.message);
    CHECK_INT(rc, 0);
    return s;
}

/* curl's stdout for a command line (after "curl -s "); free() it. */
static char *curl(const char *fmt, ...) {
    char args[16384], cmd[16500];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "curl -s --max-time 10 %s", args);
    FILE *p = popen(cmd, "r");
    size_t cap = 1 << 16, len = 0, n;
    char *out = malloc(cap);
    while ((n = fread(out + len, 1, cap - len - 1, p)) > 0)
        if ((len += n) + 1 == cap)
            out = realloc(out, cap *= 2);
    out[len] = '\0';
    pclose(p);
    return out;
}

/* ---- a strict parser of the Prometheus text format ---- */

typedef struct sample {
    char series[256]; /* name{labels} as written */
    double value;
} sample;

typedef struct exposition {
    sample *s;
    size_t n;
    char types[64][160]; /* "name type" declared */
    size_t ntypes;
} exposition;

static bool metric_name(const char **p, char *out, size_t cap) {
    const char *s = *p;
    size_t n = 0;
    if (!(isalpha((unsigned char)*s) || *s == '_' || *s == ':'))
        return false;
    while (isalnum((unsigned char)s[n]) || s[n] == '_' || s[n] == ':')
        n++;
    if (n >= cap)
        return false;
    memcpy(out, s, n);
    out[n] = '\0';
    *p = s + n;
    return true;
}

/* {a="b",c="d"}: label names and quoted values with \\ \" \n escapes. */
static bool labels(const char **p) {
    const char *s = *p;
    if (*s != '{')
        return true;
    s++;
    while (*s != '}') {
        char name[128];
        if (!metric_name(&s, name, sizeof name) || strchr(name, ':') ||
            *s++ != '=' || *s++ != '"')
            return false;
        while (*s != '"') {
            if (!*s || *s == '\n')
                return false;
            if (*s == '\\' && !strchr("\\\"n", *++s))
                return false;
            s++;
        }
        s++;
        if (*s == ',')
            s++;
        else if (*s != '}')
            return false;
    }
    *p = s + 1;
    return true;
}

/* The family a sample belongs to (a histogram's _bucket/_sum/_count). */
static const char *family_type(const exposition *e, const char *name) {
    for (size_t i = 0; i < e->ntypes; i++) {
        size_t n = strcspn(e->types[i], " ");
        if (strncmp(e->types[i], name, n) != 0)
            continue;
        const char *type = e->types[i] + n + 1;
        const char *rest = name + n;
        if (!*rest)
            return type;
        if (strcmp(type, "histogram") == 0 &&
            (!strcmp(rest, "_bucket") || !strcmp(rest, "_sum") ||
             !strcmp(rest, "_count")))
            return type;
    }
    return NULL;
}

/* Parses text or says which line is wrong (the test fails). */
static bool parse_exposition(const char *text, exposition *e) {
    memset(e, 0, sizeof *e);
    int line_no = 0;
    for (const char *line = text; *line;) {
        line_no++;
        const char *end = strchr(line, '\n');
        if (!end) {
            fprintf(stderr, "  line %d: no final newline\n", line_no);
            return false;
        }
        char buf[512];
        size_t len = (size_t)(end - line);
        CHECK(len < sizeof buf);
        memcpy(buf, line, len);
        buf[len] = '\0';
        line = end + 1;
        const char *p = buf;
        char name[128];
        if (strncmp(p, "# HELP ", 7) == 0) {
            p += 7;
            if (!metric_name(&p, name, sizeof name) || *p != ' ')
                goto bad;
            continue;
        }
        if (strncmp(p, "# TYPE ", 7) == 0) {
            p += 7;
            if (!metric_name(&p, name, sizeof name) || *p++ != ' ' ||
                (strcmp(p, "counter") && strcmp(p, "gauge") &&
                 strcmp(p, "histogram")))
                goto bad;
            for (size_t i = 0; i < e->ntypes; i++)
                if (strncmp(e->types[i], name, strlen(name)) == 0 &&
                    e->types[i][strlen(name)] == ' ')
                    goto bad; /* declared twice */
            snprintf(e->types[e->ntypes++], sizeof e->types[0], "%s %.16s", name, p);
            continue;
        }
        if (*p == '#')
            goto bad;
        const char *start = p;
        if (!metric_name(&p, name, sizeof name) || !labels(&p) || *p++ != ' ')
            goto bad;
        if (!family_type(e, name))
            goto bad; /* a sample before its TYPE */
        char *num_end;
        double v = strtod(p, &num_end);
        if (num_end == p || *num_end || isnan(v))
            goto bad;
        e->s = realloc(e->s, (e->n + 1) * sizeof *e->s);
        sample *s = &e->s[e->n++];
        size_t slen = (size_t)(p - 1 - start);
        CHECK(slen < sizeof s->series);
        memcpy(s->series, start, slen);
        s->series[slen] = '\0';
        s->value = v;
        for (size_t i = 0; i + 1 < e->n; i++)
            if (strcmp(e->s[i].series, s->series) == 0)
                goto bad; /* one series twice */
        continue;
    bad:
        fprintf(stderr, "  line %d is not Prometheus text: %s\n", line_no, buf);
        return false;
    }
    return true;
}

/* A series' value; -1 when absent. */
static double value_of(const exposition *e, const char *series) {
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->s[i].series, series) == 0)
            return e->s[i].value;
    return -1;
}

/* A histogram's buckets rise and its +Inf bucket is its _count. */
static void check_histogram(const exposition *e, const char *name) {
    char prefix[128], count[128], inf[160];
    snprintf(prefix, sizeof prefix, "%s_bucket{", name);
    snprintf(count, sizeof count, "%s_count", name);
    snprintf(inf, sizeof inf, "%s_bucket{le=\"+Inf\"}", name);
    double last = 0;
    int buckets = 0;
    for (size_t i = 0; i < e->n; i++)
        if (strncmp(e->s[i].series, prefix, strlen(prefix)) == 0) {
            CHECK(e->s[i].value >= last);
            last = e->s[i].value;
            buckets++;
        }
    CHECK(buckets > 2);
    CHECK(value_of(e, inf) == value_of(e, count));
}

static void scrape(int port, exposition *e) {
    char *text = curl(OWNER " http://127.0.0.1:%d/.metrics", port);
    bool ok = parse_exposition(text, e);
    CHECK(ok);
    free(text);
}

static double delta(const exposition *a, const exposition *b,
                    const char *series) {
    double before = value_of(a, series), after = value_of(b, series);
    return (before < 0 ? 0 : before) - (after < 0 ? 0 : after);
}

static void test_metrics_move_with_the_workload(void) {
    hearth_server_t *s = start_ops(true);
    int mport = hearth_server_metrics_port(s);
    int port = hearth_server_port(s);
    exposition before, after;
    scrape(port, &before);
    for (int i = 0; i < 3; i++)
        free(curl("-X PUT -d '{\"n\":%d}' http://127.0.0.1:%d/a.json", i, port));
    free(curl("http://127.0.0.1:%d/a.json", port));
    free(curl(OWNER " -X PUT -d '{\"rules\":{\".read\":true,\"locked\":"
              "{\".write\":false},\"open\":{\".write\":true}}}' "
              "http://127.0.0.1:%d/.settings/rules.json",
              port));
    free(curl("-X PUT -d 1 http://127.0.0.1:%d/locked.json", port));
    free(curl("-X PUT -d 1 http://127.0.0.1:%d/open.json?ns=other", port));
    scrape(port, &after);
    CHECK(delta(&after, &before,
                "hearth_requests_total{door=\"rest\",type=\"PUT\",status=\"200\"}") >= 4);
    CHECK(delta(&after, &before,
                "hearth_writes_total{door=\"rest\",status=\"200\"}") >= 4);
    CHECK_INT(delta(&after, &before,
                    "hearth_writes_total{door=\"rest\",status=\"401\"}"), 1);
    CHECK_INT(delta(&after, &before, "hearth_rules_denials_total{door=\"rest\"}"), 1);
    CHECK_INT(delta(&after, &before,
                    "hearth_requests_total{door=\"rest\",type=\"GET\",status=\"200\"}"),
              2); /* a.json, and the first scrape */
    CHECK_INT(delta(&after, &before,
                    "hearth_namespace_requests_total{namespace=\"other\",kind=\"write\"}"),
              1);
    CHECK(delta(&after, &before,
                "hearth_namespace_bytes_total{namespace=\"default\",direction=\"in\"}") >= 21);
    CHECK(delta(&after, &before, "hearth_bytes_received_total") > 200);
    CHECK(delta(&after, &before, "hearth_bytes_sent_total") > 200);
    CHECK(delta(&after, &before, "hearth_log_fsync_seconds_count") >= 4);
    CHECK(value_of(&after, "hearth_connections{kind=\"all\"}") >= 1);
    CHECK(value_of(&after, "hearth_snapshot_seconds_count") >= 0);
    check_histogram(&after, "hearth_log_fsync_seconds");
    check_histogram(&after, "hearth_request_seconds");
    check_histogram(&after, "hearth_snapshot_seconds");
    /* Only the admin reads them on the main port... */
    char *denied = curl("-o /dev/null -w '%%{http_code}' "
                        "http://127.0.0.1:%d/.metrics", port);
    CHECK_STR(denied, "401");
    free(denied);
    /* ...anyone on the metrics port, which is on loopback. */
    CHECK(mport >= 22000 && mport < 23000);
    char *open = curl("http://127.0.0.1:%d/metrics", mport);
    exposition e;
    CHECK(parse_exposition(open, &e));
    CHECK(value_of(&e, "hearth_writes_total{door=\"rest\",status=\"401\"}") >= 1);
    free(open);
    /* A metrics port in use fails the start of another server, naming it,
     * and leaves nothing behind (the leak check). */
    hearth_server_config_t twin = {.size = sizeof twin, .host = "127.0.0.1",
                                   .data_dir = dir, .metrics_port = mport};
    hearth_server_t *t = NULL;
    hearth_error_t err;
    CHECK_INT(hearth_server_start(&twin, &t, &err), HEARTH_EIO);
    char where[32];
    snprintf(where, sizeof where, "127.0.0.1:%d", mport);
    CHECK(strstr(err.message, where) != NULL);
    free(e.s);
    free(before.s);
    free(after.s);
    CHECK_INT(hearth_server_stop(s), 0);
    remove_tree(dir);
}

/* Namespaces past the bound share one set of counters. */
static void test_namespace_counters_are_bounded(void) {
    hearth_server_t *s = start_ops(false);
    int port = hearth_server_port(s);
    char args[8192] = "";
    for (int i = 0; i < 120; i++) {
        size_t n = strlen(args);
        snprintf(args + n, sizeof args - n,
                 " 'http://127.0.0.1:%d/x.json?ns=n%d'", port, i);
    }
    free(curl("-o /dev/null %s", args));
    exposition e;
    scrape(port, &e);
    int kinds = 0;
    for (size_t i = 0; i < e.n; i++)
        kinds += strncmp(e.s[i].series, "hearth_namespace_requests_total{", 32) == 0;
    CHECK(kinds <= 100 + 1);
    CHECK(value_of(&e, "hearth_namespace_requests_total{namespace=\"_other\","
                       "kind=\"read\"}") >= 20);
    free(e.s);
    CHECK_INT(hearth_server_stop(s), 0);
    remove_tree(dir);
}

/* ---- the profiler ---- */

static int count_lines_with(const char *text, const char *a, const char *b) {
    int n = 0;
    for (const char *line = text; line && *line; line = strchr(line, '\n')) {
        if (*line == '\n')
            line++;
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        if (len >= sizeof buf)
            continue;
        memcpy(buf, line, len);
        buf[len] = '\0';
        n += strstr(buf, a) && strstr(buf, b);
    }
    return n;
}

/* A socket reading the server's operations stream, past its head. */
static int open_profile(int port) {
    int fd = test_connect(port);
    const char *ask = "GET /.profile HTTP/1.1\r\nHost: x\r\n"
                      "Authorization: Bearer owner\r\n\r\n";
    CHECK(write(fd, ask, strlen(ask)) == (ssize_t)strlen(ask));
    char head[4096];
    bool closed;
    read_until(fd, head, sizeof head, 0, "\r\n\r\n", 5000, &closed);
    return fd;
}

static void test_profiler_streams_operations(void) {
    hearth_server_t *s = start_ops(false);
    int port = hearth_server_port(s);
    int fd = open_profile(port);
    for (int i = 0; i < 3; i++)
        free(curl("-X PUT -d '\"%d\"' http://127.0.0.1:%d/users/u%d/name.json",
                  i, port, i));
    free(curl("'http://127.0.0.1:%d/users.json?orderBy=\"$value\"&limitToFirst=1'",
              port));
    /* The barrier: its line comes after every line of the workload. */
    free(curl("http://127.0.0.1:%d/barrier.json", port));
    static char got[1 << 16];
    bool closed;
    read_until(fd, got, sizeof got, 0, "\"/barrier\"", 5000, &closed);
    CHECK_INT(count_lines_with(got, "\"type\":\"PUT\"", "\"path\":\"/users/u"), 3);
    CHECK_INT(count_lines_with(got, "\"write\":true", "\"bytes_in\":3,"), 3);
    CHECK_INT(count_lines_with(got, "\"path\":\"/users\"", "\"unindexed\":true"), 1);
    CHECK_INT(count_lines_with(got, "\"path\":\"/barrier\"", "\"ms\":"), 1);
    close(fd);
    /* Nobody profiles any more: the server goes on. */
    free(curl("http://127.0.0.1:%d/after.json", port));
    CHECK_INT(hearth_server_stop(s), 0);
    remove_tree(dir);
}

/* ---- the realtime door ---- */

/* A realtime client's query and write reach the profiler (the query
 * flagged unindexed: no .indexOn for its child) and the metrics. */
static void test_realtime_operations_observed(void) {
    hearth_server_t *s = start_ops(false);
    int port = hearth_server_port(s);
    int fd = open_profile(port);
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d?ns=default", port);
    hearth_db_t *db = test_db_open((hearth_db_config_t){.url = url});
    hearth_query_t *q;
    CHECK_INT(hearth_query_create(&q), 0);
    CHECK_INT(hearth_query_order_by_child(q, "age", NULL), 0);
    CHECK_INT(hearth_query_limit_to_first(q, 1, NULL), 0);
    hearth_node_t *got = NULL;
    CHECK_INT(hearth_db_get(db, "/people", q, &got, NULL), 0);
    hearth_node_decref(got);
    hearth_query_free(q);
    /* The write's acknowledgement is the barrier: its line went first. */
    CHECK_INT(set_and_wait(db, "/people/ada", "{\"age\":36}"), 0);
    static char seen[1 << 16];
    bool closed;
    read_until(fd, seen, sizeof seen, 0, "\"type\":\"p\"", 5000, &closed);
    CHECK_INT(count_lines_with(seen, "\"door\":\"realtime\"", "\"path\":\"/people/ada\""), 1);
    CHECK_INT(count_lines_with(seen, "\"path\":\"/people\"", "\"unindexed\":true"), 1);
    exposition e;
    scrape(port, &e);
    CHECK_INT(value_of(&e, "hearth_writes_total{door=\"realtime\",status=\"ok\"}"), 1);
    CHECK_INT(value_of(&e, "hearth_requests_total{door=\"realtime\",type=\"p\",status=\"handled\"}"), 1);
    CHECK_INT(value_of(&e, "hearth_connections{kind=\"websocket\"}"), 1);
    CHECK_INT(value_of(&e, "hearth_requests_total{door=\"websocket\",type=\"GET\",status=\"101\"}"), 1);
    free(e.s);
    CHECK_INT(hearth_db_close(db), 0);
    close(fd);
    CHECK_INT(hearth_server_stop(s), 0);
    remove_tree(dir);
}

/* ---- logs ---- */

/* --log-format json: every line on stderr is a JSON object; the access
 * lines name the request, the events the server's start and stop. */
static void test_json_logs(void) {
    strcpy(dir, "/tmp/hearth-ops-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    char log_path[128];
    snprintf(log_path, sizeof log_path, "%s.log", dir);
    int saved = test_capture_stderr(log_path);
    char rules[128];
    snprintf(rules, sizeof rules, "%s.rules", dir);
    FILE *r = fopen(rules, "w");
    fputs("{\"rules\": {\".read\": true, \".write\": true}}", r);
    fclose(r);
    hearth_server_config_t c = {.size = sizeof c, .host = "127.0.0.1",
                                .data_dir = dir, .fsync_mode = HEARTH_FSYNC_OFF,
                                .rules_file = rules,
                                .log_format = HEARTH_LOG_JSON};
    hearth_server_t *s = NULL;
    CHECK_INT(hearth_server_start(&c, &s, NULL), 0);
    int port = hearth_server_port(s);
    free(curl("-X PUT -d '\"hi there\"' 'http://127.0.0.1:%d/a%%20b.json'", port));
    /* A rules file reloaded is an event among the JSON lines too (it was
     * a plain "hearth: ..." line). */
    r = fopen(rules, "w");
    fputs("{\"rules\": {\".read\": true, \".write\": false}} ", r);
    fclose(r);
    bool reloaded = false;
    for (int waited = 0; !reloaded && waited < 5000; waited += 20) {
        size_t n;
        char *sofar = read_file(log_path, &n);
        reloaded = sofar && strstr(sofar, "\"rules_reload\"");
        free(sofar);
        usleep(20000);
    }
    CHECK(reloaded);
    CHECK_INT(hearth_server_stop(s), 0); /* the barrier: every line is out */
    unlink(rules);
    test_restore_stderr(saved);
    size_t len;
    char *text = read_file(log_path, &len);
    int access = 0, events = 0, lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        lines++;
        json_error_t jerr;
        json_t *j = json_loads(line, 0, &jerr);
        CHECK(json_is_object(j));
        const char *kind = json_string_value(json_object_get(j, "log"));
        if (kind && !strcmp(kind, "access")) {
            access++;
            CHECK_STR(json_string_value(json_object_get(j, "path")), "/a b");
            CHECK_STR(json_string_value(json_object_get(j, "type")), "PUT");
            CHECK_STR(json_string_value(json_object_get(j, "status")), "200");
            CHECK_INT(json_integer_value(json_object_get(j, "bytes_in")), 10);
        } else if (kind && !strcmp(kind, "event")) {
            events++;
        }
        json_decref(j);
    }
    CHECK_INT(access, 1);
    CHECK_INT(events, 3); /* start, rules_reload, stop */
    CHECK_INT(lines, 4);
    free(text);
    unlink(log_path);
    remove_tree(dir);
}

const test_case operator_tests[] = {
    {"operator_json_logs", test_json_logs},
    {"operator_realtime_operations_observed", test_realtime_operations_observed},
    {"operator_metrics_move_with_the_workload", test_metrics_move_with_the_workload},
    {"operator_namespace_counters_are_bounded", test_namespace_counters_are_bounded},
    {"operator_profiler_streams_operations", test_profiler_streams_operations},
    {NULL, NULL},
};
