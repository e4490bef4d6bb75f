# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Helpers to build OpenMP offload programs with clang-16 (the project C compiler is gcc).
# Included by tether's test folders; defines:
#   TETHER_CLANG, TETHER_CLANGXX, TETHER_OBJCOPY   the LLVM 16 tools (empty when missing)
#   TETHER_CUDA_PATH                               CUDA toolkit with ptxas (empty when missing;
#                                                  defined in cmake/tether.cmake)
#   TETHER_OFFLOAD_TARGET                          offload target of the conformance suite:
#                                                  x86_64 (default) or nvptx64
#   tether_offload_flags(<target> <out-var>)       the clang flags for x86_64 | nvptx64
#   TETHER_DEVICE_CFLAGS                           the compile flags of a program that links
#                                                  libtether-device.a (what `pkg-config --cflags
#                                                  tether` gives an installed one)
include_guard(GLOBAL)

find_program(TETHER_CLANG NAMES clang-16 PATHS /usr/lib/llvm-16/bin)
find_program(TETHER_CLANGXX NAMES clang++-16 PATHS /usr/lib/llvm-16/bin)
find_program(TETHER_OBJCOPY NAMES llvm-objcopy-16 PATHS /usr/lib/llvm-16/bin)
set(TETHER_OFFLOAD_TARGET x86_64 CACHE STRING
    "Offload target the conformance suite is built for: x86_64 or nvptx64")
set(TETHER_NVPTX_ARCH sm_90 CACHE STRING "GPU architecture for nvptx64 offload builds")
set(TETHER_DEVICE_LIBC_H ${PROJECT_SOURCE_DIR}/include/tether/device_libc.h CACHE INTERNAL "")
set(TETHER_DEVICE_CFLAGS -I${PROJECT_SOURCE_DIR}/include -include ${TETHER_DEVICE_LIBC_H}
    CACHE INTERNAL "")

function(tether_offload_flags target out)
  if(target STREQUAL "x86_64")
    set(${out} -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu PARENT_SCOPE)
  elseif(target STREQUAL "nvptx64")
    set(${out} -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda
        -Xopenmp-target=nvptx64-nvidia-cuda -march=${TETHER_NVPTX_ARCH}
        --cuda-path=${TETHER_CUDA_PATH} -Wno-unknown-cuda-version PARENT_SCOPE)
  else()
    message(FATAL_ERROR "offload target must be x86_64 or nvptx64, not '${target}'")
  endif()
endfunction()
