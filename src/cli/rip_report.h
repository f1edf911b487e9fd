// `report --by rip` and `report --folded FILE`: the guest-RIP view of a trace, kept out of
// report_command.cc so the report command only gains a few lines. Also the guest-symbol options that
// `report` and `advise` share.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "cli/filter_options.h"
#include "model/event_source.h"
#include "symbols/guest_symbolizer.h"
#include "pipeline/input_detector.h"

namespace exitscope {

struct GuestSymbolArgs {
  GuestSymbolOptions options;
  std::string slide_text;
};
// --guest-kallsyms, --guest-system-map, --guest-vmlinux, --guest-kaslr-slide.
void AddGuestSymbolOptions(CLI::App& app, GuestSymbolArgs* args);
// Parses --guest-kaslr-slide into args->options.slide; a usage Error when it is not hex.
Status ResolveGuestSymbolArgs(GuestSymbolArgs* args);

struct RipReportArgs {
  GuestSymbolArgs symbols;
  std::string folded;  // --folded FILE ("-" = stdout)
};
void AddRipReportOptions(CLI::App& app, RipReportArgs* args);

struct RipReportRequest {
  std::string path;
  InputFormat format = InputFormat::kAuto;
  Filters filters;  // --pid, --vcpu, --reason; --top = RIPs per reason (0 = default 10)
  bool json = false;
  bool table = true;     // false with --folded alone: only the folded file
  unsigned threads = 1;  // decoding threads for an uncompressed trace.dat (DecodeThreads)
  ClockOptions clock;    // --tsc-khz
};
int RunRipReport(const RipReportRequest& request, RipReportArgs args);

}  // namespace exitscope
