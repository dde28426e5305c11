/* checkpoint.c - the leader's side of a cluster's point-in-time recovery
 * (cluster/pitr.h): checkpoints of a namespace's tree written to stream
 * HEARTH_HIST in its purge rounds, their index beside the purge floor,
 * and the floor kept below what the retention window needs.
 *
 * A checkpoint is the tree the snapshot box holds when the round ends
 * (exactly the log up to its sequence), as export JSON in parts of at
 * most a message each, every part sealed for the subject, the sequence,
 * the time and its place (cluster/sealing.h), so a part cannot stand in
 * for another's. The purge round (the leases' worker) only says one is
 * due; it is written on a worker of its own once the round ends, one at
 * a time per namespace, and added to the index on the revision read, as
 * the round writes it. */
#include "cluster/node.h"

#include "tree/json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKET "hearth_retained"
#define SLOW_MS 1000 /* a checkpoint longer than this is logged */

void hearth__pitr_subject(const char *name, char out[160]) {
    snprintf(out, 160, "hearth.hist.%s", name);
}

void hearth__pitr_part_context(hearth__aad *a, const char *subject,
                               const hearth__pitr_checkpoint *cp, size_t i) {
    hearth__aad_init(a);
    hearth__aad_str(a, subject);
    hearth__aad_u64(a, cp->seq);
    hearth__aad_u64(a, (uint64_t)cp->time_ms);
    hearth__aad_part(a, i, cp->parts);
}

/* Reads text (the floor's line, then checkpoints' lines) into idx; false
 * with *why when a line is not what pitr.h says. */
static bool parse_index(const char *text, hearth__pitr_index *idx,
                        const char **why) {
    char *end;
    idx->n = 0;
    idx->floor = strtoull(text, &end, 10);
    if (end == text) {
        *why = "no purge floor";
        return false;
    }
    const char *line = strchr(text, '\n');
    while (line && line[1]) {
        line++;
        hearth__pitr_checkpoint cp;
        unsigned long long seq, first;
        long long time_ms;
        unsigned parts;
        int used = 0;
        if (sscanf(line, "cp %llu %lld %llu %u%n", &seq, &time_ms, &first,
                   &parts, &used) != 4 ||
            (line[used] != '\n' && line[used]) || !parts || !first) {
            *why = "a checkpoint's line is not \"cp SEQ TIME FIRST PARTS\"";
            return false;
        }
        if (idx->n == HEARTH__PITR_MAX_CHECKPOINTS ||
            (idx->n && idx->cp[idx->n - 1].seq > seq)) {
            *why = "checkpoints out of order, or too many";
            return false;
        }
        cp = (hearth__pitr_checkpoint){seq, time_ms, first, parts};
        idx->cp[idx->n++] = cp;
        line = strchr(line, '\n');
    }
    return true;
}

int hearth__pitr_index_read(hearth__cluster *c, const char *name,
                            hearth__pitr_index *idx, uint64_t *rev,
                            hearth_error_t *err) {
    *idx = (hearth__pitr_index){0};
    if (rev)
        *rev = 0;
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, c->log.retained, name);
    if (s == NATS_NOT_FOUND)
        return 0; /* nothing purged, no checkpoint */
    if (s != NATS_OK)
        return hearth__error(err, hearth__cluster_error(s), name,
                             "cluster: %s: the purge floor cannot be read: %s",
                             name, natsStatus_GetText(s));
    if (rev)
        *rev = kvEntry_Revision(e);
    hearth__buf text;
    hearth__buf_init(&text);
    int rc = hearth__cluster_open_value(c, BUCKET, name, kvEntry_Value(e),
                                        (size_t)kvEntry_ValueLen(e), &text);
    kvEntry_Destroy(e);
    const char *why = NULL;
    if (!rc)
        hearth__buf_add(&text, "", 1); /* NUL-ended */
    if (!rc && text.failed)
        rc = hearth__error_code(err, HEARTH_ENOMEM);
    else if (rc)
        rc = hearth__error(err, rc, name,
                           "cluster: %s: the purge floor in %s does not open "
                           "with this cluster's secret", name, BUCKET);
    else if (!parse_index(text.data, idx, &why))
        rc = hearth__error(err, HEARTH_EIO, name,
                           "cluster: %s: the history's index in %s does not "
                           "read: %s", name, BUCKET, why);
    hearth__buf_free(&text);
    return rc;
}

int hearth__pitr_index_put(hearth__cluster *c, const char *name,
                           const hearth__pitr_index *idx, uint64_t last) {
    hearth__buf text, value;
    hearth__buf_init(&text);
    hearth__buf_init(&value);
    hearth__buf_printf(&text, "%" PRIu64, idx->floor);
    for (size_t i = 0; i < idx->n; i++)
        hearth__buf_printf(&text, "\ncp %" PRIu64 " %" PRId64 " %" PRIu64 " %u",
                           idx->cp[i].seq, idx->cp[i].time_ms,
                           idx->cp[i].first, idx->cp[i].parts);
    int rc = text.failed ? HEARTH_ENOMEM
                         : hearth__cluster_seal_value(c, BUCKET, name, text.data,
                                                      text.len, &value);
    uint64_t rev;
    if (!rc && (last ? kvStore_Update(&rev, c->log.retained, name, value.data,
                                      (int)value.len, last)
                     : kvStore_Create(&rev, c->log.retained, name, value.data,
                                      (int)value.len)) != NATS_OK)
        rc = HEARTH_EIO;
    hearth__buf_free(&text);
    hearth__buf_free(&value);
    return rc;
}

/* HEARTH_HIST, made once per process (any node's first round may). */
static int hist_stream(hearth__cluster *c) {
    if (atomic_load(&c->pitr.hist_made))
        return 0;
    natsStatus s = hearth__cluster_make_stream(c, HEARTH__PITR_STREAM,
                                               "hearth.hist.*", false);
    if (s != NATS_OK)
        return hearth__cluster_error(s) ? hearth__cluster_error(s) : HEARTH_EIO;
    atomic_store(&c->pitr.hist_made, true);
    return 0;
}

/* Publishes part i of cp (data, sealed here) and waits for the stream's
 * answer; *seq: its sequence. */
static int publish_part(hearth__cluster *c, const char *subject,
                        const hearth__pitr_checkpoint *cp, size_t i,
                        const char *data, size_t len, uint64_t *seq) {
    hearth__buf sealed;
    hearth__buf_init(&sealed);
    hearth__aad a;
    hearth__pitr_part_context(&a, subject, cp, i);
    int rc = hearth__cluster_seal(c, "hist", &a, data, len, &sealed);
    natsMsg *m = NULL;
    natsStatus s = NATS_OK;
    if (!rc)
        s = natsMsg_Create(&m, subject, NULL, sealed.data, (int)sealed.len);
    if (!rc && s == NATS_OK)
        s = hearth__cluster_part_mark(m, i, cp->parts);
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = HEARTH__CLUSTER_WAIT_MS;
    if (!rc && s == NATS_OK)
        s = js_PublishMsg(&pa, c->js, m, &po, &jerr);
    if (!rc && s != NATS_OK)
        rc = hearth__cluster_error(s) ? hearth__cluster_error(s) : HEARTH_EIO;
    if (!rc)
        *seq = pa->Sequence;
    jsPubAck_Destroy(pa);
    natsMsg_Destroy(m);
    hearth__buf_free(&sealed);
    return rc;
}

/* Writes root as name's checkpoint *cp (seq and time set; first and
 * parts set here). */
static int write_checkpoint(hearth__cluster *c, const char *name,
                            const hearth_node_t *root,
                            hearth__pitr_checkpoint *cp) {
    int rc = hist_stream(c);
    if (rc)
        return rc;
    char subject[160];
    hearth__pitr_subject(name, subject);
    int64_t began = hearth_now_ms();
    hearth__buf json;
    hearth__buf_init(&json);
    hearth__node_write_json(&json, root, HEARTH_JSON_EXPORT);
    if (json.failed) {
        hearth__buf_free(&json);
        return HEARTH_ENOMEM;
    }
    size_t room = hearth__cluster_room(c);
    cp->parts = (uint32_t)(json.len / room + 1);
    for (size_t i = 0; !rc && i < cp->parts; i++) {
        size_t at = i * room;
        size_t len = json.len - at < room ? json.len - at : room;
        uint64_t seq = 0;
        rc = publish_part(c, subject, cp, i + 1, json.data + at, len, &seq);
        if (!rc && i == 0)
            cp->first = seq;
    }
    /* A slow one holds the next checkpoints of the node back (one at a
     * time per namespace): the operator hears of it. */
    int64_t took = hearth_now_ms() - began;
    if (!rc && took > SLOW_MS)
        hearth__log(HEARTH_LOG_WARNING, "cluster: %s: a checkpoint of %zu "
                    "bytes (%u parts) took %lld ms", name, json.len,
                    cp->parts, (long long)took);
    hearth__buf_free(&json);
    return rc;
}

bool hearth__pitr_round(hearth__retain_job *j, hearth__pitr_index *idx,
                        uint64_t *floor, uint64_t *hist_below) {
    bool changed = false;
    *hist_below = 0;
    int64_t every = j->retain_ms / 8 ? j->retain_ms / 8 : 1;
    const hearth__pitr_checkpoint *newest = idx->n ? &idx->cp[idx->n - 1] : NULL;
    j->cp_due = idx->n < HEARTH__PITR_MAX_CHECKPOINTS &&
                (!newest || j->now_ms - newest->time_ms >= every);
    j->cp_newest = newest ? newest->seq : 0;
    /* The newest checkpoint older than the window: every instant since is
     * it plus the records after it. */
    size_t keep = idx->n;
    for (size_t i = idx->n; i-- > 0;)
        if (idx->cp[i].time_ms <= j->now_ms - j->retain_ms) {
            keep = i;
            break;
        }
    if (keep == idx->n) {
        /* None is: no record may go yet, unless the log was purged
         * already (then what remains stays). */
        *floor = 0;
        return changed;
    }
    if (idx->cp[keep].seq + 1 < *floor)
        *floor = idx->cp[keep].seq + 1;
    if (keep > 0) {
        *hist_below = idx->cp[keep].first;
        memmove(idx->cp, idx->cp + keep, (idx->n - keep) * sizeof idx->cp[0]);
        idx->n -= keep;
        changed = true;
    }
    return changed;
}

/* ---- a checkpoint, on a worker of its own ---- */

typedef struct checkpoint_job {
    uv_work_t work;
    hearth__cluster *c;
    char name[130];
    hearth_node_t *root;
    hearth__pitr_checkpoint cp;
    int rc;
} checkpoint_job;

/* Adds cp to name's index, on the revision read (the purge round may
 * write it meanwhile: read again, a few times). */
static int add_to_index(hearth__cluster *c, const char *name,
                        const hearth__pitr_checkpoint *cp) {
    int rc = HEARTH_EIO;
    for (int tries = 0; rc && tries < 5; tries++) {
        hearth__pitr_index idx;
        uint64_t rev;
        rc = hearth__pitr_index_read(c, name, &idx, &rev, NULL);
        if (rc)
            return rc;
        if (idx.n && idx.cp[idx.n - 1].seq >= cp->seq)
            return 0; /* another leader's, as new */
        if (idx.n == HEARTH__PITR_MAX_CHECKPOINTS)
            return HEARTH_ETOOBIG;
        idx.cp[idx.n++] = *cp;
        rc = hearth__pitr_index_put(c, name, &idx, rev);
    }
    return rc;
}

static void checkpoint_work(uv_work_t *w) {
    checkpoint_job *j = w->data;
    j->rc = write_checkpoint(j->c, j->name, j->root, &j->cp);
    if (!j->rc)
        j->rc = add_to_index(j->c, j->name, &j->cp);
}

static void checkpoint_done(uv_work_t *w, int status) {
    (void)status;
    checkpoint_job *j = w->data;
    hearth__cluster *c = j->c;
    if (j->rc)
        hearth__log(HEARTH_LOG_WARNING, "cluster: %s: a checkpoint for "
                    "point-in-time recovery could not be kept (%s); the log "
                    "is kept until one is", j->name, hearth_strerror(j->rc));
    hearth__cluster_ns *n = hearth__cluster_find(c, j->name);
    if (n)
        n->pitr.writing = false;
    hearth_node_decref(j->root);
    hearth__free(j);
    c->pitr.writing--;
    hearth__cluster_round_ended(c); /* a stop may wait for it */
}

void hearth__pitr_checkpoint_start(hearth__cluster_ns *n, uint64_t newest) {
    uint64_t seq = 0;
    if (n->pitr.writing || hearth__cluster_stop_asked(n->c))
        return;
    hearth_node_t *root = hearth__cluster_snapshot_root(n, &seq);
    checkpoint_job *j = root && seq > newest ? hearth__calloc(1, sizeof *j)
                                             : NULL;
    if (!j) {
        hearth_node_decref(root); /* the log has not moved, or no memory */
        return;
    }
    j->c = n->c;
    snprintf(j->name, sizeof j->name, "%s", n->name);
    j->root = root;
    /* now, after the tree was noted: no record it holds is younger */
    j->cp = (hearth__pitr_checkpoint){.seq = seq, .time_ms = hearth_now_ms()};
    j->work.data = j;
    if (uv_queue_work(n->c->loop, &j->work, checkpoint_work, checkpoint_done)) {
        hearth_node_decref(root);
        hearth__free(j);
        return;
    }
    n->pitr.writing = true;
    n->c->pitr.writing++;
}

bool hearth__cluster_pitr_busy(const hearth__cluster *c) {
    return c->pitr.writing != 0;
}
