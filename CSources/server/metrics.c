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
    {"hearth_namespace_requests_total",
     "Requests per namespace, by kind (read, write, listen)."},
    {"hearth_namespace_bytes_total",
     "Request and answer bytes per namespace (bodies and realtime "
     "messages), by direction."},
};

void hearth__metrics_free(hearth__metrics *m) {
    for (size_t i = 0; i < m->n; i++)
        hearth__free(m->counters[i].key);
    for (size_t i = 0; i < m->nnamespaces; i++)
        hearth__free(m->namespaces[i]);
    hearth__free(m->counters);
    hearth__free(m->namespaces);
    memset(m, 0, sizeof *m);
}

void hearth__metrics_add(hearth__metrics *m, const char *key, uint64_t by) {
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->counters[i].key, key) == 0) {
            m->counters[i].value += by;
            return;
        }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        hearth__counter *c = hearth__realloc(m->counters, cap * sizeof *c);
        if (!c)
            return;
        m->counters = c;
        m->cap = cap;
    }
    char *copy = hearth__strndup(key, strlen(key));
    if (copy)
        m->counters[m->n++] = (hearth__counter){copy, by};
}

const char *hearth__metrics_ns(hearth__metrics *m, const char *ns) {
    for (size_t i = 0; i < m->nnamespaces; i++)
        if (strcmp(m->namespaces[i], ns) == 0)
            return m->namespaces[i];
    if (m->nnamespaces == HEARTH__METRICS_MAX_NAMESPACES)
        return "_other";
    char **more = hearth__realloc(m->namespaces,
                                  (m->nnamespaces + 1) * sizeof *more);
    if (!more)
        return "_other";
    m->namespaces = more;
    char *copy = hearth__strndup(ns, strlen(ns));
    if (!copy)
        return "_other";
    m->namespaces[m->nnamespaces++] = copy;
    return copy;
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
