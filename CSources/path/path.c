/* path.c - key and path validation with messages that name the culprit. */
#include "path/path.h"

#include <stdio.h>
#include <string.h>

/* The ASCII bytes a key may not hold: control characters, . $ # [ ] /
 * and DEL. */
static const bool forbidden[128] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    ['#'] = 1, ['$'] = 1, ['.'] = 1, ['/'] = 1, ['['] = 1, [']'] = 1,
    [0x7F] = 1};

/* A key of at most max bytes. */
static int check_key(const char *s, size_t len, size_t max, const char *where,
                     hearth_error_t *err) {
    if (len == 0)
        return hearth__error(err, HEARTH_EKEY, where, "empty key%s%s",
                             where ? " at " : "", where ? where : "");
    if (len > max)
        return hearth__error(err, HEARTH_ETOOBIG, where,
                             "key of %zu bytes%s%s is over the limit of %zu "
                             "bytes",
                             len, where ? " at " : "", where ? where : "",
                             max);
    /* One pass finds the first forbidden byte and whether any byte is
     * not ASCII (only then is UTF-8 checked, and it is reported first). */
    const char *bad = NULL;
    bool multibyte = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80)
            multibyte = true;
        else if (forbidden[c] && !bad)
            bad = s + i;
    }
    if (multibyte && !hearth__utf8_valid(s, len))
        return hearth__error(err, HEARTH_EKEY, where,
                             "key%s%s is not valid UTF-8",
                             where ? " at " : "", where ? where : "");
    if (bad) {
        unsigned char c = (unsigned char)*bad;
        char shown[8];
        if (c < 0x20 || c == 0x7F)
            snprintf(shown, sizeof shown, "\\x%02X", c);
        else
            snprintf(shown, sizeof shown, "%c", c);
        /* Quote at most 64 bytes, cut between characters. */
        size_t klen = len > 64 ? 64 : len;
        while (klen < len && ((unsigned char)s[klen] & 0xC0) == 0x80)
            klen--;
        return hearth__error(err, HEARTH_EKEY, where,
                             "invalid key \"%.*s%s\"%s%s: keys may not "
                             "contain '%s' (no . $ # [ ] / or control "
                             "characters)",
                             (int)klen, s, klen < len ? "..." : "",
                             where ? " at " : "", where ? where : "", shown);
    }
    return 0;
}

int hearth__key_check(const char *s, size_t len, const char *where,
                      hearth_error_t *err) {
    return check_key(s, len, HEARTH_MAX_KEY_BYTES, where, err);
}

int hearth__bound_key_check(const char *s, size_t len, hearth_error_t *err) {
    return check_key(s, len, HEARTH__MAX_BOUND_KEY_BYTES, NULL, err);
}

int hearth_validate_key(const char *key, hearth_error_t *err) {
    if (!key)
        return hearth__error(err, HEARTH_EINVAL, NULL, "key is NULL");
    return hearth__key_check(key, strlen(key), NULL, err);
}

int hearth__path_parse(const char *s, unsigned flags, hearth__path *out,
                       hearth_error_t *err) {
    out->n = 0;
    out->priority = false;
    out->info = false;
    if (!s)
        return hearth__error(err, HEARTH_EINVAL, NULL, "path is NULL");
    const char *p = s;
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *start = p;
        while (*p && *p != '/')
            p++;
        size_t len = (size_t)(p - start);
        if (out->priority)
            return hearth__error(err, HEARTH_EPATH, s,
                                 "invalid path \"%s\": \".priority\" must be "
                                 "the last key",
                                 s);
        if ((flags & HEARTH__PATH_ALLOW_PRIORITY) && len == 9 &&
            memcmp(start, ".priority", 9) == 0) {
            out->priority = true;
            continue;
        }
        bool info = out->n == 0 && (flags & HEARTH__PATH_ALLOW_INFO) &&
                    len == 5 && memcmp(start, ".info", 5) == 0;
        if (!info) {
            hearth_error_t key_err;
            int rc = hearth__key_check(start, len, NULL, &key_err);
            if (rc)
                return hearth__error(err, rc == HEARTH_ETOOBIG ? rc
                                                               : HEARTH_EPATH,
                                     s, "invalid path \"%s\": %s", s,
                                     key_err.message);
        }
        if (out->n == HEARTH_MAX_DEPTH)
            return hearth__error(err, HEARTH_EDEPTH, s,
                                 "path \"%.64s...\" is deeper than %d keys", s,
                                 HEARTH_MAX_DEPTH);
        out->info = out->info || info;
        hearth__name_init(&out->seg[out->n++], start, len);
    }
    return 0;
}

int hearth_validate_path(const char *path, hearth_error_t *err) {
    hearth__path p;
    return hearth__path_parse(
        path, HEARTH__PATH_ALLOW_INFO | HEARTH__PATH_ALLOW_PRIORITY, &p, err);
}

void hearth__path_format(const hearth__path *p, unsigned upto, char *buf,
                         size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    if (upto == 0 && size > 1) {
        buf[0] = '/';
        buf[1] = '\0';
        return;
    }
    for (unsigned i = 0; i < upto && i < p->n && used + 1 < size; i++) {
        int w = snprintf(buf + used, size - used, "/%.*s", (int)p->seg[i].len,
                         p->seg[i].s);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

bool hearth__path_is_prefix(const hearth__path *a, const hearth__path *b) {
    if (a->n > b->n)
        return false;
    for (unsigned i = 0; i < a->n; i++)
        if (a->seg[i].len != b->seg[i].len ||
            memcmp(a->seg[i].s, b->seg[i].s, a->seg[i].len) != 0)
            return false;
    return true;
}
