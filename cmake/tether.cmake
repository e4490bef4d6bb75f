# tether_add_test(NAME name COMMAND cmd... [LABELS l...] [TIMEOUT s])
# Each test runs in its own process.  TIMEOUT (default 300 s) is what the test may take on an
# idle machine; ctest stops it only after TETHER_TEST_TIMEOUT_SCALE times that (default 10), a
# guard against hangs that a loaded machine never reaches.  No test decides pass or fail on time.
set(TETHER_TEST_TIMEOUT_SCALE 10 CACHE STRING
    "ctest's hang guard for each test: its TIMEOUT (idle-machine seconds) times this")
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
