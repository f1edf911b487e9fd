// perf.data reading speed on the dual-5000 recording (375,873 samples, 37 MB): the sample stream
// alone (header walk + round sort) and the full typed pipeline (stream + kvm decoder).
#include <benchmark/benchmark.h>

#include <string>

#include "model/event_source.h"
#include "sources/perfdata/perfdata_reader.h"
#include "sources/perfdata/perfdata_stream.h"
#include "pipeline/input_detector.h"

namespace {

const std::string kPerfData = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/dual-5000/perf.data";

void BM_PerfDataSampleStream(benchmark::State& state) {
  uint64_t n = 0;
  for (auto _ : state) {
    exitscope::Diagnostics diag;
    auto f = exitscope::PerfDataFile::Open(kPerfData, &diag);
    if (!f.ok()) {
      state.SkipWithError(f.error().message.c_str());
      return;
    }
    exitscope::PerfSampleStream stream(f->get(), &diag);
    exitscope::PerfTimedSample s;
    while (stream.Next(&s, nullptr)) ++n;
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PerfDataSampleStream)->Unit(benchmark::kMillisecond);

void BM_PerfDataKvmEvents(benchmark::State& state) {
  uint64_t n = 0;
  for (auto _ : state) {
    auto src = exitscope::OpenKvmEventSource(kPerfData, exitscope::InputFormat::kPerfData);
    if (!src.ok()) {
      state.SkipWithError(src.error().message.c_str());
      return;
    }
    exitscope::KvmEvent e;
    while ((*src)->Next(&e, nullptr)) ++n;
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PerfDataKvmEvents)->Unit(benchmark::kMillisecond);

}  // namespace
