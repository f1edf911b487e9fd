// libFuzzer entry for FuzzPerfData (fuzz/fuzz_targets.h); seeds in fuzz/corpus/perfdata/.
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return exitscope::FuzzPerfData(data, size); }
