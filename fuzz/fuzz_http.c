/* fuzz_http.c - libFuzzer target for the HTTP request path of a real
 * server: each input goes over a loopback socket, either as raw bytes (odd
 * first byte) or as the query string of a GET (even first byte, so the
 * REST parameter and query parsing is reached; with bit 1 set the GET goes
 * to /, /secret, /wo or /public (bits 2-3) of the namespace "secure").
 * Whatever arrives, the server must answer or close that connection, and
 * keep serving others.
 *
 * The namespace "secure" holds the attacker's rules and a random canary
 * where no anonymous caller may read (fuzz_server.h), restored before each
 * input; no answer to any input may carry it. */
#include "hearth.h"

#include "fuzz_server.h"
#include "fuzz_socket.h"

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

static int port;

static void start_once(void) {
    port = fuzz_server_port("http");
}

/* Sends data and reads until the server closes or goes quiet. Returns the
 * bytes received. */
static size_t exchange(const uint8_t *data, size_t size, char *reply,
                       size_t cap) {
    int fd = fuzz_connect(port);
    fuzz_send_all(fd, data, size);
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

static void check_no_leak(const char *reply, size_t len) {
    if (fuzz_leaks(reply, len)) {
        fprintf(stderr, "fuzz_http: the server answered %.*s\n",
                len > 600 ? 600 : (int)len, reply);
        abort(); /* data the rules do not let an anonymous caller read */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    start_once();
    fuzz_input_has_canary = fuzz_has_canary(data, size);
    static char reply[1 << 16];
    fuzz_secure_reset(port);
    if (size && (data[0] & 1)) {
        check_no_leak(reply, exchange(data + 1, size - 1, reply, sizeof reply));
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
        static const char *const secure[] = {"/.json?ns=secure&",
                                             "/secret.json?ns=secure&",
                                             "/wo.json?ns=secure&",
                                             "/public.json?ns=secure&"};
        const char *target = data[0] & 2 ? secure[(data[0] >> 2) & 3]
                                         : "/fuzz.json?";
        char req[8192];
        int n = snprintf(req, sizeof req,
                         "GET %s%s HTTP/1.1\r\nHost: x\r\n\r\n", target,
                         query);
        check_no_leak(reply, exchange((const uint8_t *)req, (size_t)n, reply,
                                      sizeof reply));
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
