/* number.c - numbers as JavaScript prints them (Number::toString): the
 * form every value of this data model is written in. */
#include "common/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
