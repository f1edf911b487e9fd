#!/usr/bin/env bash
# cross-build.sh CACHE BUILD_DIR — builds exitscope for arm64 (the binary only) into BUILD_DIR
# with Debian's cross toolchain (aarch64-toolchain.cmake) against the arm64 packages that
# arm64-debs.sh unpacks into CACHE/sysroot. Prints the binary's path last. Uses ccache when present.
# -O1: the binary runs a few recordings under emulation, and the build is a second whole compile of
# the tree on a 2-core machine (-O3 took over 45 min for a third of it on this shared, loaded one).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${1:?usage: cross-build.sh CACHE BUILD_DIR} BUILD=${2:?usage: cross-build.sh CACHE BUILD_DIR}
"$HERE/arm64-debs.sh" "$CACHE" >&2
CACHE=$(cd "$CACHE" && pwd)
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$REPO" -B "$BUILD" -DCMAKE_TOOLCHAIN_FILE="$HERE/aarch64-toolchain.cmake" \
  -DEXITSCOPE_ARM64_SYSROOT="$CACHE/sysroot" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_C_FLAGS=-O1 \
  -DEXITSCOPE_BENCH=OFF \
  "${launcher[@]}" >&2
nice cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target exitscope >&2
file "$BUILD/exitscope" | grep -q 'ARM aarch64' || { echo "cross-build: $BUILD/exitscope is not arm64" >&2; exit 1; }
echo "$BUILD/exitscope"
