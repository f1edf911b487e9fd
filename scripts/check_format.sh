#!/usr/bin/env bash
# The house layout (.clang-format, applied once over the C++ of src/, tests/, bench/, fuzz/): fails
# when a tracked C++ file differs from what clang-format makes of it, naming the files.
#   scripts/check_format.sh            check   (CTest format.clang_format)
#   scripts/check_format.sh --fix      rewrite them in place
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format)}
mapfile -t files < <(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'bench/*.cc' 'bench/*.h' \
                                  'fuzz/*.cc' 'fuzz/*.h' | grep -v '/data/')
if [ "${1:-}" = --fix ]; then
  "$CLANG_FORMAT" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$CLANG_FORMAT" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -ne 0 ]; then
  echo "check_format: ${#bad[@]} file(s) not in the house layout: ${bad[*]}"
  echo "hint: scripts/check_format.sh --fix"
  exit 1
fi
echo "check_format: ${#files[@]} files ok"
