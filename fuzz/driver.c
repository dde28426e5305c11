/* driver.c - runs a libFuzzer target without libFuzzer (for `make test`,
 * built with gcc and the sanitizers): each seed file given on the command
 * line, then a fixed number of deterministic mutations of them. `make fuzz`
 * builds the real coverage-guided fuzzers with clang instead. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t state = 0x9E3779B97F4A7C15ULL;
static uint64_t next_random(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static const char *const tokens[] = {
    "{", "}", "[", "]", ":", ",", "\"", "null", "true", "1e309", "-0",
    ".priority", ".value", ".sv", "timestamp", "increment", "/", ".", "$",
    "#", "\\u0000", "\xf0\x9f\x90\xb5", "\xff", "//", "1234567890123"};

int main(int argc, char **argv) {
    const char *env = getenv("FUZZ_ROUNDS");
    long rounds = env ? atol(env) : 20000;
    uint8_t *seeds[64];
    size_t lens[64];
    int nseeds = 0;
    for (int i = 1; i < argc && nseeds < 64; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f)
            continue;
        uint8_t *buf = malloc(1 << 16);
        size_t n = fread(buf, 1, 1 << 16, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
        seeds[nseeds] = buf;
        lens[nseeds++] = n;
    }
    uint8_t work[1 << 16];
    for (long r = 0; r < rounds && nseeds; r++) {
        int s = (int)(next_random() % (uint64_t)nseeds);
        size_t len = lens[s];
        memcpy(work, seeds[s], len);
        int edits = 1 + (int)(next_random() % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = len ? next_random() % len : 0;
            switch (next_random() % 4) {
            case 0: /* flip a byte */
                if (len)
                    work[at] = (uint8_t)next_random();
                break;
            case 1: /* cut */
                len = at;
                break;
            case 2: { /* insert a token */
                const char *t = tokens[next_random() % (sizeof tokens / sizeof *tokens)];
                size_t tl = strlen(t);
                if (len + tl < sizeof work) {
                    memmove(work + at + tl, work + at, len - at);
                    memcpy(work + at, t, tl);
                    len += tl;
                }
                break;
            }
            default: /* duplicate a slice */
                if (len && len * 2 < sizeof work) {
                    memcpy(work + len, work, len);
                    len *= 2;
                }
            }
        }
        LLVMFuzzerTestOneInput(work, len);
    }
    for (int i = 0; i < nseeds; i++)
        free(seeds[i]);
    printf("%s: %d seeds, %ld mutated inputs, no failure\n", argv[0], nseeds,
           rounds);
    return 0;
}
