# Prometheus's own tools on what serve exports and on deploy/prometheus/ (label prometheus; Debian
# package prometheus gives promtool and the server, scripts/install-deps.sh installs it).
find_program(PROMTOOL promtool REQUIRED)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(EXITSCOPE_PROM_DIR ${CMAKE_SOURCE_DIR}/deploy/prometheus)
set(EXITSCOPE_PROM_SHARED "${EXITSCOPE_SHARED_DIR}")  # set before the fragments (CMakeLists.txt)
add_test(NAME prometheus.rules_check
         COMMAND ${PROMTOOL} check rules ${EXITSCOPE_PROM_DIR}/exitscope.rules.yml ${EXITSCOPE_PROM_DIR}/exitscope.alerts.yml)
add_test(NAME prometheus.rules_test COMMAND ${PROMTOOL} test rules rules_test.yml
         WORKING_DIRECTORY ${EXITSCOPE_PROM_DIR}/tests)
foreach(check expositions scrape load)
  add_test(NAME prometheus.${check}
           COMMAND Python3::Interpreter ${CMAKE_SOURCE_DIR}/tests/prometheus/prometheus_checks.py ${check}
                   $<TARGET_FILE:exitscope> ${EXITSCOPE_PROM_SHARED})
endforeach()
set_tests_properties(prometheus.rules_check prometheus.rules_test prometheus.expositions prometheus.scrape
                     prometheus.load PROPERTIES LABELS prometheus TIMEOUT 300)
# The load test measures starvation by slow clients, not by a starved CPU: not beside a QEMU boot
# (in CI it shared both cores with one and a scrape waited out its 10 s).
set_tests_properties(prometheus.load PROPERTIES RESOURCE_LOCK kvmhost_qemu)
