/*
 * event.h - what a trigger fires for and what it sends: the locations a
 * write changed that match a trigger's pattern, and the event of each, as
 * a CloudEvent the function SDKs read (google.firebase.database.ref.v1.*)
 * or a plain webhook body. Pure functions of their arguments (any
 * thread). Internal to triggers/.
 */
#ifndef HEARTH_TRIGGERS_EVENT_H
#define HEARTH_TRIGGERS_EVENT_H

#include "triggers/pattern.h"
#include "tree/node.h"

/* Kinds of change, also the bits of a registration's event mask. */
enum {
    HEARTH__TRIGGER_CREATED = 1,
    HEARTH__TRIGGER_UPDATED = 2,
    HEARTH__TRIGGER_DELETED = 4,
    HEARTH__TRIGGER_WRITTEN = 7 /* any of them */
};

/* CREATED, UPDATED or DELETED from before to after; 0 when equal. */
int hearth__trigger_change_kind(const hearth_node_t *before,
                                const hearth_node_t *after);

/* Called with each location (its path "/a/b", "/" for the root) whose
 * data differs between the two roots and that the pattern matches, once
 * each, in path order; nodes borrowed for the call. Nonzero stops. */
typedef int (*hearth__location_cb)(void *ctx, const char *path,
                                   const hearth_node_t *before,
                                   const hearth_node_t *after);
/* The locations of one write (paths[0..n), old_root to new_root): a
 * written path at or below a location the pattern matches fires that
 * location (its first segments; with a trailing "**", the written path
 * itself); a path above one (a write at /a, pattern /a/{x}/b) fires
 * every matching location under it whose data changed. At most max
 * locations are reported; *more tells whether there were others.
 * HEARTH_ENOMEM, or the callback's nonzero. */
int hearth__trigger_locations(const hearth__pattern *p,
                              const hearth_node_t *old_root,
                              const hearth_node_t *new_root,
                              const hearth__path *const *paths, size_t n,
                              size_t max, bool *more, hearth__location_cb cb,
                              void *ctx);

/* One change as the event tells it. */
typedef struct hearth__trigger_change {
    const char *id;       /* unique per event, kept across retries */
    const char *ns;       /* the namespace: the event's instance */
    const char *path;     /* "/messages/m1" */
    const hearth_node_t *before, *after;
    bool judged;                /* false: the admin (or the server) wrote */
    const hearth_node_t *auth;  /* the writer's token claims, or NULL */
    int64_t time_ms;            /* when the write was applied */
} hearth__trigger_change;

/* The CloudEvent (structured mode, JSON) of c for event type `type` (the
 * full type, google.firebase.database.ref.v1.written...), with the
 * firebasedatabasehost and location attributes given. data is the value
 * before and delta the change: what, deep-merged into data with nulls
 * removing keys, gives the value after (the SDKs compute it so); NULL
 * when out of memory. Free with hearth__free. */
char *hearth__trigger_cloudevent(const hearth__trigger_change *c,
                                 const char *type, const char *db_host,
                                 const char *location, size_t *len);
/* A webhook's body: {"id", "time", "trigger", "event" (created, updated
 * or deleted), "namespace", "path", "params", "before", "after", "auth"}. */
char *hearth__trigger_webhook(const hearth__trigger_change *c,
                              const char *trigger, const hearth__pattern *p,
                              size_t *len);

#endif
