/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* copy.c - OpenMP: 1 GiB `target update to/from` of a mapped buffer, pageable and after
 * llvm_omp_target_lock_mem (which pins with tether, and does nothing with LLVM 16's plugin). */
#include "omp_common.h"

static double best_gbs(char *buf, size_t size, int to_device)
{
    double best = 0;

    for (int r = 0; r < 5; r++) {
        double t0 = bench_now_us();
        if (to_device) {
#pragma omp target update to(buf [0:size])
        } else {
#pragma omp target update from(buf [0:size])
        }
        double gbs = (double)size / ((bench_now_us() - t0) * 1e3);
        if (gbs > best)
            best = gbs;
    }
    return best;
}

/* The device really has the data: write two bytes there, read them back. */
static int check_round_trip(char *buf, size_t size)
{
#pragma omp target
    {
        buf[0] = 42;
        buf[size - 1] = 43;
    }
#pragma omp target update from(buf [0:size])
    return buf[0] == 42 && buf[size - 1] == 43;
}

/* Every byte of a pageable buffer survives the trip there and back (tether stages large pageable
 * copies through pinned buffers in chunks, common/plugin_stage.c). */
static int check_content(char *buf, size_t size)
{
    for (size_t i = 0; i < size; i++)
        buf[i] = (char)(i * 7 + (i >> 23));
#pragma omp target update to(buf [0:size])
    memset(buf, 0, size);
#pragma omp target update from(buf [0:size])
    for (size_t i = 0; i < size; i++)
        if (buf[i] != (char)(i * 7 + (i >> 23)))
            return 0;
    return 1;
}

int main(void)
{
    size_t size = BENCH_GIB;
    char *buf = bench_host_alloc(size);
    int dev = omp_get_default_device();

    omp_bench_require_gpu("copy");
#pragma omp target enter data map(alloc : buf [0:size])
    bench_fig("h2d_1g_pageable", best_gbs(buf, size, 1), "GB/s");
    bench_fig("d2h_1g_pageable", best_gbs(buf, size, 0), "GB/s");
    if (!check_content(buf, size)) {
        fprintf(stderr, "copy: a pageable buffer came back different\n");
        return 1;
    }
    void *locked = llvm_omp_target_lock_mem(buf, size, dev);
    if (locked == NULL) {
        fprintf(stderr, "copy: llvm_omp_target_lock_mem returned NULL\n");
        return 1;
    }
    bench_fig("h2d_1g_pinned", best_gbs(buf, size, 1), "GB/s");
    bench_fig("d2h_1g_pinned", best_gbs(buf, size, 0), "GB/s");
    if (!check_round_trip(buf, size)) {
        fprintf(stderr, "copy: data did not make the round trip\n");
        return 1;
    }
    llvm_omp_target_unlock_mem(buf, dev);
#pragma omp target exit data map(delete : buf [0:size])
    free(buf);
    return 0;
}
