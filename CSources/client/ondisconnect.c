/* ondisconnect.c - the record of accepted onDisconnect writes, in the
 * order the server will run them. */
#include "client/ondisconnect.h"

#include "path/path.h"

#include <string.h>

static void entry_clear(hearth__od_entry *e) {
    hearth__free(e->op_path);
    hearth__free(e->path);
    hearth_node_decref(e->value);
}

void hearth__od_clear(hearth__od_list *l) {
    for (size_t i = 0; i < l->n; i++)
        entry_clear(&l->e[i]);
    hearth__free(l->e);
    memset(l, 0, sizeof *l);
}

static bool is_below(const char *path, const char *top) {
    hearth__path a, b;
    return !hearth__path_parse(top, HEARTH__PATH_ALLOW_PRIORITY, &a, NULL) &&
           !hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &b, NULL) &&
           hearth__path_is_prefix(&a, &b);
}

/* A cancel: the operations at or below top go, as on the server. */
static void forget(hearth__od_list *l, const char *top) {
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (is_below(l->e[i].op_path, top))
            entry_clear(&l->e[i]);
        else
            l->e[k++] = l->e[i];
    }
    l->n = k;
}

/* base joined with a relative path ("/" + "a/b" = "/a/b"). */
static char *joined(const char *base, const char *rel) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_adds(&b, base);
    if (!*base || base[strlen(base) - 1] != '/')
        hearth__buf_addc(&b, '/');
    hearth__buf_adds(&b, rel);
    return hearth__buf_detach(&b, NULL);
}

/* Adds (op_path, base + rel, value) to the n entries after l->n: the
 * caller makes them part of the list only when all of an operation's
 * entries are made. */
static int stage(hearth__od_list *l, size_t n, const char *op_path,
                 const char *rel, const json_t *value) {
    hearth__od_entry *grown =
        hearth__grow(l->e, &l->cap, l->n + n + 1, sizeof *grown);
    if (!grown)
        return HEARTH_ENOMEM;
    l->e = grown;
    hearth__od_entry *e = &l->e[l->n + n];
    memset(e, 0, sizeof *e);
    e->op_path = hearth__strndup(op_path, strlen(op_path));
    e->path = rel ? joined(op_path, rel) : hearth__strndup(op_path, strlen(op_path));
    int rc = e->op_path && e->path ? 0 : HEARTH_ENOMEM;
    if (!rc)
        rc = hearth_node_from_jansson(value, HEARTH_JSON_ALLOW_SERVER_VALUES,
                                      &e->value, NULL);
    if (rc)
        entry_clear(e);
    return rc;
}

int hearth__od_accepted(hearth__od_list *l, const char *action,
                        const json_t *body) {
    const char *path = json_string_value(json_object_get(body, "p"));
    const json_t *data = json_object_get(body, "d");
    if (!path)
        return HEARTH_EINVAL;
    if (!strcmp(action, "oc")) {
        forget(l, path);
        return 0;
    }
    size_t n = 0;
    int rc = 0;
    if (!strcmp(action, "o")) {
        rc = data ? stage(l, n++, path, NULL, data) : HEARTH_EINVAL;
    } else if (!strcmp(action, "om") && json_is_object(data)) {
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)data, key, v) {
            if ((rc = stage(l, n, path, key, v)))
                break;
            n++;
        }
    } else {
        rc = HEARTH_EINVAL;
    }
    if (rc) {
        for (size_t i = 0; i < n; i++)
            entry_clear(&l->e[l->n + i]);
        return rc;
    }
    l->n += n;
    return 0;
}
