/* expr.c - the rules expression language's tree: freeing it, and which
 * variables it reads. The language is parsed in expr_parse.c (its regex
 * literals in expr_regex.c) and evaluated in expr_eval.c (see expr.h). */
#include "rules/expr_internal.h"

#include <string.h>

void hearth__expr_free(hearth__expr *e) {
    if (!e)
        return;
    hearth__expr_free(e->a);
    hearth__expr_free(e->b2);
    hearth__expr_free(e->c);
    for (size_t i = 0; i < e->nitems; i++)
        hearth__expr_free(e->items[i]);
    hearth__free(e->items);
    hearth__free(e->s);
    if (e->kind == E_REGEX)
        regfree(&e->re);
    hearth__free(e);
}

bool hearth__expr_uses(const hearth__expr *e, const char *name) {
    if (!e)
        return false;
    if (e->kind == E_VAR && !strcmp(e->s, name))
        return true;
    if (hearth__expr_uses(e->a, name) || hearth__expr_uses(e->b2, name) ||
        hearth__expr_uses(e->c, name))
        return true;
    for (size_t i = 0; i < e->nitems; i++)
        if (hearth__expr_uses(e->items[i], name))
            return true;
    return false;
}
