/* commit.c - a namespace's group commits and its log (db/commit.c's
 * replica hooks): a commit of this node's own writes (the leader's) is
 * appended to the log (cluster/append.c) while the local log writes it,
 * and acknowledged once both hold it; a commit of records from the log is
 * never appended again. Records from the log and this node's own writes
 * never share a commit. What each commit leaves is where the tree is in
 * the log: applied_seq, committed_seq (the last good commit's tree) and
 * durable_seq (the local store's, written to seq_file). The namespace's
 * part of the log is opened and freed here with its database. */
#include "cluster/node.h"

#include "store/logfile.h"

#include <stdio.h>
#include <unistd.h>

static bool replica_begin(void *ctx) {
    hearth__cluster_ns *n = ctx;
    /* Records from the log and this node's own writes never share a
     * commit (writes wait while the log's are uncommitted). */
    n->log.batch_published = n->log.own_writes > 0;
    n->log.batch_seq = 0;
    n->log.batch_jerr = 0;
    n->log.batch_status = NATS_OK;
    n->log.batch_applied = n->log.applied_seq;
    n->log.log_writes = n->log.own_writes = 0;
    return n->log.batch_published;
}

/* Worker thread: the records in the local log's bytes, sent to the log
 * fenced by the sequence of the subject's last record this node's tree
 * holds; the local log writes them while the stream answers. */
static int replica_publish(void *ctx, const hearth__records *records) {
    hearth__cluster_ns *n = ctx;
    if (!n->log.batch_published)
        return 0;
    hearth__buf bytes;
    hearth__buf_init(&bytes);
    /* room for the seal's header: the group is sealed where it lies */
    static const char room[HEARTH__SEAL_HEADER];
    hearth__buf_add(&bytes, room, hearth__cluster_seal_room(n->c));
    hearth__buf_add(&bytes, HEARTH__LOG_HEADER, HEARTH__LOG_HEADER_LEN);
    int rc = hearth__records_write(records, &bytes);
    if (!rc && bytes.failed)
        rc = HEARTH_ENOMEM;
    if (!rc)
        rc = hearth__cluster_append_start(n, &bytes, n->log.batch_applied);
    hearth__buf_free(&bytes);
    return rc;
}

/* Worker thread: the stream's answer to what replica_publish sent. */
static int replica_published(void *ctx) {
    hearth__cluster_ns *n = ctx;
    if (n->log.batch_published && n->c->log.append_delay_ms)
        uv_sleep(n->c->log.append_delay_ms);
    return n->log.batch_published ? hearth__cluster_append_wait(n) : 0;
}

static void replica_end(void *ctx, int rc, bool synced) {
    hearth__cluster_ns *n = ctx;
    if (!rc && n->log.batch_published) {
        /* Nothing of the log applied while this commit was in flight
         * (hearth__cluster_tree_exact): the tree is the log up to the
         * fence, and now up to this record. */
        if (n->log.applied_seq != n->log.batch_applied)
            hearth__log(HEARTH_LOG_WARNING, "cluster: %s: records applied during "
                    "an append (%llu, fence %llu)", n->name,
                    (unsigned long long)n->log.applied_seq,
                    (unsigned long long)n->log.batch_applied);
        n->log.applied_seq = n->log.committed_seq = n->log.batch_seq;
        n->log.durable_seq = n->log.batch_seq;
        hearth__cluster_tail_own_appended(n);
    } else if (!rc) {
        n->log.committed_seq = n->log.batch_applied;
        /* Records from the log count once synced (seq_file never runs
         * ahead of the disk: a restart replays from there). */
        if (synced)
            n->log.durable_seq = n->log.batch_applied;
    }
    if (!rc) {
        hearth__cluster_tail_settled(n);
        hearth__cluster_seq_write(n);
    }
    /* records waiting for this commit: apply them now */
    if (hearth__cluster_tail_queued(n))
        hearth__cluster_wake(n->c);
    if (rc && n->log.batch_published) {
        /* What JetStream or libnats said, for the operator */
        char code[96] = "";
        if (n->log.batch_jerr && n->log.batch_jerr != 10071)
            snprintf(code, sizeof code, ", JetStream error %d",
                     n->log.batch_jerr);
        else if (!n->log.batch_jerr && n->log.batch_status != NATS_OK)
            snprintf(code, sizeof code, ", %s",
                     natsStatus_GetText((natsStatus)n->log.batch_status));
        hearth__log(HEARTH_LOG_WARNING, "cluster: %s: append refused (%s%s%s); "
                "catching up from the log", n->name, hearth_strerror(rc),
                n->log.batch_jerr == 10071 ? ", a newer record is there" : "",
                code);
        if (n->log.batch_jerr == 10071) /* this node's tail must bring it */
            hearth__cluster_tail_expect(n, n->log.applied_seq + 1);
        if (n->log.batch_seq == 0)
            hearth__cluster_step_down(n);
    }
}

/* Loop: a failed commit undid every write since the last good one, the
 * records of the log among them: they apply again from there. */
static void replica_reverted(void *ctx) {
    hearth__cluster_ns *n = ctx;
    n->log.own_writes = n->log.log_writes = 0; /* all undone */
    hearth__cluster_tail_rewind(n);
    if (hearth__cluster_tail_queued(n))
        hearth__cluster_wake(n->c);
}

const hearth__db_replica hearth__cluster_replica = {
    .begin = replica_begin,
    .publish = replica_publish,
    .published = replica_published,
    .end = replica_end,
    .reverted = replica_reverted,
};

void hearth__cluster_set_append_delay(hearth__cluster *c, unsigned ms) {
    c->log.append_delay_ms = ms;
}

/* n's own JetStream context, whose ack handler ends its appends. */
static int jetstream(hearth__cluster_ns *n, hearth_error_t *err) {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = HEARTH__CLUSTER_WAIT_MS;
    jo.PublishAsync.AckHandler = hearth__cluster_on_ack;
    jo.PublishAsync.AckHandlerClosure = n;
    natsStatus s = natsConnection_JetStream(&n->log.js, n->c->nc, &jo);
    return s == NATS_OK ? 0 : hearth__error(err, hearth__cluster_error(s), NULL,
                                            "cluster: cannot open JetStream");
}

int hearth__cluster_log_open(hearth__cluster_ns *n, const char *dir,
                             hearth_error_t *err) {
    hearth__cluster_tail_init(n);
    snprintf(n->log.seq_file, sizeof n->log.seq_file, "%s/cluster.seq", dir);
    int rc = hearth__cluster_acks_init(n);
    if (rc)
        return hearth__error_code(err, rc);
    rc = hearth__cluster_stream(n->c, n->name, n->log.stream,
                                n->log.subject, err);
    if (!rc)
        rc = jetstream(n, err);
    if (!rc)
        hearth__cluster_trust_stream(n, dir);
    return rc;
}

void hearth__cluster_log_begin(hearth__cluster_ns *n, uint64_t joined) {
    n->log.applied_seq = n->log.durable_seq = n->log.stored_seq =
        hearth__cluster_seq_read(n);
    if (joined) {
        n->log.applied_seq = n->log.durable_seq = joined;
        hearth__cluster_seq_write(n);
    }
    n->log.committed_seq = n->log.applied_seq;
}

void hearth__cluster_log_free(hearth__cluster_ns *n) {
    if (n->log.seq_fd > 0)
        close(n->log.seq_fd);
    hearth__cluster_acks_free(n);
    jsCtx_Destroy(n->log.js);
}

bool hearth__cluster_log_buffered(const hearth__cluster_ns *n) {
    return n->log.log_writes != 0;
}

void hearth__cluster_own_written(hearth__cluster_ns *n, bool kept) {
    n->log.own_writes += kept;
}

uint64_t hearth__cluster_applied_seq(const hearth__cluster_ns *n) {
    return n->log.applied_seq;
}

uint64_t hearth__cluster_committed_seq(const hearth__cluster_ns *n) {
    return n->log.committed_seq;
}

uint64_t hearth__cluster_durable_seq(const hearth__cluster_ns *n) {
    return n->log.durable_seq;
}

const char *hearth__cluster_log_stream(const hearth__cluster_ns *n) {
    return n->log.stream;
}

const char *hearth__cluster_log_subject(const hearth__cluster_ns *n) {
    return n->log.subject;
}
