#include "kvmbench/bench_runner.h"

#include <sys/utsname.h>

#include <algorithm>
#include <memory>

#include "kvmbench/bench_vm.h"

#if defined(__x86_64__) || defined(__aarch64__)

namespace exitscope::kvmbench {
namespace {

std::string SkipReason(const BenchTest& test, const KvmHost& host) {
  if (test.needs_user_msr && !host.user_msr) {
    return "kernel lacks KVM_CAP_X86_USER_SPACE_MSR / KVM_CAP_X86_MSR_FILTER (Linux >= 5.10)";
  }
  if (test.needs_ioeventfd && !host.ioeventfd) return "kernel lacks KVM_CAP_IOEVENTFD";
  if (test.guest_debug && !host.guest_debug) return "kernel lacks KVM_CAP_SET_GUEST_DEBUG";
  // KVM's emulator does not perform hypercalls: em_hypercall (arch/x86/kvm/emulate.c) only has
  // kvm_fix_hypercall patch the instruction to the vendor's native one and re-executes it, counting
  // on the CPU to exit. kvm_pvm's native form is again not executable by our emulated guest, so it
  // spins at the VMCALL forever (seen on 6.18 kvm_pvm: kvm_emulate_insn 0f 01 c1 at one RIP, no
  // kvm_hypercall, until the 60 s guard).
  if (test.name == "vmcall" && host.EmulatesGuest()) {
    return "this KVM (" + (host.kvm_module.empty() ? std::string("no VMX/SVM") : host.kvm_module) +
           ") runs the guest in its instruction emulator, which never executes a hypercall: it "
           "re-patches VMCALL and retries it forever";
  }
  return {};
}

// --test names → tests, in the order given; none: every test.
Result<std::vector<const BenchTest*>> SelectTests(const std::vector<std::string>& names) {
  std::vector<const BenchTest*> selected;
  if (names.empty()) {
    for (const auto& t : BenchTests()) selected.push_back(&t);
    return selected;
  }
  for (const auto& name : names) {
    const BenchTest* t = FindBenchTest(name);
    if (!t) {
      return MakeError(kExitUsage, "bench.unknown-test", "unknown bench test '" + name + "'",
                       "`exitscope bench --list` shows the tests");
    }
    selected.push_back(t);
  }
  return selected;
}

// Runs one test's loop, doubling the iterations until it took min_time_ms (or fixed_iterations once).
Status MeasureTest(const BenchTest& test, const BenchOptions& options, const KvmHost& host, BenchVm* vm,
                   BenchResult* r) {
  if (Status s = vm->SetGuestDebug(test.guest_debug); !s) return s;
  const uint64_t goal_cycles = options.min_time_ms * vm->tsc_khz();
  const uint64_t entry = GuestAddress(Entry(test, host.vendor));
  uint64_t n = options.fixed_iterations > 0 ? options.fixed_iterations : 1;
  for (;;) {
    auto run = vm->Run(entry, n);
    if (!run) return run.error();
    ++r->runs;
    r->iterations = n;
    r->cycles = run->cycles;
    r->userspace_exits = run->userspace_exits;
    r->ioeventfd_signals = run->ioeventfd_signals;
    r->kvm_stats = run->kvm_stats;
    if (options.fixed_iterations > 0 || run->cycles >= goal_cycles || n >= options.max_iterations) break;
    n = std::min(options.max_iterations, n * 2);
  }
  r->cycles_per_iter = static_cast<double>(r->cycles) / static_cast<double>(r->iterations);
  if (vm->tsc_khz() > 0) r->ns_per_iter = r->cycles_per_iter * 1e6 / static_cast<double>(vm->tsc_khz());
  if (auto it = r->kvm_stats.find("exits"); it != r->kvm_stats.end()) {
    r->exits = it->second;
    r->exits_known = true;
  }
  return {};
}

}  // namespace

Result<BenchReport> RunBench(const BenchOptions& options) {
  auto selected = SelectTests(options.tests);
  if (!selected) return selected.error();
  auto host = OpenKvmHost(options.device);
  if (!host) return host.error();

  BenchReport report;
  report.device = options.device;
  report.vendor_id = (*host)->vendor_id;
  report.fixed_iterations = options.fixed_iterations;
  report.min_time_ms = options.min_time_ms;
  report.kvm_module = (*host)->kvm_module;
  report.emulated_guest = (*host)->EmulatesGuest();
  utsname uts = {};
  if (uname(&uts) == 0) report.kernel_release = uts.release;

  std::unique_ptr<BenchVm> vms[2];  // indexed by VmKind, created on first use
  for (const BenchTest* test : *selected) {
    BenchResult r;
    r.name = test->name;
    r.description = test->description;
    r.intended_exit = test->intended_exit;
    r.exit_rip = GuestAddress(ExitInsn(*test, (*host)->vendor));
    r.skip_reason = SkipReason(*test, **host);
    if (!r.skip_reason.empty()) {
      report.results.push_back(std::move(r));
      continue;
    }
    auto& vm = vms[static_cast<int>(test->vm)];
    if (!vm) {
      auto created = BenchVm::Create(**host, test->vm);
      if (!created) return created.error();
      vm = std::move(created.value());
      report.tsc_khz = vm->tsc_khz();
    }
    if (Status s = MeasureTest(*test, options, **host, vm.get(), &r); !s) return s.error();
    report.results.push_back(std::move(r));
  }
  return report;
}

}  // namespace exitscope::kvmbench
#else
namespace exitscope::kvmbench {
// The built-in guests and their VMMs are x86-64 (guest_code.S, bench_vm.cc) and arm64
// (guest_code_arm64.S, bench_vm_arm64.cc); other builds read and report traces only.
Result<BenchReport> RunBench(const BenchOptions&) {
  return MakeError(kExitUnavailable, "bench.unsupported-arch",
                   "exitscope bench: this build has no built-in guest for its architecture",
                   "the bench runs on x86-64 and arm64 builds; here, record a workload with `exitscope record`");
}
}  // namespace exitscope::kvmbench
#endif
