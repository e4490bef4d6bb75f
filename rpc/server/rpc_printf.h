/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/server/rpc_printf.h - host-side printf formatting of device calls.
 *
 * Role: turn what a device sent for one printf call (the format bytes, the
 * packed argument buffer that clang-16 builds for `__llvm_omp_vprintf`, and
 * the bytes of each %s argument) into the text the host's own printf would
 * have written.  The packing rules and the one scanner both sides share are
 * in rpc/printf_scan.h.
 *
 * What each conversion takes from the buffer follows from the format alone
 * (printf_scan.h): every `*` takes an int, a conversion glibc knows takes
 * what glibc takes for it, whatever odd length modifier it carries, and one
 * glibc does not know takes nothing, so that no conversion moves the
 * arguments after it.  Numbered arguments ("%2$d", "*1$") are placed as
 * POSIX says; the ' and I flags go to the host's snprintf, which groups
 * digits in the host's locale as the host's printf would.
 *
 * Trust nothing: every input byte comes from a device and may be garbage.
 * Formatting never crashes, hangs or reads outside the given buffers;
 * anything it cannot format faithfully becomes a visible marker in the
 * output instead:
 *   <bad %SPEC>        a conversion glibc does not know (m, y, ...), or a
 *                      format that ends inside one (takes its '*' ints only)
 *   <bad %SPEC: WHY>   a conversion of a numbered format that C rejects:
 *                      numbered and unnumbered arguments mixed, an argument
 *                      number unused below the highest one, one number used
 *                      with two types, or a number above PSCAN_POS_MAX; no
 *                      argument of such a format is read
 *   <missing arg>      the argument buffer ends before this argument
 *   <missing string>   fewer %s payloads than %s conversions
 *   <unsupported %ls>  wide strings (%ls, %S; the pointer is consumed)
 *   <bad long double>  an invalid x87 encoding (unnormal, pseudo-NaN, ...)
 * A NULL %s prints "(null)" like glibc.  %n is accepted, its pointer
 * consumed, and nothing is written anywhere.  Widths and precisions above
 * RPC_PRINTF_NUM_MAX are clamped to it.  Integers without ' or I are
 * formatted here, the rest by the host's snprintf, one validated conversion
 * at a time.
 *
 * Output of any size: a call's text is never cut.  A message of at most
 * TETHER_RPC_MSG_MAX bytes can ask for a thousand times as many bytes of
 * text (a width of 4096 from a 6-byte conversion), so a caller that gives a
 * sink gets the text in pieces of RPC_PRINTF_PIECE bytes while it is made,
 * and the buffer never holds more than about one piece; without a sink the
 * whole text stays in the buffer.
 *
 * Thread safety: the functions keep no state; a buffer belongs to one thread.
 */
#ifndef TETHER_RPC_PRINTF_H
#define TETHER_RPC_PRINTF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tether/status.h"

/* Widths and precisions are clamped to this. */
#define RPC_PRINTF_NUM_MAX 4096
/* With a sink, the text of a call is handed over in pieces of this many bytes. */
#define RPC_PRINTF_PIECE (1u << 20)

/* A growable output buffer.  Zero-initialise it (or use RPC_OUTBUF_INIT). */
struct rpc_outbuf {
    char *data;
    size_t len;
    size_t cap;
};
#define RPC_OUTBUF_INIT                                                                            \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Releases the buffer's memory and zeroes it. */
void rpc_outbuf_free(struct rpc_outbuf *buf);

/*
 * Appends n bytes.  Returns TETHER_OK or TETHER_ERR_NO_MEMORY (the buffer
 * is unchanged then).
 */
tether_status_t rpc_outbuf_append(struct rpc_outbuf *buf, const void *bytes, size_t n);

/* One %s argument as the device sent it: data == NULL means a NULL pointer. */
struct rpc_printf_str {
    const char *data;
    size_t len; /* bytes at data; formatting stops earlier at a NUL */
};

/*
 * Where the text of a call goes while it is made, when it may be large: take() gets each
 * RPC_PRINTF_PIECE bytes of it, in order, as soon as they are made (bytes valid during the call
 * only); the rest, less than a piece, is left in `out` when formatting ends.
 */
struct rpc_printf_sink {
    void (*take)(void *ctx, const char *bytes, size_t n);
    void *ctx;
};

/*
 * Appends the formatted text of one printf call to `out`.
 *   fmt, fmt_len   the format; formatting stops at fmt_len or the first NUL
 *   args, args_len the packed argument buffer (may be NULL if args_len is 0)
 *   strs, nstrs    the payloads of the %s conversions, in order
 *   sink           if not NULL, takes the text piece by piece from the start
 *                  of the call's text (out->len as the call began); else the
 *                  whole text is appended to `out`
 *   nconv_p        if not NULL, receives the number of conversions that took
 *                  an argument (CUDA's vprintf returns this count)
 * Returns TETHER_OK, or TETHER_ERR_NO_MEMORY when the buffer could not grow
 * (what was formatted so far and not handed to the sink stays in `out`).
 * Bad input is not an error: it yields markers (see above).
 */
tether_status_t rpc_printf_format(struct rpc_outbuf *out, const char *fmt, size_t fmt_len,
                                  const void *args, size_t args_len,
                                  const struct rpc_printf_str *strs, size_t nstrs,
                                  const struct rpc_printf_sink *sink, uint32_t *nconv_p);

/*
 * Decodes one TETHER_RPC_OP_PRINTF message (tether/rpc_opcodes.h: header,
 * format, argument buffer, %s records) and formats it as above.  A message
 * whose lengths do not add up is formatted as far as its bytes go: a short
 * format or argument buffer is cut, missing %s records become markers.
 *   sink       as for rpc_printf_format
 *   stream_p   if not NULL, receives the header's stream field (unchecked)
 * Returns TETHER_OK, TETHER_ERR_INVALID if the message is shorter than its
 * header (nothing is appended), or TETHER_ERR_NO_MEMORY.
 */
tether_status_t rpc_printf_format_msg(struct rpc_outbuf *out, const void *msg, size_t msg_len,
                                      const struct rpc_printf_sink *sink, uint32_t *stream_p,
                                      uint32_t *nconv_p);

#endif /* TETHER_RPC_PRINTF_H */
