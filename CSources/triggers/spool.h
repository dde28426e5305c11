/*
 * spool.h - a trigger's durable queue of events: records appended to
 * segment files in a directory (DIR/seg.<N>, a new one past 4 MiB), and a
 * cursor (DIR/cursor: segment and offset of the next record to deliver).
 * Appends come from any thread (a commit's worker, the loop), each whole
 * under the spool's mutex; one thread reads (the trigger's deliverer, or
 * the loop for the dead letters); the mutex guards the positions they
 * share, so a reader only ever sees whole records. A record is [u32 length][u32 crc32][u64 time
 * the event was made, in Unix microseconds][payload], little endian.
 *
 * Durability: the events of a commit are appended by the commit's own
 * thread once its records are written, and synced with them when it
 * syncs (hearth__spool_sync_data), all before its writes are
 * acknowledged; the deliverer also syncs the segment and the cursor each
 * second while events come (for --fsync batch and off).
 * Opening cuts a torn last record (the crc or the length does not hold).
 * Internal to triggers/.
 */
#ifndef HEARTH_TRIGGERS_SPOOL_H
#define HEARTH_TRIGGERS_SPOOL_H

#include "common/internal.h"

#include <stdint.h>

typedef struct hearth__spool hearth__spool;

/* Opens (creating) the spool in dir, holding at most max_bytes of
 * records not yet consumed. */
int hearth__spool_open(const char *dir, uint64_t max_bytes,
                       hearth__spool **out, hearth_error_t *err);
/* Syncs, closes and frees (NULL: nothing). */
void hearth__spool_close(hearth__spool *s);

/* Writer: appends one record. HEARTH_ETOOBIG when the spool holds
 * max_bytes already (nothing written), HEARTH_EIO when the disk refuses. */
int hearth__spool_append(hearth__spool *s, const void *data, size_t len,
                         uint64_t time_us);
/* Writer, for many records in one write(2): frame each into out, then
 * append out's n records at once (all or none, as one record is). */
void hearth__spool_frame(hearth__buf *out, const void *data, size_t len,
                         uint64_t time_us);
int hearth__spool_append_frames(hearth__spool *s, const void *frames,
                                size_t len, size_t n);
/* The record at *off of frames (len bytes framed so, as a cluster's queue
 * carries them), *off moved past it: 0, 1 at the end, HEARTH_EIO when
 * what is there is not a whole record. */
int hearth__spool_unframe(const void *frames, size_t len, size_t *off,
                          const char **data, size_t *dlen, uint64_t *time_us);
/* fdatasync of the segment being written and of the cursor (any
 * thread); _data: of the segment only (a commit that syncs its events
 * with its records). */
void hearth__spool_sync(hearth__spool *s);
void hearth__spool_sync_data(hearth__spool *s);

/* Reader: the next record into out (replacing what it held) and its
 * time: 0, or 1 when there is none now, or HEARTH_EIO when the file
 * cannot be read or is damaged (the reader then skips to the next
 * segment, reporting on stderr). */
int hearth__spool_peek(hearth__spool *s, hearth__buf *out, uint64_t *time_us);
/* Reader: the record peeked is done; the cursor moves past it (written
 * to DIR/cursor), and a segment left behind is deleted. */
void hearth__spool_advance(hearth__spool *s);

/* Reader: calls cb with each record not yet consumed, oldest first, at
 * most max of them, without moving the cursor; nonzero from cb stops. */
typedef int (*hearth__spool_cb)(void *ctx, const char *data, size_t len,
                                uint64_t time_us);
int hearth__spool_list(hearth__spool *s, size_t max, hearth__spool_cb cb,
                       void *ctx);

/* Records appended and consumed since open, counting those found at open
 * as appended (any thread). */
uint64_t hearth__spool_waiting(hearth__spool *s);
uint64_t hearth__spool_bytes(hearth__spool *s);

#endif
