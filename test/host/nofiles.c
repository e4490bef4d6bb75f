/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* test/host/nofiles.c - the host plugin loads device images from anonymous memory: after a
 * region ran, the image is mapped from a memfd, and nothing is mapped from a temporary file like
 * the /tmp/tmpfile_XXXXXX that LLVM 16's host plugin writes (and never removes). */
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    char line[1024];
    int initial = 1, memfd_maps = 0, tmp_maps = 0;
    FILE *maps;

#pragma omp target map(from : initial)
    initial = omp_is_initial_device();
    maps = fopen("/proc/self/maps", "r");
    if (maps == NULL) {
        perror("/proc/self/maps");
        return 1;
    }
    while (fgets(line, sizeof(line), maps) != NULL) {
        memfd_maps += strstr(line, "/memfd:tether-x86_64-image") != NULL;
        tmp_maps += strstr(line, "/tmpfile_") != NULL;
    }
    fclose(maps);
    printf("offloaded %d, memfd mappings %d, temporary-file mappings %d\n", !initial, memfd_maps,
           tmp_maps);
    if (initial || memfd_maps == 0 || tmp_maps != 0) {
        fprintf(stderr, "host_nofiles: FAIL\n");
        return 1;
    }
    printf("host_nofiles: PASS\n");
    return 0;
}
