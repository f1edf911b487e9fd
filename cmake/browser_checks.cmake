# Browser checks of issue 14 (CTest label `browser`): `report --html` / `advise --html` of real traces
# opened in headless Chromium, and `timeline` read by DevTools' trace engine (tests/browser/*.mjs).
# They need chromium, node and tests/browser/node_modules (scripts/install-deps.sh); missing, they
# fail with the hint rather than skip.
find_program(EXITSCOPE_NODE node)
if(NOT EXITSCOPE_NODE)
  set(EXITSCOPE_NODE node)
endif()
set(EXITSCOPE_BROWSER_DIR ${CMAKE_CURRENT_SOURCE_DIR}/tests/browser)
set(EXITSCOPE_BROWSER_OUT ${CMAKE_CURRENT_BINARY_DIR}/browser-checks)
set(EXITSCOPE_TRACES ${EXITSCOPE_SHARED_DIR}/traces)

function(exitscope_browser_test name script trace)
  add_test(NAME browser.${name}
           COMMAND ${EXITSCOPE_NODE} ${EXITSCOPE_BROWSER_DIR}/${script} --exitscope $<TARGET_FILE:exitscope>
                   --trace ${EXITSCOPE_TRACES}/${trace} --out ${EXITSCOPE_BROWSER_OUT} ${ARGN})
  set_tests_properties(browser.${name} PROPERTIES LABELS browser TIMEOUT 180
                       FAIL_REGULAR_EXPRESSION "Cannot find (package|module)")
endfunction()

exitscope_browser_test(html_vmx_2vcpu html_check.mjs hip24-vmx/host-2vcpu-6.5.dat)
exitscope_browser_test(html_svm_dual html_check.mjs nested-svm-6.1/dual-5000/trace.dat)
exitscope_browser_test(html_svm_perf_by_vm html_check.mjs nested-svm-6.1/dual-5000/perf.data
                       --name dual_perf_by_vm -- --by vm)
exitscope_browser_test(html_advise_vmx html_check.mjs hip24-vmx/host-2vcpu-6.5.dat --advise)
exitscope_browser_test(timeline_svm_dual timeline_check.mjs nested-svm-6.1/dual-5000/trace.dat)
exitscope_browser_test(timeline_vmx_2vcpu timeline_check.mjs hip24-vmx/host-2vcpu-6.5.dat)
exitscope_browser_test(timeline_perf_window timeline_check.mjs nested-svm-6.1/dual-5000/perf.data
                       -- --from 0.5 --to 1.5)
# `diff --html` of a real before/after pair (200 vs 5000 iterations of one loop) and of a trace against
# its own perf.data copy (different formats).
exitscope_browser_test(diff_svm_loops diff_check.mjs nested-svm-6.1/kvmprobe-200.trace.dat
                       --after ${EXITSCOPE_TRACES}/nested-svm-6.1/dual-5000/trace.dat)
exitscope_browser_test(diff_svm_formats diff_check.mjs nested-svm-6.1/dual-5000/trace.dat
                       --after ${EXITSCOPE_TRACES}/nested-svm-6.1/dual-5000/perf.data)
