/*
 * os.h - the calls that differ between the systems Hearth runs on (Linux;
 * macOS and iOS), in one place, as SQLite's os_unix.c and libuv's src/unix
 * do: the rest of the core calls these and carries no #if for a system.
 * linux.c and darwin.c implement them, each whole under its own #if; a file
 * elsewhere that calls what one system lacks fails `make test`
 * (scripts/check-portable.sh names the call and its replacement here).
 */
#ifndef HEARTH_OS_OS_H
#define HEARTH_OS_OS_H

#include <stddef.h>
#include <stdint.h>

/* Flushes fd's data, and the metadata needed to read it back, past every
 * cache to the storage itself: fdatasync on Linux; F_FULLFSYNC on Darwin,
 * whose fsync leaves the data in the drive's cache (fsync where the file
 * system refuses F_FULLFSYNC). 0, or -1 with errno set, as fdatasync. */
int hearth__os_datasync(int fd);

/* The same for all of fd's metadata (a directory after a rename, a file
 * whose size changed): fsync on Linux, F_FULLFSYNC on Darwin. 0, or -1
 * with errno set. */
int hearth__os_sync(int fd);

/* Hands the allocator's free pages back to the system (after recovery
 * held a whole log beside the tree): glibc's malloc_trim, Darwin's
 * malloc_zone_pressure_relief. Best effort. */
void hearth__os_trim_memory(void);

/* Fills buf with len bytes from the system's cryptographic generator
 * (getentropy on Linux, arc4random_buf on Darwin). 0, or HEARTH_EIO. */
int hearth__os_random(void *buf, size_t len);

/* SHA-1 of len bytes into out (which the protocols still use: the
 * WebSocket accept key, RFC 6455; the node hash the service compares):
 * OpenSSL on Linux, CommonCrypto on Darwin (whose SDK has no OpenSSL).
 * 0, or HEARTH_ENOMEM. */
int hearth__os_sha1(const void *data, size_t len, unsigned char out[20]);
/* The crypto library's start and a thread's end (OpenSSL's per-thread
 * state on Linux, tree/hash.c says when; nothing to do on Darwin). */
void hearth__os_crypto_init(void);
void hearth__os_crypto_thread_stop(void);

/* ---- naming an open file (hearth_backup's pins, store/backup.c) ---- */

/* Where the directory of pins for a backup of data_dir goes, as a
 * mkdtemp template written to out (size n): $TMPDIR on Linux (a pin is a
 * link to /proc/self/fd/N, valid across file systems); beside data_dir on
 * Darwin (a pin is a hard link, which must stay on data_dir's volume).
 * 0, or HEARTH_EINVAL when it does not fit. */
int hearth__os_pin_template(const char *data_dir, char *out, size_t n);

/* Makes link_path name the file fd has open (opened from path), so that
 * opening link_path opens that very file even after path is removed or
 * replaced. 0; 1 when path no longer names fd's file (replaced between
 * the open and now: the caller starts over); -1 with errno set. */
int hearth__os_pin(int fd, const char *path, const char *link_path);

/* ---- files ---- */

/* When the file at path was last written, in ms since the epoch (-1 with
 * errno set when it cannot be read): st_mtim on Linux, st_mtimespec on
 * Darwin. */
int64_t hearth__os_mtime_ms(const char *path);

/* ---- sockets ---- */

/* Keeps every write to socket fd, including libuv's (write/writev, which
 * take no flags), from raising SIGPIPE, for this socket only: on Darwin
 * SO_NOSIGPIPE. Linux has no such socket option: there the caller writes
 * with send(..., MSG_NOSIGNAL) itself (both systems have the flag).
 * 0, or -1 with errno set. */
int hearth__os_socket_quiet(int fd);
/* A socket and a pipe that are non-blocking and closed on exec from the
 * start (Linux makes them so in the call; Darwin sets the flags after).
 * As socket(2) and pipe(2): -1 with errno set on failure. */
int hearth__os_socket(int family, int type, int protocol);
int hearth__os_pipe(int fds[2]);

#endif
