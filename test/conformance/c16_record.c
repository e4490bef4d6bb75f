/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c16: LIBOMPTARGET_RECORD asks LLVM 16's plugins to record kernels into files; tether's plugins
 * do not record, and say so once (not per image, device or launch) when the first image loads.
 * The variable is set before the first target region, so before any image is loaded; the
 * program has two images (c16_record_lib.c is a shared library). */
#include "conformance.h"

int c16_lib_twice(int x);

int main(void)
{
    struct conf_capture cap;
    char out[8192];
    const char *first, *key = "LIBOMPTARGET_RECORD is set";
    int n = omp_get_num_devices();
    int sum = 0;

    setenv("LIBOMPTARGET_RECORD", "on", 1);
    conf_capture_begin(&cap);
    conf_require_tether(0);
    for (int d = 0; d < n; d++) {
        for (int i = 0; i < 3; i++) {
            int r = 0;

#pragma omp target device(d) map(from : r)
            r = i + 1;
            sum += r;
        }
    }
    sum += c16_lib_twice(5);
    conf_capture_end(&cap, out, sizeof(out));
    fputs(out, stderr);
    CHECK(sum == 6 * n + 10);
    first = strstr(out, key);
    CHECK(first != NULL);
    CHECK(first != NULL && strstr(first + 1, key) == NULL);
    CHECK(first != NULL && strstr(out, "tether") != NULL && strstr(first, "do not record") != NULL);
    return conf_exit("c16_record");
}
