/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_target.c - AMDGPU target IDs (see amdgpu_target.h).
 */
#include "amdgpu_target.h"

#include <stdio.h>
#include <string.h>

/* EF_AMDGPU_MACH values.  Each was checked against clang-16: `clang-16
 * --target=amdgcn-amd-amdhsa -mcpu=<name> -nogpulib -c` and llvm-readelf -h (the low byte of
 * e_flags); test_amdgpu_target rechecks gfx90a, gfx940 and gfx1030 against real objects. */
static const struct {
    uint8_t mach;
    const char *name;
} amdgpu_mach_table[] = {
    {0x20, "gfx600"},  {0x21, "gfx601"},  {0x3a, "gfx602"},  {0x22, "gfx700"},  {0x23, "gfx701"},
    {0x24, "gfx702"},  {0x25, "gfx703"},  {0x26, "gfx704"},  {0x3b, "gfx705"},  {0x28, "gfx801"},
    {0x29, "gfx802"},  {0x2a, "gfx803"},  {0x3c, "gfx805"},  {0x2b, "gfx810"},  {0x2c, "gfx900"},
    {0x2d, "gfx902"},  {0x2e, "gfx904"},  {0x2f, "gfx906"},  {0x30, "gfx908"},  {0x31, "gfx909"},
    {0x3f, "gfx90a"},  {0x32, "gfx90c"},  {0x40, "gfx940"},  {0x33, "gfx1010"}, {0x34, "gfx1011"},
    {0x35, "gfx1012"}, {0x42, "gfx1013"}, {0x36, "gfx1030"}, {0x37, "gfx1031"}, {0x38, "gfx1032"},
    {0x39, "gfx1033"}, {0x3e, "gfx1034"}, {0x3d, "gfx1035"}, {0x45, "gfx1036"}, {0x41, "gfx1100"},
    {0x46, "gfx1101"}, {0x47, "gfx1102"}, {0x44, "gfx1103"},
};

#define AMDGPU_EF_MACH_MASK 0xffu
#define AMDGPU_EF_XNACK_V3 0x100u
#define AMDGPU_EF_SRAMECC_V3 0x200u
#define AMDGPU_EF_XNACK_V4_MASK 0x300u
#define AMDGPU_EF_SRAMECC_V4_MASK 0xc00u
/* v4 two-bit states (after shifting the field down): 0 unsupported, 1 any, 2 off, 3 on. */

const char *amdgpu_target_mach_name(uint32_t mach)
{
    for (size_t i = 0; i < sizeof(amdgpu_mach_table) / sizeof(amdgpu_mach_table[0]); i++)
        if (amdgpu_mach_table[i].mach == mach)
            return amdgpu_mach_table[i].name;
    return NULL;
}

static enum amdgpu_feature amdgpu_feature_v4(uint32_t bits)
{
    switch (bits) {
    case 2:
        return AMDGPU_FEATURE_OFF;
    case 3:
        return AMDGPU_FEATURE_ON;
    default: /* 0 unsupported, 1 any */
        return AMDGPU_FEATURE_ANY;
    }
}

tether_status_t amdgpu_target_id_from_elf(uint8_t abi_version, uint32_t e_flags,
                                          struct amdgpu_target_id *id_p)
{
    struct amdgpu_target_id id;
    const char *name;

    if (id_p == NULL || abi_version > 3)
        return TETHER_ERR_INVALID;
    name = amdgpu_target_mach_name(e_flags & AMDGPU_EF_MACH_MASK);
    if (name == NULL)
        return TETHER_ERR_NOT_FOUND;
    memset(&id, 0, sizeof(id));
    snprintf(id.processor, sizeof(id.processor), "%s", name);
    if (abi_version <= 1) {
        id.xnack = (e_flags & AMDGPU_EF_XNACK_V3) ? AMDGPU_FEATURE_ON : AMDGPU_FEATURE_ANY;
        id.sramecc = (e_flags & AMDGPU_EF_SRAMECC_V3) ? AMDGPU_FEATURE_ON : AMDGPU_FEATURE_ANY;
    } else {
        id.xnack = amdgpu_feature_v4((e_flags & AMDGPU_EF_XNACK_V4_MASK) >> 8);
        id.sramecc = amdgpu_feature_v4((e_flags & AMDGPU_EF_SRAMECC_V4_MASK) >> 10);
    }
    *id_p = id;
    return TETHER_OK;
}

static bool amdgpu_is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

tether_status_t amdgpu_target_id_parse(const char *text, struct amdgpu_target_id *id_p)
{
    static const char triple[] = "amdgcn-amd-amdhsa-";
    struct amdgpu_target_id id;
    bool seen_xnack = false, seen_sramecc = false;
    const char *p;
    size_t n;

    if (text == NULL || id_p == NULL)
        return TETHER_ERR_INVALID;
    p = text;
    if (strncmp(p, triple, sizeof(triple) - 1) == 0) {
        /* skip the environment component (empty in ISA names) and its '-' */
        const char *dash = strchr(p + sizeof(triple) - 1, '-');

        if (dash == NULL)
            return TETHER_ERR_INVALID;
        p = dash + 1;
    }
    memset(&id, 0, sizeof(id));
    n = strcspn(p, ":");
    if (n <= 3 || n >= sizeof(id.processor) || strncmp(p, "gfx", 3) != 0)
        return TETHER_ERR_INVALID;
    for (size_t i = 3; i < n; i++)
        if (!amdgpu_is_hex(p[i]))
            return TETHER_ERR_INVALID;
    memcpy(id.processor, p, n);
    p += n;

    while (*p == ':') {
        enum amdgpu_feature *feature;
        bool *seen;

        p++;
        n = strcspn(p, ":");
        if (n < 2 || (p[n - 1] != '+' && p[n - 1] != '-'))
            return TETHER_ERR_INVALID;
        if (n - 1 == 5 && strncmp(p, "xnack", 5) == 0) {
            feature = &id.xnack;
            seen = &seen_xnack;
        } else if (n - 1 == 7 && strncmp(p, "sramecc", 7) == 0) {
            feature = &id.sramecc;
            seen = &seen_sramecc;
        } else {
            return TETHER_ERR_INVALID;
        }
        if (*seen)
            return TETHER_ERR_INVALID;
        *seen = true;
        *feature = p[n - 1] == '+' ? AMDGPU_FEATURE_ON : AMDGPU_FEATURE_OFF;
        p += n;
    }
    if (*p != '\0')
        return TETHER_ERR_INVALID;
    *id_p = id;
    return TETHER_OK;
}

static bool amdgpu_feature_compatible(enum amdgpu_feature image, enum amdgpu_feature agent)
{
    return image == AMDGPU_FEATURE_ANY || image == agent;
}

bool amdgpu_target_id_compatible(const struct amdgpu_target_id *image,
                                 const struct amdgpu_target_id *agent)
{
    return strcmp(image->processor, agent->processor) == 0 &&
           amdgpu_feature_compatible(image->xnack, agent->xnack) &&
           amdgpu_feature_compatible(image->sramecc, agent->sramecc);
}

size_t amdgpu_target_id_format(const struct amdgpu_target_id *id, char *buf, size_t size)
{
    char sramecc[16] = "", xnack[16] = "";
    int n;

    if (id->sramecc != AMDGPU_FEATURE_ANY)
        snprintf(sramecc, sizeof(sramecc), ":sramecc%c",
                 id->sramecc == AMDGPU_FEATURE_ON ? '+' : '-');
    if (id->xnack != AMDGPU_FEATURE_ANY)
        snprintf(xnack, sizeof(xnack), ":xnack%c", id->xnack == AMDGPU_FEATURE_ON ? '+' : '-');
    n = snprintf(buf, size, "%s%s%s", id->processor, sramecc, xnack);
    return n < 0 ? 0 : (size_t)n;
}
