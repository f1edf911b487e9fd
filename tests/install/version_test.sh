#!/bin/sh
# `exitscope --version` (label install): the project version and, from a git checkout, the commit it
# was built from; cmake/scripts/build_info.cmake gives an empty build (version alone) in a tarball,
# even one unpacked inside another git checkout, and EXITSCOPE_BUILD_ID wins over git.
# Usage: version_test.sh BIN SOURCE_DIR
set -eu
bin=$1 src=$2
fail() { echo "FAIL: $*"; exit 1; }
project=$(sed -n 's/^project(exitscope VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
out=$("$bin" --version)
case $out in "exitscope $project"*) ;; *) fail "--version says '$out', not exitscope $project" ;; esac
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  head=$(git -C "$src" rev-parse --short=12 HEAD)
  case $out in *"(build "*"$head"*")") ;; *) fail "--version says '$out', not the build of HEAD $head" ;; esac
fi
tmp=$(mktemp -d)
inside=$(mktemp -d "$(dirname "$bin")/tarball.XXXXXX")  # in the build tree, inside the checkout
trap 'rm -rf "$tmp" "$inside"' EXIT
for dir in "$tmp" "$inside"; do
  mkdir -p "$dir/exitscope-$project"
  cp "$src/CMakeLists.txt" "$dir/exitscope-$project/"
  cmake -DSOURCE_DIR="$dir/exitscope-$project" -DOUT="$dir/build_info.cc" -DBUILD_ID= \
        -P "$src/cmake/scripts/build_info.cmake"
  grep -q 'BuildId() { return ""; }' "$dir/build_info.cc" || fail "a tarball in $dir got: $(cat "$dir/build_info.cc")"
done
cmake -DSOURCE_DIR="$src" -DOUT="$tmp/given.cc" -DBUILD_ID=1.2-3deb -P "$src/cmake/scripts/build_info.cmake"
grep -q 'return "1.2-3deb"' "$tmp/given.cc" || fail "EXITSCOPE_BUILD_ID was not used: $(cat "$tmp/given.cc")"
echo "ok: $out"
