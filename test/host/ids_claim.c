/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* test/host/ids_claim.c - libids_claim.so: a device image with no host entries that defines
 * tether_test_claim, so only the test-only "ppc64" plugin accepts it.  Registered before the
 * program's own image (shared libraries initialise first), it makes that plugin the first used
 * one: OpenMP devices 0..3.  Having no entries, libomptarget never loads it. */
#pragma omp declare target
void tether_test_claim(void)
{
}
#pragma omp end declare target
