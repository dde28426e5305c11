/* tail.c - every node's copy of a namespace: an ordered consumer of its
 * subject from the local store's place in the log, each record applied to
 * the tree through the embedded engine (events raised, committed to the
 * local log). Replaying records the store already holds changes nothing:
 * a record sets absolute paths to resolved values, so a suffix of the log
 * applied again leaves the same tree, and seq_file may lag. */
#include "cluster/internal.h"

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
    hearth__cluster_post(closure, MSG_LOG, m, seq);
}

int hearth__cluster_tail_start(hearth__cluster_ns *n, hearth_error_t *err) {
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = n->stream;
    so.Ordered = true;
    /* A consumer on a server that died is noticed by its missing
     * heartbeats and made again from the last record: quickly. */
    so.Config.Heartbeat = (int64_t)HEARTH__CLUSTER_HEARTBEAT_MS * 1000000;
    if (n->applied_seq) {
        so.Config.DeliverPolicy = js_DeliverByStartSequence;
        so.Config.OptStartSeq = n->applied_seq + 1;
    }
    jsErrCode jerr = 0;
    natsStatus s = js_Subscribe(&n->tail_sub, n->c->js, n->subject, on_record,
                                n->c, NULL, &so, &jerr);
    if (s != NATS_OK)
        return hearth__error(err, hearth__cluster_error(s), NULL,
                             "cluster: cannot tail %s: %s", n->subject,
                             natsStatus_GetText(s));
    return 0;
}

void hearth__cluster_tail_push(hearth__cluster_ns *n, hearth__cluster_msg *q) {
    uint64_t last = n->records_tail ? n->records_tail->seq : n->applied_seq;
    if (q->seq <= last) { /* ours, or delivered again */
        natsMsg_Destroy(q->msg);
        hearth__free(q);
        return;
    }
    q->next = NULL;
    if (n->records_tail)
        n->records_tail->next = q;
    else
        n->records = q;
    n->records_tail = q;
}

/* One record's payload ([[path, value], ...]) as a write, read as
 * recovery reads it (store/replay.c). */
static int record_op(const char *payload, size_t len, hearth__db_op **out) {
    hearth__record rec = {0};
    int rc = hearth__store_read_record(payload, len, &rec);
    if (!rc && !rec.n)
        rc = HEARTH_EIO;
    hearth__db_op *o = rc ? NULL : hearth__db_write_op(rec.n, NULL, NULL, NULL);
    if (!rc && !o)
        rc = HEARTH_ENOMEM;
    for (size_t i = 0; !rc && i < rec.n; i++) {
        hearth__db_write_part *w = &o->parts[i];
        if (hearth__db_parse_write_path(rec.v[i].path,
                                        HEARTH__PATH_ALLOW_PRIORITY, &w->text,
                                        &w->path, NULL))
            rc = HEARTH_EIO;
        w->value = rec.v[i].value; /* taken over */
        rec.v[i].value = NULL;
    }
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
        fprintf(stderr, "hearth: cluster: %s: a damaged record in the log "
                "(%s); applying its intact part\n", n->name,
                scan.why ? scan.why : "torn");
    const char *payload;
    size_t off = 0, len;
    while (hearth__log_next(data, &scan, &off, &payload, &len)) {
        hearth__db_op *o = NULL;
        int rc = record_op(payload, len, &o);
        if (rc) {
            fprintf(stderr, "hearth: cluster: %s: a record that does not "
                    "parse: %s\n", n->name, hearth_strerror(rc));
            continue;
        }
        n->log_writes++;
        if (!hearth__db_embedded.write(n->db, o))
            hearth__db_op_done(o);
    }
}

/* One message of the log: a whole group, or a part of a chain, applied
 * once its last part is in (a chain cut short is dropped by the next
 * message: only the part after the one before belongs to it). */
static void apply_message(hearth__cluster_ns *n, natsMsg *m) {
    const char *data = natsMsg_GetData(m);
    size_t size = (size_t)natsMsg_GetDataLength(m), i, k;
    if (!hearth__cluster_part(m, &i, &k)) {
        n->chain.len = n->chain_parts = 0;
        apply_group(n, data, size);
        return;
    }
    if (i == 1 || i != n->chain_parts + 1)
        n->chain.len = n->chain_parts = 0;
    if (i != n->chain_parts + 1)
        return; /* the middle of a chain whose start we missed */
    hearth__buf_add(&n->chain, data, size);
    n->chain_parts++;
    if (n->chain.failed)
        fprintf(stderr, "hearth: cluster: %s: no memory for a record of %zu "
                "parts\n", n->name, k);
    if (i == k && !n->chain.failed)
        apply_group(n, n->chain.data, n->chain.len);
    if (i == k || n->chain.failed) {
        hearth__buf_free(&n->chain);
        hearth__buf_init(&n->chain);
        n->chain_parts = 0;
    }
}

void hearth__cluster_tail_drain(hearth__cluster_ns *n) {
    hearth__embedded *e = n->db->impl;
    /* This node's own writes are ahead of the log: they reach it first
     * (or are refused and undone), then the log's records apply; its own
     * records, back from the log, are dropped meanwhile. */
    bool busy = n->leader && (e->committing || e->unacked);
    bool applied = false;
    while (n->records && (!busy || n->records->seq <= n->applied_seq)) {
        hearth__cluster_msg *q = n->records;
        n->records = q->next;
        if (!n->records)
            n->records_tail = NULL;
        if (q->seq > n->applied_seq) {
            apply_message(n, q->msg);
            n->applied_seq = q->seq;
            applied = true;
        }
        natsMsg_Destroy(q->msg);
        hearth__free(q);
    }
    if (busy)
        return;
    hearth__cluster_snapshot_note(n);
    if (applied)
        n->db->backend->settle(n->db, true);
    hearth__cluster_forward_applied(n);
    if (n->held)
        hearth__cluster_release_held(n);
}

uint64_t hearth__cluster_seq_read(const hearth__cluster_ns *n) {
    FILE *f = fopen(n->seq_file, "r");
    unsigned long long seq = 0;
    if (f) {
        if (fscanf(f, "%llu", &seq) != 1)
            seq = 0; /* replay it all: records apply again harmlessly */
        fclose(f);
    }
    return seq;
}

void hearth__cluster_seq_write(hearth__cluster_ns *n) {
    if (n->durable_seq == n->stored_seq)
        return;
    /* Overwritten in place, unsynced: a rename per commit would make the
     * file system flush it (ext4's auto_da_alloc), and a stale or torn
     * number only means replaying more of the log, which is harmless.
     * With it, where the local log ended then: past there, a restart
     * trusts the stream, not the local log (cluster/recover.c). */
    if (n->seq_fd <= 0)
        n->seq_fd = open(n->seq_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    hearth__embedded *e = n->db->impl;
    uint64_t gen = 0, bytes = 0;
    hearth__store_position(e->store, &gen, &bytes);
    char text[72];
    int len = snprintf(text, sizeof text, "%020llu %020llu %020llu\n",
                       (unsigned long long)n->durable_seq,
                       (unsigned long long)gen, (unsigned long long)bytes);
    if (n->seq_fd > 0 && pwrite(n->seq_fd, text, (size_t)len, 0) == len)
        n->stored_seq = n->durable_seq;
}
