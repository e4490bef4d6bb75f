/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * fuzz_code_object.c - libFuzzer target for the decoders of image bytes: the code-object parser
 * (ELF, notes, MessagePack metadata, kernel descriptors, target IDs), kernarg packing of whatever
 * kernels it accepts, the bare MessagePack reader, and target-ID parsing.  Seeded with the real
 * clang-16 code objects the tests build; run for a fixed time as a ctest (normal build only).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "amdgpu_aql.h"
#include "amdgpu_code_object.h"
#include "amdgpu_msgpack.h"
#include "amdgpu_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct amdgpu_code_object co;
    struct amdgpu_mp_reader r;
    struct amdgpu_target_id id;
    struct tether_error err;
    char text[96];

    if (amdgpu_code_object_parse(data, size, &co, &err) == TETHER_OK) {
        for (uint32_t i = 0; i < co.num_kernels; i++) {
            const struct amdgpu_kernel *k = &co.kernels[i];
            size_t n = amdgpu_kernargs_size(k);
            struct amdgpu_dispatch d = {.num_groups = 3, .group_size = 64, .dynamic_lds = 16};
            void **args = calloc(k->num_explicit_args + 1, sizeof(*args));
            uint8_t *buf = malloc(n);

            if (args != NULL && buf != NULL)
                amdgpu_kernargs_pack(k, args, k->num_explicit_args, &d, NULL, buf, n, &err);
            free(args);
            free(buf);
            if (amdgpu_code_object_find_kernel(&co, k->name) == NULL)
                abort(); /* a parsed kernel must be found by its own name */
        }
        amdgpu_target_id_format(&co.target, text, sizeof(text));
        if (amdgpu_target_id_parse(text, &id) != TETHER_OK ||
            !amdgpu_target_id_compatible(&co.target, &id))
            abort(); /* the canonical text round-trips and matches itself */
        amdgpu_code_object_fini(&co);
    }
    amdgpu_mp_init(&r, data, size);
    while (amdgpu_mp_skip(&r) == TETHER_OK && !amdgpu_mp_at_end(&r))
        ;
    if (size < sizeof(text)) {
        memcpy(text, data, size);
        text[size] = '\0';
        if (amdgpu_target_id_parse(text, &id) == TETHER_OK)
            amdgpu_target_id_format(&id, text, sizeof(text));
    }
    return 0;
}
