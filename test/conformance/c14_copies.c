/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c14: large copies of pageable memory from several host threads at once, to every device, each
 * thread with its own odd size, verified byte for byte both ways (tether's CUDA plugin stages
 * such copies through a device's pinned buffers, which serve one copy at a time: the others
 * take the driver's path); and a device allocation freed and allocated again by every thread,
 * which the allocation cache hands back (common/plugin_pool.c). */
#include "conformance.h"

enum { THREADS = 4, ROUNDS = 3 };

int main(void)
{
    int ndev = omp_get_num_devices();
    int host = omp_get_initial_device();
    int bad = 0;

    conf_require_tether(omp_get_default_device());
#pragma omp parallel num_threads(THREADS) reduction(+ : bad)
    {
        int tid = omp_get_thread_num();
        int dev = tid % (ndev > 0 ? ndev : 1);
        size_t n = ((size_t)12 << 20) + 4096 * (size_t)tid + 7;
        unsigned char *h = malloc(n), *back = malloc(n);

        for (int r = 0; r < ROUNDS && h != NULL && back != NULL; r++) {
            void *d = omp_target_alloc(n, dev);
            int *small = omp_target_alloc(64, dev);
            if (d == NULL || small == NULL) {
                bad++;
                break;
            }
            for (size_t i = 0; i < n; i++)
                h[i] = (unsigned char)(i * 31 + (size_t)tid * 7 + (size_t)r);
            memset(back, 0, n);
            bad += omp_target_memcpy(d, h, n, 0, 0, dev, host) != 0;
            bad += omp_target_memcpy(back, d, n, 0, 0, host, dev) != 0;
            bad += memcmp(h, back, n) != 0;
            /* The small block is used by a kernel: a block handed to two threads at once would
             * show up as the other thread's value. */
#pragma omp target is_device_ptr(small) device(dev)
            small[0] = tid * 100 + r;
            int got = -1;
            bad += omp_target_memcpy(&got, small, sizeof(got), 0, 0, host, dev) != 0;
            bad += got != tid * 100 + r;
            omp_target_free(small, dev);
            omp_target_free(d, dev);
        }
        free(h);
        free(back);
    }
    CHECK(bad == 0);
    return conf_exit("c14_copies");
}
