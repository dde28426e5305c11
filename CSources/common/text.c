/* text.c - UTF-8 validation, JavaScript-compatible number formatting, and
 * the hash of text for in-memory tables. */
#include "common/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t hearth__fnv1a(uint64_t h, const void *data, size_t len) {
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

bool hearth__utf8_valid(const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (len - i <= n)
            return false;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n + 1;
    }
    return true;
}

/* Shortest "%.Ne" digits that read back as v. */
static int shortest_exponential(double v, char *out, size_t size) {
    for (int precision = 0; precision <= 16; precision++) {
        snprintf(out, size, "%.*e", precision, v);
        if (strtod(out, NULL) == v)
            return precision;
    }
    return 16;
}

/* An integer's digits, by hand: snprintf's "%lld" took a twentieth of a
 * small REST PUT's instructions (its number is written to the log and
 * into the answer). */
static size_t format_integer(long long v, char out[32]) {
    char digits[24];
    size_t n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v
                                 : (unsigned long long)v;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t len = 0;
    if (v < 0)
        out[len++] = '-';
    while (n)
        out[len++] = digits[--n];
    out[len] = '\0';
    return len;
}

size_t hearth__format_number(double v, char out[32]) {
    if (v == 0) {
        out[0] = '0';
        out[1] = '\0';
        return 1;
    }
    /* Integers below 2^53 are exact with all their digits. Larger ones
     * (below 1e21) take the general path below: JavaScript prints their
     * shortest digits padded with zeros (2^60 is "1152921504606847000"),
     * not their exact value. */
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        return format_integer((long long)v, out);
    /* Split the shortest round-trip form into digits and exponent, then lay
     * it out as ECMAScript Number::toString does. */
    char sci[40];
    shortest_exponential(v, sci, sizeof sci);
    const char *p = sci;
    bool negative = false;
    if (*p == '-') {
        negative = true;
        p++;
    }
    char digits[24];
    int k = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[k++] = *p;
    digits[k] = '\0';
    int e = atoi(p + 1); /* value = 0.d1d2... * 10^(e+1) */
    int n = e + 1;
    char *o = out;
    if (negative)
        *o++ = '-';
    if (k <= n && n <= 21) {
        memcpy(o, digits, (size_t)k);
        o += k;
        for (int i = k; i < n; i++)
            *o++ = '0';
    } else if (0 < n && n <= 21) {
        memcpy(o, digits, (size_t)n);
        o += n;
        *o++ = '.';
        memcpy(o, digits + n, (size_t)(k - n));
        o += k - n;
    } else if (-6 < n && n <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -n; i++)
            *o++ = '0';
        memcpy(o, digits, (size_t)k);
        o += k;
    } else {
        *o++ = digits[0];
        if (k > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)(k - 1));
            o += k - 1;
        }
        o += sprintf(o, "e%c%d", n - 1 >= 0 ? '+' : '-', abs(n - 1));
    }
    *o = '\0';
    return (size_t)(o - out);
}

char *hearth__json_widen_integers(const char *text, size_t len,
                                  size_t *out_len) {
    hearth__buf b;
    hearth__buf_init(&b);
    bool in_string = false;
    for (size_t i = 0; i < len;) {
        char c = text[i];
        if (in_string) {
            /* An escape takes the next byte with it (\" does not end). */
            size_t n = c == '\\' && i + 1 < len ? 2 : 1;
            in_string = c != '"';
            hearth__buf_add(&b, text + i, n);
            i += n;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            /* A number token: sign, digits, then maybe a fraction or an
             * exponent, which make it a real already. */
            size_t start = i, digits = 0;
            if (text[i] == '-')
                i++;
            for (; i < len && text[i] >= '0' && text[i] <= '9'; i++)
                digits++;
            bool real = i < len && (text[i] == '.' || text[i] == 'e' || text[i] == 'E');
            hearth__buf_add(&b, text + start, i - start);
            if (!real && digits >= 19)
                hearth__buf_add(&b, ".0", 2);
            continue;
        }
        hearth__buf_addc(&b, c);
        i++;
    }
    return hearth__buf_detach(&b, out_len);
}

size_t hearth__base64(const unsigned char *in, size_t len, char *out) {
    static const char abc[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0, i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = abc[v >> 18];
        out[o++] = abc[(v >> 12) & 63];
        out[o++] = abc[(v >> 6) & 63];
        out[o++] = abc[v & 63];
    }
    if (i < len) { /* one or two bytes left: padded to four characters */
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = abc[v >> 18];
        out[o++] = abc[(v >> 12) & 63];
        out[o++] = i + 1 < len ? abc[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
    return o;
}
