#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/*_fuzzer.cc, clang, ASan+UBSan) and runs each on a working copy of
# its seed corpus (fuzz/corpus/<target without _fuzzer>).
#   scripts/fuzz.sh                      every target for FUZZ_SECONDS (default 25) — CI's short pass
#   FUZZ_SECONDS=3600 scripts/fuzz.sh    longer, by hand
#   FUZZ_RUNS=10000000 scripts/fuzz.sh tracedat_fuzzer   a fixed number of executions, one target
#                                        (with FUZZ_SECONDS too: whichever comes first)
# Seeds are small on purpose (a few KB; see fuzz/corpus/README.md): libFuzzer's max_len defaults to
# the largest seed, and every execution re-parses the whole input.
# Knobs: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_JOBS (parallel targets, default 1), JOBS (make).
# A crash leaves its input in $FUZZ_BUILD_DIR/artifacts/<target>/ and makes the script fail; copy it to
# tests/data/regress/<target>/ once fixed, where tests/fuzz_regress_test.cc replays it in every build.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
SECONDS_PER=${FUZZ_SECONDS:-25}
[ -n "${FUZZ_RUNS:-}" ] && [ -z "${FUZZ_SECONDS:-}" ] && SECONDS_PER=0
CC=${CC_FUZZ:-clang} CXX=${CXX_FUZZ:-clang++} cmake -S . -B "$BUILD" -DEXITSCOPE_FUZZ=ON -DEXITSCOPE_BENCH=OFF \
  -DCMAKE_C_COMPILER="${CC_FUZZ:-clang}" -DCMAKE_CXX_COMPILER="${CXX_FUZZ:-clang++}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "${JOBS:-2}" --target fuzzers >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/*_fuzzer.cc; do targets+=("$(basename "$f" .cc)"); done
fi
run_one() {
  local t=$1 seeds=fuzz/corpus/${1%_fuzzer} work=$BUILD/corpus/${1%_fuzzer} art=$BUILD/artifacts/$1/
  mkdir -p "$work" "$art"
  [ -d "$seeds" ] && cp -n "$seeds"/* "$work"/ 2>/dev/null || true
  local limit=(-max_total_time="$SECONDS_PER")
  [ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS" -max_total_time="$SECONDS_PER")
  # The format's magic strings and keywords (fuzz/dict/), which random mutation rarely spells.
  local dict=fuzz/dict/${1%_fuzzer}.dict
  [ -f "$dict" ] && limit+=(-dict="$dict")
  # -rss_limit_mb: a reader must never need more than this for a small input.
  # -purge_allocator_interval=-1: once peak RSS passes half that limit libFuzzer hands ASan's freed
  # memory back to the OS every second, and every input then faults its pages in again: the
  # threaded differential targets (~500 MB with ASan's quarantine) ran 2-4x slower from then on.
  if "$BUILD/$t" "${limit[@]}" -rss_limit_mb=1024 -purge_allocator_interval=-1 -print_final_stats=1 \
       -artifact_prefix="$art" "$work" >"$BUILD/$t.log" 2>&1; then
    echo "fuzz: $t ok: $(grep -E '^stat::number_of_executed_units' "$BUILD/$t.log" | awk '{print $2}') executions"
  else
    echo "fuzz: $t FAILED — see $BUILD/$t.log, input in $art"; tail -30 "$BUILD/$t.log"; return 1
  fi
}
rc=0
running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "${FUZZ_JOBS:-1}" ]; then wait -n || rc=1; running=$((running - 1)); fi
done
while [ "$running" -gt 0 ]; do wait -n || rc=1; running=$((running - 1)); done
exit $rc
