/* observe.c - each operation into the metrics, the access log (log.c)
 * and the profilers' streams (see observe.h). */
#include "server/observe.h"

#include "server/log.h"
#include "server/profile.h"

#include <http_parser.h>
#include <stdio.h>
#include <string.h>

/* ---- the metrics ---- */

/* The counters an operation adds to, in this order (0: none). Its
 * namespace's rows are usage.c's. */
enum { C_REQUESTS, C_WRITES, C_DENIALS };

/* Finds (making them) the counters of op's kind: the slow way, once per
 * kind of operation; the memo remembers them. */
static void find_counters(hearth__metrics *m, const hearth__op *op,
                          size_t at[HEARTH__MEMO_COUNTERS]) {
    char key[320];
    memset(at, 0, HEARTH__MEMO_COUNTERS * sizeof *at);
    snprintf(key, sizeof key,
             "hearth_requests_total{door=\"%s\",type=\"%s\",status=\"%s\"}",
             op->door, op->type, op->status);
    at[C_REQUESTS] = hearth__metrics_add(m, key, 0);
    if (op->write && strcmp(op->door, "realtime") != 0) {
        snprintf(key, sizeof key,
                 "hearth_writes_total{door=\"%s\",status=\"%s\"}", op->door,
                 op->status);
        at[C_WRITES] = hearth__metrics_add(m, key, 0);
    }
    if (op->denied) {
        snprintf(key, sizeof key, "hearth_rules_denials_total{door=\"%s\"}",
                 op->door);
        at[C_DENIALS] = hearth__metrics_add(m, key, 0);
    }
}

/* What tells kinds of operations apart: "door|type|status|flags". */
static size_t kind_tag(const hearth__op *op, char *tag, size_t cap) {
    const char *parts[] = {op->door, op->type, op->status};
    size_t n = 0;
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(parts); i++) {
        size_t len = strlen(parts[i]);
        if (n + len + 5 >= cap)
            return 0; /* too long to remember: the slow way */
        memcpy(tag + n, parts[i], len);
        n += len;
        tag[n++] = '|';
    }
    tag[n++] = (char)('0' + op->write + 2 * op->denied);
    tag[n] = '\0';
    return n;
}

static void count_op(hearth__metrics *m, const hearth__op *op) {
    char tag[sizeof m->memo[0].tag];
    size_t len = kind_tag(op, tag, sizeof tag);
    hearth__metrics_memo *slot =
        &m->memo[len ? hearth__metrics_hash(tag) % HEARTH__METRICS_MEMO : 0];
    size_t fresh[HEARTH__MEMO_COUNTERS];
    size_t *at = fresh;
    if (len && strcmp(slot->tag, tag) == 0) {
        at = slot->counters;
    } else {
        find_counters(m, op, fresh);
        if (len) { /* remembered, replacing what the slot held */
            memcpy(slot->tag, tag, len + 1);
            memcpy(slot->counters, fresh, sizeof fresh);
        }
    }
    for (size_t i = 0; i < HEARTH__MEMO_COUNTERS; i++)
        if (at[i])
            m->counters[at[i] - 1].value++;
}

void hearth__observe_realtime_write(hearth__server *srv, const char *status) {
    char key[128];
    snprintf(key, sizeof key,
             "hearth_writes_total{door=\"realtime\",status=\"%s\"}", status);
    hearth__metrics_add(&srv->metrics, key, 1);
}

void hearth__observe_realtime_denial(hearth__server *srv) {
    hearth__metrics_add(&srv->metrics,
                        "hearth_rules_denials_total{door=\"realtime\"}", 1);
}

bool hearth__observe_unindexed(const hearth__namespace *ns, const char *path,
                               const json_t *wire_q) {
    const char *child = json_string_value(json_object_get(wire_q, "i"));
    if (!child || child[0] == '.' || !path || strlen(path) >= 768)
        return false; /* no child order (".key", ".value", ".priority") */
    char copy[768];
    const char *keys[HEARTH_MAX_DEPTH];
    size_t n = 0;
    snprintf(copy, sizeof copy, "%s", path);
    for (char *save, *k = strtok_r(copy, "/", &save); k && n < HEARTH_MAX_DEPTH;
         k = strtok_r(NULL, "/", &save))
        keys[n++] = k;
    return !hearth__rules_indexed(ns->rules, keys, n, child);
}

/* ---- every operation ---- */

void hearth__observe_op(hearth__server *srv, const hearth__op *op) {
    count_op(&srv->metrics, op);
    if (srv->log_format != HEARTH_LOG_OFF)
        hearth__log_op(srv, op);
    if (!hearth__list_empty(&srv->profilers)) /* the one branch it costs when nobody profiles */
        hearth__profile_emit(srv, op);
}

static bool is_write(int method) {
    return method == HTTP_PUT || method == HTTP_POST || method == HTTP_PATCH ||
           method == HTTP_DELETE;
}

void hearth__observe_http(void *ctx, const hearth__http_record *r) {
    hearth__server *srv = ctx;
    char status[32];
    hearth__format_number(r->status, status); /* cheaper than snprintf */
    bool rest = strcmp(r->kind, "rest") == 0;
    hearth__op op = {
        .door = r->kind,
        .type = http_method_str((enum http_method)r->req->method),
        .ns = r->note->ns,
        .path = r->note->path,
        .status = status,
        .write = rest && is_write(r->req->method),
        .denied = r->status == 401,
        .unindexed = r->note->unindexed,
        .bytes_in = r->req->body_len,
        .bytes_out = r->bytes_out,
        .duration_ns = r->duration_ns,
    };
    if (rest)
        hearth__hist_observe(&srv->metrics.request_seconds, r->duration_ns);
    hearth__observe_op(srv, &op);
}
