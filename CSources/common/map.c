/* map.c - the hash map keyed by bytes (see map.h). */
#include "common/map.h"

#include <string.h>

void hearth__map_init(hearth__map *m) { memset(m, 0, sizeof *m); }

void hearth__map_free(hearth__map *m) {
    hearth__free(m->slots);
    hearth__map_init(m);
}

static uint64_t hash_of(const void *key, size_t len) {
    return hearth__fnv1a(HEARTH__FNV_SEED, key, len);
}

/* The slot holding the key, or the free slot ending its probe. The table
 * is at most half full, so a probe always ends. */
static size_t slot_of(const hearth__map *m, const void *key, size_t len,
                      uint64_t hash) {
    size_t mask = m->cap - 1;
    size_t i = (size_t)hash & mask;
    for (;;) {
        const hearth__map_slot *s = &m->slots[i];
        if (!s->key || (s->hash == hash && s->len == len &&
                        (len == 0 || memcmp(s->key, key, len) == 0)))
            return i;
        i = (i + 1) & mask;
    }
}

void *hearth__map_get(const hearth__map *m, const void *key, size_t len) {
    if (!m->n)
        return NULL;
    const hearth__map_slot *s = &m->slots[slot_of(m, key, len,
                                                  hash_of(key, len))];
    return s->key ? s->value : NULL;
}

/* A table of at least `need` slots (a power of two), the entries moved
 * into it; false (m untouched) when memory fails or the size overflows. */
static bool rehash(hearth__map *m, size_t need) {
    size_t cap = 0;
    if (!hearth__grow_capacity(&cap, need, sizeof(hearth__map_slot)))
        return false;
    /* calloc: a large table comes zeroed from the system, not memset */
    hearth__map_slot *slots = hearth__calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    hearth__map old = *m;
    m->slots = slots;
    m->cap = cap;
    size_t mask = cap - 1;
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.slots[i].key)
            continue;
        /* keys are distinct: the first free slot of its probe is its own */
        size_t at = (size_t)old.slots[i].hash & mask;
        while (m->slots[at].key)
            at = (at + 1) & mask;
        m->slots[at] = old.slots[i];
    }
    hearth__free(old.slots);
    return true;
}

int hearth__map_put(hearth__map *m, const void *key, size_t len,
                    void *value) {
    /* A key must not be NULL (NULL marks a free slot), even when empty. */
    if (!key)
        key = "";
    uint64_t hash = hash_of(key, len);
    if (m->cap) {
        hearth__map_slot *s = &m->slots[slot_of(m, key, len, hash)];
        if (s->key) {
            *s = (hearth__map_slot){key, len, hash, value};
            return 0;
        }
    }
    if ((m->n + 1) > m->cap / 2) {
        if (m->n + 1 > SIZE_MAX / 2 || !rehash(m, (m->n + 1) * 2))
            return HEARTH_ENOMEM;
    }
    m->slots[slot_of(m, key, len, hash)] = (hearth__map_slot){key, len, hash,
                                                              value};
    m->n++;
    return 0;
}

void *hearth__map_remove(hearth__map *m, const void *key, size_t len) {
    if (!m->n)
        return NULL;
    size_t mask = m->cap - 1;
    size_t i = slot_of(m, key, len, hash_of(key, len));
    if (!m->slots[i].key)
        return NULL;
    void *value = m->slots[i].value;
    /* Backward shift: each later entry of the run moves into the hole
     * unless its home lies cyclically after the hole (then the hole ends
     * its probe no more than before). */
    for (size_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
        size_t home = (size_t)m->slots[j].hash & mask;
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i] = (hearth__map_slot){0};
    m->n--;
    return value;
}

void *hearth__map_get_str(const hearth__map *m, const char *key) {
    return hearth__map_get(m, key, strlen(key));
}

int hearth__map_put_str(hearth__map *m, const char *key, void *value) {
    return hearth__map_put(m, key, strlen(key), value);
}

void *hearth__map_remove_str(hearth__map *m, const char *key) {
    return hearth__map_remove(m, key, strlen(key));
}

void *hearth__map_next(const hearth__map *m, size_t *at, const void **key,
                       size_t *len) {
    for (; *at < m->cap; (*at)++) {
        const hearth__map_slot *s = &m->slots[*at];
        if (s->key) {
            (*at)++;
            if (key)
                *key = s->key;
            if (len)
                *len = s->len;
            return s->value;
        }
    }
    return NULL;
}
