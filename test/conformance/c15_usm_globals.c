/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c15: declare target globals in a program that requires unified_shared_memory.  clang then
 * reaches each global on the device through a reference pointer (<name>_decl_tgt_ref_ptr) that
 * must hold the global's host address: the plugin writes it when the image loads (libomptarget
 * maps nothing for these globals under USM).  Where the device is the host (x86_64), the region
 * also reads and writes the globals; elsewhere only the addresses are compared (a GPU without
 * pageable-memory access would fault on the host address, as it does under LLVM's plugin). */

/* Before any target region, conformance.h's included. */
#pragma omp requires unified_shared_memory

#include "conformance.h"

#include <stdint.h>

int g = 42;
#pragma omp declare target(g)

double table[4] = {1.0, 2.0, 3.0, 4.0};
#pragma omp declare target link(table)

int main(void)
{
    int host_is_device = strcmp(TETHER_EXPECT_PLUGIN, "x86_64") == 0;
    int dev = omp_get_default_device();
    int r = 0;

    /* Results go to managed memory, and conf_require_tether is not used: under USM a mapped host
     * variable reaches the kernel by its host address, which a GPU without pageable-memory access
     * cannot write. */
    uintptr_t *addr = llvm_omp_target_alloc_shared(3 * sizeof(*addr), dev);
    if (addr == NULL) {
        fprintf(stderr, "FAIL: llvm_omp_target_alloc_shared on device %d\n", dev);
        return 2;
    }
    addr[2] = 1;
#pragma omp target is_device_ptr(addr) device(dev)
    {
        addr[0] = (uintptr_t)&g;
        addr[1] = (uintptr_t)&table[0];
        addr[2] = (uintptr_t)omp_is_initial_device();
    }
    struct tether_device_info info;
    if (addr[2] != 0 || tether_device_query(dev, &info) != TETHER_OK ||
        strcmp(info.plugin, TETHER_EXPECT_PLUGIN) != 0) {
        fprintf(stderr, "FAIL: device %d did not run the region through tether's %s plugin\n", dev,
                TETHER_EXPECT_PLUGIN);
        return 2;
    }
    CHECK(addr[0] == (uintptr_t)&g);
    CHECK(addr[1] == (uintptr_t)&table[0]);
    omp_target_free(addr, dev);
    if (!host_is_device) {
        return conf_exit("c15_usm_globals");
    }

#pragma omp target map(from : r)
    r = g;
    CHECK(r == 42);
    g = 7; /* one copy: the region sees the host's write without an update */
#pragma omp target map(from : r)
    r = g + (int)table[3];
    CHECK(r == 11);
#pragma omp target
    {
        g = 9;
        table[0] = -1.0;
    }
    CHECK(g == 9 && table[0] == -1.0);
    return conf_exit("c15_usm_globals");
}
