/* records.c - writes waiting for their commit, as references; their
 * bytes are made where they are written. */
#include "store/records.h"
#include "store/logfile.h"
#include "tree/json.h"

#include <string.h>

struct hearth__record_part {
    size_t path, path_len; /* in the list's paths */
    hearth_node_t *value;  /* a reference of the list's own */
};

struct hearth__record_info {
    size_t end; /* its parts are parts[the previous one's end, end) */
    bool has_meta;
    int64_t time_ms;
    uint64_t seq;
    size_t by, by_len; /* the identity as a JSON string in paths; 0: none */
};

void hearth__records_init(hearth__records *r) {
    memset(r, 0, sizeof *r);
    hearth__buf_init(&r->paths);
}

void hearth__records_clear(hearth__records *r) {
    for (size_t i = 0; i < r->nparts; i++)
        hearth_node_decref(r->parts[i].value);
    hearth__buf_free(&r->paths);
    hearth__free(r->parts);
    hearth__free(r->records);
    hearth__records_init(r);
}

bool hearth__records_empty(const hearth__records *r) {
    return r->nrecords == 0;
}

/* Appends p as the JSON string the record holds ("/a/b", "/" for the
 * root); paths borrow their caller's text, so the list keeps this copy. */
static void add_path(hearth__buf *b, const hearth__path *p) {
    hearth__buf text;
    hearth__buf_init(&text);
    for (unsigned i = 0; i < p->n; i++) {
        hearth__buf_addc(&text, '/');
        hearth__buf_add(&text, p->seg[i].s, p->seg[i].len);
    }
    if (p->priority)
        hearth__buf_adds(&text, "/.priority");
    if (!text.len)
        hearth__buf_addc(&text, '/');
    if (text.failed)
        b->failed = true;
    else
        hearth__json_write_string(b, text.data, text.len);
    hearth__buf_free(&text);
}

int hearth__records_add(hearth__records *r, const hearth__path *const *paths,
                        const hearth_node_t *const *values, size_t n) {
    return hearth__records_add_meta(r, NULL, paths, values, n);
}

int hearth__records_add_meta(hearth__records *r,
                             const hearth__record_meta *meta,
                             const hearth__path *const *paths,
                             const hearth_node_t *const *values, size_t n) {
    if (n > SIZE_MAX - r->nparts)
        return HEARTH_ENOMEM;
    hearth__record_part *parts = hearth__grow(r->parts, &r->parts_cap,
                                              r->nparts + n, sizeof *parts);
    if (!parts)
        return HEARTH_ENOMEM;
    r->parts = parts;
    hearth__record_info *records = hearth__grow(
        r->records, &r->records_cap, r->nrecords + 1, sizeof *records);
    if (!records)
        return HEARTH_ENOMEM;
    r->records = records;
    size_t paths_len = r->paths.len;
    hearth__record_info info = {0};
    if (meta) {
        info = (hearth__record_info){0, true, meta->time_ms, meta->seq, 0, 0};
        if (meta->identity) {
            info.by = r->paths.len;
            hearth__json_write_string(&r->paths, meta->identity,
                                      strlen(meta->identity));
            info.by_len = r->paths.len - info.by;
        }
    }
    for (size_t i = 0; i < n; i++) {
        hearth__record_part *part = &r->parts[r->nparts + i];
        part->path = r->paths.len;
        add_path(&r->paths, paths[i]);
        part->path_len = r->paths.len - part->path;
    }
    if (r->paths.failed) { /* keep the records before this one */
        r->paths.failed = false;
        r->paths.len = paths_len;
        return HEARTH_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        r->parts[r->nparts + i].value = hearth_node_incref(values[i]);
    r->nparts += n;
    info.end = r->nparts;
    r->records[r->nrecords++] = info;
    return 0;
}

/* {"t":...,"s":...,"by":...} (by: a JSON string, or NULL). */
static void write_meta(hearth__buf *out, int64_t t, uint64_t seq,
                       const char *by, size_t by_len) {
    hearth__buf_printf(out, "{\"t\":%lld,\"s\":%llu", (long long)t,
                       (unsigned long long)seq);
    if (by_len) {
        hearth__buf_adds(out, ",\"by\":");
        hearth__buf_add(out, by, by_len);
    }
    hearth__buf_addc(out, '}');
}

int hearth__records_write_mark(const hearth__record_meta *meta,
                               hearth__buf *out) {
    size_t start = out->len;
    char header[HEARTH__LOG_RECORD_HEADER] = {0};
    hearth__buf_add(out, header, sizeof header);
    hearth__buf_addc(out, '[');
    write_meta(out, meta->time_ms, meta->seq, NULL, 0);
    hearth__buf_addc(out, ']');
    if (out->failed)
        return HEARTH_ENOMEM;
    hearth__log_seal_record(out->data + start, out->len - start - sizeof header);
    hearth__log_seal_batch(out->data + start, out->len - start);
    return 0;
}

/* Appends record k, of parts[from, to) (payload [meta, [path, value],
 * ...], or [[path, value], ...] without meta). */
static int write_record(const hearth__records *r, size_t k, size_t from,
                        size_t to, hearth__buf *out) {
    size_t start = out->len;
    char header[HEARTH__LOG_RECORD_HEADER] = {0};
    hearth__buf_add(out, header, sizeof header);
    hearth__buf_addc(out, '[');
    const hearth__record_info *info = &r->records[k];
    if (info->has_meta)
        write_meta(out, info->time_ms, info->seq, r->paths.data + info->by,
                   info->by_len);
    for (size_t i = from; i < to; i++) {
        const hearth__record_part *part = &r->parts[i];
        bool first = i == from && !info->has_meta;
        hearth__buf_add(out, first ? "[" : ",[", first ? 1 : 2);
        hearth__buf_add(out, r->paths.data + part->path, part->path_len);
        hearth__buf_addc(out, ',');
        hearth__node_write_json(out, part->value, HEARTH_JSON_EXPORT);
        hearth__buf_addc(out, ']');
    }
    hearth__buf_addc(out, ']');
    if (out->failed)
        return HEARTH_ENOMEM;
    size_t len = out->len - start - sizeof header;
    if (len > UINT32_MAX) /* the header's length field */
        return HEARTH_ETOOBIG;
    hearth__log_seal_record(out->data + start, len);
    return 0;
}

int hearth__records_write(const hearth__records *r, hearth__buf *out) {
    size_t start = out->len, from = 0;
    for (size_t i = 0; i < r->nrecords; i++) {
        int rc = write_record(r, i, from, r->records[i].end, out);
        if (rc) {
            out->failed = false;
            out->len = start;
            return rc;
        }
        from = r->records[i].end;
    }
    if (out->len > start)
        hearth__log_seal_batch(out->data + start, out->len - start);
    return 0;
}
