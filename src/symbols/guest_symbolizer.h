// Turns guest RIPs into "func+0xoff" using the guest kernel's symbols, correcting for KASLR.
// In: the --guest-kallsyms / --guest-system-map / --guest-vmlinux files (any subset) and the trace's
// exit RIPs with their exit class (for slide inference). Out: names for RIPs, plus how the slide was
// found, for the report header. Assumption: 64-bit guests put the kernel in the canonical upper half;
// RIPs below it are guest user space (or real/protected-mode code), which we never symbolize.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "base/result.h"
#include "symbols/kaslr_slide.h"
#include "symbols/symbol_table.h"

namespace exitscope {

// Documentation/x86/x86_64/mm.rst: the kernel half of the 48-bit canonical address space.
inline constexpr uint64_t kGuestKernelStart = 0xffff800000000000ull;

struct GuestSymbolOptions {
  std::string kallsyms;          // copy of the guest's /proc/kallsyms (relocated, some boot)
  std::string system_map;        // System.map (link addresses)
  std::string vmlinux;           // vmlinux ELF with .symtab (link addresses)
  std::optional<int64_t> slide;  // --guest-kaslr-slide: skip inference
  bool any() const { return !kallsyms.empty() || !system_map.empty() || !vmlinux.empty(); }
};

class GuestSymbolizer {
 public:
  GuestSymbolizer() = default;  // no symbols: every RIP prints as hex
  static Result<GuestSymbolizer> Load(const GuestSymbolOptions& options, std::span<const SiteRip> rips);
  // From a table already loaded; infers the slide from rips unless `given` is set.
  static GuestSymbolizer FromTable(SymbolTable table, std::span<const SiteRip> rips, bool table_is_relocated,
                                   std::optional<int64_t> given = {});

  static bool IsKernel(uint64_t rip) { return rip >= kGuestKernelStart; }
  static std::string_view Space(uint64_t rip) { return IsKernel(rip) ? "kernel" : "user"; }
  // "native_safe_halt+0x6", "kvm_foo+0x10 [kvm]", or the RIP in hex when no symbol covers it.
  std::string Name(uint64_t rip) const;
  // The function name alone (no offset), for grouping; hex RIP when unknown.
  std::string Function(uint64_t rip) const;
  bool has_symbols() const { return !table_.empty(); }
  const SlideEstimate& slide() const { return slide_; }
  const std::optional<SlideEstimate>& pair_slide() const { return pair_slide_; }
  // One line for report headers: source, symbol count, slide and how it was found.
  std::string Describe() const;

 private:
  const Symbol* Lookup(uint64_t rip) const;

  SymbolTable table_;
  SlideEstimate slide_;
  std::optional<SlideEstimate> pair_slide_;
  std::string note_;  // why the slide is trusted (or not)
};

}  // namespace exitscope
