/* replay.c - one log record's payload ([[path, value], ...]) applied to a
 * tree, as recovery replays it.
 *
 * The payload is read whole into its parts before any is applied, so a
 * record that does not parse changes nothing. The usual payload is read
 * straight into nodes (tree/json.h's reader): going through jansson built
 * a jansson tree of every write only to convert and free it, most of the
 * time of a replay. A payload with anything unusual (a special member such
 * as ".priority", an escape in a path) is read again through jansson,
 * which gives the same nodes. */
#include "store/files.h"
#include "tree/json.h"

#include <string.h>

typedef hearth__record_part part;
typedef hearth__record parts;

void hearth__record_free(parts *ps) {
    for (size_t i = 0; i < ps->n; i++) {
        hearth__free(ps->v[i].path);
        hearth_node_decref(ps->v[i].value);
    }
    hearth__free(ps->v);
    hearth__free(ps->identity);
    *ps = (parts){0};
}

/* Takes over path and value, freeing them when out of memory. */
static int parts_add(parts *ps, char *path, hearth_node_t *value) {
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 4;
        part *v = hearth__realloc(ps->v, cap * sizeof *v);
        if (!v) {
            hearth__free(path);
            hearth_node_decref(value);
            return HEARTH_ENOMEM;
        }
        ps->v = v;
        ps->cap = cap;
    }
    ps->v[ps->n++] = (part){path, value};
    return 0;
}

/* The keys a value written at path may still nest. */
static int room_below(const char *path, unsigned *room) {
    hearth__path p;
    if (hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &p, NULL))
        return HEARTH_EIO;
    *room = p.n >= HEARTH_MAX_DEPTH ? 0 : HEARTH_MAX_DEPTH - p.n;
    return 0;
}

/* One plain [path, value] pair. */
static int read_plain_pair(hearth__json_reader *r, parts *ps) {
    const char *s;
    size_t len;
    if (!hearth__json_read_char(r, '[') || hearth__json_read_string(r, &s, &len))
        return HEARTH__JSON_UNUSUAL;
    /* A NUL in a path is jansson's to judge (its C string ends there). */
    char *path = memchr(s, '\0', len) ? NULL : hearth__strndup(s, len);
    unsigned room;
    hearth_node_t *value;
    if (!path || room_below(path, &room) || !hearth__json_read_char(r, ',') ||
        hearth__json_read_value(r, room, &value)) {
        hearth__free(path);
        return HEARTH__JSON_UNUSUAL;
    }
    if (!hearth__json_read_char(r, ']')) {
        hearth__free(path);
        hearth_node_decref(value);
        return HEARTH__JSON_UNUSUAL;
    }
    return parts_add(ps, path, value);
}

/* A meta value: t and s are whole numbers, by a string. */
static int take_meta(parts *ps, const char *key, const hearth_node_t *v) {
    bool number = hearth_node_type(v) == HEARTH_TYPE_NUMBER;
    double n = number ? hearth_node_number_value(v) : -1;
    if (!strcmp(key, "t") || !strcmp(key, "s")) {
        if (!number || n < 0 || n != (double)(uint64_t)n)
            return HEARTH_EIO;
        if (key[0] == 't')
            ps->time_ms = (int64_t)n;
        else
            ps->seq = (uint64_t)n;
    } else if (!strcmp(key, "by")) {
        size_t len;
        const char *s = hearth_node_string_value(v, &len);
        if (!s || ps->identity)
            return HEARTH_EIO;
        if (!(ps->identity = hearth__strndup(s, len)))
            return HEARTH_ENOMEM;
    } /* other members: a later version's, ignored */
    return 0;
}

/* The meta object after the payload's '[' (taken), when there is one. */
static int read_plain_meta(hearth__json_reader *r, parts *ps) {
    if (!hearth__json_read_char(r, '{'))
        return 0;
    ps->has_meta = true;
    if (hearth__json_read_char(r, '}'))
        return 0;
    do {
        const char *s;
        size_t len;
        char key[8];
        hearth_node_t *v;
        if (hearth__json_read_string(r, &s, &len) || len >= sizeof key)
            return HEARTH__JSON_UNUSUAL;
        memcpy(key, s, len);
        key[len] = '\0';
        if (!hearth__json_read_char(r, ':') ||
            hearth__json_read_value(r, HEARTH_MAX_DEPTH, &v))
            return HEARTH__JSON_UNUSUAL;
        int rc = take_meta(ps, key, v);
        hearth_node_decref(v);
        if (rc)
            return rc == HEARTH_ENOMEM ? rc : HEARTH__JSON_UNUSUAL;
    } while (hearth__json_read_char(r, ','));
    return hearth__json_read_char(r, '}') ? 0 : HEARTH__JSON_UNUSUAL;
}

static int read_plain(const char *payload, size_t len, parts *ps) {
    hearth__json_reader r;
    hearth__json_reader_init(&r, payload, len);
    int rc = hearth__json_read_char(&r, '[') ? 0 : HEARTH__JSON_UNUSUAL;
    if (!rc)
        rc = read_plain_meta(&r, ps);
    /* After a meta, the parts follow a comma. */
    bool more = !rc && !hearth__json_read_char(&r, ']');
    if (more && ps->has_meta && !hearth__json_read_char(&r, ','))
        rc = HEARTH__JSON_UNUSUAL;
    else if (more) {
        do
            rc = read_plain_pair(&r, ps);
        while (!rc && hearth__json_read_char(&r, ','));
        if (!rc && !hearth__json_read_char(&r, ']'))
            rc = HEARTH__JSON_UNUSUAL;
    }
    if (!rc && !hearth__json_read_end(&r))
        rc = HEARTH__JSON_UNUSUAL;
    hearth__json_reader_done(&r);
    return rc;
}

/* The full path: any payload jansson reads, special members included. */
static int read_jansson(const char *payload, size_t len, parts *ps) {
    json_t *json;
    if (hearth__json_load(payload, len, &json, NULL))
        return HEARTH_EIO;
    int rc = json_is_array(json) ? 0 : HEARTH_EIO;
    size_t first = 0;
    json_t *meta = json_array_get(json, 0);
    if (!rc && json_is_object(meta)) {
        first = 1;
        ps->has_meta = true;
        const char *key;
        json_t *v;
        json_object_foreach(meta, key, v) {
            hearth_node_t *n = NULL;
            if (hearth_node_from_jansson(v, 0, &n, NULL))
                rc = HEARTH_EIO;
            if (!rc)
                rc = take_meta(ps, key, n);
            hearth_node_decref(n);
            if (rc)
                break;
        }
    }
    for (size_t i = first; !rc && i < json_array_size(json); i++) {
        json_t *pair = json_array_get(json, i);
        const char *path = json_string_value(json_array_get(pair, 0));
        unsigned room;
        hearth_node_t *value;
        if (!path || json_array_size(pair) != 2 || room_below(path, &room) ||
            hearth__node_from_jansson_at(json_array_get(pair, 1), 0, path,
                                         HEARTH_MAX_DEPTH - room, &value,
                                         NULL)) {
            rc = HEARTH_EIO;
            break;
        }
        char *copy = hearth__strndup(path, strlen(path));
        rc = copy ? parts_add(ps, copy, value) : HEARTH_ENOMEM;
        if (!copy)
            hearth_node_decref(value);
    }
    json_decref(json);
    return rc;
}

int hearth__store_read_record(const char *payload, size_t len, parts *ps) {
    int rc = read_plain(payload, len, ps);
    if (rc) {
        hearth__record_free(ps);
        rc = read_jansson(payload, len, ps);
    }
    return rc == HEARTH_ENOMEM ? rc : rc ? HEARTH_EIO : 0;
}

int hearth__store_apply_record(const char *payload, size_t len,
                               hearth_node_t **root) {
    uint64_t seq = 0;
    return hearth__store_apply_record_seq(payload, len, root, &seq);
}

int hearth__store_apply_record_seq(const char *payload, size_t len,
                                   hearth_node_t **root, uint64_t *seq) {
    parts ps = {0};
    int rc = hearth__store_read_record(payload, len, &ps);
    if (!rc)
        *seq = ps.has_meta ? ps.seq : *seq + 1;
    for (size_t i = 0; !rc && i < ps.n; i++) {
        hearth__path p; /* parsed once already: it parses */
        rc = hearth__path_parse(ps.v[i].path, HEARTH__PATH_ALLOW_PRIORITY, &p,
                                NULL);
        if (!rc)
            rc = hearth__node_set_path(root, &p, ps.v[i].value, NULL);
    }
    hearth__record_free(&ps);
    return rc ? HEARTH_EIO : 0;
}
