/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/rpc_demo.c - the port protocol between two Linux processes.
 *
 * One MAP_SHARED mapping holds the region; fork() makes two processes.  The
 * child is the server (it plays the host of a GPU), the parent is the client
 * (it plays the GPU).  The client makes a few calls and the program tells
 * what happens on each side.  Exit status 0 when every reply was right.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rpc_stream.h"

enum {
    OP_ADD = 1,    /* send {a, b}, recv a + b */
    OP_PRINT = 2,  /* send_n text, no reply: fire and forget */
    OP_UPPER = 3,  /* send_n text, recv_n the text in capitals */
    OP_SQUARE = 4, /* one number per lane, each lane gets its square */
    OP_STOP = 5,   /* no data: the server stops */
};

#define PORTS 8u
#define DEMO_LOCK_WORDS 8u /* >= rpc_lock_size(PORTS) / 8, checked in main */
#define LANES 4u

static const char *op_name(uint32_t op)
{
    switch (op) {
    case OP_ADD:
        return "ADD";
    case OP_PRINT:
        return "PRINT";
    case OP_UPPER:
        return "UPPER";
    case OP_SQUARE:
        return "SQUARE";
    case OP_STOP:
        return "STOP";
    }
    return "?";
}

/* Mailbox bits of a port: c = the client's outbox flag, s = the server's.
 * c == s: client owns the port. */
static void show_bits(const char *who, struct rpc_process *p, uint32_t port)
{
    uint32_t c = atomic_load(&p->cflags[port]) & 1u;
    uint32_t s = atomic_load(&p->sflags[port]) & 1u;
    printf("%s     port %u mailbox: client bit %u, server bit %u -> %s owns the buffers\n", who,
           port, c, s, c == s ? "client" : "server");
}

/* ---- per-lane callbacks --------------------------------------------------- */

static void put_pair(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    (void)lane;
    b->data[0] = ((uint64_t *)arg)[0];
    b->data[1] = ((uint64_t *)arg)[1];
}

static void get_pair(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    (void)lane;
    ((uint64_t *)arg)[0] = b->data[0];
    ((uint64_t *)arg)[1] = b->data[1];
}

static void put_lane(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    b->data[0] = ((uint64_t *)arg)[lane];
}

static void get_lane(struct rpc_buffer *b, uint32_t lane, void *arg)
{
    ((uint64_t *)arg)[lane] = b->data[0];
}

/* ---- server (child process) ---------------------------------------------- */

static int serve(void *region)
{
    const char *me = "  [server]";
    uint64_t locks[DEMO_LOCK_WORDS] = {0}; /* rpc_lock_size(PORTS) bytes */
    struct rpc_server server;
    if (rpc_server_init(&server, region, PORTS, LANES, locks) != TETHER_OK)
        return 1;
    printf("%s pid %d polls the client's outbox bitmap for calls\n", me, (int)getpid());
    for (;;) {
        rpc_port_t port = rpc_server_open(&server);
        uint32_t op = rpc_port_opcode(&port), index = rpc_port_index(&port);
        uint64_t mask = rpc_port_lane_mask(&port);
        printf("%s found a call on port %u: %s, lane mask %#llx\n", me, index, op_name(op),
               (unsigned long long)mask);
        switch (op) {
        case OP_ADD: {
            uint64_t v[2];
            rpc_server_recv(&server, &port, get_pair, v);
            printf("%s recv %llu + %llu, send back %llu (flips the server bit)\n", me,
                   (unsigned long long)v[0], (unsigned long long)v[1],
                   (unsigned long long)(v[0] + v[1]));
            v[0] += v[1];
            rpc_server_send(&server, &port, put_pair, v);
            break;
        }
        case OP_PRINT:
        case OP_UPPER: {
            uint64_t size[LANES] = {0}, cap[LANES] = {0};
            char *text[LANES] = {0};
            rpc_server_recv_n_size(&server, &port, size);
            text[0] = calloc(1, size[0] + 1); /* the client uses lane 0 */
            if (!text[0])
                return 1;
            cap[0] = size[0];
            rpc_server_recv_n_data(&server, &port, (void *const *)text, cap);
            uint64_t packets =
                1 + (size[0] > RPC_STREAM_FIRST
                         ? (size[0] - RPC_STREAM_FIRST + RPC_BUFFER_SIZE - 1) / RPC_BUFFER_SIZE
                         : 0);
            printf("%s recv_n %llu bytes in %llu packet(s): \"%s\"\n", me,
                   (unsigned long long)size[0], (unsigned long long)packets, text[0]);
            if (op == OP_UPPER) {
                for (char *c = text[0]; *c; c++)
                    *c = (char)toupper((unsigned char)*c);
                const void *src[LANES] = {text[0]};
                rpc_server_send_n(&server, &port, src, size);
                printf("%s send_n it back in capitals\n", me);
            } else {
                printf("%s (no reply: the client did not wait)\n", me);
            }
            free(text[0]);
            break;
        }
        case OP_SQUARE: {
            uint64_t v[LANES] = {0};
            rpc_server_recv(&server, &port, get_lane, v);
            for (uint32_t l = 0; l < LANES; l++)
                if ((mask >> l) & 1) {
                    printf("%s   lane %u sent %llu\n", me, l, (unsigned long long)v[l]);
                    v[l] *= v[l];
                }
            rpc_server_send(&server, &port, put_lane, v);
            printf("%s send each lane its square\n", me);
            break;
        }
        case OP_STOP:
            printf("%s recv STOP, close and exit\n", me);
            rpc_server_close(&server, &port);
            return 0;
        default:
            printf("%s unknown opcode: close without reading\n", me);
        }
        rpc_server_close(&server, &port);
        printf("%s close port %u\n", me, index);
    }
}

/* ---- client (parent process) ---------------------------------------------- */

static int client_calls(void *region)
{
    const char *me = "[client]";
    uint64_t locks[DEMO_LOCK_WORDS] = {0}; /* rpc_lock_size(PORTS) bytes */
    struct rpc_client client;
    int bad = 0;
    if (rpc_client_init(&client, region, PORTS, LANES, locks) != TETHER_OK)
        return 1;

    /* 1. A plain call: one packet each way. */
    printf("\n%s 1) ADD: open a port, send one packet, wait for the reply\n", me);
    rpc_port_t port = rpc_client_open(&client, OP_ADD, 0x1, 0);
    printf("%s open: port %u is free and ours (client bit == server bit)\n", me,
           rpc_port_index(&port));
    uint64_t v[2] = {20, 22};
    rpc_client_send(&client, &port, put_pair, v);
    printf("%s send 20, 22 (flips the client bit: the buffers are the server's now)\n", me);
    show_bits(me, &client.process, rpc_port_index(&port));
    rpc_client_recv(&client, &port, get_pair, v);
    printf("%s recv %llu\n", me, (unsigned long long)v[0]);
    show_bits(me, &client.process, rpc_port_index(&port));
    bad |= v[0] != 42;
    rpc_client_close(&client, &port);

    /* 2. Fire and forget: send, close, go on. */
    const char *line = "hello from the client process; a string longer than one 64-byte packet "
                       "travels as several packets through the same buffer";
    printf("\n%s 2) PRINT: stream %zu bytes with send_n and close without waiting\n", me,
           strlen(line));
    port = rpc_client_open(&client, OP_PRINT, 0x1, 0);
    const void *src[LANES] = {line};
    uint64_t size[LANES] = {strlen(line)};
    rpc_client_send_n(&client, &port, src, size);
    rpc_client_close(&client, &port);
    printf("%s closed port %u right after sending; the server hands it back when done\n", me,
           rpc_port_index(&port));

    /* 3. Streams both ways on one port. */
    const char *word = "tether";
    printf("\n%s 3) UPPER: send_n \"%s\", recv_n the answer\n", me, word);
    port = rpc_client_open(&client, OP_UPPER, 0x1, 0);
    printf("%s open: port %u (port 0 may still be busy with PRINT)\n", me, rpc_port_index(&port));
    src[0] = word;
    size[0] = strlen(word);
    rpc_client_send_n(&client, &port, src, size);
    char answer[16] = {0};
    void *dst[LANES] = {answer};
    uint64_t cap[LANES] = {sizeof(answer) - 1}, got[LANES] = {0};
    rpc_client_recv_n(&client, &port, dst, cap, got);
    printf("%s recv_n %llu bytes: \"%s\"\n", me, (unsigned long long)got[0], answer);
    bad |= strcmp(answer, "TETHER") != 0;
    rpc_client_close(&client, &port);

    /* 4. A "warp" of 3 active lanes shares one port. */
    printf("\n%s 4) SQUARE: lanes 0, 1 and 3 of a 4-lane warp call together\n", me);
    uint64_t lanes[LANES] = {3, 4, 0, 5};
    port = rpc_client_open(&client, OP_SQUARE, 0xb, 0);
    rpc_client_send(&client, &port, put_lane, lanes);
    rpc_client_recv(&client, &port, get_lane, lanes);
    printf("%s recv lane 0: %llu, lane 1: %llu, lane 3: %llu (lane 2 was not in the mask)\n", me,
           (unsigned long long)lanes[0], (unsigned long long)lanes[1],
           (unsigned long long)lanes[3]);
    bad |= lanes[0] != 9 || lanes[1] != 16 || lanes[2] != 0 || lanes[3] != 25;
    rpc_client_close(&client, &port);

    printf("\n%s 5) STOP\n", me);
    port = rpc_client_open(&client, OP_STOP, 0x1, 0);
    rpc_client_send(&client, &port, put_pair, v);
    rpc_client_close(&client, &port);
    return bad;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (rpc_lock_size(PORTS) > DEMO_LOCK_WORDS * 8) {
        fprintf(stderr, "rpc_demo: DEMO_LOCK_WORDS is below rpc_lock_size(PORTS)\n");
        return 1;
    }
    uint64_t size = rpc_region_size(PORTS, LANES);
    void *region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) {
        perror("rpc_demo: mmap");
        return 1;
    }
    printf("tether rpc demo: two processes share one %llu-byte mapping: %u ports x %u lanes.\n"
           "Per port: a client bit, a server bit, a header and %u 64-byte buffers.\n"
           "A side may touch a port's buffers only while it owns them, and hands them over by\n"
           "flipping its own bit.  The client opens ports and makes calls; the server serves.\n",
           (unsigned long long)size, PORTS, LANES, LANES);
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        perror("rpc_demo: fork");
        return 1;
    }
    if (child == 0)
        _exit(serve(region));
    printf("[client] pid %d makes the calls\n", (int)getpid());
    int bad = client_calls(region);
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("rpc_demo: the server process failed\n");
        return 1;
    }
    printf("\n%s\n", bad ? "rpc_demo: a reply was wrong" : "rpc_demo: every reply was right");
    munmap(region, size);
    return bad;
}
