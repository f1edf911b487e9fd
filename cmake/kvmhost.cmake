# Real-KVM-host tests (label kvmhost): ONE QEMU TCG boot with an emulated SVM CPU runs every
# in-guest step (tools/kvmhost/tests/suite.sh) as the fixture; the checks then read its results.
# A second, short boot proves that the harness fails loudly when the guest script fails.
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "python3 not found: kvmhost tests disabled (scripts/install-deps.sh installs it)")
  return()
endif()
set(KVMHOST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/tools/kvmhost)
set(KVMHOST_OUT ${CMAKE_CURRENT_BINARY_DIR}/kvmhost)

add_test(NAME kvmhost.boot_suite
         COMMAND ${KVMHOST_DIR}/tests/boot-suite.sh ${KVMHOST_OUT}/suite $<TARGET_FILE:exitscope>)
set_tests_properties(kvmhost.boot_suite PROPERTIES LABELS kvmhost TIMEOUT 2400
                     FIXTURES_SETUP kvmhost_suite RESOURCE_LOCK kvmhost_qemu)

foreach(check bench_all_tests bench_kvm_stats bench_compare bench_errors trace_cpuid_rip
              trace_exit_reasons perf_agrees report_agrees_with_bench dump_cpuid_rip
              live_record live_report_agrees_with_bench live_dump_cpuid_rip
              live_trace_cmd_reads_record live_top_json live_serve live_cleanup
              live_record_names_vms live_prometheus)
  add_test(NAME kvmhost.${check}
           COMMAND ${Python3_EXECUTABLE} ${KVMHOST_DIR}/tests/check_suite.py ${check} ${KVMHOST_OUT}/suite)
  set_tests_properties(kvmhost.${check} PROPERTIES LABELS kvmhost TIMEOUT 60
                       FIXTURES_REQUIRED kvmhost_suite ENVIRONMENT EXITSCOPE_BIN=$<TARGET_FILE:exitscope>)
endforeach()

# Clocks (issue 12): the same run in TSC cycles and in ns (tools/kvmhost/guest/clocks-steps.sh).
foreach(check clocks_cycles_labelled clocks_tsc_khz_agrees)
  add_test(NAME kvmhost.${check}
           COMMAND ${Python3_EXECUTABLE} ${KVMHOST_DIR}/tests/check_clocks.py ${check} ${KVMHOST_OUT}/suite)
  set_tests_properties(kvmhost.${check} PROPERTIES LABELS kvmhost TIMEOUT 120
                       FIXTURES_REQUIRED kvmhost_suite ENVIRONMENT EXITSCOPE_BIN=$<TARGET_FILE:exitscope>)
endforeach()

# The committed sample (samples/bench-svm, recorded by tools/kvmhost/record-fixture.sh) needs no boot:
# exitscope's reader must agree with the bench's own iteration counts on it.
foreach(check report_agrees_with_bench dump_cpuid_rip)
  add_test(NAME sample_bench_svm.${check}
           COMMAND ${Python3_EXECUTABLE} ${KVMHOST_DIR}/tests/check_suite.py ${check}
                   ${CMAKE_CURRENT_SOURCE_DIR}/samples/bench-svm)
  set_tests_properties(sample_bench_svm.${check} PROPERTIES LABELS unit TIMEOUT 60
                       ENVIRONMENT EXITSCOPE_BIN=$<TARGET_FILE:exitscope>)
endforeach()

add_test(NAME kvmhost.failing_script_is_reported
         COMMAND ${KVMHOST_DIR}/tests/expect-failure.sh ${KVMHOST_OUT}/failing $<TARGET_FILE:exitscope>)
set_tests_properties(kvmhost.failing_script_is_reported PROPERTIES LABELS kvmhost TIMEOUT 300
                     RESOURCE_LOCK kvmhost_qemu)
