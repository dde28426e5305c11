/* sealing.c - the cluster's seal, as its messages use it (sealing.h):
 * contexts, the pass-through of a node without a secret, and the count
 * and log of what is dropped. */
#include "cluster/node.h"

#include <stdio.h>
#include <string.h>

static const char *const kind_names[HEARTH__CLUSTER_REJECT_KINDS] = {
    "log", "fwd", "reply", "snap", "kv", "trig"};

/* ---- contexts ---- */

void hearth__aad_init(hearth__aad *a) {
    a->len = 0;
    a->over = false;
}

void hearth__aad_bytes(hearth__aad *a, const void *field, size_t len) {
    if (a->over || len >= sizeof a->text - a->len) {
        a->over = true;
        return;
    }
    memcpy(a->text + a->len, field, len);
    a->len += len;
    a->text[a->len++] = '\0';
}

void hearth__aad_str(hearth__aad *a, const char *field) {
    hearth__aad_bytes(a, field ? field : "", field ? strlen(field) : 0);
}

void hearth__aad_u64(hearth__aad *a, uint64_t v) {
    char text[24];
    int len = snprintf(text, sizeof text, "%llu", (unsigned long long)v);
    hearth__aad_bytes(a, text, (size_t)len);
}

void hearth__aad_part(hearth__aad *a, size_t i, size_t k) {
    char text[48];
    int len = k ? snprintf(text, sizeof text, "%zu/%zu", i, k) : 0;
    hearth__aad_bytes(a, text, (size_t)len);
}

/* ---- the seal ---- */

int hearth__cluster_sealing_load(hearth__cluster *c, const char *file,
                                 hearth_error_t *err) {
    return hearth__seal_load_file(file, &c->sealing.seal, err);
}

void hearth__cluster_sealing_free(hearth__cluster *c) {
    hearth__seal_free(c->sealing.seal);
    c->sealing.seal = NULL;
}

/* ---- sealing and opening ---- */

bool hearth__cluster_sealed(const hearth__cluster *c) {
    return c->sealing.seal != NULL;
}

size_t hearth__cluster_seal_room(const hearth__cluster *c) {
    return c->sealing.seal ? HEARTH__SEAL_HEADER : 0;
}

int hearth__cluster_seal(hearth__cluster *c, const char *purpose,
                         const hearth__aad *ctx, const void *plain,
                         size_t len, hearth__buf *out) {
    if (!c->sealing.seal) {
        hearth__buf_add(out, plain, len);
        return out->failed ? HEARTH_ENOMEM : 0;
    }
    if (ctx->over)
        return HEARTH_EINVAL;
    return hearth__seal_close(c->sealing.seal, purpose, ctx->text, ctx->len,
                              plain, len, out);
}

int hearth__cluster_seal_in_place(hearth__cluster *c, const char *purpose,
                                  const hearth__aad *ctx, void *msg,
                                  size_t len) {
    if (!c->sealing.seal)
        return 0;
    if (ctx->over)
        return HEARTH_EINVAL;
    return hearth__seal_close_in_place(c->sealing.seal, purpose, ctx->text,
                                       ctx->len, msg, len);
}

int hearth__cluster_unseal(hearth__cluster *c, hearth__reject_kind kind,
                         const char *purpose, const hearth__aad *ctx,
                         const void *data, size_t len, hearth__buf *out) {
    if (!c->sealing.seal) {
        hearth__buf_add(out, data, len);
        return out->failed ? HEARTH_ENOMEM : 0;
    }
    int rc = ctx->over ? HEARTH_EDENIED
                       : hearth__seal_open(c->sealing.seal, purpose, ctx->text,
                                           ctx->len, data, len, out);
    if (rc == HEARTH_EDENIED)
        hearth__cluster_rejected(c, kind, false);
    return rc;
}

int hearth__cluster_unseal_in_place(hearth__cluster *c, hearth__reject_kind kind,
                                  const char *purpose, const hearth__aad *ctx,
                                  void *msg, size_t len, const char **plain,
                                  size_t *plain_len) {
    if (!c->sealing.seal) {
        *plain = msg;
        *plain_len = len;
        return 0;
    }
    int rc = ctx->over ? HEARTH_EDENIED
                       : hearth__seal_open_in_place(c->sealing.seal, purpose, ctx->text,
                                                    ctx->len, msg, len,
                                                    plain_len);
    if (rc == HEARTH_EDENIED)
        hearth__cluster_rejected(c, kind, false);
    if (!rc)
        *plain = (const char *)msg + HEARTH__SEAL_HEADER;
    return rc;
}

static void value_context(hearth__aad *a, const char *bucket, const char *key) {
    hearth__aad_init(a);
    hearth__aad_str(a, bucket);
    hearth__aad_str(a, key);
}

int hearth__cluster_seal_value(hearth__cluster *c, const char *bucket,
                               const char *key, const char *text, size_t len,
                               hearth__buf *out) {
    hearth__aad a;
    value_context(&a, bucket, key);
    return hearth__cluster_seal(c, "kv", &a, text, len, out);
}

int hearth__cluster_open_value(hearth__cluster *c, const char *bucket,
                               const char *key, const void *data, size_t len,
                               hearth__buf *out) {
    hearth__aad a;
    value_context(&a, bucket, key);
    return hearth__cluster_unseal(c, HEARTH__REJECT_KV, "kv", &a, data, len, out);
}

/* ---- what is dropped ---- */

void hearth__cluster_rejected(hearth__cluster *c, hearth__reject_kind kind,
                              bool replayed) {
    atomic_fetch_add(&c->sealing.rejected[kind], 1);
    /* Once per kind and reason: an attacker's stream of forgeries must not
     * flood the log, and /.metrics counts the rest. */
    unsigned bit = 1u << (kind * 2 + replayed);
    if (atomic_fetch_or(&c->sealing.rejected_logged, bit) & bit)
        return;
    if (replayed)
        hearth__log(HEARTH_LOG_ERROR, "cluster: dropped a %s message that opens "
                "but was sealed for another time or place (replayed); "
                "counting in /.metrics", kind_names[kind]);
    else
        hearth__log(HEARTH_LOG_ERROR, "cluster: dropped a %s message that does not "
                "open with the cluster secret (forged, or another "
                "cluster's); counting in /.metrics", kind_names[kind]);
}

uint64_t hearth__cluster_rejected_count(hearth__cluster *c,
                                        hearth__reject_kind kind) {
    return atomic_load(&c->sealing.rejected[kind]);
}

void hearth__cluster_rejected_metrics(hearth__cluster *c, hearth__buf *out) {
    hearth__buf_adds(out, "# HELP hearth_cluster_rejected_total Messages "
                          "taken from NATS and dropped: they do not open "
                          "with the cluster secret (forged, or another "
                          "cluster's), or were replayed.\n"
                          "# TYPE hearth_cluster_rejected_total counter\n");
    for (int k = 0; k < HEARTH__CLUSTER_REJECT_KINDS; k++)
        hearth__buf_printf(out, "hearth_cluster_rejected_total{kind=\"%s\"} "
                                "%llu\n",
                           kind_names[k],
                           (unsigned long long)atomic_load(
                               &c->sealing.rejected[k]));
}
