/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * offload_prefix.c - device output that TETHER_RPC_PREFIX marks line by line, and printf calls
 * whose output passes 4 MiB.  run_offload.sh (cases prefix, printf-big) runs it and checks.
 *
 *   offload_prefix lines       on device 0, then device 1 (TETHER_X86_64_DEVICES=2): multi-line
 *                              printf, a line made of two calls, puts, fwrite with an empty
 *                              line, fputs and fprintf to stderr, a line cut by output to the
 *                              other stream; the second region ends with a line without newline
 *   offload_prefix big         on device 0: printf("%s") of a 5 MiB string of lines, and one
 *                              line of 1100 conversions of width 4096 (4.3 MiB); the device's
 *                              return values on stderr
 *   offload_prefix expect-big  the same with the host's printf (the reference)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG_LINES 80000

#define W10 "%4096d%4096d%4096d%4096d%4096d%4096d%4096d%4096d%4096d%4096d"
#define W100 W10 W10 W10 W10 W10 W10 W10 W10 W10 W10
#define V10(v) v, v + 1, v + 2, v + 3, v + 4, v + 5, v + 6, v + 7, v + 8, v + 9
#define V100(v)                                                                                    \
    V10(v), V10(v + 10), V10(v + 20), V10(v + 30), V10(v + 40), V10(v + 50), V10(v + 60),          \
        V10(v + 70), V10(v + 80), V10(v + 90)

#pragma omp declare target
/* One line of 1100 conversions, each 4096 wide: 4,505,601 bytes from an 8 KiB format. */
static int print_wide(void)
{
    return printf(W100 W100 W100 W100 W100 W100 W100 W100 W100 W100 W100 "\n", V100(0), V100(100),
                  V100(200), V100(300), V100(400), V100(500), V100(600), V100(700), V100(800),
                  V100(900), V100(1000));
}

static void print_lines(int last)
{
    printf("one\ntwo\n");
    printf("partial");
    printf(" continued\n");
    puts("puts line");
    fwrite("fw\n\nafter empty\n", 1, 16, stdout);
    printf("%d%%\n", 100);
    fputs("err one\nerr two\n", stderr);
    fprintf(stderr, "fprintf %d\n", 7);
    printf("cut");
    fputs("other stream\n", stderr);
    printf(" by it\n");
    if (last)
        printf("no newline at the end");
}
#pragma omp end declare target

/* 80000 lines "big line NNNNNNN xxx...x\n" of 68 bytes. */
static char *big_text(size_t *len_p)
{
    size_t line = 68, n = (size_t)BIG_LINES * line;
    char *s = malloc(n + 1);
    if (s == NULL)
        return NULL;
    for (int i = 0; i < BIG_LINES; i++) {
        char *p = s + (size_t)i * line;
        int k = snprintf(p, line + 1, "big line %07d ", i);
        memset(p + k, 'x', line - 1 - (size_t)k);
        p[line - 1] = '\n';
    }
    s[n] = '\0';
    *len_p = n;
    return s;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "lines") == 0) {
        for (int dev = 0; dev < 2; dev++) {
            int last = dev == 1;
#pragma omp target device(dev) map(to : last)
            print_lines(last);
        }
        return 0;
    }
    if (strcmp(mode, "big") == 0 || strcmp(mode, "expect-big") == 0) {
        size_t len;
        char *big = big_text(&len);
        if (big == NULL)
            return 1;
        int r1, r2;
        if (strcmp(mode, "big") == 0) {
#pragma omp target map(to : big [0:len + 1]) map(from : r1, r2)
            {
                r1 = printf("%s", big);
                r2 = print_wide();
            }
        } else {
            r1 = printf("%s", big);
            r2 = print_wide();
        }
        fflush(stdout);
        fprintf(stderr, "returned %d %d\n", r1, r2);
        free(big);
        return 0;
    }
    fprintf(stderr, "usage: offload_prefix lines|big|expect-big\n");
    return 2;
}
