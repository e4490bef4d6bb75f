/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_amdgpu_target.c - AMDGPU target IDs.
 *
 *   test_amdgpu_target rules          parsing, formatting, the compatibility rule, e_flags decoding
 *   test_amdgpu_target mach CLANG DIR every processor of the EF_AMDGPU_MACH table: clang-16 builds
 *                                     an object for it (in DIR) and its e_flags must name it
 */
#include <string.h>
#include <unistd.h>

#include "amdgpu_code_object.h"
#include "amdgpu_target.h"
#include "amdgpu_test.h"

static struct amdgpu_target_id parse_ok(const char *text)
{
    struct amdgpu_target_id id;

    REQUIRE_RC(amdgpu_target_id_parse(text, &id), TETHER_OK);
    return id;
}

static void check_format(const char *text, const char *canonical)
{
    struct amdgpu_target_id id = parse_ok(text);
    char buf[64];

    REQUIRE(amdgpu_target_id_format(&id, buf, sizeof(buf)) == strlen(canonical));
    REQUIRE(strcmp(buf, canonical) == 0);
}

static bool compatible(const char *image, const char *agent)
{
    struct amdgpu_target_id i = parse_ok(image), a = parse_ok(agent);

    return amdgpu_target_id_compatible(&i, &a);
}

static int mode_rules(void)
{
    static const char *bad[] = {
        "",
        "gfx",
        "gfx90g",
        "sm_90",
        "gfx90a:",
        "gfx90a:xnack",
        "gfx90a:xnack*",
        "gfx90a:foo+",
        "gfx90a:xnack+:xnack-",
        "gfx90a::xnack+",
        "gfx0123456789abcdef",
        "amdgcn-amd-amdhsa",
        "amdgcn-amd-amdhsa-gfx90a",
        "gfx90a:sramecc+:sramecc+",
        " gfx90a",
        "GFX90A",
    };
    struct amdgpu_target_id id;
    char small[8];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (amdgpu_target_id_parse(bad[i], &id) != TETHER_ERR_INVALID) {
            fprintf(stderr, "\"%s\" was accepted\n", bad[i]);
            return 1;
        }
    }
    REQUIRE_RC(amdgpu_target_id_parse(NULL, &id), TETHER_ERR_INVALID);

    id = parse_ok("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
    REQUIRE(strcmp(id.processor, "gfx90a") == 0);
    REQUIRE(id.sramecc == AMDGPU_FEATURE_ON && id.xnack == AMDGPU_FEATURE_OFF);
    id = parse_ok("gfx1030");
    REQUIRE(id.sramecc == AMDGPU_FEATURE_ANY && id.xnack == AMDGPU_FEATURE_ANY);
    check_format("gfx90a:xnack-:sramecc+", "gfx90a:sramecc+:xnack-");
    check_format("amdgcn-amd-amdhsa--gfx942:xnack+", "gfx942:xnack+");
    check_format("amdgcn-amd-amdhsa-hipv4-gfx908", "gfx908");
    /* truncation: snprintf-style length, NUL-terminated */
    id = parse_ok("gfx90a:sramecc+:xnack-");
    REQUIRE(amdgpu_target_id_format(&id, small, sizeof(small)) == 22);
    REQUIRE(strcmp(small, "gfx90a:") == 0);

    /* the rule: processors equal; each feature the image sets must be the agent's state */
    REQUIRE(compatible("gfx90a", "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"));
    REQUIRE(compatible("gfx90a:xnack-", "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"));
    REQUIRE(!compatible("gfx90a:xnack+", "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"));
    REQUIRE(compatible("gfx90a:sramecc+:xnack+", "gfx90a:xnack+:sramecc+"));
    REQUIRE(!compatible("gfx90a:sramecc-", "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"));
    REQUIRE(!compatible("gfx90a", "amdgcn-amd-amdhsa--gfx908:sramecc+:xnack-"));
    REQUIRE(!compatible("gfx90a", "gfx90"));
    REQUIRE(!compatible("gfx9", "gfx90a"));
    /* an agent that does not support a feature cannot run an image that requires its state */
    REQUIRE(!compatible("gfx1030:xnack-", "amdgcn-amd-amdhsa--gfx1030"));
    REQUIRE(compatible("gfx1030", "amdgcn-amd-amdhsa--gfx1030"));

    /* e_flags: v4 two-bit fields (values seen from clang-16), v3 single bits */
    REQUIRE_RC(amdgpu_target_id_from_elf(2, 0x53f, &id), TETHER_OK);
    REQUIRE(strcmp(id.processor, "gfx90a") == 0);
    REQUIRE(id.xnack == AMDGPU_FEATURE_ANY && id.sramecc == AMDGPU_FEATURE_ANY);
    REQUIRE_RC(amdgpu_target_id_from_elf(3, 0x73f, &id), TETHER_OK); /* gfx90a:xnack+ */
    REQUIRE(id.xnack == AMDGPU_FEATURE_ON && id.sramecc == AMDGPU_FEATURE_ANY);
    REQUIRE_RC(amdgpu_target_id_from_elf(2, 0xa40, &id), TETHER_OK); /* sramecc off, xnack off */
    REQUIRE(strcmp(id.processor, "gfx940") == 0);
    REQUIRE(id.xnack == AMDGPU_FEATURE_OFF && id.sramecc == AMDGPU_FEATURE_OFF);
    REQUIRE_RC(amdgpu_target_id_from_elf(2, 0xf3f, &id), TETHER_OK);
    REQUIRE(id.xnack == AMDGPU_FEATURE_ON && id.sramecc == AMDGPU_FEATURE_ON);
    REQUIRE_RC(amdgpu_target_id_from_elf(2, 0x036, &id), TETHER_OK); /* gfx1030, unsupported */
    REQUIRE(id.xnack == AMDGPU_FEATURE_ANY && id.sramecc == AMDGPU_FEATURE_ANY);
    REQUIRE_RC(amdgpu_target_id_from_elf(1, 0x12f, &id), TETHER_OK); /* v3 gfx906:xnack+ */
    REQUIRE(strcmp(id.processor, "gfx906") == 0 && id.xnack == AMDGPU_FEATURE_ON);
    REQUIRE(id.sramecc == AMDGPU_FEATURE_ANY);
    REQUIRE_RC(amdgpu_target_id_from_elf(1, 0x22f, &id), TETHER_OK); /* v3 gfx906:sramecc+ */
    REQUIRE(id.sramecc == AMDGPU_FEATURE_ON && id.xnack == AMDGPU_FEATURE_ANY);
    REQUIRE_RC(amdgpu_target_id_from_elf(2, 0x0ff, &id), TETHER_ERR_NOT_FOUND);
    REQUIRE_RC(amdgpu_target_id_from_elf(4, 0x53f, &id), TETHER_ERR_INVALID);
    printf("target rules: ok\n");
    return 0;
}

static int mode_mach(const char *clang, const char *dir)
{
    char src[1024], obj[1024], cmd[4096];
    unsigned checked = 0;
    FILE *f;

    snprintf(src, sizeof(src), "%s/mach_probe.c", dir);
    f = fopen(src, "w");
    REQUIRE(f != NULL);
    fprintf(f, "void tether_probe(void) {}\n");
    fclose(f);
    for (uint32_t mach = 0; mach < 256; mach++) {
        const char *name = amdgpu_target_mach_name(mach);
        struct image_elf_header header;
        struct amdgpu_target_id id;
        size_t size;
        void *bytes;

        if (name == NULL)
            continue;
        snprintf(obj, sizeof(obj), "%s/mach_%s.o", dir, name);
        snprintf(cmd, sizeof(cmd),
                 "'%s' --target=amdgcn-amd-amdhsa -mcpu=%s -nogpulib -c '%s' -o '%s'", clang, name,
                 src, obj);
        if (system(cmd) != 0) {
            fprintf(stderr, "clang cannot build for %s\n", name);
            return 1;
        }
        bytes = test_read_file(obj, &size);
        REQUIRE_RC(
            image_elf_header(&(struct plugin_image){.start = bytes, .size = size}, &header, NULL),
            TETHER_OK);
        if ((header.flags & 0xff) != mach) {
            fprintf(stderr, "%s: table says 0x%x, clang-16 wrote e_flags 0x%x\n", name, mach,
                    header.flags);
            return 1;
        }
        REQUIRE_RC(amdgpu_target_id_from_elf(header.abi_version, header.flags, &id), TETHER_OK);
        REQUIRE(strcmp(id.processor, name) == 0);
        free(bytes);
        unlink(obj);
        checked++;
    }
    unlink(src);
    REQUIRE(checked >= 38);
    printf("mach table: %u processors match clang-16\n", checked);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "rules") == 0)
        return amdgpu_test_end(argv[1], mode_rules());
    if (argc == 4 && strcmp(argv[1], "mach") == 0)
        return amdgpu_test_end(argv[1], mode_mach(argv[2], argv[3]));
    fprintf(stderr, "usage: %s rules | mach CLANG DIR\n", argv[0]);
    return 2;
}
