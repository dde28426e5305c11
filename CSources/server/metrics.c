/* metrics.c - the server's counters and their Prometheus text (see
 * metrics.h). */
#include "server/metrics.h"

#include <string.h>

/* What each counter counts: written as # HELP. */
static const struct {
    const char *name, *help;
} HELP[] = {
    {"hearth_requests_total",
     "Requests answered, by door (rest, sse, websocket, realtime), method "
     "or action, and status."},
    {"hearth_writes_total", "Writes answered, by door and status."},
    {"hearth_rules_denials_total",
     "Requests the security rules refused, by door."},
    {"hearth_realtime_pushes_total",
     "Pushes sent to realtime listens, by how: built for that listen, or "
     "shared (the bytes built for another listen of the same change)."},
};

void hearth__metrics_free(hearth__metrics *m) {
    for (size_t i = 0; i < m->n; i++)
        hearth__free(m->counters[i].key);
    hearth__free(m->counters);
    hearth__map_free(&m->index);
    memset(m, 0, sizeof *m);
}

uint64_t hearth__metrics_hash(const char *key) {
    return hearth__fnv1a(HEARTH__FNV_SEED, key, strlen(key));
}

size_t hearth__metrics_add(hearth__metrics *m, const char *key, uint64_t by) {
    size_t at = (uintptr_t)hearth__map_get_str(&m->index, key);
    if (at) {
        m->counters[at - 1].value += by;
        return at;
    }
    hearth__counter *c = hearth__grow(m->counters, &m->cap, m->n + 1,
                                      sizeof *c);
    if (!c)
        return 0;
    m->counters = c;
    char *copy = hearth__strndup(key, strlen(key));
    /* The map's value is the counter's place + 1: the array moves as it
     * grows, the keys (each its own block) do not. */
    if (!copy ||
        hearth__map_put_str(&m->index, copy, (void *)(uintptr_t)(m->n + 1))) {
        hearth__free(copy);
        return 0;
    }
    m->counters[m->n] = (hearth__counter){copy, by};
    return ++m->n;
}

static size_t name_len(const char *key) { return strcspn(key, "{"); }

static bool same_name(const char *a, const char *b) {
    size_t n = name_len(a);
    return n == name_len(b) && strncmp(a, b, n) == 0;
}

void hearth__metrics_write_counters(const hearth__metrics *m, hearth__buf *out) {
    for (size_t h = 0; h < HEARTH__ARRAY_SIZE(HELP); h++) {
        const char *name = HELP[h].name;
        hearth__buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", name,
                           HELP[h].help, name);
        for (size_t i = 0; i < m->n; i++)
            if (same_name(m->counters[i].key, name))
                hearth__buf_printf(out, "%s %llu\n", m->counters[i].key,
                                   (unsigned long long)m->counters[i].value);
    }
}

void hearth__metrics_write_histogram(hearth__buf *out, const char *name,
                                     const char *help, hearth__histogram *h) {
    hearth__buf_printf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help,
                       name);
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= HEARTH__HIST_BUCKETS; i++) {
        cumulative += atomic_load_explicit(&h->counts[i], memory_order_relaxed);
        if (i < HEARTH__HIST_BUCKETS)
            hearth__buf_printf(out, "%s_bucket{le=\"%g\"} %llu\n", name,
                               (double)hearth__hist_bounds_us[i] / 1e6,
                               (unsigned long long)cumulative);
        else
            hearth__buf_printf(out, "%s_bucket{le=\"+Inf\"} %llu\n", name,
                               (unsigned long long)cumulative);
    }
    /* _count is the +Inf bucket as read here, so the two always agree
     * (the sum is read apart and may include an observation more). */
    hearth__buf_printf(out, "%s_sum %.9f\n%s_count %llu\n", name,
                       (double)atomic_load_explicit(&h->sum_ns,
                                                    memory_order_relaxed) / 1e9,
                       name, (unsigned long long)cumulative);
}
