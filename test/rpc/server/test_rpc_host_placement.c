/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * test/rpc/server/test_rpc_host_placement.c - test_rpc_host's placement: the server thread's cores
 * under HWLOC_SYNTHETIC with a PCI address of this machine, and the reasons given for any core;
 * shared-core: the thread on the program's one core.
 */
#include <dirent.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_rpc_host.h"

/* ---- placement: the thread near the device's PCI address --------------------------------- */

/* A PCI device of this machine whose sysfs local_cpulist lists cores: its address into bus and
 * the list, as sysfs writes it, into cpus; false when there is none. */
static bool pci_device_with_cores(char *bus, size_t bus_len, char *cpus, size_t cpus_len)
{
    DIR *d = opendir("/sys/bus/pci/devices");
    struct dirent *e;
    bool found = false;
    if (d == NULL)
        return false;
    while (!found && (e = readdir(d)) != NULL) {
        char path[512];
        if (e->d_name[0] == '.' || strlen(e->d_name) >= bus_len)
            continue;
        snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        size_t n = fread(cpus, 1, cpus_len - 1, f);
        fclose(f);
        cpus[n] = '\0';
        cpus[strcspn(cpus, " \n")] = '\0';
        if (cpus[0] != '\0') {
            snprintf(bus, bus_len, "%s", e->d_name);
            found = true;
        }
    }
    closedir(d);
    return found;
}

/* The highest CPU number in a list such as "0-15,32-47". */
static long cpu_list_max(const char *list)
{
    long max = 0;
    for (const char *p = list; *p != '\0';) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        if (v > max)
            max = v;
        p = end;
    }
    return max;
}

/* Does a thread of this process have a name (its comm) that starts with `prefix`? */
static bool thread_named(const char *prefix)
{
    DIR *d = opendir("/proc/self/task");
    bool found = false;
    struct dirent *e;
    while (d != NULL && !found && (e = readdir(d)) != NULL) {
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        found = fgets(comm, sizeof comm, f) != NULL && strncmp(comm, prefix, strlen(prefix)) == 0;
        fclose(f);
    }
    if (d != NULL)
        closedir(d);
    return found;
}

/* Starts a server's thread with pci_bus_id = bus on the topology HWLOC_SYNTHETIC = topo and
 * returns its describe line in desc. */
static void placement_describe(const char *topo, const char *bus, char *desc, size_t len)
{
    struct rig rig;
    struct tether_error err = {""};
    setenv("HWLOC_SYNTHETIC", topo, 1);
    rig_up(&rig, true, 8, 32, false);
    struct tether_rpc_thread_config tcfg = {.pci_bus_id = bus};
    tether_status_t st = tether_rpc_server_start(rig.srv, &tcfg, &err);
    CHECKF(st == TETHER_OK, "start: %s (%s)", tether_status_str(st), err.msg);
    tether_rpc_server_describe(rig.srv, desc, len);
    CHECKF(thread_named("tether-rpc"), "no thread of this process is named tether-rpc<device>");
    printf("HWLOC_SYNTHETIC=\"%s\", pci_bus_id %s%s%s: %s\n", topo, bus ? "\"" : "",
           bus ? bus : "NULL", bus ? "\"" : "", desc);
    rig_down(&rig);
    unsetenv("HWLOC_SYNTHETIC");
}

/* Returns 77 (skip) when this machine has no PCI device with local cores in sysfs, after the
 * checks that need none. */
int test_placement(void)
{
    char desc[256], bus[64], cpus[1024], topo[64];
    const char *absent = "ffff:ff:1f.7";
    unsetenv("TETHER_RPC_CPUS"); /* it would decide instead */

    /* Without a usable address the thread may run anywhere, and the line says why. */
    placement_describe("numa:2 core:1 pu:1", NULL, desc, sizeof desc);
    CHECKF(strstr(desc, ", thread on any core (2 NUMA nodes, no PCI address)") != NULL, "%s", desc);
    placement_describe("numa:2 core:1 pu:1", "../../zz", desc, sizeof desc);
    CHECKF(strstr(desc, ", thread on any core (2 NUMA nodes, bad PCI address)") != NULL, "%s",
           desc);
    if (access("/sys/bus/pci/devices/ffff:ff:1f.7", F_OK) != 0) {
        placement_describe("numa:2 core:1 pu:1", absent, desc, sizeof desc);
        CHECKF(strstr(desc, ", thread on any core (cores local to ffff:ff:1f.7: none listed)") !=
                   NULL,
               "%s", desc);
    }

    if (!pci_device_with_cores(bus, sizeof bus, cpus, sizeof cpus)) {
        printf("SKIP: no device in /sys/bus/pci/devices has a local_cpulist naming cores\n");
        return tcheck_failures() == 0 ? 77 : 1;
    }
    /* Two NUMA nodes whose PUs cover every CPU of the list: the thread goes on exactly the
     * cores sysfs lists for the device. */
    long half = cpu_list_max(cpus) / 2 + 1;
    snprintf(topo, sizeof topo, "numa:2 pu:%ld", half);
    char want[1200];
    snprintf(want, sizeof want, ", thread on cores %s (local to %s)", cpus, bus);
    placement_describe(topo, bus, desc, sizeof desc);
    CHECKF(strstr(desc, want) != NULL, "\"%s\" does not end in \"%s\"", desc, want);
    /* One NUMA node: any core is as good as another, whatever the address. */
    placement_describe("numa:1 pu:2", bus, desc, sizeof desc);
    CHECKF(strstr(desc, ", thread on any core (one NUMA node)") != NULL, "%s", desc);
    return 0;
}

/* ---- shared-core: the thread on the program's one core ----------------------------------- */

/* The program's thread bound to one core (a launcher binding a rank to a core), TETHER_WAIT=spin:
 * the server thread, which would run on that core too, does not spin there; the describe line
 * says so.  While a kernel runs without calls it sleeps (a spinning thread never does: a count
 * that a slow machine cannot make zero), and calls are answered. */
void test_shared_core(void)
{
    cpu_set_t saved, one;
    CHECKF(sched_getaffinity(0, sizeof saved, &saved) == 0, "sched_getaffinity");
    int cpu = sched_getcpu();
    CHECKF(cpu >= 0, "sched_getcpu");
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    CHECKF(sched_setaffinity(0, sizeof one, &one) == 0, "bind this thread to cpu %d", cpu);
    setenv("TETHER_WAIT", "spin", 1);
    unsetenv("TETHER_RPC_CPUS");
    unsetenv("HWLOC_SYNTHETIC");

    struct rig rig;
    rig_up(&rig, false, 16, 32, true);
    char desc[256];
    tether_rpc_server_describe(rig.srv, desc, sizeof desc);
    printf("bound to cpu %d, TETHER_WAIT=spin: %s\n", cpu, desc);
    CHECKF(strstr(desc, ", the program's one core: TETHER_WAIT=spin not applied to it") != NULL,
           "%s", desc);
    atomic_int count = 0;
    CHECKF(tether_rpc_register(rig.srv, 0x8001, reverse_handler, &count) == TETHER_OK, "register");
    char rev[4];
    CHECKF(tether_rpc_call(0x8001, "abcd", 4, rev, 4) == 4 && rev[0] == 'd', "a call");
    struct tether_rpc_stats s0, s1;
    tether_rpc_server_stats(rig.srv, &s0);
    struct timespec ts = {0, 200000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
    tether_rpc_server_stats(rig.srv, &s1);
    printf("%llu wake-ups in 200 ms without calls\n",
           (unsigned long long)(s1.wakeups - s0.wakeups));
    CHECKF(s1.wakeups > s0.wakeups, "the thread never slept: it spun on the program's core");
    CHECKF(tether_rpc_call(0x8001, "wxyz", 4, rev, 4) == 4 && rev[0] == 'z', "a call after");
    rig_down(&rig);

    /* On a core of its own (the program may use two), spin is applied. */
    if (CPU_COUNT(&saved) >= 2) {
        cpu_set_t two = one;
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (i != cpu && CPU_ISSET(i, &saved)) {
                CPU_SET(i, &two);
                break;
            }
        CHECKF(sched_setaffinity(0, sizeof two, &two) == 0, "bind this thread to two cpus");
        rig_up(&rig, false, 16, 32, true);
        tether_rpc_server_describe(rig.srv, desc, sizeof desc);
        printf("two cpus, TETHER_WAIT=spin: %s\n", desc);
        CHECKF(strstr(desc, "one core") == NULL, "%s", desc);
        rig_down(&rig);
        /* The thread placed on one of the program's two cores: spin applies there too. */
        char list[16], want[64];
        snprintf(list, sizeof list, "%d", cpu);
        snprintf(want, sizeof want, "thread on cores %d (TETHER_RPC_CPUS)", cpu);
        setenv("TETHER_RPC_CPUS", list, 1);
        rig_up(&rig, false, 16, 32, true);
        tether_rpc_server_describe(rig.srv, desc, sizeof desc);
        printf("two cpus, TETHER_RPC_CPUS=%s: %s\n", list, desc);
        CHECKF(strstr(desc, want) != NULL, "%s", desc);
        rig_down(&rig);
        unsetenv("TETHER_RPC_CPUS");
    }
    CHECKF(sched_setaffinity(0, sizeof saved, &saved) == 0, "restore the binding");
    unsetenv("TETHER_WAIT");
}
