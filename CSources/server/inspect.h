/*
 * inspect.h - what the admin's inspection of a namespace's rules keeps
 * (internal): the rules' coverage across the namespace closing while idle
 * and opening again with the same rules (the counts are the ruleset's,
 * rules/ruleset.h), and the denial traces (a ring of the last denials
 * with the rules tried, while the admin has tracing on). Kept per
 * namespace name on the server; the loop thread's, like the namespaces.
 */
#ifndef HEARTH_SERVER_INSPECT_H
#define HEARTH_SERVER_INSPECT_H

#include "server/access.h"

typedef struct hearth__inspect hearth__inspect;

/* Denials kept per namespace: the newest replace the oldest. */
#define HEARTH__DENIALS_KEPT 64

void hearth__inspect_free(hearth__inspect *in);

/* ns closes: its ruleset (taken; ns->ruleset set NULL) is kept with its
 * counts, in case it opens again with the same rules. */
void hearth__inspect_closing(hearth__server *srv, hearth__namespace *ns);
/* ns opened with its rules: the ruleset kept for it takes the place of the
 * one just compiled when both come from the same text; otherwise it goes. */
void hearth__inspect_opened(hearth__server *srv, hearth__namespace *ns);

/* Denial tracing for namespace name on or off (off drops what was kept).
 * HEARTH_ENOMEM. */
int hearth__inspect_set_tracing(hearth__server *srv, const char *name, bool on);
bool hearth__inspect_tracing(const hearth__server *srv, const char *name);
/* {"tracing": bool, "denials": [oldest .. newest]}: new text, or NULL
 * without memory. */
char *hearth__inspect_denials_json(const hearth__server *srv,
                                   const char *name);

/* A read the rules refused (p not the admin): traced and kept when
 * tracing is on for ns, else nothing (one look-up). */
void hearth__inspect_read_denied(hearth__server *srv, hearth__namespace *ns,
                                 const hearth__principal *p, const char *path,
                                 const hearth_node_t *query);
/* A write the rules refused as it was applied (door: "rest", "realtime",
 * or NULL when not known). */
void hearth__inspect_write_denied(hearth__server *srv, hearth__namespace *ns,
                                  const char *door, const hearth_node_t *auth,
                                  const hearth__path *const *paths, size_t n,
                                  const hearth_node_t *old_root,
                                  const hearth_node_t *new_root, double now);

#endif
