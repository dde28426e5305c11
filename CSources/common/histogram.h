/*
 * histogram.h - latency histograms for the metrics: fixed buckets (in
 * seconds, as Prometheus counts them), observed from any thread with
 * relaxed atomics (a commit's fsync runs on libuv's pool), read whole at a
 * scrape. Observing costs a few atomic adds, no lock, no allocation.
 */
#ifndef HEARTH_COMMON_HISTOGRAM_H
#define HEARTH_COMMON_HISTOGRAM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Upper bounds, in microseconds: 100 us to 10 s, then +Inf. */
#define HEARTH__HIST_BUCKETS 14
extern const uint64_t hearth__hist_bounds_us[HEARTH__HIST_BUCKETS];

typedef struct hearth__histogram {
    /* counts[i]: observations <= bounds[i] and > bounds[i-1]; the last
     * one past every bound (made cumulative when written out). */
    atomic_uint_fast64_t counts[HEARTH__HIST_BUCKETS + 1];
    atomic_uint_fast64_t count, sum_ns;
} hearth__histogram;

void hearth__hist_observe(hearth__histogram *h, uint64_t ns);

/* The store's (store/store.c): each log fsync (fdatasync of a commit) and
 * each snapshot written, process-wide. */
extern hearth__histogram hearth__hist_log_fsync, hearth__hist_snapshot;

#endif
