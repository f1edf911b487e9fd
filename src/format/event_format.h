// Event formats parsed from the trace's own `format` text (tracefs events/<sys>/<name>/format), so that
// fields are bound BY NAME at load time: kernels move fields (kvm_exit gained vcpu_id, intr_info,
// error_code, requests over the years). In: the text. Out: EventFormat with field offsets/sizes.
// Owner: the trace.dat reader work; perf.data reuses it (HEADER_TRACING_DATA embeds the same text).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"

namespace exitscope {

struct FieldFormat {
  std::string name;     // "exit_reason"
  std::string type;     // "unsigned int", "u64", "__data_loc char[]" …
  uint32_t offset = 0;  // from the start of the record payload (common_type is at 0)
  uint32_t size = 0;
  bool is_signed = false;
  bool is_data_loc = false;  // __data_loc: u32 = (len << 16) | offset
  uint32_t array_len = 0;    // fixed array element count (0 = not an array)
};

struct EventFormat {
  uint16_t id = 0;
  std::string system;  // "kvm"
  std::string name;    // "kvm_exit"
  std::vector<FieldFormat> common_fields;
  std::vector<FieldFormat> fields;
  std::string print_fmt;
  // Field by name (common or not); nullptr when the kernel does not have it.
  const FieldFormat* Field(std::string_view name) const;
};

Result<EventFormat> ParseEventFormat(std::string_view text, std::string_view system);

// Reads an unsigned/signed field value from a payload; 0 when the field is null or out of bounds.
uint64_t ReadUnsigned(const FieldFormat* field, std::span<const uint8_t> payload);
int64_t ReadSigned(const FieldFormat* field, std::span<const uint8_t> payload);

class FormatRegistry {
 public:
  void Add(EventFormat format);
  const EventFormat* ById(uint16_t id) const;
  const EventFormat* ByName(std::string_view system, std::string_view name) const;
  const std::vector<std::unique_ptr<EventFormat>>& all() const { return formats_; }

 private:
  std::vector<std::unique_ptr<EventFormat>> formats_;
  std::unordered_map<uint16_t, const EventFormat*> by_id_;
};

}  // namespace exitscope
