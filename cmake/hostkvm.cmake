# This machine's own /dev/kvm (label hostkvm): `exitscope record` during `exitscope bench`, checked by
# tools/hostkvm/check_host.py. Machines without /dev/kvm, tracefs or root print
# "hostkvm: not run: <why>" and exit 77: ctest shows the test as skipped (SKIP_RETURN_CODE), and
# scripts/check_skips.py fails CI if this machine could have run it. The QEMU harness (label kvmhost)
# asserts the live done-means everywhere.
# The committed sample samples/bench-pvm (made by the same script) is checked everywhere (label unit).
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
set(HOSTKVM_DIR ${CMAKE_CURRENT_SOURCE_DIR}/tools/hostkvm)
set(HOSTKVM_OUT ${CMAKE_CURRENT_BINARY_DIR}/hostkvm)

add_test(NAME hostkvm.record_bench
         COMMAND sh -c "\"$0\" \"$1\" \"$2\" 50 && \"$3\" \"$4\" \"$1\""
                 ${HOSTKVM_DIR}/record-bench.sh ${HOSTKVM_OUT}/record $<TARGET_FILE:exitscope>
                 ${Python3_EXECUTABLE} ${HOSTKVM_DIR}/check_host.py)
set_tests_properties(hostkvm.record_bench PROPERTIES LABELS hostkvm TIMEOUT 300 SKIP_RETURN_CODE 77
                     ENVIRONMENT EXITSCOPE_BIN=$<TARGET_FILE:exitscope>)

set(SAMPLE_PVM ${CMAKE_CURRENT_SOURCE_DIR}/samples/bench-pvm)
add_test(NAME sample_bench_pvm.report_golden
         COMMAND sh -c "\"$0\" report trace.dat | diff -u exitscope-report.txt -" $<TARGET_FILE:exitscope>
         WORKING_DIRECTORY ${SAMPLE_PVM})
add_test(NAME sample_bench_pvm.events_match_bench
         COMMAND ${Python3_EXECUTABLE} ${HOSTKVM_DIR}/check_host.py ${SAMPLE_PVM})
set_tests_properties(sample_bench_pvm.report_golden sample_bench_pvm.events_match_bench PROPERTIES
                     LABELS unit TIMEOUT 60 ENVIRONMENT EXITSCOPE_BIN=$<TARGET_FILE:exitscope>)
