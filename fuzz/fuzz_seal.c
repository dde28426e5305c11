/* fuzz_seal.c - libFuzzer target for the cluster's envelopes
 * (cluster/seal.c). The bytes are a message from NATS, opened with a fixed
 * secret for purpose "log" and context "fuzz" (the seeds include messages
 * sealed so, which open), and for "fwd"; they are also sealed as a
 * plaintext and opened back.
 *
 * What must hold: a message opens or is refused with HEARTH_EDENIED, and
 * a refusal leaves the buffer as it was; an opened one is exactly its
 * length less the overhead, opens as nothing else, and its plaintext
 * sealed again opens to itself; any plaintext round-trips. */
#include "cluster/seal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The seeds were sealed with this secret (any run id: the receiver
 * derives the sender's key from the envelope). */
static const char secret[] = "hearth-fuzz-cluster-secret-0123456789";
static hearth__seal *seal;

static void free_seal(void) { hearth__seal_free(seal); }

/* Opens data for purpose and aad after "kept"; the plaintext's length, or
 * -1 when refused (the buffer then as it was). */
static long open_as(const char *purpose, const char *aad, const uint8_t *data,
                    size_t size, hearth__buf *out) {
    hearth__buf_init(out);
    hearth__buf_adds(out, "kept");
    int rc = hearth__seal_open(seal, purpose, aad, strlen(aad), data, size, out);
    if (rc) {
        if (rc != HEARTH_EDENIED || out->len != 4 ||
            memcmp(out->data, "kept", 5) != 0)
            abort();
        return -1;
    }
    if (size < HEARTH__SEAL_OVERHEAD ||
        out->len != 4 + size - HEARTH__SEAL_OVERHEAD ||
        memcmp(out->data, "kept", 4) != 0 || out->data[out->len] != '\0')
        abort();
    return (long)(out->len - 4);
}

/* Seals plain for purpose and aad and opens it back to itself. */
static void round_trip(const char *purpose, const char *aad,
                       const void *plain, size_t len) {
    hearth__buf sealed, back;
    hearth__buf_init(&sealed);
    if (hearth__seal_close(seal, purpose, aad, strlen(aad), plain, len,
                           &sealed) ||
        sealed.len != len + HEARTH__SEAL_OVERHEAD)
        abort();
    if (open_as(purpose, aad, (const uint8_t *)sealed.data, sealed.len,
                &back) != (long)len ||
        memcmp(back.data + 4, plain, len) != 0)
        abort();
    hearth__buf_free(&back);
    hearth__buf_free(&sealed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!seal) {
        if (hearth__seal_create(secret, sizeof secret - 1, &seal, NULL))
            abort();
        atexit(free_seal);
    }
    hearth__buf out, other;
    long n = open_as("log", "fuzz", data, size, &out);
    if (n >= 0) {
        /* Opened for one purpose and context, for no other. */
        if (open_as("fwd", "fuzz", data, size, &other) >= 0)
            abort();
        hearth__buf_free(&other);
        if (open_as("log", "fuzz!", data, size, &other) >= 0)
            abort();
        hearth__buf_free(&other);
        round_trip("log", "fuzz", out.data + 4, (size_t)n);
    }
    hearth__buf_free(&out);
    if (open_as("fwd", "", data, size, &out) >= 0)
        round_trip("fwd", "", out.data + 4, out.len - 4);
    hearth__buf_free(&out);
    round_trip("reply", "fuzz", data, size);
    return 0;
}
