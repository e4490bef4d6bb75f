/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * amdgpu_module.c - code objects on a device through hsa_executable, and their globals and
 * kernels (see amdgpu_backend.h).
 *
 * A module keeps the parsed code object (amdgpu_code_object.h: kernel metadata, argument layout,
 * descriptors) next to the runtime's executable: launches take their kernarg layout and segment
 * sizes from the metadata and the kernel object from the runtime.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amdgpu_backend.h"

#define AMDGPU_DEFAULT_STACK_SIZE 1024 /* bytes per work-item for dynamic stacks (LLVM 16) */

tether_status_t amdgpu_module_load(struct plugin_device *pdev, const struct plugin_image *image,
                                   struct plugin_module **module_p, struct tether_error *err)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);
    const struct amdgpu_hsa *hsa = &dev->ap->hsa;
    struct amdgpu_module *m = calloc(1, sizeof(*m));
    hsa_code_object_reader_t reader;
    hsa_profile_t profile = HSA_PROFILE_BASE;
    tether_status_t st;

    if (m == NULL)
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "out of memory");
    st = amdgpu_code_object_parse(image->start, image->size, &m->co, err);
    if (st != TETHER_OK)
        goto free_module;
    if (!amdgpu_target_id_compatible(&m->co.target, &dev->target)) {
        char img[64], agent[64];

        amdgpu_target_id_format(&m->co.target, img, sizeof(img));
        amdgpu_target_id_format(&dev->target, agent, sizeof(agent));
        st = plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                              "the image is built for %s; this device is %s", img, agent);
        goto free_code_object;
    }

    hsa->hsa_agent_get_info(dev->agent, HSA_AGENT_INFO_PROFILE, &profile);
    st = amdgpu_check(
        dev, hsa->hsa_code_object_reader_create_from_memory(image->start, image->size, &reader),
        "hsa_code_object_reader_create_from_memory", err);
    if (st != TETHER_OK)
        goto free_code_object;
    st = amdgpu_check(dev,
                      hsa->hsa_executable_create_alt(
                          profile, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, "", &m->executable),
                      "hsa_executable_create_alt", err);
    if (st != TETHER_OK)
        goto destroy_reader;
    st = amdgpu_check(
        dev,
        hsa->hsa_executable_load_agent_code_object(m->executable, dev->agent, reader, "", NULL),
        "hsa_executable_load_agent_code_object", err);
    if (st == TETHER_OK)
        st = amdgpu_check(dev, hsa->hsa_executable_freeze(m->executable, ""),
                          "hsa_executable_freeze", err);
    if (st != TETHER_OK)
        goto destroy_executable;
    /* the executable does not need the reader once the code object is loaded */
    hsa->hsa_code_object_reader_destroy(reader);
    *module_p = &m->base;
    return TETHER_OK;

destroy_executable:
    hsa->hsa_executable_destroy(m->executable);
destroy_reader:
    hsa->hsa_code_object_reader_destroy(reader);
free_code_object:
    amdgpu_code_object_fini(&m->co);
free_module:
    free(m);
    return st;
}

void amdgpu_module_unload(struct plugin_device *pdev, struct plugin_module *module)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);
    struct amdgpu_module *m = container_of(module, struct amdgpu_module, base);

    dev->ap->hsa.hsa_executable_destroy(m->executable);
    amdgpu_code_object_fini(&m->co);
    free(m);
}

/* The executable's symbol `name` of the given kind.  TETHER_ERR_NOT_FOUND when absent. */
static tether_status_t amdgpu_symbol(struct amdgpu_device *dev, struct amdgpu_module *m,
                                     const char *name, hsa_symbol_kind_t kind,
                                     hsa_executable_symbol_t *sym_p, struct tether_error *err)
{
    const struct amdgpu_hsa *hsa = &dev->ap->hsa;
    hsa_symbol_kind_t got;
    hsa_status_t hs;
    char call[160];

    hs = hsa->hsa_executable_get_symbol_by_name(m->executable, name, &dev->agent, sym_p);
    if (hs == HSA_STATUS_ERROR_INVALID_SYMBOL_NAME)
        return plugin_error_set(err, TETHER_ERR_NOT_FOUND, "no symbol %s in the image", name);
    snprintf(call, sizeof(call), "hsa_executable_get_symbol_by_name(%s)", name);
    if (amdgpu_check(dev, hs, call, err) != TETHER_OK)
        return TETHER_ERR_DRIVER;
    if (hsa->hsa_executable_symbol_get_info(*sym_p, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &got) !=
            HSA_STATUS_SUCCESS ||
        got != kind)
        return plugin_error_set(err, TETHER_ERR_NOT_FOUND, "symbol %s is not a %s", name,
                                kind == HSA_SYMBOL_KIND_KERNEL ? "kernel" : "variable");
    return TETHER_OK;
}

tether_status_t amdgpu_global_lookup(struct plugin_device *pdev, struct plugin_module *module,
                                     const char *name, void **addr_p, size_t *size_p,
                                     struct tether_error *err)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);
    struct amdgpu_module *m = container_of(module, struct amdgpu_module, base);
    const struct amdgpu_hsa *hsa = &dev->ap->hsa;
    hsa_executable_symbol_t sym;
    uint64_t addr = 0;
    uint32_t size = 0;
    tether_status_t st;

    st = amdgpu_symbol(dev, m, name, HSA_SYMBOL_KIND_VARIABLE, &sym, err);
    if (st != TETHER_OK)
        return st;
    st = amdgpu_check(dev,
                      hsa->hsa_executable_symbol_get_info(
                          sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS, &addr),
                      "hsa_executable_symbol_get_info(VARIABLE_ADDRESS)", err);
    if (st != TETHER_OK)
        return st;
    if (hsa->hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE, &size) !=
            HSA_STATUS_SUCCESS ||
        size == 0) {
        /* some runtimes do not report sizes of code object v3+ variables: use the ELF's */
        struct image_symbol es;

        size = 0;
        if (image_elf_symbol(&m->co.image, name, &es) && es.size <= UINT32_MAX)
            size = (uint32_t)es.size;
    }
    *addr_p = (void *)(uintptr_t)addr;
    *size_p = size;
    return TETHER_OK;
}

tether_status_t amdgpu_kernel_lookup(struct plugin_device *pdev, struct plugin_module *module,
                                     const char *name, struct plugin_kernel **kernel_p,
                                     struct tether_error *err)
{
    struct amdgpu_device *dev = amdgpu_device_of(pdev);
    struct amdgpu_module *m = container_of(module, struct amdgpu_module, base);
    const struct amdgpu_hsa *hsa = &dev->ap->hsa;
    const struct amdgpu_kernel *meta = amdgpu_code_object_find_kernel(&m->co, name);
    struct amdgpu_loaded_kernel *k;
    hsa_executable_symbol_t sym;
    uint32_t kernarg_size = 0;
    tether_status_t st;

    if (meta == NULL)
        return plugin_error_set(err, TETHER_ERR_NOT_FOUND, "no kernel %s in the image metadata",
                                name);
    k = calloc(1, sizeof(*k));
    if (k == NULL)
        return plugin_error_set(err, TETHER_ERR_NO_MEMORY, "out of memory");
    st = amdgpu_symbol(dev, m, meta->symbol, HSA_SYMBOL_KIND_KERNEL, &sym, err);
    if (st != TETHER_OK)
        goto free_kernel;
    st = amdgpu_check(dev,
                      hsa->hsa_executable_symbol_get_info(
                          sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &k->kernel_object),
                      "hsa_executable_symbol_get_info(KERNEL_OBJECT)", err);
    if (st != TETHER_OK)
        goto free_kernel;
    if (hsa->hsa_executable_symbol_get_info(sym,
                                            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                            &kernarg_size) == HSA_STATUS_SUCCESS &&
        kernarg_size != meta->kernarg_segment_size) {
        st = plugin_error_set(err, TETHER_ERR_BAD_IMAGE,
                              "kernel %s: the runtime says %u kernarg bytes, the metadata %u", name,
                              kernarg_size, meta->kernarg_segment_size);
        goto free_kernel;
    }
    k->meta = meta;
    k->private_segment_size = meta->private_segment_fixed_size;
    if (meta->uses_dynamic_stack ||
        (meta->kd.kernel_code_properties & AMDGPU_KCP_USES_DYNAMIC_STACK) != 0) {
        int64_t stack =
            plugin_env_int("LIBOMPTARGET_STACK_SIZE", AMDGPU_DEFAULT_STACK_SIZE, 0, UINT32_MAX);

        if (stack > 0 && stack <= UINT32_MAX && (uint64_t)stack > k->private_segment_size)
            k->private_segment_size = (uint32_t)stack;
    }
    k->base.max_threads = meta->max_flat_workgroup_size;
    *kernel_p = &k->base;
    return TETHER_OK;

free_kernel:
    free(k);
    return st;
}

void amdgpu_kernel_release(struct plugin_device *pdev, struct plugin_kernel *kernel)
{
    (void)pdev;
    free(container_of(kernel, struct amdgpu_loaded_kernel, base));
}
