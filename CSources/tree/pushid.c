/* pushid.c - push IDs: 8 characters of time, 12 of randomness, strictly
 * increasing for one generator state. */
#include "common/internal.h"
#include "os/os.h"

#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static const char PUSH_CHARS[] =
    "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";

int64_t hearth_now_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

int hearth_push_id(hearth_push_id_state_t *state, int64_t now_ms,
                   char out[HEARTH_PUSH_ID_SIZE]) {
    if (!state || !out || now_ms < 0)
        return HEARTH_EINVAL;
    /* A clock that steps back must not break the order: reuse the last
     * time and count up from the last random part. */
    bool same_time = now_ms <= state->last_time_ms;
    if (same_time) {
        now_ms = state->last_time_ms;
        int i = 11;
        while (i >= 0 && state->last_random[i] == 63)
            state->last_random[i--] = 0;
        if (i < 0) { /* 2^72 IDs in one millisecond: move to the next one */
            now_ms++;
            same_time = false;
        } else {
            state->last_random[i]++;
        }
    }
    if (!same_time) {
        uint8_t random[12];
        if (hearth__os_random(random, sizeof random))
            return HEARTH_EIO;
        for (int i = 0; i < 12; i++)
            state->last_random[i] = random[i] & 63;
    }
    state->last_time_ms = now_ms;
    int64_t t = now_ms;
    for (int i = 7; i >= 0; i--) {
        out[i] = PUSH_CHARS[t % 64];
        t /= 64;
    }
    for (int i = 0; i < 12; i++)
        out[8 + i] = PUSH_CHARS[state->last_random[i]];
    out[20] = '\0';
    return 0;
}
