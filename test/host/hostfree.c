/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* test/host/hostfree.c - host memory from llvm_omp_target_alloc_host leaves the pinned map
 * whichever free releases it (omp_target_free passes libomptarget's DEFAULT kind, not HOST), so
 * memory at that address can be locked afterwards; frees and unlocks in every order are either
 * done or refused with a message that names the cause, and a second free of the same pointer is
 * refused without freeing anything (the process's heap stays whole). */
#include "conformance.h"

#define SZ 65536

/* What the runtime printed on stderr during the last CAPTURE. */
static char said[4096];

#define CAPTURE(call)                                                                              \
    do {                                                                                           \
        struct conf_capture cap_;                                                                  \
        conf_capture_begin(&cap_);                                                                 \
        call;                                                                                      \
        conf_capture_end(&cap_, said, sizeof(said));                                               \
    } while (0)

/* The last CAPTURE printed `want` (NULL: printed nothing); if not, shows what it printed. */
static int says(const char *want)
{
    int ok = want == NULL ? said[0] == '\0' : strstr(said, want) != NULL;

    if (!ok) {
        fprintf(stderr, "  printed [%s], want %s%s\n", said, want ? "a line with " : "nothing",
                want ? want : "");
    }
    return ok;
}

static void fill(char *p, char v)
{
    for (int i = 0; i < SZ; i += 512) {
        p[i] = v;
    }
}

int main(void)
{
    int dev = 0, other = 1;
    char *h, *l, *d;

    conf_require_tether(dev);
    CHECK(conf_pinned(dev) == 0);

    /* omp_target_free of host memory: out of the map; the same range can then be locked. */
    h = llvm_omp_target_alloc_host(SZ, dev);
    CHECK(h != NULL && conf_pinned(dev) == 1);
    fill(h, 1);
    CAPTURE(omp_target_free(h, dev));
    CHECK(says(NULL));
    CHECK(conf_pinned(dev) == 0);
    l = llvm_omp_target_lock_mem(h, SZ, dev);
    CHECK(l != NULL);
    CHECK(conf_pinned(dev) == 1);
    llvm_omp_target_unlock_mem(h, dev);
    CHECK(conf_pinned(dev) == 0);

    /* The same through another device of the plugin (one pinned map per plugin). */
    h = llvm_omp_target_alloc_host(SZ, dev);
    CHECK(h != NULL && conf_pinned(dev) == 1);
    CAPTURE(omp_target_free(h, other));
    CHECK(says(NULL));
    CHECK(conf_pinned(dev) == 0);

    /* A lock inside host memory holds it: either free is refused, nothing is freed; after the
     * unlock the free goes through. */
    h = llvm_omp_target_alloc_host(SZ, dev);
    CHECK(h != NULL);
    l = llvm_omp_target_lock_mem(h + 100, 100, dev);
    CHECK(l != NULL && conf_pinned(dev) == 1);
    CAPTURE(omp_target_free(h, dev));
    CHECK(says("still has 1 lock(s) on it"));
    CAPTURE(llvm_omp_target_free_host(h, dev));
    CHECK(says("still has 1 lock(s) on it"));
    CHECK(conf_pinned(dev) == 1);
    fill(h, 2); /* still ours */
    llvm_omp_target_unlock_mem(h + 100, dev);
    CAPTURE(omp_target_free(h, dev));
    CHECK(says(NULL));
    CHECK(conf_pinned(dev) == 0);

    /* Unlocking host memory that nobody locked is refused: the allocation's own reference is
     * the free's. */
    h = llvm_omp_target_alloc_host(SZ, dev);
    CHECK(h != NULL);
    CAPTURE(llvm_omp_target_unlock_mem(h, dev));
    CHECK(says("data_unlock("));
    CHECK(conf_pinned(dev) == 1);
    fill(h, 3);
    /* A pointer inside it is not an allocation: refused, nothing freed. */
    CAPTURE(omp_target_free(h + 64, dev));
    CHECK(says("data_delete("));
    CAPTURE(llvm_omp_target_free_host(h + 64, dev));
    CHECK(says("data_delete("));
    CHECK(conf_pinned(dev) == 1);
    fill(h, 4);
    llvm_omp_target_free_host(h, dev);
    CHECK(conf_pinned(dev) == 0);
    /* After the free, unlocking it finds nothing. */
    CAPTURE(llvm_omp_target_unlock_mem(h, dev));
    CHECK(says("data_unlock("));
    CHECK(conf_pinned(dev) == 0);

    /* A lock taken on a larger range over where host memory was: no stale entry in the way. */
    {
        char *buf = aligned_alloc(4096, 4 * SZ);

        h = llvm_omp_target_alloc_host(SZ, dev);
        CHECK(buf != NULL && h != NULL);
        omp_target_free(h, dev);
        l = llvm_omp_target_lock_mem(buf, 4 * SZ, dev);
        CHECK(l != NULL && conf_pinned(dev) == 1);
        llvm_omp_target_unlock_mem(buf, dev);
        free(buf);
    }

    /* Double frees: the second is refused with a message, and frees nothing (glibc would
     * abort on a second free(); a heap block reused in between would be freed under its new
     * owner). */
    h = llvm_omp_target_alloc_host(SZ, dev);
    CHECK(h != NULL);
    llvm_omp_target_free_host(h, dev);
    CAPTURE(llvm_omp_target_free_host(h, dev));
    CHECK(says("data_delete("));
    CAPTURE(omp_target_free(h, dev));
    CHECK(says("data_delete("));
    h = llvm_omp_target_alloc_host(SZ, dev);
    CHECK(h != NULL);
    omp_target_free(h, dev);
    CAPTURE(omp_target_free(h, dev));
    CHECK(says("data_delete("));
    CAPTURE(llvm_omp_target_free_host(h, dev));
    CHECK(says("data_delete("));
    CHECK(conf_pinned(dev) == 0);
    /* Device memory, small (cached) and large. */
    d = omp_target_alloc(1000, dev);
    CHECK(d != NULL);
    omp_target_free(d, dev);
    CAPTURE(omp_target_free(d, dev));
    CHECK(says("data_delete("));
    d = omp_target_alloc(16 << 20, dev);
    CHECK(d != NULL);
    omp_target_free(d, dev);
    CAPTURE(omp_target_free(d, dev));
    CHECK(says("data_delete("));

    /* The heap is whole: allocations of every kind still work and hold their data. */
    for (int i = 0; i < 64; i++) {
        char *a = llvm_omp_target_alloc_host(SZ, dev), *b = malloc(SZ);
        char *c = omp_target_alloc(SZ, dev);

        CHECK(a != NULL && b != NULL && c != NULL);
        fill(a, 5);
        fill(b, 6);
        CHECK(a[0] == 5 && b[0] == 6);
        omp_target_free(c, dev);
        omp_target_free(a, dev);
        free(b);
    }
    CHECK(conf_pinned(dev) == 0);
    return conf_exit("host_hostfree");
}
