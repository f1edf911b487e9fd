// One function per reader under fuzzing: bytes in, the reader (and what `report`/`dump` do after it)
// run to the end; never crashes, never reads out of bounds, never allocates without bound.
// In: arbitrary bytes. Out: 0 (libFuzzer's convention). Assumption: single-threaded callers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace exitscope {

int FuzzTraceDat(const uint8_t* data, size_t size);        // whole trace.dat → report
int FuzzRingBufferPage(const uint8_t* data, size_t size);  // one ring-buffer page
int FuzzEventFormat(const uint8_t* data, size_t size);     // tracefs format text
int FuzzTracingData(const uint8_t* data, size_t size);     // tracing-data block (v6 / perf)
int FuzzPerfData(const uint8_t* data, size_t size);        // whole perf.data → report
int FuzzText(const uint8_t* data, size_t size);            // trace text (3 dialects, gzip) → report
int FuzzTraceDatSliced(const uint8_t* data, size_t size);  // sliced vs sequential trace.dat reader
int FuzzPerfDataRounds(const uint8_t* data, size_t size);  // parallel vs sequential perf.data reader

struct FuzzTarget {
  std::string name;  // fuzz/corpus/<name>, tests/data/regress/<name>
  int (*run)(const uint8_t* data, size_t size);
};
const std::vector<FuzzTarget>& FuzzTargets();

}  // namespace exitscope
