#include "report/text_reporter.h"
#include "report/text_table.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <vector>

namespace exitscope {
namespace {

using text::Count;
using text::Pct;
using text::Table;

// The unit of the report being rendered: every Dur of it prints that unit. Set for one
// RenderTextReport call (thread_local: reports rendered on other threads keep theirs).
thread_local TimeUnit t_unit = TimeUnit::kNs;

// A time of the report being rendered, in its unit (base/units.h).
std::string Dur(double v) { return FormatDuration(v, t_unit); }
std::string Dur(uint64_t v) { return FormatDuration(v, t_unit); }

struct UnitScope {
  explicit UnitScope(TimeUnit u) : saved(t_unit) { t_unit = u; }
  ~UnitScope() { t_unit = saved; }
  TimeUnit saved;
};

// COUNT is every exit; the time columns cover the timed ones, and UNTIMED (shown only when some exit
// has no time) says how many of COUNT they leave out. The time columns are handling time; BLOCKED
// (shown when some vCPU was blocked) is the halted time kept out of them. TO VMM only when the trace
// recorded kvm_userspace_exit.
std::string ReasonTable(const GroupReport& g, bool userspace_known) {
  const bool show_untimed = g.count != g.total.count;
  const bool show_blocked = g.blocked_ns != 0;
  std::vector<std::string> header = {"REASON", "COUNT"};
  if (show_untimed) header.push_back("UNTIMED");
  header.insert(header.end(), {"%EXITS", "TOTAL", "%TIME"});
  if (show_blocked) header.push_back("BLOCKED");
  header.insert(header.end(), {"MIN", "MEAN", "P50", "P90", "P99", "P99.9", "MAX"});
  if (userspace_known) header.push_back("TO VMM");
  Table t(header);
  auto add = [&](const std::string& name, uint64_t count, const DurationStats& s, std::string pct_count,
                 std::string pct_time, uint64_t blocked_ns, uint64_t user_count) {
    std::vector<std::string> row = {name, Count(count)};
    if (show_untimed) row.push_back(count != s.count ? Count(count - s.count) : "-");
    row.push_back(std::move(pct_count));
    if (s.count == 0) {
      row.insert(row.end(), show_blocked ? 10 : 9, "-");
    } else {
      row.insert(row.end(), {Dur(s.total_ns), std::move(pct_time)});
      if (show_blocked) row.push_back(blocked_ns ? Dur(blocked_ns) : "-");
      row.insert(row.end(), {Dur(s.min_ns), Dur(s.mean_ns), Dur(s.p50_ns), Dur(s.p90_ns), Dur(s.p99_ns), Dur(s.p999_ns),
                             Dur(s.max_ns)});
    }
    if (userspace_known) row.push_back(user_count ? Count(user_count) : "-");
    t.Add(std::move(row));
  };
  for (const auto& r : g.reasons)
    add(r.name, r.count, r.stats, Pct(r.pct_count), Pct(r.pct_time), r.blocked_ns, r.userspace_count);
  add("total", g.count, g.total, g.count ? "100.00%" : "-", g.total.total_ns ? "100.00%" : "-", g.blocked_ns,
      g.userspace_count);
  std::string out = t.Render("  ");
  if (g.reasons_hidden) out += fmt::format("  ({} more reasons not shown: --top)\n", g.reasons_hidden);
  return out;
}

// Where the BLOCKED column came from, and what the tables leave out, once per report.
std::string BlockedNote(const ReportTotals& t) {
  if (t.blocked_ns == 0) return {};
  std::string out = fmt::format("\nblocked (halted vCPUs waiting for work, not in TOTAL/%TIME/MEAN): {}",
                                FormatDuration(t.blocked_ns));
  if (t.wakeups) {
    out += fmt::format(" · kvm_vcpu_wakeup: {} halts, {} ended by polling, {} waited, {} spurious\n", Count(t.wakeups),
                       Count(t.wakeups_polled), Count(t.wakeups - t.wakeups_polled), Count(t.wakeups_invalid));
  } else {
    out +=
        "\n  kvm_vcpu_wakeup not recorded: a HLT exit's whole time counts as blocked (record\n"
        "  -e kvm:kvm_vcpu_wakeup to split polling, waiting and handling)\n";
  }
  return out;
}

// What made the result partial, in words, so the first line says it without reading the table.
std::string PartialCauses(const std::vector<DiagnosticCounter>& diagnostics) {
  struct Phrase {
    std::string_view one, many;
  };
  static const std::map<std::string_view, Phrase> kPhrases = {
      {"pair.lost_entry", {"exit lost its entry", "exits lost their entry"}},
      {"pair.entry_without_exit", {"entry without exit", "entries without exit"}},
      {"pair.exit_dropped_by_lost_events", {"open exit dropped by lost events", "open exits dropped by lost events"}},
      {"pair.resume_mismatch", {"exit resumed elsewhere (events lost)", "exits resumed elsewhere (events lost)"}},
      {"pair.exit_across_silence", {"exit across a recording silence", "exits across a recording silence"}},
  };
  std::string out;
  for (const auto& d : diagnostics) {
    if (d.severity == Severity::kInfo) continue;
    out += out.empty() ? "" : ", ";
    if (auto it = kPhrases.find(d.name); it != kPhrases.end()) {
      out += fmt::format("{} {}", Count(d.count), d.count == 1 ? it->second.one : it->second.many);
    } else if (d.name.ends_with(".missed_events") || d.name.ends_with(".lost_events")) {
      out += fmt::format("{} events lost while recording ({})", Count(d.count), d.name);
    } else {
      out += fmt::format("{} {}", d.name, Count(d.count));
    }
  }
  return out;
}

std::string SplitLine(uint64_t count, uint64_t ns, uint64_t user_count, uint64_t user_ns) {
  auto pct = [](uint64_t a, uint64_t b) { return b ? 100.0 * static_cast<double>(a) / b : 0.0; };
  return fmt::format("  handled in kernel: {} exits ({}), {} ({}) · went to the VMM: {} exits ({}), {} ({})\n",
                     Count(count - user_count), Pct(pct(count - user_count, count)), Dur(ns - user_ns),
                     Pct(pct(ns - user_ns, ns)), Count(user_count), Pct(pct(user_count, count)), Dur(user_ns),
                     Pct(pct(user_ns, ns)));
}

std::string_view DetailTitle(const std::string& kind) {
  static const std::map<std::string, std::string_view> kTitles = {
      {"msr", "MSR accesses (kvm_msr)"},
      {"pio", "port I/O (kvm_pio)"},
      {"mmio", "MMIO (kvm_mmio)"},
      {"fast_mmio", "fast MMIO (kvm_fast_mmio)"},
      {"cr", "control registers (kvm_cr)"},
      {"hypercall", "hypercalls (kvm_hypercall)"},
      {"userspace", "exits to the VMM (kvm_userspace_exit)"},
      {"apic", "APIC registers (APIC_WRITE / APIC_ACCESS / AVIC exit qualification, kvm_apic)"},
      {"vector", "exception and interrupt vectors (intr_info, EOI_INDUCED, SVM exception exits)"},
      {"dr", "debug registers (MOV DR exit qualification, SVM DR exits)"},
      {"cr_exit", "control registers (exit qualification; where kvm_cr was not recorded)"},
      {"io_exit", "port I/O (exit qualification; where kvm_pio was not recorded)"},
      {"ept", "EPT violations / NPF (exit qualification; GPA from kvm_page_fault or NPF exit_info2)"},
      {"sysreg", "arm64 system registers, (Op0,Op1,CRn,CRm,Op2) (kvm_sys_access / kvm_handle_sys_reg)"},
      {"hvc", "arm64 HVC calls by function (x0) and immediate (kvm_hvc_arm64)"},
      {"wfx", "arm64 WFI / WFE, is_wfe (kvm_wfx_arm64)"},
      {"guest_fault", "arm64 stage-2 aborts by IPA (kvm_guest_fault)"}};
  auto it = kTitles.find(kind);
  return it == kTitles.end() ? std::string_view(kind) : it->second;
}

std::string DetailKey(const DetailRow& d) { return DetailKeyText(d); }

std::string Details(const Report& r, const TextReportOptions& o) {
  std::string out;
  size_t i = 0;
  while (i < r.details.size()) {
    size_t j = i;
    while (j < r.details.size() && r.details[j].kind == r.details[i].kind) ++j;
    const std::string& kind = r.details[i].kind;
    bool sized = kind == "pio" || kind == "mmio" || kind == "io_exit";
    std::vector<std::string> header = {"KEY", "NAME", "ACCESS"};
    if (sized) header.push_back("SIZE");
    header.insert(header.end(), {"COUNT", "EXIT TIME"});
    if (kind == "msr") header.push_back("FAILED");
    Table t(header, "lll");
    for (size_t k = i; k < j && k - i < o.max_detail_rows_per_kind; ++k) {
      const DetailRow& d = r.details[k];
      std::vector<std::string> row = {DetailKey(d), d.name.empty() ? "-" : d.name, d.access.empty() ? "-" : d.access};
      if (sized) row.push_back(fmt::format("{}B", d.size));
      row.insert(row.end(), {Count(d.count), Dur(d.exit_ns)});
      if (kind == "msr") row.push_back(d.failed ? Count(d.failed) : "-");
      t.Add(std::move(row));
    }
    out += fmt::format("\n{}:\n", DetailTitle(kind));
    std::string rendered = t.Render("  ");
    out += rendered;
    if (j - i > o.max_detail_rows_per_kind)
      out += fmt::format("  ({} more keys not shown; --json has all)\n", j - i - o.max_detail_rows_per_kind);
    i = j;
  }
  return out;
}

}  // namespace

std::string RenderPartialLine(const std::vector<DiagnosticCounter>& diagnostics) {
  std::string causes = PartialCauses(diagnostics);
  return causes.empty() ? "PARTIAL RESULT: the trace lost events or held malformed data (see diagnostics)\n\n"
                        : fmt::format("PARTIAL RESULT: {} (see diagnostics)\n\n", causes);
}

namespace {

// The head of the report: source, format, duration, VMs, filters, event counts, and why exits have
// no time when kvm_entry is missing.
std::string ContextLines(const Report& r) {
  std::string out;
  const auto& c = r.context;
  out += fmt::format("exitscope report: {}\n", c.source.empty() ? "-" : c.source);
  out += fmt::format("  format {} · kernel {} · ISA {} · clock {}\n", c.format.empty() ? "?" : c.format,
                     c.kernel.empty() ? "?" : c.kernel, c.isa, c.clock.empty() ? "?" : c.clock);
  for (const auto& note : c.clock_notes) out += fmt::format("  warning: {}\n", note);
  const uint64_t span = c.last_ts_ns - c.first_ts_ns;
  std::string duration = c.time_unit == TimeUnit::kNs ? fmt::format("{:.3f} s", static_cast<double>(span) * 1e-9)
                                                      : Dur(static_cast<double>(span));
  // Text inputs do not say how many CPUs the host had: leave it out rather than print 0.
  std::string cpus = c.cpu_count > 0 ? fmt::format("{} CPU{} · ", c.cpu_count, c.cpu_count == 1 ? "" : "s") : "";
  out += fmt::format("  duration {} · {}{} VM{} · {} vCPU thread{}\n", duration, cpus, c.vms.size(),
                     c.vms.size() == 1 ? "" : "s", c.vcpu_threads, c.vcpu_threads == 1 ? "" : "s");
  for (const auto& vm : c.vms) out += fmt::format("    VM {}\n", vm);
  if (!c.filters.empty()) out += fmt::format("  filters: {}\n", c.filters);
  const auto& t = r.totals;
  out += t.records != t.events ? fmt::format("  kvm events {} of {} records", Count(t.events), Count(t.records))
                               : fmt::format("  kvm events {}", Count(t.events));
  out +=
      fmt::format(" · kvm_exit {} · kvm_entry {} · timed exits {}", Count(t.exits), Count(t.entries), Count(t.timed));
  if (t.filtered_out) out += fmt::format(" · filtered out {}", Count(t.filtered_out));
  out += "\n";
  if (t.exits != 0 && t.entries == 0) {
    // On a damaged trace the entries may have been recorded and lost to the damage: say only that.
    out += r.partial ? "  exit times unavailable: no kvm_entry could be read (the trace is damaged, see "
                       "diagnostics), so exits are counted but not timed\n"
                     : "  exit times unavailable: kvm_entry was not recorded, so exits are counted but not timed\n"
                       "  (record with -e kvm:kvm_entry too, or -e kvm)\n";
  }

  return out;
}

std::string DiagnosticsTable(const Report& r) {
  std::string out;
  if (!r.diagnostics.empty()) {
    out += "\ndiagnostics:\n";
    Table dt({"SEVERITY", "COUNTER", "COUNT", "MEANING"}, "llrl");
    for (const auto& d : r.diagnostics) {
      dt.Add({std::string(SeverityName(d.severity)), d.name, Count(d.count), d.description});
    }
    out += dt.Render("  ");
  }
  return out;
}

}  // namespace

std::string RenderTextReport(const Report& r, const TextReportOptions& o) {
  std::string out;
  const auto& c = r.context;
  UnitScope unit_scope(c.time_unit);
  if (r.partial) out += RenderPartialLine(r.diagnostics);
  out += ContextLines(r);
  const auto& t = r.totals;
  if (t.exits == 0 && r.partial) {
    // Not "none recorded": what did not parse may hold them.
    out += "\nno kvm_exit event could be read: what did not parse is counted in the diagnostics below\n";
  } else if (t.exits == 0) {
    out +=
        "\nno kvm_exit events in this trace (record with `trace-cmd record -e kvm` or "
        "`perf record -e 'kvm:*'` while the guest runs)\n";
  } else if (r.groups.empty()) {
    out += "\nno exits match (check the filters, or the diagnostics below)\n";
  }
  for (const auto& g : r.groups) {
    out += "\n";
    if (g.kind != "all") {
      out += fmt::format("{} {} — {} exits, {} handling{}\n",
                         g.kind == "vcpu" ? "vCPU"
                         : g.kind == "vm" ? "VM"
                                          : "",
                         g.label, Count(g.count), Dur(g.total.total_ns),
                         g.blocked_ns ? fmt::format(", {} blocked", Dur(g.blocked_ns)) : "");
    }
    out += ReasonTable(g, t.userspace_known);
    if (t.userspace_known) out += SplitLine(g.total.count, g.total.total_ns, g.userspace_count, g.userspace_ns);
  }
  if (r.groups.size() > 1 && t.userspace_known) {
    out += "\nall groups:\n";
    out += SplitLine(t.all.count, t.all.total_ns, t.userspace_count, t.userspace_ns);
  }
  if (t.exits != 0 && t.timed != 0 && !t.userspace_known) {
    out += "\nin kernel vs VMM: unknown: record kvm_userspace_exit (-e kvm:kvm_userspace_exit, or -e kvm)\n";
  }
  out += BlockedNote(t);
  if (t.timer_irqs || t.vgic_irqs) {
    out += fmt::format("\narm64 interrupt lines: kvm_timer_update_irq {} · vgic_update_irq_pending {}\n",
                       Count(t.timer_irqs), Count(t.vgic_irqs));
  }
  if (o.details && !r.details.empty()) out += Details(r, o);
  out += DiagnosticsTable(r);
  return out;
}

}  // namespace exitscope
