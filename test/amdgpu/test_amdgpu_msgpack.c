/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_amdgpu_msgpack.c - the bounds-checked MessagePack reader on hand-encoded input: every
 * type the reader knows, big-endian widths, sign extension, nesting, and truncation at every
 * byte of a valid document.
 */
#include <string.h>

#include "amdgpu_msgpack.h"
#include "amdgpu_test.h"

static struct amdgpu_mp_value next_ok(struct amdgpu_mp_reader *r)
{
    struct amdgpu_mp_value v;

    REQUIRE_RC(amdgpu_mp_next(r, &v), TETHER_OK);
    return v;
}

static void test_scalars(void)
{
    static const uint8_t buf[] = {
        0x05,                                                 /* fixint 5 */
        0xff,                                                 /* negative fixint -1 */
        0xc0,                                                 /* nil */
        0xc2, 0xc3,                                           /* false, true */
        0xcc, 0xfe,                                           /* uint8 254 */
        0xcd, 0x12, 0x34,                                     /* uint16 0x1234 */
        0xce, 0x89, 0xab, 0xcd, 0xef,                         /* uint32 */
        0xcf, 1,    2,    3,    4,    5,    6,    7,    8,    /* uint64 */
        0xd0, 0x80,                                           /* int8 -128 */
        0xd1, 0xff, 0x00,                                     /* int16 -256 */
        0xd2, 0xff, 0xff, 0xff, 0xfe,                         /* int32 -2 */
        0xd3, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* int64 max */
        0xca, 0x3f, 0xc0, 0x00, 0x00,                         /* float32 1.5 */
        0xcb, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18, /* float64 pi */
    };
    struct amdgpu_mp_reader r;
    struct amdgpu_mp_value v;
    uint64_t u;

    amdgpu_mp_init(&r, buf, sizeof(buf));
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_UINT && v.v.u == 5);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_INT && v.v.i == -1);
    REQUIRE_RC(amdgpu_mp_to_uint(&v, &u), TETHER_ERR_BAD_IMAGE);
    REQUIRE(next_ok(&r).kind == AMDGPU_MP_NIL);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_BOOL && !v.v.b);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_BOOL && v.v.b);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_UINT && v.v.u == 254);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_UINT && v.v.u == 0x1234);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_UINT && v.v.u == 0x89abcdefu);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_UINT && v.v.u == 0x0102030405060708ull);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_INT && v.v.i == -128);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_INT && v.v.i == -256);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_INT && v.v.i == -2);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_INT && v.v.i == INT64_MAX);
    REQUIRE_RC(amdgpu_mp_to_uint(&v, &u), TETHER_OK);
    REQUIRE(u == (uint64_t)INT64_MAX);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_FLOAT && v.v.f == 1.5);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_FLOAT && v.v.f > 3.14159 && v.v.f < 3.1416);
    REQUIRE(amdgpu_mp_at_end(&r));
    REQUIRE_RC(amdgpu_mp_next(&r, &v), TETHER_ERR_BAD_IMAGE);
}

static void test_bytes(void)
{
    static const uint8_t buf[] = {
        0xa3, 'a',  'b',  'c',       /* fixstr */
        0xd9, 0x02, 'h',  'i',       /* str8 */
        0xda, 0x00, 0x01, 'x',       /* str16 */
        0xdb, 0,    0,    0,    0,   /* str32, empty */
        0xc4, 0x02, 0xde, 0xad,      /* bin8 */
        0xd4, 0x07, 0x55,            /* fixext1, type 7 */
        0xc7, 0x02, 0xfe, 0x01, 0x02 /* ext8, type -2 */
    };
    struct amdgpu_mp_reader r;
    struct amdgpu_mp_value v;

    amdgpu_mp_init(&r, buf, sizeof(buf));
    v = next_ok(&r);
    REQUIRE(amdgpu_mp_str_eq(&v, "abc"));
    REQUIRE(!amdgpu_mp_str_eq(&v, "ab"));
    REQUIRE(!amdgpu_mp_str_eq(&v, "abcd"));
    v = next_ok(&r);
    REQUIRE(amdgpu_mp_str_eq(&v, "hi"));
    v = next_ok(&r);
    REQUIRE(amdgpu_mp_str_eq(&v, "x"));
    v = next_ok(&r);
    REQUIRE(amdgpu_mp_str_eq(&v, ""));
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_BIN && v.v.bytes.len == 2 && v.v.bytes.ptr[0] == 0xde);
    REQUIRE(!amdgpu_mp_str_eq(&v, "\xde\xad"));
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_EXT && v.v.bytes.ext_type == 7 && v.v.bytes.len == 1 &&
            v.v.bytes.ptr[0] == 0x55);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_EXT && v.v.bytes.ext_type == -2 && v.v.bytes.len == 2);
    REQUIRE(amdgpu_mp_at_end(&r));
}

/* {"k": [1, {"a": nil}, "s"], "n": 7} followed by 0x2a. */
static const uint8_t nested[] = {0x82, 0xa1, 'k', 0x93, 0x01, 0x81, 0xa1, 'a',
                                 0xc0, 0xa1, 's', 0xa1, 'n',  0x07, 0x2a};

static void test_nesting(void)
{
    struct amdgpu_mp_reader r;
    struct amdgpu_mp_value v;
    uint64_t u;

    amdgpu_mp_init(&r, nested, sizeof(nested));
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_MAP && v.v.count == 2);
    v = next_ok(&r);
    REQUIRE(amdgpu_mp_str_eq(&v, "k"));
    /* skip the array value, nested map included */
    REQUIRE_RC(amdgpu_mp_skip(&r), TETHER_OK);
    v = next_ok(&r);
    REQUIRE(amdgpu_mp_str_eq(&v, "n"));
    REQUIRE_RC(amdgpu_mp_read_uint(&r, 6, &u), TETHER_ERR_BAD_IMAGE); /* 7 > max 6, and */
    REQUIRE_RC(amdgpu_mp_read_uint(&r, 7, &u), TETHER_OK);            /* the cursor stayed */
    REQUIRE(u == 7);
    v = next_ok(&r);
    REQUIRE(v.kind == AMDGPU_MP_UINT && v.v.u == 42);

    /* skipping the whole document consumes exactly the map */
    amdgpu_mp_init(&r, nested, sizeof(nested));
    REQUIRE_RC(amdgpu_mp_skip(&r), TETHER_OK);
    REQUIRE(r.end - r.pos == 1);

    /* every truncation of the map is refused by skip, and never reads past the end */
    for (size_t n = 0; n < sizeof(nested) - 1; n++) {
        amdgpu_mp_init(&r, nested, n);
        REQUIRE_RC(amdgpu_mp_skip(&r), TETHER_ERR_BAD_IMAGE);
        REQUIRE(r.pos == nested); /* a failed skip leaves the cursor */
    }
}

static void test_malformed(void)
{
    static const uint8_t never_used[] = {0xc1};
    static const uint8_t short_u32[] = {0xce, 1, 2, 3};
    static const uint8_t short_str[] = {0xa5, 'a', 'b'};
    static const uint8_t short_len[] = {0xdb, 0, 0};
    static const uint8_t huge_str[] = {0xdb, 0xff, 0xff, 0xff, 0xff, 'a'};
    /* an array claiming 2^32-1 elements: skip must refuse it at once, not loop */
    static const uint8_t huge_array[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02};
    static const uint8_t huge_map[] = {0xdf, 0x80, 0x00, 0x00, 0x00, 0x01, 0x02};
    static const uint8_t short_ext[] = {0xc7, 0x01};
    struct amdgpu_mp_reader r;
    struct amdgpu_mp_value v;

    amdgpu_mp_init(&r, never_used, sizeof(never_used));
    REQUIRE_RC(amdgpu_mp_next(&r, &v), TETHER_ERR_BAD_IMAGE);
    amdgpu_mp_init(&r, short_u32, sizeof(short_u32));
    REQUIRE_RC(amdgpu_mp_next(&r, &v), TETHER_ERR_BAD_IMAGE);
    amdgpu_mp_init(&r, short_str, sizeof(short_str));
    REQUIRE_RC(amdgpu_mp_next(&r, &v), TETHER_ERR_BAD_IMAGE);
    amdgpu_mp_init(&r, short_len, sizeof(short_len));
    REQUIRE_RC(amdgpu_mp_next(&r, &v), TETHER_ERR_BAD_IMAGE);
    amdgpu_mp_init(&r, huge_str, sizeof(huge_str));
    REQUIRE_RC(amdgpu_mp_next(&r, &v), TETHER_ERR_BAD_IMAGE);
    amdgpu_mp_init(&r, short_ext, sizeof(short_ext));
    REQUIRE_RC(amdgpu_mp_next(&r, &v), TETHER_ERR_BAD_IMAGE);
    amdgpu_mp_init(&r, huge_array, sizeof(huge_array));
    REQUIRE_RC(amdgpu_mp_skip(&r), TETHER_ERR_BAD_IMAGE);
    amdgpu_mp_init(&r, huge_map, sizeof(huge_map));
    REQUIRE_RC(amdgpu_mp_skip(&r), TETHER_ERR_BAD_IMAGE);
    amdgpu_mp_init(&r, NULL, 0);
    REQUIRE(amdgpu_mp_at_end(&r));
    REQUIRE_RC(amdgpu_mp_next(&r, &v), TETHER_ERR_BAD_IMAGE);
    REQUIRE_RC(amdgpu_mp_next(NULL, &v), TETHER_ERR_INVALID);
}

int main(void)
{
    test_scalars();
    test_bytes();
    test_nesting();
    test_malformed();
    return tcheck_exit("amdgpu msgpack");
}
