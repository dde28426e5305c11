/* keeper_local.c - namespaces kept on this node alone: each database in
 * its own data directory, the rules the admin sets in that directory's
 * rules.json; onDisconnect writes live and die with their session. */
#include "server/keeper.h"
#include "store/files.h"

#include "common/internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int local_open(hearth__keeper *k, const char *ns,
                      const hearth_db_config_t *config, hearth_db_t **out,
                      hearth_error_t *err) {
    (void)k;
    (void)ns;
    return hearth_db_open(config, out, err);
}

static const char *local_rules_of(hearth__keeper *k, const char *ns) {
    (void)k;
    (void)ns;
    return NULL; /* the server's own: rules.json is one of them */
}

/* Writes text to dir/rules.json whole: a crash leaves the old rules or
 * the new, never a mix. The admin may set a namespace's rules before it
 * holds any data. */
static int save_rules(const char *dir, const char *text, size_t len) {
    if (mkdir(dir, 0755) && errno != EEXIST)
        return HEARTH_EIO;
    char path[1024];
    snprintf(path, sizeof path, "%s/rules.json", dir);
    return hearth__store_write_atomically(path, text, len, 0644, NULL);
}

static void local_rules_put(hearth__keeper *k, const char *ns, const char *dir,
                            const char *text, size_t len,
                            hearth__keeper_done_cb done, void *ctx) {
    int rc = save_rules(dir, text, len);
    char *copy = rc ? NULL : hearth__strndup(text, len);
    if (!rc && !copy)
        rc = HEARTH_ENOMEM; /* saved: in force once the namespace reopens */
    if (copy && k->rules_changed)
        k->rules_changed(k->rules_ctx, ns, copy);
    hearth__free(copy);
    done(ctx, rc);
}

static int local_state_at(hearth__keeper *k, const char *ns, const char *dir,
                          int64_t at_ms, uint64_t at_seq, hearth_node_t **out,
                          hearth_error_t *err) {
    (void)k;
    (void)ns;
    return hearth__store_state_at(dir, at_ms, at_seq, out, err);
}

static int local_changes(hearth__keeper *k, const char *ns, const char *dir,
                         const char *path, int64_t since_ms, int64_t until_ms,
                         hearth_change_cb cb, void *ctx, hearth_error_t *err) {
    (void)k;
    (void)ns;
    return hearth_log_changes(dir, path, since_ms, until_ms, cb, ctx, err);
}

static char *local_status(hearth__keeper *k, bool *none) {
    (void)k;
    *none = true;
    return NULL;
}

static void local_stop(hearth__keeper *k) { hearth__free(k); }

static const hearth__keeper_ops local_ops = {
    .open = local_open,
    .rules_of = local_rules_of,
    .rules_put = local_rules_put,
    .ondisconnect_keep = NULL, /* a session runs its own */
    .state_at = local_state_at,
    .changes = local_changes,
    .metrics = NULL,
    .status = local_status,
    .stop = local_stop,
    .stores_every_namespace = false,
    .applies_at_once = true,
};

int hearth__keeper_local(hearth__keeper **out, hearth_error_t *err) {
    hearth__keeper *k = hearth__calloc(1, sizeof *k);
    if (!k)
        return hearth__error_code(err, HEARTH_ENOMEM);
    k->ops = &local_ops;
    *out = k;
    return 0;
}
