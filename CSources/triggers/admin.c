/* admin.c - what the admin and the metrics see of the triggers: the
 * list with counters, dead letters listed and queued again, /.metrics
 * (loop thread; the counters are the deliverers' atomics). */
#include "triggers/internal.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The dead letters kept for t: its spool's, and (a cluster) the remote's
 * as last known. */
static uint64_t dead_letters(hearth__trigger *t) {
    uint64_t n = hearth__spool_waiting(t->dead), remote = 0;
    const hearth__triggers_remote *r = t->eng ? t->eng->remote : NULL;
    if (r && r->dead_count(r->ctx, t->name, &remote))
        n += remote;
    return n;
}

json_t *hearth__triggers_describe(hearth__triggers *e) {
    json_t *list = json_array();
    for (size_t i = 0; list && i < e->n; i++) {
        hearth__trigger *t = e->v[i];
        json_t *spec = json_deep_copy(t->spec);
        uv_mutex_lock(&t->mu);
        json_t *err = t->last_error[0] ? json_string(t->last_error) : json_null();
        uv_mutex_unlock(&t->mu);
        json_t *stats = json_pack(
            "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "spooled",
            (json_int_t)atomic_load(&t->spooled), "delivered",
            (json_int_t)atomic_load(&t->delivered), "failed",
            (json_int_t)atomic_load(&t->failed), "retried",
            (json_int_t)atomic_load(&t->retried), "dead",
            (json_int_t)atomic_load(&t->dead_count), "dropped",
            (json_int_t)atomic_load(&t->dropped), "lag",
            (json_int_t)hearth__trigger_lag(t), "dead_letters",
            (json_int_t)dead_letters(t), "last_error", err);
        if (spec && stats) {
            json_object_set_new(spec, "origin", json_string(t->origin));
            json_object_set_new(spec, "stats", stats);
            json_array_append_new(list, spec);
        } else {
            json_decref(spec);
            json_decref(stats);
        }
    }
    return json_pack("{s:o}", "triggers", list);
}

static int list_one(void *ctx, const char *data, size_t len, uint64_t t) {
    (void)t;
    json_t *v = json_loadb(data, len, 0, NULL);
    json_array_append_new(ctx, v ? v : json_stringn(data, len));
    return 0;
}

json_t *hearth__triggers_dead(hearth__triggers *e, const char *name,
                              size_t max) {
    hearth__trigger *t = hearth__triggers_find(e, name, NULL);
    if (!t)
        return NULL;
    json_t *list = json_array();
    if (list)
        hearth__spool_list(t->dead, max, list_one, list);
    return list;
}

json_t *hearth__triggers_dead_remote(const hearth__triggers_remote *r,
                                     const char *name, size_t max, int *rc) {
    hearth__buf frames;
    hearth__buf_init(&frames);
    size_t n = 0;
    *rc = r->dead_list(r->ctx, name, max, &frames, &n);
    json_t *list = *rc ? NULL : json_array();
    size_t off = 0, len;
    const char *body;
    uint64_t made;
    while (list && hearth__spool_unframe(frames.data, frames.len, &off, &body,
                                         &len, &made) == 0)
        list_one(list, body, len, made);
    hearth__buf_free(&frames);
    if (!*rc && !list)
        *rc = HEARTH_ENOMEM;
    return list;
}

int hearth__triggers_retry_remote(const hearth__triggers_remote *r,
                                  const char *name, size_t *n) {
    *n = 0;
    return r->dead_retry(r->ctx, name, n);
}

int hearth__triggers_retry_dead(hearth__triggers *e, const char *name,
                                size_t *n) {
    hearth__trigger *t = hearth__triggers_find(e, name, NULL);
    *n = 0;
    if (!t)
        return HEARTH_ENOTFOUND;
    hearth__buf b;
    hearth__buf_init(&b);
    uint64_t made;
    int rc = 0;
    while (!rc && hearth__spool_peek(t->dead, &b, &made) == 0) {
        rc = hearth__spool_append(t->spool, b.data, b.len, made);
        if (!rc) {
            hearth__spool_advance(t->dead);
            atomic_fetch_add(&t->spooled, 1);
            (*n)++;
        }
    }
    hearth__buf_free(&b);
    if (*n)
        hearth__deliverer_kick(t);
    return rc;
}

/* ---- metrics ---- */

void hearth__triggers_metrics(hearth__triggers *e, hearth__buf *out) {
    static const struct {
        const char *name, *help, *type;
        size_t offset;
    } C[] = {
        {"hearth_trigger_events_total", "Events queued for delivery.",
         "counter", offsetof(hearth__trigger, spooled)},
        {"hearth_trigger_delivered_total", "Events their endpoint took (2xx).",
         "counter", offsetof(hearth__trigger, delivered)},
        {"hearth_trigger_failed_total",
         "Delivery attempts that failed (refused, timed out, not 2xx).",
         "counter", offsetof(hearth__trigger, failed)},
        {"hearth_trigger_retried_total", "Delivery attempts made again.",
         "counter", offsetof(hearth__trigger, retried)},
        {"hearth_trigger_dead_total",
         "Events kept aside as dead letters after their last attempt.",
         "counter", offsetof(hearth__trigger, dead_count)},
        {"hearth_trigger_dropped_total",
         "Events lost: the queue full, or no memory to build them.", "counter",
         offsetof(hearth__trigger, dropped)},
    };
    if (!e->n)
        return;
    for (size_t c = 0; c < sizeof C / sizeof *C; c++) {
        hearth__buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", C[c].name,
                           C[c].help, C[c].name, C[c].type);
        for (size_t i = 0; i < e->n; i++) {
            atomic_uint_fast64_t *v =
                (atomic_uint_fast64_t *)((char *)e->v[i] + C[c].offset);
            hearth__buf_printf(out, "%s{trigger=\"%s\"} %llu\n", C[c].name,
                               e->v[i]->name,
                               (unsigned long long)atomic_load(v));
        }
    }
    hearth__buf_adds(out, "# HELP hearth_trigger_lag Events waiting for "
                          "delivery.\n# TYPE hearth_trigger_lag gauge\n");
    for (size_t i = 0; i < e->n; i++)
        hearth__buf_printf(out, "hearth_trigger_lag{trigger=\"%s\"} %llu\n",
                           e->v[i]->name,
                           (unsigned long long)hearth__trigger_lag(e->v[i]));
    hearth__buf_adds(out, "# HELP hearth_trigger_dead_letters Dead letters "
                          "kept.\n# TYPE hearth_trigger_dead_letters gauge\n");
    for (size_t i = 0; i < e->n; i++)
        hearth__buf_printf(out,
                           "hearth_trigger_dead_letters{trigger=\"%s\"} %llu\n",
                           e->v[i]->name,
                           (unsigned long long)dead_letters(e->v[i]));
    hearth__buf_adds(out,
                     "# HELP hearth_trigger_delivery_seconds From a write "
                     "being applied to its endpoint's answer.\n# TYPE "
                     "hearth_trigger_delivery_seconds histogram\n");
    for (size_t i = 0; i < e->n; i++) {
        hearth__histogram *h = &e->v[i]->latency;
        uint64_t cum = 0;
        for (size_t b = 0; b <= HEARTH__HIST_BUCKETS; b++) {
            cum += atomic_load_explicit(&h->counts[b], memory_order_relaxed);
            if (b < HEARTH__HIST_BUCKETS)
                hearth__buf_printf(out,
                                   "hearth_trigger_delivery_seconds_bucket{"
                                   "trigger=\"%s\",le=\"%g\"} %llu\n",
                                   e->v[i]->name,
                                   (double)hearth__hist_bounds_us[b] / 1e6,
                                   (unsigned long long)cum);
            else
                hearth__buf_printf(out,
                                   "hearth_trigger_delivery_seconds_bucket{"
                                   "trigger=\"%s\",le=\"+Inf\"} %llu\n",
                                   e->v[i]->name, (unsigned long long)cum);
        }
        hearth__buf_printf(
            out,
            "hearth_trigger_delivery_seconds_sum{trigger=\"%s\"} %.9f\n"
            "hearth_trigger_delivery_seconds_count{trigger=\"%s\"} %llu\n",
            e->v[i]->name,
            (double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) / 1e9,
            e->v[i]->name, (unsigned long long)cum);
    }
}

/* ---- the profiler ---- */

#define RECORDED_MAX 4096

void hearth__triggers_record(hearth__triggers *e, bool on) {
    atomic_store(&e->recording, on);
}

/* A string member of a flat JSON object, copied into out (cut to fit). */
static void member_into(json_t *o, const char *key, char *out, size_t size) {
    const char *v = json_string_value(json_object_get(o, key));
    snprintf(out, size, "%s", v ? v : "");
}

void hearth__triggers_note_attempt(hearth__trigger *t, const char *body,
                                   size_t len, int status, uint64_t ns) {
    hearth__triggers *e = t->eng;
    if (!e || !atomic_load(&e->recording))
        return;
    hearth__delivery d = {.status = status, .bytes = len, .duration_ns = ns};
    snprintf(d.trigger, sizeof d.trigger, "%s", t->name);
    json_t *ev = json_loadb(body, len, 0, NULL); /* only while profiled */
    if (t->format == HEARTH__FORMAT_CLOUDEVENT) {
        member_into(ev, "instance", d.ns, sizeof d.ns);
        d.path[0] = '/';
        member_into(ev, "ref", d.path + 1, sizeof d.path - 1);
    } else {
        member_into(ev, "namespace", d.ns, sizeof d.ns);
        member_into(ev, "path", d.path, sizeof d.path);
    }
    json_decref(ev);
    uv_mutex_lock(&e->rec_mu);
    if (!e->rec)
        e->rec = hearth__malloc(RECORDED_MAX * sizeof *e->rec);
    if (e->rec && e->nrec < RECORDED_MAX)
        e->rec[e->nrec++] = d;
    uv_mutex_unlock(&e->rec_mu);
}

void hearth__triggers_drain(hearth__triggers *e,
                            void (*cb)(void *ctx, const hearth__delivery *d),
                            void *ctx) {
    hearth__delivery batch[16]; /* cb runs without the lock held */
    for (;;) {
        uv_mutex_lock(&e->rec_mu);
        size_t n = e->nrec < 16 ? e->nrec : 16;
        if (!n) {
            uv_mutex_unlock(&e->rec_mu);
            return;
        }
        memcpy(batch, e->rec, n * sizeof *batch);
        memmove(e->rec, e->rec + n, (e->nrec - n) * sizeof *e->rec);
        e->nrec -= n;
        uv_mutex_unlock(&e->rec_mu);
        for (size_t i = 0; i < n; i++)
            cb(ctx, &batch[i]);
        if (n < 16)
            return;
    }
}
