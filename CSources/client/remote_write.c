/* remote_write.c - the realtime client's writes: laid over the local data
 * at once, queued and sent in order, settled in the sync tree when the
 * server answers; onDisconnect requests; server values estimated. */
#include "client/remote_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writes ---- */

void hearth__remote_write_free(write_rec *w) {
    json_decref(w->body);
    hearth__free(w);
}

void hearth__remote_send_write(hearth__remote *r, write_rec *w) {
    if (!r->ready || w->sent)
        return;
    if (hearth__remote_send_request(r, w->action, w->body, REQ_WRITE, w) == 0)
        w->sent = true;
}

void hearth__remote_enqueue_write(hearth__remote *r, write_rec *w) {
    hearth__list_push_back(&r->writes, &w->link);
    hearth__remote_send_write(r, w);
}

void hearth__remote_unlink_write(hearth__remote *r, write_rec *w) {
    HEARTH__UNUSED(r); /* w knows its list */
    hearth__list_remove(&w->link);
}

int hearth__remote_status_code(const char *status) {
    if (!strcmp(status, "ok"))
        return 0;
    if (!strcmp(status, "permission_denied"))
        return HEARTH_EDENIED;
    if (!strcmp(status, "too_big"))
        return HEARTH_ETOOBIG;
    if (!strcmp(status, "invalid_args"))
        return HEARTH_EINVAL;
    if (!strcmp(status, "datastale"))
        return HEARTH_EDATASTALE;
    return HEARTH_EREMOTE;
}


/* The server answered write w: settle it in the sync tree, then report. */
/* Keeps a write on disk until the server settled it (not compare-and-set
 * attempts: a transaction does not outlive its process). */
static int store_write(hearth__remote *r, write_rec *w) {
    if (!r->disk || w->id < 0 || w->cas)
        return 0;
    char *text = json_dumps(w->body, JSON_COMPACT);
    int rc = text ? hearth__disk_write_add(r->disk, w->id, w->action, text)
                  : HEARTH_ENOMEM;
    free(text);
    return rc;
}

void hearth__remote_forget_write(hearth__remote *r, const write_rec *w) {
    if (r->disk && w->id >= 0 && !w->cas)
        hearth__disk_write_remove(r->disk, w->id);
}

void hearth__remote_write_answered(hearth__remote *r, write_rec *w, int status) {
    hearth__remote_unlink_write(r, w);
    hearth__remote_drop_requests_for(r, w);
    hearth__remote_forget_write(r, w);
    if (w->action[0] == 'o' && status == 0 &&
        hearth__od_accepted(&r->on_disconnect, w->action, w->body) &&
        hearth__remote_logging)
        hearth__log(HEARTH_LOG_WARNING, "an onDisconnect write will not show locally "
                        "(out of memory)");
    if (w->id >= 0) {
        hearth__sync_ack(&r->sync, w->id, status != 0);
        hearth__remote_raise_events(r);
    }
    if (w->owner) {
        batch *b = w->owner;
        b->write = NULL;
        hearth__remote_write_free(w);
        hearth__remote_batch_answer(r, b, status);
        return;
    }
    if (w->done)
        w->done(status, w->arg);
    hearth__remote_write_free(w);
}

/* The wire form of a value: priorities and server values as written. */
json_t *hearth__remote_wire_value(const hearth_node_t *v) {
    return hearth_node_to_jansson(v, HEARTH_JSON_EXPORT);
}

int64_t hearth__remote_server_now(const hearth__remote *r) {
    return hearth_now_ms() + r->time_offset;
}

/* The local estimate of a value with server values (resolved against
 * what the client shows there, at the estimated server time). */
hearth_node_t *hearth__remote_estimate(hearth__remote *r, const hearth__path *path,
                                       const hearth_node_t *value) {
    if (!hearth__node_has_sv(value))
        return hearth_node_incref(value);
    hearth_node_t *local = hearth__sync_local(&r->sync, path);
    const hearth_node_t *existing = local ? local : hearth__node_empty();
    if (path->priority)
        existing = hearth__prio(existing);
    hearth_node_t *out = NULL;
    if (hearth__node_resolve_sv(value, existing, hearth__remote_server_now(r),
                                &out))
        out = NULL;
    hearth_node_decref(local);
    return out;
}


int hearth__remote_write(hearth__remote *r, const hearth__path *const *paths,
                         hearth_node_t *const *values, size_t n,
                         hearth__remote_done done, void *arg) {
    write_rec *w = hearth__calloc(1, sizeof *w);
    if (!w)
        return HEARTH_ENOMEM;
    w->done = done;
    w->arg = arg;
    w->id = r->next_write++;
    int rc = 0;
    if (n == 1) {
        char *p = hearth__remote_path_text(paths[0]);
        hearth_node_t *local = hearth__remote_estimate(r, paths[0], values[0]);
        w->action = "p";
        w->body = p ? json_pack("{s:s,s:o}", "p", p, "d", hearth__remote_wire_value(values[0]))
                    : NULL;
        hearth__free(p);
        if (!w->body || !local)
            rc = HEARTH_ENOMEM;
        else
            hearth__remote_abort_overridden_transactions(r, paths[0]);
        if (!rc)
            rc = store_write(r, w);
        if (!rc)
            rc = hearth__sync_user_set(&r->sync, paths[0], local, w->id, true);
        hearth_node_decref(local);
    } else {
        /* One update at the root: keys are the written paths. */
        hearth__ptree *merge = NULL;
        json_t *d = json_object();
        w->action = "m";
        rc = hearth__ptree_create(&merge);
        if (!rc && !d)
            rc = HEARTH_ENOMEM;
        for (size_t i = 0; !rc && i < n; i++) {
            char *p = hearth__remote_path_text(paths[i]);
            hearth_node_t *local = hearth__remote_estimate(r, paths[i], values[i]);
            hearth__spath sp;
            hearth__spath_from(&sp, paths[i]);
            if (!p || !local || json_object_set_new(d, p + 1, hearth__remote_wire_value(values[i])) ||
                hearth__ptree_set(merge, sp.seg, sp.n, local))
                rc = HEARTH_ENOMEM;
            hearth__free(p);
            hearth_node_decref(local);
        }
        w->body = rc ? NULL : json_pack("{s:s,s:o}", "p", "/", "d", d);
        if (!rc && !w->body)
            rc = HEARTH_ENOMEM;
        if (rc) {
            json_decref(d);
            hearth__ptree_free(merge);
        } else if ((rc = store_write(r, w))) {
            hearth__ptree_free(merge);
        } else {
            hearth__path root = {0};
            rc = hearth__sync_user_merge(&r->sync, &root, merge, w->id);
        }
    }
    if (rc) {
        hearth__remote_write_free(w);
        hearth__remote_flush_finished(r);
        return rc;
    }
    hearth__remote_raise_events(r);
    hearth__remote_enqueue_write(r, w);
    hearth__remote_flush_finished(r); /* transactions the write overrode */
    return 0;
}

int hearth__remote_on_disconnect(hearth__remote *r, const char *action,
                                 const hearth__path *const *paths,
                                 hearth_node_t *const *values, size_t n,
                                 hearth__remote_done done, void *arg) {
    write_rec *w = hearth__calloc(1, sizeof *w);
    if (!w)
        return HEARTH_ENOMEM;
    w->id = -1; /* nothing changes locally until the connection ends */
    w->action = action;
    w->done = done;
    w->arg = arg;
    int rc = 0;
    if (!strcmp(action, "om")) {
        /* One update at the root, keyed by the written paths. */
        json_t *d = json_object();
        rc = d ? 0 : HEARTH_ENOMEM;
        for (size_t i = 0; !rc && i < n; i++) {
            char *p = hearth__remote_path_text(paths[i]);
            if (!p || json_object_set_new(d, p + 1, hearth__remote_wire_value(values[i])))
                rc = HEARTH_ENOMEM;
            hearth__free(p);
        }
        w->body = rc ? NULL : json_pack("{s:s,s:o}", "p", "/", "d", d);
        if (rc)
            json_decref(d);
    } else if (n == 1) {
        char *p = hearth__remote_path_text(paths[0]);
        w->body = p ? json_pack("{s:s}", "p", p) : NULL;
        hearth__free(p);
        if (w->body && !strcmp(action, "o"))
            json_object_set_new(w->body, "d", hearth__remote_wire_value(values[0]));
    }
    if (!w->body) {
        hearth__free(w);
        return rc ? rc : HEARTH_EINVAL;
    }
    hearth__remote_enqueue_write(r, w);
    return 0;
}
