/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_msgpack.c - bounds-checked MessagePack reader (see amdgpu_msgpack.h).
 */
#include "amdgpu_msgpack.h"

#include <string.h>

void amdgpu_mp_init(struct amdgpu_mp_reader *reader, const void *buf, size_t size)
{
    reader->pos = buf;
    reader->end = reader->pos + (buf != NULL ? size : 0);
}

bool amdgpu_mp_at_end(const struct amdgpu_mp_reader *reader)
{
    return reader->pos >= reader->end;
}

static size_t amdgpu_mp_left(const uint8_t *pos, const uint8_t *end)
{
    return (size_t)(end - pos);
}

/* Big-endian unsigned integer of n bytes (1, 2, 4 or 8); the caller checked the bounds. */
static uint64_t amdgpu_mp_be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;

    for (size_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

tether_status_t amdgpu_mp_next(struct amdgpu_mp_reader *reader, struct amdgpu_mp_value *value_p)
{
    struct amdgpu_mp_value val;
    const uint8_t *p;
    size_t len_bytes = 0; /* width of a length field that follows the type byte */
    size_t int_bytes = 0; /* width of an integer/float payload */
    uint8_t t;

    if (reader == NULL || value_p == NULL)
        return TETHER_ERR_INVALID;
    p = reader->pos;
    if (p == NULL || p >= reader->end)
        return TETHER_ERR_BAD_IMAGE;
    t = *p++;
    memset(&val, 0, sizeof(val));

    if (t <= 0x7f) {
        val.kind = AMDGPU_MP_UINT;
        val.v.u = t;
    } else if (t >= 0xe0) {
        val.kind = AMDGPU_MP_INT;
        val.v.i = (int8_t)t;
    } else if ((t & 0xf0) == 0x80 || (t & 0xf0) == 0x90) {
        val.kind = (t & 0xf0) == 0x80 ? AMDGPU_MP_MAP : AMDGPU_MP_ARRAY;
        val.v.count = t & 0x0f;
    } else if ((t & 0xe0) == 0xa0) {
        val.kind = AMDGPU_MP_STR;
        val.v.bytes.len = t & 0x1f;
    } else {
        switch (t) {
        case 0xc0:
            val.kind = AMDGPU_MP_NIL;
            break;
        case 0xc2:
        case 0xc3:
            val.kind = AMDGPU_MP_BOOL;
            val.v.b = t == 0xc3;
            break;
        case 0xc4: /* bin 8/16/32 */
        case 0xc5:
        case 0xc6:
            val.kind = AMDGPU_MP_BIN;
            len_bytes = (size_t)1 << (t - 0xc4);
            break;
        case 0xc7: /* ext 8/16/32 */
        case 0xc8:
        case 0xc9:
            val.kind = AMDGPU_MP_EXT;
            len_bytes = (size_t)1 << (t - 0xc7);
            break;
        case 0xca:
        case 0xcb:
            val.kind = AMDGPU_MP_FLOAT;
            int_bytes = t == 0xca ? 4 : 8;
            break;
        case 0xcc: /* uint 8/16/32/64 */
        case 0xcd:
        case 0xce:
        case 0xcf:
            val.kind = AMDGPU_MP_UINT;
            int_bytes = (size_t)1 << (t - 0xcc);
            break;
        case 0xd0: /* int 8/16/32/64 */
        case 0xd1:
        case 0xd2:
        case 0xd3:
            val.kind = AMDGPU_MP_INT;
            int_bytes = (size_t)1 << (t - 0xd0);
            break;
        case 0xd4: /* fixext 1/2/4/8/16 */
        case 0xd5:
        case 0xd6:
        case 0xd7:
        case 0xd8:
            val.kind = AMDGPU_MP_EXT;
            val.v.bytes.len = 1u << (t - 0xd4);
            break;
        case 0xd9: /* str 8/16/32 */
        case 0xda:
        case 0xdb:
            val.kind = AMDGPU_MP_STR;
            len_bytes = (size_t)1 << (t - 0xd9);
            break;
        case 0xdc: /* array 16/32 */
        case 0xdd:
            val.kind = AMDGPU_MP_ARRAY;
            len_bytes = t == 0xdc ? 2 : 4;
            break;
        case 0xde: /* map 16/32 */
        case 0xdf:
            val.kind = AMDGPU_MP_MAP;
            len_bytes = t == 0xde ? 2 : 4;
            break;
        default: /* 0xc1 is never used */
            return TETHER_ERR_BAD_IMAGE;
        }
    }

    if (len_bytes != 0) {
        uint64_t n;

        if (amdgpu_mp_left(p, reader->end) < len_bytes)
            return TETHER_ERR_BAD_IMAGE;
        n = amdgpu_mp_be(p, len_bytes);
        p += len_bytes;
        if (val.kind == AMDGPU_MP_ARRAY || val.kind == AMDGPU_MP_MAP)
            val.v.count = (uint32_t)n;
        else
            val.v.bytes.len = (uint32_t)n;
    }
    if (int_bytes != 0) {
        uint64_t raw;

        if (amdgpu_mp_left(p, reader->end) < int_bytes)
            return TETHER_ERR_BAD_IMAGE;
        raw = amdgpu_mp_be(p, int_bytes);
        p += int_bytes;
        if (val.kind == AMDGPU_MP_UINT) {
            val.v.u = raw;
        } else if (val.kind == AMDGPU_MP_INT) {
            /* sign-extend from int_bytes * 8 bits */
            unsigned shift = (unsigned)(64 - 8 * int_bytes);

            val.v.i = shift == 0 ? (int64_t)raw : (int64_t)(raw << shift) >> shift;
        } else if (int_bytes == 4) {
            uint32_t bits = (uint32_t)raw;
            float f;

            memcpy(&f, &bits, sizeof(f));
            val.v.f = f;
        } else {
            memcpy(&val.v.f, &raw, sizeof(val.v.f));
        }
    }
    if (val.kind == AMDGPU_MP_EXT) {
        if (amdgpu_mp_left(p, reader->end) < 1)
            return TETHER_ERR_BAD_IMAGE;
        val.v.bytes.ext_type = (int8_t)*p++;
    }
    if (val.kind == AMDGPU_MP_STR || val.kind == AMDGPU_MP_BIN || val.kind == AMDGPU_MP_EXT) {
        if (amdgpu_mp_left(p, reader->end) < val.v.bytes.len)
            return TETHER_ERR_BAD_IMAGE;
        val.v.bytes.ptr = p;
        p += val.v.bytes.len;
    }

    reader->pos = p;
    *value_p = val;
    return TETHER_OK;
}

tether_status_t amdgpu_mp_skip(struct amdgpu_mp_reader *reader)
{
    struct amdgpu_mp_reader r;
    uint64_t pending = 1; /* values still to consume */

    if (reader == NULL)
        return TETHER_ERR_INVALID;
    r = *reader;
    while (pending > 0) {
        struct amdgpu_mp_value val;
        tether_status_t st = amdgpu_mp_next(&r, &val);

        if (st != TETHER_OK)
            return st;
        pending--;
        if (val.kind == AMDGPU_MP_ARRAY)
            pending += val.v.count;
        else if (val.kind == AMDGPU_MP_MAP)
            pending += 2 * (uint64_t)val.v.count;
        /* Every pending value needs at least one byte: a count beyond the bytes left is a lie,
         * and refusing it early bounds the loop by the buffer size. */
        if (pending > amdgpu_mp_left(r.pos, r.end))
            return TETHER_ERR_BAD_IMAGE;
    }
    *reader = r;
    return TETHER_OK;
}

bool amdgpu_mp_str_eq(const struct amdgpu_mp_value *value, const char *text)
{
    size_t n = strlen(text);

    return value->kind == AMDGPU_MP_STR && value->v.bytes.len == n &&
           memcmp(value->v.bytes.ptr, text, n) == 0;
}

tether_status_t amdgpu_mp_to_uint(const struct amdgpu_mp_value *value, uint64_t *out_p)
{
    if (value->kind == AMDGPU_MP_UINT) {
        *out_p = value->v.u;
        return TETHER_OK;
    }
    if (value->kind == AMDGPU_MP_INT && value->v.i >= 0) {
        *out_p = (uint64_t)value->v.i;
        return TETHER_OK;
    }
    return TETHER_ERR_BAD_IMAGE;
}

tether_status_t amdgpu_mp_read_uint(struct amdgpu_mp_reader *reader, uint64_t max, uint64_t *out_p)
{
    struct amdgpu_mp_reader r;
    struct amdgpu_mp_value val;
    uint64_t u;
    tether_status_t st;

    if (reader == NULL || out_p == NULL)
        return TETHER_ERR_INVALID;
    r = *reader;
    st = amdgpu_mp_next(&r, &val);
    if (st != TETHER_OK)
        return st;
    st = amdgpu_mp_to_uint(&val, &u);
    if (st != TETHER_OK)
        return st;
    if (u > max)
        return TETHER_ERR_BAD_IMAGE;
    *reader = r;
    *out_p = u;
    return TETHER_OK;
}
