/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * offload_exit.c - exit(code) and abort() inside a target region: the output
 * printed before it appears, and the process ends with the device's status.
 *   offload_exit exit|abort
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int do_abort = argc > 1 && strcmp(argv[1], "abort") == 0;
    printf("host before the target region\n");
    fflush(stdout);
#pragma omp target map(to : do_abort)
    {
        printf("device line before %s\n", do_abort ? "abort" : "exit");
        if (do_abort)
            abort();
        exit(3);
    }
    printf("not reached\n");
    return 0;
}
