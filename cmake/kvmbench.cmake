# `exitscope bench`: the built-in guest is GNU assembly (src/kvmbench/guest_code.S), assembled at build
# time into the exitscope_core library as read-only data that the VMM copies into guest memory.
# It is x86-64 code: other builds (the arm64 cross build, tools/kvmhost-arm64/cross-build.sh) leave
# it out and their `exitscope bench` says it has no guest for that architecture.
if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  return()
endif()
enable_language(ASM)
target_sources(exitscope_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src/kvmbench/guest_code.S)
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/src/kvmbench/guest_code.S PROPERTIES
  INCLUDE_DIRECTORIES ${CMAKE_CURRENT_SOURCE_DIR}/src)
