/* fuzz_locate.c - libFuzzer target for the rules' position scanner
 * (rules/locate.c): any text is followed or refused without a crash, a
 * leak or a read past its end; what it finds is looked up; and a text
 * that is a rules document compiles with the positions it gives. */
#include "rules/locate.h"
#include "rules/ruleset.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* Not NUL-terminated on purpose: the scanner takes a length. */
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    hearth__rule_sites *sites = NULL;
    if (hearth__rule_sites_find(text, size, &sites) == 0) {
        int line, column;
        if (hearth__rule_sites_lookup(sites, "/", ".read", &line, &column) &&
            (line < 1 || column < 1))
            abort();
        hearth__rule_sites_free(sites);
    }
    json_t *doc = NULL;
    hearth__ruleset *rs = NULL;
    if (hearth__rules_parse(text, size, &doc, NULL) == 0) {
        if (hearth__ruleset_compile_source(doc, text, size, &rs, NULL))
            abort(); /* it parsed and compiled once: again with positions */
        hearth__rule_coverage *v = NULL;
        size_t n = 0;
        if (hearth__ruleset_coverage(rs, &v, &n) == 0)
            free(v);
        hearth__ruleset_free(rs);
        json_decref(doc);
    }
    free(text);
    return 0;
}
