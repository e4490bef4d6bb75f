/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_msgpack.h - a small bounds-checked MessagePack reader.
 *
 * Role: decode the NT_AMDGPU_METADATA note of an AMDGPU code object (code object v3 and later
 * store their metadata as one MessagePack map).  The bytes come from a device image the user
 * handed to libomptarget, so every read is checked against the end of the buffer; a malformed or
 * truncated buffer is an error, never an out-of-bounds read.  It reads; it never allocates,
 * copies or writes.
 *
 * Model: a reader is a cursor over [pos, end).  amdgpu_mp_next() consumes one token: a scalar, a
 * string/binary/extension (its payload is consumed too and referenced, not copied), or the header
 * of an array/map (its elements follow as further tokens: count values for an array, count
 * key/value pairs for a map).  amdgpu_mp_skip() consumes one complete value, however deeply
 * nested, without recursion.
 *
 * Thread safety: a reader is used by one thread at a time; readers over the same bytes are
 * independent.  Errors return TETHER_ERR_BAD_IMAGE (malformed input) or TETHER_ERR_INVALID (NULL
 * arguments); the cursor is then left where the bad token starts.  Output parameters are written
 * only on success.
 */
#ifndef TETHER_AMDGPU_MSGPACK_H
#define TETHER_AMDGPU_MSGPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tether/status.h"

struct amdgpu_mp_reader {
    const uint8_t *pos; /* next byte to read */
    const uint8_t *end; /* one past the last byte */
};

enum amdgpu_mp_kind {
    AMDGPU_MP_NIL,
    AMDGPU_MP_BOOL,
    AMDGPU_MP_UINT,  /* positive fixint, uint 8/16/32/64 */
    AMDGPU_MP_INT,   /* negative fixint, int 8/16/32/64 (may hold a non-negative value) */
    AMDGPU_MP_FLOAT, /* float 32/64 */
    AMDGPU_MP_STR,
    AMDGPU_MP_BIN,
    AMDGPU_MP_EXT,
    AMDGPU_MP_ARRAY, /* header only: v.count elements follow */
    AMDGPU_MP_MAP,   /* header only: v.count key/value pairs follow */
};

struct amdgpu_mp_value {
    enum amdgpu_mp_kind kind;
    union {
        bool b;
        uint64_t u;
        int64_t i;
        double f;
        struct {
            const uint8_t *ptr; /* payload, inside the reader's buffer; not NUL-terminated */
            uint32_t len;
            int8_t ext_type; /* AMDGPU_MP_EXT only */
        } bytes;             /* AMDGPU_MP_STR, AMDGPU_MP_BIN, AMDGPU_MP_EXT */
        uint32_t count;      /* AMDGPU_MP_ARRAY, AMDGPU_MP_MAP */
    } v;
};

/* Start a reader over [buf, buf + size).  buf may be NULL only when size is 0. */
void amdgpu_mp_init(struct amdgpu_mp_reader *reader, const void *buf, size_t size);

/* True when every byte has been consumed. */
bool amdgpu_mp_at_end(const struct amdgpu_mp_reader *reader);

/* Consume one token into *value_p.  TETHER_ERR_BAD_IMAGE when the buffer ends inside the token or
 * the byte is not a MessagePack type (0xc1). */
tether_status_t amdgpu_mp_next(struct amdgpu_mp_reader *reader, struct amdgpu_mp_value *value_p);

/* Consume one complete value (an array or map with all its elements).  TETHER_ERR_BAD_IMAGE when
 * the buffer ends first. */
tether_status_t amdgpu_mp_skip(struct amdgpu_mp_reader *reader);

/* True when value is a string equal to the NUL-terminated text. */
bool amdgpu_mp_str_eq(const struct amdgpu_mp_value *value, const char *text);

/* An unsigned integer from a UINT, or an INT that is not negative.  TETHER_ERR_BAD_IMAGE for any
 * other kind or a negative value. */
tether_status_t amdgpu_mp_to_uint(const struct amdgpu_mp_value *value, uint64_t *out_p);

/* Read one value that must be an unsigned integer no larger than max. */
tether_status_t amdgpu_mp_read_uint(struct amdgpu_mp_reader *reader, uint64_t max, uint64_t *out_p);

#endif /* TETHER_AMDGPU_MSGPACK_H */
