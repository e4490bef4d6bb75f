/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/test_rpc_host_exit.c - test_rpc_host's exit, abort and drain: the device ends the
 * process (in a child), and a server without a thread served by kernel_finished and handle().
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "svc_rig.h"

#include "test_rpc_host.h"

/* ---- exit and abort (in a child process) ------------------------------------------------ */

static void *exit_thread(void *arg)
{
    int status = *(int *)arg;
    dprintf_("line before %s\n", status < 0 ? "abort" : "exit");
    if (status < 0)
        tether_device_abort();
    tether_device_exit(status);
}

void test_exit(bool is_abort)
{
    fflush(NULL);
    int fds[2];
    if (pipe(fds) != 0)
        exit(2);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        FILE *out = fdopen(fds[1], "w");
        struct tether_rpc_server_config cfg = {
            .port_count = 8,
            .lane_count = 32,
            .host_client = true,
            .shared_alloc = svc_shared_alloc,
            .shared_free = svc_shared_free,
            .out = out,
            .err = out,
        };
        tether_rpc_server_t *srv;
        if (tether_rpc_server_create(&cfg, &srv, NULL) != TETHER_OK)
            _exit(99);
        if (svc_attach_client(srv) != TETHER_OK)
            _exit(99);
        tether_rpc_server_start(srv, NULL, NULL);
        tether_rpc_server_kernel_started(srv);
        int status = is_abort ? -1 : 42;
        pthread_t t;
        pthread_create(&t, NULL, exit_thread, &status);
        pthread_join(t, NULL); /* never returns: the server ends the process */
        _exit(98);
    }
    close(fds[1]);
    char text[4096];
    size_t n = 0;
    ssize_t k;
    while ((k = read(fds[0], text + n, sizeof text - 1 - n)) > 0)
        n += (size_t)k;
    text[n] = '\0';
    close(fds[0]);
    int wstatus;
    waitpid(pid, &wstatus, 0);
    if (is_abort) {
        CHECKF(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGABRT, "abort: wait status 0x%x",
               wstatus);
        CHECKF(strstr(text, "line before abort\n") != NULL &&
                   strstr(text, "the device called abort()") != NULL,
               "abort output: \"%s\"", text);
    } else {
        CHECKF(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 42, "exit: wait status 0x%x", wstatus);
        CHECKF(strcmp(text, "line before exit\n") == 0, "exit output: \"%s\"", text);
    }
}

/* ---- no thread: kernel_finished serves, handle() polls ---------------------------------- */

static void *drain_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 50; i++)
        dprintf_("drain %d\n", i);
    return NULL;
}

void test_drain(void)
{
    struct rig rig;
    rig_up(&rig, true, 8, 32, false);
    pthread_t t;
    pthread_create(&t, NULL, drain_thread, NULL);
    /* Nobody serves but us: poll until the client thread is done. */
    void *ret;
    for (;;) {
        tether_rpc_server_handle(rig.srv, NULL);
        if (pthread_tryjoin_np(t, &ret) == 0)
            break;
    }
    tether_rpc_server_kernel_finished(rig.srv);
    size_t len;
    char *out = slurp(rig.out, &len);
    int lines = 0;
    for (char *p = out; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    CHECKF(lines == 50 && strncmp(out, "drain 0\ndrain 1\n", 16) == 0, "%d lines: \"%.40s\"", lines,
           out);
    free(out);
    tether_rpc_server_kernel_started(rig.srv);
    rig_down(&rig);
}
