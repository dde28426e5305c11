/*
 * internal.h - a registered trigger, shared by the engine (engine.c, loop
 * thread), its registration parser (registry.c) and its deliverer thread
 * (deliver.c). Internal to triggers/.
 */
#ifndef HEARTH_TRIGGERS_INTERNAL_H
#define HEARTH_TRIGGERS_INTERNAL_H

#include "common/histogram.h"
#include "common/map.h"
#include "triggers/event.h"
#include "triggers/post.h"
#include "triggers/spool.h"
#include "triggers/triggers.h"

#include <stdatomic.h>
#include <uv.h>

enum { HEARTH__FORMAT_CLOUDEVENT, HEARTH__FORMAT_WEBHOOK };

/* A trigger's queue on disk (DIR/NAME: its spool, and its dead letters in
 * DIR/NAME/dead), one per name however often the name is registered
 * again, so that no two spool objects ever write the same files (a commit
 * may still be writing a replaced trigger's events). Counted on the loop
 * thread; its spools are used by any thread (their own mutexes). */
typedef struct hearth__tqueue {
    hearth__map *open; /* the engine's open queues, where name keys it */
    char *name;
    int refs;
    hearth__spool *spool, *dead;
} hearth__tqueue;

/* queue.c: the queue of name in dir (opened, or the one open), counted. */
int hearth__tqueue_get(hearth__map *open, const char *dir,
                       const char *name, hearth__tqueue **out,
                       hearth_error_t *err);
void hearth__tqueue_put(hearth__tqueue *q);

typedef struct hearth__trigger {
    atomic_int refs; /* the engine's list, and each pending event */
    struct hearth__triggers *eng; /* set when started: its recorder */
    bool retired;    /* removed or replaced: its pending events go to the
                        trigger of its name now, if any */
    /* the registration (immutable once registered) */
    char *name;
    hearth__pattern ref, instance;
    int mask;         /* HEARTH__TRIGGER_* it fires for */
    const char *type; /* the CloudEvent type: ...ref.v1.written */
    int format;
    char *url;
    hearth__url to;
    char *secret; /* a webhook's HMAC key, or NULL */
    int max_attempts, timeout_ms, retry_min_ms, retry_max_ms;
    char *origin;
    json_t *spec; /* as registered, secret hidden */
    /* the queue (q's spools, borrowed for the deliverer) */
    hearth__tqueue *q;
    hearth__spool *spool, *dead;
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
    atomic_uint_fast64_t remote_waiting; /* the remote queue's, as last seen */
    hearth__histogram latency; /* from the write's application to the answer */
} hearth__trigger;

struct hearth__triggers {
    char *dir, *db_host, *location;
    hearth__trigger **v; /* registered; retired ones are gone from here */
    size_t n, cap;
    hearth__map queues; /* the open hearth__tqueues, by name */
    const hearth__triggers_remote *remote; /* a cluster's queue, or NULL */
    uint64_t next_id;
    /* the deliverers' attempts for the profiler, while recording */
    atomic_bool recording;
    uv_mutex_t rec_mu; /* guards rec and nrec */
    hearth__delivery *rec;
    size_t nrec;
};

/* admin.c: a deliverer's attempt, recorded when the profiler listens. */
void hearth__triggers_note_attempt(hearth__trigger *t, const char *body,
                                   size_t len, int status, uint64_t ns);

/* engine.c: the registered trigger called name (at its index), or NULL. */
hearth__trigger *hearth__triggers_find(hearth__triggers *e, const char *name,
                                       size_t *at);
/* The trigger an event of t goes to now: t, or, when t was replaced, the
 * new one of its name (NULL: removed). */
hearth__trigger *hearth__triggers_live(hearth__triggers *e, hearth__trigger *t);
/* Counts n events dropped (rc: why), reporting the first on stderr. */
void hearth__trigger_dropped(hearth__trigger *t, size_t n, int rc);

/* Events waiting for t's delivery: its spool's, and the remote's. */
uint64_t hearth__trigger_lag(hearth__trigger *t);

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
