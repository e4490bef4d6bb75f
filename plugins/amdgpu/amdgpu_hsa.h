/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_hsa.h - the ROCm HSA runtime, dlopen'ed.
 *
 * Role: the only file of tether that names libhsa-runtime64.so.1.  The plugin is compiled against
 * Debian's libhsa-runtime-dev headers (<hsa/hsa.h>, <hsa/hsa_ext_amd.h>) but never linked to the
 * runtime: amdgpu_hsa_open() dlopens it and fills a private table of function pointers whose types
 * are taken from those headers (one X-macro list below), so a header/ABI mismatch is a compile
 * error, not a crash.  The plugin builds and loads on a machine without the runtime.
 *
 * Library name: AMDGPU_HSA_LIBRARY ("libhsa-runtime64.so.1", the SONAME every ROCm install and
 * Debian's libhsa-runtime64-1 provide), searched the usual dlopen way (LD_LIBRARY_PATH first).
 * The environment variable TETHER_HSA_LIBRARY, when set and not empty, replaces that name (a path
 * such as /opt/rocm/lib/libhsa-runtime64.so.1, or a name that does not exist to test the "no
 * runtime" path).
 *
 * Invariants: after a successful amdgpu_hsa_open() every pointer in the table is non-NULL.  The
 * table is filled once and read-only afterwards, so it may be read from any thread without a lock.
 * amdgpu_hsa_close() must be the last call; it does not call hsa_shut_down() (the caller owns the
 * hsa_init()/hsa_shut_down() pairing).
 *
 * Errors: the one converter amdgpu_hsa_check() turns an hsa_status_t into a tether_status_t at the
 * boundary and writes the runtime's own text (hsa_status_string) into the message.
 */
#ifndef TETHER_AMDGPU_HSA_H
#define TETHER_AMDGPU_HSA_H

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include "tether/status.h"

#define AMDGPU_HSA_LIBRARY "libhsa-runtime64.so.1"
#define AMDGPU_HSA_LIBRARY_ENV "TETHER_HSA_LIBRARY"

/* Every runtime entry point tether calls.  hsa_status_string comes first: it is used to explain
 * every other failure, including a failed hsa_init(). */
#define AMDGPU_HSA_SYMBOLS(X)                                                                      \
    X(hsa_status_string)                                                                           \
    X(hsa_init)                                                                                    \
    X(hsa_shut_down)                                                                               \
    X(hsa_system_get_info)                                                                         \
    X(hsa_iterate_agents)                                                                          \
    X(hsa_agent_get_info)                                                                          \
    X(hsa_agent_iterate_isas)                                                                      \
    X(hsa_isa_get_info_alt)                                                                        \
    X(hsa_amd_agent_iterate_memory_pools)                                                          \
    X(hsa_amd_memory_pool_get_info)                                                                \
    X(hsa_amd_memory_pool_allocate)                                                                \
    X(hsa_amd_memory_pool_free)                                                                    \
    X(hsa_amd_agents_allow_access)                                                                 \
    X(hsa_amd_memory_lock)                                                                         \
    X(hsa_amd_memory_unlock)                                                                       \
    X(hsa_amd_memory_async_copy)                                                                   \
    X(hsa_amd_memory_fill)                                                                         \
    X(hsa_amd_pointer_info)                                                                        \
    X(hsa_queue_create)                                                                            \
    X(hsa_queue_destroy)                                                                           \
    X(hsa_queue_load_read_index_scacquire)                                                         \
    X(hsa_queue_add_write_index_relaxed)                                                           \
    X(hsa_signal_create)                                                                           \
    X(hsa_signal_destroy)                                                                          \
    X(hsa_signal_store_relaxed)                                                                    \
    X(hsa_signal_store_screlease)                                                                  \
    X(hsa_signal_load_relaxed)                                                                     \
    X(hsa_signal_load_scacquire)                                                                   \
    X(hsa_signal_wait_scacquire)                                                                   \
    X(hsa_code_object_reader_create_from_memory)                                                   \
    X(hsa_code_object_reader_destroy)                                                              \
    X(hsa_executable_create_alt)                                                                   \
    X(hsa_executable_load_agent_code_object)                                                       \
    X(hsa_executable_freeze)                                                                       \
    X(hsa_executable_destroy)                                                                      \
    X(hsa_executable_get_symbol_by_name)                                                           \
    X(hsa_executable_symbol_get_info)

/* The runtime's entry points, typed from the headers.  Members carry the runtime's own names, so
 * calls read hsa->hsa_init(). */
struct amdgpu_hsa {
    void *handle; /* dlopen handle; NULL when the table is not open */
#define AMDGPU_HSA_MEMBER_(name) __typeof__(&name) name;
    AMDGPU_HSA_SYMBOLS(AMDGPU_HSA_MEMBER_)
#undef AMDGPU_HSA_MEMBER_
};

/* The name amdgpu_hsa_open(NULL, ...) will dlopen: $TETHER_HSA_LIBRARY when set and not empty,
 * otherwise AMDGPU_HSA_LIBRARY.  Never NULL. */
const char *amdgpu_hsa_library_name(void);

/* Open the runtime library and resolve every symbol of AMDGPU_HSA_SYMBOLS.
 *   library: file name or path to dlopen; NULL means amdgpu_hsa_library_name().
 * Returns TETHER_OK and fills *hsa_p; TETHER_ERR_NO_DRIVER when the library cannot be opened (the
 * message carries dlerror(); "no runtime" is not an error to the plugin: it reports zero
 * devices); TETHER_ERR_DRIVER when the library lacks a symbol (the message names it; the library
 * is closed again); TETHER_ERR_INVALID when hsa_p is NULL.  Nothing to clean up on failure. */
tether_status_t amdgpu_hsa_open(const char *library, struct amdgpu_hsa *hsa_p,
                                struct tether_error *err);

/* Close what amdgpu_hsa_open() opened and clear the table.  NULL, or a table never opened, is
 * accepted and does nothing. */
void amdgpu_hsa_close(struct amdgpu_hsa *hsa);

/* The status converter at the HSA boundary.
 *   status: what the runtime returned from `call` (a short text naming the call and its object,
 *   e.g. "hsa_queue_create(gfx90a)").
 * Returns TETHER_OK for HSA_STATUS_SUCCESS and HSA_STATUS_INFO_BREAK; otherwise the matching
 * tether status (amdgpu_hsa_status_map()) and, when err is not NULL, the message
 * "<call>: <hsa_status_string text> (0x<code>)".  hsa may be NULL or unopened: the message then
 * carries the numeric code only. */
tether_status_t amdgpu_hsa_check(const struct amdgpu_hsa *hsa, hsa_status_t status,
                                 const char *call, struct tether_error *err);

/* The mapping used by amdgpu_hsa_check(), exposed for tests: out-of-resources and failed
 * allocations are TETHER_ERR_NO_MEMORY, a runtime not initialised is TETHER_ERR_NO_DRIVER, invalid
 * code objects/ISAs/executables are TETHER_ERR_BAD_IMAGE, unknown symbol names are
 * TETHER_ERR_NOT_FOUND, invalid arguments are TETHER_ERR_INVALID, everything else is
 * TETHER_ERR_DRIVER. */
tether_status_t amdgpu_hsa_status_map(hsa_status_t status);

#endif /* TETHER_AMDGPU_HSA_H */
