/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/demo/demo.c - `make demo`: an ordinary OpenMP offload program, built with offload targets
 * for x86_64 and (when the CUDA toolkit is present) nvptx64 sm_90.  It asks tether which plugin
 * serves each OpenMP device, picks the best one (a GPU over the host CPU), runs a small
 * workload there from page-locked buffers, checks the result and says who served it.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/tether.h"

#define N (1 << 22)

/* Higher is better: a GPU backend, then the host backend. */
static int rank_of(const struct tether_device_info *info)
{
    if (strcmp(info->plugin, "cuda") == 0 || strcmp(info->plugin, "amdgpu") == 0) {
        return 2;
    }
    return 1;
}

int main(void)
{
    struct tether_device_info info, best_info;
    int ndev = omp_get_num_devices();
    int best = -1, best_rank = 0, initial = 1, bad = 0;
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    double sum = 0.0, t0, t1;
    const float a = 2.0f;

    printf("tether demo: %d OpenMP device(s)\n", ndev);
    for (int d = 0; d < ndev; d++) {
        if (tether_device_query(d, &info) != TETHER_OK) {
            printf("  device %d: not served by tether\n", d);
            continue;
        }
        printf("  device %d: %s (tether %s plugin, local device %d)\n", d, info.name, info.plugin,
               info.local_id);
        if (rank_of(&info) > best_rank) {
            best = d;
            best_rank = rank_of(&info);
            best_info = info;
        }
    }
    if (best < 0 || x == NULL || y == NULL) {
        fprintf(stderr, "tether demo: no device is served by a tether plugin; run it with "
                        "tether-run (or `make demo`)\n");
        return 1;
    }
    printf("tether demo: running on OpenMP device %d, served by %s (tether): %s\n", best,
           best_info.library, best_info.name);

    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 1000) * 0.001f;
        y[i] = 1.0f;
    }
    /* Page-lock the inputs for the device (tether's pinned map; a real pin on GPUs). */
    if (llvm_omp_target_lock_mem(x, N * sizeof(float), best) == NULL ||
        llvm_omp_target_lock_mem(y, N * sizeof(float), best) == NULL) {
        fprintf(stderr, "tether demo: locking the buffers failed\n");
        return 1;
    }
    if (tether_device_query(best, &info) == TETHER_OK) {
        printf("tether demo: %llu pinned range(s) on the device\n",
               (unsigned long long)info.pinned_ranges);
    }

    t0 = omp_get_wtime();
#pragma omp target teams distribute parallel for device(best) map(to : x[0 : N])                  \
    map(tofrom : y[0 : N]) reduction(+ : sum) map(tofrom : sum)
    for (int i = 0; i < N; i++) {
        y[i] = a * x[i] + y[i];
        sum += y[i];
    }
    t1 = omp_get_wtime();
#pragma omp target device(best) map(from : initial)
    initial = omp_is_initial_device();

    for (int i = 0; i < N; i++) {
        float want = a * ((float)(i % 1000) * 0.001f) + 1.0f;

        bad += y[i] != want;
    }
    llvm_omp_target_unlock_mem(x, best);
    llvm_omp_target_unlock_mem(y, best);
    printf("tether demo: saxpy + sum of %d floats: sum %.1f, %d wrong element(s), %.2f ms "
           "including transfers, offloaded: %s\n",
           N, sum, bad, (t1 - t0) * 1e3, initial ? "no" : "yes");
    free(x);
    free(y);
    if (bad != 0 || initial) {
        printf("tether demo: FAIL\n");
        return 1;
    }
    printf("tether demo: PASS\n");
    return 0;
}
