# The in-kernel exit counter of `top --mode bpf` / `bench --observe bpf` (issue 16): clang's BPF
# target compiles src/observe/bpf/kvm_exits.bpf.c, `bpftool gen skeleton` embeds the object in a
# header, libbpf (its static archive, so no .so has to travel with the binary) loads it. Without the
# tools the build goes on and the BPF mode says at run time that it was not built.
find_program(EXITSCOPE_BPF_CLANG NAMES clang clang-14)
find_program(EXITSCOPE_BPFTOOL bpftool PATHS /usr/sbin /sbin)
find_library(EXITSCOPE_LIBBPF_STATIC NAMES libbpf.a)
find_path(EXITSCOPE_LIBBPF_INCLUDE bpf/libbpf.h)
if(CMAKE_CROSSCOMPILING OR NOT EXITSCOPE_BPF_CLANG OR NOT EXITSCOPE_BPFTOOL OR NOT EXITSCOPE_LIBBPF_STATIC
   OR NOT EXITSCOPE_LIBBPF_INCLUDE)
  message(STATUS "BPF observer not built (clang/bpftool/libbpf-dev missing or cross build): "
                 "`top --mode bpf` will say so; scripts/install-deps.sh installs them")
  return()
endif()
# <asm/types.h> for the BPF target: the host's multiarch include directory.
execute_process(COMMAND ${CMAKE_C_COMPILER} -print-multiarch OUTPUT_VARIABLE _bpf_multiarch
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT _bpf_multiarch)
  set(_bpf_multiarch ${CMAKE_LIBRARY_ARCHITECTURE})
endif()
set(_bpf_src ${CMAKE_CURRENT_SOURCE_DIR}/src/observe/bpf/kvm_exits.bpf.c)
set(_bpf_obj ${CMAKE_CURRENT_BINARY_DIR}/generated/kvm_exits.bpf.o)
set(_bpf_skel ${CMAKE_CURRENT_BINARY_DIR}/generated/kvm_exits.skel.h)
add_custom_command(
  OUTPUT ${_bpf_skel}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/generated
  COMMAND ${EXITSCOPE_BPF_CLANG} -O2 -g -Wall -target bpf -I/usr/include/${_bpf_multiarch}
          -I${CMAKE_CURRENT_SOURCE_DIR}/src -c ${_bpf_src} -o ${_bpf_obj}
  COMMAND sh -c "${EXITSCOPE_BPFTOOL} gen skeleton ${_bpf_obj} name kvm_exits > ${_bpf_skel}.tmp && mv ${_bpf_skel}.tmp ${_bpf_skel}"
  DEPENDS ${_bpf_src} ${CMAKE_CURRENT_SOURCE_DIR}/src/observe/bpf_exit_abi.h
  COMMENT "BPF: kvm_exits.bpf.c -> kvm_exits.skel.h"
  VERBATIM)
add_custom_target(exitscope_bpf_skel DEPENDS ${_bpf_skel})
add_dependencies(exitscope_core exitscope_bpf_skel)
# Only the loader sees the skeleton, so only it is rebuilt when the program changes.
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/src/observe/bpf_exit_reader.cc PROPERTIES
                            COMPILE_DEFINITIONS EXITSCOPE_HAVE_BPF=1 OBJECT_DEPENDS ${_bpf_skel})
target_link_libraries(exitscope_core PUBLIC ${EXITSCOPE_LIBBPF_STATIC} PkgConfig::LIBELF ZLIB::ZLIB)
