# `exitscope advise` under a real KVM host (label kvmhost): ONE boot records a bench workload per
# advisor pattern (tools/kvmhost/tests/advise-suite.sh); check_advise.py then asserts each pattern is
# recognised and the near misses are not. Shares the harness's QEMU lock with its own boots.
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
set(ADVISE_KVMHOST_OUT ${CMAKE_CURRENT_BINARY_DIR}/kvmhost/advise)
add_test(NAME kvmhost.advise_boot
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools/kvmhost/run.sh
                 --script ${CMAKE_CURRENT_SOURCE_DIR}/tools/kvmhost/tests/advise-suite.sh
                 --out ${ADVISE_KVMHOST_OUT} --exitscope $<TARGET_FILE:exitscope> --timeout 480 --stall 150)
set_tests_properties(kvmhost.advise_boot PROPERTIES LABELS kvmhost TIMEOUT 900
                     FIXTURES_SETUP kvmhost_advise RESOURCE_LOCK kvmhost_qemu)
foreach(check mmio_doorbell pio_doorbell vmm_halt tsc_deadline msr_loop dr_burst dr_burst_lazy not_flagged
              real_kallsyms)
  add_test(NAME kvmhost.advise_${check}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tools/kvmhost/tests/check_advise.py
                   ${check} ${ADVISE_KVMHOST_OUT})
  set_tests_properties(kvmhost.advise_${check} PROPERTIES LABELS kvmhost TIMEOUT 120
                       FIXTURES_REQUIRED kvmhost_advise ENVIRONMENT EXITSCOPE_BIN=$<TARGET_FILE:exitscope>)
endforeach()
