/* fuzz_playground.c - libFuzzer target for the rules playground
 * (POST /.settings/playground.json) of a real server: each input is a
 * question's body, asked as the admin of the namespace "secure" (the
 * attacker's rules, fuzz_server.h). Every question is answered 200 (a
 * verdict) or 400 (why it is malformed), never anything else; no answer
 * shows the data, and none changes it: the playground writes nothing. */
#include "hearth.h"

#include "fuzz_server.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int port;
static char data_before[1 << 14]; /* the admin's GET of the namespace */

static void read_data(char *out, size_t size) {
    if (fuzz_admin_exchange(port, "GET", "/.json?ns=secure", "", 0, out, size) !=
        200)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!port) {
        port = fuzz_server_port("playground");
        fuzz_secure_reset(port);
        read_data(data_before, sizeof data_before);
    }
    fuzz_input_has_canary = fuzz_has_canary(data, size);
    static char reply[1 << 14];
    int status = fuzz_admin_exchange(port, "POST",
                                     "/.settings/playground.json?ns=secure",
                                     (const char *)data, size, reply,
                                     sizeof reply);
    /* A verdict names rules, never data. */
    if ((status != 200 && status != 400) || fuzz_leaks(reply, strlen(reply))) {
        fprintf(stderr, "fuzz_playground: answered %.300s\n", reply);
        abort();
    }
    static char data_after[sizeof data_before];
    read_data(data_after, sizeof data_after);
    /* The same data, byte for byte: nothing was written. */
    const char *a = strstr(data_before, "\r\n\r\n"), *b = strstr(data_after, "\r\n\r\n");
    if (!a || !b || strcmp(a, b) != 0) {
        fprintf(stderr, "fuzz_playground: a question changed the data\n");
        abort();
    }
    return 0;
}
