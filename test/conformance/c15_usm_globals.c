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
    uintptr_t g_addr = 0, table_addr = 0;
    int host_is_device = strcmp(TETHER_EXPECT_PLUGIN, "x86_64") == 0;
    int r = 0;

    conf_require_tether(0);
#pragma omp target map(from : g_addr, table_addr)
    {
        g_addr = (uintptr_t)&g;
        table_addr = (uintptr_t)&table[0];
    }
    CHECK(g_addr == (uintptr_t)&g);
    CHECK(table_addr == (uintptr_t)&table[0]);
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
