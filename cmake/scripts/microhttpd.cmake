# Included by CMakeLists.txt before the cmake/*.cmake fragments (install.cmake reads the package).
# `exitscope serve`'s HTTP endpoint: GNU libmicrohttpd (why: src/sinks/metrics_http_server.h). Not
# linked: serve loads it by SONAME when it starts the endpoint (src/sinks/microhttpd_api.h: linked,
# it and GnuTLS's closure cost every command ~1.5 ms of start-up). The build needs its header and
# its shared library, for the SONAME and the Debian package that the .deb then depends on.
find_path(MICROHTTPD_INCLUDE microhttpd.h)
find_library(MICROHTTPD_LIBRARY microhttpd)
if(NOT MICROHTTPD_INCLUDE OR NOT MICROHTTPD_LIBRARY)
  message(FATAL_ERROR "libmicrohttpd not found (serve's HTTP endpoint): scripts/install-deps.sh "
                      "installs libmicrohttpd-dev")
endif()
find_program(EXITSCOPE_READELF NAMES ${CMAKE_READELF} readelf REQUIRED)
execute_process(COMMAND ${EXITSCOPE_READELF} -d ${MICROHTTPD_LIBRARY} OUTPUT_VARIABLE _mhd_dynamic
                RESULT_VARIABLE _mhd_rc)
string(REGEX MATCH "\\(SONAME\\)[^[]*\\[([^]]+)\\]" _mhd_match "${_mhd_dynamic}")
set(EXITSCOPE_MICROHTTPD_SONAME "${CMAKE_MATCH_1}")
if(NOT _mhd_rc EQUAL 0 OR EXITSCOPE_MICROHTTPD_SONAME STREQUAL "")
  message(FATAL_ERROR "cannot read the SONAME of ${MICROHTTPD_LIBRARY} with ${EXITSCOPE_READELF}")
endif()
# Debian names a shared-library package after its SONAME: libmicrohttpd.so.12 -> libmicrohttpd12.
string(REGEX REPLACE "^(lib[a-z0-9]+)\\.so\\.([0-9]+)$" "\\1\\2" EXITSCOPE_MICROHTTPD_PACKAGE
       "${EXITSCOPE_MICROHTTPD_SONAME}")
target_include_directories(exitscope_core SYSTEM PUBLIC ${MICROHTTPD_INCLUDE})
target_link_libraries(exitscope_core PUBLIC ${CMAKE_DL_LIBS})
set_property(SOURCE ${CMAKE_SOURCE_DIR}/src/sinks/microhttpd_api.cc APPEND PROPERTY COMPILE_DEFINITIONS
             EXITSCOPE_MICROHTTPD_SONAME="${EXITSCOPE_MICROHTTPD_SONAME}"
             EXITSCOPE_MICROHTTPD_PACKAGE="${EXITSCOPE_MICROHTTPD_PACKAGE}")
# What serve loads, for tests/install/deb_test.sh and the kvmhost initramfs (the library is not in
# the binary's NEEDED, so ldd does not name it); the .deb's Depends reads the package above.
file(WRITE ${CMAKE_BINARY_DIR}/dlopened-libraries.txt "${EXITSCOPE_MICROHTTPD_SONAME}\n")
