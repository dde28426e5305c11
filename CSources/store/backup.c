/* backup.c - hearth_backup: a consistent copy of a data directory that a
 * running server may hold, without its lock and without changing a byte
 * of it. The files recovery needs (the newest snapshot and the logs from
 * it on) are opened first and named, in a private directory under
 * $TMPDIR (hearth-backup-pin-*, removed after; a backup killed meanwhile
 * leaves it, holding only dangling links), by links to the open files
 * (/proc/self/fd/N; on Darwin hard links, in .NAME.backup-pin-* beside the
 * data directory: os/os.h, hearth__os_pin): a snapshot that
 * removes them meanwhile cannot take them away, so the copy only starts
 * over when one lands in the microseconds between listing and opening.
 * Recovery then reads them (find_damage: nothing on disk changes); the
 * log being appended to may end in a commit still being written, and
 * only the whole commits before it are taken, so the copy is the data as
 * of one commit. The copy is written to OUT.tmp, synced, then renamed:
 * OUT is whole or absent, whenever the process is killed. */
#include "store/files.h"
#include "tree/json.h"
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ATTEMPTS 10 /* snapshots landing between listing and opening */
#define RACED 1

/* The files of one recovery, held open, and the directory naming them. */
typedef struct pinned {
    char dir[PATH_MAX];
    int *fds;
    char (*names)[64];
    size_t n;
} pinned;

static void unpin(pinned *p) {
    for (size_t i = 0; i < p->n; i++) {
        char link_path[PATH_MAX + 64];
        snprintf(link_path, sizeof link_path, "%s/%s", p->dir, p->names[i]);
        unlink(link_path);
        close(p->fds[i]);
    }
    if (p->dir[0])
        rmdir(p->dir);
    hearth__free(p->fds);
    hearth__free(p->names);
    memset(p, 0, sizeof *p);
}

/* Opens dir/name and names it in p->dir: 0, RACED when it is gone. */
static int pin_one(pinned *p, const char *dir, const char *name,
                   hearth_error_t *err) {
    char path[PATH_MAX + 64], link_path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? RACED
                               : hearth__error(err, HEARTH_EIO, path,
                                               "cannot read %s: %s", path,
                                               strerror(errno));
    snprintf(link_path, sizeof link_path, "%s/%s", p->dir, name);
    int pinned = hearth__os_pin(fd, path, link_path);
    if (pinned) {
        int saved = errno;
        close(fd);
        return pinned > 0 ? RACED
                          : hearth__error(err, HEARTH_EIO, p->dir,
                                          "cannot link in %s: %s", p->dir,
                                          strerror(saved));
    }
    p->fds[p->n] = fd;
    snprintf(p->names[p->n++], sizeof p->names[0], "%s", name);
    return 0;
}

/* Pins the newest snapshot of dir and the logs from it on. */
static int pin(const char *dir, pinned *p, hearth_error_t *err) {
    memset(p, 0, sizeof *p);
    uint64_t *snaps = NULL, *logs = NULL;
    size_t nsnaps = 0, nlogs = 0;
    if (hearth__store_list_gens(dir, "snapshot.", ".json", &snaps, &nsnaps) ||
        hearth__store_list_gens(dir, "log.", "", &logs, &nlogs)) {
        hearth__free(snaps);
        return hearth__error(err, HEARTH_EIO, dir, "cannot list %s: %s", dir,
                             strerror(errno));
    }
    uint64_t base = nsnaps ? snaps[nsnaps - 1] : 0;
    int rc = 0;
    if (hearth__os_pin_template(dir, p->dir, sizeof p->dir)) {
        p->dir[0] = '\0'; /* cut short: nothing for unpin to remove */
        rc = hearth__error(err, HEARTH_EINVAL, dir,
                           "the path of the pins for %s is too long", dir);
    } else if (!(p->fds = hearth__calloc(nlogs + 1, sizeof *p->fds)) ||
               !(p->names = hearth__calloc(nlogs + 1, sizeof *p->names)))
        rc = hearth__error_code(err, HEARTH_ENOMEM);
    else if (!mkdtemp(p->dir))
        rc = hearth__error(err, HEARTH_EIO, p->dir, "cannot make %s: %s",
                           p->dir, strerror(errno));
    char name[64];
    if (!rc && base) {
        snprintf(name, sizeof name, "snapshot.%llu.json", (unsigned long long)base);
        rc = pin_one(p, dir, name, err);
    }
    for (size_t i = 0; !rc && i < nlogs; i++) {
        if (logs[i] < base)
            continue; /* superseded: recovery skips it */
        snprintf(name, sizeof name, "log.%llu", (unsigned long long)logs[i]);
        rc = pin_one(p, dir, name, err);
    }
    hearth__free(snaps);
    hearth__free(logs);
    if (rc)
        unpin(p); /* (rmdir of a template never made fails harmlessly) */
    return rc;
}

/* err's text names the pinned directory: name dir instead. */
static void rename_in_error(hearth_error_t *err, const char *pinned_dir,
                            const char *dir) {
    if (!err)
        return;
    char *at = strstr(err->message, pinned_dir);
    if (!at)
        return;
    char text[sizeof err->message];
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - err->message),
             err->message, dir, at + strlen(pinned_dir));
    memcpy(err->message, text, sizeof text);
}

/* The data of dir as of one commit, into *root. */
static int read_consistent(const char *dir, hearth_node_t **root,
                           hearth_error_t *err) {
    int rc = RACED;
    for (int i = 0; rc == RACED && i < ATTEMPTS; i++) {
        pinned p;
        if ((rc = pin(dir, &p, err)))
            continue;
        hearth__store_report report;
        hearth__recovery rec;
        *root = hearth_node_null();
        rc = *root ? hearth__store_recover(p.dir, true, root, &report, &rec, err)
                   : hearth__error_code(err, HEARTH_ENOMEM);
        /* Damage is acceptable only as the newest log's unfinished tail
         * (its writer is mid-commit); anywhere else it is real damage. */
        if (!rc && rec.damaged && rec.damaged_gen != rec.append_gen)
            rc = hearth__error(err, HEARTH_EIO, dir,
                               "%s: log.%llu is damaged at byte %llu: run "
                               "hearth repair first",
                               dir, (unsigned long long)rec.damaged_gen,
                               (unsigned long long)rec.damaged_at);
        rename_in_error(err, p.dir, dir);
        unpin(&p);
        if (rc) {
            hearth_node_decref(*root);
            *root = NULL;
        }
    }
    if (rc == RACED)
        rc = hearth__error(err, HEARTH_EIO, dir,
                           "%s: snapshots kept replacing its files; try again",
                           dir);
    return rc;
}

int hearth__store_write_atomically(const char *path, const char *data,
                                   size_t len, int mode, hearth_error_t *err) {
    size_t n = strlen(path);
    char *tmp = hearth__malloc(n + 5), *dir_copy = hearth__strndup(path, n);
    if (!tmp || !dir_copy) {
        hearth__free(tmp);
        hearth__free(dir_copy);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp", 5);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, mode);
    int rc = fd < 0 || hearth__store_write_all(fd, data, len) || hearth__os_sync(fd);
    if (fd >= 0)
        close(fd);
    if (!rc)
        rc = rename(tmp, path) || hearth__store_sync_dir(dirname(dir_copy));
    if (rc) {
        hearth__error(err, HEARTH_EIO, path, "cannot write %s: %s", path,
                      strerror(errno));
        unlink(tmp);
    }
    hearth__free(tmp);
    hearth__free(dir_copy);
    return rc ? HEARTH_EIO : 0;
}

int hearth_backup(const char *data_dir, const char *out_file,
                  hearth_error_t *err) {
    if (!data_dir || !out_file)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    hearth_node_t *root;
    int rc = read_consistent(data_dir, &root, err);
    if (rc)
        return rc;
    rc = hearth__store_write_root(out_file, root, err);
    hearth_node_decref(root);
    return rc;
}

int hearth__store_write_root(const char *path, const hearth_node_t *root,
                             hearth_error_t *err) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__node_write_json(&b, root, HEARTH_JSON_EXPORT);
    int rc = b.failed ? hearth__error_code(err, HEARTH_ENOMEM)
                      : hearth__store_write_atomically(path, b.data, b.len, 0600,
                                                       err);
    hearth__buf_free(&b);
    return rc;
}
