#include "symbols/guest_symbolizer.h"

#include <fmt/format.h>

namespace exitscope {

GuestSymbolizer GuestSymbolizer::FromTable(SymbolTable table, std::span<const SiteRip> rips, bool table_is_relocated,
                                           std::optional<int64_t> given) {
  GuestSymbolizer g;
  g.table_ = std::move(table);
  if (given) {
    g.slide_.found = true;
    g.slide_.slide = *given;
    g.slide_.method = SlideMethod::kGiven;
    g.note_ = "given on the command line";
    return g;
  }
  SlideEstimate est = SlideFromExitSites(g.table_, rips);
  if (est.found) {
    g.slide_ = est;
    g.note_ = est.detail;
    return g;
  }
  // No decisive exit sites: a kallsyms copy is assumed to come from the traced boot; link-address
  // tables are assumed unrelocated (nokaslr), and the header says so.
  g.slide_ = SlideEstimate{};
  g.slide_.method = SlideMethod::kNone;
  g.note_ = est.votes ? "exit sites ambiguous (" + est.detail + "); assuming " : "no exit-site evidence; assuming ";
  g.note_ += table_is_relocated ? "the kallsyms copy is from the traced boot" : "the guest ran with nokaslr";
  return g;
}

Result<GuestSymbolizer> GuestSymbolizer::Load(const GuestSymbolOptions& options, std::span<const SiteRip> rips) {
  std::optional<SymbolTable> kallsyms, linked;
  if (!options.kallsyms.empty()) {
    auto t = SymbolTable::LoadKallsymsFile(options.kallsyms);
    if (!t) return t.error();
    kallsyms = std::move(t.value());
  }
  if (!options.vmlinux.empty()) {
    auto t = SymbolTable::LoadElfFile(options.vmlinux);
    if (!t) return t.error();
    linked = std::move(t.value());
  } else if (!options.system_map.empty()) {
    auto t = SymbolTable::LoadKallsymsFile(options.system_map);
    if (!t) return t.error();
    linked = std::move(t.value());
  }
  std::optional<SlideEstimate> pair;
  if (kallsyms && linked) pair = SlideFromPair(*kallsyms, *linked);
  bool relocated = kallsyms.has_value();
  GuestSymbolizer g = FromTable(relocated ? std::move(*kallsyms) : std::move(*linked), rips, relocated, options.slide);
  g.pair_slide_ = pair;
  return g;
}

const Symbol* GuestSymbolizer::Lookup(uint64_t rip) const {
  if (table_.empty() || !IsKernel(rip)) return nullptr;
  return table_.Find(rip - static_cast<uint64_t>(slide_.slide));
}

std::string GuestSymbolizer::Name(uint64_t rip) const {
  const Symbol* s = Lookup(rip);
  if (!s) return fmt::format("{:#x}", rip);
  uint64_t off = rip - static_cast<uint64_t>(slide_.slide) - s->addr;
  if (!s->module.empty()) return fmt::format("{}+{:#x} [{}]", s->name, off, s->module);
  return fmt::format("{}+{:#x}", s->name, off);
}

std::string GuestSymbolizer::Function(uint64_t rip) const {
  const Symbol* s = Lookup(rip);
  return s ? s->name : fmt::format("{:#x}", rip);
}

std::string GuestSymbolizer::Describe() const {
  if (table_.empty()) return "guest symbols: none (pass --guest-kallsyms, --guest-system-map or --guest-vmlinux)";
  std::string d = fmt::format("guest symbols: {} ({} functions); KASLR slide {:#x} [{}] — {}", table_.origin(),
                              table_.symbols().size(), slide_.slide, SlideMethodName(slide_.method), note_);
  if (pair_slide_ && pair_slide_->found) {
    d += fmt::format("; kallsyms vs map: {}", pair_slide_->detail);
  }
  return d;
}

}  // namespace exitscope
