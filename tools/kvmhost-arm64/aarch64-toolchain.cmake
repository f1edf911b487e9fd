# CMake toolchain for the arm64 cross build of exitscope (tools/kvmhost-arm64/cross-build.sh): Debian's
# cross compiler (crossbuild-essential-arm64: aarch64-linux-gnu-gcc/g++ 12 with its own libc and
# libstdc++ in /usr/aarch64-linux-gnu) plus the arm64 -dev packages unpacked into
# EXITSCOPE_ARM64_SYSROOT (tools/kvmhost-arm64/arm64-debs.sh) for zstd, zlib, libelf, fmt, json, CLI11.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
if(NOT EXITSCOPE_ARM64_SYSROOT)
  set(EXITSCOPE_ARM64_SYSROOT "$ENV{EXITSCOPE_ARM64_SYSROOT}")
endif()
if(NOT EXITSCOPE_ARM64_SYSROOT)
  message(FATAL_ERROR "set EXITSCOPE_ARM64_SYSROOT to arm64-debs.sh's CACHE/sysroot")
endif()
set(ENV{EXITSCOPE_ARM64_SYSROOT} "${EXITSCOPE_ARM64_SYSROOT}")  # for try_compile's own runs
set(CMAKE_FIND_ROOT_PATH "${EXITSCOPE_ARM64_SYSROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# pkg-config (libzstd, libelf) looks only at the arm64 .pc files, and prefixes their paths.
set(ENV{PKG_CONFIG_LIBDIR}
    "${EXITSCOPE_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${EXITSCOPE_ARM64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${EXITSCOPE_ARM64_SYSROOT}")
# libelf.so needs libz.so at link time; both live in the unpacked sysroot, not the cross libc's.
set(CMAKE_EXE_LINKER_FLAGS_INIT
    "-Wl,-rpath-link,${EXITSCOPE_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu -Wl,-rpath-link,${EXITSCOPE_ARM64_SYSROOT}/lib/aarch64-linux-gnu")
