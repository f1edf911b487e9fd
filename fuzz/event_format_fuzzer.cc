// libFuzzer entry for FuzzEventFormat (fuzz/fuzz_targets.h); seeds in fuzz/corpus/event_format/.
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return exitscope::FuzzEventFormat(data, size);
}
