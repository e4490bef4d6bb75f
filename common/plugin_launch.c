/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_launch.c - kernel launches (launch_kernel): the checks of the entry and its
 * KernelArgs, the argument array, the launch geometry (LLVM 16's rules) and the launch limits
 * the environment sets (see plugin_core.h and docs/plugin-interface.md, "Launch").
 */
#include "plugin_state.h"

#include <stdlib.h>
#include <string.h>

/* ---- geometry --------------------------------------------------------------------------- */

static uint32_t min_u32(uint64_t a, uint64_t b)
{
    uint64_t m = a < b ? a : b;

    return m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}

static uint32_t env_limit(const char *name)
{
    return (uint32_t)plugin_env_int(name, 0, 0, UINT32_MAX);
}

void plugin_launch_env_read(struct plugin_launch_env *env)
{
    env->teams_thread_limit = env_limit("OMP_TEAMS_THREAD_LIMIT");
    env->team_limit = env_limit("OMP_TEAM_LIMIT");
    env->num_teams = env_limit("OMP_NUM_TEAMS");
}

void plugin_launch_geometry(const struct plugin_device_limits *limits,
                            const struct plugin_launch_env *env, uint32_t kernel_max_threads,
                            uint8_t exec_mode, const struct tgt_kernel_args *kargs,
                            uint32_t *teams_p, uint32_t *threads_p)
{
    static const struct plugin_launch_env none;
    uint64_t max_threads = limits->max_threads;
    uint64_t max_teams = limits->max_teams;
    uint64_t threads, teams;

    if (env == NULL) {
        env = &none;
    }
    if (kernel_max_threads != 0 && kernel_max_threads < max_threads) {
        max_threads = kernel_max_threads;
    }
    if (env->teams_thread_limit != 0 && env->teams_thread_limit < max_threads) {
        max_threads = env->teams_thread_limit;
    }
    if (env->team_limit != 0 && env->team_limit < max_teams) {
        max_teams = env->team_limit;
    }
    if (kargs->ThreadLimit[0] > 0) {
        threads = kargs->ThreadLimit[0];
        if (exec_mode == PLUGIN_EXEC_GENERIC) {
            threads += limits->warp_size;
        }
    } else {
        threads = limits->default_threads;
    }
    threads = min_u32(threads, max_threads);
    if (threads == 0) {
        threads = 1;
    }
    if (kargs->NumTeams[0] > 0) {
        teams = min_u32(kargs->NumTeams[0], max_teams);
    } else if (env->num_teams != 0) {
        teams = min_u32(env->num_teams, max_teams);
    } else {
        uint64_t trip_teams = UINT64_MAX;

        if (kargs->Tripcount > 0) {
            trip_teams = exec_mode == PLUGIN_EXEC_SPMD ? (kargs->Tripcount - 1) / threads + 1
                                                       : kargs->Tripcount;
        }
        teams = min_u32(min_u32(trip_teams, limits->default_teams), max_teams);
    }
    if (teams == 0) {
        teams = 1;
    }
    *teams_p = (uint32_t)teams;
    *threads_p = (uint32_t)threads;
}

static const char *mode_name(uint8_t mode)
{
    switch (mode) {
    case PLUGIN_EXEC_GENERIC:
        return "Generic";
    case PLUGIN_EXEC_SPMD:
        return "SPMD";
    default:
        return "Generic-SPMD";
    }
}

/* Arguments up to this many live on the stack (values and pointers); more are allocated. */
#define LAUNCH_STACK_ARGS 32

tether_status_t plugin_launch_kernel(struct plugin_device *dev, void *entry, void **tgt_args,
                                     const ptrdiff_t *tgt_offsets,
                                     const struct tgt_kernel_args *kargs,
                                     struct tgt_async_info *async, struct tether_error *err)
{
    const struct plugin_ops *ops = dev->plugin->ops;
    struct plugin_kernel *kernel = entry;
    void *stack_args[2 * LAUNCH_STACK_ARGS];
    struct plugin_async *pa = NULL;
    struct plugin_launch launch;
    void **args = stack_args;
    tether_status_t rc;
    uint32_t n;

    if (kernel == NULL || kernel->magic != PLUGIN_KERNEL_MAGIC || kernel->mod == NULL) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "%p is not a kernel of this plugin",
                                entry);
    }
    if (kernel->mod->dev != dev) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "kernel %s belongs to device %d",
                                kernel->name, (int)kernel->mod->dev->id);
    }
    if (kargs == NULL || (kargs->Version != 1 && kargs->Version != 2)) {
        return plugin_error_set(err, TETHER_ERR_UNSUPPORTED,
                                "kernel %s: KernelArgs version %u (tether knows 1 and 2)",
                                kernel->name, kargs ? (unsigned)kargs->Version : 0u);
    }
    n = kargs->NumArgs;
    if (n > 0 && (tgt_args == NULL || tgt_offsets == NULL)) {
        return plugin_error_set(err, TETHER_ERR_INVALID, "kernel %s: %u arguments but no array",
                                kernel->name, (unsigned)n);
    }
    if (n > LAUNCH_STACK_ARGS) {
        args = malloc(2 * (size_t)n * sizeof(*args));
        if (args == NULL) {
            return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "%u kernel arguments", (unsigned)n);
        }
    }
    /* Each parameter: TgtArgs[i] + TgtOffsets[i]; never the host-side Arg* arrays.  The pointers
     * to the values follow them, so no backend builds the array again. */
    for (uint32_t i = 0; i < n; i++) {
        args[i] = (void *)((uintptr_t)tgt_args[i] + (uintptr_t)tgt_offsets[i]);
        args[n + i] = &args[i];
    }
    memset(&launch, 0, sizeof(launch));
    plugin_launch_geometry(&dev->limits, &dev->plugin->state->launch_env, kernel->max_threads,
                           kernel->exec_mode, kargs, &launch.num_teams, &launch.num_threads);
    launch.dyn_shared_mem = kargs->Version >= 2 ? kargs->DynCGroupMem : 0;
    if (dev->plugin->state->env_shared_mem > launch.dyn_shared_mem) {
        launch.dyn_shared_mem = dev->plugin->state->env_shared_mem;
    }
    launch.num_args = n;
    launch.args = args;
    launch.arg_ptrs = args + n;
    launch.tripcount = kargs->Tripcount;
    /* Refused from a user RPC handler of this device or in a fork child on a GPU: before any
     * queue is taken. */
    rc = plugin_rpc_launch_begin(dev, err);
    if (rc != TETHER_OK) {
        goto free_args;
    }
    rc = plugin_queue_begin(dev, async, &pa, err);
    if (rc != TETHER_OK) {
        plugin_rpc_launch_end(dev, 1);
        goto free_args;
    }
    if (dev->limits.warp_size <= 1) {
        /* The host backend calls the outlined function, which forks its own teams and threads
         * through libomp; host images carry no exec mode. */
        plugin_info_log(dev->plugin, dev, PLUGIN_INFO_PLUGIN,
                        "launching kernel %s on the host, %u argument(s)%s", kernel->name,
                        (unsigned)n, async ? ", queued" : "");
    } else {
        plugin_info_log(dev->plugin, dev, PLUGIN_INFO_PLUGIN,
                        "launching kernel %s with %u teams and %u threads in %s mode, %u "
                        "argument(s)%s",
                        kernel->name, launch.num_teams, launch.num_threads,
                        mode_name(kernel->exec_mode), (unsigned)n, async ? ", queued" : "");
    }
    rc = ops->launch(dev, kernel, &launch, pa->queue, err);
    if (rc == TETHER_OK) {
        pa->launches++; /* ended when the queue is found complete */
    } else {
        plugin_rpc_launch_end(dev, 1);
    }
    rc = plugin_queue_end(dev, async, pa, rc, err);
free_args:
    if (args != stack_args) {
        free(args);
    }
    return rc;
}
