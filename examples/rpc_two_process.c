/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * examples/rpc_two_process.c - tether's RPC server library outside OpenMP: a server process
 * answers the calls of a client that runs in another process, over one shared mapping.
 *
 *   cc rpc_two_process.c $(pkg-config --cflags --libs tether-rpc) -o rpc_two_process
 *
 * The parent creates a memfd and forks.  The parent is the server: tether_rpc_server_create()
 * asks its shared_alloc callback for the port memory, which the callback places inside the
 * memfd; two user opcodes get handlers, one of them with user data (a ledger); the server
 * thread answers the calls.  The child is the client: it maps the memfd itself, finds the port
 * memory at the offset the server wrote into the mapping's header (so addresses need not match
 * between the processes), and makes calls with the port protocol's host client
 * (<tether/port/rpc.h>, its streams <tether/port/rpc_stream.h>) and the message framing of
 * <tether/rpc_opcodes.h>: a user call that
 * gets an answer, a long request and answer spread over many 64-byte packets, a call to an
 * opcode nobody registered, and the built-in WRITE service, which the server prints.
 *
 * Both sides check what they get; the exit status is 0 only when every check passed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tether/port/rpc.h>
#include <tether/port/rpc_stream.h>
#include <tether/rpc.h>
#include <tether/rpc_opcodes.h>

#define OP_DEPOSIT (TETHER_RPC_OP_USER_FIRST + 0) /* int64 amount -> int64 new balance */
#define OP_REVERSE (TETHER_RPC_OP_USER_FIRST + 1) /* bytes -> the same bytes reversed */
#define OP_NOBODY (TETHER_RPC_OP_USER_FIRST + 2)  /* no handler: answered UNHANDLED */

#define PORTS 4u
#define LANES 1u /* the client is one thread: one lane per port */
#define MAP_BYTES (1u << 20)
#define REGION_OFFSET 4096u
#define DEPOSITS 1000
#define REVERSE_MAX 1000u /* longest REVERSE request: 16 packets */

/* The start of the mapping: how the server tells the client where the port memory is. */
enum { WAITING = 0, READY = 1, FAILED = 2 };
struct shared_header {
    _Atomic uint32_t state; /* WAITING until the server is up */
    uint32_t ports;
    uint32_t lanes;
    uint32_t reserved;
    uint64_t region_offset; /* the port memory, from the start of the mapping */
};

static int fail(const char *who, const char *what)
{
    fprintf(stderr, "rpc_two_process: %s: FAIL: %s\n", who, what);
    return 1;
}

/* ---- client (child process): the port protocol's host client -------------------------- */

/* An answer message as it arrives, 64-byte packet by packet: a uint64 length, then the bytes
 * (struct tether_rpc_answer, then the handler's), of which the first `cap` are kept. */
struct answer_rx {
    unsigned char *dst;
    uint64_t cap;
    uint64_t len; /* the message's length, from its first packet */
    uint64_t got; /* bytes of the stream (length word included) taken so far */
};

static void answer_packet(struct rpc_buffer *buffer, uint32_t lane, void *arg)
{
    struct answer_rx *rx = arg;
    const unsigned char *p = (const unsigned char *)buffer->data;
    uint64_t n = RPC_BUFFER_SIZE;
    (void)lane;
    if (rx->got == 0) {
        memcpy(&rx->len, p, 8);
        p += 8;
        n -= 8;
        rx->got = 8;
    }
    uint64_t off = rx->got - 8, left = rx->len - off;
    if (n > left)
        n = left;
    if (off < rx->cap)
        memcpy(rx->dst + off, p, n < rx->cap - off ? n : rx->cap - off);
    rx->got += n;
}

/*
 * One call: the request message (tether/rpc_opcodes.h, MESSAGES: a uint64 length, then the
 * bytes, over one lane's 64-byte buffer, packet by packet), then for a synchronous call the
 * answer.  Its head (rpc.h, I3) says that it came; a short answer is all in the head
 * (tether/rpc_opcodes.h, inline answers) and then the buffers may not hold it, else the answer
 * message is in the buffers: struct tether_rpc_answer, then the handler's bytes.  Returns the
 * call's status (enum tether_rpc_call_status); the handler's bytes go to out (at most cap),
 * their number to *len_p.
 */
static uint32_t client_call(struct rpc_client *client, uint32_t opcode, const void *in,
                            uint64_t in_len, bool answer, void *out, uint64_t cap, uint64_t *len_p)
{
    rpc_port_t port = rpc_client_open(client, opcode, 1, 0);
    const void *src[1] = {in};
    uint64_t size[1] = {in_len};
    rpc_client_send_n(client, &port, src, size);
    if (!answer) {
        rpc_client_close(client, &port); /* fire and forget */
        return TETHER_RPC_CALL_OK;
    }

    rpc_client_recv(client, &port, NULL, NULL); /* waits for the head */
    uint64_t head[2] = {rpc_port_head(&port, 0), rpc_port_head(&port, 1)};
    uint32_t status = TETHER_RPC_CALL_ERROR;
    if (tether_rpc_inline_unpack(head, &status, len_p, out, cap)) {
        rpc_client_close(client, &port);
        return status;
    }
    unsigned char msg[sizeof(struct tether_rpc_answer) + REVERSE_MAX];
    struct answer_rx rx = {msg, sizeof msg, 0, 0};
    rpc_client_peek(client, &port, answer_packet, &rx); /* the first packet */
    while (rx.got < 8 + rx.len)
        rpc_client_recv(client, &port, answer_packet, &rx);
    rpc_client_close(client, &port);

    struct tether_rpc_answer ans;
    if (rx.len < sizeof ans || rx.len > sizeof msg)
        return TETHER_RPC_CALL_ERROR;
    memcpy(&ans, msg, sizeof ans);
    *len_p = rx.len - sizeof ans;
    memcpy(out, msg + sizeof ans, *len_p < cap ? *len_p : cap);
    return ans.status;
}

static int client_run(struct rpc_client *client)
{
    /* DEPOSIT: the handler adds to the ledger the server passed as user data. */
    int64_t balance = 0;
    for (int i = 1; i <= DEPOSITS; i++) {
        int64_t amount = i, got = 0;
        uint64_t len = 0;
        uint32_t st =
            client_call(client, OP_DEPOSIT, &amount, sizeof amount, true, &got, sizeof got, &len);
        balance += amount;
        if (st != TETHER_RPC_CALL_OK || len != sizeof got || got != balance)
            return fail("client", "DEPOSIT answer");
    }

    /* REVERSE: requests and answers of 0 to REVERSE_MAX bytes, up to 16 packets each way. */
    for (uint32_t n = 0; n <= REVERSE_MAX; n += 37) {
        char text[REVERSE_MAX], back[REVERSE_MAX];
        for (uint32_t k = 0; k < n; k++)
            text[k] = (char)('a' + (k * 7 + n) % 26);
        uint64_t len = 0;
        uint32_t st = client_call(client, OP_REVERSE, text, n, true, back, sizeof back, &len);
        if (st != TETHER_RPC_CALL_OK || len != n)
            return fail("client", "REVERSE answer length");
        for (uint32_t k = 0; k < n; k++)
            if (back[k] != text[n - 1 - k])
                return fail("client", "REVERSE answer bytes");
    }

    /* An opcode without a handler: an error answer, never a hang. */
    uint64_t len = 0;
    char none[8];
    if (client_call(client, OP_NOBODY, "?", 1, true, none, sizeof none, &len) !=
        TETHER_RPC_CALL_UNHANDLED)
        return fail("client", "unregistered opcode not answered UNHANDLED");

    /* WRITE, a built-in service: the server writes the line to its output (like puts). */
    char msg[sizeof(struct tether_rpc_write_hdr) + 64];
    struct tether_rpc_write_hdr hdr = {.stream = TETHER_RPC_STDOUT, .newline = 1};
    int n = snprintf(msg + sizeof hdr, sizeof msg - sizeof hdr, "%d deposits, balance %lld",
                     DEPOSITS, (long long)balance);
    memcpy(msg, &hdr, sizeof hdr);
    client_call(client, TETHER_RPC_OP_WRITE, msg, sizeof hdr + (uint64_t)n, false, NULL, 0, NULL);
    return 0;
}

/* The child: waits for the server, maps the memfd itself and plays the client. */
static int client_main(int fd, pid_t server)
{
    unsigned char *base = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        return fail("client", "mmap of the memfd");
    struct shared_header *hdr = (struct shared_header *)base;
    while (atomic_load_explicit(&hdr->state, memory_order_acquire) == WAITING) {
        if (getppid() != server)
            return fail("client", "the server process is gone");
        nanosleep(&(struct timespec){0, 100000}, NULL);
    }
    if (atomic_load(&hdr->state) != READY)
        return fail("client", "the server did not start");

    int rc = 1;
    void *locks = calloc(1, rpc_lock_size(hdr->ports)); /* the client's own port state words */
    struct rpc_client client;
    if (locks == NULL || rpc_client_init(&client, base + hdr->region_offset, hdr->ports, hdr->lanes,
                                         locks) != TETHER_OK) {
        fail("client", "rpc_client_init");
        goto out;
    }
    rc = client_run(&client);
out:
    free(locks);
    munmap(base, MAP_BYTES);
    return rc;
}

/* ---- server (parent process): the server library ---------------------------------------- */

/* The shared_alloc/shared_free callbacks: the port memory lives in the memfd mapping. */
struct mapping {
    unsigned char *base;
    int allocs;
    int frees;
};

static tether_status_t shared_alloc(void *ctx, size_t size, void **host_p, uint64_t *dev_p)
{
    struct mapping *m = ctx;
    if (m->allocs != 0 || REGION_OFFSET + size > MAP_BYTES)
        return TETHER_ERR_NO_MEMORY;
    m->allocs++;
    *host_p = m->base + REGION_OFFSET;
    *dev_p = (uint64_t)(uintptr_t)*host_p; /* the server's own address: only it uses this one */
    return TETHER_OK;
}

static void shared_free(void *ctx, void *host)
{
    struct mapping *m = ctx;
    if (host == m->base + REGION_OFFSET)
        m->frees++;
}

struct ledger {
    int64_t balance;
    int deposits;
};

/* Handlers run on the server thread, one at a time per server. */
static tether_status_t deposit(void *user, const struct tether_rpc_request *req,
                               struct tether_rpc_reply *reply)
{
    struct ledger *ledger = user;
    int64_t amount;
    if (req->size != sizeof amount)
        return TETHER_ERR_INVALID;
    memcpy(&amount, req->data, sizeof amount);
    ledger->balance += amount;
    ledger->deposits++;
    return tether_rpc_reply_append(reply, &ledger->balance, sizeof ledger->balance);
}

static tether_status_t reverse(void *user, const struct tether_rpc_request *req,
                               struct tether_rpc_reply *reply)
{
    (void)user;
    const unsigned char *in = req->data;
    for (size_t k = req->size; k > 0; k--) {
        tether_status_t st = tether_rpc_reply_append(reply, &in[k - 1], 1);
        if (st != TETHER_OK)
            return st;
    }
    return TETHER_OK;
}

/* Everything the server's output stream got (the WRITE call's line). */
static int read_back(FILE *f, char *buf, size_t cap)
{
    fflush(f);
    rewind(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    return (int)n;
}

static int server_main(unsigned char *base, pid_t client)
{
    struct shared_header *hdr = (struct shared_header *)base;
    struct mapping mapping = {base, 0, 0};
    struct ledger ledger = {0, 0};
    FILE *out = tmpfile(), *err = tmpfile();
    struct tether_rpc_server_config config = {
        .port_count = PORTS,
        .lane_count = LANES,
        .shared_alloc = shared_alloc,
        .shared_free = shared_free,
        .shared_ctx = &mapping,
        .out = out,
        .err = err,
    };
    struct tether_error error = {""};
    tether_rpc_server_t *server = NULL;
    int bad = 0, status = 0;

    if (out == NULL || err == NULL) {
        atomic_store(&hdr->state, FAILED);
        waitpid(client, &status, 0);
        return fail("server", "tmpfile");
    }
    tether_status_t st = tether_rpc_server_create(&config, &server, &error);
    if (st == TETHER_OK)
        st = tether_rpc_register(server, OP_DEPOSIT, deposit, &ledger);
    if (st == TETHER_OK)
        st = tether_rpc_register(server, OP_REVERSE, reverse, NULL);
    if (st == TETHER_OK)
        st = tether_rpc_server_start(server, NULL, &error);
    if (st != TETHER_OK) {
        fprintf(stderr, "rpc_two_process: server: %s (%s)\n", tether_status_str(st), error.msg);
        atomic_store(&hdr->state, FAILED);
        waitpid(client, &status, 0);
        tether_rpc_server_destroy(server);
        fclose(out);
        fclose(err);
        return 1;
    }
    hdr->ports = PORTS;
    hdr->lanes = LANES;
    hdr->region_offset = REGION_OFFSET;
    /* The thread serves while a "kernel" runs: here, while the client process lives. */
    tether_rpc_server_kernel_started(server);
    atomic_store_explicit(&hdr->state, READY, memory_order_release);
    printf("server pid %d: serving %u ports in a memfd mapping for client pid %d\n", (int)getpid(),
           PORTS, (int)client);

    if (waitpid(client, &status, 0) != client || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bad |= fail("server", "the client failed");
    tether_rpc_server_kernel_finished(server); /* every call served, output written */

    struct tether_rpc_stats stats;
    tether_rpc_server_stats(server, &stats);
    char wrote[256], want[256], diag[512];
    read_back(out, wrote, sizeof wrote);
    read_back(err, diag, sizeof diag);
    int64_t sum = (int64_t)DEPOSITS * (DEPOSITS + 1) / 2;
    snprintf(want, sizeof want, "%d deposits, balance %lld\n", DEPOSITS, (long long)sum);
    printf("server: the client wrote \"%.*s\"\n", (int)strcspn(wrote, "\n"), wrote);
    printf("server: ledger %d deposits, balance %lld; %llu calls, %llu unhandled\n",
           ledger.deposits, (long long)ledger.balance, (unsigned long long)stats.calls,
           (unsigned long long)stats.unhandled);
    if (ledger.deposits != DEPOSITS || ledger.balance != sum)
        bad |= fail("server", "ledger");
    if (strcmp(wrote, want) != 0)
        bad |= fail("server", "WRITE output");
    if (stats.unhandled != 1 || strstr(diag, "0x8002") == NULL)
        bad |= fail("server", "no diagnostic for the unregistered opcode");
    /* DEPOSITs, REVERSEs (0, 37, ..., 999), the unregistered call and the WRITE. */
    if (stats.calls != DEPOSITS + REVERSE_MAX / 37 + 1 + 2)
        bad |= fail("server", "call count");

    tether_rpc_server_destroy(server);
    if (mapping.allocs != 1 || mapping.frees != 1)
        bad |= fail("server", "port memory not allocated and freed exactly once");
    fclose(out);
    fclose(err);
    return bad;
}

int main(void)
{
    int fd = memfd_create("tether-rpc-example", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, MAP_BYTES) != 0)
        return fail("server", "memfd");
    unsigned char *base = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        return fail("server", "mmap");

    /* Fork before the server thread exists: the child starts from a one-thread process. */
    fflush(stdout);
    pid_t server = getpid();
    pid_t client = fork();
    if (client < 0)
        return fail("server", "fork");
    if (client == 0) {
        munmap(base, MAP_BYTES); /* the client maps the memfd on its own */
        _exit(client_main(fd, server));
    }
    int rc = server_main(base, client);
    munmap(base, MAP_BYTES);
    close(fd);
    printf("rpc_two_process: %s\n", rc == 0 ? "PASS" : "FAIL");
    return rc;
}
