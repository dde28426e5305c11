/* expr_regex.c - the rules' regex literals: the documented subset
 * translated to a POSIX extended expression and compiled once, at parse. */
#include "rules/expr_internal.h"

#include <ctype.h>
#include <string.h>

/* The documented regex subset, as a POSIX extended expression: \d \w \s
 * and their negations become classes, ^ and $ only at the ends. */
hearth__expr *hearth__expr_parse_regex(parser *ps) {
    const char *start = ps->p++;
    hearth__buf b;
    hearth__buf_init(&b);
    bool in_class = false;
    const char *body = ps->p;
    for (;;) {
        char c = *ps->p;
        if (!c || c == '\n') {
            hearth__buf_free(&b);
            return hearth__expr_fail(ps, start, "unterminated regular expression");
        }
        ps->p++;
        if (c == '/' && !in_class)
            break;
        if (c == '\\') {
            char e = *ps->p;
            if (!e) {
                hearth__buf_free(&b);
                return hearth__expr_fail(ps, start, "unterminated regular expression");
            }
            ps->p++;
            static const struct {
                char esc;
                const char *out, *inside;
            } classes[] = {{'d', "[0-9]", "0-9"},
                           {'D', "[^0-9]", NULL},
                           {'w', "[A-Za-z0-9_]", "A-Za-z0-9_"},
                           {'W', "[^A-Za-z0-9_]", NULL},
                           {'s', "[ \t\r\n\v\f]", " \t\r\n\v\f"},
                           {'S', "[^ \t\r\n\v\f]", NULL}};
            bool done = false;
            for (size_t i = 0; i < HEARTH__ARRAY_SIZE(classes) && !done; i++)
                if (classes[i].esc == e) {
                    if (in_class && !classes[i].inside) {
                        hearth__buf_free(&b);
                        return hearth__expr_fail(ps, ps->p - 2,
                                    "a negated class inside brackets is not "
                                    "supported");
                    }
                    hearth__buf_adds(&b, in_class ? classes[i].inside
                                                  : classes[i].out);
                    done = true;
                }
            if (!done) {
                /* An escaped character stands for itself. */
                if (in_class || isalnum((unsigned char)e)) {
                    hearth__buf_addc(&b, e);
                } else {
                    hearth__buf_addc(&b, '\\');
                    hearth__buf_addc(&b, e);
                }
            }
            continue;
        }
        if (!in_class && c == '^' && ps->p - 1 != body) {
            hearth__buf_free(&b);
            return hearth__expr_fail(ps, ps->p - 1, "^ is only allowed first");
        }
        if (!in_class && c == '$' && *ps->p != '/') {
            hearth__buf_free(&b);
            return hearth__expr_fail(ps, ps->p - 1, "$ is only allowed last");
        }
        if (c == '[')
            in_class = true;
        else if (c == ']')
            in_class = false;
        hearth__buf_addc(&b, c);
    }
    bool icase = false;
    while (isalpha((unsigned char)*ps->p)) {
        if (*ps->p != 'i') {
            hearth__buf_free(&b);
            return hearth__expr_fail(ps, ps->p, "only the i flag is supported");
        }
        icase = true;
        ps->p++;
    }
    char *pattern = hearth__buf_detach(&b, NULL);
    hearth__expr *e = pattern ? hearth__expr_node(ps, E_REGEX) : NULL;
    if (e && regcomp(&e->re, pattern, REG_EXTENDED | REG_NOSUB |
                                          (icase ? REG_ICASE : 0)) != 0) {
        e->kind = E_NULL; /* nothing compiled to free */
        hearth__expr_free(e);
        e = NULL;
        hearth__expr_fail(ps, start, "invalid regular expression");
    }
    hearth__free(pattern);
    return e;
}
