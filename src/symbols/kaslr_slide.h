// Infers the KASLR slide between a guest symbol table and the RIPs a trace recorded.
// In: a SymbolTable (System.map/vmlinux = link addresses, or a kallsyms from some boot) and either a
// relocated kallsyms of the same kernel (pair method) or the trace's exit RIPs with their exit class
// (exit-site method: HLT exits sit in the idle/halt helpers, MSR writes in native_write_msr & co.).
// Out: a signed slide (add it to a symbol address to get the runtime address) and how sure we are.
// Assumption: x86-64 kernel text moves by multiples of CONFIG_PHYSICAL_ALIGN (2 MiB) within the
// 1 GiB kernel image window, so the low 21 bits of a RIP fix which function it can be in.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "decode/exit_reason_codes.h"
#include "symbols/symbol_table.h"

namespace exitscope {

// arch/x86/Kconfig PHYSICAL_ALIGN default for x86-64; KASLR slides the kernel by multiples of it.
inline constexpr uint64_t kKaslrAlignBytes = 0x200000;
// arch/x86/include/asm/page_64_types.h KERNEL_IMAGE_SIZE with KASLR: the text moves within 1 GiB.
inline constexpr int64_t kKaslrMaxSlideBytes = 1ll << 30;

enum class SlideMethod : uint8_t { kNone, kGiven, kPair, kExitSites };

struct SlideEstimate {
  bool found = false;
  int64_t slide = 0;
  SlideMethod method = SlideMethod::kNone;
  uint64_t votes = 0;       // pair: symbols agreeing; exit sites: distinct RIPs agreeing
  uint64_t runner_up = 0;   // votes for the next best slide
  uint64_t candidates = 0;  // pair: common names; exit sites: distinct RIPs with a known site class
  std::string detail;       // human line: which sites voted
  double Confidence() const { return votes ? double(votes) / double(votes + runner_up) : 0.0; }
};

std::string_view SlideMethodName(SlideMethod m);

// Slide = relocated - unrelocated, the most common address difference over shared names.
SlideEstimate SlideFromPair(const SymbolTable& relocated, const SymbolTable& unrelocated);

struct SiteRip {
  uint64_t rip = 0;
  ExitClass exit_class = ExitClass::kOther;
};
// Each RIP of a class with known guest sites votes for the 2 MiB-aligned slides that put it inside
// one of those functions; the slide with most votes wins.
SlideEstimate SlideFromExitSites(const SymbolTable& table, std::span<const SiteRip> rips);

// True when `name` (compiler suffixes like ".constprop.0" ignored) is a guest function that executes
// the instruction behind exits of class c.
bool IsExitSiteFunction(ExitClass c, std::string_view name);

}  // namespace exitscope
