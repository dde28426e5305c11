/* open.c - opening and closing a database: the config checked, the
 * backend chosen (embedded, or remote on a URL), the loop (its own thread,
 * or the caller's) and the queue's wake-up made; at close, what is queued
 * is canceled and the handle freed once its loop lets go of it. */
#include "db/handle.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

/* The struct of version 0.2, the first with a size: what size 0 means. */
#define CONFIG_SIZE_0_2 HEARTH__END_OF(hearth_db_config_t, auth_variable)

/* What a config may not combine; 0 when it is coherent. */
static int check_config(const hearth_db_config_t *config,
                        hearth_error_t *err) {
    if (config->cache_dir && !config->url)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "a cache directory is for a database opened on "
                             "a URL (an embedded one keeps data_dir)");
    if (config->url && (config->rules || config->auth_variable))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "rules are for an embedded database "
                             "(a server applies its own)");
    if (config->url && config->data_dir)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "a database opened on a URL keeps no data "
                             "directory");
    return 0;
}

static void loop_main(void *arg) {
    hearth_db_t *db = arg;
    /* This thread writes to the servers' sockets (libuv's writev, which
     * takes no MSG_NOSIGNAL): a write to a server gone away raises SIGPIPE
     * here, which stays pending on this thread, blocked, instead of ending
     * the program. This thread's mask only, never the process's
     * disposition. (Darwin's sockets also get SO_NOSIGPIPE: net/ws_client.c.) */
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, NULL);
    uv_run(db->loop, UV_RUN_DEFAULT);
    hearth__thread_cleanup();
}

/* Frees what open made before the loop. */
static void free_handle(hearth_db_t *db) {
    hearth__events_clear(&db->events);
    db->backend->free(db);
    hearth__free(db->doomed);
    uv_mutex_destroy(&db->lock);
    hearth__free(db);
}

/* The loop, the wake-up and the backend's start; the loop's thread when
 * the database owns it. HEARTH_ELOOP when any cannot be had. */
static int start_loop(hearth_db_t *db, const hearth_db_config_t *config) {
    db->owns_loop = !config->loop;
    db->loop = db->owns_loop ? &db->own_loop : config->loop;
    if (db->owns_loop && uv_loop_init(db->loop))
        return HEARTH_ELOOP;
    if (uv_async_init(db->loop, &db->wake, hearth__db_on_wake)) {
        if (db->owns_loop)
            uv_loop_close(db->loop);
        return HEARTH_ELOOP;
    }
    db->wake.data = db;
    int rc = db->backend->start(db);
    if (!rc && db->owns_loop) {
        hearth__thread_prepare(); /* OpenSSL's exit cleanup after ours */
        rc = uv_thread_create(&db->thread, loop_main, db) ? HEARTH_ELOOP : 0;
        db->loop_thread = db->thread;
    } else if (!rc) {
        db->loop_thread = uv_thread_self();
    }
    if (!rc)
        return 0;
    db->backend->stop(db);
    uv_close((uv_handle_t *)&db->wake, NULL);
    uv_run(db->loop, UV_RUN_DEFAULT);
    if (db->owns_loop)
        uv_loop_close(db->loop);
    return HEARTH_ELOOP;
}

int hearth_db_open(const hearth_db_config_t *caller_config, hearth_db_t **out,
                   hearth_error_t *err) {
    return hearth__db_open_backend(NULL, caller_config, out, err);
}

int hearth__db_open_backend(const hearth__db_backend *backend,
                            const hearth_db_config_t *caller_config,
                            hearth_db_t **out, hearth_error_t *err) {
    if (!out)
        return hearth__error(err, HEARTH_EINVAL, NULL, "out is NULL");
    /* The caller's struct, of whatever version, as this library's. */
    hearth_db_config_t given;
    const hearth_db_config_t *config = &given;
    int rc = hearth__config_read(caller_config, CONFIG_SIZE_0_2, &given,
                                 sizeof given, "hearth_db_config_t", err);
    if (!rc)
        rc = check_config(config, err);
    if (rc)
        return rc;
    hearth_db_t *db = hearth__calloc(1, sizeof *db);
    if (!db)
        return hearth__error_code(err, HEARTH_ENOMEM);
    if (!backend)
        backend = config->url ? &hearth__db_remote : &hearth__db_embedded;
    db->backend = backend;
    rc = db->backend->create(db, config, err);
    if (rc) {
        hearth__free(db);
        return rc;
    }
    atomic_init(&db->next_handle, 1);
    atomic_init(&db->server_offset_ms, 0);
    hearth__events_init(&db->events);
    if (uv_mutex_init(&db->lock)) {
        db->backend->free(db);
        hearth__free(db);
        return hearth__error_code(err, HEARTH_ELOOP);
    }
    if (start_loop(db, config)) {
        free_handle(db);
        return hearth__error_code(err, HEARTH_ELOOP);
    }
    *out = db;
    return 0;
}

void hearth__db_release(hearth_db_t *db) {
    if (--db->close_waits == 0)
        free_handle(db);
}

static void on_wake_closed(uv_handle_t *handle) {
    hearth__db_release(handle->data);
}

/* Stops the database's own loop from inside (only the loop thread may
 * close its handles), after what it was doing, and joins its thread. */
static int stop_own_loop(hearth_db_t *db) {
    if (hearth__db_on_loop_thread(db))
        return HEARTH_EINVAL; /* cannot join our own thread */
    hearth__db_op *stop = NULL;
    hearth__db_op_create(OP_STOP, &stop); /* NULL: out of memory, below */
    if (!stop)
        return HEARTH_ENOMEM;
    uv_mutex_lock(&db->lock); /* the close emptied the queue */
    hearth__list_push_back(&db->queue, &stop->link);
    uv_mutex_unlock(&db->lock);
    uv_async_send(&db->wake);
    uv_thread_join(&db->thread);
    uv_loop_close(db->loop);
    return 0;
}

/* Cancels every operation of list, first to last; it ends empty. */
static void cancel_all(hearth__list *list) {
    for (hearth__list *n; (n = hearth__list_pop_front(list));)
        hearth__db_op_cancel(HEARTH__LIST_ITEM(n, hearth__db_op, link));
}

int hearth_db_close(hearth_db_t *db) {
    if (!db)
        return HEARTH_EINVAL;
    uv_mutex_lock(&db->lock);
    bool was_closed = db->closed;
    db->closed = true;
    hearth__list pending = {0};
    hearth__list_splice_back(&pending, &db->queue);
    uv_mutex_unlock(&db->lock);
    if (was_closed)
        return HEARTH_ECLOSED;
    if (db->owns_loop) {
        int rc = stop_own_loop(db);
        if (rc)
            return rc;
    }
    cancel_all(&pending);
    cancel_all(&db->deferred);
    if (db->owns_loop) {
        free_handle(db);
        return 0;
    }
    /* A loop shared with the caller: freed once the wake-up is closed and
     * the backend has let go (its handles, any commit or snapshot). */
    db->close_waits = 1 + db->backend->close(db);
    uv_close((uv_handle_t *)&db->wake, on_wake_closed);
    return 0;
}
