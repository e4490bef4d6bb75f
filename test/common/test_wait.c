/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_wait.c - common/plugin_wait.c, the waiting policy, on a fake device and a fake clock: each
 * poll advances the clock by POLL_NS, a block jumps it to the work's end plus WAKE_NS, so every
 * figure is exact and nothing depends on the machine's speed.  What it holds the policy to:
 *  - work done at the first poll: one poll, nothing learnt;
 *  - waits that repeat and end within the maximum window (an empty region's 8 us, 50 us, 100 us,
 *    1 ms) are polled for, never blocked, once learnt, also after a phase of other waits;
 *  - a long wait (2 s) costs at most the window in polling, then one block; waits that are all
 *    long (2 s, 5 ms) shrink the window to the minimum; short waits mixed with long ones keep it;
 *  - waits that repeat and last 300 us or more nap first (and are counted as such): a 1 ms wait
 *    polls at most 30% of it
 *    and ends as soon as its work (not late); 100 us waits never nap; a change from 1 ms waits
 *    to 300 us ones makes exactly one wait late (by at most its nap), then they nap again;
 *  - TETHER_WAIT: spin never blocks, block polls once, a bad value warns once and is adaptive;
 *  - errors of poll and block come back as they are.
 */
#include <pthread.h>
#include <stdlib.h>

#include "capture.h"
#include "plugin_wait.h"
#include "tcheck.h"

#define US 1000ull
#define MS (1000ull * US)
#define POLL_NS 500ull     /* what one poll takes */
#define WAKE_NS (15 * US)  /* how late a blocked thread wakes */
#define SLACK_NS (50 * US) /* how late a nap ends */

/* The fake device: one piece of work at a time. */
static struct {
    uint64_t now;     /* the fake clock */
    uint64_t done_at; /* when the work completes */
    int polls, blocks, naps;
    uint64_t polled_ns; /* clock time spent polling: the CPU a wait costs */
    int fail_poll;      /* > 0: that poll (1-based, of the current wait) fails */
    bool fail_block;
} fake;

static uint64_t fake_clock(void)
{
    return fake.now;
}

static tether_status_t fake_poll(void *ctx, bool *done_p, struct tether_error *err)
{
    (void)ctx;
    fake.polls++;
    fake.now += POLL_NS;
    fake.polled_ns += POLL_NS;
    if (fake.polls == fake.fail_poll) {
        snprintf(err->msg, sizeof(err->msg), "poll failed");
        return TETHER_ERR_DRIVER;
    }
    *done_p = fake.now >= fake.done_at;
    return TETHER_OK;
}

static tether_status_t fake_block(void *ctx, struct tether_error *err)
{
    (void)ctx;
    fake.blocks++;
    if (fake.now < fake.done_at) {
        fake.now = fake.done_at + WAKE_NS;
    }
    if (fake.fail_block) {
        snprintf(err->msg, sizeof(err->msg), "block failed");
        return TETHER_ERR_DRIVER;
    }
    return TETHER_OK;
}

static void fake_sleep(uint64_t ns)
{
    fake.naps++;
    fake.now += ns + SLACK_NS;
}

static void fresh(struct plugin_wait *w, enum plugin_wait_mode mode)
{
    plugin_wait_init(w);
    w->mode = mode;
    w->clock = fake_clock;
    w->sleep = fake_sleep;
}

/* Start work lasting `ns` (from now) and wait for it; the wait's polls, blocks and polling time
 * are in `fake`. */
static tether_status_t wait_for(struct plugin_wait *w, uint64_t ns)
{
    struct tether_error err = {0};

    fake.done_at = fake.now + ns;
    fake.polls = fake.blocks = fake.naps = 0;
    fake.polled_ns = 0;
    return plugin_wait(w, fake_poll, fake_block, NULL, &err);
}

/* `n` waits of `ns` each; how many of them blocked. */
static int repeat(struct plugin_wait *w, uint64_t ns, int n)
{
    int blocked = 0;

    for (int i = 0; i < n; i++) {
        REQUIRE_RC(wait_for(w, ns), TETHER_OK);
        blocked += fake.blocks;
    }
    return blocked;
}

static void test_first_poll(void)
{
    struct plugin_wait w;

    fresh(&w, PLUGIN_WAIT_ADAPTIVE);
    CHECK_EQ(plugin_wait_window(&w), PLUGIN_WAIT_MAX_NS); /* fresh: the longest window */
    CHECK_RC(wait_for(&w, 0), TETHER_OK);
    CHECK_EQ(fake.polls, 1);
    CHECK_EQ(fake.blocks, 0);
    CHECK_EQ(atomic_load(&w.typical_ns), PLUGIN_WAIT_MAX_NS / 2); /* nothing learnt */
    CHECK_EQ(atomic_load(&w.long_share), 0);
}

/* Repeated short and medium waits are polled for: no block, and the window follows them. */
static void test_repeating(void)
{
    static const uint64_t durations[] = {8 * US, 50 * US, 100 * US, 1 * MS, 1900 * US / 2};

    for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
        struct plugin_wait w;
        uint64_t d = durations[i];

        fresh(&w, PLUGIN_WAIT_ADAPTIVE);
        CHECK_EQ(repeat(&w, d, 200), 0);
        /* the window has come to about twice the wait, at least the minimum */
        uint64_t want = 2 * d < PLUGIN_WAIT_MIN_NS ? PLUGIN_WAIT_MIN_NS : 2 * d;
        CHECK(plugin_wait_window(&w) + 4 * POLL_NS >= want &&
              plugin_wait_window(&w) <= want + 4 * POLL_NS);
        /* each wait polled only until its work was done */
        CHECK(fake.polled_ns <= d + POLL_NS);
    }
}

/* Waits of 300 us and more that repeat nap first, and end on time; shorter ones never nap. */
static void test_nap(void)
{
    struct plugin_wait w;
    int naps = 0, late = 0;

    fresh(&w, PLUGIN_WAIT_ADAPTIVE);
    for (int i = 0; i < 200; i++) {
        REQUIRE_RC(wait_for(&w, 100 * US), TETHER_OK);
        naps += fake.naps;
    }
    CHECK_EQ(naps, 0);
    CHECK_EQ(plugin_wait_nap(&w), 0);

    fresh(&w, PLUGIN_WAIT_ADAPTIVE);
    CHECK_EQ(repeat(&w, 1 * MS, 200), 0);
    CHECK_EQ(atomic_load(&w.waits), 200); /* plugin_wait_report's counts */
    CHECK(atomic_load(&w.napped) >= 150 && atomic_load(&w.napped) < 200);
    CHECK_EQ(atomic_load(&w.blocked), 0);
    CHECK_EQ(fake.naps, 1);
    CHECK(fake.polled_ns <= 3 * MS / 10);      /* polled for at most 30% of the wait */
    CHECK(fake.now - fake.done_at <= POLL_NS); /* and not late */
    CHECK(plugin_wait_nap(&w) >= 700 * US && plugin_wait_nap(&w) < 1 * MS);

    /* Shorter waits from now on: one is late (by at most its nap), then they nap again. */
    uint64_t nap = plugin_wait_nap(&w);
    for (int i = 0; i < 100; i++) {
        REQUIRE_RC(wait_for(&w, 300 * US), TETHER_OK);
        if (fake.now - fake.done_at > POLL_NS) {
            late++;
            CHECK(fake.now - fake.done_at <= nap + SLACK_NS);
        }
    }
    CHECK_EQ(late, 1);
    CHECK_EQ(fake.naps, 1);
    CHECK(fake.polled_ns <= 300 * US / 2);
}

/* A 2 s wait after short ones: polled for the window only, then one block. */
static void test_long_after_short(void)
{
    struct plugin_wait w;
    uint64_t window;

    fresh(&w, PLUGIN_WAIT_ADAPTIVE);
    CHECK_EQ(repeat(&w, 50 * US, 100), 0);
    window = plugin_wait_window(&w);
    CHECK(window < 2 * 55 * US);
    CHECK_RC(wait_for(&w, 2000 * MS), TETHER_OK);
    CHECK_EQ(fake.blocks, 1);
    CHECK(fake.polled_ns <= window + 2 * POLL_NS);
    /* one long wait does not make the short ones block */
    CHECK_EQ(repeat(&w, 50 * US, 10), 0);
}

/* Waits that are all long: at most the maximum each at first, the minimum soon. */
static void test_all_long(void)
{
    static const uint64_t durations[] = {2000 * MS, 5 * MS};

    for (size_t i = 0; i < 2; i++) {
        struct plugin_wait w;
        uint64_t total = 0;
        int blocked = 0;

        fresh(&w, PLUGIN_WAIT_ADAPTIVE);
        for (int k = 0; k < 40; k++) {
            REQUIRE_RC(wait_for(&w, durations[i]), TETHER_OK);
            CHECK(fake.polled_ns <= PLUGIN_WAIT_MAX_NS + 2 * POLL_NS);
            if (k >= 12) {
                CHECK(fake.polled_ns <= PLUGIN_WAIT_MIN_NS + 2 * POLL_NS);
            }
            total += fake.polled_ns;
            blocked += fake.blocks;
        }
        CHECK_EQ(blocked, 40);
        CHECK(total <=
              12 * (PLUGIN_WAIT_MAX_NS + 2 * POLL_NS) + 28 * (PLUGIN_WAIT_MIN_NS + 2 * POLL_NS));
        CHECK_EQ(plugin_wait_window(&w), PLUGIN_WAIT_MIN_NS);
    }
}

/* Short and long waits in turn: the short ones stay polled, the long ones cost the window. */
static void test_mixed(void)
{
    struct plugin_wait w;
    int short_blocked = 0;

    fresh(&w, PLUGIN_WAIT_ADAPTIVE);
    for (int k = 0; k < 100; k++) {
        REQUIRE_RC(wait_for(&w, 1 * MS), TETHER_OK);
        short_blocked += fake.blocks;
        REQUIRE_RC(wait_for(&w, 2000 * MS), TETHER_OK);
        CHECK_EQ(fake.blocks, 1);
        CHECK(fake.polled_ns <= PLUGIN_WAIT_MAX_NS + 2 * POLL_NS);
    }
    CHECK_EQ(short_blocked, 0);

    fresh(&w, PLUGIN_WAIT_ADAPTIVE);
    for (int k = 0; k < 100; k++) {
        REQUIRE_RC(wait_for(&w, 10 * US), TETHER_OK);
        CHECK(k < 2 || fake.blocks == 0);
        REQUIRE_RC(wait_for(&w, 2000 * MS), TETHER_OK);
        CHECK(k < 60 || fake.polled_ns <= 2 * 11 * US + 2 * POLL_NS);
    }
}

/* The waits change: it learns the new ones within a few waits. */
static void test_phases(void)
{
    struct plugin_wait w;
    int blocked;

    /* long, then short: a few short waits block, then none */
    fresh(&w, PLUGIN_WAIT_ADAPTIVE);
    repeat(&w, 2000 * MS, 30);
    CHECK_EQ(plugin_wait_window(&w), PLUGIN_WAIT_MIN_NS);
    blocked = repeat(&w, 50 * US, 5);
    CHECK(blocked >= 1 && blocked <= 5);
    CHECK_EQ(repeat(&w, 50 * US, 50), 0);

    /* empty regions, then 1 ms kernels: some block while it learns, then none */
    fresh(&w, PLUGIN_WAIT_ADAPTIVE);
    CHECK_EQ(repeat(&w, 8 * US, 300), 0);
    CHECK_EQ(plugin_wait_window(&w), PLUGIN_WAIT_MIN_NS);
    blocked = repeat(&w, 1 * MS, 40);
    CHECK(blocked >= 1 && blocked <= 40);
    CHECK_EQ(repeat(&w, 1 * MS, 100), 0);
}

static void test_modes(void)
{
    struct plugin_wait w;

    /* spin: never blocks, however long the work */
    fresh(&w, PLUGIN_WAIT_SPIN);
    CHECK_RC(wait_for(&w, 100 * MS), TETHER_OK);
    CHECK_EQ(fake.blocks, 0);
    CHECK(fake.now >= fake.done_at);
    CHECK_EQ(fake.polls, (int)(100 * MS / POLL_NS));
    CHECK_EQ(repeat(&w, 2000 * MS, 3), 0);

    /* block: one poll, then the block */
    fresh(&w, PLUGIN_WAIT_BLOCK);
    CHECK_RC(wait_for(&w, 50 * US), TETHER_OK);
    CHECK_EQ(fake.polls, 1);
    CHECK_EQ(fake.blocks, 1);
    CHECK_RC(wait_for(&w, 0), TETHER_OK); /* done at the first poll: no block */
    CHECK_EQ(fake.polls, 1);
    CHECK_EQ(fake.blocks, 0);
}

static void test_errors(void)
{
    struct plugin_wait w;
    struct tether_error err = {0};
    enum plugin_wait_mode modes[] = {PLUGIN_WAIT_ADAPTIVE, PLUGIN_WAIT_SPIN, PLUGIN_WAIT_BLOCK};

    for (int m = 0; m < 3; m++) {
        fresh(&w, modes[m]);
        /* the first poll fails (every mode polls once) */
        fake.fail_poll = 1;
        fake.done_at = fake.now + 1 * MS;
        fake.polls = fake.blocks = 0;
        CHECK_RC(plugin_wait(&w, fake_poll, fake_block, NULL, &err), TETHER_ERR_DRIVER);
        CHECK_MSG(err.msg, "poll failed");
        CHECK_EQ(fake.blocks, 0);
        fake.fail_poll = 0;
    }
    /* a later poll fails: no block after it */
    fresh(&w, PLUGIN_WAIT_ADAPTIVE);
    fake.fail_poll = 3;
    fake.done_at = fake.now + 1 * MS;
    fake.polls = fake.blocks = 0;
    CHECK_RC(plugin_wait(&w, fake_poll, fake_block, NULL, &err), TETHER_ERR_DRIVER);
    CHECK_EQ(fake.polls, 3);
    CHECK_EQ(fake.blocks, 0);
    fake.fail_poll = 0;
    /* the block fails: its error comes back, and nothing is learnt from it */
    fresh(&w, PLUGIN_WAIT_ADAPTIVE);
    fake.fail_block = true;
    CHECK_RC(plugin_wait(&w, fake_poll, fake_block, NULL, &err), TETHER_OK); /* done: no block */
    CHECK_RC(wait_for(&w, 2000 * MS), TETHER_ERR_DRIVER);
    CHECK_EQ(fake.blocks, 1);
    CHECK_EQ(atomic_load(&w.long_share), 0);
    fake.fail_block = false;
}

/* TETHER_WAIT through common's environment service. */
static void test_env(void)
{
    static const struct {
        const char *value;
        enum plugin_wait_mode mode;
    } cases[] = {{"spin", PLUGIN_WAIT_SPIN},
                 {"BLOCK", PLUGIN_WAIT_BLOCK},
                 {"Adaptive", PLUGIN_WAIT_ADAPTIVE},
                 {"", PLUGIN_WAIT_ADAPTIVE}};
    struct plugin_wait w;
    struct capture cap;
    char out[1024];

    unsetenv("TETHER_WAIT");
    plugin_wait_init(&w);
    CHECK_EQ(w.mode, PLUGIN_WAIT_ADAPTIVE);
    CHECK(w.clock == plugin_wait_clock);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        setenv("TETHER_WAIT", cases[i].value, 1);
        plugin_wait_init(&w);
        CHECK_EQ(w.mode, cases[i].mode);
    }
    /* a bad value: adaptive, and one warning naming the knob and the value, once */
    setenv("TETHER_WAIT", "sleepy", 1);
    capture_begin(&cap, 2);
    plugin_wait_init(&w);
    plugin_wait_init(&w);
    capture_end(&cap, out, sizeof(out));
    CHECK_EQ(w.mode, PLUGIN_WAIT_ADAPTIVE);
    CHECK_MSG(out, "TETHER_WAIT=sleepy is not one of adaptive, spin, block; using adaptive");
    CHECK(strstr(out, "TETHER_WAIT") != NULL &&
          strstr(strstr(out, "TETHER_WAIT") + 1, "TETHER_WAIT=") == NULL);
    unsetenv("TETHER_WAIT");
}

/* Many threads record and read at once (under TSan: no race, only relaxed atomics). */
static void *hammer(void *arg)
{
    struct plugin_wait *w = arg;

    for (int i = 0; i < 20000; i++) {
        plugin_wait_record(w, (uint64_t)(i % 7 == 0 ? 3 * MS : (uint64_t)(i % 100) * US));
        CHECK(plugin_wait_window(w) >= PLUGIN_WAIT_MIN_NS &&
              plugin_wait_window(w) <= PLUGIN_WAIT_MAX_NS);
    }
    return NULL;
}

static void test_threads(void)
{
    struct plugin_wait w;
    pthread_t t[4];

    fresh(&w, PLUGIN_WAIT_ADAPTIVE);
    for (int i = 0; i < 4; i++) {
        REQUIRE(pthread_create(&t[i], NULL, hammer, &w) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
    }
    CHECK(atomic_load(&w.long_share) <= PLUGIN_WAIT_SHARE_ONE);
}

int main(void)
{
    test_first_poll();
    test_repeating();
    test_nap();
    test_long_after_short();
    test_all_long();
    test_mixed();
    test_phases();
    test_modes();
    test_errors();
    test_env();
    test_threads();
    return tcheck_exit("test_wait");
}
