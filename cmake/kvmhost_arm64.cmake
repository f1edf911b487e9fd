# A real arm64 KVM host (tools/kvmhost-arm64/): Debian's arm64 kernel with KVM in VHE mode under QEMU
# TCG, a tiny VMM of ours making hvc / sysreg / MMIO / ioeventfd / WFI exits, recorded inside by
# trace-cmd and the kernel's own text; the x86 exitscope checks the recordings on this host.
#   label kvmhost-arm64       (CI) one boot, no arm64 exitscope inside: ~1.5-3 min
#   label kvmhost-arm64-full  (not in CI: scripts/test.sh leaves it out) cross-builds exitscope for
#                             arm64 (~5-10 min from nothing on 2 cores) and boots again to run
#                             `exitscope record` inside; its file is checked the same way.
# report_per_class needs the arm64 exit decoder (issue 17 item 1).
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND OR CMAKE_CROSSCOMPILING)
  return()
endif()
set(KVMHOST_ARM64_DIR ${CMAKE_CURRENT_SOURCE_DIR}/tools/kvmhost-arm64)
set(KVMHOST_ARM64_OUT ${CMAKE_CURRENT_BINARY_DIR}/kvmhost-arm64)
set(KVMHOST_ARM64_ENV EXITSCOPE_BIN=$<TARGET_FILE:exitscope> KVMHOST_ARM64_CACHE=${KVMHOST_ARM64_OUT}/cache)
set(KVMHOST_ARM64_ITERATIONS 200)

add_test(NAME kvmhost_arm64.boot_suite
         COMMAND ${KVMHOST_ARM64_DIR}/tests/boot-suite.sh ${KVMHOST_ARM64_OUT}/suite ${KVMHOST_ARM64_ITERATIONS})
set_tests_properties(kvmhost_arm64.boot_suite PROPERTIES LABELS kvmhost-arm64 TIMEOUT 900
                     FIXTURES_SETUP kvmhost_arm64_suite RESOURCE_LOCK "kvmhost_qemu;kvmhost_arm64_cache"
                     ENVIRONMENT "${KVMHOST_ARM64_ENV}")
foreach(check vhe_host workload_exits peer_trace_cmd)
  add_test(NAME kvmhost_arm64.${check}
           COMMAND ${Python3_EXECUTABLE} ${KVMHOST_ARM64_DIR}/tests/check_arm64.py ${check} ${KVMHOST_ARM64_OUT}/suite)
  set_tests_properties(kvmhost_arm64.${check} PROPERTIES LABELS kvmhost-arm64 TIMEOUT 120
                       FIXTURES_REQUIRED kvmhost_arm64_suite ENVIRONMENT "${KVMHOST_ARM64_ENV}")
endforeach()
foreach(check dump_matches_text report_per_class)
  add_test(NAME kvmhost_arm64.${check}.trace_cmd
           COMMAND ${Python3_EXECUTABLE} ${KVMHOST_ARM64_DIR}/tests/check_arm64.py ${check}
                   ${KVMHOST_ARM64_OUT}/suite trace.dat)
  set_tests_properties(kvmhost_arm64.${check}.trace_cmd PROPERTIES LABELS kvmhost-arm64 TIMEOUT 120
                       FIXTURES_REQUIRED kvmhost_arm64_suite ENVIRONMENT "${KVMHOST_ARM64_ENV}")
endforeach()

# The full run: the real tool inside the arm64 host.
add_test(NAME kvmhost_arm64_full.cross_build
         COMMAND ${KVMHOST_ARM64_DIR}/cross-build.sh ${KVMHOST_ARM64_OUT}/cache ${KVMHOST_ARM64_OUT}/build-arm64)
set_tests_properties(kvmhost_arm64_full.cross_build PROPERTIES LABELS kvmhost-arm64-full TIMEOUT 3600
                     FIXTURES_SETUP kvmhost_arm64_cross RESOURCE_LOCK kvmhost_arm64_cache)
add_test(NAME kvmhost_arm64_full.boot_suite
         COMMAND ${KVMHOST_ARM64_DIR}/tests/boot-suite.sh ${KVMHOST_ARM64_OUT}/full ${KVMHOST_ARM64_ITERATIONS}
                 ${KVMHOST_ARM64_OUT}/build-arm64/exitscope)
set_tests_properties(kvmhost_arm64_full.boot_suite PROPERTIES LABELS kvmhost-arm64-full TIMEOUT 900
                     FIXTURES_REQUIRED kvmhost_arm64_cross FIXTURES_SETUP kvmhost_arm64_full
                     RESOURCE_LOCK "kvmhost_qemu;kvmhost_arm64_cache" ENVIRONMENT "${KVMHOST_ARM64_ENV}")
foreach(check workload_exits record_clean record_defaults live_top live_serve live_top_stats
              live_bpf_refused bench_all_tests bench_exits_by_pc)
  add_test(NAME kvmhost_arm64_full.${check}
           COMMAND ${Python3_EXECUTABLE} ${KVMHOST_ARM64_DIR}/tests/check_arm64.py ${check} ${KVMHOST_ARM64_OUT}/full)
  set_tests_properties(kvmhost_arm64_full.${check} PROPERTIES LABELS kvmhost-arm64-full TIMEOUT 120
                       FIXTURES_REQUIRED kvmhost_arm64_full ENVIRONMENT "${KVMHOST_ARM64_ENV}")
endforeach()
foreach(check dump_matches_text report_per_class)
  add_test(NAME kvmhost_arm64_full.${check}.exitscope_record
           COMMAND ${Python3_EXECUTABLE} ${KVMHOST_ARM64_DIR}/tests/check_arm64.py ${check}
                   ${KVMHOST_ARM64_OUT}/full exitscope-record.dat)
  set_tests_properties(kvmhost_arm64_full.${check}.exitscope_record PROPERTIES LABELS kvmhost-arm64-full
                       TIMEOUT 120 FIXTURES_REQUIRED kvmhost_arm64_full ENVIRONMENT "${KVMHOST_ARM64_ENV}")
endforeach()
add_test(NAME kvmhost_arm64_full.failing_script_is_reported
         COMMAND ${KVMHOST_ARM64_DIR}/tests/expect-failure.sh ${KVMHOST_ARM64_OUT}/failing)
set_tests_properties(kvmhost_arm64_full.failing_script_is_reported PROPERTIES LABELS kvmhost-arm64-full
                     TIMEOUT 600 RESOURCE_LOCK "kvmhost_qemu;kvmhost_arm64_cache" ENVIRONMENT "${KVMHOST_ARM64_ENV}")
