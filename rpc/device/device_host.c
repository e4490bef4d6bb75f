/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/device/device_host.c - the host object of libtether-device.a.  The
 * device images are embedded in its .llvm.offloading section (-Xclang
 * -fembed-offload-object), where clang-linker-wrapper finds them; its host
 * code is what an OpenMP program calls on the host side of the library.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "tether/rpc.h"
#include "tether/rpc_opcodes.h"

const char tether_device_library_version[] = "tether-device 1";

/* The host fallback of a target region (offload disabled, no device) has no
 * server: what tether_rpc_call and tether_rpc_attached do there. */
int64_t tether_rpc_call(uint32_t opcode, const void *in, uint64_t in_size, void *out,
                        uint64_t out_size)
{
    (void)opcode;
    (void)in;
    (void)in_size;
    (void)out;
    (void)out_size;
    return -(int64_t)TETHER_RPC_CALL_NO_SERVER;
}

int tether_rpc_attached(void)
{
    return 0;
}

#define PLUGINS_MAX 16

struct plugin_names {
    char *name[PLUGINS_MAX];
    int n;
};

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct plugin_names *names = arg;
    (void)size;
    if (info->dlpi_name != NULL && strstr(info->dlpi_name, "libomptarget.rtl.") != NULL &&
        names->n < PLUGINS_MAX)
        names->name[names->n++] = strdup(info->dlpi_name);
    return 0;
}

tether_status_t tether_rpc_register_user(uint32_t opcode, tether_rpc_handler_t fn, void *user)
{
    typedef tether_status_t (*register_fn)(uint32_t, tether_rpc_handler_t, void *);
    struct plugin_names names = {{NULL}, 0};
    /* Names first: dlopen must not run inside dl_iterate_phdr's callback. */
    dl_iterate_phdr(collect, &names);
    int found = 0;
    tether_status_t first = TETHER_OK;
    for (int i = 0; i < names.n; i++) {
        void *h = names.name[i] ? dlopen(names.name[i], RTLD_NOW | RTLD_NOLOAD) : NULL;
        register_fn f = h ? (register_fn)dlsym(h, "tether_rtl_rpc_register") : NULL;
        if (f != NULL) {
            tether_status_t st = f(opcode, fn, user);
            if (st != TETHER_OK && first == TETHER_OK)
                first = st;
            found++;
        }
        if (h != NULL)
            dlclose(h);
        free(names.name[i]);
    }
    return found == 0 ? TETHER_ERR_NOT_FOUND : first;
}
