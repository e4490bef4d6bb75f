/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// host_dlopen: offload code in a library that a program without OpenMP dlopen()s (dlopen_main.c).
// Its device image registers when dlopen() runs the library's constructors and unregisters from
// its destructors at exit, after libomptarget's own clean-up has closed the plugins: the plugin
// must still be mapped then, and still able to run the device destructor below.
#include <omp.h>
#include <stdio.h>

#pragma omp declare target
struct Scale {
    int factor;
    Scale() : factor(7)
    {
    }
    ~Scale()
    {
        // The host copy's destructor runs too; device code on the x86_64 offload target may
        // call the C library.
        if (!omp_is_initial_device()) {
            printf("host_dlopen: device destructor ran\n");
            fflush(stdout);
        }
    }
};
Scale scale;
#pragma omp end declare target

extern "C" int dlopen_lib_run(int x)
{
    int r = 0, initial = 1;

#pragma omp target map(from : r, initial)
    {
        r = x * scale.factor;
        initial = omp_is_initial_device();
    }
    return initial ? -1 : r;
}
