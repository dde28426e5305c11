/* key.c - key order and reference-counted key strings. */
#include "path/key.h"

#include <string.h>

/* Keys matching ^-?(0*)\d{1,10}$ whose value fits in an int32 sort as
 * integers. */
static bool parse_int_key(const char *s, size_t len, int32_t *out) {
    size_t i = 0;
    bool negative = len > 0 && s[0] == '-';
    if (negative)
        i = 1;
    if (i == len)
        return false;
    for (size_t k = i; k < len; k++)
        if (s[k] < '0' || s[k] > '9')
            return false;
    while (i < len - 1 && s[i] == '0') /* (0*) leaves at least one \d */
        i++;
    if (len - i > 10)
        return false;
    int64_t v = 0;
    for (; i < len; i++)
        v = v * 10 + (s[i] - '0');
    if (negative)
        v = -v;
    if (v < INT32_MIN || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

void hearth__name_init(hearth__name *name, const char *s, size_t len) {
    name->s = s;
    name->len = (uint32_t)len;
    name->sentinel = HEARTH__NAME_PLAIN;
    name->ival = 0;
    name->is_int = parse_int_key(s, len, &name->ival);
}

hearth__name hearth__name_sentinel(int sentinel) {
    hearth__name n = {sentinel < 0 ? "[MIN_NAME]" : "[MAX_NAME]", 10, 0, false,
                      (int8_t)sentinel};
    return n;
}

/* Decodes the code point starting at s[i] of s[0..len). Keys compared
 * through the public API may be malformed: an incomplete sequence yields
 * its first byte, and nothing past len is ever read. */
static uint32_t decode_at(const unsigned char *s, size_t i, size_t len) {
    unsigned char c = s[i];
    size_t need = c < 0xC0 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
    if (need == 0 || len - i <= need)
        return c;
    for (size_t k = 1; k <= need; k++)
        if ((s[i + k] & 0xC0) != 0x80)
            return c;
    if (c < 0xE0)
        return ((uint32_t)(c & 0x1F) << 6) | (s[i + 1] & 0x3F);
    if (c < 0xF0)
        return ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) |
               (s[i + 2] & 0x3F);
    return ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
           ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
}

/* UTF-16 puts supplementary characters (surrogates D800-DFFF) before
 * U+E000-U+FFFF; code point order puts them after. Lift U+E000-U+FFFF above
 * every supplementary character to get code unit order. */
static uint32_t utf16_rank(uint32_t cp) {
    return (cp >= 0xE000 && cp <= 0xFFFF) ? cp + 0x200000 : cp;
}

int hearth__utf16_compare(const char *a, size_t alen, const char *b,
                          size_t blen) {
    size_t n = alen < blen ? alen : blen;
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    if (i == n)
        return alen < blen ? -1 : alen > blen ? 1 : 0;
    size_t diff = i;
    /* Back up to the start of the code point holding the first difference. */
    while (i > 0 && ((unsigned char)a[i] & 0xC0) == 0x80)
        i--;
    uint32_t ca = utf16_rank(decode_at((const unsigned char *)a, i, alen));
    uint32_t cb = utf16_rank(decode_at((const unsigned char *)b, i, blen));
    if (ca != cb)
        return ca < cb ? -1 : 1;
    /* Only malformed UTF-8 gets here: order by the differing bytes. */
    return (unsigned char)a[diff] < (unsigned char)b[diff] ? -1 : 1;
}

int hearth__name_compare(const hearth__name *a, const hearth__name *b) {
    if (a->sentinel != b->sentinel || a->sentinel != HEARTH__NAME_PLAIN) {
        if (a->sentinel == b->sentinel)
            return 0;
        if (a->sentinel == HEARTH__NAME_MIN || b->sentinel == HEARTH__NAME_MAX)
            return -1;
        if (b->sentinel == HEARTH__NAME_MIN || a->sentinel == HEARTH__NAME_MAX)
            return 1;
    }
    if (a->is_int) {
        if (!b->is_int)
            return -1;
        if (a->ival != b->ival)
            return a->ival < b->ival ? -1 : 1;
        if (a->len != b->len)
            return a->len < b->len ? -1 : 1;
        /* Same value and length ("-0" / "00"): any fixed order will do. */
        return memcmp(a->s, b->s, a->len);
    }
    if (b->is_int)
        return 1;
    return hearth__utf16_compare(a->s, a->len, b->s, b->len);
}

/* The first 8 bytes of s[0..len), big-endian, zero-padded. */
static uint64_t prefix8(const char *s, size_t len) {
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (len >= 8) { /* one load */
        uint64_t v;
        memcpy(&v, s, 8);
        return __builtin_bswap64(v);
    }
#endif
    uint64_t v = 0;
    for (size_t i = 0; i < 8; i++)
        v = v << 8 | (i < len ? (unsigned char)s[i] : 0u);
    return v;
}

uint64_t hearth__name_sort(const hearth__name *name) {
    if (name->sentinel == HEARTH__NAME_MIN)
        return 0;
    if (name->sentinel == HEARTH__NAME_MAX)
        return UINT64_MAX;
    if (name->is_int) /* below every string: value, then length (< 2^40) */
        return ((uint64_t)((int64_t)name->ival + 2147483648LL) << 8) |
               (name->len & 0xFF);
    /* Strings: the first 8 bytes (keys hold no NUL, so padding with 0 puts
     * a shorter prefix first; a first byte of at least 1 puts every string
     * at or above 2^56, over the integers). Eight bytes tell apart keys
     * such as "k0000001" and "k0000002" without a look at the key itself.
     * UTF-16 order is byte order except that U+E000-U+FFFF (lead bytes EE,
     * EF) sort above the supplementary planes (F0-F4): lift those two lead
     * bytes above F4 (to F5, F6: never in UTF-8, so nothing else maps
     * there). ASCII, the usual case, has nothing to lift. */
    uint64_t sort = prefix8(name->s, name->len);
    if (!(sort & 0x8080808080808080ULL))
        return sort;
    uint64_t lifted = 0;
    for (int shift = 56; shift >= 0; shift -= 8) {
        unsigned c = (unsigned)(sort >> shift) & 0xFF;
        if (c == 0xEE || c == 0xEF)
            c += 7;
        lifted = lifted << 8 | c;
    }
    return lifted;
}

static hearth__key *key_alloc(const hearth__name *name, unsigned refs) {
    hearth__key *key = hearth__malloc(sizeof *key + name->len + 1);
    if (!key)
        return NULL;
    atomic_init(&key->refs, refs);
    key->len = name->len;
    key->ival = name->ival;
    key->is_int = name->is_int;
    memcpy(key->s, name->s, name->len);
    key->s[name->len] = '\0';
    return key;
}

/* ---- shared short keys ----
 * The same short keys ("name", "uid", "a") recur in object after object.
 * The first INTERN_SLOTS distinct ones of up to 8 bytes a process sees are
 * made once and shared for good: they are never counted (copying a page
 * of children then touches only the children, not each key's count, a
 * cache miss apiece) and never freed. Later ones are ordinary counted
 * keys, so the table stays bounded (4,096 keys). A key of up to 8 bytes
 * is told exactly by its bytes as one number (prefix8: keys hold no NUL),
 * kept in a table of its own, so a search reads no key. A slot's key is
 * set once by compare-and-swap, then its number is published. */
enum { INTERN_BITS = 12, INTERN_SLOTS = 1 << INTERN_BITS, INTERN_PROBES = 4 };
static _Atomic(hearth__key *) intern_key[INTERN_SLOTS];
static _Atomic uint64_t intern_bytes[INTERN_SLOTS];

static bool same_key(const hearth__key *k, const hearth__name *name) {
    return k->len == name->len && memcmp(k->s, name->s, name->len) == 0;
}

/* The shared key for name, made if a slot is free; NULL when there is no
 * room (or no memory): the caller makes a counted key. */
static hearth__key *intern(const hearth__name *name) {
    uint64_t bytes = prefix8(name->s, name->len);
    uint64_t h = (bytes * 0x9E3779B97F4A7C15ULL) >> (64 - INTERN_BITS);
    hearth__key *made = NULL;
    for (unsigned i = 0; i < INTERN_PROBES; i++) {
        unsigned at = (unsigned)(h + i) & (INTERN_SLOTS - 1);
        uint64_t there = atomic_load_explicit(&intern_bytes[at], memory_order_acquire);
        if (there == bytes) {
            hearth__free(made);
            return atomic_load_explicit(&intern_key[at], memory_order_relaxed);
        }
        if (there)
            continue;
        /* Free, or being filled by another thread. */
        hearth__key *k = atomic_load_explicit(&intern_key[at], memory_order_acquire);
        if (!k) {
            if (!made && !(made = key_alloc(name, HEARTH__KEY_SHARED)))
                return NULL;
            if (atomic_compare_exchange_strong_explicit(&intern_key[at], &k, made,
                                                        memory_order_acq_rel,
                                                        memory_order_acquire)) {
                atomic_store_explicit(&intern_bytes[at], bytes, memory_order_release);
                return made;
            }
        }
        if (same_key(k, name)) {
            hearth__free(made);
            return k;
        }
    }
    hearth__free(made);
    return NULL;
}

hearth__key *hearth__key_create(const hearth__name *name) {
    if (name->len >= 1 && name->len <= 8) {
        hearth__key *k = intern(name);
        if (k)
            return k;
    }
    return key_alloc(name, 1);
}

hearth__key *hearth__key_from_cstr(const char *s) {
    hearth__name name;
    hearth__name_init(&name, s, strlen(s));
    return hearth__key_create(&name);
}

void hearth__key_decref(hearth__key *key) {
    if (key && !hearth__key_shared(key) &&
        atomic_fetch_sub_explicit(&key->refs, 1, memory_order_acq_rel) == 1)
        hearth__free(key);
}

int hearth_key_compare(const char *a, const char *b) {
    hearth__name na, nb;
    hearth__name_init(&na, a, strlen(a));
    hearth__name_init(&nb, b, strlen(b));
    return hearth__name_compare(&na, &nb);
}
