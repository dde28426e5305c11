/* history.c - a cluster's namespace as it was at a moment, and its changes
 * (cluster/pitr.h), read from JetStream by any node: a checkpoint
 * (HEARTH_HIST) and the namespace's log after it, each message opened as
 * the tail opens it (cluster/tail.c: sealed for its subject, its fence and
 * its part; one that does not open changes nothing) and its records walked
 * as a data directory's are (store/history.h), a record going by its
 * message's sequence in the stream. Runs on a worker thread: it waits on
 * JetStream (each call bounded by HEARTH__CLUSTER_WAIT_MS). */
#include "cluster/node.h"

#include "store/history.h"
#include "store/logfile.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define BATCH 256

/* An ephemeral pull consumer of one subject from a sequence on: fetched
 * in batches, so a long log never floods the client. */
typedef struct reader {
    natsSubscription *sub;
    uint64_t pending; /* messages of the subject still to come */
    natsMsgList list;
    int at;
} reader;

static int nats_error(hearth_error_t *err, natsStatus s, const char *subject,
                      const char *what) {
    int rc = hearth__cluster_error(s);
    return hearth__error(err, rc ? rc : HEARTH_EIO, subject,
                         "cluster: %s: %s: %s", subject, what,
                         natsStatus_GetText(s));
}

static int reader_open(hearth__cluster *c, const char *stream,
                       const char *subject, uint64_t from, reader *r,
                       hearth_error_t *err) {
    *r = (reader){0};
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Config.DeliverPolicy = js_DeliverByStartSequence;
    so.Config.OptStartSeq = from ? from : 1;
    /* nothing acknowledged: the node's NATS user may not publish acks
     * ($JS.ACK.>, examples/nats-server.conf), nor need it */
    so.Config.AckPolicy = js_AckNone;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = HEARTH__CLUSTER_WAIT_MS;
    jsErrCode jerr = 0;
    natsStatus s = js_PullSubscribe(&r->sub, c->js, subject, NULL, &jo, &so,
                                    &jerr);
    jsConsumerInfo *ci = NULL;
    if (s == NATS_OK)
        s = natsSubscription_GetConsumerInfo(&ci, r->sub, &jo, &jerr);
    if (s == NATS_OK)
        r->pending = ci->NumPending;
    jsConsumerInfo_Destroy(ci);
    return s == NATS_OK ? 0 : nats_error(err, s, subject, "cannot read it");
}

/* The next message (*m, the caller's; *seq its stream sequence): 1, or 0
 * at the end, or an error. */
static int reader_next(reader *r, const char *subject, natsMsg **m,
                       uint64_t *seq, hearth_error_t *err) {
    if (r->at == r->list.Count) {
        if (!r->pending)
            return 0;
        natsMsgList_Destroy(&r->list);
        r->list = (natsMsgList){0};
        r->at = 0;
        int batch = r->pending < BATCH ? (int)r->pending : BATCH;
        natsStatus s = natsSubscription_Fetch(&r->list, r->sub, batch,
                                              HEARTH__CLUSTER_WAIT_MS, NULL);
        if (s != NATS_OK || !r->list.Count)
            return nats_error(err, s == NATS_OK ? NATS_TIMEOUT : s, subject,
                              "reading it stopped");
    }
    *m = r->list.Msgs[r->at];
    r->list.Msgs[r->at++] = NULL;
    jsMsgMetaData *meta = NULL;
    if (natsMsg_GetMetaData(&meta, *m) != NATS_OK) {
        natsMsg_Destroy(*m);
        return hearth__error(err, HEARTH_EIO, subject,
                             "cluster: %s: a message without its place in "
                             "the stream", subject);
    }
    *seq = meta->Sequence.Stream;
    r->pending = meta->NumPending;
    jsMsgMetaData_Destroy(meta);
    return 1;
}

static void reader_close(hearth__cluster *c, reader *r) {
    natsMsgList_Destroy(&r->list);
    hearth__cluster_unsubscribe(c, &r->sub); /* deletes the consumer */
}

/* ---- a checkpoint ---- */

static int load_checkpoint(hearth__cluster *c, const char *name,
                           const hearth__pitr_checkpoint *cp, hearth_node_t **root,
                           hearth_error_t *err) {
    char subject[160];
    hearth__pitr_subject(name, subject);
    reader r;
    int rc = reader_open(c, HEARTH__PITR_STREAM, subject, cp->first, &r, err);
    hearth__buf json;
    hearth__buf_init(&json);
    /* Parts in order from FIRST; anything else on the subject (one an
     * outsider put there, which does not open) is passed over. */
    size_t want = 1;
    while (!rc && want <= cp->parts) {
        natsMsg *m = NULL;
        uint64_t seq = 0;
        size_t i = 0, k = 0;
        if (reader_next(&r, subject, &m, &seq, err) != 1) {
            rc = hearth__error(err, HEARTH_EIO, subject,
                               "cluster: %s: the checkpoint at sequence "
                               "%" PRIu64 " is missing or damaged (part %zu "
                               "of %u not found from %" PRIu64 ")",
                               name, cp->seq, want, cp->parts, cp->first);
            break;
        }
        hearth__aad a;
        hearth__pitr_part_context(&a, subject, cp, want);
        if (hearth__cluster_part(m, &i, &k) && i == want && k == cp->parts &&
            !hearth__cluster_unseal(c, HEARTH__REJECT_LOG, "hist", &a,
                                    natsMsg_GetData(m),
                                    (size_t)natsMsg_GetDataLength(m), &json))
            want++;
        natsMsg_Destroy(m);
    }
    reader_close(c, &r);
    if (!rc && json.failed)
        rc = hearth__error_code(err, HEARTH_ENOMEM);
    if (!rc && hearth_node_from_json(json.data, json.len, 0, root, NULL))
        rc = hearth__error(err, HEARTH_EIO, subject,
                           "cluster: %s: the checkpoint at sequence %" PRIu64
                           " does not parse", name, cp->seq);
    hearth__buf_free(&json);
    return rc;
}

/* ---- the log after it ---- */

typedef struct replay {
    hearth__cluster *c;
    char stream[32], subject[96];
    hearth__history *walk;
    uint64_t prev;     /* the sequence of the subject's message before */
    hearth__buf chain; /* a chain's parts so far */
    size_t chain_parts;
} replay;

/* A whole group's records, each going by seq. */
static int take_group(replay *p, const char *data, size_t size, uint64_t seq,
                      hearth_error_t *err) {
    hearth__log_scan scan;
    hearth__log_check(data, size, false, &scan);
    const char *payload;
    size_t off = 0, len;
    while (!p->walk->stopped && !p->walk->cb_rc &&
           hearth__log_next(data, &scan, &off, &payload, &len))
        if (hearth__history_take(p->walk, payload, len, seq))
            return hearth__error(err, HEARTH_EIO, p->subject,
                                 "cluster: %s: the record at sequence "
                                 "%" PRIu64 " does not read",
                                 p->subject, seq);
    return 0;
}

/* One message of the log: opened for its place (else passed over, as
 * every node's tail passes it), a group taken, or a chain's part kept
 * until its last. */
static int take_message(replay *p, natsMsg *m, uint64_t seq,
                        hearth_error_t *err) {
    size_t i = 0, k = 0;
    bool part = hearth__cluster_part(m, &i, &k);
    hearth__aad a;
    hearth__aad_init(&a);
    hearth__aad_str(&a, p->subject);
    hearth__aad_u64(&a, p->prev);
    hearth__aad_part(&a, part ? i : 0, part ? k : 0);
    p->prev = seq;
    hearth__buf plain;
    hearth__buf_init(&plain);
    int rc = 0;
    if (hearth__cluster_unseal(p->c, HEARTH__REJECT_LOG, "log", &a,
                               natsMsg_GetData(m),
                               (size_t)natsMsg_GetDataLength(m), &plain)) {
        p->chain.len = p->chain_parts = 0; /* a no-op; it cuts a chain */
    } else if (!part) {
        p->chain.len = p->chain_parts = 0;
        rc = take_group(p, plain.data, plain.len, seq, err);
    } else if (i == p->chain_parts + 1) {
        if (i == 1)
            p->chain.len = 0;
        hearth__buf_add(&p->chain, plain.data, plain.len);
        p->chain_parts = i;
        if (i == k && !p->chain.failed)
            rc = take_group(p, p->chain.data, p->chain.len, seq, err);
        if (i == k || p->chain.failed)
            p->chain.len = p->chain_parts = 0;
    } else {
        p->chain.len = p->chain_parts = 0; /* a chain cut short */
    }
    hearth__buf_free(&plain);
    return rc;
}

/* Walks name's log after sequence from (whose message is the fence of the
 * first after it). */
static int replay_log(hearth__cluster *c, const char *name, uint64_t from,
                      hearth__history *walk, hearth_error_t *err) {
    replay p = {.c = c, .walk = walk, .prev = from};
    hearth__cluster_stream_names(name, p.stream, p.subject);
    hearth__buf_init(&p.chain);
    reader r;
    int rc = reader_open(c, p.stream, p.subject, from + 1, &r, err);
    while (!rc && !walk->stopped && !walk->cb_rc) {
        natsMsg *m = NULL;
        uint64_t seq;
        rc = reader_next(&r, p.subject, &m, &seq, err);
        if (rc == 1)
            rc = take_message(&p, m, seq, err);
        else if (rc == 0)
            break;
        natsMsg_Destroy(m);
    }
    reader_close(c, &r);
    hearth__buf_free(&p.chain);
    return rc;
}

/* ---- where a walk starts ---- */

/* The checkpoint to start from for at_ms / at_seq (0: any; listing: the
 * oldest), or NULL for the log's beginning (nothing purged). A moment
 * older than every checkpoint gets the oldest, which the walk then
 * refuses naming it. HEARTH_ENOTFOUND when the log is purged and no
 * checkpoint follows the purge. */
static int pick_start(const char *name, const hearth__pitr_index *idx,
                      bool listing, int64_t at_ms, uint64_t at_seq,
                      const hearth__pitr_checkpoint **out, hearth_error_t *err) {
    *out = NULL;
    size_t usable = idx->n; /* the oldest followed by every record */
    for (size_t i = 0; i < idx->n && usable == idx->n; i++)
        if (idx->cp[i].seq + 1 >= idx->floor)
            usable = i;
    if (idx->floor <= 1 && (listing || !idx->n))
        return 0;
    for (size_t i = idx->n; !listing && i-- > usable;) {
        const hearth__pitr_checkpoint *cp = &idx->cp[i];
        if ((!at_ms || cp->time_ms <= at_ms) && (!at_seq || cp->seq <= at_seq)) {
            *out = cp;
            return 0;
        }
    }
    if (idx->floor <= 1)
        return 0; /* before every checkpoint: from the beginning */
    if (usable == idx->n)
        return hearth__error(err, HEARTH_ENOTFOUND, name,
                             "%s: not retained: the cluster's log is purged "
                             "below sequence %" PRIu64 " and no checkpoint "
                             "follows (hearth serve --retain keeps them)",
                             name, idx->floor);
    *out = &idx->cp[usable];
    return 0;
}

static int walk_from_start(hearth__cluster *c, const char *name,
                           hearth__history *walk, bool listing,
                           hearth_error_t *err) {
    hearth__pitr_index idx;
    int rc = hearth__pitr_index_read(c, name, &idx, NULL, err);
    const hearth__pitr_checkpoint *cp = NULL;
    if (!rc)
        rc = pick_start(name, &idx,
                        listing, walk->at_ms == INT64_MAX ? 0 : walk->at_ms,
                        walk->at_seq == UINT64_MAX ? 0 : walk->at_seq, &cp,
                        err);
    if (!rc && cp && !listing) {
        hearth_node_t *root = NULL;
        rc = load_checkpoint(c, name, cp, &root, err);
        if (!rc) {
            hearth_node_decref(walk->root);
            walk->root = root;
        }
    }
    if (!rc)
        hearth__history_start(walk, cp ? cp->seq : 0,
                              cp ? cp->time_ms : INT64_MIN);
    if (!rc)
        rc = replay_log(c, name, cp ? cp->seq : 0, walk, err);
    return rc;
}

int hearth__cluster_state_at(hearth__cluster *c, const char *name,
                             int64_t at_ms, uint64_t at_seq,
                             hearth_node_t **out, hearth_error_t *err) {
    hearth__history walk;
    if (hearth__history_rebuild(&walk, at_ms, at_seq))
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = walk_from_start(c, name, &walk, false, err);
    if (rc) {
        hearth_node_decref(walk.root);
        return rc;
    }
    return hearth__history_finish(&walk, name, out, err);
}

int hearth__cluster_changes(hearth__cluster *c, const char *name,
                            const char *path, int64_t since_ms,
                            int64_t until_ms, hearth_change_cb cb, void *ctx,
                            hearth_error_t *err) {
    hearth__history walk;
    hearth__history_listing(&walk, path, since_ms, until_ms, cb, ctx);
    int rc = walk_from_start(c, name, &walk, true, err);
    return rc ? rc : walk.cb_rc;
}
