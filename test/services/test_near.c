/* test_near.c - near windows (rpc/device/device_client.h), checked on the host: the two-bit
 * table, the choice of each SM's window from a probe's cycles, and the ports a small grid's
 * threads then take (distinct within a grid, inside the port count). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../rpc/device/device_client.h"
#include "svc_test.h"

/* Every SM's window is stored and read back without touching its neighbours. */
static void test_table(void)
{
    uint64_t near[5] = {0};
    for (uint32_t sm = 0; sm < TETHER_RPC_NEAR_SMS; sm++)
        tether_rpc_near_set(near, sm, (sm * 7 + 3) % 4);
    for (uint32_t sm = 0; sm < TETHER_RPC_NEAR_SMS; sm++)
        CHECK(tether_rpc_near_window(near, sm) == (sm * 7 + 3) % 4, "sm %u: window %u", sm,
              tether_rpc_near_window(near, sm));
    tether_rpc_near_set(near, 33, 0);
    CHECK(tether_rpc_near_window(near, 33) == 0 && tether_rpc_near_window(near, 32) == 3 &&
              tether_rpc_near_window(near, 34) == (34 * 7 + 3) % 4,
          "setting SM 33 changed a neighbour");
    /* SMs past the table read window 0 and are not stored. */
    uint64_t before[5];
    memcpy(before, near, sizeof before);
    tether_rpc_near_set(near, TETHER_RPC_NEAR_SMS, 2);
    CHECK(memcmp(before, near, sizeof before) == 0, "an SM past the table was stored");
    CHECK(tether_rpc_near_window(near, TETHER_RPC_NEAR_SMS + 5) == 0, "SM past the table");
    CHECK(tether_rpc_near_pick(near[1], 40) == tether_rpc_near_window(near, 40), "pick");
}

/* A probe as measured on an H200: two SM groups, each near on two of the four windows (about
 * 290 cycles) and far on the other two (about 500); SMs the probe missed read 0. */
static void test_choose(void)
{
    enum { SMS = 132 };
    static const uint32_t group_a[4] = {502, 296, 510, 288}, group_b[4] = {289, 495, 292, 530};
    uint32_t cycles[SMS * TETHER_RPC_NEAR_WINDOWS];
    for (uint32_t sm = 0; sm < SMS; sm++)
        memcpy(cycles + sm * 4, sm % 3 == 0 ? group_a : group_b, sizeof group_a);
    memset(cycles + 7 * 4, 0, 4 * sizeof cycles[0]);        /* SM 7: not reached */
    cycles[9 * 4 + 1] = 0;                                  /* SM 9: window 1 not timed */
    cycles[12 * 4 + 1] = cycles[12 * 4 + 3] = 288;          /* SM 12: a tie */
    uint64_t near[5] = {~0ull, ~0ull, ~0ull, ~0ull, ~0ull}; /* every SM overwritten */
    uint32_t counts[4];
    uint32_t timed = tether_rpc_near_choose(near, cycles, SMS, counts);
    CHECK(timed == SMS - 1, "%u SMs timed", timed);
    uint32_t total = 0;
    for (uint32_t w = 0; w < 4; w++)
        total += counts[w];
    CHECK(total == timed, "counts add up to %u", total);
    for (uint32_t sm = 0; sm < SMS; sm++) {
        uint32_t want = sm % 3 == 0 ? 3 : 0; /* SM 9 too: its untimed window 1 is skipped */
        if (sm == 12)
            want = 1; /* a group-a SM whose windows 1 and 3 tie: the lower */
        CHECK(tether_rpc_near_window(near, sm) == want, "sm %u: window %u, want %u", sm,
              tether_rpc_near_window(near, sm), want);
    }
    CHECK(counts[0] == SMS - SMS / 3 - 1 && counts[1] == 1 && counts[2] == 0 &&
              counts[3] == SMS / 3 - 1,
          "counts %u/%u/%u/%u", counts[0], counts[1], counts[2], counts[3]);
    /* The chosen window is never slower than window 0. */
    for (uint32_t sm = 0; sm < SMS; sm++) {
        const uint32_t *c = cycles + sm * 4;
        if (c[0] != 0)
            CHECK(c[tether_rpc_near_window(near, sm)] <= c[0], "sm %u slower than window 0", sm);
    }
    /* SMs past the probe's count keep window 0 in a fresh table. */
    uint64_t fresh[5] = {0};
    tether_rpc_near_choose(fresh, cycles, 4, counts);
    CHECK(tether_rpc_near_window(fresh, 100) == 0, "an SM the probe did not cover");
}

/* The threads of a grid of at most TETHER_RPC_NEAR_SPAN threads take distinct ports, whatever SMs
 * they run on, all inside [base, base + windows * span). */
static void test_homes(void)
{
    static uint8_t used[TETHER_RPC_DEVICE_PORTS_MAX];
    uint32_t base = 496, flags = TETHER_RPC_CLIENT_NEAR | base << 16;
    for (uint32_t trial = 0; trial < 4; trial++) {
        memset(used, 0, sizeof used);
        for (uint32_t id = 0; id < TETHER_RPC_NEAR_SPAN; id++) {
            uint32_t window = (id * 2654435761u >> (trial * 3)) % 4; /* its SM's window */
            if (trial == 3)
                window = 2; /* all on one window */
            uint32_t home = tether_rpc_near_home(flags, window, id);
            CHECK(home >= base && home < base + TETHER_RPC_NEAR_WINDOWS * TETHER_RPC_NEAR_SPAN,
                  "id %u: port %u outside the windows", id, home);
            CHECK(home < TETHER_RPC_DEVICE_PORTS_MAX && !used[home], "id %u: port %u taken twice",
                  id, home);
            if (home < TETHER_RPC_DEVICE_PORTS_MAX)
                used[home] = 1;
        }
    }
    /* The window decides the port's page of state words: SPAN words of 8 bytes each. */
    CHECK(TETHER_RPC_NEAR_SPAN * sizeof(rpc_state_t) == 4096, "a window is not one 4 KiB page");
    CHECK(tether_rpc_near_home(flags, 1, 0) - tether_rpc_near_home(flags, 0, 0) ==
              TETHER_RPC_NEAR_SPAN,
          "windows are not a page apart");
}

int main(void)
{
    test_table();
    test_choose();
    test_homes();
    return svc_test_exit("test_near");
}
