/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* test/common/capture.h - capture what a call prints on stdout/stderr (header-only, tests). */
#ifndef TETHER_TEST_CAPTURE_H
#define TETHER_TEST_CAPTURE_H

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct capture {
    int fd;    /* the stream's fd (1 or 2) */
    int saved; /* its original target */
    int mem;   /* memfd collecting the output */
};

static inline void capture_begin(struct capture *c, int fd)
{
    fflush(fd == 1 ? stdout : stderr);
    c->fd = fd;
    c->saved = dup(fd);
    c->mem = memfd_create("tether-capture", 0);
    dup2(c->mem, fd);
}

/* Stop capturing; copy at most len-1 bytes into buf (NUL-terminated). */
static inline void capture_end(struct capture *c, char *buf, size_t len)
{
    ssize_t n;

    fflush(c->fd == 1 ? stdout : stderr);
    dup2(c->saved, c->fd);
    close(c->saved);
    n = pread(c->mem, buf, len - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    close(c->mem);
}

#endif /* TETHER_TEST_CAPTURE_H */
