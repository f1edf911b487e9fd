#include "symbols/kaslr_slide.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace exitscope {
namespace {

struct SiteNames {
  ExitClass exit_class;
  std::initializer_list<std::string_view> exact;
  std::initializer_list<std::string_view> prefixes;
};

// Where Linux guests (4.x–6.x, arch/x86) execute the instruction behind each exit. Inline helpers
// (native_safe_halt, native_write_msr) are out of line in some builds and inlined into these callers
// in others, so both are listed.
const SiteNames kSites[] = {
    {ExitClass::kHlt,
     {"native_safe_halt", "native_halt", "pv_native_safe_halt", "default_idle", "arch_safe_halt", "acpi_safe_halt",
      "acpi_idle_do_entry", "halt", "hlt_play_dead", "xen_safe_halt"},
     {}},
    {ExitClass::kMsrWrite,
     {"native_write_msr", "native_write_msr_safe", "native_apic_msr_write", "native_apic_msr_eoi",
      "native_apic_msr_eoi_write", "native_x2apic_icr_write", "lapic_next_deadline", "kvm_guest_apic_eoi_write",
      "wrmsr_safe_on_cpu", "__wrmsr_safe_on_cpu", "__wrmsr_on_cpu"},
     {"x2apic_send_IPI", "__x2apic_send_IPI"}},
    {ExitClass::kMsrRead,
     {"native_read_msr", "native_read_msr_safe", "native_apic_msr_read", "native_x2apic_icr_read", "__rdmsr_on_cpu",
      "__rdmsr_safe_on_cpu"},
     {}},
    {ExitClass::kCpuid, {"native_cpuid", "cpuid_eax", "cpuid_ebx", "cpuid_ecx", "cpuid_edx"}, {}},
    {ExitClass::kDr,
     {"native_set_debugreg", "native_get_debugreg", "hw_breakpoint_restore", "arch_install_hw_breakpoint",
      "arch_uninstall_hw_breakpoint", "local_db_save", "local_db_restore"},
     {}},
};

std::string_view StripSuffix(std::string_view name) {
  size_t dot = name.find('.');
  return dot == std::string_view::npos ? name : name.substr(0, dot);
}

bool Matches(const SiteNames& s, std::string_view name) {
  name = StripSuffix(name);
  for (auto e : s.exact) {
    if (name == e) return true;
  }
  for (auto p : s.prefixes) {
    if (name.starts_with(p)) return true;
  }
  return false;
}

// SVM reports MSR reads and writes with one exit code; either kind of site explains it.
bool ClassMatches(ExitClass wanted, ExitClass site) {
  if (wanted == site) return true;
  return wanted == ExitClass::kMsr && (site == ExitClass::kMsrRead || site == ExitClass::kMsrWrite);
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

std::string_view SlideMethodName(SlideMethod m) {
  switch (m) {
    case SlideMethod::kGiven: return "given";
    case SlideMethod::kPair: return "kallsyms-vs-map";
    case SlideMethod::kExitSites: return "exit-sites";
    case SlideMethod::kNone: break;
  }
  return "none";
}

bool IsExitSiteFunction(ExitClass c, std::string_view name) {
  for (const auto& s : kSites) {
    if (ClassMatches(c, s.exit_class) && Matches(s, name)) return true;
  }
  return false;
}

SlideEstimate SlideFromPair(const SymbolTable& relocated, const SymbolTable& unrelocated) {
  // Names that occur once in the unrelocated table only: static functions repeat across files.
  std::unordered_map<std::string_view, uint64_t> by_name;
  std::set<std::string_view> repeated;
  for (const auto& s : unrelocated.symbols()) {
    if (!s.module.empty()) continue;
    if (!by_name.emplace(s.name, s.addr).second) repeated.insert(s.name);
  }
  std::map<int64_t, uint64_t> votes;
  SlideEstimate e;
  e.method = SlideMethod::kPair;
  for (const auto& s : relocated.symbols()) {
    if (!s.module.empty() || repeated.count(s.name)) continue;
    auto it = by_name.find(s.name);
    if (it == by_name.end()) continue;
    ++e.candidates;
    ++votes[static_cast<int64_t>(s.addr - it->second)];
  }
  for (const auto& [slide, n] : votes) {
    if (n > e.votes) {
      e.runner_up = e.votes;
      e.votes = n;
      e.slide = slide;
    } else if (n > e.runner_up) {
      e.runner_up = n;
    }
  }
  e.found = e.votes > 0;
  if (e.found) {
    e.detail = fmt::format("{} of {} shared symbol names moved by {:#x}{}", e.votes, e.candidates, e.slide,
                           e.slide % static_cast<int64_t>(kKaslrAlignBytes) ? " (not 2 MiB aligned!)" : "");
  }
  return e;
}

SlideEstimate SlideFromExitSites(const SymbolTable& table, std::span<const SiteRip> rips) {
  SlideEstimate e;
  e.method = SlideMethod::kExitSites;
  std::vector<std::pair<const Symbol*, ExitClass>> sites;
  for (const auto& s : table.symbols()) {
    if (!s.module.empty()) continue;  // modules load at their own random addresses
    for (const auto& site : kSites) {
      if (Matches(site, s.name)) sites.emplace_back(&s, site.exit_class);
    }
  }
  std::set<std::pair<uint64_t, ExitClass>> distinct;
  for (const auto& r : rips) {
    if (r.exit_class != ExitClass::kOther) distinct.insert({r.rip, r.exit_class});
  }
  const int64_t align = static_cast<int64_t>(kKaslrAlignBytes);
  std::map<int64_t, uint64_t> votes;
  std::map<int64_t, std::set<std::string>> voters;
  for (const auto& [rip, cls] : distinct) {
    bool had_site = false;
    std::set<int64_t> mine;  // one vote per RIP and slide even if two aliases match
    for (const auto& [sym, site_class] : sites) {
      if (!ClassMatches(cls, site_class)) continue;
      had_site = true;
      // slide s with sym->addr + s <= rip < sym->addr + size + s, s a multiple of the alignment.
      int64_t hi = static_cast<int64_t>(rip - sym->addr);
      int64_t lo = hi - static_cast<int64_t>(std::max<uint64_t>(sym->size, 1)) + 1;
      for (int64_t k = FloorDiv(hi, align); k * align >= lo; --k) {
        int64_t slide = k * align;
        if (slide < -kKaslrMaxSlideBytes || slide > kKaslrMaxSlideBytes) break;
        if (mine.insert(slide).second) {
          ++votes[slide];
          voters[slide].insert(std::string(StripSuffix(sym->name)));
        }
      }
    }
    if (had_site) ++e.candidates;
  }
  std::vector<std::pair<uint64_t, int64_t>> ranked;  // (votes, slide)
  for (const auto& [slide, n] : votes) ranked.emplace_back(n, slide);
  // Most votes first; among equals the smaller |slide|, so a table that already fits stays put.
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return std::llabs(a.second) < std::llabs(b.second);
  });
  if (!ranked.empty()) {
    e.votes = ranked[0].first;
    e.slide = ranked[0].second;
    e.runner_up = ranked.size() > 1 ? ranked[1].first : 0;
  }
  e.found = e.votes > 0 && e.votes > e.runner_up;
  if (e.votes > 0) {
    std::string names;
    for (const auto& n : voters[e.slide]) names += (names.empty() ? "" : ", ") + n;
    e.detail = fmt::format("{} of {} exit-site RIPs fall in {} at slide {:#x} (next best: {})", e.votes, e.candidates,
                           names, e.slide, e.runner_up);
  }
  return e;
}

}  // namespace exitscope
