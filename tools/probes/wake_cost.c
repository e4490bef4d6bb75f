/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * tools/probes/wake_cost.c - the CPU time one sleeping thread pays per wake-up, by the way it
 * sleeps: a futex wait with a timeout (the RPC server thread's), a periodic timerfd (read, or
 * poll with an eventfd beside it), a periodic timer signal interrupting a futex wait, and
 * clock_nanosleep to an absolute deadline.  Each runs for one second.
 *
 *   cc -O2 -o wake_cost tools/probes/wake_cost.c && ./wake_cost [slice_us, default 100]
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

struct run {
    double cpu0, wall0;
    long wakes;
};

static void run_begin(struct run *r)
{
    r->cpu0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    r->wall0 = clock_s(CLOCK_MONOTONIC);
    r->wakes = 0;
}

static int run_going(struct run *r)
{
    return clock_s(CLOCK_MONOTONIC) - r->wall0 < 1.0;
}

static void run_report(const struct run *r, const char *what)
{
    double cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - r->cpu0;
    double wall = clock_s(CLOCK_MONOTONIC) - r->wall0;
    printf("%-28s %6.0f wake-ups/s  %5.2f%% of a core  %5.2f us of CPU per wake-up\n", what,
           (double)r->wakes / wall, 100.0 * cpu / wall, 1e6 * cpu / (double)r->wakes);
}

static void on_signal(int sig)
{
    (void)sig;
}

int main(int argc, char **argv)
{
    long us = argc > 1 ? atol(argv[1]) : 100;
    if (us <= 0 || us >= 1000000) {
        fprintf(stderr, "usage: %s [slice_us, 1..999999]\n", argv[0]);
        return 2;
    }
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); /* as the server thread */
    struct itimerspec every = {{0, us * 1000}, {0, us * 1000}};
    uint32_t word = 0;
    uint64_t ticks;
    struct run r;

    run_begin(&r);
    for (; run_going(&r); r.wakes++) {
        struct timespec ts = {0, us * 1000};
        syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
    }
    run_report(&r, "futex wait, timeout");

    int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
    timerfd_settime(tfd, 0, &every, NULL);
    run_begin(&r);
    for (; run_going(&r); r.wakes++)
        if (read(tfd, &ticks, sizeof ticks) < 0)
            break;
    run_report(&r, "timerfd, read");
    int efd = eventfd(0, EFD_NONBLOCK);
    run_begin(&r);
    for (; run_going(&r); r.wakes++) {
        struct pollfd fds[2] = {{tfd, POLLIN, 0}, {efd, POLLIN, 0}};
        poll(fds, 2, -1);
        if (read(tfd, &ticks, sizeof ticks) < 0)
            break;
    }
    run_report(&r, "timerfd + eventfd, poll");
    close(efd);
    close(tfd);

    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGRTMIN, &sa, NULL);
    struct sigevent sev = {0};
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGRTMIN;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    timer_t timer;
    timer_create(CLOCK_MONOTONIC, &sev, &timer);
    timer_settime(timer, 0, &every, NULL);
    run_begin(&r);
    for (; run_going(&r); r.wakes++)
        syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    run_report(&r, "timer signal, futex wait");
    timer_delete(timer);

    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    run_begin(&r);
    for (; run_going(&r); r.wakes++) {
        next.tv_nsec += us * 1000;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    run_report(&r, "clock_nanosleep, absolute");
    return 0;
}
