/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* test/host/fdreuse.c - every device gets its own copy of the image, and so its own globals,
 * even when the program closes every file descriptor between loads (as daemons and some
 * launchers do) and so hands the number the first image was loaded through to the next one.
 *
 * Device 0 loads the image and sets its copy of `value`; then every fd from 3 up is closed and
 * the lowest numbers are filled again with /dev/null, up to just below the number device 0's
 * image was loaded through, so the next image the plugin loads gets that same number (if it
 * still used it), then /dev/null gets it once more for device 2.  Devices 1 and 2 must see the
 * initial value, and each device must keep what it was given. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tcheck.h"

#pragma omp declare target
int value = 7;
#pragma omp end declare target

/* Set the device's copy of `value` to v; returns what it held before. */
static int swap_value(int dev, int v)
{
    int old = -1;

#pragma omp target device(dev) map(from : old)
    {
        old = value;
        value = v;
    }
    return old;
}

static int read_value(int dev)
{
    int v = -1;

#pragma omp target device(dev) map(from : v)
    v = value;
    return v;
}

/* The highest open fd (the image's fd, if the plugin still keeps one, is among them). */
static int highest_fd(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int top = -1, self;

    if (d == NULL) {
        perror("/proc/self/fd");
        exit(1);
    }
    self = dirfd(d);
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);

        if (e->d_name[0] != '.' && fd != self && fd > top) {
            top = fd;
        }
    }
    closedir(d);
    return top;
}

/* Close every fd from 3 to top, then open /dev/null on 3 .. upto - 1. */
static void close_and_refill(int top, int upto)
{
    for (int fd = 3; fd <= top; fd++) {
        close(fd);
    }
    for (int fd = 3; fd < upto; fd++) {
        if (open("/dev/null", O_RDONLY) != fd) {
            fprintf(stderr, "fdreuse: could not put /dev/null on fd %d\n", fd);
            exit(1);
        }
    }
}

/* The fd through which the plugin keeps an image open, -1 if it keeps none. */
static int image_link_fd(void)
{
    char path[64], link[256];
    int found = -1;

    for (int fd = 3; fd <= highest_fd(); fd++) {
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        n = readlink(path, link, sizeof(link) - 1);
        if (n > 0) {
            link[n] = '\0';
            if (strstr(link, "memfd:tether-x86_64-image") != NULL) {
                found = fd;
            }
        }
    }
    return found;
}

/* The number a memfd created now gets (closed again at once). */
static int next_fd(void)
{
    int fd = memfd_create("fdreuse-probe", MFD_CLOEXEC);

    if (fd < 0) {
        perror("memfd_create");
        exit(1);
    }
    close(fd);
    return fd;
}

int main(void)
{
    int before, image_fd, kept, top;

    if (omp_get_num_devices() < 3) {
        fprintf(stderr, "fdreuse: needs 3 devices, have %d\n", omp_get_num_devices());
        return 1;
    }
    /* The number device 0's image is loaded through: the lowest free one now, or the fd the
     * plugin keeps open for it. */
    image_fd = next_fd();
    CHECK(swap_value(0, 100) == 7);
    kept = image_link_fd();
    if (kept >= 0) {
        image_fd = kept;
    }
    top = highest_fd();
    if (top < image_fd) {
        top = image_fd;
    }
    close_and_refill(top, image_fd);
    CHECK(next_fd() == image_fd);
    CHECK(swap_value(1, 200) == 7); /* its own copy, loaded through the same number */

    /* Again, with a file of the program's own on that number while device 2 loads. */
    close_and_refill(highest_fd(), image_fd);
    if (open("/dev/null", O_RDONLY) != image_fd) {
        fprintf(stderr, "fdreuse: could not put /dev/null on fd %d\n", image_fd);
        return 1;
    }
    CHECK(swap_value(2, 300) == 7);

    CHECK(read_value(0) == 100);
    CHECK(read_value(1) == 200);
    CHECK(read_value(2) == 300);
    before = swap_value(0, 101);
    CHECK(before == 100);
    CHECK(read_value(1) == 200);
    CHECK(read_value(0) == 101);
    printf("host_fdreuse: 3 devices, each with its own image after fd %d was reused\n", image_fd);
    return tcheck_exit("host_fdreuse");
}
