/* handle.h - the handle behind hearth_db_t: the cross-thread queue, the
 * loop that runs operations in order, and the raising discipline shared by
 * every backend (db/backend.h). Internal to db/.
 *
 * Threading: fields under `loop-owned` are touched only on the loop
 * thread. Other threads validate their arguments, then post an operation
 * to a mutex-protected queue and wake the loop with uv_async_send (which
 * coalesces). On the loop thread operations run at once, except while
 * events are being raised: then they wait in `deferred` and run right
 * after the batch, so callbacks may freely write, observe and remove
 * observers.
 */
#ifndef HEARTH_DB_HANDLE_H
#define HEARTH_DB_HANDLE_H

#include "db/backend.h"

#include <stdatomic.h>

struct hearth_db_s {
    uv_loop_t *loop;
    uv_loop_t own_loop;
    bool owns_loop;
    uv_thread_t thread;
    uv_thread_t loop_thread;
    uv_async_t wake;

    uv_mutex_t lock; /* guards: queue, closed, push_state */
    hearth__list queue; /* of hearth__db_op, by link */
    bool closed;
    hearth_push_id_state_t push_state;
    atomic_uint_fast64_t next_handle;
    /* The server's clock minus ours (a client's backend sets it): push
     * IDs made on any thread use the server's time, as the SDKs do. */
    atomic_int_fast64_t server_offset_ms;

    const hearth__db_backend *backend; /* set once at open */
    void *impl;                        /* the backend's state */

    /* loop-owned */
    hearth__event_queue events; /* backends queue, the handle raises */
    int raising;                /* > 0 while callbacks run */
    hearth__list deferred; /* of hearth__db_op, by link */
    hearth__reg **doomed; /* removed while raising: unlinked after */
    size_t ndoomed, doomed_cap;
    int close_waits; /* caller's loop: handles/work still to finish */
};

bool hearth__db_on_loop_thread(hearth_db_t *db);
/* Hands o to the loop: at once on the loop thread (after the current
 * batch of events when raising), else through the queue. On failure o is
 * freed (without callbacks) and a HEARTH_E* code returned. */
int hearth__db_submit(hearth_db_t *db, hearth__db_op *o);
/* The loop's wake-up: runs what other threads queued. */
void hearth__db_on_wake(uv_async_t *handle);
/* Raises the events queued on db->events. */
void hearth__db_raise(hearth_db_t *db);
/* Ends a registration; while raising, it is unlinked after the batch. */
void hearth__db_remove_reg(hearth_db_t *db, hearth__reg *reg);
/* One of close_waits has finished; the last frees db (db/open.c). */
void hearth__db_release(hearth_db_t *db);

#endif
