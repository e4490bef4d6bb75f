# Helpers shared by every part of the build.

# tether_add_test(NAME name COMMAND cmd... [LABELS l...] [TIMEOUT s])
# Each test runs in its own process with a timeout (default 300 s).
function(tether_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "COMMAND;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT})
  if(T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
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
