/*
 * triggers.h - database triggers (README "Triggers"): registrations (a
 * path pattern with {wildcards}, an event type, a namespace pattern and an
 * HTTP endpoint), matched against every committed write of the server's
 * namespaces, and delivered at least once, in commit order per trigger,
 * from a durable spool per trigger (in a cluster, the keeper's remote
 * queue: hearth__triggers_remote, which keeps the dead letters too), by a
 * thread per trigger with retries and dead letters. The server's interface to the triggers/ layer.
 *
 * Threads: everything here runs on the server's loop thread, except the
 * deliverers (triggers/deliver.c), which own nothing but their trigger's
 * spool reader, dead-letter writer and counters.
 */
#ifndef HEARTH_TRIGGERS_TRIGGERS_H
#define HEARTH_TRIGGERS_TRIGGERS_H

#include "db/db.h"

#include <jansson.h>

typedef struct hearth__triggers hearth__triggers;

/* Where the events go and come from when they are not this node's alone
 * (a cluster node: README "Triggers"; server/keeper.h gives it). The
 * events are still built here, as each write is applied, in log order;
 * their durable queue is the remote's, and the deliverers take them from
 * it. NULL: the spools are the queues (one server). */
typedef struct hearth__triggers_remote {
    void *ctx;
    /* Loop, as a write is applied to db: its place in the namespace's log
     * when it is a record of the log, or 0 when it is this node's own
     * (its place is its commit's: committed). */
    uint64_t (*applying)(void *ctx, hearth_db_t *db);
    /* Loop, at a good commit of this node's own writes: their place. */
    uint64_t (*committed)(void *ctx, hearth_db_t *db);
    /* Loop, once the write at seq is committed: trigger's n events of it
     * (len bytes framed as hearth__spool_frame frames them), copied. true
     * when this node queued them (false: another does, or they were
     * dropped, which the remote reports). */
    bool (*put)(void *ctx, hearth_db_t *db, uint64_t seq, const char *trigger,
                const void *frames, size_t len, size_t n);
    /* Deliverer thread: trigger's next events (frames into out, replacing
     * what it held), waiting at most wait_ms: 0 with *batch to end with
     * done, 1 none now, < 0 the remote cannot be reached. *waiting: the
     * events the remote holds for the trigger, when it knows (else
     * unchanged). */
    int (*take)(void *ctx, const char *trigger, int wait_ms, void **batch,
                hearth__buf *out, uint64_t *waiting);
    /* Deliverer thread, between attempts at a batch: *waiting as take
     * says it. */
    void (*waiting)(void *ctx, const char *trigger, uint64_t *waiting);
    /* Deliverer thread: the batch was delivered (or dead-lettered), or,
     * delivered false, is given back to be taken again (stopping). */
    void (*done)(void *ctx, void *batch, bool delivered);
    /* The dead letters are the remote's too (every node's to list and
     * retry). bury, deliverer thread: the k-th event of batch (frame: its
     * frame there, len bytes) failed its last attempt; 0 once the remote
     * holds it durably (the batch may then be done), < 0 when it does
     * not. dead_count, any thread: the trigger's dead letters as last
     * known (false: not known yet; never blocks). dead_list and
     * dead_retry block on the remote (a worker thread, never the loop):
     * the trigger's letters, oldest first, at most max, their frames
     * appended to frames (*n of them); or all of them queued again for
     * delivery (*n), each out of the dead set once queued durably. */
    int (*bury)(void *ctx, void *batch, unsigned k, const void *frame,
                size_t len);
    bool (*dead_count)(void *ctx, const char *trigger, uint64_t *n);
    int (*dead_list)(void *ctx, const char *trigger, size_t max,
                     hearth__buf *frames, size_t *n);
    int (*dead_retry)(void *ctx, const char *trigger, size_t *n);
} hearth__triggers_remote;

typedef struct hearth__triggers_options {
    const char *dir;      /* spools, dead letters, the admin's registrations */
    const char *db_host;  /* the events' firebasedatabasehost */
    const char *location; /* the events' location ("us-central1") */
    const hearth__triggers_remote *remote; /* NULL on one server */
} hearth__triggers_options;

/* The triggers of a server (none registered yet), with the admin's
 * registrations kept in dir/admin.json registered again. Loop thread. */
int hearth__triggers_create(const hearth__triggers_options *o,
                         hearth__triggers **out, hearth_error_t *err);
/* Stops the deliverers (an event being delivered stays in its spool)
 * and syncs the spools; registrations and taps stay, so writes committed
 * afterwards are still spooled. */
void hearth__triggers_stop(hearth__triggers *t);
/* The remote queue the triggers were made with (NULL: one server's). */
const hearth__triggers_remote *hearth__triggers_remote_of(
    const hearth__triggers *t);
/* Frees everything (after every database it tapped is freed). */
void hearth__triggers_free(hearth__triggers *t);

/* Registers the triggers of a JSON document ({"triggers": [...]} or the
 * array alone; README "Triggers" lists the fields), each added or
 * replacing the one of its name; origin ("file", "functions", "admin")
 * is shown in listings, and the admin's are kept in dir/admin.json. All
 * or nothing: an invalid registration is HEARTH_EINVAL with err naming
 * it and what is wrong. With a remote (a cluster), the admin's are the
 * keeper's to keep, not dir/admin.json's. */
int hearth__triggers_register(hearth__triggers *t, const char *json,
                              size_t len, const char *origin,
                              hearth_error_t *err);
/* One registration (an object; its "name" may be left out: name). */
int hearth__triggers_register_one(hearth__triggers *t, const char *name,
                                  json_t *spec, const char *origin,
                                  hearth_error_t *err);
/* Whether spec would register as name (HEARTH_EINVAL with err naming
 * what is wrong), registering nothing. */
int hearth__triggers_check(const char *name, json_t *spec,
                           hearth_error_t *err);
/* Whether a trigger called name is registered. */
bool hearth__triggers_has(hearth__triggers *t, const char *name);
/* Removes a trigger (HEARTH_ENOTFOUND); its spool stays on disk, and a
 * registration of the same name later delivers what it holds. */
int hearth__triggers_remove(hearth__triggers *t, const char *name);

/* Taps a namespace's database: its committed writes fire the triggers
 * whose namespace pattern matches ns. */
void hearth__triggers_attach(hearth__triggers *t, const char *ns,
                             hearth_db_t *db);

/* GET /.settings/triggers: every trigger with its counters (new value). */
json_t *hearth__triggers_describe(hearth__triggers *t);
/* A trigger's dead letters, oldest first, at most max; NULL when there is
 * no such trigger. */
json_t *hearth__triggers_dead(hearth__triggers *t, const char *name,
                              size_t max);
/* Puts a trigger's dead letters back in its queue; how many in *n. */
int hearth__triggers_retry_dead(hearth__triggers *t, const char *name,
                                size_t *n);
/* With a remote (hearth__triggers_remote_of), the dead letters are the
 * remote's, and listing or retrying them blocks on it: the server calls
 * these on a worker thread instead of the two above (they touch nothing
 * of the registry; whether the trigger exists is the loop's to check).
 * The list: NULL with *rc when the remote failed. */
json_t *hearth__triggers_dead_remote(const hearth__triggers_remote *r,
                                     const char *name, size_t max, int *rc);
int hearth__triggers_retry_remote(const hearth__triggers_remote *r,
                                  const char *name, size_t *n);
/* One delivery attempt, for the profiler (GET /.profile). */
typedef struct hearth__delivery {
    char trigger[72];
    char ns[136];
    char path[512]; /* the event's location, cut at 511 bytes */
    int status;     /* the answer's HTTP status, or a negative error */
    uint64_t bytes, duration_ns;
} hearth__delivery;
/* Whether the deliverers record their attempts (for hearth__triggers_drain;
 * off, they pay one atomic load an attempt). Loop thread. */
void hearth__triggers_record(hearth__triggers *t, bool on);
/* Calls cb with each attempt recorded since the last call, oldest first
 * (at most 4,096 are kept between calls). Loop thread. */
void hearth__triggers_drain(hearth__triggers *t,
                            void (*cb)(void *ctx, const hearth__delivery *d),
                            void *ctx);

/* The triggers' lines of GET /.metrics. */
void hearth__triggers_metrics(hearth__triggers *t, hearth__buf *out);

#endif
