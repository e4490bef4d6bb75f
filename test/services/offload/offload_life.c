/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * offload_life.c - the RPC server's life cycle under what programs do: fork(), exit() inside a
 * user handler, a target region started from a handler, exit() while other threads are inside
 * target regions, and messages over the 64 MiB one call carries.  run_life.sh runs each case
 * and checks its output and exit status.
 *
 *   offload_life fork          parent and child (and the child's child) offload after a fork
 *   offload_life fork-region   fork while another thread is inside a target region
 *   offload_life fork-call     fork while another thread's call waits in a user handler
 *   offload_life fork-handler  a user handler forks (the child execs /bin/true)
 *   offload_life handler-exit  exit(3) inside a user handler
 *   offload_life handler-launch  a user handler starts a target region (refused)
 *   offload_life exit-busy     exit(0) while 4 threads are inside regions that still print
 *   offload_life exit-nowait   exit(0) while 2 `nowait` regions still print
 *   offload_life big           printf/fwrite/puts/fputs over 64 MiB fail as libc's do
 *
 * Child processes end with _exit after fflush: libomp 16 hangs in exit() in a fork child of a
 * program that used OpenMP, with or without offload.  The host's own flags are shared with target
 * regions through is_device_ptr: the x86_64 "device" is this process.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tether/rpc.h"
#include "tether/rpc_opcodes.h"

#define OP_ECHO 0x8300u   /* answers its 4 bytes + 1 */
#define OP_BLOCK 0x8301u  /* sets flags[0], waits for flags[1] */
#define OP_EXIT 0x8302u   /* exit(status) */
#define OP_LAUNCH 0x8303u /* runs a target region */
#define OP_FORK 0x8304u   /* forks; the child execs /bin/true; answers its exit status */

static atomic_int flags[4];

static tether_status_t echo_handler(void *user, const struct tether_rpc_request *req,
                                    struct tether_rpc_reply *reply)
{
    (void)user;
    int32_t v;
    if (req->size != sizeof v)
        return TETHER_ERR_INVALID;
    memcpy(&v, req->data, sizeof v);
    v++;
    return tether_rpc_reply_append(reply, &v, sizeof v);
}

static tether_status_t block_handler(void *user, const struct tether_rpc_request *req,
                                     struct tether_rpc_reply *reply)
{
    (void)user;
    (void)req;
    (void)reply;
    atomic_store(&flags[0], 1);
    while (atomic_load(&flags[1]) == 0)
        ;
    return TETHER_OK;
}

static tether_status_t exit_handler(void *user, const struct tether_rpc_request *req,
                                    struct tether_rpc_reply *reply)
{
    (void)user;
    (void)reply;
    int32_t status;
    if (req->size != sizeof status)
        return TETHER_ERR_INVALID;
    memcpy(&status, req->data, sizeof status);
    printf("handler exits with %d\n", status);
    exit(status);
}

static tether_status_t launch_handler(void *user, const struct tether_rpc_request *req,
                                      struct tether_rpc_reply *reply)
{
    (void)user;
    (void)req;
    int32_t v = 0;
#pragma omp target map(tofrom : v)
    v = 41;
    return tether_rpc_reply_append(reply, &v, sizeof v);
}

static tether_status_t fork_handler(void *user, const struct tether_rpc_request *req,
                                    struct tether_rpc_reply *reply)
{
    (void)user;
    (void)req;
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    int st = -1;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return TETHER_ERR_INTERNAL;
    int32_t v = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return tether_rpc_reply_append(reply, &v, sizeof v);
}

static void register_all(void)
{
    static const struct {
        uint32_t op;
        tether_rpc_handler_t fn;
    } h[] = {{OP_ECHO, echo_handler},
             {OP_BLOCK, block_handler},
             {OP_EXIT, exit_handler},
             {OP_LAUNCH, launch_handler},
             {OP_FORK, fork_handler}};
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
        tether_status_t st = tether_rpc_register_user(h[i].op, h[i].fn, NULL);
        if (st != TETHER_OK) {
            fprintf(stderr, "offload_life: register 0x%x: %s\n", h[i].op, tether_status_str(st));
            exit(1);
        }
    }
}

/* One region: prints `who`, makes a user call, and returns the echo (v + 1 when served). */
static int region(const char *who, int v)
{
    int32_t out = -1;
    size_t n = strlen(who) + 1;
#pragma omp target map(to : who [0:n]) map(tofrom : out) firstprivate(v)
    {
        int32_t in = v, ans = 0;
        printf("%s region\n", who);
        if (tether_rpc_call(OP_ECHO, &in, sizeof in, &ans, sizeof ans) == (int64_t)sizeof ans)
            out = ans;
    }
    return out;
}

/* Ends a child: its output flushed, status 0 when `ok`. */
static void child_end(int ok)
{
    fflush(stdout);
    fflush(stderr);
    _exit(ok ? 0 : 1);
}

static int wait_child(pid_t pid, const char *who)
{
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) {
        perror("offload_life: fork/waitpid");
        return 1;
    }
    printf("%s exited %d\n", who, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

/* The child's part after any fork: an empty region (it calls nothing), then one with calls. */
static int child_offload(const char *who)
{
    int32_t v = 0;
#pragma omp target map(tofrom : v)
    v = 5;
    return v == 5 && region(who, 100) == 101;
}

static int case_fork(void)
{
    int bad = region("parent before fork", 1) != 2;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int ok = child_offload("child");
        fflush(stdout);
        pid_t grand = fork();
        if (grand == 0)
            child_end(child_offload("grandchild"));
        ok &= wait_child(grand, "grandchild") == 0;
        ok &= region("child after its child", 7) == 8;
        child_end(ok);
    }
    bad |= region("parent after fork", 2) != 3;
    bad |= wait_child(pid, "child");
    bad |= region("parent at the end", 3) != 4;
    return bad;
}

/* Another thread: a region that prints, says it is inside (flags[0]), waits for flags[1] and
 * prints again. */
static void *inside_region(void *arg)
{
    (void)arg;
    atomic_int *f = flags;
#pragma omp target is_device_ptr(f)
    {
        printf("worker region before the fork\n");
        atomic_store(&f[0], 1);
        while (atomic_load(&f[1]) == 0)
            ;
        printf("worker region after the fork\n");
    }
    return NULL;
}

/* Another thread: a region whose user call waits in its handler (flags[0], flags[1]). */
static void *inside_call(void *arg)
{
    (void)arg;
#pragma omp target
    {
        printf("worker call before the fork\n");
        tether_rpc_call(OP_BLOCK, NULL, 0, NULL, 0);
        printf("worker call after the fork\n");
    }
    return NULL;
}

static int case_fork_busy(void *(*worker)(void *))
{
    int bad = region("parent before fork", 1) != 2;
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 1;
    while (atomic_load(&flags[0]) == 0)
        ;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        child_end(child_offload("child"));
    /* The child ran to its end while the other thread was still inside. */
    bad |= wait_child(pid, "child");
    atomic_store(&flags[1], 1);
    pthread_join(t, NULL);
    bad |= region("parent after fork", 2) != 3;
    return bad;
}

static int case_fork_handler(void)
{
    int32_t status = -1;
#pragma omp target map(from : status)
    {
        int32_t st = -1;
        status = -2;
        if (tether_rpc_call(OP_FORK, NULL, 0, &st, sizeof st) == (int64_t)sizeof st)
            status = st;
    }
    printf("handler's child exited %d\n", status);
    return status != 0 || region("parent after fork", 2) != 3;
}

static int case_handler_exit(void)
{
#pragma omp target
    {
        int32_t status = 3;
        printf("device line before exit\n");
        tether_rpc_call(OP_EXIT, &status, sizeof status, NULL, 0);
    }
    printf("not reached\n");
    return 1;
}

static int case_handler_launch(void)
{
    int32_t out = -1;
#pragma omp target map(tofrom : out)
    {
        int32_t in = 0;
        if (tether_rpc_call(OP_LAUNCH, &in, sizeof in, &out, sizeof out) < 0)
            out = -2;
    }
    printf("handler's region answered %d\n", out);
    return 1;
}

#define BUSY_THREADS 4
#define BUSY_LINES 2000

/* One region that says it is inside (flags[0] counts), waits until main is about to exit
 * (flags[1]) and prints BUSY_LINES lines; then the thread waits for the process's end. */
static void *busy_region(void *arg)
{
    int id = (int)(intptr_t)arg;
    atomic_int *f = flags;
#pragma omp target is_device_ptr(f) firstprivate(id)
    {
        printf("w%d inside\n", id);
        atomic_fetch_add(&f[0], 1);
        while (atomic_load(&f[1]) == 0)
            ;
        for (int k = 0; k < BUSY_LINES; k++)
            printf("w%d line %d\n", id, k);
    }
    for (;;)
        pause();
    return NULL;
}

static int case_exit_busy(void)
{
    pthread_t t[BUSY_THREADS];
    for (int i = 0; i < BUSY_THREADS; i++)
        if (pthread_create(&t[i], NULL, busy_region, (void *)(intptr_t)i) != 0)
            return 1;
    while (atomic_load(&flags[0]) < BUSY_THREADS)
        ;
    printf("main exits\n");
    atomic_store(&flags[1], 1);
    exit(0);
}

/* Two `nowait` regions (run by libomp's hidden helper threads) inside their kernels when main
 * exits: libomp's destructor waits for those threads, so the plugin must let their regions end. */
static int case_exit_nowait(void)
{
    atomic_int *f = flags;
    for (int i = 0; i < 2; i++) {
#pragma omp target nowait is_device_ptr(f) firstprivate(i)
        {
            printf("n%d inside\n", i);
            atomic_fetch_add(&f[0], 1);
            while (atomic_load(&f[1]) == 0)
                ;
            for (int k = 0; k < BUSY_LINES; k++)
                printf("n%d line %d\n", i, k);
        }
    }
    while (atomic_load(&flags[0]) < 2)
        ;
    printf("main exits\n");
    atomic_store(&flags[1], 1);
    exit(0);
}

static int case_big(void)
{
    /* fwrite's message is its header and the bytes: `fit` bytes fit exactly, one more does not
     * (the largest that fits is not sent here: 64 MiB through the ports takes long on a busy
     * machine; 1 MiB is). */
    size_t fit = TETHER_RPC_MSG_MAX - sizeof(struct tether_rpc_write_hdr);
    char *s = malloc(fit + 2);
    if (s == NULL)
        return 1;
    memset(s, 'x', fit + 1);
    s[fit + 1] = '\0';
    int r[5] = {0, 0, 0, 0, 0};
    long w[2] = {0, 0};
    size_t n = fit + 2;
    FILE *err = stderr;
#pragma omp target map(to : s [0:n]) map(tofrom : r, w) firstprivate(fit, err)
    {
        r[0] = printf("%s\n", s);
        r[1] = puts(s);
        r[2] = fputs(s, err);
        w[0] = (long)fwrite(s, 1, fit + 1, stdout);
        r[3] = printf("after the big ones\n");
        w[1] = (long)fwrite(s, 1, 1u << 20, stdout);
        r[4] = puts("");
    }
    fflush(stdout);
    fprintf(stderr, "printf %d puts %d fputs %d fwrite %ld small printf %d fwrite %ld puts %d\n",
            r[0], r[1], r[2], w[0], r[3], w[1], r[4]);
    free(s);
    return r[0] >= 0 || r[1] != EOF || r[2] != EOF || w[0] != 0 || r[3] != 19 || w[1] != 1l << 20 ||
           r[4] < 0;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    register_all();
    if (strcmp(c, "fork") == 0)
        return case_fork();
    if (strcmp(c, "fork-region") == 0)
        return case_fork_busy(inside_region);
    if (strcmp(c, "fork-call") == 0)
        return case_fork_busy(inside_call);
    if (strcmp(c, "fork-handler") == 0)
        return case_fork_handler();
    if (strcmp(c, "handler-exit") == 0)
        return case_handler_exit();
    if (strcmp(c, "handler-launch") == 0)
        return case_handler_launch();
    if (strcmp(c, "exit-busy") == 0)
        return case_exit_busy();
    if (strcmp(c, "exit-nowait") == 0)
        return case_exit_nowait();
    if (strcmp(c, "big") == 0)
        return case_big();
    fprintf(stderr, "usage: offload_life fork|fork-region|fork-call|fork-handler|handler-exit|"
                    "handler-launch|exit-busy|exit-nowait|big\n");
    return 2;
}
