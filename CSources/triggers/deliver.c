/* deliver.c - a trigger's deliverer: a thread that POSTs its spool's
 * events one at a time, in order, each until it is answered 2xx or has
 * failed max_attempts times (then it goes to the dead letters and the
 * next one follows), waiting between attempts with exponential backoff.
 * In a cluster the events come in batches from the remote queue, each
 * acknowledged once all of its events are delivered (or dead: kept by
 * the remote first); its spool then holds only what an older version
 * left there.
 * A blocking client on a thread of its own: an endpoint that hangs holds
 * up only its own trigger, never the loop or the other triggers. */
#include "triggers/internal.h"
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SYNC_EVERY_MS 1000 /* the spool's fdatasync, while events come */
/* A cluster's deliverer waits this long for its next batch at a time: a
 * stop waits for it at most so long. */
#define REMOTE_WAIT_MS 500

static uint64_t wall_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits ms, or less when stopping (true) or, with until_kicked, when the
 * spool has something new. A backoff (until_kicked false) waits its whole
 * time whatever is appended meanwhile: the kicks of new events must not
 * turn into attempts (an endpoint that is down would be hit per write). */
static bool pause_for(hearth__trigger *t, uint64_t ms, bool until_kicked) {
    uint64_t end = mono_ns() + ms * 1000000u;
    uv_mutex_lock(&t->mu);
    t->idle = until_kicked;
    for (;;) {
        uint64_t now = mono_ns();
        if (t->stop || (until_kicked && t->kicked) || now >= end)
            break;
        uv_cond_timedwait(&t->cond, &t->mu, end - now);
    }
    t->idle = false;
    if (until_kicked)
        t->kicked = false;
    bool stop = t->stop;
    uv_mutex_unlock(&t->mu);
    return stop;
}

static void note_error(hearth__trigger *t, int attempt, const char *what) {
    uv_mutex_lock(&t->mu);
    snprintf(t->last_error, sizeof t->last_error, "attempt %d: %s", attempt,
             what);
    uv_mutex_unlock(&t->mu);
}

/* The headers of one event's POST. */
static void headers_for(const hearth__trigger *t, const char *body,
                        size_t len, hearth__buf *h) {
    h->len = 0;
    if (t->format == HEARTH__FORMAT_CLOUDEVENT) {
        hearth__buf_adds(h, "Content-Type: application/cloudevents+json; "
                            "charset=utf-8\r\n");
        return;
    }
    hearth__buf_adds(h, "Content-Type: application/json; charset=utf-8\r\n");
    if (!t->secret)
        return;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mlen = 0;
    if (!HMAC(EVP_sha256(), t->secret, (int)strlen(t->secret),
              (const unsigned char *)body, len, mac, &mlen))
        return; /* unsigned: the receiver refuses it, and it is retried */
    hearth__buf_adds(h, "X-Hearth-Signature: sha256=");
    for (unsigned i = 0; i < mlen; i++)
        hearth__buf_printf(h, "%02x", mac[i]);
    hearth__buf_adds(h, "\r\n");
}

/* Where an event comes from: a spool, whose cursor moves past it once it
 * is done, or (spool NULL) the k-th event of a remote's batch, frame its
 * bytes there (a dead letter is kept whole, framed, by the remote). */
typedef struct origin {
    hearth__spool *spool;
    void *batch;
    unsigned k;
    const void *frame;
    size_t frame_len;
} origin;

/* Keeps an event that failed its last attempt as a dead letter: in the
 * dead spool, or the remote's, which must hold it before its batch is
 * acknowledged (so a crash between the two yields at worst a duplicate):
 * asked again each second while it cannot; false when stopping first
 * (the batch is given back, and taken again). */
static bool bury(hearth__trigger *t, const origin *o, const char *body,
                 size_t len, uint64_t made_us, int attempt) {
    if (o->spool) {
        int rc = hearth__spool_append(t->dead, body, len, made_us);
        if (rc)
            hearth__log(HEARTH_LOG_WARNING,
                        "trigger %s: an event failed %d times and "
                        "cannot be kept as a dead letter (%s): dropped",
                        t->name, attempt, hearth_strerror(rc));
        return true;
    }
    const hearth__triggers_remote *r = t->eng->remote;
    for (bool said = false;;) {
        int rc = r->bury(r->ctx, o->batch, o->k, o->frame, o->frame_len);
        if (!rc)
            return true;
        if (!said) {
            hearth__log(HEARTH_LOG_WARNING,
                        "trigger %s: an event failed %d times and cannot be "
                        "kept as a dead letter yet (%s): trying again",
                        t->name, attempt, hearth_strerror(rc));
            said = true;
        }
        note_error(t, attempt, "its dead letter cannot be kept yet");
        if (pause_for(t, 1000, false))
            return false;
    }
}

/* Delivers one event (body), then moves o's spool's cursor past it (the
 * remote's batch is acknowledged whole by the caller); false when
 * stopping (it stays). */
static bool deliver_one(hearth__trigger *t, hearth__poster *p,
                        const char *body, size_t len, uint64_t made_us,
                        hearth__buf *headers, const origin *o) {
    hearth__spool *from = o->spool;
    headers_for(t, body, len, headers);
    for (int attempt = 1;; attempt++) {
        char why[200] = "";
        uint64_t began = mono_ns();
        int status = headers->failed
                         ? HEARTH_ENOMEM
                         : hearth__post(p, headers->data, body, len,
                                        t->timeout_ms, why, sizeof why);
        if (status != HEARTH_ECANCELED)
            hearth__triggers_note_attempt(t, body, len, status,
                                          mono_ns() - began);
        if (status == HEARTH_ECANCELED)
            return false;
        if (status >= 200 && status < 300) {
            uint64_t now = wall_us();
            hearth__hist_observe(&t->latency,
                                 now > made_us ? (now - made_us) * 1000u : 0);
            atomic_fetch_add(&t->delivered, 1);
            atomic_store(&t->last_delivered_us, now);
            if (from)
                hearth__spool_advance(from);
            return true;
        }
        atomic_fetch_add(&t->failed, 1);
        if (status > 0) {
            char what[64];
            snprintf(what, sizeof what, "answered %d", status);
            note_error(t, attempt, what);
        } else {
            note_error(t, attempt, why[0] ? why : hearth_strerror(status));
        }
        if (attempt >= t->max_attempts) {
            if (!bury(t, o, body, len, made_us, attempt))
                return false;
            atomic_fetch_add(&t->dead_count, 1);
            if (from)
                hearth__spool_advance(from);
            return true;
        }
        atomic_fetch_add(&t->retried, 1);
        if (!from) { /* a cluster's: what waits behind it, while it waits */
            const hearth__triggers_remote *r = t->eng->remote;
            uint64_t waiting = atomic_load(&t->remote_waiting);
            r->waiting(r->ctx, t->name, &waiting);
            atomic_store(&t->remote_waiting, waiting);
        }
        uint64_t delay = (uint64_t)t->retry_min_ms;
        for (int i = 1; i < attempt && delay < (uint64_t)t->retry_max_ms; i++)
            delay *= 2;
        if (delay > (uint64_t)t->retry_max_ms)
            delay = (uint64_t)t->retry_max_ms;
        if (pause_for(t, delay, false))
            return false;
    }
}

/* A cluster's batch of events (the remote's): each delivered (or dead)
 * in order, then the batch acknowledged; false when stopping (the batch
 * is given back, to be taken again, here or by another node). */
static bool deliver_batch(hearth__trigger *t, hearth__poster *p, void *batch,
                          const hearth__buf *frames, hearth__buf *headers) {
    const hearth__triggers_remote *r = t->eng->remote;
    size_t off = 0, len;
    const char *body;
    uint64_t made_us;
    int rc;
    origin o = {.batch = batch};
    for (size_t at = off;
         (rc = hearth__spool_unframe(frames->data, frames->len, &off, &body,
                                     &len, &made_us)) == 0;
         at = off, o.k++) {
        o.frame = frames->data + at;
        o.frame_len = off - at;
        if (!deliver_one(t, p, body, len, made_us, headers, &o)) {
            r->done(r->ctx, batch, false);
            return false;
        }
    }
    if (rc < 0) {
        hearth__log(HEARTH_LOG_WARNING, "trigger %s: a batch of events is "
                    "damaged past byte %zu; the rest of it is dropped",
                    t->name, off);
        atomic_fetch_add(&t->dropped, 1);
    }
    r->done(r->ctx, batch, true);
    return true;
}

/* What a cluster's deliverer does when its spool (dead letters retried
 * here) is empty: the remote's next batch, 1 when there is none now, or
 * -1 when stopping. */
static int deliver_remote(hearth__trigger *t, hearth__poster *p,
                          hearth__buf *frames, hearth__buf *headers) {
    const hearth__triggers_remote *r = t->eng->remote;
    void *batch = NULL;
    uint64_t waiting = atomic_load(&t->remote_waiting);
    int rc = r->take(r->ctx, t->name, REMOTE_WAIT_MS, &batch, frames, &waiting);
    atomic_store(&t->remote_waiting, waiting);
    if (rc < 0) {
        note_error(t, 0, "the cluster's queue cannot be reached");
        return pause_for(t, REMOTE_WAIT_MS, false) ? -1 : 1;
    }
    if (rc > 0) { /* the take waited: look at the spool again */
        uv_mutex_lock(&t->mu);
        bool stop = t->stop;
        uv_mutex_unlock(&t->mu);
        return stop ? -1 : 0;
    }
    return deliver_batch(t, p, batch, frames, headers) ? 0 : -1;
}

static void run(void *arg) {
    hearth__trigger *t = arg;
    hearth__poster p;
    hearth__poster_init(&p, &t->to, t->stop_pipe[0]);
    hearth__buf body, headers;
    hearth__buf_init(&body);
    hearth__buf_init(&headers);
    uint64_t last_sync = 0;
    for (;;) {
        uint64_t made_us = 0;
        int r = hearth__spool_peek(t->spool, &body, &made_us);
        if (r == 0) {
            origin o = {.spool = t->spool};
            if (!deliver_one(t, &p, body.data, body.len, made_us, &headers,
                             &o))
                break;
            continue;
        }
        if (t->eng->remote && r > 0) {
            int d = deliver_remote(t, &p, &body, &headers);
            if (d < 0)
                break;
            if (d == 0)
                continue;
        }
        /* Nothing to send: the spool synced once a second while events
         * come (not on the loop, whose appends are plain writes). */
        uint64_t now = wall_us() / 1000u;
        if (now - last_sync >= SYNC_EVERY_MS) {
            hearth__spool_sync(t->spool);
            last_sync = now;
        }
        if (r < 0)
            note_error(t, 0, "the spool cannot be read");
        if (pause_for(t, r < 0 ? 1000 : SYNC_EVERY_MS, true))
            break;
    }
    hearth__poster_close(&p);
    hearth__buf_free(&body);
    hearth__buf_free(&headers);
}

int hearth__deliverer_start(hearth__trigger *t) {
    if (hearth__os_pipe(t->stop_pipe))
        return HEARTH_EIO;
    if (uv_thread_create(&t->thread, run, t)) {
        close(t->stop_pipe[0]);
        close(t->stop_pipe[1]);
        t->stop_pipe[0] = t->stop_pipe[1] = -1;
        return HEARTH_ELOOP;
    }
    t->running = true;
    return 0;
}

void hearth__deliverer_stop(hearth__trigger *t) {
    if (!t->running)
        return;
    uv_mutex_lock(&t->mu);
    t->stop = true;
    uv_cond_signal(&t->cond);
    uv_mutex_unlock(&t->mu);
    if (write(t->stop_pipe[1], "x", 1) < 0) {
        /* full: already readable, which is all that counts */
    }
    uv_thread_join(&t->thread);
    t->running = false;
    close(t->stop_pipe[0]);
    close(t->stop_pipe[1]);
    t->stop_pipe[0] = t->stop_pipe[1] = -1;
}

void hearth__deliverer_kick(hearth__trigger *t) {
    /* Only an idle deliverer is woken: one that is sending or backing off
     * finds the event when it looks again, and a wake-up per event (a
     * futex and a context switch) cost the loop more than building it. */
    uv_mutex_lock(&t->mu);
    t->kicked = true;
    if (t->idle)
        uv_cond_signal(&t->cond);
    uv_mutex_unlock(&t->mu);
}
