/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * cuda_driver.h - the CUDA driver API, dlopen'ed at run time.
 *
 * Role: the only door from tether to libcuda.  cuda_driver_open() dlopens
 * libcuda.so.1 (then libcuda.so) and resolves every entry point named in
 * CUDA_DRIVER_SYMBOLS into a struct of function pointers; nothing else in
 * tether names a CUDA symbol.  No CUDA header is needed at build time: the
 * few types, enums and constants the plugin uses are declared below with the
 * values of CUDA's cuda.h, so the plugin builds and loads where CUDA is
 * absent.
 *
 * Invariants every call may assume:
 *  - After a successful cuda_driver_open() every REQ slot is non-NULL and
 *    points at the versioned entry point named in the list (cuMemAlloc_v2 for
 *    the cuMemAlloc slot, and so on): the member is named like the API, the
 *    symbol is what cuda.h would have bound the name to.  OPT slots may be
 *    NULL; a caller tests them before use.
 *  - The struct is never written after open returns, so it may be read and
 *    called from any number of threads at once without a lock.  Tests may
 *    copy it and replace slots (fault injection); the copy must not outlive
 *    the driver it was copied from.
 *
 * Thread safety: cuda_driver_check() and the entry points may be called
 * from any number of threads at once (the CUDA functions have CUDA's own
 * rules).  cuda_driver_open() and cuda_driver_close() may be called from any
 * thread; close must be the last call on a driver.
 *
 * Errors and logging follow common/plugin.h: a failure is described in
 * err->msg, with the driver's own error name and text, and returned; the
 * caller (ultimately common) decides how loudly to report it.
 * cuda_driver_check() also logs every failed call it sees at
 * PLUGIN_LOG_DEBUG (TETHER_DEBUG=1), expected ones included.
 */
#ifndef TETHER_CUDA_DRIVER_H
#define TETHER_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "plugin.h"
#include "tether/status.h"

/* ---- Types, with the ABI of CUDA's cuda.h (CUDA >= 11; 64-bit only) ---- */
typedef int CUresult;           /* enum cudaError_enum */
typedef int CUdevice;           /* CUdevice_v1 */
typedef uint64_t CUdeviceptr;   /* CUdeviceptr_v2: an unsigned 64-bit integer */
typedef int CUdevice_attribute; /* enum CUdevice_attribute_enum */
typedef int CUfunction_attribute;
typedef int CUpointer_attribute;
typedef int CUlimit;
typedef int CUjit_option;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUlinkState_st *CUlinkState;
typedef int CUjitInputType; /* enum CUjitInputType_enum */
typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;

/* CUresult values the plugin tests for (cuda.h cudaError_enum). */
enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
    CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
    CUDA_ERROR_UNKNOWN = 999,
};

/* CUdevice_attribute values. */
enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY = 9,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
    CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS = 31,
    CU_DEVICE_ATTRIBUTE_ECC_ENABLED = 32,
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
    CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
    CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
    CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
    CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS = 88,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 89,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM = 91,
    CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES = 100,
};

/* CUfunction_attribute values. */
enum {
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
    CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

/* CUpointer_attribute values. */
enum {
    CU_POINTER_ATTRIBUTE_CONTEXT = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
    CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
    CU_POINTER_ATTRIBUTE_MAPPED = 13,
};

/* CUjit_option values (options of cuModuleLoadDataEx and cuLink*). */
enum {
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6, /* in: capacity; out: bytes written */
};

/* CUjitInputType values. */
enum {
    CU_JIT_INPUT_CUBIN = 0,
    CU_JIT_INPUT_PTX = 1,
};

/* CUlimit values. */
enum {
    CU_LIMIT_STACK_SIZE = 0,
    CU_LIMIT_PRINTF_FIFO_SIZE = 1,
    CU_LIMIT_MALLOC_HEAP_SIZE = 2,
};

/* Flags. */
enum {
    CU_CTX_SCHED_AUTO = 0x0,
    CU_CTX_SCHED_SPIN = 0x1,
    CU_CTX_SCHED_YIELD = 0x2,
    CU_CTX_SCHED_BLOCKING_SYNC = 0x4,
    CU_CTX_SCHED_MASK = 0x7,
    CU_STREAM_DEFAULT = 0x0,
    CU_STREAM_NON_BLOCKING = 0x1,
    CU_EVENT_DEFAULT = 0x0,
    CU_EVENT_BLOCKING_SYNC = 0x1,
    CU_EVENT_DISABLE_TIMING = 0x2,
    CU_MEM_ATTACH_GLOBAL = 0x1,
    CU_MEM_ATTACH_HOST = 0x2,
    CU_MEMHOSTALLOC_PORTABLE = 0x1,
    CU_MEMHOSTALLOC_DEVICEMAP = 0x2,
    CU_MEMHOSTALLOC_WRITECOMBINED = 0x4,
    CU_MEMHOSTREGISTER_PORTABLE = 0x1,
    CU_MEMHOSTREGISTER_DEVICEMAP = 0x2,
    CU_MEMHOSTREGISTER_IOMEMORY = 0x4,
    CU_MEMHOSTREGISTER_READ_ONLY = 0x8,
};

/* ---- The entry points ----
 *
 * X(member, symbol, kind, (parameters)): member is the API name the plugin
 * calls (drv->cuMemAlloc), symbol the exported entry point resolved for it
 * (the _v2 one where cuda.h binds the name to one, and never the _ptds/_ptsz
 * per-thread-stream variants), kind REQ (open fails without it) or OPT (the
 * slot may be NULL).  Every entry point returns CUresult. */
#define CUDA_DRIVER_SYMBOLS(X)                                                                     \
    X(cuInit, cuInit, REQ, (unsigned int flags))                                                   \
    X(cuDriverGetVersion, cuDriverGetVersion, REQ, (int *version))                                 \
    X(cuGetErrorName, cuGetErrorName, REQ, (CUresult error, const char **str))                     \
    X(cuGetErrorString, cuGetErrorString, REQ, (CUresult error, const char **str))                 \
    X(cuDeviceGetCount, cuDeviceGetCount, REQ, (int *count))                                       \
    X(cuDeviceGet, cuDeviceGet, REQ, (CUdevice * device, int ordinal))                             \
    X(cuDeviceGetName, cuDeviceGetName, REQ, (char *name, int len, CUdevice dev))                  \
    X(cuDeviceGetAttribute, cuDeviceGetAttribute, REQ,                                             \
      (int *value, CUdevice_attribute attrib, CUdevice dev))                                       \
    X(cuDeviceTotalMem, cuDeviceTotalMem_v2, REQ, (size_t * bytes, CUdevice dev))                  \
    X(cuDeviceCanAccessPeer, cuDeviceCanAccessPeer, REQ,                                           \
      (int *can_access, CUdevice dev, CUdevice peer))                                              \
    X(cuDeviceGetUuid, cuDeviceGetUuid_v2, OPT, (CUuuid * uuid, CUdevice dev))                     \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, REQ, (CUcontext * ctx, CUdevice dev))    \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, REQ, (CUdevice dev))                \
    X(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState, REQ,                                 \
      (CUdevice dev, unsigned int *flags, int *active))                                            \
    X(cuDevicePrimaryCtxSetFlags, cuDevicePrimaryCtxSetFlags_v2, REQ,                              \
      (CUdevice dev, unsigned int flags))                                                          \
    X(cuCtxSetCurrent, cuCtxSetCurrent, REQ, (CUcontext ctx))                                      \
    X(cuCtxGetCurrent, cuCtxGetCurrent, REQ, (CUcontext * ctx))                                    \
    X(cuCtxSynchronize, cuCtxSynchronize, REQ, (void))                                             \
    X(cuCtxSetLimit, cuCtxSetLimit, REQ, (CUlimit limit, size_t value))                            \
    X(cuCtxGetLimit, cuCtxGetLimit, REQ, (size_t * value, CUlimit limit))                          \
    X(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, REQ, (CUcontext peer, unsigned int flags))     \
    X(cuModuleLoadDataEx, cuModuleLoadDataEx, REQ,                                                 \
      (CUmodule * module, const void *image, unsigned int num_options, CUjit_option *options,      \
       void **option_values))                                                                      \
    X(cuModuleUnload, cuModuleUnload, REQ, (CUmodule module))                                      \
    X(cuLinkCreate, cuLinkCreate_v2, OPT,                                                          \
      (unsigned int num_options, CUjit_option *options, void **option_values, CUlinkState *state)) \
    X(cuLinkAddData, cuLinkAddData_v2, OPT,                                                        \
      (CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,          \
       unsigned int num_options, CUjit_option *options, void **option_values))                     \
    X(cuLinkComplete, cuLinkComplete, OPT, (CUlinkState state, void **cubin, size_t *size))        \
    X(cuLinkDestroy, cuLinkDestroy, OPT, (CUlinkState state))                                      \
    X(cuModuleGetGlobal, cuModuleGetGlobal_v2, REQ,                                                \
      (CUdeviceptr * dptr, size_t * bytes, CUmodule module, const char *name))                     \
    X(cuModuleGetFunction, cuModuleGetFunction, REQ,                                               \
      (CUfunction * func, CUmodule module, const char *name))                                      \
    X(cuFuncGetAttribute, cuFuncGetAttribute, REQ,                                                 \
      (int *value, CUfunction_attribute attrib, CUfunction func))                                  \
    X(cuFuncSetAttribute, cuFuncSetAttribute, REQ,                                                 \
      (CUfunction func, CUfunction_attribute attrib, int value))                                   \
    X(cuFuncGetParamInfo, cuFuncGetParamInfo, OPT,                                                 \
      (CUfunction func, size_t index, size_t * offset, size_t * size))                             \
    X(cuLaunchKernel, cuLaunchKernel, REQ,                                                         \
      (CUfunction func, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,             \
       unsigned int block_x, unsigned int block_y, unsigned int block_z,                           \
       unsigned int shared_bytes, CUstream stream, void **params, void **extra))                   \
    X(cuMemGetInfo, cuMemGetInfo_v2, REQ, (size_t * free_bytes, size_t * total_bytes))             \
    X(cuMemAlloc, cuMemAlloc_v2, REQ, (CUdeviceptr * dptr, size_t bytes))                          \
    X(cuMemFree, cuMemFree_v2, REQ, (CUdeviceptr dptr))                                            \
    X(cuMemAllocHost, cuMemAllocHost_v2, REQ, (void **ptr, size_t bytes))                          \
    X(cuMemHostAlloc, cuMemHostAlloc, REQ, (void **ptr, size_t bytes, unsigned int flags))         \
    X(cuMemFreeHost, cuMemFreeHost, REQ, (void *ptr))                                              \
    X(cuMemAllocManaged, cuMemAllocManaged, REQ,                                                   \
      (CUdeviceptr * dptr, size_t bytes, unsigned int flags))                                      \
    X(cuMemHostRegister, cuMemHostRegister_v2, REQ, (void *ptr, size_t bytes, unsigned int flags)) \
    X(cuMemHostUnregister, cuMemHostUnregister, REQ, (void *ptr))                                  \
    X(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer_v2, REQ,                                \
      (CUdeviceptr * dptr, void *ptr, unsigned int flags))                                         \
    X(cuPointerGetAttribute, cuPointerGetAttribute, REQ,                                           \
      (void *data, CUpointer_attribute attrib, CUdeviceptr ptr))                                   \
    X(cuMemcpyHtoD, cuMemcpyHtoD_v2, REQ, (CUdeviceptr dst, const void *src, size_t bytes))        \
    X(cuMemcpyDtoH, cuMemcpyDtoH_v2, REQ, (void *dst, CUdeviceptr src, size_t bytes))              \
    X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, REQ,                                                \
      (CUdeviceptr dst, const void *src, size_t bytes, CUstream stream))                           \
    X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, REQ,                                                \
      (void *dst, CUdeviceptr src, size_t bytes, CUstream stream))                                 \
    X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, REQ,                                                \
      (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream))                           \
    X(cuMemcpyPeerAsync, cuMemcpyPeerAsync, REQ,                                                   \
      (CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes,       \
       CUstream stream))                                                                           \
    X(cuStreamCreate, cuStreamCreate, REQ, (CUstream * stream, unsigned int flags))                \
    X(cuStreamDestroy, cuStreamDestroy_v2, REQ, (CUstream stream))                                 \
    X(cuStreamSynchronize, cuStreamSynchronize, REQ, (CUstream stream))                            \
    X(cuStreamQuery, cuStreamQuery, REQ, (CUstream stream))                                        \
    X(cuStreamWaitEvent, cuStreamWaitEvent, REQ,                                                   \
      (CUstream stream, CUevent event, unsigned int flags))                                        \
    X(cuEventCreate, cuEventCreate, REQ, (CUevent * event, unsigned int flags))                    \
    X(cuEventDestroy, cuEventDestroy_v2, REQ, (CUevent event))                                     \
    X(cuEventRecord, cuEventRecord, REQ, (CUevent event, CUstream stream))                         \
    X(cuEventSynchronize, cuEventSynchronize, REQ, (CUevent event))                                \
    X(cuEventQuery, cuEventQuery, REQ, (CUevent event))

/* The resolved driver.  Function-pointer slots first, one per list entry. */
struct cuda_driver {
#define CUDA_DRIVER_SLOT_(member, symbol, kind, params) CUresult(*member) params;
    CUDA_DRIVER_SYMBOLS(CUDA_DRIVER_SLOT_)
#undef CUDA_DRIVER_SLOT_
    void *handle;                /* from dlopen; owned */
    char library[256];           /* the name or path that was opened, for messages */
    const struct plugin *plugin; /* log prefix; set by the owner after open, may be NULL */
};

/* Open the CUDA driver and resolve every entry point.
 *
 * library: a name or path to dlopen, or NULL for the default search
 * ("libcuda.so.1", then "libcuda.so", through the dynamic loader's usual
 * path).  On success *drv_p receives a driver that the caller frees with
 * cuda_driver_close().  cuInit is NOT called.
 *
 * Returns TETHER_OK; TETHER_ERR_NO_DRIVER when no library could be opened
 * (a machine without CUDA: the caller reports zero devices at info level);
 * TETHER_ERR_DRIVER when a library opened but lacks a REQ entry point (the
 * message names the first missing symbol: a warning for the caller);
 * TETHER_ERR_INVALID (drv_p NULL); TETHER_ERR_NO_MEMORY.  On failure nothing
 * stays open and *drv_p is not written; err (may be NULL) receives a one-line
 * message.  Nothing is logged here. */
tether_status_t cuda_driver_open(const char *library, struct cuda_driver **drv_p,
                                 struct tether_error *err);

/* Close a driver from cuda_driver_open(): dlcloses the library and frees drv.
 * NULL is accepted.  No CUDA object may be used afterwards. */
void cuda_driver_close(struct cuda_driver *drv);

/* Free drv but leave the library loaded: for a plugin shutting down at process exit, when
 * libcuda's own exit handlers (and other users of libcuda in the process) may still run.  NULL
 * is accepted. */
void cuda_driver_free(struct cuda_driver *drv);

/* The CUresult -> tether_status_t converter, used at every driver call site.
 *
 * CUDA_SUCCESS -> TETHER_OK, nothing logged.  Any other result is written to
 * err (may be NULL) with the driver's own name and text for it (from
 * cuGetErrorName/cuGetErrorString) as "<call>: <CUDA_ERROR_NAME>: <text>",
 * logged at PLUGIN_LOG_DEBUG with the same words, and mapped:
 *   OUT_OF_MEMORY -> TETHER_ERR_NO_MEMORY; INVALID_VALUE -> TETHER_ERR_INVALID;
 *   NO_DEVICE, INVALID_DEVICE -> TETHER_ERR_NO_DEVICE;
 *   INVALID_IMAGE, NO_BINARY_FOR_GPU, UNSUPPORTED_PTX_VERSION -> TETHER_ERR_BAD_IMAGE;
 *   NOT_READY -> TETHER_ERR_NOT_READY; NOT_SUPPORTED -> TETHER_ERR_UNSUPPORTED;
 *   NOT_FOUND -> TETHER_ERR_NOT_FOUND; everything else -> TETHER_ERR_DRIVER.
 * Results a caller expects (NOT_READY from a query, HOST_MEMORY_ALREADY_REGISTERED
 * from a register) are tested by the caller before this is called.  call
 * names the entry point, e.g. "cuMemAlloc_v2".  drv may be NULL (no driver
 * strings then: "CUresult <n>"). */
tether_status_t cuda_driver_check(const struct cuda_driver *drv, CUresult result, const char *call,
                                  struct tether_error *err);

/* One index per slot (CUDA_SLOT_cuMemAlloc, ...) and the name of the symbol
 * resolved for it: cuda_driver_symbol_names[CUDA_SLOT_cuMemAlloc] is
 * "cuMemAlloc_v2".  For messages. */
enum cuda_driver_slot {
#define CUDA_DRIVER_ENUM_(member, symbol, kind, params) CUDA_SLOT_##member,
    CUDA_DRIVER_SYMBOLS(CUDA_DRIVER_ENUM_)
#undef CUDA_DRIVER_ENUM_
        CUDA_SLOT_COUNT_
};
extern const char *const cuda_driver_symbol_names[CUDA_SLOT_COUNT_];

/* Call a driver entry point and convert its result: CUDA_CALL(drv, err, cuMemAlloc, &p, n)
 * evaluates to a tether_status_t (see cuda_driver_check). */
#define CUDA_CALL(drv, err, member, ...)                                                           \
    cuda_driver_check((drv), (drv)->member(__VA_ARGS__),                                           \
                      cuda_driver_symbol_names[CUDA_SLOT_##member], (err))

#endif /* TETHER_CUDA_DRIVER_H */
