/*
 * map.h - the hash map keyed by bytes (a name, an address, a handle's
 * bits) to a pointer: open addressing with linear probing, at most half
 * full, removal by backward shift (no tombstones, so a table that churns
 * never fills with dead slots), FNV-1a (common/internal.h) as the hash.
 * The tables of the server's namespaces, usage rows, counters and peers,
 * and the listeners' handles, are this one.
 *
 * Contract:
 * - Zero is valid: a zeroed hearth__map is empty (hearth__map_init makes
 *   the same state).
 * - The map does not copy or own keys or values: a key's bytes must stay
 *   where they are, unchanged, while its entry is in the map (the usual
 *   key is a field of the value, as a namespace's name), and freeing the
 *   map frees neither.
 * - Values are not NULL (NULL is "absent" to hearth__map_get).
 * - Growth doubles the table as hearth__grow does
 *   (hearth__grow_capacity), so a size that would overflow is
 *   HEARTH_ENOMEM as a failed allocation is; the map is then as it was.
 * - Adding and removing move entries: hearth__map_next's cursor is good
 *   only while neither happens.
 * Not thread-safe: one map, one thread (or its owner's lock).
 */
#ifndef HEARTH_COMMON_MAP_H
#define HEARTH_COMMON_MAP_H

#include "common/internal.h"

typedef struct hearth__map_slot {
    const void *key; /* NULL: a free slot */
    size_t len;
    uint64_t hash;
    void *value;
} hearth__map_slot;

typedef struct hearth__map {
    hearth__map_slot *slots;
    size_t cap; /* slots: 0 or a power of two */
    size_t n;   /* entries */
} hearth__map;

void hearth__map_init(hearth__map *m);
/* Frees the table (not the keys, not the values); m is then empty. */
void hearth__map_free(hearth__map *m);

static inline size_t hearth__map_count(const hearth__map *m) { return m->n; }

/* The value of the key's len bytes, or NULL. */
void *hearth__map_get(const hearth__map *m, const void *key, size_t len);
/* Puts value (not NULL) under key, replacing the value (and the key
 * pointer) of an equal key. 0, or HEARTH_ENOMEM with m unchanged. */
int hearth__map_put(hearth__map *m, const void *key, size_t len,
                    void *value);
/* Removes the key's entry: its value, or NULL when there was none. */
void *hearth__map_remove(hearth__map *m, const void *key, size_t len);

/* The same, with a NUL-terminated string as the key (its bytes without
 * the NUL). */
void *hearth__map_get_str(const hearth__map *m, const char *key);
int hearth__map_put_str(hearth__map *m, const char *key, void *value);
void *hearth__map_remove_str(hearth__map *m, const char *key);

/* Walks the entries in no particular order: start *at at 0; each call
 * gives the next entry's value (and its key and len where not NULL), or
 * NULL after the last. */
void *hearth__map_next(const hearth__map *m, size_t *at, const void **key,
                       size_t *len);

#endif
