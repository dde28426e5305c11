/* tick.h - the node's periodic work (cluster/tick.c): one timer, every
 * HEARTH__CLUSTER_TICK_MS, that calls each job's own periodic function;
 * each job decides from the tick's number what is due (a leases' round
 * each tick, renewals every second, a sweep every 2 s, a purge round
 * every retain_ticks). Internal to cluster/. */
#ifndef HEARTH_CLUSTER_TICK_H
#define HEARTH_CLUSTER_TICK_H

#include <stdint.h>
#include <uv.h>

typedef struct hearth__cluster hearth__cluster;

/* tick.c's state (written by tick.c alone). */
typedef struct hearth__cluster_periodic {
    uv_timer_t timer;
    uint64_t ticks; /* how many have run: the first is 1 */
} hearth__cluster_periodic;

/* Starts the timer (at start, once the link is up; the first tick runs
 * at once); stops it (a stop asked); closes its handle (the link's last
 * step), close_cb then running with the handle's data, c. */
void hearth__cluster_tick_start(hearth__cluster *c);
void hearth__cluster_tick_stop(hearth__cluster *c);
void hearth__cluster_tick_close(hearth__cluster *c, uv_close_cb close_cb);

#endif
