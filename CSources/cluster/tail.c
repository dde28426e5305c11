/* tail.c - every node's copy of a namespace: an ordered consumer of its
 * subject from the local store's place in the log, each record applied to
 * the tree through the embedded engine (events raised, committed to the
 * local log). Replaying records the store already holds changes nothing:
 * a record sets absolute paths to resolved values, so a suffix of the log
 * applied again leaves the same tree, and seq_file may lag.
 *
 * Sealed (cluster/sealing.h), a message opens only where its leader put
 * it: its context holds the sequence of the subject's message before it
 * (the fence it was appended on), which the tail knows for each message
 * it receives (tail_last: the consumer delivers the subject's messages in
 * order, none missed). One that does not open (forged, a genuine one
 * copied elsewhere, garbage) is a no-op record: applied_seq still passes
 * it, as every node sees it at the same sequence and skips it alike, and
 * the leader's next append is fenced on it. */
#include "cluster/node.h"

#include "store/files.h"
#include "store/logfile.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_record(natsConnection *nc, natsSubscription *sub, natsMsg *m,
                      void *closure) {
    (void)nc, (void)sub;
    jsMsgMetaData *meta = NULL;
    if (natsMsg_GetMetaData(&meta, m) != NATS_OK) {
        natsMsg_Destroy(m); /* a flow-control or heartbeat message */
        return;
    }
    uint64_t seq = meta->Sequence.Stream;
    jsMsgMetaData_Destroy(meta);
    hearth__cluster_post_log(closure, MSG_LOG, m, seq,
                             (uint64_t)natsSubscription_GetID(sub));
}

/* An ordered consumer of subject in stream delivering after `after` (0:
 * from the first), on the loop's way in (on_record); its making waits
 * for JetStream as long as c->js does (HEARTH__CLUSTER_WAIT_MS). */
static natsStatus subscribe(hearth__cluster *c, const char *stream,
                            const char *subject, uint64_t after,
                            natsSubscription **sub) {
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Ordered = true;
    /* A consumer on a server that died is noticed by its missing
     * heartbeats and made again from the last record: quickly. */
    so.Config.Heartbeat = (int64_t)HEARTH__CLUSTER_HEARTBEAT_MS * 1000000;
    if (after) {
        so.Config.DeliverPolicy = js_DeliverByStartSequence;
        so.Config.OptStartSeq = after + 1;
    }
    jsErrCode jerr = 0;
    return js_Subscribe(sub, c->js, subject, on_record, c, NULL, &so, &jerr);
}

int hearth__cluster_tail_start(hearth__cluster_ns *n, hearth_error_t *err) {
    /* applied_seq is the sequence of one of the subject's messages (or 0,
     * none): the one before the first this consumer delivers */
    n->tail.tail_last = n->log.applied_seq;
    natsStatus s = subscribe(n->c, n->log.stream, n->log.subject,
                             n->log.applied_seq, &n->tail.tail_sub);
    if (s != NATS_OK) {
        n->tail.tail_sub = NULL; /* the watchdog makes one */
        return hearth__error(err, hearth__cluster_error(s), NULL,
                             "cluster: cannot tail %s: %s", n->log.subject,
                             natsStatus_GetText(s));
    }
    n->tail.sid = (uint64_t)natsSubscription_GetID(n->tail.tail_sub);
    n->tail.expected = n->tail.behind_since = 0;
    return 0;
}

/* Forgets the chain in progress; release: its buffer too (else kept for
 * the next chain's parts). */
static void chain_reset(hearth__cluster_ns *n, bool release) {
    if (release) {
        hearth__buf_free(&n->tail.chain);
        hearth__buf_init(&n->tail.chain);
    }
    n->tail.chain.len = n->tail.chain_parts = 0;
    n->tail.chain_first = 0;
}

void hearth__cluster_msg_free_all(hearth__list *list) {
    for (hearth__list *l; (l = hearth__list_pop_front(list));) {
        hearth__cluster_msg *q = HEARTH__LIST_ITEM(l, hearth__cluster_msg, link);
        natsMsg_Destroy(q->msg);
        hearth__free(q);
    }
}

void hearth__cluster_tail_push(hearth__cluster_ns *n, hearth__cluster_msg *q) {
    /* A consumer being made again may deliver before it is known: a
     * subscription newer than the last (the connection numbers them in
     * order) waits for it to be. */
    bool read = q->sid == HEARTH__CLUSTER_SID_READ;
    if (!read && n->tail.remake && q->sid > n->tail.sid) {
        hearth__list_push_back(&n->tail.early, &q->link);
        return;
    }
    /* One read by its sequence comes only as the next after the last
     * received (its reader knew the one before it); any other only from
     * the consumer in place. */
    if (read ? q->prev != n->tail.tail_last
             : q->sid != n->tail.sid || n->tail.remake) {
        natsMsg_Destroy(q->msg);
        hearth__free(q);
        return;
    }
    /* Noted before anything is dropped: whatever becomes of this message,
     * it is the one before the next. Kept in q, so a rewind (which puts q
     * back in the queue) opens it the same. */
    q->prev = n->tail.tail_last;
    if (q->seq > n->tail.tail_last)
        n->tail.tail_last = q->seq;
    /* Behind is no news for a while, not a long way to go: a consumer
     * catching up on a long log is left to it. */
    if (n->tail.tail_last >= n->tail.expected)
        n->tail.behind_since = 0;
    else if (n->tail.behind_since)
        n->tail.behind_since = uv_now(n->c->loop);
    /* The queue only grows: a record at or below its end (or below what
     * the tree holds) is one delivered again, or this node's own, whose
     * commit put it in the tree. */
    hearth__cluster_msg *end = HEARTH__LIST_ITEM_OR_NULL(
        hearth__list_last(&n->tail.records), hearth__cluster_msg, link);
    uint64_t last = end ? end->seq : n->log.applied_seq;
    if (q->seq <= last) {
        natsMsg_Destroy(q->msg);
        hearth__free(q);
        return;
    }
    hearth__list_push_back(&n->tail.records, &q->link);
}

bool hearth__cluster_tree_exact(const hearth__cluster_ns *n) {
    const hearth__embedded *e = n->db->impl;
    return n->log.own_writes == 0 && !(e->committing && n->log.batch_published);
}

void hearth__cluster_tail_settled(hearth__cluster_ns *n) {
    /* The parts of a chain not yet applied stay: the tree holds none of
     * them, and a rewind must find the chain whole. */
    hearth__cluster_msg *q;
    while ((q = HEARTH__LIST_FIRST_ITEM(&n->tail.unsettled,
                                        hearth__cluster_msg, link)) &&
           q->seq <= n->log.committed_seq &&
           !(n->tail.chain_first && q->seq >= n->tail.chain_first)) {
        hearth__list_remove(&q->link);
        natsMsg_Destroy(q->msg);
        hearth__free(q);
    }
}

void hearth__cluster_tail_rewind(hearth__cluster_ns *n) {
    /* The tree is back at committed_seq, which is also where the records
     * still kept begin, but for an unfinished chain's parts: those change
     * no tree until the last, so the tree is as well the log up to just
     * before the chain's first, where the replay starts. */
    /* records = unsettled, then records (the list splices at the back) */
    hearth__list_splice_back(&n->tail.unsettled, &n->tail.records);
    hearth__list_splice_back(&n->tail.records, &n->tail.unsettled);
    n->log.applied_seq = n->log.committed_seq;
    hearth__cluster_msg *first = HEARTH__LIST_FIRST_ITEM(
        &n->tail.records, hearth__cluster_msg, link);
    if (first && first->seq <= n->log.applied_seq)
        n->log.applied_seq = first->seq - 1;
    chain_reset(n, false);
}

void hearth__cluster_tail_own_appended(hearth__cluster_ns *n) {
    chain_reset(n, true);
}

void hearth__cluster_tail_settle_all(hearth__cluster_ns *n) {
    hearth__cluster_msg_free_all(&n->tail.unsettled);
    chain_reset(n, true);
}

void hearth__cluster_tail_clear(hearth__cluster_ns *n) {
    hearth__cluster_msg_free_all(&n->tail.records);
    hearth__cluster_msg_free_all(&n->tail.early);
    n->tail.remake = NULL; /* what it makes is dropped (remake_done) */
    hearth__cluster_tail_settle_all(n);
}

void hearth__cluster_tail_init(hearth__cluster_ns *n) {
    hearth__buf_init(&n->tail.chain);
}

bool hearth__cluster_tail_queued(const hearth__cluster_ns *n) {
    return !hearth__list_empty(&n->tail.records);
}

void hearth__cluster_tail_stop(hearth__cluster_ns *n) {
    hearth__cluster_unsubscribe(n->c, &n->tail.tail_sub);
}

uint64_t hearth__cluster_tail_applying(const hearth__cluster_ns *n,
                                       int64_t *stamp) {
    const hearth__cluster_msg *q = n->tail.applying;
    jsMsgMetaData *meta = NULL;
    *stamp = 0;
    if (q && natsMsg_GetMetaData(&meta, q->msg) == NATS_OK) {
        *stamp = meta->Timestamp;
        jsMsgMetaData_Destroy(meta);
    } else if (q) { /* one read directly by its sequence */
        *stamp = natsMsg_GetTime(q->msg);
    }
    return q ? q->seq : 0;
}

bool hearth__cluster_chain_open(const hearth__cluster_ns *n) {
    return n->tail.chain_parts != 0;
}

void hearth__cluster_apply_record(hearth__cluster_ns *n, hearth__db_op *o) {
    n->log.log_writes++;
    if (!hearth__db_embedded.write(n->db, o))
        hearth__db_op_done(o);
}

void hearth__cluster_tail_replace(hearth__cluster_ns *n, hearth__db_op *o,
                                  uint64_t seq) {
    hearth__cluster_tail_settle_all(n); /* all at or below seq now */
    /* A repair, not a write: the log's records fired their triggers
     * (at the leader, and kept here) when they applied. */
    o->quiet = true;
    hearth__cluster_apply_record(n, o);
    n->log.applied_seq = seq;
}

/* Who wrote a record, as its leader logged it (backend_embedded.c's
 * identity_of), given to o: the admin's import fires no triggers on any
 * node; a caller the leader judged is logged here as there, and its
 * events say who it was (a new leader puts those it kept). */
static int as_logged(hearth__db_op *o, const char *identity) {
    if (strcmp(identity, HEARTH__DB_QUIET_IDENTITY) == 0) {
        o->quiet = true;
    } else if (strcmp(identity, "anonymous") == 0) {
        o->judged_there = true;
    } else if (strncmp(identity, "uid:", 4) == 0) {
        hearth_node_t *auth = hearth_node_null();
        hearth_node_t *uid = hearth_node_string(identity + 4,
                                                strlen(identity + 4));
        if (!uid || hearth_node_set_child_new(&auth, "uid", uid, NULL)) {
            hearth_node_decref(auth);
            return HEARTH_ENOMEM;
        }
        o->judged_there = true;
        o->auth = auth;
    }
    return 0;
}

/* One record's payload ([[path, value], ...]) as a write, read as
 * recovery reads it (store/replay.c). */
static int record_op(const char *payload, size_t len, hearth__db_op **out) {
    hearth__record rec = {0};
    int rc = hearth__store_read_record(payload, len, &rec);
    if (!rc && !rec.n)
        rc = HEARTH_EIO;
    hearth__db_op *o = NULL;
    if (!rc)
        rc = hearth__db_write_op_create(rec.n, NULL, NULL, NULL, &o);
    for (size_t i = 0; !rc && i < rec.n; i++) {
        hearth__db_write_part *w = &o->parts[i];
        if (hearth__db_parse_write_path(rec.v[i].path,
                                        HEARTH__PATH_ALLOW_PRIORITY, &w->text,
                                        &w->path, NULL))
            rc = HEARTH_EIO;
        w->value = rec.v[i].value; /* taken over */
        rec.v[i].value = NULL;
    }
    if (!rc && rec.identity)
        rc = as_logged(o, rec.identity);
    hearth__record_free(&rec);
    if (rc && o)
        hearth__db_drop_op(o, rc);
    else
        *out = o;
    return rc;
}

/* Applies every record of one group commit of the leader's (data[0,
 * size)) in order, each as the write it was. */
static void apply_group(hearth__cluster_ns *n, const char *data, size_t size) {
    hearth__log_scan scan;
    hearth__log_check(data, size, false, &scan);
    if (scan.end != HEARTH__LOG_CLEAN)
        hearth__log(HEARTH_LOG_ERROR, "cluster: %s: a damaged record in the log "
                "(%s); applying its intact part", n->name,
                scan.why ? scan.why : "torn");
    const char *payload;
    size_t off = 0, len;
    while (hearth__log_next(data, &scan, &off, &payload, &len)) {
        hearth__db_op *o = NULL;
        int rc = record_op(payload, len, &o);
        if (rc) {
            hearth__log(HEARTH_LOG_WARNING, "cluster: %s: a record that does not "
                    "parse: %s", n->name, hearth_strerror(rc));
            continue;
        }
        hearth__cluster_apply_record(n, o);
    }
}

/* Whether q, part i of k (k 0: a whole record), is the leader's: opened
 * in its own buffer where it lies, fenced on its predecessor. Opened here,
 * as it is first applied, and once: the outcome stays in q (a rewind
 * applies it again, opened), so a forgery is counted once, and a leader's
 * own records, which come back only to be dropped as held, are never
 * opened at all. */
static bool genuine(hearth__cluster_ns *n, hearth__cluster_msg *q, size_t i,
                    size_t k) {
    if (!q->opened) {
        hearth__aad a;
        hearth__aad_init(&a);
        hearth__aad_str(&a, n->log.subject);
        hearth__aad_u64(&a, q->prev);
        hearth__aad_part(&a, i, k);
        int rc = hearth__cluster_unseal_in_place(
            n->c, HEARTH__REJECT_LOG, "log", &a,
            (void *)natsMsg_GetData(q->msg),
            (size_t)natsMsg_GetDataLength(q->msg), &q->plain, &q->plain_len);
        if (rc && rc != HEARTH_EDENIED)
            hearth__log(HEARTH_LOG_ERROR, "cluster: %s: a record at %llu could not "
                    "be opened (%s); skipped", n->name,
                    (unsigned long long)q->seq, hearth_strerror(rc));
        q->opened = rc ? -1 : 1;
    }
    return q->opened > 0;
}

/* One message of the log: a whole group, or a part of a chain, applied
 * once its last part is in (a chain cut short is dropped by the next
 * message: only the part after the one before belongs to it). One that
 * is not genuine changes nothing, and cuts a chain as any other would
 * (the leader's next part, fenced on the part before, was refused). */
static void apply_message(hearth__cluster_ns *n, hearth__cluster_msg *q) {
    uint64_t seq = q->seq;
    size_t i, k;
    bool part = hearth__cluster_part(q->msg, &i, &k);
    if (!genuine(n, q, part ? i : 0, part ? k : 0)) {
        chain_reset(n, false);
        return;
    }
    const char *data = q->plain;
    size_t size = q->plain_len;
    if (!part) {
        chain_reset(n, false);
        apply_group(n, data, size);
        return;
    }
    if (i == 1 || i != n->tail.chain_parts + 1)
        chain_reset(n, false);
    if (i != n->tail.chain_parts + 1)
        return; /* the middle of a chain whose start we missed */
    if (i == 1)
        n->tail.chain_first = seq;
    hearth__buf_add(&n->tail.chain, data, size);
    n->tail.chain_parts++;
    if (n->tail.chain.failed)
        hearth__log(HEARTH_LOG_WARNING, "cluster: %s: no memory for a record of %zu "
                "parts", n->name, k);
    if (i == k && !n->tail.chain.failed)
        apply_group(n, n->tail.chain.data, n->tail.chain.len);
    if (i == k || n->tail.chain.failed)
        chain_reset(n, true);
}

void hearth__cluster_tail_drain(hearth__cluster_ns *n) {
    /* This node's own writes are ahead of the log: they reach it first
     * (or are refused and undone), then the log's records apply; its own
     * records, back from the log, are dropped meanwhile. Nothing else
     * decides what applies: a record is skipped only when the tree holds
     * it (at or below applied_seq). */
    if (!hearth__cluster_tree_exact(n))
        return;
    bool applied = false;
    for (hearth__list *l; (l = hearth__list_pop_front(&n->tail.records));) {
        hearth__cluster_msg *q = HEARTH__LIST_ITEM(l, hearth__cluster_msg, link);
        if (q->seq <= n->log.applied_seq) {
            natsMsg_Destroy(q->msg);
            hearth__free(q);
            continue;
        }
        n->tail.applying = q;
        apply_message(n, q);
        n->tail.applying = NULL;
        n->log.applied_seq = q->seq;
        hearth__list_push_back(&n->tail.unsettled, &q->link);
        applied = true;
        if (hearth__cluster_checks_wanted(n))
            hearth__cluster_checks_applied(n);
    }
    hearth__cluster_snapshot_note(n);
    if (applied)
        n->db->backend->settle(n->db, true);
    hearth__cluster_forward_applied(n);
    if (hearth__cluster_holding(n))
        hearth__cluster_release_held(n);
}

uint64_t hearth__cluster_seq_read(const hearth__cluster_ns *n) {
    FILE *f = fopen(n->log.seq_file, "r");
    unsigned long long seq = 0;
    if (f) {
        if (fscanf(f, "%llu", &seq) != 1)
            seq = 0; /* replay it all: records apply again harmlessly */
        fclose(f);
    }
    return seq;
}

void hearth__cluster_seq_write(hearth__cluster_ns *n) {
    if (n->log.durable_seq == n->log.stored_seq)
        return;
    /* Overwritten in place, unsynced: a rename per commit would make the
     * file system flush it (ext4's auto_da_alloc), and a stale or torn
     * number only means replaying more of the log, which is harmless.
     * With it, where the local log ended then: past there, a restart
     * trusts the stream, not the local log (cluster/recover.c). */
    if (n->log.seq_fd <= 0)
        n->log.seq_fd =
            open(n->log.seq_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    hearth__embedded *e = n->db->impl;
    uint64_t gen = 0, bytes = 0;
    hearth__store_position(e->store, &gen, &bytes);
    char text[72];
    int len = snprintf(text, sizeof text, "%020llu %020llu %020llu\n",
                       (unsigned long long)n->log.durable_seq,
                       (unsigned long long)gen, (unsigned long long)bytes);
    if (n->log.seq_fd > 0 && pwrite(n->log.seq_fd, text, (size_t)len, 0) == len)
        n->log.stored_seq = n->log.durable_seq;
}

void hearth__cluster_tail_expect(hearth__cluster_ns *n, uint64_t seq) {
    if (seq <= n->tail.tail_last)
        return;
    if (seq > n->tail.expected)
        n->tail.expected = seq;
    if (!n->tail.behind_since)
        n->tail.behind_since = uv_now(n->c->loop);
}

/* ---- the consumer made again ---- */

/* The worker's part: what it needs, copied (the namespace may close
 * meanwhile: it is found again by name at the end), and what it made. */
typedef struct hearth__tail_remake {
    uv_work_t work;
    hearth__cluster *c;
    char name[130], stream[32], subject[96];
    uint64_t after, until; /* the records known missing: after..until */
    natsSubscription *old, *made;
    natsStatus status;
} hearth__tail_remake;

/* How long, and how many bytes, one making again reads records one by
 * one: while JetStream cannot make a consumer (no metadata leader, for
 * seconds after a server it paused comes back), these reads are all
 * that keeps the node current, and they must outpace the leader's
 * writes; bounded, as the worker is shared (the leases' rounds use it)
 * and what is read waits in memory until the loop applies it. */
#define FETCH_BUDGET_MS 250
#define FETCH_BUDGET_BYTES (64u << 20)

/* Reads the missing records by sequence, each a request the stream's
 * leader answers: no consumer to make, which just after an election
 * JetStream can take seconds to do, while a new leader waits for them.
 * Each goes to the loop at once, marked with the subject's sequence
 * before it (the tail takes it only as the next after its last); the
 * reading stops at the first that does not come (the consumer brings the
 * rest, and drops what it brings again), or at its budget (the next
 * making again goes on from there). The partition's stream interleaves
 * its namespaces' subjects: every sequence is read. */
static void fetch_missing(hearth__tail_remake *r) {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = HEARTH__CLUSTER_ROUND_WAIT_MS;
    /* As far as the subject's last record: a node left without a
     * consumer learns of the others' writes only so. */
    uint64_t end = r->until;
    natsMsg *last = NULL;
    if (js_GetLastMsg(&last, r->c->js, r->stream, r->subject, &jo, NULL) ==
            NATS_OK &&
        natsMsg_GetSequence(last) > end)
        end = natsMsg_GetSequence(last);
    natsMsg_Destroy(last);
    uint64_t deadline = uv_hrtime() + (uint64_t)FETCH_BUDGET_MS * 1000000;
    size_t bytes = 0;
    uint64_t prev = r->after;
    for (uint64_t seq = r->after + 1; seq <= end; seq++) {
        if (uv_hrtime() >= deadline || bytes >= FETCH_BUDGET_BYTES)
            return;
        natsMsg *m = NULL;
        if (js_GetMsg(&m, r->c->js, r->stream, seq, &jo, NULL) != NATS_OK)
            return;
        bytes += (size_t)natsMsg_GetDataLength(m);
        bool ours = strcmp(natsMsg_GetSubject(m), r->subject) == 0;
        hearth__cluster_msg *q = ours ? hearth__calloc(1, sizeof *q) : NULL;
        if (!q) {
            natsMsg_Destroy(m);
            if (ours)
                return; /* no memory: the consumer brings it */
            continue;   /* another namespace's */
        }
        q->kind = MSG_LOG;
        q->msg = m;
        q->seq = seq;
        q->sid = HEARTH__CLUSTER_SID_READ;
        q->prev = prev;
        prev = seq;
        hearth__cluster_post_msg(r->c, q);
    }
}

static void remake_work(uv_work_t *w) {
    hearth__tail_remake *r = w->data;
    fetch_missing(r);
    r->status = subscribe(r->c, r->stream, r->subject, r->after, &r->made);
}

/* The old consumer ends after the new one is in place: deleting it waits
 * for JetStream (out an election, when it is electing), which the new
 * one's records must not. Its records meanwhile are dropped (its sid is
 * not the tail's). */
static void retire_work(uv_work_t *w) {
    hearth__tail_remake *r = w->data;
    hearth__cluster_unsubscribe(r->c, &r->old);
    hearth__cluster_unsubscribe(r->c, &r->made); /* its namespace closed */
}

static void retire_done(uv_work_t *w, int status) {
    (void)status; /* never canceled */
    hearth__tail_remake *r = w->data;
    hearth__cluster *c = r->c;
    c->log.tail_remakes--;
    hearth__free(r);
    hearth__cluster_round_ended(c); /* a stop may wait for it (link.c) */
}

/* Loop: the consumer made (or not); what it delivered meanwhile goes to
 * the queue, in order; a failure is tried again sooner than a stall. */
static void remake_done(uv_work_t *w, int status) {
    (void)status; /* never canceled */
    hearth__tail_remake *r = w->data;
    hearth__cluster *c = r->c;
    hearth__cluster_ns *n = hearth__cluster_find(c, r->name);
    if (n && n->tail.remake == r) { /* else closed meanwhile */
        n->tail.remake = NULL;
        hearth__list early = {0};
        hearth__list_splice_back(&early, &n->tail.early);
        if (r->status == NATS_OK) {
            n->tail.tail_sub = r->made;
            r->made = NULL;
            n->tail.sid = (uint64_t)natsSubscription_GetID(n->tail.tail_sub);
            for (hearth__list *l; (l = hearth__list_pop_front(&early));)
                hearth__cluster_tail_push(
                    n, HEARTH__LIST_ITEM(l, hearth__cluster_msg, link));
            hearth__cluster_tail_drain(n);
        } else {
            hearth__cluster_msg_free_all(&early);
            hearth__log(HEARTH_LOG_WARNING, "cluster: cannot tail %s: %s; tried "
                    "again in %d ms", r->subject, natsStatus_GetText(r->status),
                    HEARTH__CLUSTER_TAIL_RETRY_MS);
            n->tail.retry_at = uv_now(c->loop) + HEARTH__CLUSTER_TAIL_RETRY_MS;
        }
    }
    if ((r->old || r->made) &&
        !uv_queue_work(c->loop, &r->work, retire_work, retire_done))
        return;
    retire_work(&r->work); /* no worker: here */
    retire_done(&r->work, 0);
}

int hearth__cluster_tail_remakes(const hearth__cluster *c) {
    return c->log.tail_remakes;
}

/* Every record the consumer delivered is applied, queued, or this
 * node's own (in the tree as written): with none queued and the tree
 * exactly the log, the tree is at least where the tail is. Short of it,
 * records were dropped that nothing delivers again, and the leader would
 * wait for them for ever: a fault of this code, said as one, and
 * repaired by reading them again. */
static bool tree_lost_records(hearth__cluster_ns *n) {
    if (n->tail.remake || n->log.applied_seq >= n->tail.tail_last ||
        !hearth__list_empty(&n->tail.records) ||
        !hearth__cluster_tree_exact(n))
        return false;
    hearth__log(HEARTH_LOG_ERROR, "cluster: %s: the tree is at %llu, behind the "
            "%llu its consumer delivered, with nothing queued; reading the "
            "records again", n->name, (unsigned long long)n->log.applied_seq,
            (unsigned long long)n->tail.tail_last);
    if (n->tail.tail_last > n->tail.expected)
        n->tail.expected = n->tail.tail_last;
    if (!n->tail.behind_since) /* watched until they come */
        n->tail.behind_since = uv_now(n->c->loop);
    return true;
}

void hearth__cluster_tail_watch(hearth__cluster_ns *n) {
    /* The tree holds what was expected (a leader's own appends pass its
     * tail by): nothing is missing. */
    if (n->tail.expected <= n->log.applied_seq)
        n->tail.behind_since = 0;
    uint64_t now = uv_now(n->c->loop);
    bool stalled = n->tail.behind_since &&
                   now - n->tail.behind_since >= HEARTH__CLUSTER_TAIL_STALL_MS;
    bool lost = !stalled && tree_lost_records(n);
    /* No consumer at all (its making failed, at open or since): made
     * again whether or not a record is known to be missing, else the
     * others' writes would never reach this node. */
    bool none = !n->tail.tail_sub && now >= n->tail.retry_at;
    if (n->tail.remake || (!stalled && !lost && !none))
        return;
    hearth__tail_remake *r = hearth__calloc(1, sizeof *r);
    if (!r)
        return; /* the next tick tries again */
    /* Made again after what the tree holds; what is queued past it comes
     * again from the new consumer (the queue drops what it has). */
    if (stalled)
        hearth__log(HEARTH_LOG_WARNING, "cluster: %s: the log holds records to "
                "%llu that this node's consumer did not deliver; it is made "
                "again from %llu", n->name,
                (unsigned long long)n->tail.expected,
                (unsigned long long)n->log.applied_seq + 1);
    r->c = n->c;
    snprintf(r->name, sizeof r->name, "%s", n->name);
    snprintf(r->stream, sizeof r->stream, "%s", n->log.stream);
    snprintf(r->subject, sizeof r->subject, "%s", n->log.subject);
    r->after = n->log.applied_seq;
    r->until = n->tail.expected;
    r->old = n->tail.tail_sub;
    r->work.data = r;
    n->tail.tail_sub = NULL;
    n->tail.tail_last = n->log.applied_seq;
    hearth__cluster_msg_free_all(&n->tail.records);
    /* watched again until the records come (expected stays) */
    if (n->tail.behind_since)
        n->tail.behind_since = now;
    n->tail.remake = r;
    n->c->log.tail_remakes++;
    if (uv_queue_work(n->c->loop, &r->work, remake_work, remake_done)) {
        remake_work(&r->work); /* no worker: here */
        remake_done(&r->work, 0);
    }
}
