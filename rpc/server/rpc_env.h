/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * rpc/server/rpc_env.h - tether's environment knobs: one parser and one rule for every knob of
 * every tether library.  The RPC server reads its own knobs with it; the plugins read theirs
 * through common's environment service (plugin_env_* in common/plugin.h), which forwards here.
 *
 * The rule:
 *  - A knob that is unset, or set to "", has its default; nothing is printed.
 *  - A number is a whole number, decimal or hexadecimal with 0x ("4096", "0x1000", "-1"), with
 *    nothing before or after it.  A boolean is a number (0: off, above 0: on) or one of true,
 *    false, yes, no, on, off (any case).  A choice is one of its words (any case).
 *  - Any other value (not a number, trailing characters, a negative number where none is
 *    allowed, a number outside the knob's range, a word that is not a choice) is ignored: the
 *    default is used, and ONE warning per knob per process says so on stderr, naming the knob,
 *    the value and what is used instead:
 *        tether: warning: TETHER_RPC_PORTS=-1 is out of range (1 to 16384); using 4096
 *    A bad value never stops the program.
 *
 * Once per process: the plugins are separate libraries, loaded RTLD_GLOBAL, and each reads some
 * of the same knobs.  The record of knobs already warned about is the exported object
 * tether_rtl_env_warned; a plugin's reference to it binds to the first loaded tether library's
 * copy (plugins link with -Bsymbolic-functions, which leaves data references resolvable process-
 * wide), so every tether library in the process shares one record.
 *
 * Thread safety: every function may be called from any thread at any time.
 */
#ifndef TETHER_RPC_ENV_H
#define TETHER_RPC_ENV_H

#include <stdbool.h>
#include <stdint.h>

/* The value of integer knob `name`: def when unset/empty or bad (bad: one warning), else a value
 * in [min, max].  def need not lie in the range (a computed default). */
int64_t tether_env_int(const char *name, int64_t def, int64_t min, int64_t max);

/* The value of boolean knob `name`; def when unset/empty or bad (bad: one warning). */
bool tether_env_bool(const char *name, bool def);

/* Index of the value of knob `name` in `choices` (NULL-terminated, compared ignoring case); def
 * when unset/empty or not one of them (then one warning listing them). */
int tether_env_choice(const char *name, const char *const *choices, int def);

/* TETHER_WAIT's choices, in the order of its words: how tether's threads wait, the plugins' for
 * a device's work (common/plugin_wait.h) and the RPC server thread for calls (rpc_thread.c). */
enum tether_wait_mode {
    TETHER_WAIT_ADAPTIVE = 0, /* poll for a while, then sleep (the default) */
    TETHER_WAIT_SPIN = 1,     /* poll: the lowest latency, a core busy for the whole wait */
    TETHER_WAIT_BLOCK = 2,    /* sleep at once */
};

/* TETHER_WAIT: adaptive, spin or block (any case); adaptive when unset, empty or another word
 * (then one warning listing the three). */
enum tether_wait_mode tether_env_wait(void);

/* The text of knob `name`, NULL when unset or empty.  For knobs whose values the caller checks
 * itself (paths, lists of cores): it reports a bad one with tether_env_warn(). */
const char *tether_env_str(const char *name);

/* Which of two names for one knob to read: `name` (tether's) when it is set, else `alias` (the
 * LLVM name) when that is set, else `name`.  When both are set to different values, one warning
 * says that `name` wins. */
const char *tether_env_pick(const char *name, const char *alias);

/* Print "tether: warning: <message>" on stderr, once per process for this knob name (later
 * calls for the same name print nothing).  Returns true when it printed. */
bool tether_env_warn(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* TETHER_RPC_ENV_H */
