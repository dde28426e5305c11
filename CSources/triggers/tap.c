/* tap.c - the taps on the namespaces' databases (db.h's hearth__db_tap):
 * each applied write's events are built at once and wait in the
 * namespace's pending list; a commit takes them as its batch (sealed),
 * its thread writes them to their triggers' queues with its own records
 * (durable: synced with them when the commit syncs), and its outcome
 * (settled, on the loop, before the acknowledgements) wakes the
 * deliverers, or drops the events of writes that were undone.
 *
 * With a remote queue (a cluster node: triggers.h), each event is tagged
 * as it is built with its write's place in the namespace's log (a record
 * the node applies from the log; 0 for the node's own write, whose place
 * is its commit's), kept as built until the commit settles, and then
 * handed to the remote per place and trigger; the spools are not used. */
#include "triggers/internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define EVENTS_PER_WRITE_MAX 10000 /* one write's events for one trigger */

/* An event made from an applied write, waiting for its commit. */
typedef struct pending {
    hearth__trigger *t; /* a reference */
    char *body;
    size_t len;
    uint64_t time_us;
    uint64_t seq; /* with a remote: its place in the log (0: its commit's) */
} pending;

/* A commit's events for one queue, framed as its spool stores them. */
typedef struct part {
    hearth__trigger *t; /* a reference: counted and woken at the end */
    hearth__tqueue *q;  /* a reference: written by the commit's thread */
    hearth__buf frames;
    size_t n;
    int rc; /* the write's outcome */
} part;

/* The tap on one namespace's database. */
typedef struct ns_tap {
    hearth__triggers *eng;
    char *ns;
    hearth_db_t *db;
    pending *v; /* applied, not yet sealed */
    size_t n, cap;
    /* with a remote: the commit in flight's events, as applied */
    pending *sv;
    size_t sn, scap;
    /* the commit in flight's events: touched by the loop at `sealed` and
     * `settled`, by the commit's thread at `durable` between them */
    part *parts;
    size_t nparts, parts_cap;
    bool written;
} ns_tap;

static uint64_t wall_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void drop_pending(pending *p) {
    hearth__free(p->body);
    hearth__trigger_release(p->t);
}

/* Adds p to the batch's part for its trigger's queue. */
static void add_to_batch(ns_tap *tap, const pending *p) {
    hearth__trigger *t = hearth__triggers_live(tap->eng, p->t);
    if (!t)
        return; /* removed meanwhile */
    part *pt = NULL;
    for (size_t i = 0; i < tap->nparts && !pt; i++)
        if (tap->parts[i].q == t->q)
            pt = &tap->parts[i];
    if (!pt) {
        if (tap->nparts == tap->parts_cap) {
            size_t cap = tap->parts_cap ? tap->parts_cap * 2 : 4;
            part *v = hearth__realloc(tap->parts, cap * sizeof *v);
            if (!v) {
                hearth__trigger_dropped(t, 1, HEARTH_ENOMEM);
                return;
            }
            tap->parts = v;
            tap->parts_cap = cap;
        }
        pt = &tap->parts[tap->nparts++];
        *pt = (part){.t = t, .q = t->q};
        atomic_fetch_add(&t->refs, 1);
        t->q->refs++;
        hearth__buf_init(&pt->frames);
    }
    hearth__spool_frame(&pt->frames, p->body, p->len, p->time_us);
    pt->n++;
}

/* Writes each part to its queue (the commit's thread, or the loop). */
static void write_parts(ns_tap *tap, bool sync) {
    for (size_t i = 0; i < tap->nparts; i++) {
        part *pt = &tap->parts[i];
        pt->rc = pt->frames.failed
                     ? HEARTH_ENOMEM
                     : hearth__spool_append_frames(pt->q->spool, pt->frames.data,
                                                   pt->frames.len, pt->n);
        if (!pt->rc && sync)
            hearth__spool_sync_data(pt->q->spool);
    }
    tap->written = true;
}

/* The batch's end (loop): counted and the deliverers woken when ok, the
 * references dropped. */
static void end_batch(ns_tap *tap, bool ok) {
    for (size_t i = 0; i < tap->nparts; i++) {
        part *pt = &tap->parts[i];
        if (ok && !pt->rc) {
            hearth__trigger *live = hearth__triggers_live(tap->eng, pt->t);
            atomic_fetch_add(&pt->t->spooled, pt->n);
            if (live)
                hearth__deliverer_kick(live);
        } else if (ok) {
            hearth__trigger_dropped(pt->t, pt->n, pt->rc);
        }
        hearth__buf_free(&pt->frames);
        hearth__tqueue_put(pt->q);
        hearth__trigger_release(pt->t);
    }
    tap->nparts = 0;
    tap->written = false;
}

/* ---- a cluster's (the remote's) queue ---- */

/* The events of one place in the log (v[0, n), in the order applied),
 * handed to the remote per trigger, each trigger's in order. */
static void put_run(ns_tap *tap, const pending *v, size_t n, uint64_t seq) {
    const hearth__triggers_remote *r = tap->eng->remote;
    ns_tap run = {.eng = tap->eng};
    for (size_t i = 0; i < n; i++)
        add_to_batch(&run, &v[i]);
    for (size_t i = 0; i < run.nparts; i++) {
        part *pt = &run.parts[i];
        if (pt->frames.failed)
            hearth__trigger_dropped(pt->t, pt->n, HEARTH_ENOMEM);
        else if (r->put(r->ctx, tap->db, seq, pt->t->name, pt->frames.data,
                        pt->frames.len, pt->n))
            atomic_fetch_add(&pt->t->spooled, pt->n);
        hearth__buf_free(&pt->frames);
        hearth__tqueue_put(pt->q);
        hearth__trigger_release(pt->t);
    }
    hearth__free(run.parts);
}

/* A good commit's events, to the remote: runs of one place in the log
 * (this node's own writes take the commit's). */
static void put_remote(ns_tap *tap, const pending *v, size_t n) {
    const hearth__triggers_remote *r = tap->eng->remote;
    uint64_t own = 0;
    size_t from = 0;
    for (size_t i = 1; i <= n; i++) {
        if (i < n && v[i].seq == v[from].seq)
            continue;
        uint64_t seq = v[from].seq;
        if (!seq)
            seq = own ? own : (own = r->committed(r->ctx, tap->db));
        put_run(tap, v + from, i - from, seq);
        from = i;
    }
}

/* ---- building: one write's CloudEvents, shared among its triggers ---- */

/* The CloudEvents one write has built lately, by location and type:
 * triggers that fire for the same change send the same event (one id,
 * as Eventarc sends one event to each of its subscribers), built once. */
#define MEMO_SLOTS 8
typedef struct memo {
    struct {
        char *path;
        const char *type;
        char *body;
        size_t len;
    } slot[MEMO_SLOTS];
    unsigned next;
} memo;

static void memo_clear(memo *m) {
    for (unsigned i = 0; i < MEMO_SLOTS; i++) {
        hearth__free(m->slot[i].path);
        hearth__free(m->slot[i].body);
    }
}

/* A copy of the body memoized for (path, type), or NULL. */
static char *memo_find(const memo *m, const char *path, const char *type,
                       size_t *len) {
    for (unsigned i = 0; m && i < MEMO_SLOTS; i++)
        if (m->slot[i].type == type && strcmp(m->slot[i].path, path) == 0) {
            *len = m->slot[i].len;
            return hearth__strndup(m->slot[i].body, m->slot[i].len);
        }
    return NULL;
}

static void memo_keep(memo *m, const char *path, const char *type,
                      const char *body, size_t len) {
    if (!m)
        return;
    unsigned i = m->next++ % MEMO_SLOTS;
    char *p = hearth__strndup(path, strlen(path));
    char *b = hearth__strndup(body, len);
    if (!p || !b) {
        hearth__free(p);
        hearth__free(b);
        return;
    }
    hearth__free(m->slot[i].path);
    hearth__free(m->slot[i].body);
    m->slot[i].path = p;
    m->slot[i].type = type;
    m->slot[i].body = b;
    m->slot[i].len = len;
}

typedef struct firing {
    ns_tap *tap;
    hearth__trigger *t;
    bool judged;
    const hearth_node_t *auth;
    int64_t now_ms;
    bool durable_later;
    memo *memo; /* NULL when one trigger only may fire */
    uint64_t seq; /* with a remote: the write's place in the log */
} firing;

/* The event's body for t: a CloudEvent (memoized), or a webhook. */
static char *build(firing *f, const char *path, const hearth_node_t *before,
                   const hearth_node_t *after, size_t *len) {
    hearth__trigger *t = f->t;
    hearth__triggers *e = f->tap->eng;
    char *body = t->format == HEARTH__FORMAT_CLOUDEVENT
                     ? memo_find(f->memo, path, t->type, len)
                     : NULL;
    if (body)
        return body;
    char id[64];
    snprintf(id, sizeof id, "%" PRIx64 "-%" PRIu64, wall_us(), e->next_id++);
    hearth__trigger_change c = {id,    f->tap->ns, path,    before,
                                after, f->judged,  f->auth, f->now_ms};
    if (t->format != HEARTH__FORMAT_CLOUDEVENT)
        return hearth__trigger_webhook(&c, t->name, &t->ref, len);
    body = hearth__trigger_cloudevent(&c, t->type, e->db_host, e->location,
                                      len);
    if (body)
        memo_keep(f->memo, path, t->type, body, *len);
    return body;
}

/* A write to a database in memory stands now: its event is queued on the
 * loop, alone (rare: such a namespace has no data on disk either). */
static void queue_now(ns_tap *tap, const pending *p) {
    if (tap->eng->remote) {
        put_remote(tap, p, 1);
        return;
    }
    part saved_parts[1];
    ns_tap one = {.eng = tap->eng, .parts = saved_parts, .parts_cap = 1};
    add_to_batch(&one, p);
    write_parts(&one, false);
    end_batch(&one, true);
}

static int fire(void *ctx, const char *path, const hearth_node_t *before,
                const hearth_node_t *after) {
    firing *f = ctx;
    ns_tap *tap = f->tap;
    hearth__trigger *t = f->t;
    if (!(hearth__trigger_change_kind(before, after) & t->mask))
        return 0;
    pending p = {t, NULL, 0, (uint64_t)f->now_ms * 1000u, f->seq};
    p.body = build(f, path, before, after, &p.len);
    if (!p.body) {
        hearth__trigger_dropped(t, 1, HEARTH_ENOMEM);
        return 0;
    }
    atomic_fetch_add(&t->refs, 1);
    if (!f->durable_later) {
        queue_now(tap, &p);
        drop_pending(&p);
        return 0;
    }
    if (tap->n == tap->cap) {
        size_t cap = tap->cap ? tap->cap * 2 : 16;
        pending *v = hearth__realloc(tap->v, cap * sizeof *v);
        if (!v) {
            hearth__trigger_dropped(t, 1, HEARTH_ENOMEM);
            drop_pending(&p);
            return 0;
        }
        tap->v = v;
        tap->cap = cap;
    }
    tap->v[tap->n++] = p;
    return 0;
}

/* ---- the tap's entries ---- */

static void on_applied(void *ctx, const hearth_node_t *old_root,
                       const hearth_node_t *new_root,
                       const hearth__path *const *paths, size_t n, bool judged,
                       const hearth_node_t *auth, bool durable_later) {
    ns_tap *tap = ctx;
    hearth__triggers *e = tap->eng;
    if (!e->n) /* the usual server: a branch a write */
        return;
    size_t here = 0;
    for (size_t i = 0; i < e->n && here < 2; i++)
        here += hearth__pattern_matches_name(&e->v[i]->instance, tap->ns);
    memo m = {0};
    int64_t now = hearth_now_ms();
    uint64_t seq = e->remote ? e->remote->applying(e->remote->ctx, tap->db) : 0;
    for (size_t i = 0; i < e->n; i++) {
        hearth__trigger *t = e->v[i];
        if (!hearth__pattern_matches_name(&t->instance, tap->ns))
            continue;
        firing f = {tap, t,   judged, auth, now, durable_later,
                    here > 1 ? &m : NULL, seq};
        bool more = false;
        hearth__trigger_locations(&t->ref, old_root, new_root, paths, n,
                                  EVENTS_PER_WRITE_MAX, &more, fire, &f);
        if (more && atomic_fetch_add(&t->dropped, 1) == 0)
            hearth__log(HEARTH_LOG_WARNING,
                    "trigger %s: a write in %s changed more than %d "
                    "matching locations; the events past them are dropped",
                    t->name, tap->ns, EVENTS_PER_WRITE_MAX);
    }
    memo_clear(&m);
}

/* The pending events become the commit's batch, framed per queue. */
static void on_sealed(void *ctx) {
    ns_tap *tap = ctx;
    if (tap->eng->remote) { /* kept as they are until the outcome */
        pending *v = tap->sv;
        size_t cap = tap->scap;
        tap->sv = tap->v;
        tap->scap = tap->cap;
        tap->sn = tap->n;
        tap->v = v;
        tap->cap = cap;
        tap->n = 0;
        return;
    }
    for (size_t i = 0; i < tap->n; i++) {
        add_to_batch(tap, &tap->v[i]);
        drop_pending(&tap->v[i]);
    }
    tap->n = 0;
}

static void on_durable(void *ctx, bool synced) {
    ns_tap *tap = ctx;
    if (!tap->eng->remote)
        write_parts(tap, synced);
}

static void drop_sealed(ns_tap *tap) {
    for (size_t i = 0; i < tap->sn; i++)
        drop_pending(&tap->sv[i]);
    tap->sn = 0;
}

static void on_settled(void *ctx, int rc) {
    ns_tap *tap = ctx;
    if (tap->eng->remote && !rc) /* the log holds them: the remote's now */
        put_remote(tap, tap->sv, tap->sn);
    drop_sealed(tap);
    /* a commit whose thread wrote nothing */
    if (!rc && !tap->written && !tap->eng->remote)
        write_parts(tap, false);
    end_batch(tap, rc == 0);
    if (rc) { /* every write since the last good commit is undone */
        for (size_t i = 0; i < tap->n; i++)
            drop_pending(&tap->v[i]);
        tap->n = 0;
    }
}

static void tap_free(void *ctx) {
    ns_tap *tap = ctx;
    end_batch(tap, false);
    drop_sealed(tap);
    hearth__free(tap->sv);
    for (size_t i = 0; i < tap->n; i++)
        drop_pending(&tap->v[i]);
    hearth__free(tap->v);
    hearth__free(tap->parts);
    hearth__free(tap->ns);
    hearth__free(tap);
}

static const hearth__db_tap TAP = {on_applied, on_sealed, on_durable,
                                   on_settled};

void hearth__triggers_attach(hearth__triggers *e, const char *ns,
                             hearth_db_t *db) {
    ns_tap *tap = hearth__calloc(1, sizeof *tap);
    if (tap)
        tap->ns = hearth__strndup(ns, strlen(ns));
    if (!tap || !tap->ns) {
        hearth__log(HEARTH_LOG_WARNING, "no memory to watch namespace %s for "
                        "triggers", ns);
        hearth__free(tap);
        return;
    }
    tap->eng = e;
    tap->db = db;
    hearth__db_set_tap(db, &TAP, tap, tap_free);
}
