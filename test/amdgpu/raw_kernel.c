/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * raw_kernel.c - a plain AMDGPU kernel (no OpenMP) compiled by clang-16 as code object v5, so
 * the tests see the hidden kernel arguments v5 lists in its metadata (block counts, group sizes,
 * grid dims, ...), and with explicit target features (xnack+) for target-ID tests.
 */
__attribute__((amdgpu_kernel, visibility("protected"))) void tether_raw(int *out, int n)
{
    out[__builtin_amdgcn_workitem_id_x()] = n + (int)__builtin_amdgcn_workgroup_size_x();
}
