# `exitscope diff` under a real KVM host (label kvmhost): the suite's one boot records before/after
# pairs of single bench tests (tools/kvmhost/guest/diff-steps.sh); check_diff.py then checks what diff
# says about each pair (kvmhost.cmake's boot is the fixture).
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
foreach(check diff_dr_burst diff_mmio_vmm_trip diff_msr_in_kernel diff_self diff_formats)
  add_test(NAME kvmhost.${check}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tools/kvmhost/tests/check_diff.py ${check}
                   ${CMAKE_CURRENT_BINARY_DIR}/kvmhost/suite)
  set_tests_properties(kvmhost.${check} PROPERTIES LABELS kvmhost TIMEOUT 120
                       FIXTURES_REQUIRED kvmhost_suite ENVIRONMENT EXITSCOPE_BIN=$<TARGET_FILE:exitscope>)
endforeach()
