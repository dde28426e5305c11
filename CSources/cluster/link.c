/* link.c - this node's link to NATS: the connection, JetStream, the KV
 * buckets (each job opens its own through hearth__cluster_bucket, in the
 * order link_up calls them), the streams, the one way from NATS's threads
 * to the loop (a locked list and a coalesced uv_async_send), and the stop,
 * which waits for every user of the link. */
#include "cluster/node.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

int hearth__cluster_error(natsStatus s) {
    switch (s) {
    case NATS_OK:
        return 0;
    case NATS_NO_MEMORY:
        return HEARTH_ENOMEM;
    case NATS_TIMEOUT:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_NO_SERVER:
        return HEARTH_EDISCONNECTED;
    default:
        return HEARTH_EIO;
    }
}

void hearth__cluster_post(hearth__cluster *c, hearth__cluster_msg_kind kind,
                          natsMsg *m, uint64_t seq) {
    hearth__cluster_post_log(c, kind, m, seq, 0);
}

void hearth__cluster_post_log(hearth__cluster *c, hearth__cluster_msg_kind kind,
                              natsMsg *m, uint64_t seq, uint64_t sid) {
    hearth__cluster_msg *q = hearth__calloc(1, sizeof *q);
    if (!q) { /* no memory: a lost record is caught up by the fence */
        natsMsg_Destroy(m);
        return;
    }
    q->kind = kind;
    q->msg = m;
    q->seq = seq;
    q->sid = sid;
    hearth__cluster_post_msg(c, q);
}

void hearth__cluster_post_msg(hearth__cluster *c, hearth__cluster_msg *q) {
    uv_mutex_lock(&c->link.lock);
    bool keep = !c->link.stopping;
    if (keep) {
        hearth__list_push_back(&c->link.queue, &q->link);
        uv_async_send(&c->link.wake);
    }
    uv_mutex_unlock(&c->link.lock);
    if (!keep) {
        natsMsg_Destroy(q->msg);
        hearth__free(q);
    }
}

/* The namespace a subject ends with (hearth.ns.<p>.<name>,
 * hearth.fwd.<name>). */
static hearth__cluster_ns *ns_of_subject(hearth__cluster *c, const char *subj) {
    const char *dot = subj ? strrchr(subj, '.') : NULL;
    return dot ? hearth__cluster_find(c, dot + 1) : NULL;
}

static void dispatch(hearth__cluster *c, hearth__cluster_msg *q) {
    if (q->kind == MSG_REPLY) {
        hearth__cluster_on_reply(c, q->msg);
    } else if (q->kind == MSG_FORWARD) {
        hearth__cluster_serve(c, q->msg);
    } else if (q->kind == MSG_RULES) {
        if (!hearth__cluster_rules_changed(c, q->msg))
            hearth__cluster_triggers_changed(c, q->msg);
        natsMsg_Destroy(q->msg);
    } else {
        hearth__cluster_ns *n = ns_of_subject(c, natsMsg_GetSubject(q->msg));
        if (n) {
            hearth__cluster_tail_push(n, q);
            return; /* kept until applied */
        }
        natsMsg_Destroy(q->msg);
    }
    hearth__free(q);
}

void hearth__cluster_take_queued(hearth__cluster *c) {
    hearth__list batch = {0};
    uv_mutex_lock(&c->link.lock);
    hearth__list_splice_back(&batch, &c->link.queue);
    uv_mutex_unlock(&c->link.lock);
    for (hearth__list *l; (l = hearth__list_pop_front(&batch));)
        dispatch(c, HEARTH__LIST_ITEM(l, hearth__cluster_msg, link));
    HEARTH__LIST_EACH_ITEM(n, &c->spaces, hearth__cluster_ns, link)
        hearth__cluster_tail_drain(n);
}

static void on_wake(uv_async_t *a) {
    hearth__cluster_take_queued(a->data);
}

/* ---- setup ---- */

static int nats_fail(hearth_error_t *err, natsStatus s, const char *what) {
    /* The library's text may quote a URL: never with its credentials. */
    char why[512];
    const char *last = nats_GetLastError(NULL);
    hearth__cluster_mask_urls(last && *last ? last : natsStatus_GetText(s),
                              why, sizeof why);
    return hearth__error(err, hearth__cluster_error(s) ? hearth__cluster_error(s)
                                                       : HEARTH_EIO,
                         NULL, "cluster: %s: %s", what, why);
}

/* The servers of a comma-separated list, into opts. */
static natsStatus set_servers(natsOptions *opts, const char *urls, int *count) {
    char *copy = hearth__strndup(urls, strlen(urls));
    const char *list[16];
    int n = 0;
    if (!copy)
        return NATS_NO_MEMORY;
    for (char *save = NULL, *u = strtok_r(copy, ",", &save); u && n < 16;
         u = strtok_r(NULL, ",", &save))
        list[n++] = u;
    natsStatus s = n ? natsOptions_SetServers(opts, list, n) : NATS_INVALID_ARG;
    hearth__free(copy);
    *count = n;
    return s;
}

/* What the callback thread reports to the loop, which reads it at its
 * ticks. */
typedef struct hearth__link_events {
    atomic_uint disconnects;
} hearth__link_events;

/* NATS's callback thread: the connection was lost. */
static void on_disconnected(natsConnection *nc, void *closure) {
    (void)nc;
    hearth__link_events *e = closure;
    atomic_fetch_add(&e->disconnects, 1);
}

/* NATS's callback thread: the connection is closed, its last callback. */
static void on_closed(natsConnection *nc, void *closure) {
    (void)nc;
    hearth__free(closure);
}

unsigned hearth__cluster_disconnects(hearth__cluster *c) {
    return c->link.events ? atomic_load(&c->link.events->disconnects) : 0;
}

static natsStatus connect_nats(hearth__cluster *c,
                               const hearth__cluster_options *o,
                               hearth_error_t *err, int *rc) {
    natsOptions *opts = NULL;
    int count = 0;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK)
        s = set_servers(opts, o->urls, &count);
    /* Credentials and TLS, from their files: a file at fault fails here,
     * named, before any connection is tried. */
    if (s == NATS_OK && (*rc = hearth__cluster_nats_auth(opts, o, err))) {
        natsOptions_Destroy(opts);
        return NATS_ERR;
    }
    if (s == NATS_OK)
        s = natsOptions_SetName(opts, c->node);
    /* Keep trying through a server's death: the others take over. */
    if (s == NATS_OK)
        s = natsOptions_SetMaxReconnect(opts, -1);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectWait(opts, 200);
    if (s == NATS_OK)
        s = natsOptions_SetTimeout(opts, 2000);
    /* A server that dies is noticed within 3 s even when its socket stays
     * open (a host that crashed): a ping each second, given up at the
     * third unanswered (the default waits 4 minutes). */
    if (s == NATS_OK)
        s = natsOptions_SetPingInterval(opts, 1000);
    if (s == NATS_OK)
        s = natsOptions_SetMaxPingsOut(opts, 2);
    /* A call waiting on that server (a KV call of the leases' round or
     * the lane, a consumer's making) fails then, to be made again over
     * the next server, instead of waiting out its bound. */
    if (s == NATS_OK)
        s = natsOptions_SetFailRequestsOnDisconnect(opts, true);
    /* ... and a forwarded write sent on it is answered at the next tick
     * (forward.c), not at its 5 s bound. */
    hearth__link_events *events = NULL;
    if (s == NATS_OK && !(events = hearth__calloc(1, sizeof *events)))
        s = NATS_NO_MEMORY;
    if (s == NATS_OK)
        s = natsOptions_SetDisconnectedCB(opts, on_disconnected, events);
    if (s == NATS_OK)
        s = natsOptions_SetClosedCB(opts, on_closed, events);
    /* Each forwarded write and its answer goes out at once, not when the
     * library's flusher thread next runs. */
    if (s == NATS_OK)
        s = natsOptions_SetSendAsap(opts, true);
    if (s == NATS_OK)
        s = natsConnection_Connect(&c->nc, opts);
    if (s == NATS_OK)
        c->link.events = events; /* on_closed frees it */
    else
        hearth__free(events); /* no connection: no callback */
    natsOptions_Destroy(opts);
    c->replicas = count < 3 ? count : 3;
    return s;
}

/* Bucket name, made if missing (on c->js: making one waits for
 * JetStream to place it), opened for calls on js. */
natsStatus hearth__cluster_bucket(hearth__cluster *c, jsCtx *js,
                                  const char *name, bool ttl, kvStore **out) {
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = name;
    kc.History = 1;
    if (ttl)
        kc.TTL = (int64_t)HEARTH__CLUSTER_LEASE_MS * 1000000; /* ns */
    kc.Replicas = c->replicas;
    /* nats-servers started together may not have elected JetStream's
     * meta leader yet, or the bucket's own stream its leader: a call it
     * leaves unanswered, or that finds nothing, is made again for a while
     * (a refusal is not), the opening on js (which waits less) included. */
    uint64_t until = uv_hrtime() / 1000000 + HEARTH__CLUSTER_START_WAIT_MS;
    natsStatus s;
    for (;;) {
        *out = NULL;
        s = js_CreateKeyValue(out, c->js, &kc);
        if (s != NATS_OK) /* made by another node already */
            s = js_KeyValue(out, c->js, name);
        if (s == NATS_OK && js != c->js) {
            kvStore_Destroy(*out);
            *out = NULL;
            s = js_KeyValue(out, js, name);
        }
        bool unsettled = s == NATS_NOT_FOUND || s == NATS_TIMEOUT ||
                         s == NATS_NO_RESPONDERS;
        if (!unsettled || uv_hrtime() / 1000000 >= until)
            break;
        uv_sleep(250);
    }
    return s;
}

/* The stream info lists the subjects holding messages: one request
 * answered by the stream's leader. kvStore_Keys instead makes a consumer
 * each call and, on this library, waits out its whole timeout for the
 * end of the initial values (a second in a leases' round: every round). */
natsStatus hearth__cluster_kv_keys(jsCtx *js, const char *bucket,
                                   hearth__kv_keys *out) {
    *out = (hearth__kv_keys){0};
    char stream[160], prefix[160];
    snprintf(stream, sizeof stream, "KV_%s", bucket);
    int plen = snprintf(prefix, sizeof prefix, "$KV.%s.", bucket);
    char filter[170];
    snprintf(filter, sizeof filter, "%s>", prefix);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Stream.Info.SubjectsFilter = filter;
    jsStreamInfo *si = NULL;
    natsStatus s = js_GetStreamInfo(&si, js, stream, &jo, NULL);
    const jsStreamStateSubjects *subjects =
        s == NATS_OK ? si->State.Subjects : NULL;
    int count = subjects ? subjects->Count : 0;
    if (count && !(out->keys = hearth__calloc((size_t)count, sizeof *out->keys)))
        s = NATS_NO_MEMORY;
    for (int i = 0; s == NATS_OK && i < count; i++) {
        const char *subject = subjects->List[i].Subject;
        if (strncmp(subject, prefix, (size_t)plen) != 0)
            continue;
        char *key = hearth__strndup(subject + plen, strlen(subject + plen));
        if (!key)
            s = NATS_NO_MEMORY;
        else
            out->keys[out->count++] = key;
    }
    jsStreamInfo_Destroy(si);
    if (s != NATS_OK)
        hearth__cluster_kv_keys_free(out);
    return s;
}

void hearth__cluster_kv_keys_free(hearth__kv_keys *keys) {
    for (int i = 0; i < keys->count; i++)
        hearth__free(keys->keys[i]);
    hearth__free(keys->keys);
    *keys = (hearth__kv_keys){0};
}

unsigned hearth__cluster_stream_names(const char *name, char stream[32],
                                      char subject[96]) {
    unsigned p = (unsigned)(crc32(0, (const unsigned char *)name,
                                  (unsigned)strlen(name)) %
                            HEARTH__CLUSTER_PARTITIONS);
    snprintf(stream, 32, "HEARTH_P%u", p);
    snprintf(subject, 96, "hearth.ns.%u.%s", p, name);
    return p;
}

int hearth__cluster_stream(hearth__cluster *c, const char *name,
                           char stream[32], char subject[96],
                           hearth_error_t *err) {
    unsigned p = hearth__cluster_stream_names(name, stream, subject);
    if (c->link.made_stream[p])
        return 0;
    char subjects[32];
    snprintf(subjects, sizeof subjects, "hearth.ns.%u.*", p);
    natsStatus s = hearth__cluster_make_stream(c, stream, subjects, false);
    if (s != NATS_OK)
        return nats_fail(err, s, "cannot make the log's stream");
    c->link.made_stream[p] = true;
    return 0;
}

natsStatus hearth__cluster_make_stream(hearth__cluster *c, const char *name,
                                       const char *subjects, unsigned flags) {
    const char *list[] = {subjects};
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    cfg.Name = name;
    cfg.Subjects = list;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Replicas = c->replicas;
    if (flags & HEARTH__STREAM_WORK_QUEUE)
        cfg.Retention = js_WorkQueuePolicy;
    cfg.AllowDirect = (flags & HEARTH__STREAM_DIRECT) != 0;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_AddStream(&si, c->js, &cfg, NULL, &jerr);
    jsStreamInfo_Destroy(si);
    if (s != NATS_OK && jerr == JSStreamNameExistErr)
        return NATS_OK; /* made by another node with other settings (a node
                           knowing fewer servers asks fewer replicas): used
                           as it is */
    if (s != NATS_OK) {
        si = NULL;
        s = js_GetStreamInfo(&si, c->js, name, NULL, &jerr);
        jsStreamInfo_Destroy(si);
    }
    return s;
}

void hearth__cluster_unsubscribe(hearth__cluster *c, natsSubscription **sub) {
    if (!*sub)
        return;
    /* Unsubscribe deletes the consumer, a JetStream call; Destroy alone
     * does not. */
    if (natsConnection_Status(c->nc) == NATS_CONN_STATUS_CONNECTED)
        natsSubscription_Unsubscribe(*sub);
    natsSubscription_Destroy(*sub);
    *sub = NULL;
}

static int link_up(hearth__cluster *c, const hearth__cluster_options *o,
                   hearth_error_t *err) {
    int rc = 0;
    natsStatus s = connect_nats(c, o, err, &rc);
    if (rc)
        return rc;
    if (s != NATS_OK)
        return nats_fail(err, s, "cannot connect");
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = HEARTH__CLUSTER_WAIT_MS;
    s = natsConnection_JetStream(&c->js, c->nc, &jo);
    /* The leases' round (its buckets, the log's end of a lease won) waits
     * less: a call that JetStream leaves unanswered while it elects a
     * leader is made again at the next tick, not waited out. */
    jo.Wait = HEARTH__CLUSTER_ROUND_WAIT_MS;
    if (s == NATS_OK)
        s = natsConnection_JetStream(&c->round_js, c->nc, &jo);
    if (s == NATS_OK)
        s = hearth__cluster_lease_open(c);
    if (s == NATS_OK)
        s = hearth__cluster_orphans_open(c);
    if (s == NATS_OK)
        s = hearth__cluster_retain_open(c);
    if (s == NATS_OK)
        s = hearth__cluster_rules_open(c);
    if (s != NATS_OK)
        return nats_fail(err, s, "cannot open JetStream's lease buckets");
    snprintf(c->run, sizeof c->run, "%llx", (unsigned long long)hearth_now_ms());
    s = hearth__cluster_replies_start(c);
    return s == NATS_OK ? 0 : nats_fail(err, s, "cannot subscribe");
}

static bool valid_node(const char *node) {
    size_t len = node ? strlen(node) : 0;
    if (!len || len > 48)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!(node[i] >= 'a' && node[i] <= 'z') &&
            !(node[i] >= 'A' && node[i] <= 'Z') &&
            !(node[i] >= '0' && node[i] <= '9') && node[i] != '-' &&
            node[i] != '_')
            return false;
    return true;
}

static void drop_link(hearth__cluster *c) {
    hearth__cluster_replies_close(c);
    hearth__cluster_lease_close(c);
    hearth__cluster_orphans_close(c);
    hearth__cluster_retain_close(c);
    hearth__cluster_rules_close(c);
    jsCtx_Destroy(c->round_js);
    jsCtx_Destroy(c->js);
    c->link.events = NULL; /* the connection's to free from here */
    natsConnection_Destroy(c->nc);
}

/* "cluster: " before err's message, when it has none. */
static void cluster_prefix(hearth_error_t *err) {
    static const char prefix[] = "cluster: ";
    size_t len = err ? strlen(err->message) : 0, p = sizeof prefix - 1;
    if (!err || strncmp(err->message, prefix, p) == 0)
        return;
    if (len + p >= sizeof err->message)
        len = sizeof err->message - p - 1;
    memmove(err->message + p, err->message, len);
    memcpy(err->message, prefix, p);
    err->message[len + p] = '\0';
}

static void cluster_free(hearth__cluster *c) {
    hearth__cluster_joins_expire(c, 0);
    hearth__cluster_replay_free(c);
    hearth__cluster_lane_free(c);
    hearth__cluster_sweep_free(c);
    hearth__cluster_rules_free(c);
    hearth__cluster_lease_free(c);
    hearth__cluster_msg_free_all(&c->link.queue);
    hearth__map_free(&c->names);
    uv_mutex_destroy(&c->link.lock);
    hearth__cluster_sealing_free(c);
    hearth__free(c->node);
    hearth__free(c);
}

int hearth__cluster_start(uv_loop_t *loop, const hearth__cluster_options *o,
                          hearth__cluster **out, hearth_error_t *err) {
    const char *node = o->node;
    if (!o->urls || !*o->urls)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "cluster: no NATS URL");
    /* NATS is untrusted: without the cluster secret a node joins only
     * when told that this is an experiment. */
    if (!o->secret_file && !o->insecure)
        return hearth__error(err, HEARTH_EINVAL, NULL, "%s",
                             HEARTH__CLUSTER_SECRET_REQUIRED);
    if (o->secret_file && o->insecure)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "cluster: give a cluster secret file or "
                             "insecure mode, not both");
    if (!valid_node(node))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "cluster: invalid node name \"%.64s\": use 1 to "
                             "48 letters, digits, '-' and '_'",
                             node ? node : "");
    hearth__cluster *c = hearth__calloc(1, sizeof *c);
    if (!c || !(c->node = hearth__strndup(node, strlen(node))) ||
        hearth__cluster_lane_create(c) || hearth__cluster_sweep_create(c) ||
        uv_mutex_init(&c->link.lock)) {
        if (c) {
            hearth__cluster_lane_free(c);
            hearth__cluster_sweep_free(c);
            hearth__free(c->node);
        }
        hearth__free(c);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    c->loop = loop;
    int rc = 0;
    if (o->secret_file &&
        (rc = hearth__cluster_sealing_load(c, o->secret_file, err)))
        cluster_prefix(err);
    if (!rc)
        rc = link_up(c, o, err);
    if (!rc)
        rc = hearth__cluster_rules_start(c, err);
    if (rc) {
        hearth__cluster_rules_stop(c);
        drop_link(c);
        cluster_free(c);
        return rc;
    }
    uv_async_init(loop, &c->link.wake, on_wake);
    c->link.wake.data = c;
    hearth__cluster_tick_start(c);
    hearth__cluster_rules_follow_bucket(c); /* posts need c->link.wake */
    *out = c;
    return 0;
}

static void on_handle_closed(uv_handle_t *h) {
    hearth__cluster *c = h->data;
    if (--c->link.closing == 0)
        cluster_free(c);
}

static void finish_stop(hearth__cluster *c) {
    uv_mutex_lock(&c->link.lock);
    c->link.stopping = true;
    uv_mutex_unlock(&c->link.lock);
    /* Our liveness key goes at once, and the leases we gave up: the others
     * take over at their next round. */
    hearth__cluster_liveness_delete(c);
    hearth__cluster_releases_flush(c);
    hearth__cluster_replies_drain(c);
    hearth__cluster_triggers_free(c);
    drop_link(c);
    c->link.closing = 2;
    uv_close((uv_handle_t *)&c->link.wake, on_handle_closed);
    hearth__cluster_tick_close(c, on_handle_closed);
}

/* The link goes once stopping was asked, every namespace's database is
 * freed and no leases' round, onDisconnect call, checkpoint, purge or
 * consumer being made again uses it.
 *
 * A NATS that cannot be reached then is not waited for: the connection
 * closes, so that every call still waiting (a round's, the lane's) and
 * every one made after (deleting the liveness key, the leases given up,
 * the consumers) fails at once; what they would tidy goes by itself (keys
 * expire with their TTL, the server drops consumers nobody listens to).
 * Not before every database is freed: a commit may still be appending on
 * its worker, using the connection; its wait ends at the answer, at the
 * connection's loss, or at its own bound (append.c). */
static void maybe_finish_stop(hearth__cluster *c) {
    if (!c->link.stop_asked || c->link.open_spaces > 0)
        return;
    if (natsConnection_Status(c->nc) != NATS_CONN_STATUS_CONNECTED) {
        c->link.events = NULL; /* the connection's to free from here */
        natsConnection_Close(c->nc);
    }
    if (!hearth__cluster_lease_running(c) && !hearth__cluster_rebuilds(c) &&
        !hearth__cluster_lane_busy(c) && !hearth__cluster_pitr_busy(c) &&
        !hearth__cluster_retain_running(c) && !hearth__cluster_tail_remakes(c))
        finish_stop(c);
}

void hearth__cluster_stop(hearth__cluster *c) {
    c->link.stop_asked = true;
    hearth__cluster_tick_stop(c);
    /* The buckets' ordered consumers end long before the connection is
     * closed: libnats before 3.10 crashes (natsThread_Detach(NULL)) when
     * one, its heartbeats missed while NATS is away, is made again just
     * as its connection closes; once unsubscribed, none is. The tails'
     * end as their namespaces close, before the connection as well. */
    hearth__cluster_rules_stop(c);
    hearth__cluster_triggers_unfollow(c);
    maybe_finish_stop(c);
}

void hearth__cluster_wake(hearth__cluster *c) {
    uv_async_send(&c->link.wake);
}

bool hearth__cluster_stop_asked(const hearth__cluster *c) {
    return c->link.stop_asked;
}

void hearth__cluster_space_opened(hearth__cluster *c) {
    c->link.open_spaces++;
}

void hearth__cluster_space_freed(hearth__cluster *c) {
    c->link.open_spaces--;
    maybe_finish_stop(c);
}

void hearth__cluster_round_ended(hearth__cluster *c) {
    maybe_finish_stop(c);
}
