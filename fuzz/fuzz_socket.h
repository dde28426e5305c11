/* fuzz_socket.h - what the network fuzz targets share about sockets
 * (header-only: each fuzz target is one program of its own). */
#ifndef HEARTH_FUZZ_SOCKET_H
#define HEARTH_FUZZ_SOCKET_H

#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>

/* Sends all of data unless the peer closes (libFuzzer's timers may
 * interrupt a send: it goes on). */
static inline void fuzz_send_all(int fd, const uint8_t *data, size_t size) {
    for (size_t off = 0; off < size;) {
        ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
}

#endif
