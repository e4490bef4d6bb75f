/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * examples/mpi_halo.c - a 1-D heat stencil split over MPI ranks, each rank offloading its part
 * of the grid to one device with OpenMP and exchanging halo cells with its neighbours every step.
 *
 *   OMPI_CC=clang-16 mpicc -O2 -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda \
 *     -Xopenmp-target=nvptx64-nvidia-cuda -march=sm_90 -Wno-unknown-cuda-version \
 *     $(pkg-config --cflags tether) mpi_halo.c $(pkg-config --libs tether) -lm -o mpi_halo
 *   mpirun -np 4 <prefix>/bin/tether-run ./mpi_halo host
 *
 * (for the CPU as the device: -fopenmp-targets=x86_64-pc-linux-gnu, no -Xopenmp-target/-march.)
 *
 *   mpi_halo [host|device] [CELLS_PER_RANK [STEPS [PRINT_EVERY]]] [--default-device]
 *
 * Halo modes, chosen by the first argument:
 *   host    the edge cells go through the host: `target update from` before MPI_Sendrecv,
 *           `target update to` of the ghost cells after it;
 *   device  the kernel writes the edge cells into a device buffer (omp_target_alloc,
 *           is_device_ptr), omp_target_memcpy brings it to a host buffer for MPI_Sendrecv and
 *           takes the received cells to a second device buffer that the next step's kernel
 *           reads.  MPI only ever sees host memory: no GPU-aware MPI is needed.
 *
 * Device choice: rank r of the ranks on its node uses device r % omp_get_num_devices() (a node's
 * ranks found with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), so it works under any MPI);
 * --default-device uses omp_get_default_device() instead, for a launcher that gives each rank
 * its own OMP_DEFAULT_DEVICE or CUDA_VISIBLE_DEVICES.  With one visible device every rank uses
 * device 0; with none the target regions run on the host.
 *
 * Every PRINT_EVERY steps each rank prints one line from the device ("mpi_halo: rank R step S
 * ..."); linked with libtether-device.a (`pkg-config --libs tether`) that printf is served by
 * tether's RPC server on the host while the kernel runs.  At the end each rank checks its cells
 * against a serial computation on the host and prints its timings; rank 0 prints PASS or FAIL,
 * and the exit status is 0 only when every rank's answer was right.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* The stencil: new[i] = (old[i-1] + 2 old[i] + old[i+1]) / 4.  Cells outside the global grid
 * are 0 (a cold boundary). */
#pragma omp declare target
static inline double stencil(double left, double mid, double right)
{
    return 0.25 * left + 0.5 * mid + 0.25 * right;
}
#pragma omp end declare target

/* Starting value of global cell g: a saw-tooth, so that every cell differs from its neighbours. */
static double initial(long g)
{
    return (double)((g * 7919) % 1000) / 1000.0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds of CPU this process has used so far, all of its threads. */
static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* The device this rank offloads to (see the top). */
static int choose_device(int use_default, int *local_rank_p)
{
    MPI_Comm node;
    int local_rank, devices = omp_get_num_devices();

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    *local_rank_p = local_rank;
    if (devices == 0)
        return omp_get_initial_device();
    if (use_default)
        return omp_get_default_device();
    return local_rank % devices;
}

/* Check cells [first, first + n) after `steps` steps against a serial computation on the host.
 * A cell's value after s steps depends only on the cells within s of it, so only the window
 * [first - steps, first + n + steps) of the global grid is computed.  Returns the number of
 * cells that differ (more than rounding: the device may fuse multiply-adds). */
static long check_slice(const double *got, long first, long n, long total, int steps)
{
    long lo = first - steps > 0 ? first - steps : 0;
    long hi = first + n + steps < total ? first + n + steps : total;
    long w = hi - lo, bad = 0;
    double *a = calloc((size_t)w + 2, sizeof(double)); /* a[0], a[w + 1]: ghosts, always 0 */
    double *b = calloc((size_t)w + 2, sizeof(double));

    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return n;
    }
    for (long i = 1; i <= w; i++)
        a[i] = initial(lo + i - 1);
    for (int s = 0; s < steps; s++) {
        for (long i = 1; i <= w; i++)
            b[i] = stencil(a[i - 1], a[i], a[i + 1]);
        double *t = a;
        a = b;
        b = t;
    }
    for (long i = 0; i < n; i++) {
        double want = a[first - lo + 1 + i];
        if (fabs(got[i] - want) > 1e-12 * (1.0 + fabs(want))) {
            if (bad < 3)
                fprintf(stderr, "mpi_halo: cell %ld is %.17g, serial %.17g\n", first + i, got[i],
                        want);
            bad++;
        }
    }
    free(a);
    free(b);
    return bad;
}

int main(int argc, char **argv)
{
    double t_start = now();
    const char *mode = "host";
    long n = 1 << 16; /* cells per rank */
    int steps = 100, print_every = 25, use_default = 0;

    /* Whole lines: MPI forwards each rank's output separately, so a line written in pieces
     * could be cut by another rank's. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Init(&argc, &argv);
    double t_mpi = now();

    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int arg = 1;
    if (arg < argc && (strcmp(argv[arg], "host") == 0 || strcmp(argv[arg], "device") == 0))
        mode = argv[arg++];
    if (arg < argc && argv[arg][0] != '-')
        n = atol(argv[arg++]);
    if (arg < argc && argv[arg][0] != '-')
        steps = atoi(argv[arg++]);
    if (arg < argc && argv[arg][0] != '-')
        print_every = atoi(argv[arg++]);
    if (arg < argc && strcmp(argv[arg], "--default-device") == 0)
        use_default = 1, arg++;
    if (arg != argc || n < 1 || steps < 1 || print_every < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_halo [host|device] [CELLS_PER_RANK [STEPS [PRINT_EVERY]]] "
                            "[--default-device]\n");
        MPI_Finalize();
        return 2;
    }
    int device_halos = strcmp(mode, "device") == 0;

    int local_rank;
    int dev = choose_device(use_default, &local_rank);
    int host = omp_get_initial_device();
    omp_set_default_device(dev);

    /* This rank's cells are global cells [first, first + n); u[1..n] hold them, u[0] and u[n+1]
     * are the ghost cells of the neighbours' edges (0 at the ends of the grid). */
    long total = n * size, first = n * rank;
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    double *u = calloc((size_t)n + 2, sizeof(double));
    double *v = calloc((size_t)n + 2, sizeof(double));
    if (u == NULL || v == NULL) {
        fprintf(stderr, "mpi_halo: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 1; i <= n; i++)
        u[i] = initial(first + i - 1);

    /* Device mode: [0] this rank's first cell (for the left neighbour), [1] its last (right). */
    double *send_d = NULL, *recv_d = NULL;
    double send_h[2], recv_h[2];
    if (device_halos) {
        send_d = omp_target_alloc(2 * sizeof(double), dev);
        recv_d = omp_target_alloc(2 * sizeof(double), dev);
        if (send_d == NULL || recv_d == NULL) {
            fprintf(stderr, "mpi_halo: rank %d: omp_target_alloc failed on device %d\n", rank, dev);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        send_h[0] = u[1];
        send_h[1] = u[n];
        omp_target_memcpy(send_d, send_h, sizeof(send_h), 0, 0, dev, host);
    }

    double t_init = 0, t_loop = 0, cpu_loop = 0;
#pragma omp target data map(to : u [0:n + 2], v [0:n + 2])
    {
        t_init = now(); /* the device is set up and the grid is on it */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now(), cpu0 = cpu_seconds();

        for (int step = 1; step <= steps; step++) {
            int print = step % print_every == 0;

            if (!device_halos) {
                /* Edge cells to the host, swap them with the neighbours, ghosts to the device. */
#pragma omp target update from(u [1:1])
#pragma omp target update from(u [n:1])
                MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 0, &u[n + 1], 1, MPI_DOUBLE, right, 0,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Sendrecv(&u[n], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#pragma omp target update to(u [0:1])
#pragma omp target update to(u [n + 1:1])

#pragma omp target teams distribute parallel for
                for (long i = 1; i <= n; i++) {
                    v[i] = stencil(u[i - 1], u[i], u[i + 1]);
                    if (print && i == 1)
                        printf("mpi_halo: rank %d step %d device %d: cell %ld = %.6f\n", rank, step,
                               dev, first, v[i]);
                }
            } else {
                /* send_d holds this rank's edge cells (written by the last kernel): through host
                 * buffers to the neighbours, and their edges back into recv_d. */
                omp_target_memcpy(send_h, send_d, sizeof(send_h), 0, 0, host, dev);
                recv_h[0] = recv_h[1] = 0.0; /* stays 0 at the ends of the grid */
                MPI_Sendrecv(&send_h[0], 1, MPI_DOUBLE, left, 0, &recv_h[1], 1, MPI_DOUBLE, right,
                             0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Sendrecv(&send_h[1], 1, MPI_DOUBLE, right, 1, &recv_h[0], 1, MPI_DOUBLE, left,
                             1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                omp_target_memcpy(recv_d, recv_h, sizeof(recv_h), 0, 0, dev, host);

#pragma omp target teams distribute parallel for is_device_ptr(send_d, recv_d)
                for (long i = 1; i <= n; i++) {
                    double l = i == 1 ? recv_d[0] : u[i - 1];
                    double r = i == n ? recv_d[1] : u[i + 1];
                    v[i] = stencil(l, u[i], r);
                    if (i == 1)
                        send_d[0] = v[i];
                    if (i == n)
                        send_d[1] = v[i];
                    if (print && i == 1)
                        printf("mpi_halo: rank %d step %d device %d: cell %ld = %.6f\n", rank, step,
                               dev, first, v[i]);
                }
            }
            /* Both arrays are mapped: swapping the host pointers swaps the device copies too. */
            double *t = u;
            u = v;
            v = t;
        }
        t_loop = now() - t0;
        cpu_loop = cpu_seconds() - cpu0;
        /* The result is in u: bring it back whichever array that is now. */
#pragma omp target update from(u [1:n])
    }
    double t_end = now(), cpu_total = cpu_seconds();
    if (device_halos) {
        omp_target_free(send_d, dev);
        omp_target_free(recv_d, dev);
    }

    long bad = check_slice(&u[1], first, n, total, steps), all_bad = 0;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

    printf(
        "mpi_halo: rank %d (pid %ld): device %d of %d (node rank %d), %s halos, %ld wrong cells, "
        "MPI_Init done at %.3f s, device ready at %.3f s, %.2f us/step, wall %.3f s, "
        "cpu %.3f s (steps: cpu %.3f s of %.3f s)\n",
        rank, (long)getpid(), dev, omp_get_num_devices(), local_rank, mode, bad, t_mpi - t_start,
        t_init - t_start, 1e6 * t_loop / steps, t_end - t_start, cpu_total, cpu_loop, t_loop);
    if (rank == 0)
        printf("mpi_halo: %s (%d ranks, %s halos, %ld cells per rank, %d steps, %ld wrong "
               "cells)\n",
               all_bad == 0 ? "PASS" : "FAIL", size, mode, n, steps, all_bad);
    free(u);
    free(v);
    MPI_Finalize();
    return all_bad == 0 ? 0 : 1;
}
