// `exitscope bench`: measures what each kind of VM exit costs on this host, from inside a tiny
// built-in guest (like kvm-unit-tests' vmexit, without QEMU). See src/kvmbench/.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "cli/filter_options.h"
#include "report/bench_reporter.h"
#include "kvmbench/bench_runner.h"
#include "observe/bench_observe.h"

namespace exitscope {
namespace {

constexpr char kBenchFooter[] =
    "Measure the guest-side cost of each VM exit type on this host's KVM.\n"
    "A built-in 64-bit guest runs each test's exiting instruction in a loop and reads the TSC;\n"
    "the iteration count doubles until the loop ran --min-time-ms (or is --iterations).\n"
    "Tests the host cannot run are listed as skipped, with the reason.\n"
    "Needs read/write access to /dev/kvm.\n\n"
    "Examples:\n"
    "  exitscope bench                          # every test\n"
    "  exitscope bench --test cpuid --test hlt  # pick tests (--list shows them)\n"
    "  exitscope bench --json > base.json       # later: exitscope bench --compare base.json\n"
    "  exitscope bench --test cpuid --observe none,stats,bpf,tracefs-minimal,tracefs,perf\n"
    "                                           # what each way of watching exits adds per exit\n"
    "  exitscope bench --test cpuid --observe none,tracefs,top,record\n"
    "                                           # exitscope's own top and record, run as commands\n\n"
    "Exit status: 0 done; 64 bad option; 69 no /dev/kvm (or KVM cannot run the guest);\n"
    "77 permission denied on /dev/kvm.";

// What the command line gave, bound to the options before parsing.
struct BenchArgs {
  kvmbench::BenchOptions options;
  bool json = false;
  bool list = false;
  std::string compare, observe;
  uint64_t repeats = 5;
};

void DeclareBenchOptions(CLI::App& app, BenchArgs* a) {
  kvmbench::BenchOptions& options = a->options;
  app.add_option("--test", options.tests, "run only this test (repeatable); see --list");
  app.add_flag("--list", a->list, "list the tests and the exit each is meant to cause");
  app.add_flag("--json", a->json, "print JSON (schema exitscope.bench/1) instead of the table");
  app.add_option("--compare", a->compare, "show the change in cycles/iter against a --json baseline")
      ->check(CLI::ExistingFile);
  app.add_option("--iterations", options.fixed_iterations, "run exactly N iterations per test, once (for recordings)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  app.add_option("--min-time-ms", options.min_time_ms, "grow iterations until the loop took this long")
      ->capture_default_str();
  app.add_option("--max-iterations", options.max_iterations, "cap for the growing iteration count")
      ->capture_default_str();
  app.add_option("--device", options.device, "the KVM device")->capture_default_str();
  app.add_option("--observe", a->observe,
                 "run the tests under each observer in turn (none,stats,bpf,tracefs-minimal,tracefs,top,record,perf) "
                 "and show the cycles each adds per exit");
  app.add_option("--repeat", a->repeats, "with --observe: runs per observer (interleaved)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000}))
      ->capture_default_str();
}

// --observe: the tests under each observer in turn.
int RunObserved(const BenchArgs& a) {
  auto modes = ParseObserveModes(a.observe);
  if (!modes) return PrintError(modes.error());
  auto observed = RunObservedBench(a.options, *modes, a.repeats);
  if (!observed) return PrintError(observed.error());
  const std::string out = a.json ? ObservedBenchJson(*observed).dump(2) + "\n" : RenderObservedBenchText(*observed);
  std::fputs(out.c_str(), stdout);
  return FinishStdout(kExitOk);
}

}  // namespace

int RunBenchCommand(int argc, char** argv) {
  BenchArgs a;
  CLI::App app{"exitscope bench: what each VM exit type costs on this host's KVM", "exitscope bench"};
  app.footer(kBenchFooter);
  DeclareBenchOptions(app, &a);
  if (auto rc = ParseArgs(app, argc, argv)) return *rc;
  if (a.list) {
    kvmbench::PrintTestList(stdout);
    return FinishStdout(kExitOk);
  }
  if (!a.observe.empty()) return RunObserved(a);
  kvmbench::Baseline baseline;
  if (!a.compare.empty()) {
    auto loaded = kvmbench::LoadBaseline(a.compare);
    if (!loaded) return PrintError(loaded.error());
    baseline = std::move(loaded.value());
  }
  auto report = kvmbench::RunBench(a.options);
  if (!report) return PrintError(report.error());
  const kvmbench::Baseline* base = a.compare.empty() ? nullptr : &baseline;
  if (a.json) {
    std::printf("%s\n", kvmbench::ToJson(*report, base).dump(2).c_str());
  } else {
    kvmbench::PrintTable(*report, base, stdout);
  }
  return FinishStdout(kExitOk);
}

}  // namespace exitscope
