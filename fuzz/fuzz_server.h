/* fuzz_server.h - the one in-process server a network fuzz target talks
 * to: started on first use on a free loopback port with its data in a
 * temporary directory, stopped and removed when the process exits.
 * (Header-only: each fuzz target is one program of its own.) */
#ifndef HEARTH_FUZZ_SERVER_H
#define HEARTH_FUZZ_SERVER_H

#include "hearth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static hearth_server_t *fuzz_server;
static char fuzz_server_dir[64];

static void fuzz_server_stop(void) {
    hearth_server_stop(fuzz_server);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fuzz_server_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", fuzz_server_dir);
}

/* The server's port, starting it the first time. */
static int fuzz_server_port(const char *name) {
    if (!fuzz_server) {
        snprintf(fuzz_server_dir, sizeof fuzz_server_dir,
                 "/tmp/hearth-fuzz-%s-%d", name, (int)getpid());
        hearth_server_config_t config = {.host = "127.0.0.1", .port = 0,
                                         .data_dir = fuzz_server_dir,
                                         .fsync_mode = HEARTH_FSYNC_OFF};
        if (hearth_server_start(&config, &fuzz_server, NULL))
            abort();
        atexit(fuzz_server_stop);
    }
    return hearth_server_port(fuzz_server);
}

/* A loopback connection to port (TCP_NODELAY); aborts when the server
 * stopped accepting. */
static int fuzz_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        abort();
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        /* libFuzzer's timers interrupt calls: an interrupted connect goes on
         * in the background; wait for it. */
        int soerr = errno;
        if (errno == EINTR) {
            struct pollfd w = {fd, POLLOUT, 0};
            socklen_t len = sizeof soerr;
            while (poll(&w, 1, 1000) < 0 && errno == EINTR) {
            }
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
        }
        if (soerr) {
            fprintf(stderr, "connect: %s: the server stopped accepting\n",
                    strerror(soerr));
            abort();
        }
    }
    return fd;
}

#endif
