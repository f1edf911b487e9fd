#include "sources/tracedat/guest_option.h"

#include <charconv>
#include <string_view>

#include "base/byte_reader.h"

namespace exitscope {
namespace {

// Our part opens with this tag and a version; then "key=value" strings, each NUL-terminated.
constexpr std::string_view kTag = "exitscope-vm/1";

void Put32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>(v >> (8 * i));
}

void PutString(std::string& out, std::string_view s) {
  // A NUL inside would end the string early for every reader: names come from command lines.
  for (char c : s) out += c == '\0' ? '?' : c;
  out += '\0';
}

bool ParseInt(std::string_view s, int32_t* v) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size();
}

// "tid:vcpu,tid:vcpu" (vcpu -1: unknown).
bool ParseThreads(std::string_view s, std::map<int32_t, int32_t>* out) {
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    size_t colon = item.find(':');
    int32_t tid = 0, vcpu = 0;
    if (colon == std::string_view::npos || !ParseInt(item.substr(0, colon), &tid) ||
        !ParseInt(item.substr(colon + 1), &vcpu))
      return false;
    (*out)[tid] = vcpu;
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return true;
}

}  // namespace

std::string EncodeGuestOption(const GuestInfo& g, const RecordedVm* vm) {
  std::string out;
  PutString(out, g.name);
  for (int i = 0; i < 8; ++i) out += static_cast<char>(g.trace_id >> (8 * i));
  int32_t max = -1;
  for (const auto& [vcpu, tid] : g.vcpu_to_host_tid)
    if (vcpu >= 0 && vcpu <= kGuestOptionMaxVcpu && vcpu > max) max = vcpu;
  Put32(out, static_cast<uint32_t>(max + 1));
  for (int32_t v = 0; v <= max; ++v) {
    auto it = g.vcpu_to_host_tid.find(v);
    Put32(out, static_cast<uint32_t>(v));
    Put32(out, it == g.vcpu_to_host_tid.end() ? 0u : static_cast<uint32_t>(it->second));
  }
  if (!vm || vm->pid <= 0) return out;
  PutString(out, kTag);
  PutString(out, "pid=" + std::to_string(vm->pid));
  if (!vm->comm.empty()) PutString(out, "comm=" + vm->comm);
  if (!vm->vmm.empty()) PutString(out, "vmm=" + vm->vmm);
  if (!vm->uuid.empty()) PutString(out, "uuid=" + vm->uuid);
  std::string threads;
  for (const auto& [tid, vcpu] : vm->vcpu_by_tid)
    threads += (threads.empty() ? "" : ",") + std::to_string(tid) + ":" + std::to_string(vcpu);
  PutString(out, "threads=" + threads);
  return out;
}

bool DecodeGuestOption(std::span<const uint8_t> data, GuestInfo* g, RecordedVm* vm) {
  *vm = RecordedVm();
  ByteReader r(data);
  g->name = std::string(r.CString());
  g->trace_id = r.U64();
  uint32_t n = r.U32();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    int32_t vcpu = static_cast<int32_t>(r.U32());
    int32_t tid = static_cast<int32_t>(r.U32());
    if (r.ok() && tid > 0) g->vcpu_to_host_tid[vcpu] = tid;  // 0: a gap we filled (see the header)
  }
  if (!r.ok()) return false;
  if (r.remaining() == 0) return true;
  // Anything after trace-cmd's fields is ours only if it carries our tag; other bytes are ignored,
  // as trace-cmd ignores them.
  if (r.CString() != kTag || !r.ok()) return true;
  while (r.remaining() > 0) {
    std::string_view kv = r.CString();
    if (!r.ok()) return false;
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = kv.substr(0, eq), value = kv.substr(eq + 1);
    if (key == "pid" && !ParseInt(value, &vm->pid)) return false;
    if (key == "comm") vm->comm = std::string(value);
    if (key == "vmm") vm->vmm = std::string(value);
    if (key == "uuid") vm->uuid = std::string(value);
    if (key == "threads" && !ParseThreads(value, &vm->vcpu_by_tid)) return false;
  }
  return vm->pid > 0;
}

}  // namespace exitscope
