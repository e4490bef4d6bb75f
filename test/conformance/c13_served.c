/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* c13: the program is served by tether's plugin, not by LLVM's (even when LLVM's plugins are
 * on the search path too).  With argument "expect-llvm" it checks the opposite: run with only
 * LLVM's plugin directory, the same program must see that no tether plugin serves it. */
#include "conformance.h"

#include <dlfcn.h>

int main(int argc, char **argv)
{
    struct tether_device_info info;
    void *sym = dlsym(RTLD_DEFAULT, "tether_rtl_device_query");
    int ndev = omp_get_num_devices();
    int rc = tether_device_query(0, &info);
    Dl_info where;
    char expect_lib[96];

    if (argc > 1 && strcmp(argv[1], "expect-llvm") == 0) {
        /* LLVM's plugin serves: devices exist, but no tether plugin is loaded. */
        CHECK(ndev >= 1);
        CHECK(sym == NULL);
        CHECK(rc == TETHER_ERR_NOT_FOUND);
        return conf_exit("c13_served (LLVM's plugin)");
    }
    conf_require_tether(0);
    CHECK(rc == TETHER_OK);
    CHECK(strcmp(info.plugin, TETHER_EXPECT_PLUGIN) == 0);
    snprintf(expect_lib, sizeof(expect_lib), "libomptarget.rtl.%s.nextgen.so",
             TETHER_EXPECT_PLUGIN);
    CHECK(strcmp(info.library, expect_lib) == 0);
    CHECK(info.omp_device == 0 && info.local_id == 0);
    CHECK(info.plugin_devices >= 1 && info.plugin_devices == ndev);
    /* The exported query lives in a file of that name that is not LLVM's. */
    CHECK(sym != NULL && dladdr(sym, &where) != 0);
    if (sym != NULL && dladdr(sym, &where) != 0) {
        CHECK(strstr(where.dli_fname, expect_lib) != NULL);
        CHECK(strstr(where.dli_fname, "/usr/lib/llvm-16") == NULL);
        printf("served by %s (%s)\n", where.dli_fname, info.name);
    }
    for (int d = 0; d < ndev; d++) {
        CHECK(tether_device_query(d, &info) == TETHER_OK && info.omp_device == d);
    }
    CHECK(tether_device_query(ndev, &info) == TETHER_ERR_NO_DEVICE);
    CHECK(tether_device_query(-1, &info) == TETHER_ERR_NO_DEVICE);
    return conf_exit("c13_served");
}
