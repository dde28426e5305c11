/* histogram.c - latency histograms (see histogram.h). */
#include "common/histogram.h"

const uint64_t hearth__hist_bounds_us[HEARTH__HIST_BUCKETS] = {
    100,    250,    500,     1000,    2500,    5000,    10000,
    25000,  50000,  100000,  250000,  1000000, 2500000, 10000000};

hearth__histogram hearth__hist_log_fsync, hearth__hist_snapshot;

void hearth__hist_observe(hearth__histogram *h, uint64_t ns) {
    size_t i = 0;
    while (i < HEARTH__HIST_BUCKETS && ns > hearth__hist_bounds_us[i] * 1000)
        i++;
    atomic_fetch_add_explicit(&h->counts[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}
