/*
 * ruleset.h - a rules document compiled once, and the decisions it makes
 * (internal): who may read a location, and whether a write (or a
 * multi-path update) is granted and valid. Semantics of
 * ../shared/reference/rules.md: .read/.write cascade down (a grant cannot
 * be revoked deeper), rules are not filters, .validate must pass at every
 * level of the path and at every descendant of the new data that has a
 * rule (not for deletions), a literal key wins over the $wildcard beside
 * it, and any error denies.
 */
#ifndef HEARTH_RULES_RULESET_H
#define HEARTH_RULES_RULESET_H

#include "path/path.h"
#include "rules/expr.h"

struct json_t;
typedef struct hearth__ruleset hearth__ruleset;

/* Parses a rules document (JSON with // and block comments) into *out,
 * checking that it holds a "rules" object whose every rule compiles. */
int hearth__rules_parse(const char *text, size_t len, struct json_t **out,
                        hearth_error_t *err);

/* Compiles the "rules" object of a parsed document. An error names the
 * rule's location and kind and the expression's column. */
int hearth__ruleset_compile(const struct json_t *doc, hearth__ruleset **out,
                            hearth_error_t *err);
void hearth__ruleset_free(hearth__ruleset *rs);

/* hearth__ruleset_compile, noting where each rule is written in text (the
 * document's source, comments and all, as given to hearth__rules_parse)
 * for the coverage report; text NULL: in the document as
 * GET /.settings/rules.json shows it (indented by 2, keys in order). */
int hearth__ruleset_compile_source(const struct json_t *doc, const char *text,
                                   size_t len, hearth__ruleset **out,
                                   hearth_error_t *err);

/* Who is asking, when, against which data. */
typedef struct hearth__access {
    const hearth_node_t *auth;  /* NULL or null: unauthenticated */
    double now;
    const hearth_node_t *root;  /* the data before the operation */
    const hearth_node_t *query; /* read rules' query variable, or NULL */
} hearth__access;

/* The read rules' `query` variable for a wire query object ({"i", "sp",
 * "ep", "l", "vf"}; NULL: the default query). New reference or NULL. */
hearth_node_t *hearth__rules_query_variable(const struct json_t *wire_q);

bool hearth__ruleset_can_read(const hearth__ruleset *rs,
                              const hearth__path *path,
                              const hearth__access *a);
/* A write of n paths at once (one for a set), all granted and valid
 * against new_root, the data with the whole write applied. */
bool hearth__ruleset_can_write(const hearth__ruleset *rs,
                               const hearth__path *const *paths, size_t n,
                               const hearth_node_t *new_root,
                               const hearth__access *a);

/* Which rule decided a read or a write (the rules playground): the rule
 * that granted it; for a refusal the .validate that failed, else the
 * deepest .read or .write tried on the way (kind NULL: none lies there). */
typedef struct hearth__rule_why {
    const char *kind;     /* ".read", ".write", ".validate", or NULL */
    char path[512];       /* the rule's location, "/users/$uid" */
    char expression[512]; /* as written; "true" or "false" for constants */
    bool settled;         /* (internal: a later rule no longer replaces it) */
} hearth__rule_why;

/* hearth__ruleset_can_read and _can_write, saying in *why (NULL: not
 * asked) which rule decided. */
bool hearth__ruleset_explain_read(const hearth__ruleset *rs,
                                  const hearth__path *path,
                                  const hearth__access *a,
                                  hearth__rule_why *why);
bool hearth__ruleset_explain_write(const hearth__ruleset *rs,
                                   const hearth__path *const *paths, size_t n,
                                   const hearth_node_t *new_root,
                                   const hearth__access *a,
                                   hearth__rule_why *why);

/* ---- coverage ----
 * Since it was compiled, a ruleset counts every evaluation of each of its
 * rules by result. Real requests count (a write's early check before its
 * body is read too: it evaluates the .write rules); explanations
 * (hearth__ruleset_explain_* with a `why`: the playground's hypothetical
 * requests) do not. The counts are the loop thread's, like the ruleset. */

/* One rule's counts. Strings are borrowed from the ruleset. */
typedef struct hearth__rule_coverage {
    int line, column;       /* of the rule's value in the source; 0: unknown */
    const char *kind;       /* ".read", ".write" or ".validate" */
    const char *where;      /* the rule's location, "/users/$uid" */
    const char *expression; /* as written; "true" / "false" for constants */
    uint64_t evaluations, yes, no, error;
} hearth__rule_coverage;

/* Every rule's counts, by position in the source, into *out (hearth__free
 * it; valid while rs lives), *n of them. HEARTH_ENOMEM. */
int hearth__ruleset_coverage(const hearth__ruleset *rs,
                             hearth__rule_coverage **out, size_t *n);
/* The text the positions refer to (NULL when compiled without one). */
const char *hearth__ruleset_source(const hearth__ruleset *rs);
/* Coverage on (the default) or off: for the benchmark's anchor. */
void hearth__ruleset_set_counting(hearth__ruleset *rs, bool on);

/* ---- denial traces ----
 * The same decisions, each rule tried appended to out as it is evaluated,
 * as a JSON array: [{"rule": ".read", "line", "column", "path":
 * "/users/$uid", "expression", "result": "true" | "false" | "error",
 * "values": [each sub-expression's {"text", "value"}: hearth__expr_trace]},
 * ...]. For the admin's look at a refusal after the fact: not counted in
 * coverage (the request itself was). */
bool hearth__ruleset_trace_read(const hearth__ruleset *rs,
                                const hearth__path *path,
                                const hearth__access *a, hearth__buf *out);
bool hearth__ruleset_trace_write(const hearth__ruleset *rs,
                                 const hearth__path *const *paths, size_t n,
                                 const hearth_node_t *new_root,
                                 const hearth__access *a, hearth__buf *out);

/* A write at path judged before its data is known (to refuse a large
 * body before reading it). The .write rules from the root to path are
 * walked: one that reads newData leaves the question open; one that holds
 * lets the write go on to the full check (hearth__ruleset_can_write, which
 * also validates); when every one is false, the write is denied, unless
 * `below` (an update or a push: writes under path) and some .write lies
 * under path. */
typedef enum {
    HEARTH__WRITE_UNDECIDED,
    HEARTH__WRITE_MAY,
    HEARTH__WRITE_DENIED
} hearth__early_write;
hearth__early_write hearth__ruleset_write_early(const hearth__ruleset *rs,
                                                const hearth__path *path,
                                                bool below,
                                                const hearth__access *a);

#endif
