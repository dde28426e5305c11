/*
 * locate.h - where each rule of a rules document is written (internal):
 * the line and column of every .read, .write and .validate value in the
 * document's text (JSON with // and block comments), found by the rule's
 * location ("/users/$uid", as ruleset.c names it) and kind (".read").
 * The rules' coverage reports expressions by these positions.
 *
 * The text has been parsed already (hearth__rules_parse); this scanner
 * only finds positions, and a text it cannot follow gives no positions
 * (line 0), never an error the rules would be refused for.
 */
#ifndef HEARTH_RULES_LOCATE_H
#define HEARTH_RULES_LOCATE_H

#include "common/internal.h"

typedef struct hearth__rule_sites hearth__rule_sites;

/* The rules' positions in text[0..len) into *out (free with
 * hearth__rule_sites_free). HEARTH_ENOMEM, or HEARTH_EINVAL when the
 * text is not a rules document this scanner can follow. */
int hearth__rule_sites_find(const char *text, size_t len,
                            hearth__rule_sites **out);
void hearth__rule_sites_free(hearth__rule_sites *s);

/* The 1-based line and column (in characters) of the value of rule `kind`
 * at `where`; false, with both 0, when the text has none there. When a key
 * is written twice, the last one counts (as the JSON parser keeps it). */
bool hearth__rule_sites_lookup(const hearth__rule_sites *s, const char *where,
                               const char *kind, int *line, int *column);

#endif
