/* files.c - paths, whole-file reads and writes, generations, the lock. */
#include "store/files.h"
#include "os/os.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int hearth__store_io_error(hearth_error_t *err, const char *what, const char *path) {
    return hearth__error(err, HEARTH_EIO, path, "%s %s: %s", what, path,
                         strerror(errno));
}

char *hearth__store_path(const char *dir, const char *fmt, uint64_t gen) {
    char name[64];
    snprintf(name, sizeof name, fmt, (unsigned long long)gen);
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = hearth__malloc(len);
    if (p)
        snprintf(p, len, "%s/%s", dir, name);
    return p;
}

int hearth__store_mkdir_p(const char *dir) {
    char *copy = hearth__strndup(dir, strlen(dir));
    if (!copy)
        return HEARTH_ENOMEM;
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, 0755) && errno != EEXIST) {
            hearth__free(copy);
            return HEARTH_EIO;
        }
        *p = '/';
    }
    int rc = mkdir(copy, 0755) && errno != EEXIST ? HEARTH_EIO : 0;
    hearth__free(copy);
    return rc;
}

int hearth__store_sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return HEARTH_EIO;
    int rc = hearth__os_sync(fd) ? HEARTH_EIO : 0;
    close(fd);
    return rc;
}

int hearth__store_disk_error(void) {
    return errno == ENOSPC || errno == EDQUOT ? HEARTH_ENOSPC : HEARTH_EIO;
}

/* Writes all of data: at off with pwrite, or (off < 0) where the file
 * position is. */
static int write_whole(int fd, const char *data, size_t len, int64_t off) {
    while (len) {
        ssize_t n = off < 0 ? write(fd, data, len)
                            : pwrite(fd, data, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return hearth__store_disk_error();
        data += n;
        len -= (size_t)n;
        if (off >= 0)
            off += n;
    }
    return 0;
}

int hearth__store_write_all(int fd, const char *data, size_t len) {
    return write_whole(fd, data, len, -1);
}

int hearth__store_pwrite_all(int fd, const char *data, size_t len,
                             uint64_t off) {
    return write_whole(fd, data, len, (int64_t)off);
}

char *hearth__store_read_whole(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *data = NULL;
    if (fstat(fd, &st) == 0 && (data = hearth__malloc((size_t)st.st_size + 1))) {
        size_t got = 0;
        while (got < (size_t)st.st_size) {
            ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        data[got] = '\0';
        *len = got;
    }
    close(fd);
    return data;
}

int hearth__store_list_gens(const char *dir, const char *prefix, const char *suffix,
                     uint64_t **gens, size_t *n) {
    *gens = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return HEARTH_EIO;
    size_t cap = 0;
    size_t plen = strlen(prefix), slen = strlen(suffix);
    for (struct dirent *e; (e = readdir(d));) {
        const char *name = e->d_name;
        size_t len = strlen(name);
        if (len <= plen + slen || strncmp(name, prefix, plen) != 0 ||
            strcmp(name + len - slen, suffix) != 0)
            continue;
        uint64_t gen = 0;
        bool digits = true;
        for (size_t i = plen; i < len - slen; i++) {
            if (name[i] < '0' || name[i] > '9')
                digits = false;
            else
                gen = gen * 10 + (uint64_t)(name[i] - '0');
        }
        if (!digits)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            uint64_t *g = hearth__realloc(*gens, cap * sizeof *g);
            if (!g) {
                closedir(d);
                hearth__free(*gens);
                return HEARTH_ENOMEM;
            }
            *gens = g;
        }
        (*gens)[(*n)++] = gen;
    }
    closedir(d);
    for (size_t i = 1; i < *n; i++) /* few files: insertion sort */
        for (size_t j = i; j > 0 && (*gens)[j - 1] > (*gens)[j]; j--) {
            uint64_t t = (*gens)[j];
            (*gens)[j] = (*gens)[j - 1];
            (*gens)[j - 1] = t;
        }
    return 0;
}

int hearth__store_lock(const char *dir, int *fd, hearth_error_t *err) {
    char *path = hearth__store_path(dir, "LOCK", 0);
    if (!path)
        return hearth__error_code(err, HEARTH_ENOMEM);
    *fd = open(path, O_RDWR | O_CREAT, 0644);
    int rc = 0;
    if (*fd < 0) {
        rc = hearth__store_io_error(err, "cannot open", path);
    } else if (flock(*fd, LOCK_EX | LOCK_NB)) {
        rc = hearth__error(err, HEARTH_EIO, dir,
                           "data directory %s is in use by another process",
                           dir);
        close(*fd);
        *fd = -1;
    }
    hearth__free(path);
    return rc;
}
