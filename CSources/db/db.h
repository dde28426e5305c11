/* db.h - internal access to an embedded database, for tests and the
 * server built on it. */
#ifndef HEARTH_DB_DB_H
#define HEARTH_DB_DB_H

#include "store/store.h"

/* The database's durable store, or NULL in memory. Loop thread only. */
hearth__store *hearth__db_store(hearth_db_t *db);

#endif
