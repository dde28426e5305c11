/* triggers.c - database triggers in a cluster (cluster/triggers.h; the
 * server's side is triggers/ through its keeper).
 *
 * Where an event is made: every node applies every record of a
 * namespace's log in order, so every node's triggers/ tap builds the same
 * events from the same before and after trees, and hands them here once
 * the write is committed, with the record's log sequence (the leader's
 * own writes: their commit's).
 *
 * Where it is kept: the leader puts each record's events for a trigger
 * as one message (or several, past the largest) on subject
 * hearth.trig.TRIGGER.NAMESPACE of stream HEARTH_TRIGGERS, with
 * Nats-Msg-Id NAMESPACE:SEQ:TRIGGER:K, asynchronously: the write's
 * acknowledgement never waits for it. A leader may die between its
 * record's append and that publish; so every other node keeps the events
 * it built for recent records (HEARTH__CLUSTER_TRIG_KEEP_MS), and the node
 * that takes the lease over puts the ones it keeps before its own: those
 * the old leader did put are dropped by JetStream's duplicate check (2
 * minutes), as the same message id. Per trigger the stream then holds
 * the events in log order per namespace: each publisher puts them in
 * order, and a message's first arrival wins.
 *
 * Who delivers: a durable pull consumer per trigger (hearth_trig_TRIGGER,
 * explicit acks, one unacknowledged message at most), pulled by the
 * trigger's deliverer on every node: JetStream hands each batch to one of
 * them, the next only once it is acknowledged (order), and the batch
 * again, to whichever node pulls, when its holder goes quiet for
 * HEARTH__CLUSTER_TRIG_ACK_WAIT_MS (a node killed while delivering). The
 * tick tells JetStream the holders are alive while they post and back
 * off. The stream is a work queue: an acknowledged batch is removed.
 *
 * Sealed (purpose "trig", context: subject and message id), as all a node
 * puts into NATS: a batch that does not open is terminated and counted
 * (hearth_cluster_rejected_total{kind="trig"}).
 *
 * Dead letters (events whose endpoint failed max_attempts times) go to
 * stream HEARTH_DEAD, every node's to list and retry: dead.c. */
#include "cluster/node.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define REGS_BUCKET "hearth_triggers"

/* An event message made (kept by a namespace until old). */
struct hearth__trig_entry {
    hearth__list link; /* in its namespace's trig.kept */
    uint64_t seq;
    uint64_t made_ms; /* loop ms */
    bool published;
    char subject[200];
    char id[240];
    hearth__buf data; /* sealed */
};

/* A trigger's consumer, made by its deliverer's first pull. */
struct hearth__trig_pull {
    char *name; /* its key in c->trig.pulls */
    natsSubscription *sub;
    uint64_t asked_ms; /* its consumer's pending counts last asked */
    /* the trigger's dead letters in HEARTH_DEAD, as last asked (with the
     * counts: read by the loop's metrics) */
    _Atomic uint64_t dead;
    atomic_bool dead_known;
};

/* A batch a deliverer holds. */
struct hearth__cluster_batch {
    hearth__list link; /* in c->trig.held */
    natsMsg *msg;
    uint64_t sign_ms; /* the last sign of life sent (loop ms) */
};

static uint64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void on_published(jsCtx *js, natsMsg *m, jsPubAck *pa,
                         jsPubAckErr *pae, void *closure) {
    (void)js;
    hearth__cluster *c = closure;
    if (!pa && pae)
        atomic_store(&c->trig.failed, true);
    natsMsg_Destroy(m); /* the handler's to free (as append.c's) */
}

int hearth__cluster_triggers_start(hearth__cluster *c, hearth_error_t *err) {
    if (c->trig.started)
        return 0;
    /* JetStream's duplicate window, 2 minutes by default, is what drops
     * the events a new leader puts again (HEARTH__CLUSTER_TRIG_KEEP_MS) */
    natsStatus s = hearth__cluster_make_stream(c, HEARTH__CLUSTER_TRIG_STREAM,
                                               "hearth.trig.>",
                                               HEARTH__STREAM_WORK_QUEUE);
    if (s != NATS_OK)
        return hearth__error(err, hearth__cluster_error(s), NULL,
                             "cluster: cannot make the triggers' stream: %s",
                             natsStatus_GetText(s));
    int made = hearth__cluster_dead_start(c, err); /* dead.c */
    if (made)
        return made;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = HEARTH__CLUSTER_WAIT_MS;
    jo.PublishAsync.AckHandler = on_published;
    jo.PublishAsync.AckHandlerClosure = c;
    /* on the loop: never held up by puts in flight (one that fails is
     * noted and put again from what is kept) */
    jo.PublishAsync.StallWait = 1;
    s = natsConnection_JetStream(&c->trig.js, c->nc, &jo);
    if (s != NATS_OK)
        return hearth__error(err, hearth__cluster_error(s), NULL,
                             "cluster: cannot open JetStream for triggers");
    uv_mutex_init(&c->trig.mu);
    atomic_init(&c->trig.failed, false);
    c->trig.started = true;
    /* the admin's registrations, before the server registers any */
    s = hearth__cluster_docs_open(c, &c->trig.regs, REGS_BUCKET);
    if (s != NATS_OK)
        return hearth__error(err, hearth__cluster_error(s), NULL,
                             "cluster: cannot open the triggers' bucket: %s",
                             natsStatus_GetText(s));
    int rc = hearth__cluster_docs_start(c, &c->trig.regs, err);
    if (!rc)
        hearth__cluster_docs_follow_bucket(c, &c->trig.regs);
    return rc;
}

/* ---- the admin's registrations ---- */

bool hearth__cluster_triggers_changed(hearth__cluster *c, natsMsg *m) {
    return c->trig.started && hearth__cluster_docs_changed(c, &c->trig.regs, m);
}

void hearth__cluster_registrations_each(hearth__cluster *c,
                                        void (*cb)(void *ctx, const char *name,
                                                   const char *text),
                                        void *ctx) {
    hearth__cluster_docs_each(&c->trig.regs, cb, ctx);
}

void hearth__cluster_registrations_follow(hearth__cluster *c,
                                          void (*cb)(void *ctx,
                                                     const char *name),
                                          void *ctx) {
    c->trig.regs.changed = cb;
    c->trig.regs.changed_ctx = ctx;
}

const char *hearth__cluster_registration_of(hearth__cluster *c,
                                            const char *name) {
    return hearth__cluster_docs_of(&c->trig.regs, name);
}

void hearth__cluster_registration_put(hearth__cluster *c, const char *name,
                                      const char *text,
                                      hearth__cluster_kept_cb done, void *ctx) {
    if (!c->trig.regs.kv) {
        done(ctx, HEARTH_EUNSUPPORTED);
        return;
    }
    hearth__cluster_docs_put(c, &c->trig.regs, name, text, done, ctx);
}

/* ---- the events made: kept, and put by the leader ---- */

uint64_t hearth__cluster_triggers_applying(hearth_db_t *db) {
    hearth__cluster_ns *n = hearth__cluster_ns_of(db);
    int64_t stamp = 0;
    uint64_t seq = hearth__cluster_tail_applying(n, &stamp);
    /* A record the log took long ago (a node catching up): its events
     * were put by its leader then; this node keeps none of them. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (seq && stamp &&
        now - stamp > (int64_t)HEARTH__CLUSTER_TRIG_KEEP_MS * 1000000 &&
        seq > n->trig.stale_to)
        n->trig.stale_to = seq;
    return seq;
}

uint64_t hearth__cluster_triggers_committed(hearth_db_t *db) {
    return hearth__cluster_committed_seq(hearth__cluster_ns_of(db));
}

static void entry_free(hearth__trig_entry *e) {
    hearth__buf_free(&e->data);
    hearth__free(e);
}

/* The oldest event kept, or NULL. */
static hearth__trig_entry *oldest(hearth__cluster_ns *n) {
    return HEARTH__LIST_FIRST_ITEM(&n->trig.kept, hearth__trig_entry, link);
}

static void drop_oldest(hearth__cluster_ns *n) {
    hearth__trig_entry *e = oldest(n);
    hearth__list_remove(&e->link);
    n->trig.bytes -= e->data.len;
    entry_free(e);
}

/* Puts e in JetStream (its copy: e stays kept). */
static void publish(hearth__cluster *c, hearth__trig_entry *e) {
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, e->subject, NULL, e->data.data,
                                  (int)e->data.len);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Nats-Msg-Id", e->id);
    if (s == NATS_OK)
        s = js_PublishMsgAsync(c->trig.js, &m, NULL);
    natsMsg_Destroy(m); /* NULL once the publish took it */
    if (s != NATS_OK)
        atomic_store(&c->trig.failed, true);
    else
        e->published = true;
}

/* A leader puts what it keeps that is not yet put, in order. */
static void publish_kept(hearth__cluster_ns *n) {
    HEARTH__LIST_EACH_ITEM(e, &n->trig.kept, hearth__trig_entry, link)
        if (!e->published)
            publish(n->c, e);
}

/* Keeps one message's worth of events (sealed), oldest first. */
static hearth__trig_entry *keep(hearth__cluster_ns *n, const char *trigger,
                                uint64_t seq, unsigned k, const void *data,
                                size_t len) {
    hearth__trig_entry *e = hearth__calloc(1, sizeof *e);
    if (!e)
        return NULL;
    hearth__buf_init(&e->data);
    e->seq = seq;
    e->made_ms = uv_now(n->c->loop);
    snprintf(e->subject, sizeof e->subject, "hearth.trig.%s.%s", trigger,
             n->name);
    snprintf(e->id, sizeof e->id, "%s:%" PRIu64 ":%s:%u", n->name, seq,
             trigger, k);
    hearth__aad a;
    hearth__aad_init(&a);
    hearth__aad_str(&a, e->subject);
    hearth__aad_str(&a, e->id);
    if (hearth__cluster_seal(n->c, "trig", &a, data, len, &e->data) ||
        e->data.failed) {
        entry_free(e);
        return NULL;
    }
    hearth__list_push_back(&n->trig.kept, &e->link);
    n->trig.bytes += e->data.len;
    return e;
}

/* The length of the frames from data that fit in room: whole records
 * (a record is [u32 length][u32 crc][u64 time][payload], triggers/spool.h). */
static size_t fitting(const unsigned char *data, size_t len, size_t room) {
    size_t off = 0;
    while (off + 16 <= len) {
        uint32_t n = (uint32_t)data[off] | (uint32_t)data[off + 1] << 8 |
                     (uint32_t)data[off + 2] << 16 |
                     (uint32_t)data[off + 3] << 24;
        if (off + 16 + n > len || off + 16 + n > room)
            break;
        off += 16 + (size_t)n;
    }
    return off;
}

bool hearth__cluster_triggers_put(hearth_db_t *db, uint64_t seq,
                                  const char *trigger, const void *frames,
                                  size_t len, size_t n_events) {
    hearth__cluster_ns *n = hearth__cluster_ns_of(db);
    hearth__cluster *c = n->c;
    bool leads = hearth__cluster_leads(n);
    if (!c->trig.started || (!leads && seq <= n->trig.stale_to))
        return false;
    if (leads) /* what it kept first: the log's order */
        publish_kept(n);
    size_t room = hearth__cluster_room(c) - 512; /* headers, the seal */
    const unsigned char *p = frames;
    unsigned k = 0;
    bool all = true;
    while (len) {
        size_t take = fitting(p, len, room);
        if (!take) {
            hearth__log(HEARTH_LOG_WARNING, "trigger %s: an event of %s at "
                        "%" PRIu64 " is larger than a NATS message; dropped "
                        "(%zu of the record's events)", trigger, n->name, seq,
                        n_events);
            return false;
        }
        hearth__trig_entry *e = keep(n, trigger, seq, k++, p, take);
        if (!e) {
            all = false;
            break;
        }
        if (leads)
            publish(c, e);
        p += take;
        len -= take;
    }
    while (n->trig.bytes > HEARTH__CLUSTER_TRIG_KEEP_BYTES && oldest(n))
        drop_oldest(n);
    if (!all)
        hearth__log(HEARTH_LOG_WARNING, "trigger %s: no memory for events of "
                    "%s at %" PRIu64 "; dropped", trigger, n->name, seq);
    return leads && all;
}

void hearth__cluster_triggers_ns_free(hearth__cluster_ns *n) {
    while (oldest(n))
        drop_oldest(n);
}

/* ---- delivery: the consumers ---- */

/* The pull of trigger name (made at its first use), under the mutex. */
static natsSubscription *pull_of(hearth__cluster *c, const char *name,
                                 hearth__trig_pull **out, int *rc) {
    hearth__trig_pull *p = hearth__map_get_str(&c->trig.pulls, name);
    if (!p) {
        p = hearth__calloc(1, sizeof *p);
        if (p)
            p->name = hearth__strndup(name, strlen(name));
        if (!p || !p->name || hearth__map_put_str(&c->trig.pulls, p->name, p)) {
            if (p)
                hearth__free(p->name);
            hearth__free(p);
            *rc = HEARTH_ENOMEM;
            return NULL;
        }
    }
    *out = p;
    if (p->sub)
        return p->sub;
    char durable[96], filter[128];
    snprintf(durable, sizeof durable, "hearth_trig_%s", name);
    snprintf(filter, sizeof filter, "hearth.trig.%s.>", name);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = HEARTH__CLUSTER_TRIG_STREAM;
    so.Config.Durable = durable;
    so.Config.AckPolicy = js_AckExplicit;
    so.Config.AckWait = (int64_t)HEARTH__CLUSTER_TRIG_ACK_WAIT_MS * 1000000;
    so.Config.MaxAckPending = 1; /* one batch out at a time: in order */
    so.Config.MaxDeliver = -1;
    so.Config.FilterSubject = filter;
    jsErrCode jerr = 0;
    natsStatus s = js_PullSubscribe(&p->sub, c->trig.js, filter, durable, NULL,
                                    &so, &jerr);
    if (s != NATS_OK) {
        p->sub = NULL;
        *rc = hearth__cluster_error(s);
    }
    return p->sub;
}

/* The batches the consumer holds for delivery (pending and taken), asked
 * at most once a second (by its names: libnats 3.4 knows no consumer for
 * a subscription bound to one another node made). */
static void ask_waiting(hearth__cluster *c, hearth__trig_pull *p,
                        uint64_t *waiting) {
    uint64_t now = mono_ms();
    if (now - p->asked_ms < 1000)
        return;
    p->asked_ms = now;
    char durable[96];
    snprintf(durable, sizeof durable, "hearth_trig_%s", p->name);
    jsConsumerInfo *ci = NULL;
    if (js_GetConsumerInfo(&ci, c->trig.js, HEARTH__CLUSTER_TRIG_STREAM,
                           durable, NULL, NULL) == NATS_OK) {
        *waiting = ci->NumPending + (uint64_t)ci->NumAckPending;
        jsConsumerInfo_Destroy(ci);
    }
    uint64_t dead = 0;
    if (hearth__cluster_dead_count(c, p->name, &dead) == 0) {
        atomic_store(&p->dead, dead);
        atomic_store(&p->dead_known, true);
    }
}

bool hearth__cluster_triggers_dead_waiting(hearth__cluster *c,
                                           const char *trigger,
                                           uint64_t *count) {
    if (!c->trig.started)
        return false;
    bool known = false;
    uv_mutex_lock(&c->trig.mu);
    hearth__trig_pull *p = hearth__map_get_str(&c->trig.pulls, trigger);
    if (p && atomic_load(&p->dead_known)) {
        *count = atomic_load(&p->dead);
        known = true;
    }
    uv_mutex_unlock(&c->trig.mu);
    return known;
}

natsMsg *hearth__cluster_batch_msg(hearth__cluster_batch *b) {
    return b->msg;
}

int hearth__cluster_triggers_take(hearth__cluster *c, const char *trigger,
                                  int wait_ms, hearth__cluster_batch **batch,
                                  hearth__buf *frames, uint64_t *waiting) {
    if (!c->trig.started)
        return HEARTH_EUNSUPPORTED;
    int rc = 0;
    hearth__trig_pull *p = NULL;
    uv_mutex_lock(&c->trig.mu);
    /* Only this trigger's deliverer uses p (one per name at a time). */
    natsSubscription *sub = pull_of(c, trigger, &p, &rc);
    uv_mutex_unlock(&c->trig.mu);
    if (!sub) {
        uv_sleep((unsigned)wait_ms); /* JetStream not there: later */
        return rc ? rc : HEARTH_EIO;
    }
    natsMsgList list = {0};
    natsStatus s = natsSubscription_Fetch(&list, sub, 1, wait_ms, NULL);
    if (s == NATS_TIMEOUT || (s == NATS_OK && list.Count == 0)) {
        natsMsgList_Destroy(&list);
        ask_waiting(c, p, waiting);
        return 1;
    }
    if (s != NATS_OK) {
        natsMsgList_Destroy(&list);
        return hearth__cluster_error(s);
    }
    natsMsg *m = list.Msgs[0];
    list.Msgs[0] = NULL;
    natsMsgList_Destroy(&list);
    ask_waiting(c, p, waiting);
    const char *id = NULL;
    natsMsgHeader_Get(m, "Nats-Msg-Id", &id);
    hearth__aad a;
    hearth__aad_init(&a);
    hearth__aad_str(&a, natsMsg_GetSubject(m));
    hearth__aad_str(&a, id);
    frames->len = 0;
    frames->failed = false;
    rc = hearth__cluster_unseal(c, HEARTH__REJECT_TRIG, "trig", &a,
                                natsMsg_GetData(m),
                                (size_t)natsMsg_GetDataLength(m), frames);
    if (rc == HEARTH_EDENIED) { /* never delivered, never offered again */
        natsMsg_Term(m, NULL);
        natsMsg_Destroy(m);
        return 1;
    }
    if (rc) { /* no memory: another try, here or elsewhere */
        natsMsg_Nak(m, NULL);
        natsMsg_Destroy(m);
        return rc;
    }
    hearth__cluster_batch *b = hearth__calloc(1, sizeof *b);
    if (!b) {
        natsMsg_Nak(m, NULL);
        natsMsg_Destroy(m);
        return HEARTH_ENOMEM;
    }
    b->msg = m;
    b->sign_ms = mono_ms();
    uv_mutex_lock(&c->trig.mu);
    hearth__list_push_back(&c->trig.held, &b->link);
    uv_mutex_unlock(&c->trig.mu);
    *batch = b;
    return 0;
}

void hearth__cluster_triggers_waiting(hearth__cluster *c, const char *trigger,
                                      uint64_t *waiting) {
    if (!c->trig.started)
        return;
    uv_mutex_lock(&c->trig.mu); /* pulls are never removed before the end */
    hearth__trig_pull *p = hearth__map_get_str(&c->trig.pulls, trigger);
    uv_mutex_unlock(&c->trig.mu);
    if (p && p->sub) /* p is this trigger's deliverer's alone */
        ask_waiting(c, p, waiting);
}

void hearth__cluster_triggers_done(hearth__cluster *c,
                                   hearth__cluster_batch *b, bool delivered) {
    uv_mutex_lock(&c->trig.mu);
    hearth__list_remove(&b->link);
    uv_mutex_unlock(&c->trig.mu); /* out of the tick's reach from here */
    /* Acknowledged and confirmed (this thread waits; the loop does not):
     * one refused (a NATS user not allowed $JS.ACK.HEARTH_TRIGGERS.>) or
     * lost would have the batch delivered again and again, unseen. */
    natsStatus s = delivered ? natsMsg_AckSync(b->msg, NULL, NULL)
                             : natsMsg_Nak(b->msg, NULL);
    if (s != NATS_OK && !atomic_exchange(&c->trig.ack_warned, true))
        hearth__log(HEARTH_LOG_ERROR, "cluster: a batch of trigger events "
                    "could not be acknowledged (%s); it is delivered again. "
                    "Is the NATS user allowed to publish "
                    "$JS.ACK.HEARTH_TRIGGERS.>? (examples/nats-server.conf)",
                    natsStatus_GetText(s));
    natsMsg_Destroy(b->msg);
    hearth__free(b);
}

/* ---- the tick, the stop ---- */

void hearth__cluster_triggers_tick(hearth__cluster *c) {
    if (!c->trig.started)
        return;
    hearth__cluster_docs_follow_bucket(c, &c->trig.regs); /* if not yet */
    bool again = atomic_exchange(&c->trig.failed, false);
    uint64_t now = uv_now(c->loop);
    HEARTH__LIST_EACH_ITEM(n, &c->spaces, hearth__cluster_ns, link) {
        bool leads = hearth__cluster_leads(n);
        if (again && leads) /* what JetStream may not hold, put again */
            HEARTH__LIST_EACH_ITEM(e, &n->trig.kept, hearth__trig_entry, link)
                e->published = false;
        if (leads) /* a new leader: what it kept, before its own */
            publish_kept(n);
        while (oldest(n) &&
               now - oldest(n)->made_ms > HEARTH__CLUSTER_TRIG_KEEP_MS)
            drop_oldest(n);
    }
    uint64_t mono = mono_ms();
    uv_mutex_lock(&c->trig.mu);
    HEARTH__LIST_EACH_ITEM(b, &c->trig.held, hearth__cluster_batch, link)
        if (mono - b->sign_ms >= HEARTH__CLUSTER_TRIG_PROGRESS_MS) {
            natsMsg_InProgress(b->msg, NULL);
            b->sign_ms = mono;
        }
    uv_mutex_unlock(&c->trig.mu);
}

void hearth__cluster_triggers_unfollow(hearth__cluster *c) {
    hearth__cluster_docs_stop(c, &c->trig.regs);
}

void hearth__cluster_triggers_free(hearth__cluster *c) {
    /* no longer followed: hearth__cluster_triggers_unfollow at the stop */
    hearth__cluster_docs_close(&c->trig.regs);
    hearth__cluster_docs_free(&c->trig.regs);
    if (!c->trig.started)
        return;
    atomic_store(&c->trig.dead_stop, true);
    while (atomic_load(&c->trig.dead_jobs) > 0) /* a JetStream call at most */
        uv_sleep(10);
    size_t at = 0;
    for (hearth__trig_pull *p; (p = hearth__map_next(&c->trig.pulls, &at, NULL,
                                                     NULL));) {
        /* Destroy alone: the durable consumer stays, with its place. */
        natsSubscription_Destroy(p->sub);
        hearth__free(p->name); /* its key: the map is not read again */
        hearth__free(p);
    }
    hearth__map_free(&c->trig.pulls);
    for (hearth__list *l; (l = hearth__list_pop_front(&c->trig.held));) {
        /* none: the deliverers were joined */
        hearth__cluster_batch *b =
            HEARTH__LIST_ITEM(l, hearth__cluster_batch, link);
        natsMsg_Destroy(b->msg);
        hearth__free(b);
    }
    jsCtx_Destroy(c->trig.js);
    c->trig.js = NULL;
    uv_mutex_destroy(&c->trig.mu);
    c->trig.started = false;
}
