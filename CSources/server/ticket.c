/* ticket.c - the table of stream tickets (ticket.h): random secrets
 * compared in constant time, each bound to a namespace and a path by a
 * digest, so the table holds no strings and never allocates. */
#include "server/ticket.h"

#include "common/internal.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <string.h>

/* SHA-256 of ns, NUL, path: what a ticket is bound to. */
static bool bind_digest(const char *ns, const char *path, unsigned char out[32]) {
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    bool ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
              EVP_DigestUpdate(md, ns, strlen(ns) + 1) == 1 &&
              EVP_DigestUpdate(md, path, strlen(path)) == 1 &&
              EVP_DigestFinal_ex(md, out, NULL) == 1;
    EVP_MD_CTX_free(md);
    return ok;
}

/* text as exactly HEARTH__TICKET_BYTES bytes of lower- or upper-case hex. */
static bool from_hex(const char *text, unsigned char out[HEARTH__TICKET_BYTES]) {
    if (strlen(text) != 2 * HEARTH__TICKET_BYTES)
        return false;
    for (size_t i = 0; i < 2 * HEARTH__TICKET_BYTES; i++) {
        char c = text[i];
        int v = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (v < 0)
            return false;
        out[i / 2] = (unsigned char)(i % 2 ? out[i / 2] | v : v << 4);
    }
    return true;
}

int hearth__ticket_mint(hearth__tickets *t, const char *ns, const char *path,
                        uint64_t now_ms, char out[HEARTH__TICKET_TEXT]) {
    /* A free or expired slot, else the one closest to expiry. */
    hearth__ticket *slot = &t->slot[0];
    for (size_t i = 0; i < HEARTH__TICKETS; i++) {
        hearth__ticket *s = &t->slot[i];
        if (s->expires_ms <= now_ms) {
            slot = s;
            break;
        }
        if (s->expires_ms < slot->expires_ms)
            slot = s;
    }
    hearth__ticket made;
    if (RAND_bytes(made.secret, sizeof made.secret) != 1 ||
        !bind_digest(ns, path, made.bound))
        return HEARTH_EIO;
    made.expires_ms = now_ms + HEARTH__TICKET_TTL_MS;
    *slot = made;
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < HEARTH__TICKET_BYTES; i++) {
        out[2 * i] = hex[made.secret[i] >> 4];
        out[2 * i + 1] = hex[made.secret[i] & 15];
    }
    out[2 * HEARTH__TICKET_BYTES] = '\0';
    return 0;
}

bool hearth__ticket_redeem(hearth__tickets *t, const char *text,
                           const char *ns, const char *path, uint64_t now_ms) {
    unsigned char secret[HEARTH__TICKET_BYTES], bound[32];
    if (!from_hex(text, secret) || !bind_digest(ns, path, bound))
        return false;
    for (size_t i = 0; i < HEARTH__TICKETS; i++) {
        hearth__ticket *s = &t->slot[i];
        if (!s->expires_ms ||
            CRYPTO_memcmp(s->secret, secret, sizeof secret) != 0)
            continue;
        bool live = s->expires_ms > now_ms &&
                    CRYPTO_memcmp(s->bound, bound, sizeof bound) == 0;
        memset(s, 0, sizeof *s); /* spent */
        return live;
    }
    return false;
}
