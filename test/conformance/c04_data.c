/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c04: target data, enter/exit data, update to/from, is_present, mapped pointers. */
#include "conformance.h"

#define N 4096

int main(void)
{
    static float a[N];
    int dev = omp_get_default_device();
    float check = 0;

    conf_require_tether(0);
    for (int i = 0; i < N; i++) {
        a[i] = 1.0f;
    }
#pragma omp target data map(tofrom : a)
    {
        CHECK(omp_target_is_present(a, dev));
#pragma omp target
        for (int i = 0; i < N; i++) {
            a[i] += 1.0f;
        }
        /* Still mapped: the host copy is stale until update from. */
        CHECK(a[0] == 1.0f);
#pragma omp target update from(a [0:16])
        CHECK(a[0] == 2.0f && a[15] == 2.0f && a[16] == 1.0f);
        a[100] = 50.0f;
#pragma omp target update to(a [100:1])
#pragma omp target map(from : check)
        check = a[100];
        CHECK(check == 50.0f);
    }
    CHECK(!omp_target_is_present(a, dev));
    CHECK(a[N - 1] == 2.0f && a[100] == 50.0f);

    /* Unstructured lifetime and a reference count above one. */
    {
        int *v = malloc(64 * sizeof(int));
        int sum = 0;

        for (int i = 0; i < 64; i++) {
            v[i] = i;
        }
#pragma omp target enter data map(to : v [0:64])
#pragma omp target enter data map(to : v [0:64])
        CHECK(omp_target_is_present(v, dev));
        CHECK(omp_get_mapped_ptr(v, dev) != NULL);
#pragma omp target map(tofrom : sum)
        for (int i = 0; i < 64; i++) {
            sum += v[i];
        }
        CHECK(sum == 64 * 63 / 2);
#pragma omp target exit data map(release : v [0:64])
        CHECK(omp_target_is_present(v, dev)); /* one reference left */
#pragma omp target exit data map(from : v [0:64])
        CHECK(!omp_target_is_present(v, dev));
        free(v);
    }
    return conf_exit("c04_data");
}
