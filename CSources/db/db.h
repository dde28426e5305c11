/* db.h - internal access to an embedded database, for tests and the
 * server built on it. */
#ifndef HEARTH_DB_DB_H
#define HEARTH_DB_DB_H

#include "store/store.h"

/* The database's durable store, or NULL in memory. Loop thread only. */
hearth__store *hearth__db_store(hearth_db_t *db);

/* A database opened in memory keeps no files until a write changes its
 * data: that write first makes a durable store in dir (creating it), and
 * fails if it cannot. HEARTH_EINVAL for a database already stored or on a
 * URL. Loop thread only. */
int hearth__db_store_on_write(hearth_db_t *db, const char *dir,
                              int fsync_mode);

/* Whether nothing is under way: no operation queued or running, no write
 * waiting for its commit, no commit or snapshot in progress. A database
 * closed then releases its files before hearth_db_close returns (a
 * shared loop; else when its thread ends). Loop thread only. */
bool hearth__db_quiet(hearth_db_t *db);

/* Writes made on the loop thread are committed once per loop iteration
 * (their completions run then) instead of one by one. Loop thread only. */
void hearth__db_set_group_commit(hearth_db_t *db, bool on);

/* The current root (borrowed; valid until the next write). Loop thread. */
const hearth_node_t *hearth__db_root(hearth_db_t *db);

#endif
