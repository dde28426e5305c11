/* queue.c - the triggers' queues on disk, one object per name (internal.h). */
#include "triggers/internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define SPOOL_MAX_BYTES (1ull << 30) /* a trigger's queue: events past it drop */
#define DEAD_MAX_BYTES (256ull << 20)

int hearth__tqueue_get(hearth__map *open, const char *dir,
                       const char *name, hearth__tqueue **out,
                       hearth_error_t *err) {
    hearth__tqueue *q = hearth__map_get_str(open, name);
    if (q) {
        q->refs++;
        *out = q;
        return 0;
    }
    if (mkdir(dir, 0755) && errno != EEXIST) /* made on first need */
        return hearth__error(err, HEARTH_EIO, dir, "cannot create %s: %s", dir,
                             strerror(errno));
    q = hearth__calloc(1, sizeof *q);
    size_t len = strlen(dir) + strlen(name) + 16;
    char *path = hearth__malloc(len);
    if (q)
        q->name = hearth__strndup(name, strlen(name));
    int rc = q && q->name && path ? 0 : hearth__error_code(err, HEARTH_ENOMEM);
    if (!rc) {
        snprintf(path, len, "%s/%s", dir, name);
        rc = hearth__spool_open(path, SPOOL_MAX_BYTES, &q->spool, err);
    }
    if (!rc) {
        snprintf(path, len, "%s/%s/dead", dir, name);
        rc = hearth__spool_open(path, DEAD_MAX_BYTES, &q->dead, err);
    }
    hearth__free(path);
    if (!rc && hearth__map_put_str(open, q->name, q))
        rc = hearth__error_code(err, HEARTH_ENOMEM);
    if (rc) {
        if (q) {
            hearth__spool_close(q->spool);
            hearth__spool_close(q->dead);
            hearth__free(q->name);
        }
        hearth__free(q);
        return rc;
    }
    q->refs = 1;
    q->open = open;
    *out = q;
    return 0;
}

void hearth__tqueue_put(hearth__tqueue *q) {
    if (--q->refs > 0)
        return;
    hearth__map_remove_str(q->open, q->name);
    hearth__spool_close(q->spool);
    hearth__spool_close(q->dead);
    hearth__free(q->name);
    hearth__free(q);
}
