/* replay.c - the leader's memory of the forwarded writes it has served,
 * so that one captured on NATS and sent again does not apply again.
 *
 * A forwarded write is named by its reply subject, which its seal binds:
 * the sender's inbox (its node and run) and a number that grows with each
 * write it forwards. Per sender, the leader keeps the highest number
 * served and which of the WINDOW below it were: numbers arrive nearly in
 * order (one sender's requests travel one connection; a batch sent again
 * after "no responders" comes newest first), so a bitmap of the recent
 * ones is exact where a set of all would grow with the write rate. A
 * number too far below the highest is refused (its sender gave up on it
 * long ago: a forward's bound is 15 s).
 *
 * Time bounds the memory: a request carries its sealing time (the
 * sender's clock) and is refused when over HEARTH__CLUSTER_FRESH_MS from
 * this node's clock, either way (so clocks must agree within that); a
 * sender not heard from in twice that is forgotten, by then anything of
 * its that could be replayed is refused as too old. A replay to another
 * leader, or to a later run of this one, is refused by the term the
 * request is sealed for (forward.c). Loop thread. */
#include "cluster/node.h"

#include <stdlib.h>
#include <string.h>

#define WINDOW 4096     /* numbers kept below the highest, per sender */
#define MAX_SENDERS 1024 /* runs of nodes heard from within the bound */

typedef struct sender {
    char inbox[96];
    uint64_t high;   /* the highest number served */
    uint64_t last;   /* when it was last heard from (this node's ms) */
    uint64_t seen[WINDOW / 64]; /* served: number % WINDOW */
} sender;

struct hearth__replay {
    sender *senders;
    size_t count;
};

static bool test_bit(const sender *s, uint64_t id) {
    return s->seen[(id % WINDOW) / 64] >> (id % 64) & 1;
}

static void set_bit(sender *s, uint64_t id, bool on) {
    uint64_t mask = (uint64_t)1 << (id % 64);
    if (on)
        s->seen[(id % WINDOW) / 64] |= mask;
    else
        s->seen[(id % WINDOW) / 64] &= ~mask;
}

/* The sender of inbox, made (in the place of the one heard from longest
 * ago when full); NULL without memory. */
static sender *sender_of(struct hearth__replay *r, const char *inbox,
                         size_t len, uint64_t now) {
    for (size_t i = 0; i < r->count; i++)
        if (strlen(r->senders[i].inbox) == len &&
            memcmp(r->senders[i].inbox, inbox, len) == 0)
            return &r->senders[i];
    sender *s;
    if (r->count == MAX_SENDERS) {
        s = &r->senders[0];
        for (size_t i = 1; i < r->count; i++)
            if (r->senders[i].last < s->last)
                s = &r->senders[i];
    } else {
        if (!r->senders &&
            !(r->senders = hearth__calloc(MAX_SENDERS, sizeof *r->senders)))
            return NULL;
        s = &r->senders[r->count++];
    }
    memset(s, 0, sizeof *s);
    memcpy(s->inbox, inbox, len);
    s->last = now;
    return s;
}

int hearth__cluster_replay_check(hearth__cluster *c, const char *reply,
                                 uint64_t sealed_at) {
    uint64_t now = (uint64_t)hearth_now_ms();
    if (sealed_at + HEARTH__CLUSTER_FRESH_MS < now ||
        sealed_at > now + HEARTH__CLUSTER_FRESH_MS)
        return HEARTH_EDENIED;
    const char *dot = strrchr(reply, '.');
    char *end = NULL;
    uint64_t id = dot ? strtoull(dot + 1, &end, 10) : 0;
    if (!dot || end == dot + 1 || *end ||
        (size_t)(dot - reply) >= sizeof(((sender *)0)->inbox))
        return HEARTH_EDENIED; /* not a name this cluster's nodes give */
    if (!c->sealing.replay &&
        !(c->sealing.replay = hearth__calloc(1, sizeof *c->sealing.replay)))
        return HEARTH_ENOMEM;
    sender *s = sender_of(c->sealing.replay, reply, (size_t)(dot - reply), now);
    if (!s)
        return HEARTH_ENOMEM;
    if (s->last > now) /* this node's clock went back */
        s->last = now;
    if (id > s->high) {
        /* forward: the numbers passed over are not served yet */
        for (uint64_t k = s->high + 1; k < id && k <= s->high + WINDOW; k++)
            set_bit(s, k, false);
        if (id - s->high > WINDOW)
            memset(s->seen, 0, sizeof s->seen);
        s->high = id;
    } else if (s->high - id >= WINDOW || test_bit(s, id)) {
        return HEARTH_EDENIED;
    }
    set_bit(s, id, true);
    s->last = now;
    return 0;
}

void hearth__cluster_replay_expire(hearth__cluster *c) {
    struct hearth__replay *r = c->sealing.replay;
    uint64_t now = (uint64_t)hearth_now_ms();
    for (size_t i = 0; r && i < r->count;) {
        if (r->senders[i].last + 2 * HEARTH__CLUSTER_FRESH_MS < now)
            r->senders[i] = r->senders[--r->count];
        else
            i++;
    }
}

void hearth__cluster_replay_free(hearth__cluster *c) {
    if (c->sealing.replay)
        hearth__free(c->sealing.replay->senders);
    hearth__free(c->sealing.replay);
    c->sealing.replay = NULL;
}
