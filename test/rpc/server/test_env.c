/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/test_env.c - the one rule every environment knob follows (rpc/server/rpc_env.h):
 * what is a number, a boolean, a choice; that a bad value gives the default and exactly one
 * warning per knob naming the knob, the value and what is used; LLVM's name of a knob against
 * tether's; the record of warned knobs when it is full.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../../rpc/server/rpc_env.h"
#include "tcheck.h"

/* ---- stderr capture ------------------------------------------------------------------------ */

static int cap_saved = -1, cap_mem = -1;
static char cap_out[4096];

static void cap_begin(void)
{
    fflush(stderr);
    cap_saved = dup(2);
    cap_mem = memfd_create("tether-test-env", 0);
    dup2(cap_mem, 2);
}

static const char *cap_end(void)
{
    fflush(stderr);
    dup2(cap_saved, 2);
    close(cap_saved);
    ssize_t n = pread(cap_mem, cap_out, sizeof(cap_out) - 1, 0);
    cap_out[n > 0 ? n : 0] = '\0';
    close(cap_mem);
    return cap_out;
}

/* Read knob `name` set to `value` (NULL: unset) as an integer in [min, max] with default def;
 * check the result and the exact text printed ("" for nothing). */
static void int_case(const char *name, const char *value, int64_t def, int64_t min, int64_t max,
                     int64_t want, const char *want_out)
{
    if (value != NULL)
        setenv(name, value, 1);
    else
        unsetenv(name);
    cap_begin();
    int64_t got = tether_env_int(name, def, min, max);
    const char *out = cap_end();
    CHECKF(got == want, "%s=%s: got %lld, want %lld", name, value ? value : "(unset)",
           (long long)got, (long long)want);
    CHECKF(strcmp(out, want_out) == 0, "%s=%s: printed \"%s\", want \"%s\"", name,
           value ? value : "(unset)", out, want_out);
    unsetenv(name);
}

static void test_numbers(void)
{
    /* Good values, silently. */
    int_case("K_UNSET", NULL, 5, 0, 10, 5, "");
    int_case("K_EMPTY", "", 5, 0, 10, 5, "");
    int_case("K_DEC", "4096", 5, 0, 1 << 20, 4096, "");
    int_case("K_HEX", "0x1000", 5, 0, 1 << 20, 4096, "");
    int_case("K_HEX_UPPER", "0XfF", 5, 0, 1 << 20, 255, "");
    int_case("K_LEADING_ZERO", "010", 5, 0, 100, 10, ""); /* decimal, not octal */
    int_case("K_MINUS_ONE", "-1", 5, -1, 10, -1, "");
    int_case("K_PLUS", "+7", 5, 0, 10, 7, "");
    int_case("K_MAX", "9223372036854775807", 5, 0, INT64_MAX, INT64_MAX, "");
    int_case("K_AT_MIN", "1", 5, 1, 16384, 1, "");
    int_case("K_AT_MAX", "16384", 5, 1, 16384, 16384, "");

    /* Bad values: the default and one warning naming knob, value and the value used. */
    int_case("K_WORD", "abc", 5, 0, 10, 5,
             "tether: warning: K_WORD=abc is not a whole number; using 5\n");
    int_case("K_TRAILING", "12x", 5, 0, 100, 5,
             "tether: warning: K_TRAILING=12x is not a whole number; using 5\n");
    int_case("K_SPACE_AFTER", "12 ", 5, 0, 100, 5,
             "tether: warning: K_SPACE_AFTER=12  is not a whole number; using 5\n");
    int_case("K_SPACE_BEFORE", " 12", 5, 0, 100, 5,
             "tether: warning: K_SPACE_BEFORE= 12 is not a whole number; using 5\n");
    int_case("K_BARE_0X", "0x", 5, 0, 100, 5,
             "tether: warning: K_BARE_0X=0x is not a whole number; using 5\n");
    int_case("K_EXP", "1e3", 5, 0, 10000, 5,
             "tether: warning: K_EXP=1e3 is not a whole number; using 5\n");
    int_case("K_TWO_SIGNS", "--1", 5, -10, 10, 5,
             "tether: warning: K_TWO_SIGNS=--1 is not a whole number; using 5\n");
    int_case("K_SIGN_HEX_SIGN", "-0x-1", 5, -10, 10, 5,
             "tether: warning: K_SIGN_HEX_SIGN=-0x-1 is not a whole number; using 5\n");
    int_case("K_NEGATIVE", "-1", 4096, 1, 16384, 4096,
             "tether: warning: K_NEGATIVE=-1 is out of range (1 to 16384); using 4096\n");
    int_case("K_HUGE", "0x7fffffff", 4096, 1, 16384, 4096,
             "tether: warning: K_HUGE=0x7fffffff is out of range (1 to 16384); using 4096\n");
    int_case("K_ZERO", "0", 4096, 1, 16384, 4096,
             "tether: warning: K_ZERO=0 is out of range (1 to 16384); using 4096\n");
    int_case("K_NEG_UNBOUNDED", "-5", 7, 0, INT64_MAX, 7,
             "tether: warning: K_NEG_UNBOUNDED=-5 is out of range (at least 0); using 7\n");
    int_case("K_OVERFLOW", "99999999999999999999", 7, 0, INT64_MAX, 7,
             "tether: warning: K_OVERFLOW=99999999999999999999 is out of range (at least 0); "
             "using 7\n");
    int_case("K_NEG_OVERFLOW", "-99999999999999999999", 7, INT64_MIN, INT64_MAX, 7,
             "tether: warning: K_NEG_OVERFLOW=-99999999999999999999 is out of range "
             "(at least -9223372036854775808); using 7\n");

    /* Once per knob: the same bad value read again (another device, another image) is silent,
     * and so is another bad value of the same knob; other knobs still warn. */
    int_case("K_WORD", "abc", 5, 0, 10, 5, "");
    int_case("K_WORD", "-3", 5, 0, 10, 5, "");
    int_case("K_WORD", "3", 5, 0, 10, 3, "");
}

static void bool_case(const char *name, const char *value, bool def, bool want,
                      const char *want_out)
{
    setenv(name, value, 1);
    cap_begin();
    bool got = tether_env_bool(name, def);
    const char *out = cap_end();
    CHECKF(got == want, "%s=%s: got %d", name, value, got);
    CHECKF(strcmp(out, want_out) == 0, "%s=%s: printed \"%s\", want \"%s\"", name, value, out,
           want_out);
    unsetenv(name);
}

static void test_booleans(void)
{
    unsetenv("B_UNSET");
    CHECKF(tether_env_bool("B_UNSET", true) && !tether_env_bool("B_UNSET", false), "unset");
    bool_case("B_EMPTY", "", true, true, "");
    bool_case("B_ONE", "1", false, true, "");
    bool_case("B_TWO", "2", false, true, ""); /* LLVM's debug levels */
    bool_case("B_ZERO", "0", true, false, "");
    bool_case("B_HEX", "0x10", false, true, "");
    bool_case("B_YES", "yes", false, true, "");
    bool_case("B_TRUE", "TRUE", false, true, "");
    bool_case("B_ON", "On", false, true, "");
    bool_case("B_NO", "no", true, false, "");
    bool_case("B_FALSE", "False", true, false, "");
    bool_case("B_OFF", "OFF", true, false, "");
    bool_case("B_WORD", "maybe", false, false,
              "tether: warning: B_WORD=maybe is not a boolean (0, 1, true, false, yes, no, on, "
              "off); using off\n");
    bool_case("B_NEG", "-1", true, true,
              "tether: warning: B_NEG=-1 is not a boolean (0, 1, true, false, yes, no, on, off); "
              "using on\n");
    bool_case("B_NEG_HUGE", "-99999999999999999999", false, false,
              "tether: warning: B_NEG_HUGE=-99999999999999999999 is not a boolean (0, 1, true, "
              "false, yes, no, on, off); using off\n");
    bool_case("B_TRAILING", "1x", false, false,
              "tether: warning: B_TRAILING=1x is not a boolean (0, 1, true, false, yes, no, on, "
              "off); using off\n");
}

static void test_choices(void)
{
    static const char *const modes[] = {"auto", "spin", "yield", "blocking", NULL};

    unsetenv("C_UNSET");
    CHECKF(tether_env_choice("C_UNSET", modes, 2) == 2, "unset");
    setenv("C_GOOD", "Spin", 1);
    CHECKF(tether_env_choice("C_GOOD", modes, 0) == 1, "Spin");
    setenv("C_BAD", "fast", 1);
    cap_begin();
    int got = tether_env_choice("C_BAD", modes, 0);
    const char *out = cap_end();
    CHECKF(got == 0, "bad choice: %d", got);
    CHECKF(strcmp(out, "tether: warning: C_BAD=fast is not one of auto, spin, yield, blocking; "
                       "using auto\n") == 0,
           "printed \"%s\"", out);
    setenv("C_EMPTY", "", 1);
    CHECKF(tether_env_choice("C_EMPTY", modes, 3) == 3, "empty");
    setenv("S_SET", "/opt/x", 1);
    setenv("S_EMPTY", "", 1);
    unsetenv("S_UNSET");
    CHECKF(tether_env_str("S_SET") != NULL && strcmp(tether_env_str("S_SET"), "/opt/x") == 0,
           "str");
    CHECKF(tether_env_str("S_EMPTY") == NULL && tether_env_str("S_UNSET") == NULL, "str unset");
}

/* tether's name of a knob against LLVM's. */
static void test_pick(void)
{
    unsetenv("P_MINE");
    unsetenv("P_LLVM");
    CHECKF(strcmp(tether_env_pick("P_MINE", "P_LLVM"), "P_MINE") == 0, "neither set");
    setenv("P_LLVM", "3", 1);
    CHECKF(strcmp(tether_env_pick("P_MINE", "P_LLVM"), "P_LLVM") == 0, "only LLVM's");
    setenv("P_MINE", "3", 1);
    cap_begin();
    const char *same = tether_env_pick("P_MINE", "P_LLVM");
    const char *out = cap_end();
    CHECKF(strcmp(same, "P_MINE") == 0 && out[0] == '\0', "both, same value: %s \"%s\"", same, out);
    setenv("P_MINE", "0", 1);
    cap_begin();
    const char *differ = tether_env_pick("P_MINE", "P_LLVM");
    out = cap_end();
    CHECKF(strcmp(differ, "P_MINE") == 0, "both, different values: %s", differ);
    CHECKF(strcmp(out, "tether: warning: P_MINE=0 and P_LLVM=3 are both set; P_MINE wins\n") == 0,
           "printed \"%s\"", out);
    cap_begin();
    tether_env_pick("P_MINE", "P_LLVM");
    out = cap_end();
    CHECKF(out[0] == '\0', "warned twice: \"%s\"", out);
    unsetenv("P_MINE");
    unsetenv("P_LLVM");
}

/* More distinct knobs than the record holds: warnings past it are still printed (a repeat is
 * better than a lost warning). */
static void test_many(void)
{
    char name[32];
    int printed = 0;

    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof(name), "M_KNOB_%d", i);
        setenv(name, "bad", 1);
        cap_begin();
        tether_env_int(name, 1, 0, 2);
        printed += strstr(cap_end(), name) != NULL;
        unsetenv(name);
    }
    CHECKF(printed == 100, "%d of 100 distinct knobs warned", printed);
}

int main(void)
{
    test_numbers();
    test_booleans();
    test_choices();
    test_pick();
    test_many();
    return tcheck_exit("test_env");
}
