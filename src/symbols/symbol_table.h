// A guest kernel's text symbols, sorted by address, for turning guest RIPs into func+0xoff.
// In: a copy of the guest's /proc/kallsyms, a System.map (same "ADDR TYPE NAME [module]" lines), or a
// vmlinux ELF (symtab through libelf). Out: Find(addr) → the function containing addr.
// Assumption: only text symbols matter (exits are caused by instructions); a kallsyms line has no
// size, so a symbol ends where the next higher address starts (the ELF path keeps st_size).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace exitscope {

struct Symbol {
  uint64_t addr = 0;
  uint64_t size = 0;  // bytes; derived from the next symbol for kallsyms/System.map
  std::string name;
  std::string module;  // "kvm" for "[kvm]" lines; empty for the core kernel
  char type = 'T';     // nm letter: T/t text, W/w weak
};

class SymbolTable {
 public:
  // kallsyms / System.map text. Non-text lines are skipped; malformed lines are counted in
  // skipped_lines(). An all-zero address column (kptr_restrict hid them) is an error with a hint.
  static Result<SymbolTable> ParseKallsymsText(std::string_view text, std::string_view origin);
  static Result<SymbolTable> LoadKallsymsFile(const std::string& path);
  // STT_FUNC symbols of a vmlinux ELF file (.symtab, else .dynsym).
  static Result<SymbolTable> LoadElfFile(const std::string& path);
  // From symbols already in memory (tests, adapters); sorts and sizes them.
  static SymbolTable FromSymbols(std::vector<Symbol> symbols, bool sizes_known);

  // The text symbol containing addr, nullptr when none does.
  const Symbol* Find(uint64_t addr) const;
  // First symbol of that exact name (linear; for the few names slide inference looks up).
  const Symbol* ByName(std::string_view name) const;
  std::span<const Symbol> symbols() const { return symbols_; }
  bool empty() const { return symbols_.empty(); }
  uint64_t skipped_lines() const { return skipped_lines_; }
  const std::string& origin() const { return origin_; }

 private:
  void Finish(bool sizes_known);

  std::vector<Symbol> symbols_;  // by address; aliases at one address keep the preferred name first
  uint64_t skipped_lines_ = 0;
  std::string origin_;
};

}  // namespace exitscope
