// libFuzzer entry for FuzzTraceDatSliced (fuzz/fuzz_targets.h); seeds in fuzz/corpus/tracedat_sliced/.
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return exitscope::FuzzTraceDatSliced(data, size);
}
