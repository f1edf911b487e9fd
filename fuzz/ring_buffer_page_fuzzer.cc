// libFuzzer entry for FuzzRingBufferPage (fuzz/fuzz_targets.h); seeds in fuzz/corpus/ring_buffer_page/.
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return exitscope::FuzzRingBufferPage(data, size);
}
