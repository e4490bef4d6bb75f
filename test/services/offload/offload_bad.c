/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * offload_bad.c - bad printf input from a target region: unknown
 * conversions, an absurd width, a NULL %s, %n, length modifiers glibc reads
 * oddly, numbered and unnumbered arguments mixed, plus puts/fputs/fwrite to
 * both streams.  run_offload.sh checks the markers in the output.
 */
#include <stdio.h>

#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-extra-args"

int main(void)
{
#pragma omp target
    {
        int n = 0;
        printf("bad1 [%y] [%d]\n", 5);
        printf("bad2 [%99999999d]\n", 7);
        printf("bad3 [%s] [%.2s]\n", (char *)0, (char *)0);
        printf("bad4 [%d%n] [%5%]\n", 1, &n);
        printf("bad5 [%hf] [%Ld] [%d]\n", 1.0, 2LL, 3); /* glibc reads these: no marker */
        printf("bad6 [%1$d] [%d]\n", 1, 2);             /* numbered and unnumbered mixed */
        puts("puts line");
        fputs("fputs to stderr\n", stderr);
        fwrite("fwrite line\n", 1, 12, stdout);
#if !defined(SVC_GPU) /* fprintf is variadic: clang-16 cannot compile it for a GPU */
        fprintf(stderr, "fprintf to stderr %d\n", 42);
#endif
    }
    return 0;
}
