// libFuzzer entry for FuzzText (fuzz/fuzz_targets.h); seeds in fuzz/corpus/text/.
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return exitscope::FuzzText(data, size); }
