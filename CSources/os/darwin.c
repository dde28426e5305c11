/* darwin.c - os.h on macOS and iOS. */
#if defined(__APPLE__)

#include "os/os.h"

#include "hearth.h"

#include <CommonCrypto/CommonDigest.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <malloc/malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* F_FULLFSYNC asks the drive to write its cache out; file systems that
 * cannot (some network ones) refuse it, and fsync is then the best there
 * is. */
static int full_sync(int fd) {
    if (fcntl(fd, F_FULLFSYNC) == 0)
        return 0;
    if (errno != ENOTSUP && errno != EINVAL && errno != ENOTTY)
        return -1;
    return fsync(fd);
}

int hearth__os_datasync(int fd) {
    return full_sync(fd);
}

int hearth__os_sync(int fd) {
    return full_sync(fd);
}

void hearth__os_trim_memory(void) {
    malloc_zone_pressure_relief(NULL, 0);
}

int hearth__os_random(void *buf, size_t len) {
    arc4random_buf(buf, len); /* cannot fail */
    return 0;
}

int hearth__os_sha1(const void *data, size_t len, unsigned char out[20]) {
    CC_SHA1_CTX ctx; /* the streaming form: len may pass CC_LONG */
    CC_SHA1_Init(&ctx);
    const unsigned char *p = data;
    while (len) {
        CC_LONG n = len > 0x40000000 ? 0x40000000 : (CC_LONG)len;
        CC_SHA1_Update(&ctx, p, n);
        p += n;
        len -= n;
    }
    CC_SHA1_Final(out, &ctx);
    return 0;
}

void hearth__os_crypto_init(void) {}

void hearth__os_crypto_thread_stop(void) {}

/* Beside the data directory: a hard link cannot leave its volume, and
 * $TMPDIR (a per-user folder) is often on another one. */
int hearth__os_pin_template(const char *data_dir, char *out, size_t n) {
    char copy[PATH_MAX];
    int len = snprintf(copy, sizeof copy, "%s", data_dir);
    if (len < 0 || (size_t)len >= sizeof copy)
        return HEARTH_EINVAL;
    while (len > 1 && copy[len - 1] == '/')
        copy[--len] = '\0';
    const char *base = strrchr(copy, '/');
    base = base ? base + 1 : copy;
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", copy);
    len = snprintf(out, n, "%s/.%s.backup-pin-XXXXXX", dirname(parent), base);
    return len < 0 || (size_t)len >= n ? HEARTH_EINVAL : 0;
}

/* Darwin has no /proc: a hard link keeps the file as /proc's link would
 * while the link lives. The name may have been replaced between the open
 * and the link, so the linked file must be the one fd has open. */
int hearth__os_pin(int fd, const char *path, const char *link_path) {
    if (link(path, link_path))
        return errno == ENOENT ? 1 : -1;
    struct stat held, linked;
    if (fstat(fd, &held) || stat(link_path, &linked)) {
        int saved = errno;
        unlink(link_path);
        errno = saved;
        return -1;
    }
    if (held.st_dev != linked.st_dev || held.st_ino != linked.st_ino) {
        unlink(link_path);
        return 1;
    }
    return 0;
}

int hearth__os_socket_quiet(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, sizeof on);
}

/* Non-blocking and closed on exec, set after the fact (Darwin has neither
 * SOCK_NONBLOCK nor pipe2). */
static int quiet_fd(int fd) {
    return fcntl(fd, F_SETFD, FD_CLOEXEC) || fcntl(fd, F_SETFL, O_NONBLOCK)
               ? -1
               : 0;
}

int64_t hearth__os_mtime_ms(const char *path) {
    struct stat st;
    if (stat(path, &st))
        return -1;
    return (int64_t)st.st_mtimespec.tv_sec * 1000 +
           st.st_mtimespec.tv_nsec / 1000000;
}

int hearth__os_socket(int family, int type, int protocol) {
    int fd = socket(family, type, protocol);
    if (fd >= 0 && (quiet_fd(fd) || hearth__os_socket_quiet(fd))) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int hearth__os_pipe(int fds[2]) {
    if (pipe(fds))
        return -1;
    if (quiet_fd(fds[0]) || quiet_fd(fds[1])) {
        int saved = errno;
        close(fds[0]);
        close(fds[1]);
        errno = saved;
        return -1;
    }
    return 0;
}

#endif
