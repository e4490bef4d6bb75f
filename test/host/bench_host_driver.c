/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/host/bench_host_driver.c - `make bench` entry for the x86_64 host plugin.
 *
 *   bench_host_driver <bench_host program> <tether plugin dir> <LLVM lib dir>
 *
 * Runs the same clang-16 program twice in this run: with tether's plugin first on
 * LD_LIBRARY_PATH, then with LLVM 16's own x86_64 nextgen plugin (the baseline), and prints each
 * figure as `name: value unit (ratio x vs baseline)`, ratio = tether / LLVM (below 1: faster).
 * LLVM's nextgen host plugin leaves a /tmp/tmpfile_* per loaded image; the driver removes the
 * ones that appeared during its run.
 */
#include <dirent.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_KEYS 16
#define MAX_TMP 4096

struct result {
    char key[MAX_KEYS][64];
    double value[MAX_KEYS];
    int n;
};

extern char **environ;

static int run(const char *prog, const char *libpath, struct result *res)
{
    char env_ld[4096], *envp[64], line[256];
    char *argv[] = {(char *)prog, NULL};
    posix_spawn_file_actions_t fa;
    int fds[2], status = -1, ne = 0;
    FILE *in;
    pid_t pid;

    snprintf(env_ld, sizeof(env_ld), "LD_LIBRARY_PATH=%s", libpath);
    envp[ne++] = env_ld;
    for (char **e = environ; *e != NULL && ne < 62; e++) {
        if (strncmp(*e, "LD_LIBRARY_PATH=", 16) != 0 && strncmp(*e, "LIBOMPTARGET_", 13) != 0) {
            envp[ne++] = *e;
        }
    }
    envp[ne] = NULL;
    if (pipe(fds) != 0) {
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    if (posix_spawn(&pid, prog, &fa, NULL, argv, envp) != 0) {
        return -1;
    }
    close(fds[1]);
    in = fdopen(fds[0], "r");
    res->n = 0;
    while (in != NULL && fgets(line, sizeof(line), in) != NULL && res->n < MAX_KEYS) {
        if (sscanf(line, "%63s %lf", res->key[res->n], &res->value[res->n]) == 2) {
            res->n++;
        }
    }
    if (in != NULL) {
        fclose(in);
    }
    waitpid(pid, &status, 0);
    posix_spawn_file_actions_destroy(&fa);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && res->n > 0 ? 0 : -1;
}

/* Names of /tmp/tmpfile_* now present. */
static int list_tmpfiles(char names[][64], int max)
{
    DIR *d = opendir("/tmp");
    struct dirent *e;
    int n = 0;

    while (d != NULL && (e = readdir(d)) != NULL && n < max) {
        if (strncmp(e->d_name, "tmpfile_", 8) == 0 && strlen(e->d_name) < 64) {
            strcpy(names[n++], e->d_name);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

int main(int argc, char **argv)
{
    static char before[MAX_TMP][64], after[MAX_TMP][64];
    struct result ours, llvm;
    int nb, na, rc_llvm;

    if (argc != 4) {
        fprintf(stderr, "usage: %s <bench_host> <tether plugin dir> <llvm lib dir>\n", argv[0]);
        return 2;
    }
    if (run(argv[1], argv[2], &ours) != 0) {
        fprintf(stderr, "bench_host with tether's plugin failed\n");
        return 1;
    }
    nb = list_tmpfiles(before, MAX_TMP);
    rc_llvm = run(argv[1], argv[3], &llvm);
    na = list_tmpfiles(after, MAX_TMP);
    for (int i = 0; i < na; i++) {
        int old = 0;

        for (int j = 0; j < nb && !old; j++) {
            old = strcmp(after[i], before[j]) == 0;
        }
        if (!old) {
            char path[96];

            snprintf(path, sizeof(path), "/tmp/%.63s", after[i]);
            unlink(path); /* left behind by LLVM's plugin */
        }
    }
    if (rc_llvm != 0) {
        fprintf(stderr, "bench_host with LLVM's plugin failed (is libomp-16-dev installed?)\n");
        return 1;
    }
    for (int i = 0; i < ours.n; i++) {
        for (int j = 0; j < llvm.n; j++) {
            if (strcmp(ours.key[i], llvm.key[j]) == 0) {
                size_t len = strlen(ours.key[i]);
                char name[64];

                /* "region_empty_us" -> name "host_region_empty", unit "us" */
                snprintf(name, sizeof(name), "host_%.*s", (int)(len > 3 ? len - 3 : len),
                         ours.key[i]);
                printf("%s: %.3f us (%.2fx vs LLVM 16 x86_64 nextgen plugin %.3f us)\n", name,
                       ours.value[i], ours.value[i] / llvm.value[j], llvm.value[j]);
            }
        }
    }
    return 0;
}
