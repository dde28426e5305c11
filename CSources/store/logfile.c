/* logfile.c - log records in and out, and what a log's end means. */
#include "store/logfile.h"

#include <string.h>
#include <zlib.h>

#define LOG_V1 "HEARTH-LOG 1\n"
#define V1_RECORD_HEADER 8

static void put_u32(char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (char)((v >> (8 * i)) & 0xFF);
}

static uint32_t get_u32(const char *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)(unsigned char)p[i] << (8 * i);
    return v;
}

static uint32_t crc(const char *p, size_t len) {
    return (uint32_t)crc32(0, (const Bytef *)p, (uInt)len);
}

bool hearth__log_all_zero(const char *p, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (p[i])
            return false;
    return true;
}

/* ---- writing ---- */

static void seal_header(char *h, uint32_t batch_rest) {
    put_u32(h + 8, batch_rest);
    put_u32(h + 12, crc(h, 12));
}

void hearth__log_seal_record(char *rec, size_t len) {
    put_u32(rec, (uint32_t)len);
    put_u32(rec + 4, crc(rec + HEARTH__LOG_RECORD_HEADER, len));
    /* batch_rest and the header's checksum: hearth__log_seal_batch */
}

void hearth__log_seal_batch(char *data, size_t len) {
    for (size_t off = 0; off < len;) {
        size_t end = off + HEARTH__LOG_RECORD_HEADER + get_u32(data + off);
        seal_header(data + off, (uint32_t)(len - end));
        off = end;
    }
}

/* ---- reading ---- */

static size_t record_header_len(int version) {
    return version == 1 ? V1_RECORD_HEADER : HEARTH__LOG_RECORD_HEADER;
}

/* Whether a whole, intact record starts at off; *end is where it ends. */
static bool record_ok(const char *data, size_t size, int version, size_t off,
                      size_t *end) {
    size_t hl = record_header_len(version);
    if (size - off < hl)
        return false;
    if (version == 2 && get_u32(data + off + 12) != crc(data + off, 12))
        return false;
    uint64_t len = get_u32(data + off);
    if (len > size - off - hl || len < 2 || data[off + hl] != '[')
        return false;
    *end = off + hl + (size_t)len;
    return get_u32(data + off + 4) == crc(data + off + hl, (size_t)len);
}

/* Ends the scan at off: torn when a crash can explain it and this is the
 * last log, else damaged. Either way the intact prefix ends at cut, the
 * start of the commit off belongs to (version 2). */
static void stop(hearth__log_scan *scan, bool last, bool tornable, size_t cut,
                 size_t off, const char *why) {
    if (last && tornable) {
        scan->end = HEARTH__LOG_TORN;
        scan->good = cut;
    } else {
        scan->end = HEARTH__LOG_DAMAGED;
        scan->good = cut;
        scan->bad = off;
        scan->why = why;
    }
}

static void check_v1(const char *data, size_t size, bool last,
                     hearth__log_scan *scan) {
    size_t off = HEARTH__LOG_HEADER_LEN;
    while (off < size) {
        size_t left = size - off, end;
        if (record_ok(data, size, 1, off, &end)) {
            off = end;
            continue;
        }
        bool zeros = hearth__log_all_zero(data + off, left);
        if (left < V1_RECORD_HEADER)
            stop(scan, last, true, off, off, "a record header cut short");
        else if (get_u32(data + off) > left - V1_RECORD_HEADER)
            stop(scan, last, zeros, off, off,
                 "a record length runs past the end of the file (a torn "
                 "append or a damaged length: version 1 logs cannot tell)");
        else
            stop(scan, last,
                 zeros || off + V1_RECORD_HEADER + get_u32(data + off) == size,
                 off, off, "record checksum mismatch");
        return;
    }
    scan->good = size;
}

/* Version 2: a commit (batch) is one write(); a crash can cut only the
 * last one, which then reaches (was meant to reach) past the end or is
 * zeros from some point on. Such a commit is cut whole. */
static void check_v2(const char *data, size_t size, bool last,
                     hearth__log_scan *scan) {
    size_t off = HEARTH__LOG_HEADER_LEN;
    size_t batch_start = off;
    uint64_t batch_end = off;
    while (off < size) {
        if (off >= batch_end)
            batch_start = off; /* a new commit starts here */
        size_t left = size - off, end;
        if (last && off >= batch_end && hearth__log_all_zero(data + off, left)) {
            scan->good = off; /* written ahead: the next commit goes here */
            scan->space = left;
            return;
        }
        bool in_batch = off < batch_end;
        const char *h = data + off;
        if (left >= HEARTH__LOG_RECORD_HEADER &&
            get_u32(h + 12) == crc(h, 12) && !in_batch)
            batch_end = (uint64_t)off + HEARTH__LOG_RECORD_HEADER +
                        get_u32(h) + get_u32(h + 8);
        if (record_ok(data, size, 2, off, &end) &&
            (end + get_u32(h + 8) == batch_end)) {
            off = end;
            continue;
        }
        /* The last commit: nothing after it but space written ahead. */
        bool last_commit =
            batch_end >= size ||
            (last && hearth__log_all_zero(data + batch_end, size - batch_end));
        size_t space = batch_end < size && last_commit ? size - batch_end : 0;
        if (left < HEARTH__LOG_RECORD_HEADER)
            stop(scan, last, true, batch_start, off,
                 "a record header cut short");
        else
            stop(scan, last, last_commit || hearth__log_all_zero(h, left), batch_start,
                 off,
                 get_u32(h + 12) != crc(h, 12)
                     ? "record header checksum mismatch"
                     : "record checksum mismatch");
        if (scan->end == HEARTH__LOG_TORN)
            scan->space = space;
        return;
    }
    if (batch_end > size) /* the last commit stops at a record's end */
        stop(scan, last, true, batch_start, off, "the last commit is cut short");
    else
        scan->good = size;
}

void hearth__log_check(const char *data, size_t size, bool last,
                       hearth__log_scan *scan) {
    memset(scan, 0, sizeof *scan);
    scan->end = HEARTH__LOG_CLEAN;
    size_t hl = HEARTH__LOG_HEADER_LEN;
    if (size >= hl && memcmp(data, HEARTH__LOG_HEADER, hl) == 0)
        scan->version = 2;
    else if (size >= hl && memcmp(data, LOG_V1, hl) == 0)
        scan->version = 1;
    if (!scan->version) {
        /* Created but its header never fully written: holds nothing. */
        bool prefix = size < hl && (memcmp(data, HEARTH__LOG_HEADER, size) == 0 ||
                                    memcmp(data, LOG_V1, size) == 0);
        stop(scan, last, prefix || hearth__log_all_zero(data, size), 0, 0,
             "not a Hearth log (bad header)");
        return;
    }
    if (scan->version == 1)
        check_v1(data, size, last, scan);
    else
        check_v2(data, size, last, scan);
}

bool hearth__log_next(const char *data, const hearth__log_scan *scan,
                      size_t *off, const char **payload, size_t *len) {
    if (!*off)
        *off = HEARTH__LOG_HEADER_LEN;
    if (!scan->version || *off >= scan->good)
        return false;
    size_t hl = record_header_len(scan->version);
    *len = get_u32(data + *off);
    *payload = data + *off + hl;
    *off += hl + *len;
    return true;
}

uint64_t hearth__log_count_intact(const char *data, size_t size, int version,
                                  size_t from) {
    uint64_t n = 0;
    for (size_t off = from, end; off < size;) {
        if (version && record_ok(data, size, version, off, &end)) {
            n++;
            off = end;
        } else {
            off++;
        }
    }
    return n;
}
