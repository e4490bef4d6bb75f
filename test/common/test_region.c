/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/common/test_region.c - the target region a kernel name stands for (image_region_decode,
 * plugin_region_describe), as fault messages name it: clang's
 * __omp_offloading_<device id>_<file id>_<function>_l<line>[_<count>], with functions holding
 * underscores or "_l<digits>" of their own, C++ mangled names (demangled once the C++ runtime is
 * in the process, as it is under libomptarget), and names that are not clang's.
 */
#include <dlfcn.h>
#include <string.h>

#include "plugin_image.h"
#include "tcheck.h"

static void decodes(const char *kernel, const char *function, unsigned line)
{
    struct image_region r;

    memset(&r, 0, sizeof(r));
    CHECK(image_region_decode(kernel, &r));
    CHECK(r.function != NULL && r.function_len == strlen(function) &&
          strncmp(r.function, function, r.function_len) == 0);
    CHECK(r.line == line);
    if (r.function == NULL || r.function_len != strlen(function) ||
        strncmp(r.function, function, r.function_len) != 0 || r.line != line) {
        fprintf(stderr, "  %s: got \"%.*s\" line %u, want \"%s\" line %u\n", kernel,
                (int)r.function_len, r.function ? r.function : "", (unsigned)r.line, function,
                line);
    }
}

static void refuses(const char *kernel)
{
    struct image_region r = {"untouched", 9, 77};

    CHECK(!image_region_decode(kernel, &r));
    CHECK(r.line == 77 && strcmp(r.function, "untouched") == 0);
}

static void describes(const char *kernel, const char *want)
{
    char buf[256];

    plugin_region_describe(kernel, buf, sizeof(buf));
    CHECK(strcmp(buf, want) == 0);
    if (strcmp(buf, want) != 0) {
        fprintf(stderr, "  %s: \"%s\", want \"%s\"\n", kernel, buf, want);
    }
}

int main(void)
{
    /* What clang-16 makes (device id and file id in hexadecimal). */
    decodes("__omp_offloading_fe00_5124f7_main_l12", "main", 12);
    decodes("__omp_offloading_10302_bd7bc7_main_l28", "main", 28);
    decodes("__omp_offloading_fd00_2a3b_my_func_name_l7", "my_func_name", 7);
    decodes("__omp_offloading_fd00_2a3b__Z3fooi_l10", "_Z3fooi", 10);
    decodes("__omp_offloading_fd00_2a3b__ZN2ns5Klass3runEv_l123456", "_ZN2ns5Klass3runEv", 123456);
    /* Several regions on one line: _<count> after the line. */
    decodes("__omp_offloading_fd00_2a3b_main_l5_1", "main", 5);
    decodes("__omp_offloading_fd00_2a3b_main_l5_12", "main", 5);
    /* A function whose own name ends like a line, or holds digits and underscores. */
    decodes("__omp_offloading_fd00_2a3b_foo_l3_l5", "foo_l3", 5);
    decodes("__omp_offloading_fd00_2a3b_foo_l3_l5_2", "foo_l3", 5);
    decodes("__omp_offloading_fd00_2a3b_do_l_thing_l9", "do_l_thing", 9);
    decodes("__omp_offloading_fd00_2a3b_deadbeef_l9", "deadbeef", 9);
    decodes("__omp_offloading_fd00_2a3b_x_1_l9", "x_1", 9);
    decodes("__omp_offloading_fd00_2a3b___l9", "_", 9);

    /* Not clang's form. */
    refuses(NULL);
    refuses("");
    refuses("main");
    refuses("tether_raw");
    refuses("__omp_offloading_");
    refuses("__omp_offloading_fe00_5124f7_");
    refuses("__omp_offloading_fe00_5124f7_main");
    refuses("__omp_offloading_fe00_5124f7_main_l");
    refuses("__omp_offloading_fe00_5124f7_main_lx");
    refuses("__omp_offloading_fe00_5124f7__l12"); /* no function */
    refuses("__omp_offloading_fe00_5124f7_l12");  /* no function either */
    refuses("__omp_offloading_zz_5124f7_main_l12");
    refuses("__omp_offloading_fe00_main_l12"); /* no file id */
    refuses("__omp_offloading_fe00_5124f7_main_l12_");
    refuses("__omp_offloading_fe00_5124f7_main_l12_x");
    refuses("__omp_offloading_fe00_5124f7_main_l99999999999"); /* line too long */

    /* The text of messages. */
    describes("__omp_offloading_fe00_5124f7_main_l12", "the target region in main at line 12");
    describes("__omp_offloading_fd00_2a3b_my_func_name_l7_1",
              "the target region in my_func_name at line 7");
    describes("tether_raw", "kernel tether_raw");
    /* C++: mangled until the C++ runtime is in the process (a sanitizer's runtime may have
     * brought it already), then demangled. */
    if (dlsym(RTLD_DEFAULT, "__cxa_demangle") == NULL) {
        describes("__omp_offloading_fd00_2a3b__Z3fooi_l10",
                  "the target region in _Z3fooi at line 10");
    }
    if (dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL) != NULL) {
        describes("__omp_offloading_fd00_2a3b__Z3fooi_l10",
                  "the target region in foo(int) at line 10");
        describes("__omp_offloading_fd00_2a3b__ZN2ns5Klass3runEv_l8",
                  "the target region in ns::Klass::run() at line 8");
        /* Not a valid mangling: shown as it is. */
        describes("__omp_offloading_fd00_2a3b__Zzz_l8", "the target region in _Zzz at line 8");
    } else {
        fprintf(stderr, "libstdc++.so.6 not found: demangling not checked\n");
    }
    return tcheck_exit("test_region");
}
