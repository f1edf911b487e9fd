#include "model/report_model.h"

#include <fmt/format.h>

namespace exitscope {

std::string DetailKeyText(const DetailRow& d) {
  if (d.key == UINT64_MAX) return "*";
  if (!d.key_text.empty()) return d.key_text;
  if (d.kind == "userspace" || d.kind == "hypercall" || d.kind == "cr") return std::to_string(d.key);
  return fmt::format("{:#x}", d.key);
}

}  // namespace exitscope
