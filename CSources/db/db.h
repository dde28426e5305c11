/* db.h - internal access to an embedded database, for tests and the
 * server built on it. */
#ifndef HEARTH_DB_DB_H
#define HEARTH_DB_DB_H

#include "store/store.h"

/* The database's durable store, or NULL in memory. Loop thread only. */
hearth__store *hearth__db_store(hearth_db_t *db);

/* Writes made on the loop thread are committed once per loop iteration
 * (their completions run then) instead of one by one. Loop thread only. */
void hearth__db_set_group_commit(hearth_db_t *db, bool on);

/* The current root (borrowed; valid until the next write). Loop thread. */
const hearth_node_t *hearth__db_root(hearth_db_t *db);

#endif
