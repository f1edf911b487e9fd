# `exitscope bench`: the built-in guest is GNU assembly (src/kvmbench/guest_code.S), assembled at build
# time into the exitscope_core library as read-only data that the VMM copies into guest memory.
enable_language(ASM)
target_sources(exitscope_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src/kvmbench/guest_code.S)
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/src/kvmbench/guest_code.S PROPERTIES
  INCLUDE_DIRECTORIES ${CMAKE_CURRENT_SOURCE_DIR}/src)
