# `exitscope bench`: the built-in guest is GNU assembly, assembled at build time into the
# exitscope_core library as read-only data that the VMM copies into guest memory:
# src/kvmbench/guest_code.S on x86-64, src/kvmbench/guest_code_arm64.S on arm64 (the cross build,
# tools/kvmhost-arm64/cross-build.sh). Other builds have no guest; their `exitscope bench` says so.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(KVMBENCH_GUEST ${CMAKE_CURRENT_SOURCE_DIR}/src/kvmbench/guest_code.S)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(KVMBENCH_GUEST ${CMAKE_CURRENT_SOURCE_DIR}/src/kvmbench/guest_code_arm64.S)
else()
  return()
endif()
enable_language(ASM)
target_sources(exitscope_core PRIVATE ${KVMBENCH_GUEST})
set_source_files_properties(${KVMBENCH_GUEST} PROPERTIES INCLUDE_DIRECTORIES ${CMAKE_CURRENT_SOURCE_DIR}/src)
