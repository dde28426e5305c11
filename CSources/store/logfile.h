/*
 * logfile.h - the bytes of one log file: its header, its records, and
 * reading them back (where the intact records end, and why).
 *
 * Version 2 (written now):
 *   "HEARTH-LOG 2\n" then records
 *   record = [u32 length][u32 crc32(payload)][u32 batch_rest]
 *            [u32 crc32(the 12 bytes before)][payload]      (little endian)
 * batch_rest is how many bytes of the same commit (one write()) follow
 * the record. The header's own checksum makes a damaged length damage,
 * not a record that seems to run past the end; batch_rest tells how far
 * the last commit was meant to reach, so a commit cut short by a crash
 * (short file, or a file extended with zeros) is recognised as a whole.
 * The newest log may end in zeros after its last whole commit: space the
 * store wrote ahead (store.c), where the next commit goes; the log is
 * clean and its records end there.
 *
 * Version 1 (read only): "HEARTH-LOG 1\n" then [u32 length][u32 crc32]
 * [payload]. It cannot tell a damaged length from a torn append, so only
 * a last record ending exactly at the end of the file, a header that does
 * not fit, or zeros to the end count as torn.
 */
#ifndef HEARTH_STORE_LOGFILE_H
#define HEARTH_STORE_LOGFILE_H

#include "common/internal.h"

#define HEARTH__LOG_HEADER "HEARTH-LOG 2\n"
#define HEARTH__LOG_HEADER_LEN (sizeof HEARTH__LOG_HEADER - 1)
#define HEARTH__LOG_RECORD_HEADER 16

/* How a log's bytes end after its intact records. */
typedef enum hearth__log_end {
    HEARTH__LOG_CLEAN,   /* every byte is an intact record */
    HEARTH__LOG_TORN,    /* the last commit was cut short by a crash */
    HEARTH__LOG_DAMAGED, /* anything else: refuse to guess */
} hearth__log_end;

typedef struct hearth__log_scan {
    int version;          /* 1 or 2; 0 when not even the header is there */
    hearth__log_end end;
    size_t good;          /* the intact prefix: whole commits kept */
    size_t space;         /* newest log: zeros written ahead after the
                             records (CLEAN) or after the torn commit (TORN) */
    size_t bad;           /* DAMAGED: offset of the first bad record */
    const char *why;      /* DAMAGED: what is wrong there */
} hearth__log_scan;

/* Fills the length and payload checksum of the record at rec, whose
 * payload of len bytes follows its HEARTH__LOG_RECORD_HEADER bytes. */
void hearth__log_seal_record(char *rec, size_t len);
/* Marks the records in data[0, len) as one commit: fills each header's
 * batch_rest and checksum (once per record: a commit's whole). */
void hearth__log_seal_batch(char *data, size_t len);
/* Checks a whole log. last: it is the newest log, the only one a crash
 * can have left torn. */
void hearth__log_check(const char *data, size_t size, bool last,
                       hearth__log_scan *scan);
/* Iterates the records of data[0, scan->good): start with *off = 0;
 * false at the end. */
bool hearth__log_next(const char *data, const hearth__log_scan *scan,
                      size_t *off, const char **payload, size_t *len);
/* Whether p[0, len) is all zeros (space written ahead, or a tail that
 * never reached the disk). */
bool hearth__log_all_zero(const char *p, size_t len);
/* How many intact records lie in data[from, size) (found by trying every
 * offset): what cutting there loses. */
uint64_t hearth__log_count_intact(const char *data, size_t size, int version,
                                  size_t from);

#endif
