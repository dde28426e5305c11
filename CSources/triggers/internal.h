/*
 * internal.h - a registered trigger, shared by the engine (engine.c, loop
 * thread), its registration parser (registry.c) and its deliverer thread
 * (deliver.c). Internal to triggers/.
 */
#ifndef HEARTH_TRIGGERS_INTERNAL_H
#define HEARTH_TRIGGERS_INTERNAL_H

#include "common/histogram.h"
#include "triggers/event.h"
#include "triggers/post.h"
#include "triggers/spool.h"
#include "triggers/triggers.h"

#include <stdatomic.h>
#include <uv.h>

enum { HEARTH__FORMAT_CLOUDEVENT, HEARTH__FORMAT_WEBHOOK };

typedef struct hearth__trigger {
    atomic_int refs; /* the engine's list, and each pending event */
    bool retired;    /* removed or replaced: its pending events go to the
                        trigger of its name now, if any */
    /* the registration (immutable once registered) */
    char *name;
    hearth__pattern ref, instance;
    int mask;         /* HEARTH__TRIGGER_* it fires for */
    const char *type; /* the CloudEvent type: ...ref.v1.written */
    int format;
    char *url;
    hearth__endpoint to;
    char *secret; /* a webhook's HMAC key, or NULL */
    int max_attempts, timeout_ms, retry_min_ms, retry_max_ms;
    char *origin;
    json_t *spec; /* as registered, secret hidden */
    /* the queue */
    hearth__spool *spool, *dead;
    /* loop thread: a commit's events for this trigger, framed, written to
     * the spool in one write when the commit is settled */
    hearth__buf staged;
    size_t nstaged;
    /* the deliverer */
    uv_thread_t thread;
    bool running;
    uv_mutex_t mu; /* guards stop, kicked, idle, last_error */
    uv_cond_t cond;
    bool stop, kicked;
    bool idle; /* waiting for a kick (not sending, not backing off) */
    int stop_pipe[2];
    char last_error[256];
    atomic_uint_fast64_t spooled, delivered, failed, retried, dead_count,
        dropped, last_delivered_us;
    hearth__histogram latency; /* from the write's commit to the answer */
} hearth__trigger;

/* registry.c: a registration parsed into a new trigger (refs 1, no spool
 * or thread yet). HEARTH_EINVAL with err naming what is wrong. */
int hearth__trigger_parse(const char *name, json_t *spec, const char *origin,
                          hearth__trigger **out, hearth_error_t *err);
void hearth__trigger_release(hearth__trigger *t);

/* deliver.c: starts / stops (and joins) the trigger's deliverer. */
int hearth__deliverer_start(hearth__trigger *t);
void hearth__deliverer_stop(hearth__trigger *t);
/* Wakes the deliverer: its spool has something new (any thread). */
void hearth__deliverer_kick(hearth__trigger *t);

#endif
