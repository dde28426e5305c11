/*
 * records.h - the log records of writes not yet written, kept as
 * references until they are.
 *
 * Appending a write costs the loop thread time in the number of its parts,
 * not in the size of its data: the record keeps each part's path (as the
 * JSON string it becomes) and a new reference to its value. The values are
 * immutable and reference counted atomically, so the commit may turn them
 * into bytes (logfile.h's format) on a worker thread, where it writes them.
 * Adding and clearing happen on one thread (the loop); writing may run on
 * any thread while nothing adds to or clears the same list.
 */
#ifndef HEARTH_STORE_RECORDS_H
#define HEARTH_STORE_RECORDS_H

#include "path/path.h"
#include "tree/node.h"

typedef struct hearth__record_part hearth__record_part;
typedef struct hearth__record_info hearth__record_info;

/* Who made a write and when: what point-in-time recovery finds by. A
 * record's payload starts with it as an object,
 * {"t": Unix ms, "s": sequence, "by": identity}, before its parts; a
 * record with no parts is a mark (a new log's first record: "s" is the
 * last sequence before it, "t" when the log began). Records of earlier
 * versions have none. */
typedef struct hearth__record_meta {
    int64_t time_ms;      /* when the write was applied */
    uint64_t seq;         /* its place among the namespace's writes, from 1 */
    const char *identity; /* "admin", "anonymous", "uid:<uid>"; NULL: none */
} hearth__record_meta;

typedef struct hearth__records {
    hearth__buf paths;          /* every part's path, JSON strings in a row */
    hearth__record_part *parts; /* in write order */
    size_t nparts, parts_cap;
    hearth__record_info *records; /* where each one's parts end, its meta */
    size_t nrecords, records_cap;
} hearth__records;

void hearth__records_init(hearth__records *r);
/* Drops every record (and its references) and frees the list. */
void hearth__records_clear(hearth__records *r);
bool hearth__records_empty(const hearth__records *r);
/* Adds the record of one write (paths may end in .priority); HEARTH_ENOMEM
 * leaves the list as it was. */
int hearth__records_add(hearth__records *r, const hearth__path *const *paths,
                        const hearth_node_t *const *values, size_t n);
/* The same with the record's meta (NULL: none; its identity is copied). */
int hearth__records_add_meta(hearth__records *r,
                             const hearth__record_meta *meta,
                             const hearth__path *const *paths,
                             const hearth_node_t *const *values, size_t n);
/* A record's bytes (header and payload, sealed alone: a commit of one)
 * appended to out: the mark a new log starts with. */
int hearth__records_write_mark(const hearth__record_meta *meta,
                               hearth__buf *out);
/* Appends every record to out as one commit (records sealed, batch_rest
 * filled). HEARTH_ETOOBIG (a record past the format's 4 GB) or
 * HEARTH_ENOMEM: out is left as it was. */
int hearth__records_write(const hearth__records *r, hearth__buf *out);

#endif
