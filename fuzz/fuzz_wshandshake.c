/* fuzz_wshandshake.c - libFuzzer target for the client's reading of a
 * server's answer to its WebSocket upgrade (net/ws_handshake.c, http-parser
 * in response mode): any bytes are accepted as an upgrade or refused with
 * a reason, and the verdict, the reason and where the frames begin do not
 * depend on how the bytes were cut into reads (except the quoted start of
 * an answer that is not HTTP at all: it quotes what had arrived). */
#include "net/ws_handshake.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* RFC 6455's example answer value, so that inputs can be accepted. */
static const char accept_value[] = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

typedef struct verdict {
    int rc;
    size_t head; /* bytes of the head, when accepted */
    char why[sizeof ((hearth__ws_handshake *)0)->why];
} verdict;

/* Reads data in pieces of `step` bytes (0: all at once). */
static verdict read_in(const uint8_t *data, size_t size, size_t step) {
    hearth__ws_handshake h;
    verdict v = {0};
    if (hearth__ws_handshake_init(&h))
        abort();
    memcpy(h.accept, accept_value, sizeof accept_value);
    size_t at = 0;
    do {
        size_t n = step && size - at > step ? step : size - at, used = 0;
        v.rc = hearth__ws_handshake_read(&h, (const char *)data + at, n,
                                         &used);
        if (used > n || (v.rc == HEARTH__WSH_MORE && used != n))
            abort();
        v.head = at + used;
        at += n;
    } while (v.rc == HEARTH__WSH_MORE && at < size);
    if (v.rc < 0 && v.rc != HEARTH_EIO && v.rc != HEARTH_ENOMEM)
        abort();
    if (v.rc == HEARTH_EIO && !h.why[0])
        abort(); /* a refusal names its reason */
    if (v.rc == HEARTH__WSH_OPEN && v.head > HEARTH__WSH_MAX_HEAD)
        abort();
    memcpy(v.why, h.why, sizeof v.why);
    hearth__ws_handshake_free(&h);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    verdict whole = read_in(data, size, 0);
    verdict pieces = read_in(data, size, size ? 1 + data[0] % 7 : 1);
    size_t reason = strcspn(whole.why, "\"");
    if (whole.rc != pieces.rc || strncmp(whole.why, pieces.why, reason) != 0 ||
        (whole.rc == HEARTH__WSH_OPEN && whole.head != pieces.head))
        abort();
    return 0;
}
