// Parser for tracefs `format` text. The grammar is line based ("name:", "ID:", "format:",
// "\tfield:<decl>;\toffset:N;\tsize:N;\tsigned:N;", "print fmt: …"); a blank line separates the
// common_* fields from the event's own. Unknown lines are ignored so newer kernels still parse.
#include "format/event_format.h"

#include <charconv>

#include "base/byte_reader.h"

namespace exitscope {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool ParseUint(std::string_view s, uint32_t* out) {
  s = Trim(s);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Value of "key:value" inside a field line's `;`-separated attributes.
bool Attribute(std::string_view line, std::string_view key, uint32_t* out) {
  size_t pos = 0;
  while ((pos = line.find(key, pos)) != std::string_view::npos) {
    bool at_start = pos == 0 || line[pos - 1] == '\t' || line[pos - 1] == ' ' || line[pos - 1] == ';';
    if (at_start && pos + key.size() < line.size() && line[pos + key.size()] == ':') {
      std::string_view rest = line.substr(pos + key.size() + 1);
      return ParseUint(rest.substr(0, rest.find(';')), out);
    }
    pos += key.size();
  }
  return false;
}

// "unsigned long guest_rip" → type "unsigned long", name "guest_rip"; "__u8 insn[15]" → array 15;
// "__data_loc char[] name" → data_loc.
bool ParseDecl(std::string_view decl, FieldFormat* f) {
  decl = Trim(decl);
  std::string_view name_part = decl;
  size_t sp = decl.find_last_of(" \t*");
  if (sp == std::string_view::npos) return false;
  name_part = decl.substr(sp + 1);
  std::string_view type = Trim(decl.substr(0, sp + (decl[sp] == '*' ? 1 : 0)));
  size_t bracket = name_part.find('[');
  if (bracket != std::string_view::npos) {
    std::string_view n = name_part.substr(bracket + 1);
    n = n.substr(0, n.find(']'));
    uint32_t len = 0;
    if (ParseUint(n, &len)) f->array_len = len;  // a macro-sized array ("[TASK_COMM_LEN]") stays 0
    f->type = std::string(type) + std::string(name_part.substr(bracket));
    name_part = name_part.substr(0, bracket);
  } else {
    f->type = std::string(type);
  }
  f->name = std::string(name_part);
  f->is_data_loc = type.find("__data_loc") != std::string_view::npos;
  return !f->name.empty();
}

}  // namespace

const FieldFormat* EventFormat::Field(std::string_view field_name) const {
  for (const auto& f : fields) {
    if (f.name == field_name) return &f;
  }
  for (const auto& f : common_fields) {
    if (f.name == field_name) return &f;
  }
  return nullptr;
}

Result<EventFormat> ParseEventFormat(std::string_view text, std::string_view system) {
  EventFormat ev;
  ev.system = std::string(system);
  bool have_id = false, in_fields = false, common = true;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    std::string_view t = Trim(line);
    if (t.starts_with("name:")) {
      ev.name = std::string(Trim(t.substr(5)));
    } else if (t.starts_with("ID:")) {
      uint32_t id = 0;
      have_id = ParseUint(t.substr(3), &id) && id <= 0xffff;
      ev.id = static_cast<uint16_t>(id);
    } else if (t.starts_with("format:")) {
      in_fields = true;
    } else if (t.starts_with("print fmt:")) {
      ev.print_fmt = std::string(Trim(t.substr(10)));
      in_fields = false;
    } else if (in_fields && t.empty()) {
      if (!ev.common_fields.empty()) common = false;
    } else if (in_fields && t.starts_with("field:")) {
      FieldFormat f;
      std::string_view decl = t.substr(6);
      decl = decl.substr(0, decl.find(';'));
      uint32_t is_signed = 0;
      if (!ParseDecl(decl, &f) || !Attribute(t, "offset", &f.offset) || !Attribute(t, "size", &f.size)) {
        return MakeError(kExitDataErr, "format.bad-field",
                         "event format '" + ev.name + "': cannot parse field line '" + std::string(t) + "'",
                         "the trace's format text is damaged; re-record, or report the kernel version");
      }
      if (Attribute(t, "signed", &is_signed)) f.is_signed = is_signed != 0;
      if (f.array_len == 0 && f.type.ends_with("]") && !f.is_data_loc) {
        // "char comm[TASK_COMM_LEN]": element count from size, assuming 1-byte elements for char.
        if (f.type.starts_with("char") || f.type.find("u8") != std::string::npos) f.array_len = f.size;
      }
      (common && f.name.starts_with("common_") ? ev.common_fields : ev.fields).push_back(std::move(f));
    }
  }
  if (ev.name.empty() || !have_id) {
    return MakeError(kExitDataErr, "format.incomplete",
                     "event format text lacks its " + std::string(ev.name.empty() ? "name:" : "ID:") + " line" +
                         (ev.name.empty() ? "" : " (event '" + ev.name + "')"),
                     "the trace's format text is damaged or truncated; re-record the trace");
  }
  return ev;
}

uint64_t ReadUnsigned(const FieldFormat* field, std::span<const uint8_t> payload) {
  if (!field || field->offset + static_cast<uint64_t>(field->size) > payload.size()) return 0;
  uint32_t size = field->size;
  if (size != 1 && size != 2 && size != 4 && size != 8) return 0;
  return LoadLe(payload.data() + field->offset, size);
}

int64_t ReadSigned(const FieldFormat* field, std::span<const uint8_t> payload) {
  uint64_t v = ReadUnsigned(field, payload);
  if (!field) return 0;
  switch (field->size) {
    case 1: return static_cast<int8_t>(v);
    case 2: return static_cast<int16_t>(v);
    case 4: return static_cast<int32_t>(v);
    default: return static_cast<int64_t>(v);
  }
}

void FormatRegistry::Add(EventFormat format) {
  formats_.push_back(std::make_unique<EventFormat>(std::move(format)));
  by_id_[formats_.back()->id] = formats_.back().get();
}

const EventFormat* FormatRegistry::ById(uint16_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

const EventFormat* FormatRegistry::ByName(std::string_view system, std::string_view name) const {
  for (const auto& f : formats_) {
    if (f->name == name && (system.empty() || f->system == system)) return f.get();
  }
  return nullptr;
}

}  // namespace exitscope
