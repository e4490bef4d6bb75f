/*
 * rpc/device/device_malloc.c - the device heap: malloc/free without a host
 * round trip in the common case, refilled in large chunks through RPC.
 *
 * Memory comes from the host (TETHER_RPC_OP_ALLOC) as chunks of 8 MiB,
 * doubling up to 256 MiB, carved into 64 KiB units:
 *   small  (<= 8 KiB): 18 size classes; a slab is one unit with a header, a
 *          bitmap of used blocks and a free count.  Allocation reserves a
 *          block by decrementing the free count, then claims a bit: no locks,
 *          no ABA.  Slabs of a class form an append-only list; a hint points
 *          at one that recently had room (set again when a free makes room).
 *   medium (<= 1 MiB): spans of 1..16 units (power of two) with a header;
 *          freed spans go on a per-size stack whose head carries a 16-bit tag
 *          in the low bits (spans are 64 KiB aligned), so pops are ABA-safe.
 *   large  (> 1 MiB): one ALLOC call per block; freed blocks are kept on a
 *          stack per power of two and reused (see large_alloc).
 * Every chunk and large block is listed in a region table, so free() checks
 * that a pointer is ours before it reads a header (host offload: a pointer
 * from libc's malloc, e.g. from strdup, goes to libc's free).  Memory is
 * reused, never returned before the server shuts down, and the heap is not
 * limited by a fixed size: it grows while the host grants chunks.
 *
 * Known limit: refilling a chunk takes a try-lock; the other threads that
 * need a chunk at that moment wait for it.  Correct on NVIDIA sm_70+
 * (independent thread scheduling) and on the host; on AMD, lanes of the
 * waiting wave could starve the lock holder of the same wave.
 */
#include "device_internal.h"

#if !RPC_ARCH_SIMT
#include <stdlib.h>
#include <string.h>
extern void __libc_free(void *);
extern void *__libc_realloc(void *, size_t);
#endif

#define UNIT_SHIFT 16
#define UNIT (1ull << UNIT_SHIFT)
#define SMALL_MAX 8192u
#define NCLASSES 18
#define NBUCKETS 5                        /* spans of 1, 2, 4, 8, 16 units */
#define LARGE_MIN_LOG 20                  /* large blocks are > 1 MiB */
#define NLARGE ((48 - LARGE_MIN_LOG) * 4) /* size classes of large blocks */
#define SPAN_MAX (16 * UNIT)
#define HDR 64u /* span/large header; user data starts at `offset` >= HDR */
#define CHUNK_FIRST (8ull << 20)
#define CHUNK_MAX (256ull << 20)
#define NREGIONS 1024
#define MAGIC 0x70616568u /* "heap" */

enum { KIND_SLAB = 1, KIND_SPAN = 2, KIND_LARGE = 3 };
/* Region slot states: the low 2 bits of `state`; the rest counts reuses, so
 * a reader can tell that a slot changed under it (a seqlock). */
enum { REG_FREE = 0, REG_BUSY = 1, REG_LIVE = 2, REG_DEAD = 3 };
#define REG_STATE(s) ((s)&3u)
#define REG_GEN 4u

DEV_BEGIN

static const uint32_t class_size[NCLASSES] = {16,  32,  48,   64,   96,   128,  192,  256,  384,
                                              512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192};

/* Header at the start of every slab, span and large block (64 KiB aligned). */
struct dev_block_hdr {
    uint32_t magic;
    uint32_t kind;
    uint32_t cls;     /* slab: class; span: bucket */
    uint32_t block;   /* slab: block size */
    uint32_t nblocks; /* slab */
    int32_t nfree;    /* slab: blocks not reserved */
    uint32_t first;   /* slab: offset of block 0; span/large: offset of the user data */
    uint32_t hint;    /* slab: bitmap word to scan first */
    uint64_t next;    /* slab: next slab of the class; span: next free span */
    uint64_t size;    /* span/large: bytes from the header to the end */
    uint64_t reserved[2];
    /* slab: the bitmap of used blocks follows (slab_bitmap) */
};
_Static_assert(sizeof(struct dev_block_hdr) == 64, "block header");

/* The bitmap after a slab header (not a flexible array member: clang-16's
 * OpenMP device compile rejects indexing those). */
static uint32_t *slab_bitmap(struct dev_block_hdr *s)
{
    return (uint32_t *)(s + 1);
}

/* A chunk or large block.  base/size/kind are written while the slot is
 * BUSY and read atomically between two loads of `state`. */
struct dev_region {
    uint64_t base;
    uint64_t size;
    uint64_t used; /* chunk: units carved */
    uint32_t state;
    uint32_t kind; /* KIND_SLAB (a chunk) or KIND_LARGE */
};

/* What region_find saw. */
struct dev_region_view {
    struct dev_region *r;
    uint64_t base;
    uint64_t size;
    uint32_t kind;
    uint32_t state;
};

struct dev_heap {
    uint64_t nregions;    /* slots ever used */
    uint64_t cur;         /* region index + 1 of the chunk being carved, 0: none */
    uint32_t refill_lock; /* 1 while a thread asks the host for a chunk */
    uint32_t pad;
    uint64_t next_chunk; /* size of the next chunk, 0: CHUNK_FIRST */
    uint64_t class_head[NCLASSES];
    uint64_t class_hint[NCLASSES];
    uint32_t class_grow[NCLASSES]; /* 1 while a thread makes a new slab of the class */
    uint64_t span_free[NBUCKETS];  /* tagged stack heads */
    uint64_t large_free[NLARGE];   /* tagged stack heads */
    struct dev_region regions[NREGIONS];
};

static struct dev_heap dev_heap;

/* ---- host calls ---------------------------------------------------------------------------- */

static uint64_t host_alloc(uint64_t size, uint64_t align)
{
    struct tether_rpc_alloc_req req = {size, align};
    struct tether_rpc_alloc_ans ans = {0};
    struct dev_iov iov = {&req, sizeof req};
    uint64_t len = 0;
    uint32_t status = TETHER_RPC_CALL_ERROR;
    if (!tether_device_call(TETHER_RPC_OP_ALLOC, &iov, 1, true, &ans, sizeof ans, &len, &status))
        return 0;
    if (status != TETHER_RPC_CALL_OK || len != sizeof ans || ans.ptr % align != 0)
        return 0;
    return ans.ptr;
}

static void host_free(uint64_t ptr)
{
    struct tether_rpc_free_req req = {ptr};
    struct dev_iov iov = {&req, sizeof req};
    tether_device_call(TETHER_RPC_OP_FREE, &iov, 1, false, (void *)0, 0, (uint64_t *)0,
                       (uint32_t *)0);
}

/* ---- regions -------------------------------------------------------------------------------- */

static struct dev_region *region_add(uint64_t base, uint64_t size, uint32_t kind)
{
    struct dev_heap *h = &dev_heap;
    uint64_t n = dev_load_acquire64(&h->nregions);
    struct dev_region *r = (struct dev_region *)0;
    uint32_t gen = 0;
    for (uint64_t i = 0; i < n && i < NREGIONS && r == (struct dev_region *)0; i++) {
        struct dev_region *c = &h->regions[i];
        uint32_t st = dev_load_relaxed32(&c->state);
        if (REG_STATE(st) == REG_DEAD &&
            dev_cas32(&c->state, st, st - REG_DEAD + REG_GEN + REG_BUSY)) {
            r = c;
            gen = st - REG_DEAD + REG_GEN;
        }
    }
    if (r == (struct dev_region *)0) {
        uint64_t i = dev_fetch_add64(&h->nregions, 1);
        if (i >= NREGIONS)
            return (struct dev_region *)0;
        r = &h->regions[i];
    }
    dev_store_relaxed64(&r->base, base);
    dev_store_relaxed64(&r->size, size);
    dev_store_relaxed64(&r->used, 0);
    dev_store_relaxed32(&r->kind, kind);
    dev_store_release32(&r->state, gen + REG_LIVE);
    return r;
}

/* Finds the live region holding p (a seqlock read of each slot). */
static bool region_find(uint64_t p, struct dev_region_view *v)
{
    struct dev_heap *h = &dev_heap;
    uint64_t n = dev_load_acquire64(&h->nregions);
    if (n > NREGIONS)
        n = NREGIONS;
    for (uint64_t i = 0; i < n; i++) {
        struct dev_region *r = &h->regions[i];
        for (;;) {
            uint32_t s1 = dev_load_acquire32(&r->state);
            if (REG_STATE(s1) != REG_LIVE)
                break;
            uint64_t base = dev_seq_load64(&r->base);
            uint64_t size = dev_seq_load64(&r->size);
            uint32_t kind = dev_seq_load32(&r->kind);
            dev_seq_fence();
            if (dev_load_relaxed32(&r->state) != s1)
                continue; /* reused meanwhile: read again */
            if (p >= base && p - base < size) {
                *v = (struct dev_region_view){r, base, size, kind, s1};
                return true;
            }
            break;
        }
    }
    return false;
}

/* ---- chunks --------------------------------------------------------------------------------- */

/* Carves `units` 64 KiB units from the current chunk, refilling it from the
 * host when it runs out.  Returns the address or 0 when the host has no more. */
static uint64_t carve(uint64_t units)
{
    struct dev_heap *h = &dev_heap;
    for (;;) {
        uint64_t cur = dev_load_acquire64(&h->cur);
        if (cur != 0) {
            struct dev_region *r = &h->regions[cur - 1]; /* chunks never die */
            uint64_t total = dev_load_relaxed64(&r->size) >> UNIT_SHIFT;
            if (dev_load_relaxed64(&r->used) + units <= total) {
                uint64_t at = dev_fetch_add64(&r->used, units);
                if (at + units <= total)
                    return dev_load_relaxed64(&r->base) + (at << UNIT_SHIFT);
            }
        }
        /* The chunk is used up: one thread asks the host for the next one. */
        if (dev_exchange32(&h->refill_lock, 1u) != 0) {
            while (dev_load_relaxed32(&h->refill_lock) != 0)
                rpc_arch_pause();
            continue;
        }
        if (dev_load_acquire64(&h->cur) != cur) { /* someone refilled meanwhile */
            dev_store_release32(&h->refill_lock, 0u);
            continue;
        }
        uint64_t size = h->next_chunk ? h->next_chunk : CHUNK_FIRST;
        while (size < (units << UNIT_SHIFT))
            size *= 2;
        uint64_t base = host_alloc(size, UNIT);
        struct dev_region *r = base ? region_add(base, size, KIND_SLAB) : (struct dev_region *)0;
        if (r == (struct dev_region *)0) {
            if (base != 0)
                host_free(base);
            dev_store_release32(&h->refill_lock, 0u);
            return 0;
        }
        h->next_chunk = size < CHUNK_MAX ? 2 * size : CHUNK_MAX;
        dev_store_release64(&h->cur, (uint64_t)(r - h->regions) + 1);
        dev_store_release32(&h->refill_lock, 0u);
    }
}

/* ---- small blocks --------------------------------------------------------------------------- */

static uint32_t size_class(uint64_t size)
{
    uint32_t c = 0;
    while (class_size[c] < size)
        c++;
    return c;
}

static uint32_t slab_words(const struct dev_block_hdr *s)
{
    return (s->nblocks + 31) / 32;
}

/* Reserves and claims one block of slab s, or returns 0 if it is full. */
static uint64_t slab_take(struct dev_block_hdr *s)
{
    if (dev_fetch_add32(&s->nfree, -1) <= 0) {
        dev_fetch_add32(&s->nfree, 1);
        return 0;
    }
    /* A block is reserved for us: some bit is clear and stays ours to take. */
    uint32_t words = slab_words(s);
    uint32_t w = dev_load_relaxed32(&s->hint) % words;
    for (;;) {
        uint32_t bits = dev_load_relaxed32(&slab_bitmap(s)[w]);
        while (bits != 0xffffffffu) {
            uint32_t bit = (uint32_t)__builtin_ctz(~bits);
            uint32_t old = dev_fetch_or32(&slab_bitmap(s)[w], 1u << bit);
            if ((old & (1u << bit)) == 0) {
                dev_store_relaxed32(&s->hint, w);
                return (uint64_t)(uintptr_t)s + s->first + (uint64_t)(w * 32 + bit) * s->block;
            }
            bits = old | (1u << bit);
        }
        w = w + 1 == words ? 0 : w + 1;
    }
}

static struct dev_block_hdr *slab_new(uint32_t cls)
{
    uint64_t base = carve(1);
    if (base == 0)
        return (struct dev_block_hdr *)0;
    struct dev_block_hdr *s = (struct dev_block_hdr *)(uintptr_t)base;
    uint32_t block = class_size[cls];
    uint32_t n = (uint32_t)(UNIT / block);
    uint32_t first;
    for (;;) {
        first = (uint32_t)((sizeof *s + 4 * ((n + 31) / 32) + 15) & ~15u);
        if (first + (uint64_t)n * block <= UNIT)
            break;
        n--;
    }
    s->magic = MAGIC;
    s->kind = KIND_SLAB;
    s->cls = cls;
    s->block = block;
    s->nblocks = n;
    s->first = first;
    s->hint = 0;
    s->size = UNIT;
    uint32_t words = (n + 31) / 32;
    for (uint32_t w = 0; w < words; w++)
        slab_bitmap(s)[w] = 0;
    if (n % 32)
        slab_bitmap(s)[words - 1] = ~0u << (n % 32); /* bits past the last block: never free */
    slab_bitmap(s)[0] |= 1u;                         /* block 0 is the caller's */
    s->nfree = (int32_t)n - 1;
    /* Publish: append to the class list, then point the hint at it. */
    struct dev_heap *h = &dev_heap;
    for (;;) {
        uint64_t head = dev_load_acquire64(&h->class_head[cls]);
        s->next = head;
        if (dev_cas64(&h->class_head[cls], head, (uint64_t)(uintptr_t)s))
            break;
    }
    dev_store_release64(&h->class_hint[cls], (uint64_t)(uintptr_t)s);
    return s;
}

/* A block from a slab of the class that has room (the hint, then a few slabs of the list). */
static uint64_t small_take(uint32_t cls)
{
    struct dev_heap *h = &dev_heap;
    uint64_t hint = dev_load_acquire64(&h->class_hint[cls]);
    if (hint != 0) {
        uint64_t p = slab_take((struct dev_block_hdr *)(uintptr_t)hint);
        if (p != 0)
            return p;
    }
    uint64_t s = dev_load_acquire64(&h->class_head[cls]);
    for (int i = 0; i < 8 && s != 0; i++) {
        struct dev_block_hdr *slab = (struct dev_block_hdr *)(uintptr_t)s;
        if (s != hint && dev_load_relaxed_i32(&slab->nfree) > 0) {
            uint64_t p = slab_take(slab);
            if (p != 0) {
                dev_store_release64(&h->class_hint[cls], s);
                return p;
            }
        }
        s = slab->next;
    }
    return 0;
}

/* How long (pauses) a thread waits for another thread's new slab before it makes its own.  The
 * bound is per wait, so a thread that sees slab after slab appear keeps waiting; it exists for
 * AMD, where lanes of one wavefront do not run independently and the lane making the slab cannot
 * go on while its wavefront spins. */
#define GROW_WAIT_SPINS (1u << 16)

static void *small_alloc(uint64_t size)
{
    struct dev_heap *h = &dev_heap;
    uint32_t cls = size_class(size);
    /* When the class is full, one thread makes a new slab and the others wait for it and take
     * blocks from it: on a GPU thousands of threads find the class full at the same moment, and
     * a slab each would use up the heap (seen on an H100: hundreds of MiB for a few MiB live). */
    for (;;) {
        uint64_t p = small_take(cls);
        if (p != 0)
            return (void *)(uintptr_t)p;
        bool owner = dev_exchange32(&h->class_grow[cls], 1u) == 0;
        if (!owner) {
            uint32_t spins = 0;
            while (spins < GROW_WAIT_SPINS && dev_load_relaxed32(&h->class_grow[cls]) != 0) {
                rpc_arch_pause();
                spins++;
            }
            if (spins < GROW_WAIT_SPINS)
                continue; /* a slab was made: take from it */
        }
        /* Another thread may have published a slab between our look and the gate. */
        p = small_take(cls);
        struct dev_block_hdr *slab = (struct dev_block_hdr *)0;
        if (p == 0)
            slab = slab_new(cls);
        if (owner)
            dev_store_release32(&h->class_grow[cls], 0u);
        if (p != 0)
            return (void *)(uintptr_t)p;
        if (slab == (struct dev_block_hdr *)0)
            return (void *)0;
        return (void *)((uintptr_t)slab + slab->first);
    }
}

/* One line on the host's stderr naming the pointer (fire-and-forget). */
static void heap_complain(const char *fmt, uint64_t p)
{
    tether_device_printf_packed(TETHER_RPC_STDERR, fmt, &p, sizeof p);
}

static void small_free(struct dev_block_hdr *s, uint64_t p)
{
    uint64_t off = p - (uint64_t)(uintptr_t)s;
    if (off < s->first || (off - s->first) % s->block != 0 ||
        (off - s->first) / s->block >= s->nblocks) {
        heap_complain("tether: free(%p): not the start of a block\n", p);
        return;
    }
    uint32_t i = (uint32_t)((off - s->first) / s->block);
    uint32_t old = dev_fetch_and32(&slab_bitmap(s)[i / 32], ~(1u << (i % 32)));
    if ((old & (1u << (i % 32))) == 0) {
        heap_complain("tether: free(%p): double free\n", p);
        return;
    }
    if (dev_fetch_add32(&s->nfree, 1) == 0) /* it was full: point allocations at it */
        dev_store_release64(&dev_heap.class_hint[s->cls], (uint64_t)(uintptr_t)s);
}

/* ---- spans and large blocks ----------------------------------------------------------------- */

static uint32_t span_bucket(uint64_t units)
{
    uint32_t b = 0;
    while ((1ull << b) < units)
        b++;
    return b;
}

/* Lock-free stacks of 64 KiB aligned blocks: the head's low 16 bits are a
 * tag bumped by every push and pop, so a pop that raced with a pop and a push
 * of the same block fails its CAS instead of corrupting the stack. */
static struct dev_block_hdr *stack_pop(uint64_t *head)
{
    for (;;) {
        uint64_t old = dev_load_acquire64(head);
        uint64_t s = old & ~(UNIT - 1);
        if (s == 0)
            return (struct dev_block_hdr *)0;
        /* s may be popped and reused meanwhile: the tag makes the CAS fail then. */
        uint64_t next = dev_load_relaxed64(&((struct dev_block_hdr *)(uintptr_t)s)->next);
        uint64_t tag = (old + 1) & (UNIT - 1);
        if (dev_cas64(head, old, (next & ~(UNIT - 1)) | tag))
            return (struct dev_block_hdr *)(uintptr_t)s;
    }
}

static void stack_push(uint64_t *head, struct dev_block_hdr *s)
{
    for (;;) {
        uint64_t old = dev_load_acquire64(head);
        dev_store_relaxed64(&s->next, old & ~(UNIT - 1));
        uint64_t tag = (old + 1) & (UNIT - 1);
        if (dev_cas64(head, old, (uint64_t)(uintptr_t)s | tag))
            return;
    }
}

static struct dev_block_hdr *span_pop(uint32_t b)
{
    return stack_pop(&dev_heap.span_free[b]);
}

static void span_push(struct dev_block_hdr *s)
{
    stack_push(&dev_heap.span_free[s->cls], s);
}

static void *span_alloc(uint64_t size, uint64_t offset)
{
    uint64_t units = (size + offset + UNIT - 1) >> UNIT_SHIFT;
    uint32_t b = span_bucket(units);
    struct dev_block_hdr *s = span_pop(b);
    if (s == (struct dev_block_hdr *)0) {
        uint64_t base = carve(1ull << b);
        if (base == 0)
            return (void *)0;
        s = (struct dev_block_hdr *)(uintptr_t)base;
        s->magic = MAGIC;
        s->kind = KIND_SPAN;
        s->cls = b;
        s->size = (1ull << b) << UNIT_SHIFT;
    }
    s->first = (uint32_t)offset;
    dev_store_relaxed64(&s->next, 0);
    return (void *)((uintptr_t)s + offset);
}

static uint32_t log2_floor(uint64_t n)
{
    return 63u - (uint32_t)__builtin_clzll(n);
}

/* Size class of a large block: `total` rounded up to a quarter step of its
 * power of two (at most 25% more); the class's bytes go to *cap_p. */
static uint32_t large_class(uint64_t total, uint64_t *cap_p)
{
    uint32_t k = log2_floor(total);
    uint64_t step = 1ull << (k - 2);
    uint64_t cap = (total + step - 1) & ~(step - 1);
    if (cap == 2ull << k) {
        k++;
        step *= 2;
    }
    *cap_p = cap;
    return (k - LARGE_MIN_LOG) * 4 + (uint32_t)((cap - (1ull << k)) / step);
}

/* Large blocks come from the host one by one and are kept when freed: on the
 * stack of their size class, reused by the next request of that class,
 * handed back only when the server shuts down.  So a kernel that allocates
 * and frees big buffers in a loop costs one host call per size class, and
 * the host never frees device memory while a kernel runs. */
static void *large_alloc(uint64_t size, uint64_t offset)
{
    uint64_t cap;
    uint32_t c = large_class(size + offset, &cap);
    if (c >= NLARGE)
        return (void *)0;
    struct dev_block_hdr *s = stack_pop(&dev_heap.large_free[c]);
    if (s == (struct dev_block_hdr *)0) {
        uint64_t base = host_alloc(cap, UNIT);
        if (base == 0)
            return (void *)0;
        if (region_add(base, cap, KIND_LARGE) == (struct dev_region *)0) {
            host_free(base);
            return (void *)0;
        }
        s = (struct dev_block_hdr *)(uintptr_t)base;
        s->magic = MAGIC;
        s->kind = KIND_LARGE;
        s->cls = c;
        s->size = cap;
    }
    s->first = (uint32_t)offset;
    dev_store_relaxed64(&s->next, 0);
    return (void *)((uintptr_t)s + offset);
}

static void large_free(struct dev_block_hdr *s)
{
    stack_push(&dev_heap.large_free[s->cls], s);
}

/* ---- API ------------------------------------------------------------------------------------ */

static void *heap_alloc(uint64_t size, uint64_t align)
{
    if (!tether_device_attached())
        return (void *)0;
    if (size > (1ull << 47) || align > UNIT / 2)
        return (void *)0;
    if (align <= 16 && size <= SMALL_MAX)
        return small_alloc(size == 0 ? 1 : size);
    uint64_t offset = align > HDR ? align : HDR;
    if (size + offset <= SPAN_MAX)
        return span_alloc(size, offset);
    return large_alloc(size, offset);
}

void *tether_device_malloc(uint64_t size)
{
    return heap_alloc(size, 16);
}

void *tether_device_aligned_alloc(uint64_t align, uint64_t size)
{
    if (align == 0 || (align & (align - 1)) != 0)
        return (void *)0;
    return heap_alloc(size, align);
}

void *tether_device_calloc(uint64_t n, uint64_t size)
{
    if (size != 0 && n > (~(uint64_t)0) / size)
        return (void *)0;
    unsigned char *p = (unsigned char *)tether_device_malloc(n * size);
    if (p != (unsigned char *)0)
        __builtin_memset(p, 0, n * size);
    return p;
}

/* The header of a block we handed out, or NULL if p is not ours. */
static struct dev_block_hdr *block_of(uint64_t p, struct dev_region_view *v)
{
    if (!region_find(p, v))
        return (struct dev_block_hdr *)0;
    struct dev_block_hdr *s = (struct dev_block_hdr *)(uintptr_t)(p & ~(UNIT - 1));
    if (v->kind == KIND_LARGE)
        s = (struct dev_block_hdr *)(uintptr_t)v->base;
    if (s->magic != MAGIC)
        return (struct dev_block_hdr *)0;
    return s;
}

static void foreign_free(void *ptr)
{
#if RPC_ARCH_SIMT
    uint64_t p = (uint64_t)(uintptr_t)ptr;
#if defined(RPC_ARCH_NVPTX)
    uint32_t shared, local;
    __asm__("{ .reg .pred q; isspacep.shared q, %1; selp.u32 %0, 1, 0, q; }"
            : "=r"(shared)
            : "l"(p));
    __asm__("{ .reg .pred q; isspacep.local q, %1; selp.u32 %0, 1, 0, q; }" : "=r"(local) : "l"(p));
    if (shared) {
        heap_complain("tether: free(%p): a shared-memory address, not from the device heap\n", p);
        return;
    }
    if (local) {
        heap_complain("tether: free(%p): a stack address, not from the device heap\n", p);
        return;
    }
#endif
    heap_complain("tether: free(%p): pointer not from the device heap\n", p);
#else
    __libc_free(ptr);
#endif
}

void tether_device_free(void *ptr)
{
    if (ptr == (void *)0)
        return;
    uint64_t p = (uint64_t)(uintptr_t)ptr;
    struct dev_region_view v;
    struct dev_block_hdr *s = block_of(p, &v);
    if (s == (struct dev_block_hdr *)0) {
        foreign_free(ptr);
        return;
    }
    switch (s->kind) {
    case KIND_SLAB:
        small_free(s, p);
        return;
    case KIND_SPAN:
        span_push(s);
        return;
    case KIND_LARGE:
        large_free(s);
        return;
    default:
        foreign_free(ptr);
        return;
    }
}

void *tether_device_realloc(void *ptr, uint64_t size)
{
    if (ptr == (void *)0)
        return tether_device_malloc(size);
    if (size == 0) {
        tether_device_free(ptr);
        return (void *)0;
    }
    uint64_t p = (uint64_t)(uintptr_t)ptr;
    struct dev_region_view v;
    struct dev_block_hdr *s = block_of(p, &v);
    uint64_t usable;
    if (s == (struct dev_block_hdr *)0) {
#if RPC_ARCH_SIMT
        return (void *)0;
#else
        return __libc_realloc(ptr, size);
#endif
    }
    if (s->kind == KIND_SLAB)
        usable = s->block;
    else
        usable = s->size - (p - (uint64_t)(uintptr_t)s);
    if (size <= usable)
        return ptr;
    void *q = tether_device_malloc(size);
    if (q == (void *)0)
        return (void *)0;
    __builtin_memcpy(q, ptr, usable);
    tether_device_free(ptr);
    return q;
}

DEV_END
