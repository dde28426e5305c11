/* linux.c - os.h on Linux (glibc). */
#if defined(__linux__)

#include "os/os.h"

#include "hearth.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <malloc.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int hearth__os_datasync(int fd) {
    return fdatasync(fd);
}

int hearth__os_sync(int fd) {
    return fsync(fd);
}

void hearth__os_trim_memory(void) {
    malloc_trim(0);
}

int hearth__os_random(void *buf, size_t len) {
    unsigned char *p = buf;
    while (len) { /* getentropy gives at most 256 bytes a call */
        size_t n = len < 256 ? len : 256;
        if (getentropy(p, n))
            return HEARTH_EIO;
        p += n;
        len -= n;
    }
    return 0;
}

int hearth__os_sha1(const void *data, size_t len, unsigned char out[20]) {
    unsigned int n;
    return EVP_Digest(data, len, out, &n, EVP_sha1(), NULL) && n == 20
               ? 0
               : HEARTH_ENOMEM;
}

void hearth__os_crypto_init(void) {
    OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL);
}

void hearth__os_crypto_thread_stop(void) {
    OPENSSL_thread_stop();
}

int hearth__os_pin_template(const char *data_dir, char *out, size_t n) {
    (void)data_dir;
    const char *tmp = getenv("TMPDIR");
    int len = snprintf(out, n, "%s/hearth-backup-pin-XXXXXX",
                       tmp && *tmp ? tmp : "/tmp");
    return len < 0 || (size_t)len >= n ? HEARTH_EINVAL : 0;
}

/* A symbolic link to /proc/self/fd/N: opening it opens the file N has
 * open, whatever became of its name, for as long as N stays open. */
int hearth__os_pin(int fd, const char *path, const char *link_path) {
    (void)path;
    char target[64];
    snprintf(target, sizeof target, "/proc/self/fd/%d", fd);
    return symlink(target, link_path);
}

int hearth__os_socket_quiet(int fd) {
    (void)fd;
    return 0;
}

int64_t hearth__os_mtime_ms(const char *path) {
    struct stat st;
    if (stat(path, &st))
        return -1;
    return (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
}

int hearth__os_socket(int family, int type, int protocol) {
    return socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
}

int hearth__os_pipe(int fds[2]) { return pipe2(fds, O_CLOEXEC | O_NONBLOCK); }

#endif
