# The observers (issue 16) under a real KVM host (label kvmhost): the suite's one boot runs
# tools/kvmhost/guest/observe-steps.sh; check_observe.py checks what it left (kvmhost.cmake's boot
# is the fixture).
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
foreach(check top_bpf_counts top_bpf_equals_tracefs top_stats_exits top_bpf_explicit_fails bench_observe_table
              serve_bpf_counts serve_bpf_equals_tracefs serve_stats_exits serve_bpf_explicit_fails)
  add_test(NAME kvmhost.observe_${check}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tools/kvmhost/tests/check_observe.py ${check}
                   ${CMAKE_CURRENT_BINARY_DIR}/kvmhost/suite)
  set_tests_properties(kvmhost.observe_${check} PROPERTIES LABELS kvmhost TIMEOUT 60
                       FIXTURES_REQUIRED kvmhost_suite)
endforeach()
