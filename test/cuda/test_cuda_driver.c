/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test_cuda_driver.c - cuda_driver_open/close/check against no driver and
 * against fake libcuda.so.1 libraries built by the test (fake_cuda*.c).
 *
 * Usage: test_cuda_driver MODE [LIBRARY]
 *   missing            a library that does not exist -> TETHER_ERR_NO_DRIVER
 *   default            default search; must agree with a plain dlopen probe
 *   default-fake       default search with LD_LIBRARY_PATH at the full fake
 *   full LIB           resolution, _v2 preference, optional slot, converter
 *   no-v2 LIB          fake lacking cuMemAlloc_v2 (has legacy cuMemAlloc)
 *   no-opt LIB         fake lacking the optional cuDeviceGetUuid_v2
 *   partial LIB        fake exporting three symbols
 *   threads LIB        one driver called and checked from 8 threads at once (TSan)
 *
 * common's plugin_log() is replaced here by a recorder, so that the test sees
 * what the converter logs without linking the generic layer.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
#include "tcheck.h"

/* The recorder standing in for common's plugin_log(). */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_last[512];
static enum plugin_log_level log_last_level;
static const struct plugin *log_last_plugin;
static int log_count;

void plugin_log(const struct plugin *plugin, const struct plugin_device *dev,
                enum plugin_log_level level, const char *fmt, ...)
{
    va_list ap;

    (void)dev;
    pthread_mutex_lock(&log_lock);
    va_start(ap, fmt);
    vsnprintf(log_last, sizeof(log_last), fmt, ap);
    va_end(ap);
    log_last_level = level;
    log_last_plugin = plugin;
    log_count++;
    pthread_mutex_unlock(&log_lock);
}

#define SENTINEL ((struct cuda_driver *)(uintptr_t)0x5e17)

static void test_missing(void)
{
    struct cuda_driver *drv = SENTINEL;
    struct tether_error err = {{0}};

    CHECK_RC(cuda_driver_open("libtether-test-no-such-cuda.so.1", &drv, &err),
             TETHER_ERR_NO_DRIVER);
    CHECK(drv == SENTINEL);
    CHECK(strstr(err.msg, "libtether-test-no-such-cuda.so.1") != NULL);
    printf("missing: %s\n", err.msg);
    /* err may be NULL. */
    CHECK_RC(cuda_driver_open("libtether-test-no-such-cuda.so.1", &drv, NULL),
             TETHER_ERR_NO_DRIVER);
    CHECK_RC(cuda_driver_open(NULL, NULL, &err), TETHER_ERR_INVALID);
    cuda_driver_close(NULL);
}

static void test_default(void)
{
    struct cuda_driver *drv = SENTINEL;
    struct tether_error err = {{0}};
    void *probe = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    tether_status_t status;

    if (probe == NULL)
        probe = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    status = cuda_driver_open(NULL, &drv, &err);
    if (probe == NULL) {
        /* This machine has no CUDA driver (CI): a clean "no driver". */
        CHECK_RC(status, TETHER_ERR_NO_DRIVER);
        CHECK(drv == SENTINEL);
        CHECK(strstr(err.msg, "libcuda.so.1") != NULL);
        printf("default: no CUDA driver here: %s\n", err.msg);
    } else {
        CHECK_RC(status, TETHER_OK);
        CHECK(drv != SENTINEL && drv != NULL);
        if (status == TETHER_OK) {
            int version = 0;

            CHECK(drv->cuDriverGetVersion(&version) == CUDA_SUCCESS && version > 0);
            printf("default: opened %s, driver version %d\n", drv->library, version);
            cuda_driver_close(drv);
        }
        dlclose(probe);
    }
}

static void test_default_fake(void)
{
    struct cuda_driver *drv = NULL;
    struct tether_error err = {{0}};
    int count = 0;

    CHECK_RC(cuda_driver_open(NULL, &drv, &err), TETHER_OK);
    if (drv == NULL)
        return;
    CHECK(strcmp(drv->library, "libcuda.so.1") == 0);
    CHECK(drv->cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(count == 3); /* the fake, not a real driver */
    cuda_driver_close(drv);
}

static void test_full(const char *lib)
{
    struct cuda_driver *drv = NULL;
    struct tether_error err = {{0}};
    CUdeviceptr dptr = 0;
    CUuuid uuid;
    int count = 0;

    CHECK_RC(cuda_driver_open(lib, &drv, &err), TETHER_OK);
    if (drv == NULL) {
        fprintf(stderr, "open failed: %s\n", err.msg);
        return;
    }
    CHECK(strcmp(drv->library, lib) == 0);

    /* Every slot is resolved. */
#define CHECK_SLOT_(member, symbol, kind, params) CHECK(drv->member != NULL);
    CUDA_DRIVER_SYMBOLS(CHECK_SLOT_)
#undef CHECK_SLOT_
    CHECK(strcmp(cuda_driver_symbol_names[CUDA_SLOT_cuMemAlloc], "cuMemAlloc_v2") == 0);
    CHECK(strcmp(cuda_driver_symbol_names[CUDA_SLOT_cuInit], "cuInit") == 0);
    CHECK(strcmp(cuda_driver_symbol_names[CUDA_SLOT_cuStreamDestroy], "cuStreamDestroy_v2") == 0);

    /* Calls reach the fake's definitions, and the _v2 entry point, not the legacy one. */
    CHECK(drv->cuInit(0) == CUDA_SUCCESS);
    CHECK(drv->cuDeviceGetCount(&count) == CUDA_SUCCESS && count == 3);
    CHECK(drv->cuMemAlloc(&dptr, 16) == CUDA_SUCCESS);
    CHECK(dptr == 0xC0DA0000u + 16);
    CHECK(drv->cuDeviceGetUuid(&uuid, 2) == CUDA_SUCCESS);
    CHECK(memcmp(uuid.bytes, "fake-uuid", 9) == 0 && uuid.bytes[15] == 2);
    CHECK(drv->cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) ==
          CUDA_ERROR_NOT_SUPPORTED);

    /* The converter. */
    memset(&err, 0, sizeof(err));
    log_count = 0;
    CHECK_RC(cuda_driver_check(drv, CUDA_SUCCESS, "cuInit", &err), TETHER_OK);
    CHECK(err.msg[0] == '\0');
    CHECK(log_count == 0);
    drv->plugin = (const struct plugin *)(uintptr_t)0x9119;
    CHECK_RC(cuda_driver_check(drv, CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc_v2", &err),
             TETHER_ERR_NO_MEMORY);
    CHECK(strcmp(err.msg, "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: out of memory (fake driver)") ==
          0);
    /* Logged once, at debug level, in the driver's own words, with the owner's prefix. */
    CHECK(log_count == 1);
    CHECK(log_last_level == PLUGIN_LOG_DEBUG);
    CHECK(log_last_plugin == drv->plugin);
    CHECK(strcmp(log_last, err.msg) == 0);
    drv->plugin = NULL;
    CHECK_RC(cuda_driver_check(drv, CUDA_ERROR_INVALID_VALUE, "x", &err), TETHER_ERR_INVALID);
    CHECK_RC(cuda_driver_check(drv, CUDA_ERROR_NO_DEVICE, "x", &err), TETHER_ERR_NO_DEVICE);
    CHECK_RC(cuda_driver_check(drv, CUDA_ERROR_INVALID_DEVICE, "x", &err), TETHER_ERR_NO_DEVICE);
    CHECK_RC(cuda_driver_check(drv, CUDA_ERROR_INVALID_IMAGE, "x", &err), TETHER_ERR_BAD_IMAGE);
    CHECK_RC(cuda_driver_check(drv, CUDA_ERROR_NO_BINARY_FOR_GPU, "x", &err), TETHER_ERR_BAD_IMAGE);
    CHECK_RC(cuda_driver_check(drv, CUDA_ERROR_NOT_READY, "x", &err), TETHER_ERR_NOT_READY);
    CHECK_RC(cuda_driver_check(drv, CUDA_ERROR_NOT_SUPPORTED, "x", &err), TETHER_ERR_UNSUPPORTED);
    CHECK_RC(cuda_driver_check(drv, CUDA_ERROR_NOT_FOUND, "x", &err), TETHER_ERR_NOT_FOUND);
    CHECK_RC(cuda_driver_check(drv, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "x", &err),
             TETHER_ERR_DRIVER);
    CHECK(strstr(err.msg, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED") != NULL);
    /* A code the driver does not know: its number, and a stand-in text. */
    CHECK_RC(cuda_driver_check(drv, 12345, "cuFoo", &err), TETHER_ERR_DRIVER);
    CHECK(strcmp(err.msg, "cuFoo: CUresult 12345: no description from the driver") == 0);
    CHECK_RC(cuda_driver_check(drv, CUDA_ERROR_OUT_OF_MEMORY, "x", NULL), TETHER_ERR_NO_MEMORY);
    CHECK_RC(cuda_driver_check(NULL, CUDA_ERROR_OUT_OF_MEMORY, "x", &err), TETHER_ERR_NO_MEMORY);
    CHECK(strcmp(err.msg, "x: CUresult 2: no description from the driver") == 0);

    /* CUDA_CALL names the resolved symbol. */
    CHECK_RC(CUDA_CALL(drv, &err, cuStreamDestroy, NULL), TETHER_ERR_UNSUPPORTED);
    CHECK(strcmp(err.msg, "cuStreamDestroy_v2: CUDA_ERROR_NOT_SUPPORTED: not supported (fake "
                          "driver)") == 0);
    CHECK_RC(CUDA_CALL(drv, &err, cuMemAlloc, &dptr, 32), TETHER_OK);
    CHECK(dptr == 0xC0DA0000u + 32);

    cuda_driver_close(drv);
}

static void test_fails_naming(const char *lib, const char *symbol)
{
    struct cuda_driver *drv = SENTINEL;
    struct tether_error err = {{0}};

    CHECK_RC(cuda_driver_open(lib, &drv, &err), TETHER_ERR_DRIVER);
    CHECK(drv == SENTINEL);
    CHECK(strstr(err.msg, symbol) != NULL);
    printf("%s: %s\n", lib, err.msg);
}

static void test_no_opt(const char *lib)
{
    struct cuda_driver *drv = NULL;
    struct tether_error err = {{0}};
    int count = 0;

    CHECK_RC(cuda_driver_open(lib, &drv, &err), TETHER_OK);
    if (drv == NULL)
        return;
    CHECK(drv->cuDeviceGetUuid == NULL);
    CHECK(drv->cuDeviceGetCount(&count) == CUDA_SUCCESS && count == 3);
    cuda_driver_close(drv);
}

struct thread_arg {
    const struct cuda_driver *drv;
    int errors;
};

static void *thread_main(void *p)
{
    struct thread_arg *arg = p;

    for (int i = 0; i < 200; i++) {
        struct tether_error err;
        CUdeviceptr dptr = 0;

        if (CUDA_CALL(arg->drv, &err, cuMemAlloc, &dptr, (size_t)i) != TETHER_OK ||
            dptr != 0xC0DA0000u + (size_t)i)
            arg->errors++;
        if (cuda_driver_check(arg->drv, CUDA_ERROR_NOT_READY, "cuStreamQuery", &err) !=
                TETHER_ERR_NOT_READY ||
            strcmp(err.msg, "cuStreamQuery: CUDA_ERROR_NOT_READY: not ready (fake driver)") != 0)
            arg->errors++;
    }
    return NULL;
}

/* One open driver used from many threads: the way the plugin uses it.  (Concurrent dlopen and
 * dlclose of one library is safe in glibc, but TSan cannot see ld.so's locks, so the test does
 * not open from several threads.) */
static void test_threads(const char *lib)
{
    pthread_t threads[8];
    struct thread_arg args[8];
    struct cuda_driver *drv = NULL;
    struct tether_error err;

    CHECK_RC(cuda_driver_open(lib, &drv, &err), TETHER_OK);
    if (drv == NULL)
        return;
    for (int i = 0; i < 8; i++) {
        args[i] = (struct thread_arg){.drv = drv, .errors = 0};
        CHECK(pthread_create(&threads[i], NULL, thread_main, &args[i]) == 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(threads[i], NULL);
        CHECK(args[i].errors == 0);
    }
    CHECK(log_count == 8 * 200);
    cuda_driver_close(drv);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const char *lib = argc > 2 ? argv[2] : NULL;

    if (strcmp(mode, "missing") == 0) {
        test_missing();
    } else if (strcmp(mode, "default") == 0) {
        test_default();
    } else if (strcmp(mode, "default-fake") == 0) {
        test_default_fake();
    } else if (lib != NULL && strcmp(mode, "full") == 0) {
        test_full(lib);
    } else if (lib != NULL && strcmp(mode, "no-v2") == 0) {
        test_fails_naming(lib, "cuMemAlloc_v2");
    } else if (lib != NULL && strcmp(mode, "no-opt") == 0) {
        test_no_opt(lib);
    } else if (lib != NULL && strcmp(mode, "partial") == 0) {
        test_fails_naming(lib, "cuGetErrorString");
    } else if (lib != NULL && strcmp(mode, "threads") == 0) {
        test_threads(lib);
    } else {
        fprintf(stderr, "usage: %s MODE [LIBRARY]\n", argv[0]);
        return 2;
    }
    return tcheck_exit(mode);
}
