/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/fuzz_printf.c - libFuzzer target for the host printf decoder.
 * The first input byte picks the entry point: odd = a whole PRINTF message
 * (header, format, arguments, %s records), even = a raw format whose bytes
 * double as the argument buffer and as one %s payload; bit 1 = with a sink,
 * which must get whole pieces only.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../../rpc/server/rpc_printf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void take(void *ctx, const char *bytes, size_t n)
{
    (void)ctx;
    if (n != RPC_PRINTF_PIECE || bytes == NULL)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rpc_outbuf out = RPC_OUTBUF_INIT;
    if (size == 0)
        return 0;
    struct rpc_printf_sink pieces = {take, NULL};
    const struct rpc_printf_sink *sink = data[0] & 2 ? &pieces : NULL;
    if (data[0] & 1) {
        rpc_printf_format_msg(&out, data + 1, size - 1, sink, NULL, NULL);
    } else {
        size_t split = size > 1 ? data[1] % size : 0;
        struct rpc_printf_str str = {(const char *)data + split, size - split};
        rpc_printf_format(&out, (const char *)data + 1, split > 0 ? split - 1 : 0, data + split,
                          size - split, &str, 1, sink, NULL);
    }
    if (sink != NULL && out.len >= RPC_PRINTF_PIECE)
        abort();
    rpc_outbuf_free(&out);
    return 0;
}
