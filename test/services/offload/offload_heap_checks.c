/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * offload_heap_checks.c - the device heap's promises in a target region: posix_memalign and
 * aligned_alloc for every power of two up to 2 MiB (pointers aligned, every block usable and
 * intact), POSIX errors for bad alignments, more than 1024 live blocks over 1 MiB, and double
 * and interior frees of each size class reported once each with their address while the heap
 * stays whole.
 *
 * Prints "expect: <line>" for every line the heap must print on stderr; run_offload.sh
 * (case heap-checks) compares them with stderr's "tether: " lines.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/rpc_opcodes.h"

#pragma omp declare target
static int check_aligned(void)
{
    int errors = 0;
    enum { KMAX = 21, NSZ = 3 };
    unsigned char *p[KMAX + 1][NSZ];
    size_t n[KMAX + 1][NSZ];
    for (int k = 0; k <= KMAX; k++) {
        size_t align = (size_t)1 << k;
        size_t sizes[NSZ] = {1, align, (3u << 20) + 5};
        for (int j = 0; j < NSZ; j++) {
            void *q = NULL;
            n[k][j] = sizes[j];
            if (align >= sizeof(void *) && j != 1) {
                errors += posix_memalign(&q, align, sizes[j]) != 0;
            } else {
                q = aligned_alloc(align, sizes[j]);
            }
            p[k][j] = (unsigned char *)q;
            if (q == NULL || ((uintptr_t)q & (align - 1)) != 0) {
                errors++;
                continue;
            }
            /* A byte every 64 KiB and the last one. */
            for (size_t i = 0; i < sizes[j]; i += 65536)
                p[k][j][i] = (unsigned char)(k + j + i);
            p[k][j][sizes[j] - 1] = (unsigned char)(k + j + sizes[j] - 1);
        }
    }
    for (int k = 0; k <= KMAX; k++)
        for (int j = 0; j < NSZ; j++) {
            if (p[k][j] == NULL)
                continue;
            for (size_t i = 0; i < n[k][j]; i += 65536)
                errors += p[k][j][i] != (unsigned char)(k + j + i);
            errors += p[k][j][n[k][j] - 1] != (unsigned char)(k + j + n[k][j] - 1);
            free(p[k][j]);
        }
    return errors;
}

/* POSIX: EINVAL for an alignment that is not a power of two or not a multiple of
 * sizeof(void *), ENOMEM for a size no block has; the pointer is left alone on failure.
 * Not optimized: clang-16 -O2 takes malloc and aligned_alloc to touch no memory of the caller's
 * (errno's accesses move across the call: a host program's check of errno after glibc's
 * malloc fails sees 0 too) and an allocation whose result is only compared with NULL to
 * succeed. */
__attribute__((optnone, noinline)) static int check_errors(void)
{
    int errors = 0;
    size_t bad[] = {0, 1, 2, 4, 3, 12, 24, 48, (2u << 20) + 8};
    void *keep = (void *)&errors;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        void *q = keep;
        errors += posix_memalign(&q, bad[i], 64) != EINVAL || q != keep;
    }
    void *q = keep;
    errors += posix_memalign(&q, 64, (size_t)1 << 60) != ENOMEM || q != keep;
    size_t bad_aa[] = {0, 3, 24, (2u << 20) + 8};
    for (size_t i = 0; i < sizeof bad_aa / sizeof bad_aa[0]; i++) {
#if !defined(SVC_GPU)
        errno = 0;
        errors += aligned_alloc(bad_aa[i], 64) != NULL || errno != EINVAL;
#else
        errors += aligned_alloc(bad_aa[i], 64) != NULL;
#endif
    }
#if !defined(SVC_GPU)
    errno = 0;
    errors += malloc((size_t)1 << 61) != NULL || errno != ENOMEM;
#else
    errors += malloc((size_t)1 << 61) != NULL;
#endif
    return errors;
}

/* More than 1024 blocks over 1 MiB live at once. */
static int check_many_large(void)
{
    enum { N = 1100 };
    static unsigned char *b[N];
    size_t n = (1u << 20) + 1;
    int errors = 0;
    for (int i = 0; i < N; i++) {
        b[i] = (unsigned char *)malloc(n);
        if (b[i] == NULL) {
            errors++;
            continue;
        }
        b[i][0] = (unsigned char)i;
        b[i][n - 1] = (unsigned char)(i * 3);
    }
    for (int i = 0; i < N; i++) {
        if (b[i] == NULL)
            continue;
        errors += b[i][0] != (unsigned char)i || b[i][n - 1] != (unsigned char)(i * 3);
        free(b[i]);
    }
    return errors;
}

/* A double free and an interior free of each size class: one report each; the heap hands out
 * no block twice afterwards. */
static int check_bad_frees(void)
{
    size_t sizes[] = {48, 20000, 3u << 20};
    int errors = 0;
    for (int i = 0; i < 3; i++) {
        unsigned char *p = (unsigned char *)malloc(sizes[i]);
        if (p == NULL) {
            errors++;
            continue;
        }
        memset(p, 0x5a, sizes[i]);
        free(p + 16);
        printf("expect: tether: free(%p): not the start of a block\n", (void *)(p + 16));
        errors += p[0] != 0x5a || p[sizes[i] - 1] != 0x5a;
        free(p);
        free(p);
        printf("expect: tether: free(%p): double free\n", (void *)p);
        unsigned char *a = (unsigned char *)malloc(sizes[i]);
        unsigned char *b = (unsigned char *)malloc(sizes[i]);
        errors += a == NULL || b == NULL || a == b;
        free(a);
        free(b);
    }
    return errors;
}
#pragma omp end declare target

int main(void)
{
    int attached = 0, aligned = 0, posix = 0, many = 0, bad = 0;
#pragma omp target map(from : attached)
    attached = tether_rpc_attached();
    if (!attached) {
        fprintf(stderr, "offload_heap_checks: no RPC server attached to the image\n");
        return 1;
    }
#pragma omp target map(tofrom : aligned, posix, many, bad)
    {
        aligned = check_aligned();
        posix = check_errors();
        many = check_many_large();
        bad = check_bad_frees();
    }
    printf("expect: tether: malloc(%llu) aligned to 64: larger than the device heap's largest "
           "block (2^47 bytes); said once\n",
           1ull << 60);
    printf("heap checks: %d errors in aligned blocks, %d in POSIX errors, %d with 1100 large "
           "blocks live, %d after bad frees\n",
           aligned, posix, many, bad);
    return aligned != 0 || posix != 0 || many != 0 || bad != 0;
}
