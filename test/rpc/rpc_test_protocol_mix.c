/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/rpc_test_protocol_mix.c - rpc_test_protocol's short and fenced calls mixed on one port,
 * in every shape, past several wraps of the seq.
 */
#include "rpc_test_protocol.h"

/* 1c: short and fenced calls mixed on one port, in every shape, past several wraps of the
 * 8-bit seq.  `read` models the client's "buffers read since the last fenced flip" (RPC_PS_READ
 * in the handle, RPC_CS_READ in the state word while the port is closed and client-owned). */
struct mix {
    struct pair p;
    uint64_t rng;
    uint32_t calls; /* calls opened on port 0 so far (the seq of the last is calls & 0xff) */
    bool read;
};

static uint64_t mix_rand(struct mix *m, uint64_t below)
{
    m->rng = test_mix(m->rng);
    return m->rng % below;
}

static void mix_open(struct mix *m, rpc_port_t *cp, uint32_t opcode, uint64_t mask)
{
    uint32_t c, s;
    mailbox(&m->p, 0, &c, &s);
    REQUIRE(c == s);
    REQUIRE(req_all_zero(&m->p, 0));
    REQUIRE(rpc_client_try_open_port(&m->p.client, opcode, mask, 0, cp));
    m->calls++;
    REQUIREF(((cp->state_ & RPC_PS_READ) != 0) == m->read, "call %u: read state", m->calls);
}

static void mix_close(struct mix *m, rpc_port_t *cp)
{
    bool owned = (cp->state_ & RPC_PS_OWNED) != 0;
    rpc_client_close(&m->p.client, cp);
    if (!owned)
        m->read = false; /* the server has the port: not known, nothing to fence */
    uint64_t st = client_state(&m->p, 0);
    REQUIRE((st & RPC_CS_LOCK) == 0);
    REQUIRE(((st & RPC_CS_KNOWN) != 0) == owned);
    REQUIREF(((st & RPC_CS_READ) != 0) == m->read, "call %u: state word %#llx", m->calls,
             (unsigned long long)st);
    REQUIRE(((st >> RPC_CS_SEQ_SHIFT) & 0xff) == (m->calls & 0xff));
}

static void mix_short(struct mix *m, rpc_port_t *cp, const uint64_t pkt[8], uint32_t nbytes)
{
    rpc_client_send_short(&m->p.client, cp, pkt, nbytes);
    m->read = false;
    REQUIRE(client_flag(&m->p, 0) & RPC_FLAG_SHORT);
    REQUIRE((atomic_load(&header_of(&m->p, 0)->req[0]) & 0xffffu) == (0x8000u | (m->calls & 0xff)));
    REQUIRE(!rpc_client_try_recv(&m->p.client, cp, NULL, NULL)); /* whatever the head slot holds */
}

static void mix_fenced_send(struct mix *m, rpc_port_t *cp, uint64_t seed)
{
    REQUIRE(rpc_client_try_send(&m->p.client, cp, fill_pattern, &seed));
    m->read = false;
    REQUIRE((client_flag(&m->p, 0) & RPC_FLAG_SHORT) == 0);
    REQUIRE(req_all_zero(&m->p, 0));
}

static void mix_server_open(struct mix *m, rpc_port_t *sp, uint32_t opcode, uint64_t mask)
{
    REQUIRE(rpc_server_try_open(&m->p.server, sp));
    REQUIRE(rpc_port_index(sp) == 0 && rpc_port_opcode(sp) == opcode);
    REQUIRE(rpc_port_lane_mask(sp) == mask);
    REQUIRE(req_all_zero(&m->p, 0));
}

static void mix_server_recv_short(struct mix *m, rpc_port_t *sp, uint32_t lane,
                                  const uint64_t pkt[8], uint32_t nbytes)
{
    struct grabbed g;
    g.seen = 0;
    REQUIRE(rpc_server_try_recv(&m->p.server, sp, grab, &g) && g.seen == 1ull << lane);
    REQUIREF(short_bytes_ok(&g.buf[lane], pkt, nbytes), "call %u", m->calls);
}

void test_short_mix(uint32_t lanes, uint32_t calls, uint64_t seed)
{
    struct mix m;
    memset(&m, 0, sizeof(m));
    pair_init(&m.p, 1, lanes);
    m.rng = seed;
    uint64_t all = lanes == 64 ? ~0ull : (1ull << lanes) - 1;
    uint32_t shapes[10] = {0};
    for (uint32_t i = 0; i < calls; i++) {
        uint32_t shape = (uint32_t)mix_rand(&m, 10), lane = (uint32_t)mix_rand(&m, lanes);
        uint32_t nbytes = (uint32_t)mix_rand(&m, RPC_SHORT_MAX + 1);
        uint32_t opcode = (uint32_t)test_mix(i + seed);
        uint64_t mask = 1ull << lane, pkt[8], a = test_mix(i) ^ seed, b = a + 1;
        uint64_t h0 = a & head_mask48, h1 = test_mix(a) & head_mask48;
        rpc_port_t cp, sp, other;
        make_packet(pkt, i);
        shapes[shape]++;
        switch (shape) {
        case 0: /* short, answer by head (buffers maybe read through peek) */
        case 1: /* short, answer read from the buffers */
            mix_open(&m, &cp, opcode, mask);
            mix_short(&m, &cp, pkt, nbytes);
            mix_server_open(&m, &sp, opcode, mask);
            mix_server_recv_short(&m, &sp, lane, pkt, nbytes);
            rpc_port_set_head(&sp, h0, h1);
            REQUIRE(rpc_server_try_send(&m.p.server, &sp, fill_pattern, &a));
            rpc_server_close(&m.p.server, &sp);
            if (shape == 0) {
                REQUIRE(rpc_client_try_recv(&m.p.client, &cp, NULL, NULL));
                if (mix_rand(&m, 2)) {
                    rpc_client_peek(&m.p.client, &cp, check_pattern, &a);
                    m.read = true;
                }
            } else {
                REQUIRE(rpc_client_try_recv(&m.p.client, &cp, check_pattern, &a));
                m.read = true;
            }
            REQUIRE(rpc_port_head(&cp, 0) == h0 && rpc_port_head(&cp, 1) == h1);
            mix_close(&m, &cp);
            break;
        case 2: /* short, fire and forget (answered by the server anyway, or not) */
            mix_open(&m, &cp, opcode, mask);
            mix_short(&m, &cp, pkt, nbytes);
            mix_close(&m, &cp);
            REQUIRE(!rpc_client_try_open_port(&m.p.client, opcode, mask, 0, &other));
            mix_server_open(&m, &sp, opcode, mask);
            mix_server_recv_short(&m, &sp, lane, pkt, nbytes);
            if (mix_rand(&m, 2)) {
                rpc_port_set_head(&sp, h0, h1);
                REQUIRE(rpc_server_try_send(&m.p.server, &sp, fill_pattern, &a));
            }
            rpc_server_close(&m.p.server, &sp);
            break;
        case 3: /* short, then a fenced second packet */
            mix_open(&m, &cp, opcode, mask);
            mix_short(&m, &cp, pkt, nbytes);
            REQUIRE(!rpc_client_try_send(&m.p.client, &cp, fill_pattern, &b)); /* server's turn */
            mix_server_open(&m, &sp, opcode, mask);
            mix_server_recv_short(&m, &sp, lane, pkt, nbytes);
            REQUIRE(!rpc_server_try_recv(&m.p.server, &sp, check_pattern, &b)); /* hands back */
            mix_fenced_send(&m, &cp, b);
            REQUIRE(rpc_server_try_recv(&m.p.server, &sp, check_pattern, &b));
            rpc_port_set_head(&sp, h0, h1);
            REQUIRE(rpc_server_try_send(&m.p.server, &sp, fill_pattern, &a));
            REQUIRE(rpc_client_try_recv(&m.p.client, &cp, check_pattern, &a));
            m.read = true;
            REQUIRE(rpc_port_head(&cp, 0) == h0 && rpc_port_head(&cp, 1) == h1);
            rpc_server_close(&m.p.server, &sp);
            mix_close(&m, &cp);
            break;
        case 4: /* fenced, any lanes, answer read from the buffers or by head */
            mask = mix_rand(&m, 2) ? mask : (test_mix(a) & all) | mask;
            mix_open(&m, &cp, opcode, mask);
            mix_fenced_send(&m, &cp, b);
            mix_server_open(&m, &sp, opcode, mask);
            REQUIRE(rpc_server_try_recv(&m.p.server, &sp, check_pattern, &b));
            rpc_port_set_head(&sp, h0, h1);
            REQUIRE(rpc_server_try_send(&m.p.server, &sp, fill_pattern, &a));
            if (mix_rand(&m, 2)) {
                REQUIRE(rpc_client_try_recv(&m.p.client, &cp, check_pattern, &a));
                m.read = true;
            } else {
                REQUIRE(rpc_client_try_recv(&m.p.client, &cp, NULL, NULL));
            }
            REQUIRE(rpc_port_head(&cp, 0) == h0 && rpc_port_head(&cp, 1) == h1);
            mix_close(&m, &cp);
            rpc_server_close(&m.p.server, &sp);
            break;
        case 5: /* fenced fire and forget */
            mix_open(&m, &cp, opcode, mask);
            mix_fenced_send(&m, &cp, b);
            mix_close(&m, &cp);
            mix_server_open(&m, &sp, opcode, mask);
            REQUIRE(rpc_server_try_recv(&m.p.server, &sp, check_pattern, &b));
            rpc_server_close(&m.p.server, &sp);
            break;
        case 6: { /* one-packet streams both ways */
            const void *src[RPC_LANES_MAX];
            void *dst[RPC_LANES_MAX];
            uint64_t size[RPC_LANES_MAX], cap[RPC_LANES_MAX], got_size[RPC_LANES_MAX];
            unsigned char back[RPC_STREAM_FIRST], into[RPC_STREAM_FIRST];
            size[lane] = nbytes % (RPC_STREAM_FIRST + 1);
            src[lane] = pkt;
            cap[lane] = sizeof(into);
            dst[lane] = into;
            mix_open(&m, &cp, opcode, mask);
            rpc_client_send_n(&m.p.client, &cp, src, size);
            m.read = false;
            REQUIRE((client_flag(&m.p, 0) & RPC_FLAG_SHORT) == 0);
            mix_server_open(&m, &sp, opcode, mask);
            memset(into, 0, sizeof(into));
            rpc_server_recv_n(&m.p.server, &sp, dst, cap, got_size);
            REQUIRE(got_size[lane] == size[lane] && memcmp(into, pkt, size[lane]) == 0);
            for (uint32_t k = 0; k < sizeof(back); k++)
                back[k] = (unsigned char)(a + k);
            src[lane] = back;
            size[lane] = a % (RPC_STREAM_FIRST + 1);
            rpc_server_send_n(&m.p.server, &sp, src, size);
            rpc_server_close(&m.p.server, &sp);
            memset(into, 0, sizeof(into));
            rpc_client_recv_n(&m.p.client, &cp, dst, cap, got_size);
            m.read = true;
            REQUIRE(got_size[lane] == size[lane] && memcmp(into, back, size[lane]) == 0);
            mix_close(&m, &cp);
            break;
        }
        case 7: /* short, two packets answered (read, then by head) */
            mix_open(&m, &cp, opcode, mask);
            mix_short(&m, &cp, pkt, nbytes);
            mix_server_open(&m, &sp, opcode, mask);
            mix_server_recv_short(&m, &sp, lane, pkt, nbytes);
            REQUIRE(rpc_server_try_send(&m.p.server, &sp, fill_pattern, &a));
            REQUIRE(rpc_client_try_recv(&m.p.client, &cp, check_pattern, &a));
            m.read = true;
            REQUIRE(!rpc_server_try_send(&m.p.server, &sp, fill_pattern, &b)); /* client's turn */
            REQUIRE(!rpc_client_try_recv(&m.p.client, &cp, NULL, NULL));       /* hands back */
            m.read = false;
            rpc_port_set_head(&sp, h0, h1);
            REQUIRE(rpc_server_try_send(&m.p.server, &sp, fill_pattern, &b));
            REQUIRE(rpc_client_try_recv(&m.p.client, &cp, NULL, NULL));
            REQUIRE(rpc_port_head(&cp, 0) == h0 && rpc_port_head(&cp, 1) == h1);
            rpc_server_close(&m.p.server, &sp);
            mix_close(&m, &cp);
            break;
        case 8: /* open and close with no send: the state word keeps its read bit */
            mix_open(&m, &cp, opcode, mask);
            mix_close(&m, &cp);
            REQUIRE(!rpc_server_try_open(&m.p.server, &sp));
            break;
        case 9: /* a short call whose words are late, then arrive */
            mix_open(&m, &cp, opcode, mask);
            mix_short(&m, &cp, pkt, nbytes);
            {
                uint32_t n = (nbytes + 5) / 6, k = (uint32_t)mix_rand(&m, n + 1);
                rpc_head_word_t *req = header_of(&m.p, 0)->req;
                uint64_t saved = atomic_load(&req[k]);
                atomic_store(&req[k], 0);
                REQUIRE(!rpc_server_try_open(&m.p.server, &sp) && !server_locked(&m.p, 0));
                atomic_store(&req[k], saved);
            }
            mix_server_open(&m, &sp, opcode, mask);
            mix_server_recv_short(&m, &sp, lane, pkt, nbytes);
            rpc_port_set_head(&sp, h0, h1);
            REQUIRE(rpc_server_try_send(&m.p.server, &sp, NULL, NULL));
            rpc_server_close(&m.p.server, &sp);
            REQUIRE(rpc_client_try_recv(&m.p.client, &cp, NULL, NULL));
            REQUIRE(rpc_port_head(&cp, 0) == h0 && rpc_port_head(&cp, 1) == h1);
            mix_close(&m, &cp);
            break;
        }
        uint32_t c, s;
        mailbox(&m.p, 0, &c, &s);
        REQUIREF(c == s, "call %u shape %u", m.calls, shape);
        REQUIRE(req_all_zero(&m.p, 0));
        REQUIRE(!server_locked(&m.p, 0));
    }
    for (uint32_t k = 0; k < 10; k++)
        REQUIREF(shapes[k] > 0, "shape %u never ran", k);
    REQUIRE(m.calls >= 600);
    pair_fini(&m.p);
}
