/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/common/test_launch.c - common/plugin_launch.c: launch geometry (LLVM 16's rules), the
 * launch limits the environment sets, and the argument array a backend gets (values
 * TgtArgs[i] + TgtOffsets[i] and the pointers to them, on the stack or allocated, built once).
 * argv[1]: the real x86_64 image (test/common/image_src.c), whose kernel handle the launches use.
 */
#include <stdlib.h>
#include <string.h>

#include "fault_ops.h"
#include "plugin_core.h"
#include "real_image.h"
#include "tcheck.h"

extern const struct plugin_ops plugin_backend_ops; /* the host backend */

/* An NVIDIA GPU's limits as the CUDA backend reports them. */
static const struct plugin_device_limits nv_limits = {.warp_size = 32,
                                                      .max_threads = 1024,
                                                      .max_teams = 65536,
                                                      .default_threads = 128,
                                                      .default_teams = 3200};

static void test_geometry(void)
{
    const struct plugin_device_limits nv = nv_limits;
    struct tgt_kernel_args ka;
    uint32_t teams, threads;

    memset(&ka, 0, sizeof(ka));
    ka.Version = 2;
    /* Nothing given: default threads, default teams. */
    plugin_launch_geometry(&nv, NULL, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(threads == 128 && teams == 3200);
    /* thread_limit in generic mode adds a warp (the main thread's). */
    ka.ThreadLimit[0] = 64;
    plugin_launch_geometry(&nv, NULL, 0, PLUGIN_EXEC_GENERIC, &ka, &teams, &threads);
    CHECK(threads == 96);
    plugin_launch_geometry(&nv, NULL, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(threads == 64);
    /* Capped by the device and by the kernel. */
    ka.ThreadLimit[0] = 5000;
    plugin_launch_geometry(&nv, NULL, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(threads == 1024);
    plugin_launch_geometry(&nv, NULL, 256, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(threads == 256);
    /* Trip count: SPMD one iteration per thread, generic one per team, capped at default. */
    ka.ThreadLimit[0] = 0;
    ka.Tripcount = 1000;
    plugin_launch_geometry(&nv, NULL, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(teams == 8); /* (1000 - 1) / 128 + 1 */
    plugin_launch_geometry(&nv, NULL, 0, PLUGIN_EXEC_GENERIC, &ka, &teams, &threads);
    CHECK(teams == 1000);
    ka.Tripcount = 10000000;
    plugin_launch_geometry(&nv, NULL, 0, PLUGIN_EXEC_GENERIC_SPMD, &ka, &teams, &threads);
    CHECK(teams == 3200);
    /* num_teams wins, capped by the device. */
    ka.NumTeams[0] = 7;
    plugin_launch_geometry(&nv, NULL, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(teams == 7);
    ka.NumTeams[0] = 1u << 20;
    plugin_launch_geometry(&nv, NULL, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(teams == 65536);
    /* Constructor kernels: version 1, one team of one thread. */
    memset(&ka, 0, sizeof(ka));
    ka.Version = 1;
    ka.NumTeams[0] = 1;
    ka.ThreadLimit[0] = 1;
    plugin_launch_geometry(&nv, NULL, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(teams == 1 && threads == 1);
}

/* OMP_TEAMS_THREAD_LIMIT, OMP_TEAM_LIMIT, OMP_NUM_TEAMS: read from the environment, then applied
 * as LLVM 16's CUDA/AMDGPU plugins do. */
static void test_geometry_env(void)
{
    const struct plugin_device_limits nv = nv_limits;
    struct plugin_launch_env env;
    struct tgt_kernel_args ka;
    uint32_t teams, threads;

    /* Unset, empty, zero, negative and garbage all mean "not set". */
    unsetenv("OMP_TEAMS_THREAD_LIMIT");
    setenv("OMP_TEAM_LIMIT", "0", 1);
    setenv("OMP_NUM_TEAMS", "-3", 1);
    plugin_launch_env_read(&env);
    CHECK(env.teams_thread_limit == 0 && env.team_limit == 0 && env.num_teams == 0);
    setenv("OMP_NUM_TEAMS", "7x", 1);
    setenv("OMP_TEAMS_THREAD_LIMIT", "", 1);
    plugin_launch_env_read(&env);
    CHECK(env.teams_thread_limit == 0 && env.num_teams == 0);

    setenv("OMP_NUM_TEAMS", "7", 1);
    setenv("OMP_TEAMS_THREAD_LIMIT", "64", 1);
    unsetenv("OMP_TEAM_LIMIT");
    plugin_launch_env_read(&env);
    CHECK(env.num_teams == 7 && env.teams_thread_limit == 64 && env.team_limit == 0);
    unsetenv("OMP_NUM_TEAMS");
    unsetenv("OMP_TEAMS_THREAD_LIMIT");

    /* No clauses: OMP_NUM_TEAMS teams of OMP_TEAMS_THREAD_LIMIT threads (not 3200 x 128). */
    memset(&ka, 0, sizeof(ka));
    ka.Version = 2;
    plugin_launch_geometry(&nv, &env, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(teams == 7 && threads == 64);
    /* OMP_NUM_TEAMS replaces sizing by trip count, in every mode. */
    ka.Tripcount = 1000;
    plugin_launch_geometry(&nv, &env, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(teams == 7 && threads == 64);
    plugin_launch_geometry(&nv, &env, 0, PLUGIN_EXEC_GENERIC, &ka, &teams, &threads);
    CHECK(teams == 7 && threads == 64);
    /* A num_teams clause wins over OMP_NUM_TEAMS; OMP_TEAMS_THREAD_LIMIT caps thread_limit
     * clauses (generic mode's extra warp included) and the kernel's own limit still applies. */
    ka.NumTeams[0] = 100;
    ka.ThreadLimit[0] = 256;
    plugin_launch_geometry(&nv, &env, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(teams == 100 && threads == 64);
    ka.ThreadLimit[0] = 48;
    plugin_launch_geometry(&nv, &env, 0, PLUGIN_EXEC_GENERIC, &ka, &teams, &threads);
    CHECK(threads == 64); /* 48 + 32, capped */
    plugin_launch_geometry(&nv, &env, 32, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(threads == 32);

    /* OMP_TEAM_LIMIT caps num_teams clauses, OMP_NUM_TEAMS and trip-count sizing. */
    memset(&env, 0, sizeof(env));
    env.team_limit = 10;
    plugin_launch_geometry(&nv, &env, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(teams == 10 && threads == 48);
    ka.NumTeams[0] = 0;
    ka.ThreadLimit[0] = 0;
    plugin_launch_geometry(&nv, &env, 0, PLUGIN_EXEC_GENERIC, &ka, &teams, &threads);
    CHECK(teams == 10 && threads == 128);
    ka.Tripcount = 0;
    plugin_launch_geometry(&nv, &env, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(teams == 10);
    env.num_teams = 50;
    plugin_launch_geometry(&nv, &env, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(teams == 10);
    /* A limit above the device's changes nothing. */
    env.team_limit = 1u << 30;
    env.teams_thread_limit = 1u << 30;
    env.num_teams = 0;
    ka.Tripcount = 10000000;
    plugin_launch_geometry(&nv, &env, 0, PLUGIN_EXEC_GENERIC, &ka, &teams, &threads);
    CHECK(teams == 3200 && threads == 128);
    ka.NumTeams[0] = 1u << 20;
    ka.ThreadLimit[0] = 5000;
    plugin_launch_geometry(&nv, &env, 0, PLUGIN_EXEC_SPMD, &ka, &teams, &threads);
    CHECK(teams == 65536 && threads == 1024);
}

/* What the backend's launch slot saw (fault_ops' launch hook stands in for the backend). */
static struct {
    uint32_t num_args;
    bool ptrs_ok; /* arg_ptrs[i] == &args[i] for every i */
    uintptr_t args[64];
} seen;

static tether_status_t launch_hook(const struct plugin_launch *launch)
{
    seen.num_args = launch->num_args;
    seen.ptrs_ok = launch->num_args == 0 || (launch->args != NULL && launch->arg_ptrs != NULL);
    for (uint32_t i = 0; i < launch->num_args && i < 64; i++) {
        seen.args[i] = (uintptr_t)launch->args[i];
        seen.ptrs_ok &= launch->arg_ptrs[i] == &launch->args[i];
    }
    return TETHER_OK;
}

/* Few arguments (on the stack) and many (allocated): value i is TgtArgs[i] + TgtOffsets[i], and
 * arg_ptrs points at the values. */
static void test_args(const char *path)
{
    struct tether_error err = {{0}};
    struct tgt_target_table *table = NULL;
    struct plugin_device *dev = NULL;
    struct plugin *p = NULL;
    struct tgt_kernel_args ka;
    struct real_image ri;
    void *targs[40];
    ptrdiff_t offs[40];
    static const uint32_t counts[] = {0, 3, 32, 33, 40};

    REQUIRE(real_image_open(path, &ri) && ri.kernel >= 0);
    fault_reset(&plugin_backend_ops, 0);
    fault.launch_hook = launch_hook;
    REQUIRE_RC(plugin_create(&fault_ops, &p, &err), TETHER_OK);
    REQUIRE_RC(plugin_device_get(p, 0, &dev, &err), TETHER_OK);
    REQUIRE_RC(plugin_image_load(dev, &ri.dimg, &table, &err), TETHER_OK);
    for (int i = 0; i < 40; i++) {
        targs[i] = (char *)(uintptr_t)0x100000 + (uintptr_t)i * 0x1000;
        offs[i] = i * 8 - 16;
    }
    memset(&ka, 0, sizeof(ka));
    ka.Version = 2;
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        memset(&seen, 0, sizeof(seen));
        ka.NumArgs = counts[c];
        CHECK_RC(plugin_launch_kernel(dev, table->EntriesBegin[ri.kernel].addr, targs, offs, &ka,
                                      NULL, &err),
                 TETHER_OK);
        CHECK_EQ(seen.num_args, counts[c]);
        CHECK(seen.ptrs_ok);
        for (uint32_t i = 0; i < counts[c]; i++) {
            CHECK_EQ(seen.args[i], 0x100000 + (intptr_t)i * 0x1000 + ((intptr_t)i * 8 - 16));
        }
    }
    fault.launch_hook = NULL;
    plugin_destroy(p);
    CHECK(fault_live() == 0);
    real_image_close(&ri);
}

int main(int argc, char **argv)
{
    test_geometry();
    test_geometry_env();
    if (argc > 1) {
        test_args(argv[1]);
    }
    return tcheck_exit("test_launch");
}
