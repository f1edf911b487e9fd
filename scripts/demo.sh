#!/usr/bin/env bash
# The main job on a bundled real trace: installs the build dependencies, builds exitscope, and
# reports where the recorded KVM guest spent its exits. Pass another trace as $1 to report that.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
bash scripts/install-deps.sh --build
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target exitscope
sample=${1:-samples/bench-svm/trace.dat}
echo "+ exitscope report $sample"
"$BUILD_DIR/exitscope" report "$sample"
