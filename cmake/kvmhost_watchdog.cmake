# The kvmhost harnesses' shared watchdog (tools/kvmhost-common/watchdog.sh) against a stand-in for
# QEMU: a wedged boot and a silent one are stopped, reported in one line each and retried. No boot.
add_test(NAME kvmhost_watchdog.wedge_and_stall_are_retried
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools/kvmhost-common/tests/watchdog-test.sh)
set_tests_properties(kvmhost_watchdog.wedge_and_stall_are_retried PROPERTIES LABELS unit TIMEOUT 120)
