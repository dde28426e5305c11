/* append.c - the leader's append of one group commit to the namespace's
 * log: one message, or, past the servers' maximum message size, a chain
 * of parts (header Hearth-Part: i/k, also used by forwarded writes) that
 * followers join before applying (cluster/tail.c). Every message is
 * fenced on the subject's sequence before it: the first on the last record this node's tree holds, each
 * next part on the part before, so a chain is whole and uninterrupted or
 * refused; a chain cut short (its leader refused or dead) is never
 * applied and is passed over by the next. Runs on the commit's worker
 * thread: a whole record is sent without waiting, so the local log's
 * write and fsync run while it is in flight (db/commit.c waits for both).
 *
 * Sealed (cluster/sealing.h), each message is bound to its place: its
 * subject, the fence (the subject's sequence before it) and its part
 * marker (the Hearth-Part header is cleartext). A genuine message copied
 * anywhere else in the log, or a part moved within a chain, does not
 * open where it lands (tail.c skips it). A whole record is sealed where
 * it lies in the commit's buffer, the only copy being the message's own. */
#include "cluster/node.h"

#include <stdio.h>

#define PART_HEADER "Hearth-Part"
/* Room left in a message for its headers. */
#define HEADER_ROOM 1024

/* The fence: the subject's last sequence must be after (0: no message). */
static void fence(jsPubOptions *po, uint64_t after) {
    jsPubOptions_Init(po);
    po->MaxWait = HEARTH__CLUSTER_WAIT_MS;
    if (after)
        po->ExpectLastSubjectSeq = after;
    else
        po->ExpectNoMessage = true;
}

/* A refusal as a Hearth error: 10071 (another record came first, the tree
 * is stale) and every other JetStream refusal is EIO. */
static int refusal(natsStatus s, jsErrCode jerr) {
    return s == NATS_OK ? 0 : jerr ? HEARTH_EIO : hearth__cluster_error(s);
}

/* The context a log message is sealed for (tail.c opens it with the
 * same): its subject, its fence, its part (k 0: a whole record). */
static void log_context(hearth__aad *a, const hearth__cluster_ns *n,
                        uint64_t after, size_t i, size_t k) {
    hearth__aad_init(a);
    hearth__aad_str(a, n->log.subject);
    hearth__aad_u64(a, after);
    hearth__aad_part(a, i, k);
}

/* A message of data (already sealed, or unsealed) on n's subject, part i
 * of k (k 0: a whole record). */
static int message(hearth__cluster_ns *n, const char *data, size_t len,
                   size_t i, size_t k, natsMsg **out) {
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, n->log.subject, NULL, data, (int)len);
    if (s == NATS_OK && k)
        s = hearth__cluster_part_mark(m, i, k);
    if (s != NATS_OK) {
        natsMsg_Destroy(m);
        return hearth__cluster_error(s);
    }
    *out = m;
    return 0;
}

/* Whether an append may be sent now. Not while NATS is away: libnats
 * would keep it for the next server and answer it only at its 5 s bound
 * (holding the write, and a stop, that long), and a reconnection may come
 * after another leader took over. Refused here, the write fails at once
 * and for sure: the record is not in the log. */
static int connected(const hearth__cluster_ns *n) {
    return natsConnection_Status(n->c->nc) == NATS_CONN_STATUS_CONNECTED
               ? 0
               : HEARTH_EDISCONNECTED;
}

/* Appends data as one message fenced on after and waits for the stream's
 * answer; *seq: its sequence. Part i of k, or k 0 for a whole record. */
static int append_one(hearth__cluster_ns *n, const char *data, size_t len,
                      uint64_t after, size_t i, size_t k, uint64_t *seq) {
    natsMsg *m = NULL;
    hearth__aad a;
    log_context(&a, n, after, i, k);
    hearth__buf sealed;
    hearth__buf_init(&sealed);
    int rc = hearth__cluster_sealed(n->c)
                 ? hearth__cluster_seal(n->c, "log", &a, data, len, &sealed)
                 : 0;
    if (!rc && hearth__cluster_sealed(n->c))
        rc = message(n, sealed.data, sealed.len, i, k, &m);
    else if (!rc)
        rc = message(n, data, len, i, k, &m);
    hearth__buf_free(&sealed);
    if (rc)
        return rc;
    if ((rc = connected(n))) {
        natsMsg_Destroy(m);
        return rc;
    }
    jsPubOptions po;
    fence(&po, after);
    jsPubAck *ack = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_PublishMsg(&ack, n->c->js, m, &po, &jerr);
    natsMsg_Destroy(m);
    if (s == NATS_OK)
        *seq = ack->Sequence;
    jsPubAck_Destroy(ack);
    n->log.batch_jerr = (int)jerr;
    n->log.batch_status = (int)s;
    return refusal(s, jerr);
}

size_t hearth__cluster_room(hearth__cluster *c) {
    /* A sealed message carries its envelope's header and tag too. */
    size_t room = HEADER_ROOM + (hearth__cluster_sealed(c) ? HEARTH__SEAL_OVERHEAD : 0);
    int64_t max = natsConnection_GetMaxPayload(c->nc);
    return max > 2 * (int64_t)room ? (size_t)max - room : 1;
}

natsStatus hearth__cluster_part_mark(natsMsg *m, size_t i, size_t k) {
    char part[48];
    snprintf(part, sizeof part, "%zu/%zu", i, k);
    return natsMsgHeader_Set(m, PART_HEADER, part);
}

int hearth__cluster_append(hearth__cluster_ns *n, const char *data,
                           size_t len, uint64_t after, uint64_t *seq) {
    size_t room = hearth__cluster_room(n->c);
    if (len <= room)
        return append_one(n, data, len, after, 0, 0, seq);
    size_t parts = (len + room - 1) / room;
    int rc = 0;
    for (size_t i = 0; !rc && i < parts; i++) {
        size_t at = i * room, size = len - at < room ? len - at : room;
        rc = append_one(n, data + at, size, after, i + 1, parts, seq);
        after = *seq;
    }
    return rc;
}

/* The stream's answer to an append (a NATS thread): the one awaited
 * wakes hearth__cluster_append_wait; one given up is dropped. */
void hearth__cluster_on_ack(jsCtx *js, natsMsg *m, jsPubAck *pa,
                            jsPubAckErr *pae, void *closure) {
    (void)js;
    hearth__cluster_ns *n = closure;
    uv_mutex_lock(&n->log.ack_lock);
    if (m == n->log.awaited) {
        if (pa) {
            n->log.batch_seq = pa->Sequence;
            n->log.batch_rc = 0;
        } else {
            n->log.batch_jerr = (int)pae->ErrCode;
            n->log.batch_status = (int)(pae->Err ? pae->Err : NATS_ERR);
            n->log.batch_rc =
                refusal(pae->Err ? pae->Err : NATS_ERR, pae->ErrCode);
        }
        n->log.awaited = NULL;
        n->log.acked = true;
        uv_cond_signal(&n->log.ack_cond);
    }
    uv_mutex_unlock(&n->log.ack_lock);
    natsMsg_Destroy(m);
}

int hearth__cluster_acks_init(hearth__cluster_ns *n) {
    if (uv_mutex_init(&n->log.ack_lock))
        return HEARTH_ENOMEM;
    if (uv_cond_init(&n->log.ack_cond)) {
        uv_mutex_destroy(&n->log.ack_lock);
        return HEARTH_ENOMEM;
    }
    n->log.ack_ready = true;
    return 0;
}

void hearth__cluster_acks_free(hearth__cluster_ns *n) {
    if (!n->log.ack_ready)
        return;
    /* An answer still owed names n: it comes, or the library's own bound
     * (the append's MaxWait) answers it, before n goes. Without a
     * connection none can come: jsCtx_Destroy drops what is pending and
     * stops the timer that would answer it. */
    if (n->log.abandoned && n->log.js &&
        natsConnection_Status(n->c->nc) == NATS_CONN_STATUS_CONNECTED) {
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = 2 * HEARTH__CLUSTER_WAIT_MS;
        js_PublishAsyncComplete(n->log.js, &po);
    }
    uv_cond_destroy(&n->log.ack_cond);
    uv_mutex_destroy(&n->log.ack_lock);
    n->log.ack_ready = false;
}

/* What append_wait waits for: m's answer, or nothing (NULL: answered
 * already). */
static void await(hearth__cluster_ns *n, const natsMsg *m) {
    uv_mutex_lock(&n->log.ack_lock);
    n->log.awaited = m;
    n->log.acked = m == NULL;
    uv_mutex_unlock(&n->log.ack_lock);
}

int hearth__cluster_append_start(hearth__cluster_ns *n, hearth__buf *bytes,
                                 uint64_t after) {
    n->log.batch_rc = 0;
    await(n, NULL);
    size_t at = hearth__cluster_seal_room(n->c), len = bytes->len - at;
    if (len > hearth__cluster_room(n->c)) /* a chain: part after part */
        return hearth__cluster_append(n, bytes->data + at, len, after,
                                      &n->log.batch_seq);
    int rc = 0;
    if (hearth__cluster_sealed(n->c)) {
        hearth__aad a;
        log_context(&a, n, after, 0, 0);
        if (!hearth__buf_reserve(bytes, HEARTH__SEAL_TAG))
            return HEARTH_ENOMEM;
        rc = hearth__cluster_seal_in_place(n->c, "log", &a, bytes->data, len);
        len += HEARTH__SEAL_OVERHEAD;
        at = 0;
    }
    natsMsg *m = NULL;
    if (!rc)
        rc = connected(n);
    if (!rc)
        rc = message(n, bytes->data + at, len, 0, 0, &m);
    if (rc)
        return rc;
    jsPubOptions po;
    fence(&po, after);
    n->log.batch_disconnects = hearth__cluster_disconnects(n->c);
    await(n, m);
    natsStatus s = js_PublishMsgAsync(n->log.js, &m, &po);
    if (s != NATS_OK) {
        await(n, NULL); /* not sent: m is still ours */
        n->log.batch_status = (int)s;
    }
    natsMsg_Destroy(m); /* NULL once the library took it */
    return hearth__cluster_error(s);
}

int hearth__cluster_append_wait(hearth__cluster_ns *n) {
    /* Bounded: the append's MaxWait answers it with a timeout; a lost
     * connection ends the wait at once (checked every 50 ms), since the
     * answer would have come back on it. Whether the record was stored
     * is then unknown, as after a timeout: the write fails, and the tail
     * brings the record if it is in the log. */
    uint64_t end = uv_hrtime() + (uint64_t)(HEARTH__CLUSTER_WAIT_MS + 1000) * 1000000;
    int rc = 0;
    uv_mutex_lock(&n->log.ack_lock);
    while (!n->log.acked) {
        bool lost = hearth__cluster_disconnects(n->c) != n->log.batch_disconnects;
        if (lost || uv_hrtime() >= end) {
            n->log.awaited = NULL; /* its answer, if any, is dropped */
            n->log.abandoned = true;
            rc = HEARTH_EDISCONNECTED;
            break;
        }
        uv_cond_timedwait(&n->log.ack_cond, &n->log.ack_lock, 50 * 1000000);
    }
    if (!rc)
        rc = n->log.batch_rc;
    uv_mutex_unlock(&n->log.ack_lock);
    return rc;
}

bool hearth__cluster_part(natsMsg *m, size_t *i, size_t *k) {
    const char *value = NULL;
    if (natsMsgHeader_Get(m, PART_HEADER, &value) != NATS_OK || !value)
        return false;
    return sscanf(value, "%zu/%zu", i, k) == 2 && *i >= 1 && *i <= *k;
}
