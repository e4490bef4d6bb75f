# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# tether_add_test(NAME name COMMAND cmd... [LABELS l...] [TIMEOUT s])
# Each test runs in its own process.  TIMEOUT (default 300 s) is what the test may take on an
# idle machine; ctest stops it only after TETHER_TEST_TIMEOUT_SCALE times that (default 10), a
# guard against hangs that a loaded machine never reaches.  No test decides pass or fail on time.
#
# ASan+UBSan builds (TETHER_SANITIZE=address) run every test except those labelled `noasan`
# (each says why where it is defined).  Tests labelled `preload` run programs that clang-16
# builds without sanitizers and that load tether's instrumented plugins through libomptarget; the
# ASan runtime must come first in such a process, so these tests run with it in LD_PRELOAD (the
# tools a test script starts get it too), without LeakSanitizer, whose tracer crashes on the
# dynamic TLS of the libraries those programs load, and without ASan's check of printf formats,
# which warns on stderr about the bad formats the device-printf tests pass through libc.  Address
# and undefined-behaviour errors are still caught there; leaks are caught by the instrumented
# tests of the same code.
set(TETHER_TEST_TIMEOUT_SCALE 10 CACHE STRING
    "ctest's hang guard for each test: its TIMEOUT (idle-machine seconds) times this")
set(tether_test_env "")
set(tether_test_preload "")
if(TETHER_SANITIZE STREQUAL "address")
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
                  OUTPUT_VARIABLE asan_rt OUTPUT_STRIP_TRAILING_WHITESPACE)
  get_filename_component(asan_rt "${asan_rt}" REALPATH)
  if(NOT IS_ABSOLUTE "${asan_rt}" OR NOT EXISTS "${asan_rt}")
    message(WARNING "tether: ${CMAKE_C_COMPILER} names no shared ASan runtime (libasan.so): "
                    "tests labelled `preload` will fail")
  endif()
  # allocator_may_return_null: tests ask for impossible sizes and check the error path.
  set(tether_test_env "ASAN_OPTIONS=set:allocator_may_return_null=1"
      "UBSAN_OPTIONS=set:print_stacktrace=1")
  set(tether_test_preload "LD_PRELOAD=set:${asan_rt}"
      "ASAN_OPTIONS=set:allocator_may_return_null=1:detect_leaks=0:check_printf=0"
      "UBSAN_OPTIONS=set:print_stacktrace=1")
endif()

function(tether_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "COMMAND;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  math(EXPR guard "${T_TIMEOUT} * ${TETHER_TEST_TIMEOUT_SCALE}")
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${guard})
  if(T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
  # ENVIRONMENT_MODIFICATION, not ENVIRONMENT: callers set ENVIRONMENT after this.
  set(env ${tether_test_env})
  if("preload" IN_LIST T_LABELS)
    set(env ${tether_test_preload})
  endif()
  if(env)
    set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT_MODIFICATION "${env}")
  endif()
endfunction()

# tether_add_bench(target [ARGS a...]): registers an already defined
# executable target as a benchmark; `make bench` runs them all in order.
set_property(GLOBAL PROPERTY TETHER_BENCHES "")
function(tether_add_bench target)
  cmake_parse_arguments(B "" "" "ARGS" ${ARGN})
  list(JOIN B_ARGS " " args)
  set_property(GLOBAL APPEND PROPERTY TETHER_BENCHES "$<TARGET_FILE:${target}> ${args}")
  set_property(GLOBAL APPEND PROPERTY TETHER_BENCH_TARGETS ${target})
endfunction()

function(tether_finish_bench)
  get_property(benches GLOBAL PROPERTY TETHER_BENCHES)
  get_property(targets GLOBAL PROPERTY TETHER_BENCH_TARGETS)
  set(cmds "")
  foreach(b ${benches})
    separate_arguments(argv UNIX_COMMAND "${b}")
    list(APPEND cmds COMMAND ${argv})
  endforeach()
  if(NOT cmds)
    set(cmds COMMAND ${CMAKE_COMMAND} -E echo "no benchmarks are built")
  endif()
  add_custom_target(bench ${cmds} USES_TERMINAL
                    COMMENT "Running tether benchmarks")
  if(targets)
    add_dependencies(bench ${targets})
  endif()
endfunction()

# Where the plugins are installed: <libdir>/tether (GNUInstallDirs is included first).
set(TETHER_INSTALL_PLUGINDIR ${CMAKE_INSTALL_LIBDIR}/tether)

# The CUDA toolkit whose ptxas builds the NVIDIA images of libtether-device.a (and the nvptx64
# builds of the demo and GPU tests): /usr/local/cuda when it has one, else none.  Defined here
# once, before any part reads it.
if(EXISTS /usr/local/cuda/bin/ptxas)
  set(TETHER_CUDA_PATH /usr/local/cuda CACHE PATH "CUDA toolkit with ptxas for nvptx64 builds")
else()
  set(TETHER_CUDA_PATH "" CACHE PATH "CUDA toolkit with ptxas for nvptx64 builds")
endif()
