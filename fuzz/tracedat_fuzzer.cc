// libFuzzer entry for FuzzTraceDat (fuzz/fuzz_targets.h); seeds in fuzz/corpus/tracedat/.
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return exitscope::FuzzTraceDat(data, size); }
