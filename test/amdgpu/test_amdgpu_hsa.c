/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_amdgpu_hsa.c - the dlopen'ed HSA runtime table and the status converter.
 *
 *   test_amdgpu_hsa missing          TETHER_HSA_LIBRARY names no file: TETHER_ERR_NO_DRIVER
 *   test_amdgpu_hsa partial LIB      a library lacking symbols: TETHER_ERR_DRIVER naming one
 *   test_amdgpu_hsa system           Debian's libhsa-runtime64.so.1: every symbol resolves, the
 *                                    converter carries the runtime's own text, and hsa_init()
 *                                    fails on a machine without /dev/kfd (no AMD GPU driver) and
 *                                    succeeds on one with it
 *   test_amdgpu_hsa map              the hsa_status_t -> tether_status_t mapping
 */
#include <string.h>
#include <unistd.h>

#include "amdgpu_hsa.h"
#include "amdgpu_test.h"

static int mode_missing(void)
{
    struct amdgpu_hsa hsa;
    struct tether_error err = {{0}};
    const char *name = "/nonexistent/tether/libhsa-runtime64.so.1";

    REQUIRE(setenv(AMDGPU_HSA_LIBRARY_ENV, name, 1) == 0);
    REQUIRE(strcmp(amdgpu_hsa_library_name(), name) == 0);
    REQUIRE_RC(amdgpu_hsa_open(NULL, &hsa, &err), TETHER_ERR_NO_DRIVER);
    printf("message: %s\n", err.msg);
    REQUIRE(strstr(err.msg, "cannot open the HSA runtime") != NULL);
    REQUIRE(strstr(err.msg, name) != NULL);
    /* an empty variable means the default name */
    REQUIRE(setenv(AMDGPU_HSA_LIBRARY_ENV, "", 1) == 0);
    REQUIRE(strcmp(amdgpu_hsa_library_name(), AMDGPU_HSA_LIBRARY) == 0);
    REQUIRE(unsetenv(AMDGPU_HSA_LIBRARY_ENV) == 0);
    REQUIRE(strcmp(amdgpu_hsa_library_name(), "libhsa-runtime64.so.1") == 0);
    REQUIRE_RC(amdgpu_hsa_open(NULL, NULL, &err), TETHER_ERR_INVALID);
    amdgpu_hsa_close(NULL); /* accepted */
    printf("missing runtime: ok\n");
    return 0;
}

static int mode_partial(const char *lib)
{
    struct amdgpu_hsa hsa;
    struct tether_error err = {{0}};

    memset(&hsa, 0x5a, sizeof(hsa));
    REQUIRE_RC(amdgpu_hsa_open(lib, &hsa, &err), TETHER_ERR_DRIVER);
    printf("message: %s\n", err.msg);
    REQUIRE(strstr(err.msg, "lacks the symbol hsa_shut_down") != NULL);
    REQUIRE(((unsigned char *)&hsa)[0] == 0x5a); /* not written on failure */
    printf("partial runtime: ok\n");
    return 0;
}

static int mode_system(void)
{
    struct amdgpu_hsa hsa;
    struct tether_error err = {{0}};
    const char *text = NULL;
    hsa_status_t st;

    REQUIRE_RC(amdgpu_hsa_open(NULL, &hsa, &err), TETHER_OK);
    REQUIRE(hsa.handle != NULL);
#define REQUIRE_SYMBOL_(name) REQUIRE(hsa.name != NULL);
    AMDGPU_HSA_SYMBOLS(REQUIRE_SYMBOL_)
#undef REQUIRE_SYMBOL_

    /* the runtime explains its codes without being initialised */
    REQUIRE(hsa.hsa_status_string(HSA_STATUS_ERROR_OUT_OF_RESOURCES, &text) == HSA_STATUS_SUCCESS);
    REQUIRE(text != NULL && strstr(text, "HSA_STATUS_ERROR_OUT_OF_RESOURCES") != NULL);
    REQUIRE_RC(
        amdgpu_hsa_check(&hsa, HSA_STATUS_ERROR_OUT_OF_RESOURCES, "hsa_queue_create(gfx90a)", &err),
        TETHER_ERR_NO_MEMORY);
    printf("converted: %s\n", err.msg);
    REQUIRE(strstr(err.msg, "hsa_queue_create(gfx90a): HSA_STATUS_ERROR_OUT_OF_RESOURCES") ==
            err.msg);
    REQUIRE(strstr(err.msg, "(0x1008)") != NULL);

    st = hsa.hsa_init();
    if (access("/dev/kfd", F_OK) != 0) {
        /* no amdgpu kernel driver: the runtime must refuse, and we must say why in its words */
        REQUIRE(st != HSA_STATUS_SUCCESS);
        REQUIRE(amdgpu_hsa_check(&hsa, st, "hsa_init", &err) != TETHER_OK);
        printf("hsa_init without /dev/kfd: %s\n", err.msg);
        REQUIRE(strstr(err.msg, "hsa_init: HSA_STATUS_ERROR") != NULL);
    } else {
        REQUIRE(st == HSA_STATUS_SUCCESS);
        REQUIRE(hsa.hsa_shut_down() == HSA_STATUS_SUCCESS);
        printf("hsa_init with /dev/kfd: success\n");
    }
    amdgpu_hsa_close(&hsa);
    REQUIRE(hsa.handle == NULL && hsa.hsa_init == NULL);
    printf("system runtime: ok\n");
    return 0;
}

static int mode_map(void)
{
    struct tether_error err = {{0}};

    REQUIRE(amdgpu_hsa_status_map(HSA_STATUS_SUCCESS) == TETHER_OK);
    REQUIRE(amdgpu_hsa_status_map(HSA_STATUS_INFO_BREAK) == TETHER_OK);
    REQUIRE(amdgpu_hsa_status_map(HSA_STATUS_ERROR_OUT_OF_RESOURCES) == TETHER_ERR_NO_MEMORY);
    REQUIRE(amdgpu_hsa_status_map(HSA_STATUS_ERROR_INVALID_ALLOCATION) == TETHER_ERR_NO_MEMORY);
    REQUIRE(amdgpu_hsa_status_map(HSA_STATUS_ERROR_NOT_INITIALIZED) == TETHER_ERR_NO_DRIVER);
    REQUIRE(amdgpu_hsa_status_map(HSA_STATUS_ERROR_INVALID_CODE_OBJECT) == TETHER_ERR_BAD_IMAGE);
    REQUIRE(amdgpu_hsa_status_map(HSA_STATUS_ERROR_INVALID_ISA) == TETHER_ERR_BAD_IMAGE);
    REQUIRE(amdgpu_hsa_status_map(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME) == TETHER_ERR_NOT_FOUND);
    REQUIRE(amdgpu_hsa_status_map(HSA_STATUS_ERROR_INVALID_ARGUMENT) == TETHER_ERR_INVALID);
    REQUIRE(amdgpu_hsa_status_map(HSA_STATUS_ERROR) == TETHER_ERR_DRIVER);
    REQUIRE(amdgpu_hsa_status_map((hsa_status_t)HSA_STATUS_ERROR_MEMORY_FAULT) ==
            TETHER_ERR_DRIVER);
    REQUIRE(amdgpu_hsa_status_map((hsa_status_t)0x7777) == TETHER_ERR_DRIVER);
    /* without a runtime table the message still names the call and the code */
    REQUIRE_RC(amdgpu_hsa_check(NULL, HSA_STATUS_ERROR_INVALID_ARGUMENT, "hsa_memory_copy", &err),
               TETHER_ERR_INVALID);
    REQUIRE(strcmp(err.msg, "hsa_memory_copy: HSA error (0x1001)") == 0);
    REQUIRE_RC(amdgpu_hsa_check(NULL, HSA_STATUS_SUCCESS, "x", &err), TETHER_OK);
    REQUIRE_RC(amdgpu_hsa_check(NULL, HSA_STATUS_ERROR, "x", NULL), TETHER_ERR_DRIVER);
    printf("status map: ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "missing") == 0)
        return amdgpu_test_end(argv[1], mode_missing());
    if (argc == 3 && strcmp(argv[1], "partial") == 0)
        return amdgpu_test_end(argv[1], mode_partial(argv[2]));
    if (argc == 2 && strcmp(argv[1], "system") == 0)
        return amdgpu_test_end(argv[1], mode_system());
    if (argc == 2 && strcmp(argv[1], "map") == 0)
        return amdgpu_test_end(argv[1], mode_map());
    fprintf(stderr, "usage: %s missing | partial LIB | system | map\n", argv[0]);
    return 2;
}
