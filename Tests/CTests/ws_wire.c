/* ws_wire.c - a WebSocket client's bytes (see ws_wire.h). */
#include "ws_wire.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

size_t ws_wire_head(unsigned char out[WS_WIRE_HEAD_MAX], int b0,
                    uint64_t announce, const unsigned char *key) {
    size_t h = 2;
    out[0] = (unsigned char)b0;
    if (announce < 126) {
        out[1] = (unsigned char)announce;
    } else if (announce <= 0xFFFF) {
        out[1] = 126;
        out[2] = (unsigned char)(announce >> 8);
        out[3] = (unsigned char)announce;
        h = 4;
    } else {
        out[1] = 127;
        for (int i = 0; i < 8; i++)
            out[2 + i] = (unsigned char)(announce >> (56 - 8 * i));
        h = 10;
    }
    if (key) {
        out[1] |= 0x80;
        memcpy(out + h, key, 4);
        h += 4;
    }
    return h;
}

void ws_wire_mask(void *data, size_t len, const unsigned char key[4]) {
    unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        p[i] ^= key[i % 4];
}

size_t ws_wire_head_size(const unsigned char b[2]) {
    size_t n = b[1] & 0x7F;
    return 2 + (n == 126 ? 2 : n == 127 ? 8 : 0) + (b[1] & 0x80 ? 4 : 0);
}

bool ws_wire_parse(const void *buf, size_t avail, ws_wire_frame *f) {
    const unsigned char *b = buf;
    if (avail < 2 || avail < ws_wire_head_size(b))
        return false;
    f->b0 = b[0];
    f->opcode = b[0] & 0x0F;
    f->fin = b[0] & 0x80;
    f->masked = b[1] & 0x80;
    f->len = b[1] & 0x7F;
    size_t h = 2, ext = f->len == 126 ? 2 : f->len == 127 ? 8 : 0;
    if (ext) {
        f->len = 0;
        for (size_t i = 0; i < ext; i++)
            f->len = f->len << 8 | b[h + i];
        h += ext;
    }
    memset(f->key, 0, sizeof f->key);
    if (f->masked) {
        memcpy(f->key, b + h, 4);
        h += 4;
    }
    f->head = h;
    return true;
}

int ws_wire_upgrade(char *out, size_t size, const char *resource,
                    const char *host, const char *key) {
    return snprintf(out, size,
                    "GET %s HTTP/1.1\r\nHost: %s\r\n"
                    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                    "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
                    resource, host, key);
}

bool ws_wire_accept(const char *key, char out[32]) {
    char joined[128];
    int n = snprintf(joined, sizeof joined,
                     "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    if (n < 0 || (size_t)n >= sizeof joined ||
        !EVP_Digest(joined, (size_t)n, digest, &dlen, EVP_sha1(), NULL))
        return false;
    EVP_EncodeBlock((unsigned char *)out, digest, (int)dlen); /* 28 + NUL */
    return true;
}
