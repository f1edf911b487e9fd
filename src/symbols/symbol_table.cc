#include "symbols/symbol_table.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace exitscope {
namespace {

// A kallsyms line has no size: the gap to the next text symbol stands in for it. Capped so the
// last symbol before a hole (end of core text, between modules) does not swallow the hole.
constexpr uint64_t kMaxDerivedSymbolSize = 256 * 1024;

bool IsTextType(char t) { return t == 'T' || t == 't' || t == 'W' || t == 'w'; }

// Several names often share one address (_text/_stext, ALIAS()): report the most specific one.
int NameRank(const Symbol& s) {
  if (s.name.starts_with("__")) return 2;
  if (s.name.starts_with("_")) return 1;
  return 0;
}

std::string_view NextField(std::string_view* line) {
  size_t b = line->find_first_not_of(" \t");
  if (b == std::string_view::npos) {
    *line = {};
    return {};
  }
  size_t e = line->find_first_of(" \t", b);
  std::string_view f = line->substr(b, e == std::string_view::npos ? std::string_view::npos : e - b);
  *line = e == std::string_view::npos ? std::string_view{} : line->substr(e);
  return f;
}

}  // namespace

void SymbolTable::Finish(bool sizes_known) {
  std::stable_sort(symbols_.begin(), symbols_.end(), [](const Symbol& a, const Symbol& b) {
    if (a.addr != b.addr) return a.addr < b.addr;
    return NameRank(a) < NameRank(b);
  });
  if (sizes_known) return;
  for (size_t i = 0; i < symbols_.size(); ++i) {
    size_t j = i + 1;
    while (j < symbols_.size() && symbols_[j].addr == symbols_[i].addr) ++j;
    uint64_t gap = j < symbols_.size() ? symbols_[j].addr - symbols_[i].addr : kMaxDerivedSymbolSize;
    symbols_[i].size = std::min(gap, kMaxDerivedSymbolSize);
  }
}

SymbolTable SymbolTable::FromSymbols(std::vector<Symbol> symbols, bool sizes_known) {
  SymbolTable t;
  t.symbols_ = std::move(symbols);
  t.origin_ = "memory";
  t.Finish(sizes_known);
  return t;
}

Result<SymbolTable> SymbolTable::ParseKallsymsText(std::string_view text, std::string_view origin) {
  SymbolTable t;
  t.origin_ = origin;
  uint64_t nonzero = 0, lines = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    ++lines;
    std::string_view addr_s = NextField(&line), type_s = NextField(&line), name = NextField(&line);
    std::string_view module = NextField(&line);
    uint64_t addr = 0;
    auto [p, ec] = std::from_chars(addr_s.data(), addr_s.data() + addr_s.size(), addr, 16);
    if (ec != std::errc() || p != addr_s.data() + addr_s.size() || type_s.size() != 1 || name.empty()) {
      ++t.skipped_lines_;
      continue;
    }
    if (addr != 0) ++nonzero;
    if (!IsTextType(type_s[0]) || addr == 0) continue;
    Symbol s{addr, 0, std::string(name), {}, type_s[0]};
    if (module.size() > 2 && module.front() == '[' && module.back() == ']') {
      s.module = std::string(module.substr(1, module.size() - 2));
    }
    t.symbols_.push_back(std::move(s));
  }
  if (lines > 0 && nonzero == 0) {
    return MakeError(kExitDataErr, "symbols.addresses-hidden",
                     std::string(origin) + ": every address is 0 (kptr_restrict hid them)",
                     "copy /proc/kallsyms as root in the guest, with `sysctl kernel.kptr_restrict=1` "
                     "or lower");
  }
  if (t.symbols_.empty()) {
    return MakeError(kExitDataErr, "symbols.no-text-symbols",
                     std::string(origin) + ": no text symbols (not a kallsyms or System.map file?)",
                     "Debian's /boot/System.map is a placeholder; the real one is in the -dbg package, "
                     "or copy the guest's /proc/kallsyms");
  }
  t.Finish(false);
  return t;
}

Result<SymbolTable> SymbolTable::LoadKallsymsFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return MakeError(kExitNoInput, "symbols.open", "cannot open symbol file " + path,
                     "check the path given to --guest-kallsyms / --guest-system-map");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseKallsymsText(ss.str(), path);
}

namespace {

// The function symbols of an ELF file's symbol table (.symtab; .dynsym when there is none).
std::vector<Symbol> ElfFunctionSymbols(Elf* elf) {
  std::vector<Symbol> out;
  Elf_Scn* best = nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    if (sh.sh_type == SHT_SYMTAB) best = scn;
    if (sh.sh_type == SHT_DYNSYM && !best) best = scn;
  }
  if (best) {
    GElf_Shdr sh;
    gelf_getshdr(best, &sh);
    Elf_Data* data = elf_getdata(best, nullptr);
    size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
    for (size_t i = 0; data && i < n; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
      if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0) continue;
      const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (!name || !*name) continue;
      bool global = GELF_ST_BIND(sym.st_info) != STB_LOCAL;
      out.push_back(Symbol{sym.st_value, sym.st_size, name, {}, global ? 'T' : 't'});
    }
  }
  return out;
}

}  // namespace

Result<SymbolTable> SymbolTable::LoadElfFile(const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    return MakeError(kExitSoftware, "symbols.libelf", "libelf is unusable", elf_errmsg(-1));
  }
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return MakeError(kExitNoInput, "symbols.open", "cannot open " + path, "check the path given to --guest-vmlinux");
  }
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  auto done = [&](Result<SymbolTable> r) {
    if (elf) elf_end(elf);
    close(fd);
    return r;
  };
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    return done(MakeError(kExitDataErr, "symbols.not-elf", path + " is not an ELF file",
                          "pass the uncompressed vmlinux (with symbols), not a bzImage/vmlinuz; "
                          "or use --guest-kallsyms"));
  }
  SymbolTable t;
  t.origin_ = path;
  t.symbols_ = ElfFunctionSymbols(elf);
  if (t.symbols_.empty()) {
    return done(MakeError(kExitDataErr, "symbols.stripped", path + " has no function symbols",
                          "it is stripped: use the debug vmlinux (linux-image-*-dbg) or the guest's "
                          "/proc/kallsyms"));
  }
  // ELF sizes are exact, but some asm entry points have st_size 0: size those from the gap.
  bool any_zero = std::any_of(t.symbols_.begin(), t.symbols_.end(), [](const Symbol& s) { return !s.size; });
  t.Finish(true);
  if (any_zero) {
    for (size_t i = 0; i < t.symbols_.size(); ++i) {
      if (t.symbols_[i].size) continue;
      size_t j = i + 1;
      while (j < t.symbols_.size() && t.symbols_[j].addr == t.symbols_[i].addr) ++j;
      uint64_t gap = j < t.symbols_.size() ? t.symbols_[j].addr - t.symbols_[i].addr : kMaxDerivedSymbolSize;
      t.symbols_[i].size = std::min(gap, kMaxDerivedSymbolSize);
    }
  }
  return done(std::move(t));
}

const Symbol* SymbolTable::Find(uint64_t addr) const {
  auto it =
      std::upper_bound(symbols_.begin(), symbols_.end(), addr, [](uint64_t a, const Symbol& s) { return a < s.addr; });
  if (it == symbols_.begin()) return nullptr;
  uint64_t start = std::prev(it)->addr;
  // Walk back to the first (preferred) alias at that address; a longer alias may cover addr too.
  auto first = std::prev(it);
  while (first != symbols_.begin() && std::prev(first)->addr == start) --first;
  for (auto s = first; s != it; ++s) {
    if (addr < s->addr + std::max<uint64_t>(s->size, 1)) return &*s;
  }
  return nullptr;
}

const Symbol* SymbolTable::ByName(std::string_view name) const {
  for (const auto& s : symbols_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace exitscope
