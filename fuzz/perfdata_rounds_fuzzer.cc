// libFuzzer entry for FuzzPerfDataRounds (fuzz/fuzz_targets.h); seeds in fuzz/corpus/perfdata_rounds/.
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return exitscope::FuzzPerfDataRounds(data, size);
}
