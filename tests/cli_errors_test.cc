// Bad arguments are usage errors, per command: exit 64, "error: … [tag]" and a hint naming the valid
// values; never a silent rc 0 (issue 12). Also the input and tracefs refusals the helps promise.
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace {

const std::string kShared = EXITSCOPE_SHARED_DIR;
const std::string kVmx = "'" + kShared + "/traces/hip24-vmx/host-1vcpu-6.5.dat'";
const std::string kSvm = "'" + kShared + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat'";
const std::string kSvmText = "'" + kShared + "/traces/nested-svm-6.1/kvmprobe-200.trace-cmd-report.txt'";

struct ErrRun {
  int status;
  std::string err;  // stderr
};

ErrRun Exitscope(const std::string& args) {
  auto r = exitscope::testing::RunCommand(std::string(EXITSCOPE_BINARY) + " " + args + " 2>&1 >/dev/null");
  return {r.status, r.out};
}

void ExpectUsage(const std::string& args, const std::string& hint_part) {
  ErrRun r = Exitscope(args);
  EXPECT_EQ(r.status, 64) << args << "\n" << r.err;
  EXPECT_NE(r.err.find("error: "), std::string::npos) << args;
  EXPECT_NE(r.err.find("hint: "), std::string::npos) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(hint_part), std::string::npos) << args << "\n" << r.err;
}

TEST(CliErrors, ReportRejectsBadFilterValues) {
  ExpectUsage("report --from 10 --to 5 " + kVmx, "give --from < --to");
  ExpectUsage("report --from 3 --to 3 " + kVmx, "give --from < --to");
  ExpectUsage("report --top -1 " + kVmx, "an integer from 1 to");
  ExpectUsage("report --top 99999999999999999999 " + kVmx, "an integer from 1 to");
  ExpectUsage("report --from nan " + kVmx, "a number from 0 to 1e9");
  ExpectUsage("report --to inf " + kVmx, "a number from 0 to 1e9");
  ExpectUsage("report --from -2 " + kVmx, "a number from 0 to 1e9");
  ExpectUsage("report --to 1e300 " + kVmx, "a number from 0 to 1e9");
  ExpectUsage("report --from two " + kVmx, "a number from 0 to 1e9");
  ExpectUsage("report --pid 0 " + kVmx, "from 1 to 4194304");
  ExpectUsage("report --pid 5000000 " + kVmx, "from 1 to 4194304");
  ExpectUsage("report --vcpu -1 " + kVmx, "from 0 to 16383");
  ExpectUsage("report --reason NOPE " + kVmx, "EPT_VIOLATION");
}

// One output form at a time, and no filter that an output would ignore in silence.
TEST(CliErrors, OutputFormsExcludeEachOtherAndOpenMetricsTakesNoFilter) {
  ExpectUsage("report --json --csv " + kVmx, "give one output form");
  ExpectUsage("report --openmetrics --html x.html " + kVmx, "give one output form");
  ExpectUsage("report --openmetrics --pid 4242 " + kVmx, "use --json / --csv for a filtered report");
  ExpectUsage("report --openmetrics --by vm " + kVmx, "use --json / --csv for a filtered report");
}

TEST(CliErrors, RipReportSharesTheValidation) {
  ExpectUsage("report --by rip --top -1 " + kVmx, "an integer from 1 to");
  ExpectUsage("report --by rip --pid -5 " + kVmx, "from 1 to 4194304");
  ExpectUsage("report --folded - --reason NOPE " + kVmx, "EPT_VIOLATION");
}

// --reason takes any spelling: the other ISA's name maps to its equivalent, or is refused.
TEST(CliErrors, ReasonOfTheOtherIsaMapsOrIsRefused) {
  auto npf = exitscope::testing::RunCommand(std::string(EXITSCOPE_BINARY) + " report --reason npf " + kVmx);
  EXPECT_EQ(npf.status, 0);
  EXPECT_NE(npf.out.find("filters: reason npf (= EPT_VIOLATION)"), std::string::npos) << npf.out;
  EXPECT_NE(npf.out.find("\n  EPT_VIOLATION "), std::string::npos) << "npf on VMX = EPT_VIOLATION";
  auto io = exitscope::testing::RunCommand(std::string(EXITSCOPE_BINARY) + " report --reason IO_INSTRUCTION " + kSvm);
  EXPECT_EQ(io.status, 0);
  EXPECT_NE(io.out.find("\n  io "), std::string::npos) << io.out;
  auto msr = exitscope::testing::RunCommand(std::string(EXITSCOPE_BINARY) + " report --json --reason msr " + kVmx);
  EXPECT_NE(msr.out.find("\"MSR_WRITE\""), std::string::npos) << "msr on VMX = MSR_READ + MSR_WRITE";
  ExpectUsage("report --reason read_cr4 " + kVmx, "use a VMX name");
  ExpectUsage("report --reason EPT_MISCONFIG " + kSvm, "use an SVM name");
  ExpectUsage("report --reason EPT_MISCONFIG " + kSvmText, "use an SVM name");  // ISA learned from the text
  ExpectUsage("report --by rip --reason read_cr4 " + kVmx, "use a VMX name");
}

TEST(CliErrors, DirectoryInputIsNoInputWithHint) {
  for (const char* cmd : {"report", "dump", "advise"}) {
    ErrRun r = Exitscope(std::string(cmd) + " '" + kShared + "/traces/nested-svm-6.1/dual-5000'");
    EXPECT_EQ(r.status, 66) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("is a directory"), std::string::npos) << cmd;
    EXPECT_NE(r.err.find("did you mean '"), std::string::npos) << cmd << ": dual-5000 holds a trace.dat";
  }
}

TEST(CliErrors, DumpReadsTextAndValidatesItsLimit) {
  auto r = exitscope::testing::RunCommand(std::string(EXITSCOPE_BINARY) + " dump --event kvm_exit " + kSvmText);
  EXPECT_EQ(r.status, 0);
  // Oracle: the text's own kvm_exit lines.
  auto want = exitscope::testing::ReadCommand("grep -c ' kvm_exit: ' " + kSvmText);
  size_t lines = 0;
  for (char c : r.out) lines += c == '\n';
  EXPECT_EQ(std::to_string(lines) + "\n", want);
  EXPECT_NE(r.out.find("kvm_exit: exit_reason=1024 (npf)"), std::string::npos);
  ExpectUsage("dump --limit -3 " + kSvmText, "an integer from 0 to");
  ExpectUsage("dump --event kvm_nonsense " + kSvmText, "kvm_exit");
}

TEST(CliErrors, TopAndRecordRefuseABadTracefsAs69) {
  for (const char* cmd : {"top -n 1", "record -o /tmp/exitscope-cli-errors.dat --duration 1"}) {
    ErrRun r = Exitscope(std::string(cmd) + " --tracefs /nonexistent");
    EXPECT_EQ(r.status, 69) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("is not a tracefs mount"), std::string::npos) << cmd;
    EXPECT_NE(r.err.find("hint: "), std::string::npos) << cmd;
  }
  ExpectUsage("top -n -1 --tracefs /nonexistent", "an integer from 0 to");
  ExpectUsage("top -p 0 --tracefs /nonexistent", "from 1 to 4194304");
  ExpectUsage("top --reason NOPE --tracefs /nonexistent", "EPT_VIOLATION");
}

// What CLI11 itself refuses gets the same shape: error, tag, and the option's help line as hint.
TEST(CliErrors, EveryCommandAnswersCli11RefusalsWithAHint) {
  ExpectUsage("report --by nope " + kVmx, "--by: group by: reason (default), vm, vcpu, cpu, rip");
  ExpectUsage("report", "FILE: trace.dat, perf.data or trace text");
  ExpectUsage("report --bogus " + kVmx, "--help` lists the options");
  ExpectUsage("dump --json=maybe " + kVmx, "--json");
  ExpectUsage("advise -j -1 " + kVmx, "-j,--threads: threads reading the input");
  ExpectUsage("top -d 0", "-d,--delay: seconds between refreshes (0.05..3600)");
  ExpectUsage("record -o /tmp/exitscope-cli-errors.dat --duration -1", "--duration: stop after S seconds");
  ExpectUsage("bench --iterations 0", "--iterations: run exactly N iterations");
}

// Issue 19: the slide was checked only with --by rip, and a negative one was taken.
TEST(CliErrors, KaslrSlideIsValidatedOnEveryReport) {
  ExpectUsage("report --guest-kaslr-slide zz " + kVmx, "e.g. --guest-kaslr-slide 0x1e600000");
  ExpectUsage("report --by rip --guest-kaslr-slide -0x200000 " + kVmx, "how far KASLR moved the kernel up");
  ExpectUsage("advise --guest-kaslr-slide 0x " + kVmx, "e.g. --guest-kaslr-slide 0x1e600000");
}

TEST(CliErrors, NoCommandIsAUsageErrorWithHint) { ExpectUsage("", "exitscope report trace.dat"); }

// report --by rip exited 65 with no word of it on stdout.
TEST(CliErrors, RipReportOfAPartialTraceSaysSoFirst) {
  auto r = exitscope::testing::RunCommand(std::string(EXITSCOPE_BINARY) + " report --by rip '" + kShared +
                                          "/traces/hip24-vmx/host-2vcpu-6.5.dat' 2>/dev/null");
  EXPECT_EQ(r.status, 65);
  EXPECT_EQ(r.out.rfind("PARTIAL RESULT: ", 0), 0u) << r.out.substr(0, 300);
  EXPECT_NE(r.out.find("exits lost their entry"), std::string::npos) << r.out.substr(0, 300);
}

}  // namespace
