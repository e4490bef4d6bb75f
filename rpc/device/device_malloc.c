/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/device/device_malloc.c - the device heap: malloc/free without a host
 * round trip in the common case, refilled in large chunks through RPC.
 *
 * Memory comes from the host (TETHER_RPC_OP_ALLOC) as chunks of 8 MiB,
 * doubling up to 256 MiB, carved into 64 KiB units; a chunk's first unit
 * holds its header and a word per unit saying what starts there:
 *   small  (<= 8 KiB): 18 size classes; a slab is one unit with a header, a
 *          bitmap of used blocks and a free count.  Allocation reserves a
 *          block by decrementing the free count, then claims a bit,
 *          searching from a word and bit picked by the caller's id: no locks,
 *          no ABA.  Slabs of a class form an append-only list; a hint points
 *          at one that recently had room (set again when a free makes room).
 *   medium (<= 1 MiB with the header): spans of 1..16 units (power of two)
 *          with a header; freed spans go on a per-size stack whose head
 *          carries a 16-bit tag in the low bits (spans are 64 KiB aligned),
 *          so pops are ABA-safe.
 *   large  (> 1 MiB): one ALLOC call per block; freed blocks are kept on a
 *          stack per size class and reused (see large_alloc).
 * Spans and large blocks carry a state word (live or free, and a count of
 * reuses), changed by compare-and-swap: a second free of a block finds it
 * free and is reported, never pushed twice.
 *
 * Every chunk and large block is entered in a region map keyed by address
 * (two levels over 1 MiB granules, the leaves allocated from the host on
 * demand), so free() finds the region of any pointer in a few loads, however
 * many regions there are, and checks that the pointer starts a live block
 * before it changes anything.  A pointer that is not the heap's goes to
 * libc's free on host offload (a pointer from strdup in the image) and is
 * reported on GPUs.  Bad frees (double, interior, into a freed block) print
 * one line with the address on the host's stderr and change nothing.
 *
 * Memory is reused, never returned before the server shuts down, and the heap
 * is not limited by a fixed size: it grows while the host grants memory.  A
 * refusal is said once by the host (rpc_services.c), with its cause.
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
#define HDR 64u /* span/large header; user data starts at `first` >= HDR */
#define CHUNK_FIRST (8ull << 20)
#define CHUNK_MAX (256ull << 20)
#define BLOCK_MAX (1ull << 47) /* largest size and alignment of a request */
#define MAGIC 0x70616568u      /* "heap" */

/* The region map: device addresses below 2^48, in granules of 1 MiB; a leaf of 2^14 granules
 * (256 KiB) covers 16 GiB of addresses, the top level (128 KiB) all 2^48. */
#define MAP_ADDR_BITS 48
#define GRAN_SHIFT 20
#define LEAF_BITS 14
#define TOP_BITS (MAP_ADDR_BITS - GRAN_SHIFT - LEAF_BITS)

enum { KIND_SLAB = 1, KIND_SPAN = 2, KIND_LARGE = 3, KIND_CHUNK = 4 };
/* State of a span or large block: the low 2 bits; the rest counts reuses, so a free that read
 * the state before a reuse fails its compare-and-swap. */
enum { BLK_LIVE = 1, BLK_FREE = 2 };
#define BLK_STATE(s) ((s)&3u)
#define BLK_GEN 4u

/* Things said at most once per process (dev_heap.said). */
enum { SAID_TOO_BIG = 1, SAID_ADDRESS = 2 };

DEV_BEGIN

static const uint32_t class_size[NCLASSES] = {16,  32,  48,   64,   96,   128,  192,  256,  384,
                                              512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192};

/* Header at the start of every slab, span, large block and chunk (64 KiB aligned). */
struct dev_block_hdr {
    uint32_t magic;
    uint32_t kind;
    uint32_t cls;     /* slab: class; span: bucket; large: size class */
    uint32_t block;   /* slab: block size */
    uint32_t nblocks; /* slab */
    int32_t nfree;    /* slab: blocks not reserved */
    uint32_t first;   /* slab: offset of block 0; span/large: offset of the user data */
    uint32_t hint;    /* slab: bitmap word to scan first */
    uint64_t next;    /* slab: next slab of the class; span/large: next free block */
    uint64_t size;    /* span/large/chunk: bytes from the header to the end */
    uint32_t state;   /* span/large: BLK_LIVE or BLK_FREE plus a count of reuses */
    uint32_t pad;
    uint64_t used; /* chunk: units carved (unit 0 is the chunk's own) */
    /* slab: the bitmap of used blocks follows (slab_bitmap); chunk: the unit words */
};
_Static_assert(sizeof(struct dev_block_hdr) == 64, "block header");
_Static_assert(sizeof(struct dev_block_hdr) + 4 * (CHUNK_MAX / UNIT) <= UNIT,
               "a chunk's header and unit words fit its first unit");

/* The bitmap after a slab header (not a flexible array member: clang-16's
 * OpenMP device compile rejects indexing those). */
static uint32_t *slab_bitmap(struct dev_block_hdr *s)
{
    return (uint32_t *)(s + 1);
}

/* A word per unit of a chunk: KIND_SLAB for a slab; for the units of a span KIND_SPAN plus the
 * unit's index in the span << 4 (user data aligned to 64 KiB or more starts past the span's
 * first unit); 0 for the chunk's own unit and units not carved yet. */
static uint32_t *chunk_units(struct dev_block_hdr *c)
{
    return (uint32_t *)(c + 1);
}

/* A granule of the region map: `lo` is the base of the region holding the granule's first byte,
 * `hi` the base of a region that starts inside the granule (0: none).  Regions are larger than a
 * granule, so no third one can meet it. */
struct dev_gran {
    uint64_t lo;
    uint64_t hi;
};
#define LEAF_BYTES ((1ull << LEAF_BITS) * sizeof(struct dev_gran))

struct dev_heap {
    uint64_t cur;         /* base of the chunk being carved, 0: none */
    uint32_t refill_lock; /* 1 while a thread asks the host for a chunk */
    uint32_t said;        /* SAID_* bits */
    uint64_t next_chunk;  /* size of the next chunk, 0: CHUNK_FIRST */
    uint64_t class_head[NCLASSES];
    uint64_t class_hint[NCLASSES];
    uint32_t class_grow[NCLASSES]; /* 1 while a thread makes a new slab of the class */
    uint64_t span_free[NBUCKETS];  /* tagged stack heads */
    uint64_t large_free[NLARGE];   /* tagged stack heads */
    uint64_t map[1u << TOP_BITS];  /* region map leaves (struct dev_gran[1 << LEAF_BITS]) */
};

static struct dev_heap dev_heap;

/* Paths a program rarely takes (new slabs, reports) stay out of line: inlined, they more than
 * double the code of a malloc/free pair that LTO inlines into the caller's kernel, and the pair's
 * rate falls by a third (an H100, 16896 threads). */
#define HEAP_COLD __attribute__((noinline, cold))

/* ---- host calls and reports ---------------------------------------------------------------- */

HEAP_COLD static uint64_t host_alloc(uint64_t size, uint64_t align)
{
    struct tether_rpc_alloc_req req = {size, align};
    struct tether_rpc_alloc_ans ans = {0};
    struct dev_iov iov = {&req, sizeof req};
    if (tether_device_call(TETHER_RPC_OP_ALLOC, &iov, 1, true, &ans, sizeof ans) != sizeof ans ||
        ans.ptr % align != 0)
        return 0;
    return ans.ptr;
}

HEAP_COLD static void host_free(uint64_t ptr)
{
    struct tether_rpc_free_req req = {ptr};
    struct dev_iov iov = {&req, sizeof req};
    tether_device_call(TETHER_RPC_OP_FREE, &iov, 1, false, (void *)0, 0);
}

/* One line on the host's stderr with two numbers (fire-and-forget). */
HEAP_COLD static void heap_say(const char *fmt, uint64_t a, uint64_t b)
{
    uint64_t args[2] = {a, b};
    tether_device_printf_packed(TETHER_RPC_STDERR, fmt, args, sizeof args);
}

/* The same, the first time only (`what`: a SAID_* bit). */
HEAP_COLD static void heap_say_once(uint32_t what, const char *fmt, uint64_t a, uint64_t b)
{
    if ((dev_fetch_or32(&dev_heap.said, what) & what) == 0)
        heap_say(fmt, a, b);
}

/* ---- the region map ------------------------------------------------------------------------- */

/* Zeroes n 8-byte words (fresh memory from the host: a GPU's memset of unknown alignment is a
 * byte loop). */
static void zero_words(uint64_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        p[i] = 0;
}

static struct dev_gran *map_leaf(uint64_t top)
{
    return (struct dev_gran *)(uintptr_t)dev_load_acquire64(&dev_heap.map[top]);
}

/* The leaf of top-level slot `top`, made (from the host, zeroed) if there is none. */
static struct dev_gran *map_leaf_make(uint64_t top)
{
    struct dev_gran *leaf = map_leaf(top);
    if (leaf != (struct dev_gran *)0)
        return leaf;
    uint64_t fresh = host_alloc(LEAF_BYTES, UNIT);
    if (fresh == 0)
        return (struct dev_gran *)0;
    zero_words((uint64_t *)(uintptr_t)fresh, LEAF_BYTES / 8);
    if (dev_cas64(&dev_heap.map[top], 0, fresh))
        return (struct dev_gran *)(uintptr_t)fresh;
    host_free(fresh); /* another thread made it first */
    return map_leaf(top);
}

/* Enters the region [base, base + size) (its header written, size > one granule) in the map.
 * False when a leaf could not be had (the host said why) or the address is beyond the map. */
static bool map_add(uint64_t base, uint64_t size)
{
    if (base + size > (1ull << MAP_ADDR_BITS) || base + size < base) {
        heap_say_once(SAID_ADDRESS,
                      "tether: device heap: the host gave memory at 0x%llx, beyond the heap's "
                      "2^48 bytes of addresses; it is not used (said once)\n",
                      base, 0);
        return false;
    }
    uint64_t g0 = base >> GRAN_SHIFT;
    uint64_t g1 = (base + size - 1) >> GRAN_SHIFT;
    for (uint64_t t = g0 >> LEAF_BITS; t <= g1 >> LEAF_BITS; t++)
        if (map_leaf_make(t) == (struct dev_gran *)0)
            return false;
    for (uint64_t g = g0; g <= g1; g++) {
        struct dev_gran *e = &map_leaf(g >> LEAF_BITS)[g & ((1u << LEAF_BITS) - 1)];
        if (g == g0 && (base & ((1ull << GRAN_SHIFT) - 1)) != 0)
            dev_store_release64(&e->hi, base);
        else
            dev_store_release64(&e->lo, base);
    }
    return true;
}

/* The header of the chunk or large block holding p, or NULL if p is not the heap's. */
static struct dev_block_hdr *map_find(uint64_t p)
{
    if ((p >> MAP_ADDR_BITS) != 0)
        return (struct dev_block_hdr *)0;
    uint64_t g = p >> GRAN_SHIFT;
    struct dev_gran *leaf = map_leaf(g >> LEAF_BITS);
    if (leaf == (struct dev_gran *)0)
        return (struct dev_block_hdr *)0;
    struct dev_gran *e = &leaf[g & ((1u << LEAF_BITS) - 1)];
    uint64_t base = dev_load_acquire64(&e->hi);
    if (base == 0 || p < base)
        base = dev_load_acquire64(&e->lo);
    if (base == 0)
        return (struct dev_block_hdr *)0;
    struct dev_block_hdr *r = (struct dev_block_hdr *)(uintptr_t)base;
    if (p - base >= r->size)
        return (struct dev_block_hdr *)0; /* past the end of a region that ends in this granule */
    return r;
}

/* ---- chunks --------------------------------------------------------------------------------- */

/* Writes a new chunk's header and unit words and enters it in the map. */
static bool chunk_init(uint64_t base, uint64_t size)
{
    struct dev_block_hdr *c = (struct dev_block_hdr *)(uintptr_t)base;
    c->magic = MAGIC;
    c->kind = KIND_CHUNK;
    c->size = size;
    c->used = 1;
    zero_words((uint64_t *)chunk_units(c), (size >> UNIT_SHIFT) / 2); /* 4 bytes a unit */
    return map_add(base, size);
}

/* Carves `units` 64 KiB units from the current chunk, refilling it from the host when it runs
 * out.  Returns the address, with the unit's word of the chunk in *word_p, or 0 when the host has
 * no more. */
static uint64_t carve(uint64_t units, uint32_t **word_p)
{
    struct dev_heap *h = &dev_heap;
    for (;;) {
        uint64_t cur = dev_load_acquire64(&h->cur);
        if (cur != 0) {
            struct dev_block_hdr *c = (struct dev_block_hdr *)(uintptr_t)cur;
            uint64_t total = c->size >> UNIT_SHIFT;
            if (dev_load_relaxed64(&c->used) + units <= total) {
                uint64_t at = dev_fetch_add64(&c->used, units);
                if (at + units <= total) {
                    *word_p = &chunk_units(c)[at];
                    return cur + (at << UNIT_SHIFT);
                }
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
        while (size < ((units + 1) << UNIT_SHIFT))
            size *= 2;
        uint64_t base = host_alloc(size, UNIT);
        if (base == 0 || !chunk_init(base, size)) {
            if (base != 0)
                host_free(base);
            dev_store_release32(&h->refill_lock, 0u);
            return 0;
        }
        h->next_chunk = size < CHUNK_MAX ? 2 * size : CHUNK_MAX;
        dev_store_release64(&h->cur, base);
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
    /* A block is reserved for us: some bit is clear and stays ours to take.  Concurrent callers
     * start at different words and bits (by caller id): on a GPU the lanes of a warp that aim
     * at one bit take turns, each losing lane a round trip to memory. */
    uint32_t words = slab_words(s);
    uint32_t id = dev_caller_id();
    uint32_t start = (dev_load_relaxed32(&s->hint) + id) % words, w = start;
    uint32_t rot = (id / 32u) % 32u;
    for (;;) {
        uint32_t bits = dev_load_relaxed32(&slab_bitmap(s)[w]);
        while (bits != 0xffffffffu) {
            uint32_t clear = ~bits;
            clear = (clear >> rot) | (clear << ((32u - rot) % 32u));
            uint32_t bit = ((uint32_t)__builtin_ctz(clear) + rot) % 32u;
            uint32_t old = dev_fetch_or32(&slab_bitmap(s)[w], 1u << bit);
            if ((old & (1u << bit)) == 0) {
                if (w != start)
                    dev_store_relaxed32(&s->hint, w);
                return (uint64_t)(uintptr_t)s + s->first + (uint64_t)(w * 32 + bit) * s->block;
            }
            bits = old | (1u << bit);
        }
        w = w + 1 == words ? 0 : w + 1;
    }
}

HEAP_COLD static struct dev_block_hdr *slab_new(uint32_t cls)
{
    uint32_t *word;
    uint64_t base = carve(1, &word);
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
    dev_store_release32(word, KIND_SLAB);
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

/* ---- bad pointers --------------------------------------------------------------------------- */

/* What is wrong with a pointer given to free or realloc. */
enum heap_bad {
    BAD_DOUBLE,    /* the start of a block that is free */
    BAD_IN_FREED,  /* inside a block that is free */
    BAD_NOT_START, /* inside a block, or in the heap but in no block */
    BAD_FOREIGN,   /* not the heap's (GPUs) */
    BAD_SHARED,    /* NVIDIA: a shared-memory address */
    BAD_LOCAL,     /* NVIDIA: a stack address */
};

/* One line naming the call and the pointer. */
HEAP_COLD static void heap_report(bool realloc_, enum heap_bad why, uint64_t p)
{
    const char *fmt;
    switch (why) {
    case BAD_DOUBLE:
        fmt = realloc_ ? "tether: realloc(%p): the block was freed\n"
                       : "tether: free(%p): double free\n";
        break;
    case BAD_IN_FREED:
        fmt = realloc_ ? "tether: realloc(%p): inside a freed block\n"
                       : "tether: free(%p): inside a freed block\n";
        break;
    case BAD_NOT_START:
        fmt = realloc_ ? "tether: realloc(%p): not the start of a block\n"
                       : "tether: free(%p): not the start of a block\n";
        break;
    case BAD_SHARED:
        fmt = realloc_ ? "tether: realloc(%p): a shared-memory address, not from the device heap\n"
                       : "tether: free(%p): a shared-memory address, not from the device heap\n";
        break;
    case BAD_LOCAL:
        fmt = realloc_ ? "tether: realloc(%p): a stack address, not from the device heap\n"
                       : "tether: free(%p): a stack address, not from the device heap\n";
        break;
    default:
        fmt = realloc_ ? "tether: realloc(%p): pointer not from the device heap\n"
                       : "tether: free(%p): pointer not from the device heap\n";
        break;
    }
    heap_say(fmt, p, 0);
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

/* Bytes from a span or large block's header to user data aligned to `align`: at least HDR, at
 * most max(align, HDR) (the header is 64 KiB aligned). */
static uint64_t block_offset(uint64_t base, uint64_t align)
{
    if (align <= HDR)
        return HDR;
    uint64_t off = (align - (base & (align - 1))) & (align - 1);
    return off < HDR ? off + align : off;
}

/* Hands out a free span or large block (ours alone: just popped or made). */
static void *block_take(struct dev_block_hdr *s, uint64_t align)
{
    uint64_t base = (uint64_t)(uintptr_t)s;
    uint64_t off = block_offset(base, align);
    dev_store_relaxed32(&s->first, (uint32_t)off);
    dev_store_relaxed64(&s->next, 0);
    uint32_t st = dev_load_relaxed32(&s->state);
    dev_store_release32(&s->state, st - BLK_STATE(st) + BLK_GEN + BLK_LIVE);
    return (void *)(uintptr_t)(base + off);
}

/* Marks the block of header s free if p is its user pointer and it is live; else reports why
 * and returns false.  Of frees racing on one block, exactly one succeeds. */
static bool block_release(struct dev_block_hdr *s, uint64_t p)
{
    for (;;) {
        uint32_t st = dev_load_acquire32(&s->state);
        uint64_t user = (uint64_t)(uintptr_t)s + dev_load_relaxed32(&s->first);
        if (BLK_STATE(st) != BLK_LIVE) {
            heap_report(false, p == user ? BAD_DOUBLE : BAD_IN_FREED, p);
            return false;
        }
        if (p != user) {
            heap_report(false, BAD_NOT_START, p);
            return false;
        }
        if (dev_cas32(&s->state, st, st - BLK_LIVE + BLK_FREE))
            return true;
    }
}

/* The words a span or large block starts with, before it is first handed out. */
static void block_init(struct dev_block_hdr *s, uint32_t kind, uint32_t cls, uint64_t size)
{
    s->magic = MAGIC;
    s->kind = kind;
    s->cls = cls;
    s->size = size;
    s->first = HDR;
    s->state = BLK_FREE;
}

static void *span_alloc(uint64_t size, uint64_t align)
{
    uint64_t worst = align > HDR ? align : HDR;
    uint64_t units = (size + worst + UNIT - 1) >> UNIT_SHIFT;
    uint32_t b = span_bucket(units);
    struct dev_block_hdr *s = stack_pop(&dev_heap.span_free[b]);
    if (s == (struct dev_block_hdr *)0) {
        uint32_t *word;
        uint64_t base = carve(1ull << b, &word);
        if (base == 0)
            return (void *)0;
        s = (struct dev_block_hdr *)(uintptr_t)base;
        block_init(s, KIND_SPAN, b, (1ull << b) << UNIT_SHIFT);
        for (uint32_t u = 1u << b; u-- > 0;) /* the first unit last */
            dev_store_release32(&word[u], KIND_SPAN | u << 4);
    }
    return block_take(s, align);
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
 * the host never frees device memory while a kernel runs.  A class holds
 * room for the request and its worst alignment offset, whatever the base. */
static void *large_alloc(uint64_t size, uint64_t align)
{
    uint64_t cap;
    uint32_t c = large_class(size + (align > HDR ? align : HDR), &cap);
    struct dev_block_hdr *s = stack_pop(&dev_heap.large_free[c]);
    if (s == (struct dev_block_hdr *)0) {
        uint64_t base = host_alloc(cap, UNIT);
        if (base == 0)
            return (void *)0;
        s = (struct dev_block_hdr *)(uintptr_t)base;
        block_init(s, KIND_LARGE, c, cap);
        if (!map_add(base, cap)) {
            host_free(base);
            return (void *)0;
        }
    }
    return block_take(s, align);
}

/* ---- API ------------------------------------------------------------------------------------ */

/* align: a power of two. */
static void *heap_alloc(uint64_t size, uint64_t align)
{
    if (!tether_device_attached())
        return (void *)0;
    if (align <= 16 && size <= SMALL_MAX)
        return small_alloc(size == 0 ? 1 : size);
    uint64_t worst = align > HDR ? align : HDR; /* most bytes before the user data */
    if (worst > BLOCK_MAX || size > BLOCK_MAX - worst) {
        heap_say_once(SAID_TOO_BIG,
                      "tether: malloc(%llu) aligned to %llu: larger than the device heap's "
                      "largest block (2^47 bytes); said once\n",
                      size, align);
        return (void *)0;
    }
    if (size + worst <= SPAN_MAX)
        return span_alloc(size, align);
    return large_alloc(size, align);
}

DEV_OUT_OF_LINE void *tether_device_malloc(uint64_t size)
{
    return heap_alloc(size, 16);
}

DEV_OUT_OF_LINE void *tether_device_aligned_alloc(uint64_t align, uint64_t size)
{
    if (align == 0 || (align & (align - 1)) != 0)
        return (void *)0;
    return heap_alloc(size, align);
}

DEV_OUT_OF_LINE void *tether_device_calloc(uint64_t n, uint64_t size)
{
    if (size != 0 && n > (~(uint64_t)0) / size)
        return (void *)0;
    unsigned char *p = (unsigned char *)tether_device_malloc(n * size);
    if (p != (unsigned char *)0)
        __builtin_memset(p, 0, n * size);
    return p;
}

/* Where a pointer lies. */
enum heap_at {
    AT_FOREIGN, /* not in the heap */
    AT_NONE,    /* in a chunk, but in no slab or span */
    AT_SLAB,    /* in the slab *s_p */
    AT_BLOCK,   /* in the span or large block *s_p */
};

static enum heap_at heap_locate(uint64_t p, struct dev_block_hdr **s_p)
{
    struct dev_block_hdr *r = map_find(p);
    if (r == (struct dev_block_hdr *)0)
        return AT_FOREIGN;
    if (r->kind == KIND_LARGE) {
        *s_p = r;
        return AT_BLOCK;
    }
    uint64_t u = (p - (uint64_t)(uintptr_t)r) >> UNIT_SHIFT;
    uint32_t word = u != 0 ? dev_load_acquire32(&chunk_units(r)[u]) : 0;
    if (word == 0)
        return AT_NONE;
    *s_p = (struct dev_block_hdr *)((uintptr_t)r + ((u - (word >> 4)) << UNIT_SHIFT));
    return (word & 15u) == KIND_SLAB ? AT_SLAB : AT_BLOCK;
}

/* The index of the slab block starting at p, or -1 if p starts none. */
static int64_t slab_index(const struct dev_block_hdr *s, uint64_t p)
{
    uint64_t off = p - (uint64_t)(uintptr_t)s;
    if (off < s->first || (off - s->first) % s->block != 0 ||
        (off - s->first) / s->block >= s->nblocks)
        return -1;
    return (int64_t)((off - s->first) / s->block);
}

static void small_free(struct dev_block_hdr *s, uint64_t p)
{
    int64_t i = slab_index(s, p);
    if (i < 0) {
        heap_report(false, BAD_NOT_START, p);
        return;
    }
    uint32_t bit = 1u << (i % 32);
    uint32_t old = dev_fetch_and32(&slab_bitmap(s)[i / 32], ~bit);
    if ((old & bit) == 0) {
        heap_report(false, BAD_DOUBLE, p);
        return;
    }
    if (dev_fetch_add32(&s->nfree, 1) == 0) /* it was full: point allocations at it */
        dev_store_release64(&dev_heap.class_hint[s->cls], (uint64_t)(uintptr_t)s);
}

/* A pointer that is not the heap's: libc's on host offload; reported on GPUs. */
HEAP_COLD static void foreign_free(void *ptr)
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
        heap_report(false, BAD_SHARED, p);
        return;
    }
    if (local) {
        heap_report(false, BAD_LOCAL, p);
        return;
    }
#endif
    heap_report(false, BAD_FOREIGN, p);
#else
    __libc_free(ptr);
#endif
}

DEV_OUT_OF_LINE void tether_device_free(void *ptr)
{
    if (ptr == (void *)0)
        return;
    uint64_t p = (uint64_t)(uintptr_t)ptr;
    struct dev_block_hdr *s = (struct dev_block_hdr *)0;
    switch (heap_locate(p, &s)) {
    case AT_FOREIGN:
        foreign_free(ptr);
        return;
    case AT_NONE:
        heap_report(false, BAD_NOT_START, p);
        return;
    case AT_SLAB:
        small_free(s, p);
        return;
    case AT_BLOCK:
        if (block_release(s, p))
            stack_push(s->kind == KIND_LARGE ? &dev_heap.large_free[s->cls]
                                             : &dev_heap.span_free[s->cls],
                       s);
        return;
    }
}

/* Bytes usable at p, the start of a live block; 0 when p is not one (reported when `realloc_`),
 * with *foreign_p true when p is not the heap's at all. */
static uint64_t heap_usable(uint64_t p, bool realloc_, bool *foreign_p)
{
    struct dev_block_hdr *s = (struct dev_block_hdr *)0;
    enum heap_at at = heap_locate(p, &s);
    enum heap_bad why = BAD_NOT_START;
    *foreign_p = at == AT_FOREIGN;
    if (at == AT_SLAB) {
        int64_t i = slab_index(s, p);
        if (i >= 0 && (dev_load_relaxed32(&slab_bitmap(s)[i / 32]) & (1u << (i % 32))) != 0)
            return s->block;
        why = i >= 0 ? BAD_DOUBLE : BAD_NOT_START;
    } else if (at == AT_BLOCK) {
        uint32_t st = dev_load_acquire32(&s->state);
        uint64_t first = dev_load_relaxed32(&s->first);
        bool start = p == (uint64_t)(uintptr_t)s + first;
        if (BLK_STATE(st) == BLK_LIVE && start)
            return s->size - first;
        why = BLK_STATE(st) != BLK_LIVE ? (start ? BAD_DOUBLE : BAD_IN_FREED) : BAD_NOT_START;
    } else if (at == AT_FOREIGN) {
        why = BAD_FOREIGN;
    }
    if (realloc_ && (at != AT_FOREIGN || RPC_ARCH_SIMT))
        heap_report(true, why, p);
    return 0;
}

DEV_OUT_OF_LINE uint64_t tether_device_usable_size(const void *ptr)
{
    bool foreign;
    return ptr == (const void *)0 ? 0 : heap_usable((uint64_t)(uintptr_t)ptr, false, &foreign);
}

DEV_OUT_OF_LINE void *tether_device_realloc(void *ptr, uint64_t size)
{
    if (ptr == (void *)0)
        return tether_device_malloc(size);
    if (size == 0) {
        tether_device_free(ptr);
        return (void *)0;
    }
    bool foreign;
    uint64_t usable = heap_usable((uint64_t)(uintptr_t)ptr, true, &foreign);
    if (usable == 0) {
#if !RPC_ARCH_SIMT
        if (foreign)
            return __libc_realloc(ptr, size);
#endif
        return (void *)0;
    }
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
