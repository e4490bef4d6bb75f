/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* rpc/server/rpc_env.c - tether's environment knobs (see rpc_env.h). */
#include "rpc_env.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Knobs already warned about in this process (rpc_env.h, "Once per process").  Exported from the
 * plugins (tether_rtl_* is in their version script); only this file uses it. */
#define ENV_WARNED_MAX 64
#define ENV_NAME_MAX 64

struct tether_env_warned {
    pthread_mutex_t lock;
    unsigned count;
    char names[ENV_WARNED_MAX][ENV_NAME_MAX];
};

__attribute__((visibility("default"))) extern struct tether_env_warned tether_rtl_env_warned;
struct tether_env_warned tether_rtl_env_warned = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* True the first time `name` is seen in the process. */
static bool env_first_warning(const char *name)
{
    struct tether_env_warned *w = &tether_rtl_env_warned;
    bool first = true;

    pthread_mutex_lock(&w->lock);
    for (unsigned i = 0; i < w->count; i++) {
        if (strncmp(w->names[i], name, ENV_NAME_MAX - 1) == 0) {
            first = false;
            break;
        }
    }
    if (first && w->count < ENV_WARNED_MAX) {
        snprintf(w->names[w->count], ENV_NAME_MAX, "%s", name);
        w->count++;
    }
    pthread_mutex_unlock(&w->lock);
    return first;
}

bool tether_env_warn(const char *name, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    if (!env_first_warning(name)) {
        return false;
    }
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* One write per line, so that it does not mix with other threads' output. */
    fprintf(stderr, "tether: warning: %s\n", line);
    return true;
}

const char *tether_env_str(const char *name)
{
    const char *s = getenv(name);

    return s != NULL && s[0] != '\0' ? s : NULL;
}

/* Parse a whole number: decimal, or hexadecimal after 0x; optional sign; nothing else. */
static bool env_parse(const char *s, int64_t *value_p, bool *overflow_p)
{
    const char *digits = s;
    int base = 10;
    char *end;
    long long v;

    *overflow_p = false;
    if (*digits == '-' || *digits == '+') {
        digits++;
    }
    if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
        base = 16;
        digits += 2;
    }
    /* strtoll would skip spaces and take a second sign or "0x": only digits may follow. */
    if (!(base == 16 ? (*digits >= '0' && *digits <= '9') || (*digits >= 'a' && *digits <= 'f') ||
                           (*digits >= 'A' && *digits <= 'F')
                     : *digits >= '0' && *digits <= '9')) {
        return false;
    }
    errno = 0;
    v = strtoll(digits, &end, base);
    if (*end != '\0') {
        return false;
    }
    if (errno == ERANGE) {
        /* -9223372036854775808 does not fit as a magnitude, but is out of any range we use. */
        *overflow_p = true;
        return true;
    }
    *value_p = s[0] == '-' ? -(int64_t)v : (int64_t)v;
    return true;
}

/* "(1 to 16384)", "(at least 0)". */
static void env_range_text(char *buf, size_t len, int64_t min, int64_t max)
{
    if (max == INT64_MAX) {
        snprintf(buf, len, "at least %" PRId64, min);
    } else {
        snprintf(buf, len, "%" PRId64 " to %" PRId64, min, max);
    }
}

int64_t tether_env_int(const char *name, int64_t def, int64_t min, int64_t max)
{
    const char *s = tether_env_str(name);
    bool overflow;
    int64_t v = 0;
    char range[64];

    if (s == NULL) {
        return def;
    }
    if (!env_parse(s, &v, &overflow)) {
        tether_env_warn(name, "%s=%s is not a whole number; using %" PRId64, name, s, def);
        return def;
    }
    if (overflow || v < min || v > max) {
        env_range_text(range, sizeof(range), min, max);
        tether_env_warn(name, "%s=%s is out of range (%s); using %" PRId64, name, s, range, def);
        return def;
    }
    return v;
}

bool tether_env_bool(const char *name, bool def)
{
    static const char *const on[] = {"true", "yes", "on"};
    static const char *const off[] = {"false", "no", "off"};
    const char *s = tether_env_str(name);
    bool overflow;
    int64_t v;

    if (s == NULL) {
        return def;
    }
    for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
        if (strcasecmp(s, on[i]) == 0) {
            return true;
        }
        if (strcasecmp(s, off[i]) == 0) {
            return false;
        }
    }
    if (env_parse(s, &v, &overflow) && !(s[0] == '-' && (overflow || v < 0))) {
        return overflow || v > 0;
    }
    tether_env_warn(name, "%s=%s is not a boolean (0, 1, true, false, yes, no, on, off); using %s",
                    name, s, def ? "on" : "off");
    return def;
}

int tether_env_choice(const char *name, const char *const *choices, int def)
{
    const char *s = tether_env_str(name);
    char list[256] = "";
    size_t used = 0;

    if (s == NULL) {
        return def;
    }
    for (int i = 0; choices[i] != NULL; i++) {
        if (strcasecmp(s, choices[i]) == 0) {
            return i;
        }
        if (used < sizeof(list)) {
            int n =
                snprintf(list + used, sizeof(list) - used, "%s%s", i > 0 ? ", " : "", choices[i]);
            used += n > 0 ? (size_t)n : 0;
        }
    }
    tether_env_warn(name, "%s=%s is not one of %s; using %s", name, s, list, choices[def]);
    return def;
}

enum tether_wait_mode tether_env_wait(void)
{
    static const char *const modes[] = {"adaptive", "spin", "block", NULL};

    return (enum tether_wait_mode)tether_env_choice("TETHER_WAIT", modes, TETHER_WAIT_ADAPTIVE);
}

const char *tether_env_pick(const char *name, const char *alias)
{
    const char *mine = tether_env_str(name);
    const char *other = tether_env_str(alias);

    if (mine == NULL) {
        return other != NULL ? alias : name;
    }
    if (other != NULL && strcmp(mine, other) != 0) {
        tether_env_warn(alias, "%s=%s and %s=%s are both set; %s wins", name, mine, alias, other,
                        name);
    }
    return name;
}
