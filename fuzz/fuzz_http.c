/* fuzz_http.c - libFuzzer target for the HTTP request path of a real
 * server: each input goes over a loopback socket, either as raw bytes (odd
 * first byte) or as the query string of a GET (even first byte, so the
 * REST parameter and query parsing is reached). Whatever arrives, the
 * server must answer or close that connection, and keep serving others. */
#include "hearth.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static hearth_server_t *server;
static int port;
static char dir[64];

static void stop_server(void) {
    hearth_server_stop(server);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

static void start_once(void) {
    if (server)
        return;
    snprintf(dir, sizeof dir, "/tmp/hearth-fuzz-%d", (int)getpid());
    hearth_server_config_t config = {.host = "127.0.0.1", .port = 0,
                                     .data_dir = dir,
                                     .fsync_mode = HEARTH_FSYNC_OFF};
    if (hearth_server_start(&config, &server, NULL))
        abort();
    port = hearth_server_port(server);
    atexit(stop_server);
}

/* Sends data and reads until the server closes or goes quiet. Returns the
 * bytes received. */
static size_t exchange(const uint8_t *data, size_t size, char *reply,
                       size_t cap) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
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
            fprintf(stderr, "connect: %s\n", strerror(soerr));
            abort(); /* the server stopped accepting */
        }
    }
    for (size_t off = 0; off < size;) {
        ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    size_t got = 0;
    struct pollfd p = {fd, POLLIN, 0};
    for (;;) {
        int ready = poll(&p, 1, 1000);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0 || got + 1 >= cap)
            break;
        ssize_t n = read(fd, reply + got, cap - got - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    reply[got] = '\0';
    close(fd);
    return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    start_once();
    static char reply[1 << 16];
    if (size && (data[0] & 1)) {
        exchange(data + 1, size - 1, reply, sizeof reply);
    } else if (size) {
        /* Bytes a request line cannot carry are percent-encoded, so every
         * input is a well-formed request and must be answered. */
        char query[3 * 2048 + 1];
        size_t q = 0;
        for (size_t i = 1; i < size && i <= 2048; i++) {
            uint8_t c = data[i];
            if (c > 0x20 && c < 0x7F && c != '#')
                query[q++] = (char)c;
            else
                q += (size_t)snprintf(query + q, 4, "%%%02X", c);
        }
        query[q] = '\0';
        char req[8192];
        int n = snprintf(req, sizeof req,
                         "GET /fuzz.json?%s HTTP/1.1\r\nHost: x\r\n\r\n",
                         query);
        exchange((const uint8_t *)req, (size_t)n, reply, sizeof reply);
        if (strncmp(reply, "HTTP/1.1 ", 9) != 0)
            abort(); /* a complete request always gets an answer */
    }
    /* The server still serves. */
    static const char health[] = "GET /.json?shallow=true HTTP/1.1\r\n\r\n";
    exchange((const uint8_t *)health, sizeof health - 1, reply, sizeof reply);
    if (strncmp(reply, "HTTP/1.1 200", 12) != 0)
        abort();
    return 0;
}
