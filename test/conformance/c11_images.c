/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c11: two device images in one process: the program's and a shared library's
 * (c11_images_lib.c), each registered by its own __tgt_register_lib. */
#include "conformance.h"

int lib_scale(int x); /* in libc11_images.so, which offloads from its own image */

#pragma omp declare target
int main_offset = 1000;
#pragma omp end declare target

int main(void)
{
    struct tether_device_info info;
    int r = 0;

    conf_require_tether(0);
    CHECK(lib_scale(5) == 15);
#pragma omp target map(from : r)
    r = main_offset + 1;
    CHECK(r == 1001);
    CHECK(lib_scale(7) == 21);
    CHECK(tether_device_query(0, &info) == TETHER_OK);
    CHECK(info.images_loaded == 2);
    return conf_exit("c11_images");
}
