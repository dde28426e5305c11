/* append.c - the leader's append of one group commit to the namespace's
 * log: one message, or, past the servers' maximum message size, a chain
 * of parts (header Hearth-Part: i/k, also used by forwarded writes) that
 * followers join before applying (cluster/tail.c). Every message is fenced on the subject's sequence
 * before it: the first on the last record this node's tree holds, each
 * next part on the part before, so a chain is whole and uninterrupted or
 * refused; a chain cut short (its leader refused or dead) is never
 * applied and is passed over by the next. Runs on the commit's worker
 * thread. */
#include "cluster/internal.h"

#include <stdio.h>

#define PART_HEADER "Hearth-Part"
/* Room left in a message for its headers. */
#define HEADER_ROOM 1024

/* Appends data as one message fenced on after (0: the subject has none);
 * *seq: its sequence. Part i of k, or k 0 for a whole record. */
static int append_one(hearth__cluster_ns *n, const char *data, size_t len,
                      uint64_t after, size_t i, size_t k, uint64_t *seq) {
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, n->subject, NULL, data, (int)len);
    if (s == NATS_OK && k)
        s = hearth__cluster_part_mark(m, i, k);
    if (s != NATS_OK) {
        natsMsg_Destroy(m);
        return hearth__cluster_error(s);
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = HEARTH__CLUSTER_WAIT_MS;
    if (after)
        po.ExpectLastSubjectSeq = after;
    else
        po.ExpectNoMessage = true;
    jsPubAck *ack = NULL;
    jsErrCode jerr = 0;
    s = js_PublishMsg(&ack, n->c->js, m, &po, &jerr);
    natsMsg_Destroy(m);
    if (s == NATS_OK)
        *seq = ack->Sequence;
    jsPubAck_Destroy(ack);
    n->batch_jerr = (int)jerr;
    /* 10071: another record came first; the tree is stale. */
    return s == NATS_OK ? 0 : jerr ? HEARTH_EIO : hearth__cluster_error(s);
}

size_t hearth__cluster_room(hearth__cluster *c) {
    int64_t max = natsConnection_GetMaxPayload(c->nc);
    return max > 2 * HEADER_ROOM ? (size_t)max - HEADER_ROOM : 1;
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

bool hearth__cluster_part(natsMsg *m, size_t *i, size_t *k) {
    const char *value = NULL;
    if (natsMsgHeader_Get(m, PART_HEADER, &value) != NATS_OK || !value)
        return false;
    return sscanf(value, "%zu/%zu", i, k) == 2 && *i >= 1 && *i <= *k;
}
