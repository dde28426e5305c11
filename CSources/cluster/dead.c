/* dead.c - a cluster's dead letters (cluster.h): the trigger events whose
 * endpoint failed max_attempts times, kept in JetStream so that any node
 * lists and retries them and no node's death loses them.
 *
 * Where: stream HEARTH_DEAD (limits, every replica the cluster asks for,
 * direct gets allowed: any replica answers a listing), one message per
 * event on subject hearth.dead.TRIGGER.NAMESPACE, Nats-Msg-Id the batch's
 * id and the event's place in it (a batch delivered again after its
 * holder died puts its dead letters once, within the duplicate window),
 * the event framed as in its batch, sealed (purpose "dead", context:
 * subject and message id) as all a node puts into NATS.
 *
 * When: the deliverer puts it and waits for the stream's answer before
 * its batch is acknowledged, so a crash between the two yields at worst
 * the letter twice, never none.
 *
 * Retry: each letter put again on hearth.trig.TRIGGER.NAMESPACE (the
 * normal path: the trigger's consumer hands it to one node, in order),
 * message id "dead:SEQ" (its place in HEARTH_DEAD: two retries at once
 * queue it once), and deleted from HEARTH_DEAD only once HEARTH_TRIGGERS
 * has answered. Letters that do not open are never listed or queued,
 * counted (hearth_cluster_rejected_total{kind="trig"}) each time a node
 * reads one, and deleted once they are the oldest (by a retry, or a
 * listing that meets one first: see next_letter).
 *
 * Threads: all but start block on JetStream (at most
 * HEARTH__CLUSTER_WAIT_MS a call); they run on the deliverers' threads
 * and the server's workers, never on the loop. */
#include "cluster/node.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define DEAD_SUBJECTS "hearth.dead.>"

int hearth__cluster_dead_start(hearth__cluster *c, hearth_error_t *err) {
    /* direct gets: listings by subject, from any replica */
    natsStatus s = hearth__cluster_make_stream(c, HEARTH__CLUSTER_DEAD_STREAM,
                                               DEAD_SUBJECTS,
                                               HEARTH__STREAM_DIRECT);
    if (s != NATS_OK)
        return hearth__error(err, hearth__cluster_error(s), NULL,
                             "cluster: cannot make the dead letters' stream "
                             "%s: %s", HEARTH__CLUSTER_DEAD_STREAM,
                             natsStatus_GetText(s));
    return 0;
}

static int fail(natsStatus s) {
    int rc = hearth__cluster_error(s);
    return rc ? rc : HEARTH_EIO;
}

/* Sealed data published on subject with message id, the stream's answer
 * awaited. */
static int put_sealed(hearth__cluster *c, const char *purpose,
                      const char *subject, const char *id, const void *data,
                      size_t len) {
    hearth__aad a;
    hearth__aad_init(&a);
    hearth__aad_str(&a, subject);
    hearth__aad_str(&a, id);
    hearth__buf sealed;
    hearth__buf_init(&sealed);
    int rc = hearth__cluster_seal(c, purpose, &a, data, len, &sealed);
    if (!rc && sealed.failed)
        rc = HEARTH_ENOMEM;
    natsMsg *m = NULL;
    natsStatus s = NATS_OK;
    if (!rc)
        s = natsMsg_Create(&m, subject, NULL, sealed.data, (int)sealed.len);
    if (!rc && s == NATS_OK)
        s = natsMsgHeader_Set(m, "Nats-Msg-Id", id);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = HEARTH__CLUSTER_WAIT_MS;
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    if (!rc && s == NATS_OK)
        s = js_PublishMsg(&pa, c->trig.js, m, &po, &jerr);
    if (!rc && s != NATS_OK)
        rc = fail(s);
    jsPubAck_Destroy(pa);
    natsMsg_Destroy(m);
    hearth__buf_free(&sealed);
    return rc;
}

int hearth__cluster_triggers_bury(hearth__cluster *c,
                                  hearth__cluster_batch *b, unsigned k,
                                  const void *frame, size_t len) {
    if (!c->trig.started)
        return HEARTH_EUNSUPPORTED;
    natsMsg *m = hearth__cluster_batch_msg(b);
    const char *from = natsMsg_GetSubject(m), *id = NULL;
    natsMsgHeader_Get(m, "Nats-Msg-Id", &id);
    size_t skip = strlen("hearth.trig.");
    if (strncmp(from, "hearth.trig.", skip) != 0)
        return HEARTH_EINVAL; /* the consumer's filter makes it one */
    char subject[256], dead_id[300];
    int sn = snprintf(subject, sizeof subject, "hearth.dead.%s", from + skip);
    int in = snprintf(dead_id, sizeof dead_id, "%s:%u", id ? id : "", k);
    if (sn < 0 || (size_t)sn >= sizeof subject || in < 0 ||
        (size_t)in >= sizeof dead_id)
        return HEARTH_EINVAL;
    return put_sealed(c, "dead", subject, dead_id, frame, len);
}

/* The letter of trigger at or after *seq (a direct get: any replica),
 * opened into out (replacing what it held), with its subject's namespace
 * part and its sequence; 1 when there is none, HEARTH_EDENIED when it
 * does not open (never listed or retried; deleted here when first).
 *
 * Letters are only ever deleted oldest first per subject (first: no
 * letter of the trigger before it): nats-server 2.9 keeps a subject's
 * last sequence stale when its last message is deleted while others
 * remain, and later takes that stale sequence for the subject's first,
 * so that a lookup by subject no longer finds the letters left. */
static int next_letter(hearth__cluster *c, const char *filter, uint64_t *seq,
                       hearth__buf *out, char *ns, size_t ns_size,
                       bool first) {
    jsDirectGetMsgOptions dg;
    jsDirectGetMsgOptions_Init(&dg);
    dg.Sequence = *seq;
    dg.NextBySubject = filter;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = HEARTH__CLUSTER_WAIT_MS;
    natsMsg *m = NULL;
    natsStatus s = js_DirectGetMsg(&m, c->trig.js,
                                   HEARTH__CLUSTER_DEAD_STREAM, &jo, &dg);
    if (s == NATS_NOT_FOUND)
        return 1;
    if (s != NATS_OK)
        return fail(s);
    *seq = natsMsg_GetSequence(m);
    const char *subject = natsMsg_GetSubject(m), *id = NULL;
    natsMsgHeader_Get(m, "Nats-Msg-Id", &id);
    /* hearth.dead.TRIGGER.NAMESPACE: filter is hearth.dead.TRIGGER.> */
    size_t head = strlen(filter) - 1;
    snprintf(ns, ns_size, "%s",
             subject && strlen(subject) > head ? subject + head : "");
    hearth__aad a;
    hearth__aad_init(&a);
    hearth__aad_str(&a, subject);
    hearth__aad_str(&a, id);
    out->len = 0;
    out->failed = false;
    int rc = hearth__cluster_unseal(c, HEARTH__REJECT_TRIG, "dead", &a,
                                    natsMsg_GetData(m),
                                    (size_t)natsMsg_GetDataLength(m), out);
    natsMsg_Destroy(m);
    if (rc == HEARTH_EDENIED && first) /* an outsider's: dropped, counted */
        js_DeleteMsg(c->trig.js, HEARTH__CLUSTER_DEAD_STREAM, *seq, NULL,
                     NULL);
    return rc;
}

/* A listing or retry begins (false: the cluster stops; do nothing), and
 * ends. Counted before the stop is looked at, as the stop sets it before
 * it counts them (triggers.c: hearth__cluster_triggers_free). */
static bool job_begin(hearth__cluster *c) {
    atomic_fetch_add(&c->trig.dead_jobs, 1);
    if (c->trig.started && !atomic_load(&c->trig.dead_stop))
        return true;
    atomic_fetch_sub(&c->trig.dead_jobs, 1);
    return false;
}

static void job_end(hearth__cluster *c) {
    atomic_fetch_sub(&c->trig.dead_jobs, 1);
}

static bool stopping(hearth__cluster *c) {
    return atomic_load(&c->trig.dead_stop);
}

int hearth__cluster_dead_list(hearth__cluster *c, const char *trigger,
                              size_t max, hearth__buf *frames, size_t *n) {
    *n = 0;
    if (!job_begin(c))
        return HEARTH_ECANCELED;
    char filter[128];
    snprintf(filter, sizeof filter, "hearth.dead.%s.>", trigger);
    hearth__buf one;
    hearth__buf_init(&one);
    char ns[136];
    int rc = 0;
    for (uint64_t seq = 1; *n < max && !stopping(c); seq++) {
        rc = next_letter(c, filter, &seq, &one, ns, sizeof ns, !*n);
        if (rc == HEARTH_EDENIED) {
            rc = 0;
            continue;
        }
        if (rc)
            break;
        hearth__buf_add(frames, one.data, one.len);
        (*n)++;
    }
    hearth__buf_free(&one);
    if (rc == 1)
        rc = 0;
    if (!rc && stopping(c))
        rc = HEARTH_ECANCELED;
    job_end(c);
    return !rc && frames->failed ? HEARTH_ENOMEM : rc;
}

/* The stream's last sequence now: the letters a retry takes (those put
 * later, as one that failed again, wait for the next). */
static int last_seq(hearth__cluster *c, uint64_t *last) {
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, c->trig.js,
                                    HEARTH__CLUSTER_DEAD_STREAM, NULL, &jerr);
    if (s != NATS_OK)
        return fail(s);
    *last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    return 0;
}

int hearth__cluster_dead_retry(hearth__cluster *c, const char *trigger,
                               size_t *n) {
    *n = 0;
    if (!job_begin(c))
        return HEARTH_ECANCELED;
    uint64_t last = 0;
    int rc = last_seq(c, &last);
    char filter[128];
    snprintf(filter, sizeof filter, "hearth.dead.%s.>", trigger);
    hearth__buf one;
    hearth__buf_init(&one);
    char ns[136];
    for (uint64_t seq = 1; !rc && seq <= last && !stopping(c); seq++) {
        /* each one first: those before it were deleted, or the loop
         * stopped */
        rc = next_letter(c, filter, &seq, &one, ns, sizeof ns, true);
        if (rc == HEARTH_EDENIED) {
            rc = 0;
            continue;
        }
        if (rc || seq > last)
            break;
        char subject[256], id[48];
        snprintf(subject, sizeof subject, "hearth.trig.%s.%s", trigger, ns);
        snprintf(id, sizeof id, "dead:%" PRIu64, seq);
        rc = put_sealed(c, "trig", subject, id, one.data, one.len);
        if (rc)
            break;
        /* Queued durably: out of the dead set (a delete that fails leaves
         * it there, to be queued again by a later retry). */
        jsErrCode jerr = 0;
        natsStatus s = js_DeleteMsg(c->trig.js, HEARTH__CLUSTER_DEAD_STREAM,
                                    seq, NULL, &jerr);
        if (s != NATS_OK && jerr != JSSequenceNotFoundErr)
            rc = fail(s);
        (*n)++;
    }
    hearth__buf_free(&one);
    if (rc == 1)
        rc = 0;
    if (!rc && stopping(c)) /* some, perhaps: *n says */
        rc = HEARTH_ECANCELED;
    job_end(c);
    return rc;
}

int hearth__cluster_dead_count(hearth__cluster *c, const char *trigger,
                               uint64_t *count) {
    char filter[128];
    snprintf(filter, sizeof filter, "hearth.dead.%s.>", trigger);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = HEARTH__CLUSTER_WAIT_MS;
    jo.Stream.Info.SubjectsFilter = filter;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, c->trig.js,
                                    HEARTH__CLUSTER_DEAD_STREAM, &jo, &jerr);
    if (s != NATS_OK)
        return fail(s);
    uint64_t sum = 0;
    jsStreamStateSubjects *subs = si->State.Subjects;
    for (int i = 0; subs && i < subs->Count; i++)
        sum += subs->List[i].Msgs;
    jsStreamInfo_Destroy(si);
    *count = sum;
    return 0;
}
