/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * fake_hsa_partial.c - a libhsa-runtime64.so.1 that exports only hsa_status_string and hsa_init,
 * like a broken or foreign install: the plugin must refuse it, naming the first missing symbol.
 */
#include <hsa/hsa.h>

hsa_status_t hsa_status_string(hsa_status_t status, const char **status_string)
{
    (void)status;
    *status_string = "fake partial runtime";
    return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_init(void)
{
    return HSA_STATUS_SUCCESS;
}
