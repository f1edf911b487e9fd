// libFuzzer entry for FuzzTracingData (fuzz/fuzz_targets.h); seeds in fuzz/corpus/tracing_data/.
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return exitscope::FuzzTracingData(data, size);
}
