/*
 * metrics.h - the server's counters for GET /.metrics (Prometheus text
 * format 0.0.4). A counter is a name with its labels ("name{a=\"b\"}"),
 * kept in a table on the server's loop, found by hash: no lock, nothing
 * per request but a few lookups. Every label value comes from a closed
 * set (doors, methods, actions, statuses), so no client can add keys
 * without bound. The per-namespace series are not kept here: they are
 * the usage table's rows (usage.h), written beside these.
 */
#ifndef HEARTH_SERVER_METRICS_H
#define HEARTH_SERVER_METRICS_H

#include "common/histogram.h"
#include "common/internal.h"
#include "common/map.h"

typedef struct hearth__counter {
    char *key; /* name{labels} */
    uint64_t value;
} hearth__counter;

/* The counters one kind of operation (door, type, status, namespace,
 * flags: observe.c's tag) adds to, so that counting it again is a few
 * additions, not a key built and looked up per counter. */
#define HEARTH__METRICS_MEMO 64
#define HEARTH__MEMO_COUNTERS 3
typedef struct hearth__metrics_memo {
    char tag[128];
    size_t counters[HEARTH__MEMO_COUNTERS]; /* 1 + a counter's place; 0: none */
} hearth__metrics_memo;

typedef struct hearth__metrics {
    hearth__counter *counters; /* in the order they appeared */
    size_t n, cap;
    hearth__map index; /* key -> 1 + its counter's place */
    hearth__histogram request_seconds; /* every REST request's handling */
    hearth__metrics_memo memo[HEARTH__METRICS_MEMO];
} hearth__metrics;

void hearth__metrics_free(hearth__metrics *m);
/* Adds `by` to the counter `key` (made at 0 when new): 1 + its place in
 * m->counters (stable), or 0 when memory failed (the count is dropped:
 * metrics never fail a request). */
size_t hearth__metrics_add(hearth__metrics *m, const char *key, uint64_t by);
/* FNV-1a of a string: the counters' index, the memo's slots. */
uint64_t hearth__metrics_hash(const char *key);
/* Writes every counter, by name, with its # HELP and # TYPE lines. */
void hearth__metrics_write_counters(const hearth__metrics *m, hearth__buf *out);
/* Writes a histogram (seconds) named name. */
void hearth__metrics_write_histogram(hearth__buf *out, const char *name,
                                     const char *help,
                                     hearth__histogram *h);

#endif
