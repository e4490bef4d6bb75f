/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * common/plugin_env.c - the environment service: every knob tether's plugins read goes through
 * these (plugin.h), which are rpc/server's reader (rpc_env.h), so that every knob follows one
 * rule; and the two knobs logging itself reads.
 */
#include "plugin_state.h"

#include "../rpc/server/rpc_env.h"

#include <stdarg.h>
#include <stdio.h>

int64_t plugin_env_int(const char *name, int64_t def, int64_t min, int64_t max)
{
    return tether_env_int(name, def, min, max);
}

bool plugin_env_bool(const char *name, bool def)
{
    return tether_env_bool(name, def);
}

int plugin_env_choice(const char *name, const char *const *choices, int def)
{
    return tether_env_choice(name, choices, def);
}

int plugin_env_wait(void)
{
    return (int)tether_env_wait();
}

const char *plugin_env_str(const char *name)
{
    return tether_env_str(name);
}

const char *plugin_env_pick(const char *name, const char *llvm_name)
{
    return tether_env_pick(name, llvm_name);
}

void plugin_env_warn(const char *name, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    tether_env_warn(name, "%s", line);
}

/* TETHER_DEBUG, or LLVM's name for it, LIBOMPTARGET_DEBUG (TETHER_DEBUG wins when both are
 * set). */
bool plugin_env_debug(void)
{
    return plugin_env_bool(plugin_env_pick("TETHER_DEBUG", "LIBOMPTARGET_DEBUG"), false);
}

/* LIBOMPTARGET_INFO: a 32-bit mask (-1: every bit, as libomptarget reads it). */
uint32_t plugin_env_info(void)
{
    return (uint32_t)plugin_env_int("LIBOMPTARGET_INFO", 0, INT32_MIN, UINT32_MAX);
}
