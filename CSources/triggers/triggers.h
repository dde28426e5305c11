/*
 * triggers.h - database triggers (README "Triggers"): registrations (a
 * path pattern with {wildcards}, an event type, a namespace pattern and an
 * HTTP endpoint), matched against every committed write of the server's
 * namespaces, and delivered at least once, in commit order per trigger,
 * from a durable spool per trigger, by a thread per trigger with retries
 * and dead letters. The server's interface to the triggers/ layer.
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

typedef struct hearth__triggers_options {
    const char *dir;      /* spools, dead letters, the admin's registrations */
    const char *db_host;  /* the events' firebasedatabasehost */
    const char *location; /* the events' location ("us-central1") */
} hearth__triggers_options;

/* The triggers of a server (none registered yet), with the admin's
 * registrations kept in dir/admin.json registered again. Loop thread. */
int hearth__triggers_new(const hearth__triggers_options *o,
                         hearth__triggers **out, hearth_error_t *err);
/* Stops the deliverers (an event being delivered stays in its spool)
 * and syncs the spools; registrations and taps stay, so writes committed
 * afterwards are still spooled. */
void hearth__triggers_stop(hearth__triggers *t);
/* Frees everything (after every database it tapped is freed). */
void hearth__triggers_free(hearth__triggers *t);

/* Registers the triggers of a JSON document ({"triggers": [...]} or the
 * array alone; README "Triggers" lists the fields), each added or
 * replacing the one of its name; origin ("file", "functions", "admin")
 * is shown in listings, and the admin's are kept in dir/admin.json. All
 * or nothing: an invalid registration is HEARTH_EINVAL with err naming
 * it and what is wrong. */
int hearth__triggers_register(hearth__triggers *t, const char *json,
                              size_t len, const char *origin,
                              hearth_error_t *err);
/* One registration (an object; its "name" may be left out: name). */
int hearth__triggers_register_one(hearth__triggers *t, const char *name,
                                  json_t *spec, const char *origin,
                                  hearth_error_t *err);
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
