#include "model/diagnostics.h"

namespace exitscope {

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kDataLoss: return "data-loss";
    case Severity::kError: return "error";
  }
  return "?";
}

void Diagnostics::Bump(std::string_view name, Severity severity, std::string_view description, uint64_t n) {
  auto it = counters_.find(name);
  if (it == counters_.end()) {
    it = counters_
             .emplace(std::string(name), DiagnosticCounter{std::string(name), severity, std::string(description), 0})
             .first;
  }
  it->second.count += n;
}

void Diagnostics::Bump(DiagId id, uint64_t n) {
  const DiagSpec& spec = DiagSpecOf(id);
  Bump(spec.name, spec.severity, spec.meaning, n);
}

void Diagnostics::Bump(DiagId id, std::string_view key, uint64_t n) {
  const DiagSpec& spec = DiagSpecOf(id);
  std::string name(spec.name);
  name += '.';
  name += key;
  Bump(name, spec.severity, spec.meaning, n);
}

uint64_t Diagnostics::Count(DiagId id) const { return Count(DiagSpecOf(id).name); }

uint64_t Diagnostics::Count(std::string_view name) const {
  auto it = counters_.find(name);
  return it == counters_.end() ? 0 : it->second.count;
}

std::vector<DiagnosticCounter> Diagnostics::NonZero() const {
  std::vector<DiagnosticCounter> out;
  for (const auto& [name, c] : counters_) {
    if (c.count != 0) out.push_back(c);
  }
  return out;
}

bool Diagnostics::HasDataLoss() const {
  for (const auto& [name, c] : counters_) {
    if (c.count != 0 && c.severity != Severity::kInfo) return true;
  }
  return false;
}

void Diagnostics::Merge(const Diagnostics& other) {
  for (const auto& [name, c] : other.counters_) Bump(name, c.severity, c.description, c.count);
}

}  // namespace exitscope
