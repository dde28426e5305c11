/* remote_transaction.c - the realtime client's transactions: queued per
 * path, run in batches on the local value, sent as one compare-and-set,
 * and on a stale hash run again on the server's value, up to
 * MAX_TX_ATTEMPTS; a write over their path aborts them. */
#include "client/remote_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- transactions ---- */

static void ignore_event(const hearth_event_t *e, void *ctx) {
    (void)e;
    (void)ctx;
}

/* Takes t out of the queue; its completion runs in
 * hearth__remote_flush_finished, once the client's state is consistent
 * again (a completion may start new transactions or writes). */
void hearth__remote_tx_finish(tx *t, int status, bool committed) {
    hearth__remote *r = t->r;
    hearth__list_remove(&t->link);
    t->status = status;
    t->committed = committed;
    hearth__list_push_back(&r->finished, &t->link);
}

void hearth__remote_finish_all_txs(hearth__remote *r) {
    for (tx *t; (t = HEARTH__LIST_FIRST_ITEM(&r->txs, tx, link));)
        hearth__remote_tx_finish(t, HEARTH_ECANCELED, false);
}

/* Runs the completions of finished transactions, oldest first. */
void hearth__remote_flush_finished(hearth__remote *r) {
    for (hearth__list *n; (n = hearth__list_pop_front(&r->finished));) {
        tx *t = HEARTH__LIST_ITEM(n, tx, link);
        hearth_node_t *now = t->committed && t->result
                                 ? hearth_node_incref(t->result)
                                 : hearth__sync_local(&r->sync, &t->path);
        const hearth_node_t *snap = now ? now : hearth__node_empty();
        if (t->path.priority && !(t->committed && t->result))
            snap = hearth__prio(snap);
        t->done(t->status, t->committed, snap, t->arg);
        hearth_node_decref(now);
        hearth_node_decref(t->result);
        if (t->reg && !r->closing)
            hearth__remote_unobserve(r, t->reg);
        hearth__free(t->path_text);
        hearth__free(t);
    }
}

bool hearth__remote_same_path(const hearth__path *a, const hearth__path *b) {
    return a->n == b->n && a->priority == b->priority &&
           hearth__path_is_prefix(a, b);
}

static bool overlaps(const hearth__path *a, const hearth__path *b) {
    return hearth__path_is_prefix(a, b) || hearth__path_is_prefix(b, a);
}

static void batch_free(hearth__remote *r, batch *b) {
    HEARTH__UNUSED(r); /* b knows its list */
    hearth__list_remove(&b->link);
    hearth__free(b->path_text);
    hearth__free(b->txs);
    hearth__free(b);
}

/* Ends every transaction of b with status, then b itself. */
void hearth__remote_batch_finish(hearth__remote *r, batch *b, int status,
                                 bool committed) {
    for (size_t i = 0; i < b->n; i++)
        hearth__remote_tx_finish(b->txs[i], status, committed);
    b->n = 0;
    batch_free(r, b);
}

/* The value of a path as this client knows it, for an update function. */
static hearth_node_t *tx_input(hearth__remote *r, const hearth__path *path) {
    hearth_node_t *current = hearth__sync_local(&r->sync, path);
    if (!current)
        return hearth_node_null();
    if (!path->priority)
        return current;
    hearth_node_t *prio = hearth_node_incref(hearth__prio(current));
    hearth_node_decref(current);
    return prio;
}

static void pump_transactions(hearth__remote *r);

/* Runs b's update functions in turn on the local value (each on the one
 * before's result), applies the outcome locally and sends it as one
 * compare-and-set against the value the first one saw. */
static void batch_run(hearth__remote *r, batch *b) {
    size_t kept = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (++b->txs[i]->attempts > MAX_TX_ATTEMPTS)
            hearth__remote_tx_finish(b->txs[i], HEARTH_EMAXRETRY, false);
        else
            b->txs[kept++] = b->txs[i];
    }
    b->n = kept;
    if (!b->n) {
        batch_free(r, b);
        pump_transactions(r);
        return;
    }
    const hearth__path *path = &b->path;
    hearth_node_t *base = tx_input(r, path);
    hearth_node_t *value = hearth_node_incref(base);
    kept = 0;
    for (size_t i = 0; i < b->n; i++) {
        tx *t = b->txs[i];
        hearth_node_t *result = NULL;
        int verdict = t->fn(value, &result, t->fn_ctx);
        int rc = 0;
        if (verdict != HEARTH_TX_COMMIT || !result)
            rc = HEARTH_EABORTED;
        else if (path->n + (unsigned)hearth__node_depth(result) >
                 HEARTH_MAX_DEPTH)
            rc = HEARTH_EDEPTH;
        if (rc) {
            hearth_node_decref(result);
            hearth__remote_tx_finish(t, rc, false);
            continue;
        }
        hearth_node_decref(value);
        value = result;
        hearth_node_t *shown = hearth__remote_estimate(r, path, result);
        if (shown) {
            hearth_node_decref(t->result);
            t->result = shown;
        }
        b->txs[kept++] = t;
    }
    b->n = kept;
    char hash[HEARTH_HASH_SIZE];
    int rc = b->n ? hearth_node_hash(base, hash) : 0;
    hearth_node_decref(base);
    if (!b->n) {
        hearth_node_decref(value);
        batch_free(r, b);
        pump_transactions(r);
        return;
    }
    write_rec *w = rc ? NULL : hearth__calloc(1, sizeof *w);
    hearth_node_t *local = rc ? NULL : hearth__remote_estimate(r, path, value);
    if (!rc && (!w || !local))
        rc = HEARTH_ENOMEM;
    if (!rc) {
        w->id = r->next_write++;
        w->action = "p";
        w->cas = true;
        w->owner = b;
        w->body = json_pack("{s:s,s:o,s:s}", "p", b->path_text, "d",
                            hearth__remote_wire_value(value), "h", hash);
        rc = w->body ? hearth__sync_user_set(&r->sync, path, local, w->id, true)
                     : HEARTH_ENOMEM;
    }
    hearth_node_decref(value);
    hearth_node_decref(local);
    if (rc) {
        if (w)
            hearth__remote_write_free(w);
        hearth__remote_batch_finish(r, b, rc, false);
        pump_transactions(r);
        return;
    }
    b->write = w;
    hearth__remote_raise_events(r);
    hearth__remote_enqueue_write(r, w);
}

/* Starts a batch for each path whose transactions wait and that no batch
 * in flight overlaps. */
static void pump_transactions(hearth__remote *r) {
    HEARTH__LIST_EACH_ITEM(t, &r->txs, tx, link) {
        if (t->in)
            continue;
        bool blocked = false;
        HEARTH__LIST_EACH_ITEM(b, &r->batches, batch, link)
            blocked = blocked || overlaps(&b->path, &t->path);
        if (blocked)
            continue;
        size_t n = 0;
        for (tx *x = t; x; x = HEARTH__LIST_NEXT_ITEM(&r->txs, x, tx, link))
            n += !x->in && hearth__remote_same_path(&x->path, &t->path);
        batch *b = hearth__calloc(1, sizeof *b);
        tx **txs = hearth__malloc(n * sizeof *txs);
        char *text = hearth__strndup(t->path_text, strlen(t->path_text));
        if (!b || !txs || !text) {
            hearth__free(b);
            hearth__free(txs);
            hearth__free(text);
            return; /* tried again on the next transaction's arrival */
        }
        b->path_text = text;
        /* Parsed before (t->path_text): cannot fail. */
        hearth__path_parse(text, HEARTH__PATH_ALLOW_PRIORITY, &b->path, NULL);
        for (tx *x = t; x; x = HEARTH__LIST_NEXT_ITEM(&r->txs, x, tx, link))
            if (!x->in && hearth__remote_same_path(&x->path, &t->path)) {
                x->in = b;
                txs[b->n++] = x;
            }
        b->txs = txs;
        hearth__list_push_front(&r->batches, &b->link);
        batch_run(r, b); /* may finish transactions: restart the scan */
        pump_transactions(r);
        return;
    }
}

void hearth__remote_batch_answer(hearth__remote *r, batch *b, int status) {
    if (status == HEARTH_EDATASTALE) {
        batch_run(r, b); /* the server sent its value first: again */
    } else {
        hearth__remote_batch_finish(r, b, status, status == 0);
        pump_transactions(r);
    }
    hearth__remote_flush_finished(r);
}

/* Ends batch b's attempt without an answer (the line dropped, or a set
 * replaced the value): revert it locally and end its transactions. */
void hearth__remote_batch_abandon(hearth__remote *r, batch *b, int status) {
    write_rec *w = b->write;
    if (w) {
        hearth__remote_unlink_write(r, w);
        hearth__remote_drop_requests_for(r, w);
        hearth__sync_ack(&r->sync, w->id, true);
        hearth__remote_raise_events(r);
        hearth__remote_write_free(w);
        b->write = NULL;
    }
    hearth__remote_batch_finish(r, b, status, false);
}

void hearth__remote_abort_overridden_transactions(hearth__remote *r,
                                                  const hearth__path *path) {
    HEARTH__LIST_EACH_ITEM(b, &r->batches, batch, link)
        if (overlaps(&b->path, path))
            hearth__remote_batch_abandon(r, b, HEARTH_EOVERRIDDEN);
    HEARTH__LIST_EACH_ITEM(t, &r->txs, tx, link)
        if (!t->in && overlaps(&t->path, path))
            hearth__remote_tx_finish(t, HEARTH_EOVERRIDDEN, false);
}

int hearth__remote_transaction(hearth__remote *r, const hearth__path *path,
                               hearth_transaction_fn fn, void *fn_ctx,
                               hearth__remote_tx_done done, void *arg) {
    tx *t = hearth__calloc(1, sizeof *t);
    hearth__reg *reg = hearth__calloc(1, sizeof *reg);
    char *text = hearth__remote_path_text(path);
    if (!t || !reg || !text ||
        hearth__path_parse(text, HEARTH__PATH_ALLOW_PRIORITY, &t->path, NULL)) {
        hearth__free(t);
        hearth__free(reg);
        hearth__free(text);
        return HEARTH_ENOMEM;
    }
    t->r = r;
    t->path_text = text;
    t->fn = fn;
    t->fn_ctx = fn_ctx;
    t->done = done;
    t->arg = arg;
    hearth__list_push_back(&r->txs, &t->link);
    /* Listen at the path so that the server's value (pushed before a
     * datastale answer) is in the cache for the next attempt. Internal
     * handles count down from the top so they never meet the owner's. */
    reg->handle = UINT64_MAX - r->next_handle++;
    reg->mask = HEARTH_MASK_VALUE;
    reg->cb = ignore_event;
    hearth__path at = t->path;
    at.priority = false;
    if (hearth__remote_observe(r, &at, NULL, reg) == 0)
        t->reg = reg;
    else
        hearth__free(reg);
    pump_transactions(r);
    hearth__remote_flush_finished(r);
    return 0;
}
