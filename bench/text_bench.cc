// Text reading speed on the dual-5000 renderings (375,873 lines each, gzip): trace-cmd report
// (libtraceevent plugin dialect), perf script and the kernel trace file, to typed KvmEvents.
// Inflating is part of the cost users pay, so it is measured with the parse.
#include <benchmark/benchmark.h>

#include <string>

#include "model/event_source.h"
#include "pipeline/input_detector.h"

namespace {

const std::string kDir = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/dual-5000/";

void BM_TextKvmEvents(benchmark::State& state, const char* file) {
  uint64_t lines = 0;
  for (auto _ : state) {
    auto src = exitscope::OpenKvmEventSource(kDir + file, exitscope::InputFormat::kText);
    if (!src.ok()) {
      state.SkipWithError(src.error().message.c_str());
      return;
    }
    exitscope::KvmEvent e;
    while ((*src)->Next(&e, nullptr)) {
    }
    lines += 375873;  // every line of the file is read (README: 375,873 events in each form)
  }
  state.counters["lines/s"] = benchmark::Counter(static_cast<double>(lines), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_TextKvmEvents, trace_cmd_report, "trace-cmd-report.txt.gz")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TextKvmEvents, perf_script, "perf-script.txt.gz")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TextKvmEvents, kernel_trace, "kernel-trace.txt.gz")->Unit(benchmark::kMillisecond);

}  // namespace
