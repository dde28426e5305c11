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
/* Random per process, so no input can know them: the admin's credential
 * (the emulator's "owner" is then an ordinary invalid token), and the
 * canary kept where no anonymous caller may read (see fuzz_secure_reset). */
static char fuzz_admin_secret[40];
static char fuzz_canary[40];

static void fuzz_random_hex(char *out, size_t bytes, const char *prefix) {
    unsigned char raw[16];
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || bytes > sizeof raw || fread(raw, 1, bytes, f) != bytes)
        abort();
    fclose(f);
    size_t at = (size_t)sprintf(out, "%s", prefix);
    for (size_t i = 0; i < bytes; i++)
        at += (size_t)sprintf(out + at, "%02x", raw[i]);
}

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
        fuzz_random_hex(fuzz_admin_secret, 12, "admin-");
        fuzz_random_hex(fuzz_canary, 12, "canary-");
        hearth_server_config_t config = {.size = sizeof config, .host = "127.0.0.1", .port = 0,
                                         .data_dir = fuzz_server_dir,
                                         .fsync_mode = HEARTH_FSYNC_OFF,
                                         .admin_secret = fuzz_admin_secret};
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

/* One request as the admin on a fresh connection, its answer (head and
 * body, NUL-terminated, cut at size - 1) read into reply; returns the
 * status (0 when there was no answer). */
static int fuzz_admin_exchange(int port, const char *method, const char *target,
                               const char *body, size_t blen, char *reply,
                               size_t size) {
    int fd = fuzz_connect(port);
    char head[512];
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     "Authorization: Bearer %s\r\nContent-Length: %zu\r\n\r\n",
                     method, target, fuzz_admin_secret, blen);
    int status = 0;
    size_t got = 0;
    if (send(fd, head, (size_t)n, MSG_NOSIGNAL) == n &&
        (!blen || send(fd, body, blen, MSG_NOSIGNAL) == (ssize_t)blen)) {
        while (got < size - 1) {
            ssize_t k = read(fd, reply + got, size - 1 - got);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                break;
            got += (size_t)k;
        }
        reply[got] = '\0';
        if (!strncmp(reply, "HTTP/1.1 ", 9))
            status = atoi(reply + 9);
    }
    reply[got] = '\0';
    close(fd);
    return status;
}

/* The same when only the status matters. */
static int fuzz_admin_request(int port, const char *method, const char *target,
                              const char *body) {
    char reply[64];
    return fuzz_admin_exchange(port, method, target, body, strlen(body), reply,
                               sizeof reply);
}

/* The namespace "secure" holds the attacker's rules: /public open, /wo
 * write-only, /secret closed, /counter at most 100, /users/$uid their
 * own. Resets its data to the canary (in /secret and /wo, which no
 * anonymous caller may read) and some public data. Aborts when the admin
 * is refused. */
static void fuzz_secure_reset(int port) {
    static bool has_rules;
    if (!has_rules) {
        static const char rules[] =
            "{\"rules\":{\"public\":{\".read\":true,\".write\":true},"
            "\"wo\":{\".write\":true},"
            "\"secret\":{\".read\":false,\".write\":false},"
            "\"counter\":{\".read\":true,\".write\":true,"
            "\".validate\":\"newData.isNumber() && newData.val() <= 100\"},"
            "\"users\":{\"$uid\":{\".read\":\"auth != null && auth.uid == $uid\","
            "\".write\":\"auth != null && auth.uid == $uid\"}}}}";
        if (fuzz_admin_request(port, "PUT", "/.settings/rules.json?ns=secure",
                               rules) != 200)
            abort();
        has_rules = true;
    }
    char data[512];
    snprintf(data, sizeof data,
             "{\"secret\":{\"launch\":\"%s\"},\"wo\":{\"hidden\":\"%s\",\"n\":7},"
             "\"public\":{\"a\":1,\"list\":{\"x\":\"y\"}},\"counter\":5}",
             fuzz_canary, fuzz_canary);
    if (fuzz_admin_request(port, "PUT", "/.json?ns=secure", data) != 200)
        abort();
}

/* Whether text holds the canary. A plain loop, not memmem: libFuzzer
 * learns the operands of the comparisons it intercepts, and an input that
 * carries the canary itself makes any echo of it look like a leak. */
static bool fuzz_has_canary(const void *text, size_t len) {
    const char *t = text;
    size_t n = strlen(fuzz_canary);
    for (size_t i = 0; n && i + n <= len; i++) {
        size_t k = 0;
        while (k < n && t[i + k] == fuzz_canary[k])
            k++;
        if (k == n)
            return true;
    }
    return false;
}

/* Set per input: the input names the canary itself (then an echo of it,
 * such as an error quoting a bad namespace name, is no leak). */
static bool fuzz_input_has_canary;

/* Whether bytes received by an anonymous caller carry the canary. */
static bool fuzz_leaks(const void *data, size_t len) {
    return !fuzz_input_has_canary && fuzz_has_canary(data, len);
}

#endif
