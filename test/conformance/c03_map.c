/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c03: map types (to, from, tofrom, alloc, delete, always), array sections, struct members,
 * pointers to dynamically allocated arrays. */
#include "conformance.h"

struct particle {
    double pos[3];
    int id;
    double *history; /* dynamically allocated, mapped as a section */
    int nhist;
};

int main(void)
{
    int arr[100];
    int *heap = malloc(1000 * sizeof(int));
    struct particle p;

    conf_require_tether(0);
    for (int i = 0; i < 100; i++) {
        arr[i] = i;
    }
    /* Array section: only [10, 30) goes; the device writes it back. */
#pragma omp target map(tofrom : arr [10:20])
    for (int i = 10; i < 30; i++) {
        arr[i] *= 2;
    }
    CHECK(arr[9] == 9 && arr[10] == 20 && arr[29] == 58 && arr[30] == 30);

    /* from: the host values are not sent; alloc: uninitialised device storage. */
    for (int i = 0; i < 1000; i++) {
        heap[i] = -1;
    }
#pragma omp target map(from : heap [0:1000])
    for (int i = 0; i < 1000; i++) {
        heap[i] = i;
    }
    CHECK(heap[0] == 0 && heap[999] == 999);
    {
        int out = 0;

#pragma omp target map(alloc : heap [0:1000]) map(from : out)
        {
            for (int i = 0; i < 1000; i++) {
                heap[i] = 1;
            }
            out = heap[500];
        }
        CHECK(out == 1);
        CHECK(heap[500] == 500); /* alloc never copies back */
    }

    /* Struct members and a pointer member's section. */
    p.pos[0] = 1.0;
    p.pos[1] = 2.0;
    p.pos[2] = 3.0;
    p.id = 7;
    p.nhist = 16;
    p.history = calloc(16, sizeof(double));
#pragma omp target map(tofrom : p.pos, p.id) map(tofrom : p.history [0:16]) map(to : p.nhist)
    {
        for (int k = 0; k < 3; k++) {
            p.pos[k] += 1.0;
        }
        p.id += 1;
        for (int i = 0; i < p.nhist; i++) {
            p.history[i] = i * 0.5;
        }
    }
    CHECK(p.pos[0] == 2.0 && p.pos[2] == 4.0 && p.id == 8);
    CHECK(p.history[15] == 7.5);

    /* Whole struct by value (tofrom). */
    {
        struct particle q = p;

        q.history = NULL;
#pragma omp target map(tofrom : q)
        q.id = q.id * 3;
        CHECK(q.id == 24);
    }

    /* enter data + delete, always. */
    {
        int v = 5, seen = 0;

#pragma omp target enter data map(to : v)
        v = 6; /* host changes; device keeps 5 */
#pragma omp target map(from : seen) map(v)
        seen = v; /* present: no transfer */
        CHECK(seen == 5);
#pragma omp target map(always, tofrom : v) map(from : seen)
        seen = v;
        CHECK(seen == 6);
#pragma omp target exit data map(delete : v)
        CHECK(omp_target_is_present(&v, omp_get_default_device()) == 0);
    }
    free(p.history);
    free(heap);
    return conf_exit("c03_map");
}
