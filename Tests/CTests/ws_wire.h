/*
 * ws_wire.h - RFC 6455 as bytes, with no I/O: frame heads written and
 * read, masking, the upgrade request and the accept value it must be
 * answered with. The C tests and the benchmarks speak WebSocket to the
 * server with this code of their own (so that they test and measure the
 * server, not a client library), and test_ws_client.c's scripted server
 * speaks it to Hearth's client; each does its own reading and writing
 * (blocking with time limits in the tests, dying on error or through
 * libuv in the benchmarks). Needs libc and libcrypto.
 */
#ifndef HEARTH_WS_WIRE_H
#define HEARTH_WS_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest head: 2 bytes, a 64-bit length, a mask key. */
enum { WS_WIRE_HEAD_MAX = 14 };

/* RFC 6455's sample nonce (section 1.3), for clients that do not check
 * the server's accept value. */
#define WS_WIRE_SAMPLE_KEY "dGhlIHNhbXBsZSBub25jZQ=="

/* Writes the head of a frame into out: first byte b0 (FIN, RSV bits,
 * opcode), `announce` as its payload length (the payload's own unless a
 * test lies about it) in the shortest form, then the mask key when key is
 * not NULL (a client must mask; only a test of the server's refusal sends
 * unmasked). Returns the head's size. */
size_t ws_wire_head(unsigned char out[WS_WIRE_HEAD_MAX], int b0,
                    uint64_t announce, const unsigned char *key);

/* XORs len bytes of data with key, from the payload's first byte:
 * masks a client's payload, and unmasks one. */
void ws_wire_mask(void *data, size_t len, const unsigned char key[4]);

/* A frame head as read. */
typedef struct ws_wire_frame {
    int b0;                /* FIN, RSV bits and opcode */
    int opcode;            /* b0's low four bits */
    bool fin, masked;
    unsigned char key[4];  /* when masked */
    uint64_t len;          /* the payload's length */
    size_t head;           /* the head's size: the payload starts there */
} ws_wire_frame;

/* How long the head is whose first two bytes are b (2 to 14): a blocking
 * reader reads two bytes, then the rest of the head. */
size_t ws_wire_head_size(const unsigned char b[2]);

/* Reads the head at the start of the avail bytes at buf into *f; false
 * when it is not all there yet (the payload may not be either: compare
 * avail with f->head + f->len). */
bool ws_wire_parse(const void *buf, size_t avail, ws_wire_frame *f);

/* Writes the upgrade request (GET `resource`, Host `host`, with key, a
 * base64 nonce) into out as snprintf does; returns what snprintf does. */
int ws_wire_upgrade(char *out, size_t size, const char *resource,
                    const char *host, const char *key);

/* The Sec-WebSocket-Accept value a server must answer key with: base64
 * of SHA-1(key + RFC 6455's GUID), 28 characters and a NUL. False only
 * when the digest fails. */
bool ws_wire_accept(const char *key, char out[32]);

#endif
