/* rules.c - a namespace's rules, the same on every node. A document set
 * through any node (PUT /.settings/rules.json) is kept in the KV bucket
 * hearth_rules under the namespace's name; every node follows the bucket
 * (an ordered consumer of its stream, the last value of each key first)
 * and hands each change to the server, which adopts it where the
 * namespace is open; a namespace opened later takes the bucket's document
 * (this node's copy of it) over its own. With no document in the bucket,
 * each node's own rules apply (--rules FILE, or DATA/NAME/rules.json).
 *
 * The bucket is read whole at start, before the node serves anything, so
 * no request is judged by a node's stale rules; later changes arrive
 * within a round trip (the consumer is made once the link can take its
 * messages, and again each tick until it is). */
#include "cluster/internal.h"

#include <stdio.h>
#include <string.h>

#define BUCKET "hearth_rules"
#define SUBJECTS "$KV." BUCKET ".>"

/* This node's copy of one namespace's document. */
typedef struct hearth__rules_copy {
    struct hearth__rules_copy *next;
    char *ns;
    char *text; /* NULL: deleted (the node's own rules apply) */
} rules_copy;

static rules_copy *copy_of(hearth__cluster *c, const char *ns) {
    for (rules_copy *r = c->rules; r; r = r->next)
        if (strcmp(r->ns, ns) == 0)
            return r;
    return NULL;
}

/* Keeps text (NULL: none) as ns's document; false without memory. */
static bool remember(hearth__cluster *c, const char *ns, const char *text,
                     size_t len) {
    rules_copy *r = copy_of(c, ns);
    char *copy = text ? hearth__strndup(text, len) : NULL;
    if (text && !copy)
        return false;
    if (!r) {
        r = hearth__calloc(1, sizeof *r);
        if (!r || !(r->ns = hearth__strndup(ns, strlen(ns)))) {
            hearth__free(r);
            hearth__free(copy);
            return false;
        }
        r->next = c->rules;
        c->rules = r;
    }
    hearth__free(r->text);
    r->text = copy;
    return true;
}

/* Whether this node's copy of ns's document is already text (NULL: none
 * set, or removed). */
static bool same_as_copy(hearth__cluster *c, const char *ns, const char *text,
                         size_t len) {
    const rules_copy *r = copy_of(c, ns);
    const char *have = r ? r->text : NULL;
    if (!have || !text)
        return !have && !text; /* no document either way */
    return strlen(have) == len && memcmp(have, text, len) == 0;
}

static void on_rules_msg(natsConnection *nc, natsSubscription *sub,
                         natsMsg *m, void *closure) {
    (void)nc, (void)sub;
    jsMsgMetaData *meta = NULL;
    if (natsMsg_GetMetaData(&meta, m) != NATS_OK) {
        natsMsg_Destroy(m); /* a heartbeat or flow control */
        return;
    }
    jsMsgMetaData_Destroy(meta);
    hearth__cluster_post(closure, MSG_RULES, m, 0);
}

int hearth__cluster_rules_start(hearth__cluster *c, hearth_error_t *err) {
    kvKeysList keys = {0};
    natsStatus s = kvStore_Keys(&keys, c->rules_kv, NULL);
    if (s == NATS_NOT_FOUND) /* no key yet */
        s = NATS_OK;
    for (int i = 0; s == NATS_OK && i < keys.Count; i++) {
        kvEntry *e = NULL;
        s = kvStore_Get(&e, c->rules_kv, keys.Keys[i]);
        if (s == NATS_OK && !remember(c, keys.Keys[i], kvEntry_ValueString(e),
                                      (size_t)kvEntry_ValueLen(e)))
            s = NATS_NO_MEMORY;
        else if (s == NATS_NOT_FOUND) /* deleted meanwhile */
            s = NATS_OK;
        kvEntry_Destroy(e);
    }
    kvKeysList_Destroy(&keys);
    if (s != NATS_OK)
        return hearth__error(err, hearth__cluster_error(s), NULL,
                             "cluster: cannot read the rules bucket: %s",
                             natsStatus_GetText(s));
    return 0;
}

void hearth__cluster_rules_follow_bucket(hearth__cluster *c) {
    if (c->rules_sub || c->stop_asked)
        return;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = "KV_" BUCKET;
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverLastPerSubject;
    so.Config.Heartbeat = (int64_t)HEARTH__CLUSTER_HEARTBEAT_MS * 1000000;
    jsErrCode jerr = 0;
    natsStatus s = js_Subscribe(&c->rules_sub, c->js, SUBJECTS, on_rules_msg,
                                c, NULL, &so, &jerr);
    if (s != NATS_OK) {
        c->rules_sub = NULL;
        fprintf(stderr, "hearth: cluster: cannot follow the rules bucket "
                "(%s); trying again\n", natsStatus_GetText(s));
    }
}

void hearth__cluster_rules_stop(hearth__cluster *c) {
    if (c->rules_sub) {
        natsSubscription_Unsubscribe(c->rules_sub);
        natsSubscription_Destroy(c->rules_sub);
        c->rules_sub = NULL;
    }
}

void hearth__cluster_rules_free(hearth__cluster *c) {
    while (c->rules) {
        rules_copy *r = c->rules;
        c->rules = r->next;
        hearth__free(r->ns);
        hearth__free(r->text);
        hearth__free(r);
    }
}

void hearth__cluster_rules_changed(hearth__cluster *c, natsMsg *m) {
    static const char prefix[] = "$KV." BUCKET ".";
    const char *subj = natsMsg_GetSubject(m);
    if (!subj || strncmp(subj, prefix, sizeof prefix - 1) != 0 ||
        !subj[sizeof prefix - 1])
        return; /* not a key of the bucket */
    const char *ns = subj + sizeof prefix - 1;
    const char *op = NULL;
    bool gone = natsMsgHeader_Get(m, "KV-Operation", &op) == NATS_OK && op &&
                (strcmp(op, "DEL") == 0 || strcmp(op, "PURGE") == 0);
    const char *text = gone ? NULL : natsMsg_GetData(m);
    size_t len = gone ? 0 : (size_t)natsMsg_GetDataLength(m);
    if (same_as_copy(c, ns, text, len))
        return; /* this node's own put coming back, or a consumer made
                   again sending the last value: nothing to reload */
    if (!remember(c, ns, text, len)) {
        fprintf(stderr, "hearth: cluster: out of memory taking the rules of "
                "%s\n", ns);
        return;
    }
    if (c->on_rules)
        c->on_rules(c->on_rules_ctx, ns);
}

const char *hearth__cluster_rules_of(hearth__cluster *c, const char *ns) {
    rules_copy *r = copy_of(c, ns);
    return r ? r->text : NULL;
}

void hearth__cluster_rules_follow(hearth__cluster *c,
                                  hearth__cluster_rules_cb cb, void *ctx) {
    c->on_rules = cb;
    c->on_rules_ctx = ctx;
}

/* A put on its way: once the cluster holds it, this node adopts it at
 * once (its own follower brings the same text later, harmlessly), so the
 * caller's next read here sees it. */
typedef struct rules_put {
    hearth__cluster *c;
    char *ns, *text;
    hearth__cluster_kept_cb done;
    void *ctx;
} rules_put;

static void on_put(void *ctx, int rc) {
    rules_put *p = ctx;
    if (!rc && remember(p->c, p->ns, p->text,
                        p->text ? strlen(p->text) : 0) &&
        p->c->on_rules)
        p->c->on_rules(p->c->on_rules_ctx, p->ns);
    p->done(p->ctx, rc);
    hearth__free(p->ns);
    hearth__free(p->text);
    hearth__free(p);
}

void hearth__cluster_rules_put(hearth__cluster *c, const char *ns,
                               const char *text, hearth__cluster_kept_cb done,
                               void *ctx) {
    rules_put *p = hearth__calloc(1, sizeof *p);
    if (p) {
        p->c = c;
        p->done = done;
        p->ctx = ctx;
        p->ns = hearth__strndup(ns, strlen(ns));
        p->text = text ? hearth__strndup(text, strlen(text)) : NULL;
    }
    if (!p || !p->ns || (text && !p->text) ||
        !hearth__cluster_lane_put(c, c->rules_kv, ns, text, on_put, p)) {
        if (p) {
            hearth__free(p->ns);
            hearth__free(p->text);
        }
        hearth__free(p);
        done(ctx, HEARTH_ENOMEM);
    }
}
