/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/common/real_image.h - a real x86_64 device image (dumped from image_src.c's executable)
 * with a host entry table rebuilt from the names the image itself lists
 * (".omp_offloading.entry.<name>" symbols), in the image's order.  Header-only, for tests.
 */
#ifndef TETHER_TEST_REAL_IMAGE_H
#define TETHER_TEST_REAL_IMAGE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tgt_abi.h"

#define REAL_IMAGE_MAX_ENTRIES 8

struct real_image {
    unsigned char *bytes;
    size_t size;
    struct tgt_device_image dimg;
    struct tgt_offload_entry entries[REAL_IMAGE_MAX_ENTRIES];
    char names[REAL_IMAGE_MAX_ENTRIES][160];
    size_t count;
    int kernel, global, array; /* entry indices */
    /* the host side of the entries */
    int host_global;
    long host_array[16];
    char host_region_id;
};

static inline bool real_image_open(const char *path, struct real_image *ri)
{
    static const char prefix[] = ".omp_offloading.entry.";
    FILE *f = fopen(path, "rb");
    const char *p, *end;
    long n;

    memset(ri, 0, sizeof(*ri));
    ri->kernel = ri->global = ri->array = -1;
    if (f == NULL) {
        return false;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return false;
    }
    ri->bytes = aligned_alloc(8, ((size_t)n + 7) & ~(size_t)7);
    if (ri->bytes == NULL || fread(ri->bytes, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(ri->bytes);
        ri->bytes = NULL;
        return false;
    }
    fclose(f);
    ri->size = (size_t)n;
    p = (const char *)ri->bytes;
    end = p + ri->size;
    while ((p = memmem(p, (size_t)(end - p), prefix, sizeof(prefix) - 1)) != NULL) {
        const char *name = p + sizeof(prefix) - 1;
        size_t len = strnlen(name, (size_t)(end - name));
        size_t i = ri->count;
        bool dup = false;

        p = name;
        if (len == 0 || len >= sizeof(ri->names[0]) || i >= REAL_IMAGE_MAX_ENTRIES) {
            continue;
        }
        for (size_t k = 0; k < i; k++) {
            dup |= strncmp(ri->names[k], name, len) == 0 && ri->names[k][len] == '\0';
        }
        if (dup) {
            continue;
        }
        memcpy(ri->names[i], name, len);
        ri->names[i][len] = '\0';
        ri->entries[i].name = ri->names[i];
        if (strcmp(ri->names[i], "tether_test_global") == 0) {
            ri->entries[i].addr = &ri->host_global;
            ri->entries[i].size = sizeof(ri->host_global);
            ri->global = (int)i;
        } else if (strcmp(ri->names[i], "tether_test_array") == 0) {
            ri->entries[i].addr = ri->host_array;
            ri->entries[i].size = sizeof(ri->host_array);
            ri->array = (int)i;
        } else {
            ri->entries[i].addr = &ri->host_region_id;
            ri->entries[i].size = 0;
            ri->kernel = (int)i;
        }
        ri->count++;
    }
    ri->dimg.ImageStart = ri->bytes;
    ri->dimg.ImageEnd = ri->bytes + ri->size;
    ri->dimg.EntriesBegin = ri->entries;
    ri->dimg.EntriesEnd = ri->entries + ri->count;
    return ri->kernel >= 0 && ri->global >= 0 && ri->array >= 0;
}

static inline void real_image_close(struct real_image *ri)
{
    free(ri->bytes);
    ri->bytes = NULL;
}

#endif /* TETHER_TEST_REAL_IMAGE_H */
