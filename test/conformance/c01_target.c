/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c01: target regions: offload really happens, scalars in and out, every device, if clause. */
#include "conformance.h"

int main(void)
{
    int ndev = omp_get_num_devices();
    int x = 41, y = 0, on_host = -1;

    conf_require_tether(0);
    CHECK(ndev >= 1);

#pragma omp target map(to : x) map(from : y)
    y = x + 1;
    CHECK(y == 42);

    /* Every device the plugin offers runs regions. */
    for (int d = 0; d < ndev; d++) {
        int r = 0, init = 1;

#pragma omp target device(d) map(from : r, init)
        {
            r = d * 10;
            init = omp_is_initial_device();
        }
        CHECK(r == d * 10);
        CHECK(init == 0);
    }

    /* if(false): the region runs on the host. */
#pragma omp target if (0) map(from : on_host)
    on_host = omp_is_initial_device();
    CHECK(on_host == 1);

    /* A region with many arguments (more than fit in registers). */
    {
        int a0 = 1, a1 = 2, a2 = 3, a3 = 4, a4 = 5, a5 = 6, a6 = 7, a7 = 8, a8 = 9, a9 = 10;
        int sum = 0;

#pragma omp target map(tofrom : sum) map(to : a0, a1, a2, a3, a4, a5, a6, a7, a8, a9)
        sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9;
        CHECK(sum == 55);
    }
    return conf_exit("c01_target");
}
