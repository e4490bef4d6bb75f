/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c12: error paths: an image no plugin accepts is ignored; an image the plugin accepts but
 * cannot load fails the program with a message naming plugin, device, call and cause; an
 * impossible allocation and unlocking an unknown pointer report errors and change nothing. */
#include "conformance.h"

#include <spawn.h>
#include <stdint.h>
#include <sys/wait.h>

/* libomptarget 16's registration structs (include/omptarget.h). */
struct entry {
    void *addr;
    char *name;
    size_t size;
    int32_t flags;
    int32_t reserved;
};
struct device_image {
    void *start, *end;
    struct entry *entries_begin, *entries_end;
};
struct bin_desc {
    int32_t num_images;
    struct device_image *images;
    struct entry *entries_begin, *entries_end;
};
void __tgt_register_lib(struct bin_desc *desc);
void __tgt_unregister_lib(struct bin_desc *desc);

static char fake_region_id;
static char fake_name[] = "__omp_offloading_fake_kernel_l1";
static struct entry fake_entries[1] = {{&fake_region_id, fake_name, 0, 0, 0}};
static _Alignas(8) unsigned char garbage[256] = "certainly not an offload image";
/* An ELF64 header for this backend's machine, with nothing loadable behind it. */
static _Alignas(8) unsigned char broken_elf[256] = {0x7f, 'E', 'L', 'F', 2, 1, 1};

static void register_image(unsigned char *bytes, size_t size, struct bin_desc *desc,
                           struct device_image *img)
{
    img->start = bytes;
    img->end = bytes + size;
    img->entries_begin = fake_entries;
    img->entries_end = fake_entries + 1;
    desc->num_images = 1;
    desc->images = img;
    desc->entries_begin = fake_entries;
    desc->entries_end = fake_entries + 1;
    __tgt_register_lib(desc);
}

/* Child mode: register an ELF our plugin accepts (right e_machine) but cannot load, then run a
 * target region: libomptarget loads every image of the device and must fail. */
static int child_broken_image(void)
{
    struct bin_desc desc;
    struct device_image img;
    int x = 0;
    uint16_t machine = strcmp(TETHER_EXPECT_PLUGIN, "cuda") == 0 ? 190 : 62;

    memcpy(broken_elf + 18, &machine, 2);
    register_image(broken_elf, sizeof(broken_elf), &desc, &img);
#pragma omp target map(from : x)
    x = 1;
    printf("region ran: %d\n", x);
    return 0;
}

/* Run this program in child mode; return its exit status, with its stderr in out. */
static int run_child(const char *self, const char *mode, char *out, size_t len)
{
    posix_spawn_file_actions_t fa;
    char *argv[] = {(char *)self, (char *)mode, NULL};
    extern char **environ;
    int fds[2], status = -1;
    size_t used = 0;
    ssize_t n;
    pid_t pid;

    if (pipe(fds) != 0) {
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    if (posix_spawn(&pid, self, &fa, NULL, argv, environ) != 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    close(fds[1]);
    while (used + 1 < len && (n = read(fds[0], out + used, len - 1 - used)) > 0) {
        used += (size_t)n;
    }
    out[used] = '\0';
    close(fds[0]);
    waitpid(pid, &status, 0);
    posix_spawn_file_actions_destroy(&fa);
    return status;
}

int main(int argc, char **argv)
{
    struct bin_desc desc;
    struct device_image img;
    struct conf_capture cap;
    char msg[8192], expect[128];
    int ndev, status, x = 0;

    if (argc > 1 && strcmp(argv[1], "child-broken-image") == 0) {
        return child_broken_image();
    }
    conf_require_tether(0);
    ndev = omp_get_num_devices();

    /* An image no plugin accepts: ignored, regions of accepted images keep working. */
    register_image(garbage, sizeof(garbage), &desc, &img);
    CHECK(omp_get_num_devices() == ndev);
#pragma omp target map(from : x)
    x = 5;
    CHECK(x == 5);
    __tgt_unregister_lib(&desc);

    /* An accepted image that cannot load: offloading is mandatory, the run fails, and tether
     * says which plugin, device, call and why. */
    status = run_child("/proc/self/exe", "child-broken-image", msg, sizeof(msg));
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
    snprintf(expect, sizeof(expect), "tether (%s): device 0: load_binary(image ",
             TETHER_EXPECT_PLUGIN);
    CHECK(strstr(msg, expect) != NULL);
    CHECK(strstr(msg, ") failed: ") != NULL);
    if (strstr(msg, expect) == NULL) {
        fprintf(stderr, "child said:\n%s\n", msg);
    }

    /* An impossible allocation: NULL and a message; the device stays usable. */
    conf_capture_begin(&cap);
    {
        void *p = omp_target_alloc((size_t)1 << 62, 0);

        CHECK(p == NULL);
    }
    conf_capture_end(&cap, msg, sizeof(msg));
    CHECK(strstr(msg, "data_alloc(") != NULL && strstr(msg, "failed") != NULL);

    /* Unlocking a pointer that was never locked. */
    conf_capture_begin(&cap);
    llvm_omp_target_unlock_mem(&x, 0);
    conf_capture_end(&cap, msg, sizeof(msg));
    CHECK(strstr(msg, "data_unlock(") != NULL && strstr(msg, "not found") != NULL);

    x = 0;
#pragma omp target map(from : x)
    x = 6;
    CHECK(x == 6);
    return conf_exit("c12_errors");
}
