/* seal.h - everything a node puts into NATS, sealed; everything it takes
 * out, opened or dropped. NATS is untrusted transport and storage: the
 * cluster secret (a file every node holds) is the trust root.
 *
 * A seal is made once per process run from the secret. Each run draws a
 * random 16-byte run id; a message sealed for a purpose ("log", "fwd",
 * "reply", "snap", "kv", ...) is encrypted and authenticated with
 * AES-256-GCM under HKDF-SHA256(secret, salt = run id, info = "hearth
 * cluster v1 " + purpose), with a 96-bit nonce (4 zero bytes and the
 * run's 64-bit counter, big-endian), so that a nonce is never used twice
 * under one key. The envelope is
 *
 *     version (1 byte, 1) | run id (16) | counter (8) | ciphertext | tag (16)
 *
 * and the caller's context (a subject, a key, a fence) is bound as
 * additional data (after the envelope's header, the purpose and a NUL): a
 * message opens only for the purpose and context it was sealed for. Any
 * thread: the counter is atomic and the derived-key cache is locked.
 */
#ifndef HEARTH_CLUSTER_SEAL_H
#define HEARTH_CLUSTER_SEAL_H

#include "common/internal.h"

#include <stddef.h>

/* The bytes a sealed message carries beyond its plaintext: its header
 * (before the ciphertext) and its tag (after). */
#define HEARTH__SEAL_HEADER (1 + 16 + 8)
#define HEARTH__SEAL_TAG 16
#define HEARTH__SEAL_OVERHEAD (HEARTH__SEAL_HEADER + HEARTH__SEAL_TAG)
/* A secret shorter than this is refused (after a trailing newline is
 * dropped): 32 bytes, as `openssl rand -base64 32` or more. */
#define HEARTH__SEAL_MIN_SECRET 32

typedef struct hearth__seal hearth__seal;

/* Makes a seal from secret bytes (at least HEARTH__SEAL_MIN_SECRET). */
int hearth__seal_create(const void *secret, size_t len, hearth__seal **out,
                        hearth_error_t *err);
/* Reads the secret from path (its whole content, a trailing newline
 * dropped); an error names the file and what is wrong with it. The bytes
 * are the secret as they are, not decoded: the 44 characters of
 * `openssl rand -base64 32` carry its 32 random bytes. HEARTH_ENOTFOUND
 * (no such file), HEARTH_EIO (unreadable), HEARTH_EINVAL (over 4096
 * bytes, or under HEARTH__SEAL_MIN_SECRET). A file readable by group or
 * others is used, with a warning in the log (once per process). */
int hearth__seal_load_file(const char *path, hearth__seal **out,
                           hearth_error_t *err);
void hearth__seal_free(hearth__seal *s);

/* Appends plain, sealed for purpose and bound to aad (may be NULL with
 * aad_len 0), to out. HEARTH_ENOMEM or HEARTH_EIO (the cipher failed, or
 * this seal's 2^64 - 1 nonces are spent); out is unchanged on failure.
 * A purpose is a short name (at most 64 bytes; HEARTH_EINVAL past that).
 * plain must not lie in out's buffer (appending may move it). */
int hearth__seal_close(hearth__seal *s, const char *purpose, const void *aad,
                       size_t aad_len, const void *plain, size_t len,
                       hearth__buf *out);
/* Appends the plaintext of sealed to out when it opens for purpose and
 * aad; HEARTH_EDENIED when it does not (forged, damaged, another purpose
 * or context, another secret), HEARTH_ENOMEM, HEARTH_EIO (the cipher
 * failed); out unchanged on failure. Any seal made from the same secret
 * opens it (the sender's run id is in the envelope). sealed must not lie
 * in out's buffer. */
int hearth__seal_open(hearth__seal *s, const char *purpose, const void *aad,
                      size_t aad_len, const void *sealed, size_t len,
                      hearth__buf *out);

/* The same where the bytes lie, for a message's own buffer (no copy of
 * the plaintext on a hot path). Closing: msg holds HEARTH__SEAL_HEADER
 * bytes of room, the plaintext (len bytes), then HEARTH__SEAL_TAG bytes
 * of room; on success msg[0, len + HEARTH__SEAL_OVERHEAD) is the envelope
 * hearth__seal_close would have made. On failure the plaintext is wiped.
 * Opening: on success the plaintext is msg + HEARTH__SEAL_HEADER, *plain
 * its length (len - HEARTH__SEAL_OVERHEAD); on failure (as
 * hearth__seal_open's) what was decrypted is wiped. */
int hearth__seal_close_in_place(hearth__seal *s, const char *purpose,
                                const void *aad, size_t aad_len, void *msg,
                                size_t len);
int hearth__seal_open_in_place(hearth__seal *s, const char *purpose,
                               const void *aad, size_t aad_len, void *msg,
                               size_t len, size_t *plain);

#endif
