/* backup.c - hearth_backup: a consistent copy of a data directory that a
 * running server may hold, without its lock and without changing a byte
 * of it. Recovery reads the newest snapshot and replays the logs after it
 * (find_damage: nothing on disk changes); the log being appended to may
 * end in a commit still being written, and only the whole commits before
 * it are taken, so the copy is the data as of one commit. A snapshot
 * taken meanwhile may remove the files being read: the copy starts over.
 * The copy is written to OUT.tmp, synced, then renamed: OUT is whole or
 * absent, whenever the process is killed. */
#include "store/files.h"
#include "tree/json.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ATTEMPTS 10 /* snapshots racing the copy, at most */

/* The data of dir as of one commit, into *root. */
static int read_consistent(const char *dir, hearth_node_t **root,
                           hearth_error_t *err) {
    int rc = HEARTH_EIO;
    for (int i = 0; i < ATTEMPTS; i++) {
        hearth__store_report report;
        hearth__recovery rec;
        *root = hearth_node_null();
        if (!*root)
            return hearth__error_code(err, HEARTH_ENOMEM);
        rc = hearth__store_recover(dir, true, root, &report, &rec, err);
        /* Damage is acceptable only as the newest log's unfinished tail
         * (its writer is mid-commit); anywhere else it is real damage. */
        if (!rc && rec.damaged && rec.damaged_gen != rec.append_gen)
            rc = hearth__error(err, HEARTH_EIO, dir,
                               "%s: log.%llu is damaged at byte %llu: run "
                               "hearth repair first",
                               dir, (unsigned long long)rec.damaged_gen,
                               (unsigned long long)rec.damaged_at);
        if (!rc)
            return 0;
        hearth_node_decref(*root);
        *root = NULL;
        if (rc != HEARTH_EIO || access(dir, F_OK) != 0)
            break; /* not a race with a snapshot */
    }
    return rc;
}

/* Writes data to path through path.tmp, synced, renamed: all or nothing. */
static int write_atomically(const char *path, const char *data, size_t len,
                            hearth_error_t *err) {
    size_t n = strlen(path);
    char *tmp = hearth__malloc(n + 5), *dir_copy = hearth__strndup(path, n);
    if (!tmp || !dir_copy) {
        hearth__free(tmp);
        hearth__free(dir_copy);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp", 5);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int rc = fd < 0 || hearth__store_write_all(fd, data, len) || fsync(fd);
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
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__node_write_json(&b, root, HEARTH_JSON_EXPORT);
    hearth_node_decref(root);
    rc = b.failed ? hearth__error_code(err, HEARTH_ENOMEM)
                  : write_atomically(out_file, b.data, b.len, err);
    hearth__buf_free(&b);
    return rc;
}
