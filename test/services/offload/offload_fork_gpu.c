/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * offload_fork_gpu.c - fork() after a GPU image with an RPC client ran (nvptx64, built with
 * libtether-device.a and tether/device_libc.h, run on the simulated GPU of
 * test/cuda/fake_cuda_sim.c):
 * a target region in the child must fail with a message naming fork(), never hang, and the
 * parent goes on offloading.  run_life.sh gpu-fork checks the output.  The simulated GPU runs no
 * device code; the region's printf only makes the image an RPC client.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int region(int v)
{
    int out = -1;
#pragma omp target map(tofrom : out) firstprivate(v)
    {
        out = v + 1;
        printf("device line %d\n", v);
    }
    return out;
}

int main(void)
{
    region(1);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        region(2); /* refused: libomptarget ends the child */
        printf("child offloaded on a GPU after fork\n");
        fflush(stdout);
        _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) {
        perror("offload_fork_gpu: fork/waitpid");
        return 1;
    }
    region(3);
    printf("child ended with %s %d\n", WIFEXITED(st) ? "status" : "signal",
           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return 0;
}
