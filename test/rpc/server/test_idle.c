/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/test_idle.c - the server thread's back-off (struct srv_idle, rpc_internal.h), by
 * counts of rounds that found no call: adaptive stays hot, then polls with a pause, then sleeps
 * in slices that grow to the longest and stay there (0.8 ms until a call was served, 0.1 ms after);
 * a call (a reset) makes it hot again at any point; spin never sleeps; block sleeps at once.  And
 * TETHER_WAIT's words (one parser for the plugins and the server thread).
 */
#include <stdlib.h>
#include <string.h>

#include "../../../rpc/server/rpc_internal.h"
#include "tcheck.h"

static const char *phase_name(enum srv_idle_phase p)
{
    return p == SRV_IDLE_HOT ? "hot" : p == SRV_IDLE_RELAX ? "relax" : "sleep";
}

/* Runs empty rounds; checks the adaptive sequence from a fresh (or reset) state: slices double
 * from the shortest to `max` in `to_max` sleeps and stay there. */
static void check_adaptive_from_start(struct srv_idle *idle, uint64_t max, uint32_t to_max,
                                      const char *when)
{
    uint64_t slice = 0, last = 0;
    for (uint32_t r = 1; r <= 2000; r++) {
        enum srv_idle_phase p = srv_idle_next(idle, &slice);
        enum srv_idle_phase want = r <= SRV_IDLE_HOT_ROUNDS ? SRV_IDLE_HOT
                                   : r <= SRV_IDLE_HOT_ROUNDS + SRV_IDLE_RELAX_ROUNDS
                                       ? SRV_IDLE_RELAX
                                       : SRV_IDLE_SLEEP;
        if (p != want) {
            CHECKF(p == want, "%s: empty round %u: %s, want %s", when, r, phase_name(p),
                   phase_name(want));
            return;
        }
        if (p != SRV_IDLE_SLEEP)
            continue;
        uint32_t k = r - SRV_IDLE_HOT_ROUNDS - SRV_IDLE_RELAX_ROUNDS; /* the k-th sleep */
        if (k == 1)
            CHECKF(slice == SRV_IDLE_SLICE_MIN_NS, "%s: first slice %llu ns, want %u", when,
                   (unsigned long long)slice, SRV_IDLE_SLICE_MIN_NS);
        else
            CHECKF(slice >= last && slice <= max,
                   "%s: sleep %u: slice %llu ns after %llu (at most %llu)", when, k,
                   (unsigned long long)slice, (unsigned long long)last, (unsigned long long)max);
        if (k == to_max)
            CHECKF(slice == max, "%s: sleep %u: slice %llu ns, want the longest %llu", when, k,
                   (unsigned long long)slice, (unsigned long long)max);
        last = slice;
    }
    CHECKF(last == max, "%s: after a long quiet spell the slice is %llu ns", when,
           (unsigned long long)last);
}

int main(void)
{
    _Static_assert(SRV_IDLE_SLICE_MIN_NS * 4 == SRV_IDLE_SLICE_MAX_NS, "three slices to the top");
    _Static_assert(SRV_IDLE_SLICE_MIN_NS * 32 == SRV_IDLE_SLICE_FIRST_NS, "six before a call");
    struct srv_idle idle;
    uint64_t slice = 0;

    /* adaptive, before any call: hot, relax, then sleeps of 25, 50, ... 800, 800... us */
    srv_idle_init(&idle, TETHER_WAIT_ADAPTIVE);
    check_adaptive_from_start(&idle, SRV_IDLE_SLICE_FIRST_NS, 6, "adaptive before a call");
    srv_idle_init(&idle, TETHER_WAIT_ADAPTIVE);
    srv_idle_quiet(&idle);
    CHECKF(srv_idle_next(&idle, &slice) == SRV_IDLE_SLEEP && slice == SRV_IDLE_SLICE_FIRST_NS,
           "a quiet ring before any call: slice %llu ns", (unsigned long long)slice);

    /* A call resets it, wherever it is: in the sleeps, in the relaxed polls, while hot. */
    uint32_t at[] = {1, SRV_IDLE_HOT_ROUNDS, SRV_IDLE_HOT_ROUNDS + 3,
                     SRV_IDLE_HOT_ROUNDS + SRV_IDLE_RELAX_ROUNDS + 2, 100000};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        srv_idle_init(&idle, TETHER_WAIT_ADAPTIVE);
        for (uint32_t r = 0; r < at[i]; r++)
            srv_idle_next(&idle, &slice);
        srv_idle_reset(&idle);
        char when[64];
        snprintf(when, sizeof when, "reset after %u empty rounds", at[i]);
        check_adaptive_from_start(&idle, SRV_IDLE_SLICE_MAX_NS, 3, when);
    }

    /* A ring after quiet kernels: sleeps of the longest slice, wherever it was; a call after it
     * makes it hot again. */
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        srv_idle_init(&idle, TETHER_WAIT_ADAPTIVE);
        srv_idle_reset(&idle); /* a call was served */
        for (uint32_t r = 0; r < at[i]; r++)
            srv_idle_next(&idle, &slice);
        srv_idle_quiet(&idle);
        const uint64_t want = SRV_IDLE_SLICE_MAX_NS;
        for (uint32_t r = 1; r <= 5; r++) {
            slice = 0;
            enum srv_idle_phase p = srv_idle_next(&idle, &slice);
            if (p != SRV_IDLE_SLEEP || slice != want) {
                CHECKF(false, "quiet after %u empty rounds: round %u: %s, slice %llu ns", at[i], r,
                       phase_name(p), (unsigned long long)slice);
                break;
            }
        }
        srv_idle_reset(&idle);
        check_adaptive_from_start(&idle, SRV_IDLE_SLICE_MAX_NS, 3, "reset after a quiet ring");
    }

    /* spin: never sleeps while a kernel runs. */
    srv_idle_init(&idle, TETHER_WAIT_SPIN);
    int slept = 0;
    for (uint32_t r = 0; r < 100000; r++)
        slept += srv_idle_next(&idle, &slice) != SRV_IDLE_HOT;
    CHECKF(slept == 0, "spin: %d of 100000 empty rounds not hot", slept);

    /* block: the longest slice after every empty round, from the first on. */
    srv_idle_init(&idle, TETHER_WAIT_BLOCK);
    CHECKF(srv_idle_next(&idle, &slice) == SRV_IDLE_SLEEP && slice == SRV_IDLE_SLICE_FIRST_NS,
           "block before a call: slice %llu ns", (unsigned long long)slice);
    srv_idle_reset(&idle);
    for (uint32_t r = 1; r <= 100; r++) {
        slice = 0;
        enum srv_idle_phase p = srv_idle_next(&idle, &slice);
        if (p != SRV_IDLE_SLEEP || slice != SRV_IDLE_SLICE_MAX_NS) {
            CHECKF(false, "block: empty round %u: %s, slice %llu ns", r, phase_name(p),
                   (unsigned long long)slice);
            break;
        }
    }
    srv_idle_reset(&idle);
    CHECKF(srv_idle_next(&idle, &slice) == SRV_IDLE_SLEEP, "block: a reset does not make it spin");
    srv_idle_init(&idle, TETHER_WAIT_SPIN);
    srv_idle_quiet(&idle);
    CHECKF(srv_idle_next(&idle, &slice) == SRV_IDLE_HOT,
           "spin: a quiet ring does not make it sleep");

    /* TETHER_WAIT: the words, any case; unset and a bad word give adaptive. */
    struct {
        const char *value;
        enum tether_wait_mode mode;
    } cases[] = {{NULL, TETHER_WAIT_ADAPTIVE},       {"", TETHER_WAIT_ADAPTIVE},
                 {"spin", TETHER_WAIT_SPIN},         {"BLOCK", TETHER_WAIT_BLOCK},
                 {"Adaptive", TETHER_WAIT_ADAPTIVE}, {"sleepy", TETHER_WAIT_ADAPTIVE}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].value == NULL)
            unsetenv("TETHER_WAIT");
        else
            setenv("TETHER_WAIT", cases[i].value, 1);
        enum tether_wait_mode m = tether_env_wait();
        CHECKF(m == cases[i].mode, "TETHER_WAIT=%s read as %d, want %d",
               cases[i].value ? cases[i].value : "(unset)", (int)m, (int)cases[i].mode);
    }
    unsetenv("TETHER_WAIT");
    return tcheck_exit("idle");
}
