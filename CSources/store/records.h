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

typedef struct hearth__records {
    hearth__buf paths;          /* every part's path, JSON strings in a row */
    hearth__record_part *parts; /* in write order */
    size_t nparts, parts_cap;
    size_t *ends;               /* record i is parts[ends[i-1], ends[i]) */
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
/* Appends every record to out as one commit (records sealed, batch_rest
 * filled). HEARTH_ETOOBIG (a record past the format's 4 GB) or
 * HEARTH_ENOMEM: out is left as it was. */
int hearth__records_write(const hearth__records *r, hearth__buf *out);

#endif
