/*
 * disk.h - a client's cache on disk (internal): the pending writes and the
 * server's data for the locations it listens to, in one SQLite file per
 * database URL, so that an app started offline shows its data and keeps
 * its writes.
 *
 * Pending writes are stored before they are applied and removed when the
 * server has settled them; server data is stored by view (path and query)
 * as it changes and pruned, least recently used first, past the bound when
 * no listener holds it. A file that is corrupt, unreadable or held by
 * another process is reported and replaced (its readable pending writes
 * carried over); the cache never stops the client from working.
 *
 * Loop thread only.
 */
#ifndef HEARTH_CLIENT_DISK_H
#define HEARTH_CLIENT_DISK_H

#include "common/internal.h"

typedef struct hearth__disk hearth__disk;

/* The bound when the configuration gives none, and its range. */
#define HEARTH__DISK_DEFAULT_BOUND (10u * 1024 * 1024)
#define HEARTH__DISK_MIN_BOUND (1u * 1024 * 1024)
#define HEARTH__DISK_MAX_BOUND (100u * 1024 * 1024)

/* HEARTH_EINVAL (err says why) unless bound is 0 (the default) or in
 * range. */
int hearth__disk_check_bound(size_t bound, hearth_error_t *err);
/* Opens (creating) the cache for url in dir, and dir with its parents.
 * bound is the byte limit for server data, and separately for pending
 * writes. */
int hearth__disk_open(const char *dir, const char *url, size_t bound,
                      hearth__disk **out, hearth_error_t *err);
void hearth__disk_close(hearth__disk *d);
/* The file in use (for messages and tests). */
const char *hearth__disk_path(const hearth__disk *d);

/* ---- pending writes ---- */

/* Stores a write (its wire action and body) before it is applied.
 * HEARTH_ETOOBIG when the pending writes would pass the bound. */
int hearth__disk_write_add(hearth__disk *d, int64_t id, const char *action,
                           const char *body);
void hearth__disk_write_remove(hearth__disk *d, int64_t id);
/* Calls cb for each stored write in id order. */
typedef void (*hearth__disk_write_cb)(int64_t id, const char *action,
                                      const char *body, void *ctx);
void hearth__disk_writes(hearth__disk *d, hearth__disk_write_cb cb, void *ctx);

/* ---- server data by view ("PATH|QUERY") ---- */

/* Stores a view's data (any bytes; the client stores tree/codec.h's form). */
int hearth__disk_put(hearth__disk *d, const char *view, const void *data,
                     size_t len);
/* The stored bytes (hearth__free them) and their length, or NULL. */
void *hearth__disk_get(hearth__disk *d, const char *view, size_t *len);
/* The views whose names start with prefix (its last character ASCII), in
 * name order: an array of *n strings, each and the array to hearth__free;
 * NULL when none (or out of memory). */
char **hearth__disk_views(hearth__disk *d, const char *prefix, size_t *n);
/* Drops the least recently used views not in keep until the stored data
 * fits the bound. */
void hearth__disk_prune(hearth__disk *d, const char *const *keep, size_t n);

#endif
