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

int RunBenchCommand(int argc, char** argv) {
  kvmbench::BenchOptions options;
  bool json = false;
  bool list = false;
  std::string compare, observe;
  uint64_t repeats = 5;
  CLI::App app{"exitscope bench: what each VM exit type costs on this host's KVM", "exitscope bench"};
  app.footer(
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
      "                                           # what each way of watching exits adds per exit\n\n"
      "Exit status: 0 done; 64 bad option; 69 no /dev/kvm (or KVM cannot run the guest);\n"
      "77 permission denied on /dev/kvm.");
  app.add_option("--test", options.tests, "run only this test (repeatable); see --list");
  app.add_flag("--list", list, "list the tests and the exit each is meant to cause");
  app.add_flag("--json", json, "print JSON (schema exitscope.bench/1) instead of the table");
  app.add_option("--compare", compare, "show the change in cycles/iter against a --json baseline")
      ->check(CLI::ExistingFile);
  app.add_option("--iterations", options.fixed_iterations, "run exactly N iterations per test, once (for recordings)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  app.add_option("--min-time-ms", options.min_time_ms, "grow iterations until the loop took this long")
      ->capture_default_str();
  app.add_option("--max-iterations", options.max_iterations, "cap for the growing iteration count")
      ->capture_default_str();
  app.add_option("--device", options.device, "the KVM device")->capture_default_str();
  app.add_option("--observe", observe,
                 "run the tests under each observer in turn (none,stats,bpf,tracefs-minimal,tracefs,perf) and "
                 "show the cycles each adds per exit");
  app.add_option("--repeat", repeats, "with --observe: runs per observer (interleaved)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000}))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ExitOnParseError(app, e);
  }
  if (list) {
    kvmbench::PrintTestList(stdout);
    return FinishStdout(kExitOk);
  }
  if (!observe.empty()) {
    auto modes = ParseObserveModes(observe);
    if (!modes) return PrintError(modes.error());
    auto observed = RunObservedBench(options, *modes, repeats);
    if (!observed) return PrintError(observed.error());
    const std::string out = json ? ObservedBenchJson(*observed).dump(2) + "\n" : RenderObservedBenchText(*observed);
    std::fputs(out.c_str(), stdout);
    return FinishStdout(kExitOk);
  }
  kvmbench::Baseline baseline;
  if (!compare.empty()) {
    auto loaded = kvmbench::LoadBaseline(compare);
    if (!loaded) return PrintError(loaded.error());
    baseline = std::move(loaded.value());
  }
  auto report = kvmbench::RunBench(options);
  if (!report) return PrintError(report.error());
  const kvmbench::Baseline* base = compare.empty() ? nullptr : &baseline;
  if (json) {
    std::printf("%s\n", kvmbench::ToJson(*report, base).dump(2).c_str());
  } else {
    kvmbench::PrintTable(*report, base, stdout);
  }
  return FinishStdout(kExitOk);
}

}  // namespace exitscope
