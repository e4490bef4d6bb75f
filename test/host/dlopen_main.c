/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* host_dlopen: a program built without OpenMP dlopen()s a library that offloads
 * (dlopen_lib.cpp), like LLVM's offloading/dynamic_module_load.c.  Prints PASS when the library's
 * target region ran on the device; the test also wants exit status 0 and the device destructor's
 * line, both of which come only after main returns. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int (*run)(int);
    void *lib;
    int r;

    if (argc != 2) {
        fprintf(stderr, "usage: host_dlopen LIBRARY\n");
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW);
    if (lib == NULL) {
        fprintf(stderr, "host_dlopen: dlopen: %s\n", dlerror());
        return 1;
    }
    run = (int (*)(int))dlsym(lib, "dlopen_lib_run");
    if (run == NULL) {
        fprintf(stderr, "host_dlopen: dlsym: %s\n", dlerror());
        return 1;
    }
    r = run(3);
    if (r != 21) {
        fprintf(stderr,
                "host_dlopen: FAIL: the target region gave %d, expected 21 (-1: ran on the host)\n",
                r);
        return 1;
    }
    printf("host_dlopen: PASS\n");
    fflush(stdout);
    return 0;
}
