// Table-driven: each modeled kvm tracepoint lists the fields it needs and where each lands in a
// KvmEvent. Binding happens once per trace (offsets from its own formats); decoding an event is a
// type-id table lookup plus a few bounded loads — no strings, no allocation.
#include "decode/kvm_decoder.h"

#include <array>
#include <string>
#include <vector>

#include "sources/byte_reader.h"

namespace exitscope {
namespace {

enum class Target : uint8_t { kWrite, kVcpu, kReason, kSize, kRip, kInfo1, kInfo2, kIntrInfo,
                              kErrorCode, kCount, kAux, kIsa, kMmioType };

struct FieldSpec {
  const char* name;
  const char* alt_name;  // the field's name on older kernels, or nullptr
  Target target;
  bool optional;         // absent on some kernels without loss of meaning: not counted
};

struct KindSpec {
  const char* event;
  EventKind kind;
  std::vector<FieldSpec> fields;
};

// arch/x86/kvm/trace.h (field names as of 6.1; alt names from older kernels).
const std::vector<KindSpec>& Specs() {
  static const std::vector<KindSpec> specs = {
      {"kvm_exit", EventKind::kExit,
       {{"exit_reason", nullptr, Target::kReason, false}, {"guest_rip", nullptr, Target::kRip, false},
        {"isa", nullptr, Target::kIsa, true}, {"info1", nullptr, Target::kInfo1, false},
        {"info2", nullptr, Target::kInfo2, false}, {"intr_info", nullptr, Target::kIntrInfo, true},
        {"error_code", nullptr, Target::kErrorCode, true}, {"vcpu_id", nullptr, Target::kVcpu, true}}},
      {"kvm_entry", EventKind::kEntry,
       {{"vcpu_id", nullptr, Target::kVcpu, false}, {"rip", nullptr, Target::kRip, true}}},
      {"kvm_msr", EventKind::kMsr,
       {{"write", nullptr, Target::kWrite, false}, {"ecx", nullptr, Target::kInfo1, false},
        {"data", nullptr, Target::kInfo2, false}, {"exception", nullptr, Target::kErrorCode, true}}},
      {"kvm_pio", EventKind::kPio,
       {{"rw", nullptr, Target::kWrite, false}, {"port", nullptr, Target::kInfo1, false},
        {"size", nullptr, Target::kSize, false}, {"count", nullptr, Target::kCount, false},
        {"val", nullptr, Target::kInfo2, true}}},
      {"kvm_mmio", EventKind::kMmio,
       {{"type", nullptr, Target::kMmioType, false}, {"len", nullptr, Target::kSize, false},
        {"gpa", nullptr, Target::kInfo1, false}, {"val", nullptr, Target::kInfo2, false}}},
      {"kvm_cr", EventKind::kCr,
       {{"rw", nullptr, Target::kWrite, false}, {"cr", nullptr, Target::kSize, false},
        {"val", nullptr, Target::kInfo2, false}}},
      {"kvm_hypercall", EventKind::kHypercall,
       {{"nr", nullptr, Target::kInfo1, false}, {"nr", nullptr, Target::kReason, false},
        {"a0", nullptr, Target::kInfo2, false}}},
      {"kvm_userspace_exit", EventKind::kUserspaceExit,
       {{"reason", nullptr, Target::kReason, false}, {"errno", nullptr, Target::kErrorCode, false}}},
      {"kvm_page_fault", EventKind::kPageFault,
       {{"vcpu_id", nullptr, Target::kVcpu, true}, {"guest_rip", nullptr, Target::kRip, true},
        {"fault_address", nullptr, Target::kInfo1, false}, {"error_code", nullptr, Target::kInfo2, false}}},
      {"kvm_emulate_insn", EventKind::kEmulateInsn,
       {{"rip", nullptr, Target::kRip, false}, {"len", nullptr, Target::kSize, false},
        {"failed", nullptr, Target::kErrorCode, false}}},
      {"kvm_fast_mmio", EventKind::kFastMmio, {{"gpa", nullptr, Target::kInfo1, false}}},
      {"kvm_cpuid", EventKind::kCpuid,
       {{"function", nullptr, Target::kInfo1, false}, {"index", nullptr, Target::kCount, true},
        {"rax", nullptr, Target::kInfo2, false}}},
      {"kvm_apic_ipi", EventKind::kApicIpi,
       {{"icr_low", nullptr, Target::kCount, false}, {"dest_id", nullptr, Target::kAux, false}}},
      {"kvm_apic", EventKind::kApic,
       {{"rw", nullptr, Target::kWrite, false}, {"reg", nullptr, Target::kAux, false},
        {"val", nullptr, Target::kInfo2, false}}},
      {"kvm_inj_virq", EventKind::kInjVirq, {{"vector", "irq", Target::kInfo1, false}}},
      {"kvm_halt_poll_ns", EventKind::kHaltPoll,
       {{"grow", nullptr, Target::kWrite, false}, {"vcpu_id", nullptr, Target::kVcpu, false},
        {"new", nullptr, Target::kInfo1, false}, {"old", nullptr, Target::kInfo2, false}}},
      {"kvm_vcpu_wakeup", EventKind::kVcpuWakeup,
       {{"ns", nullptr, Target::kInfo1, false}, {"waited", nullptr, Target::kAux, false},
        {"valid", nullptr, Target::kWrite, true}}},
  };
  return specs;
}

// arch/x86/kvm/trace.h: KVM_TRACE_MMIO_WRITE.
constexpr uint64_t kMmioWrite = 2;
constexpr size_t kMaxSlots = 8;

struct Slot {
  uint32_t offset = 0;
  uint32_t size = 0;  // 0 = field absent
  Target target = Target::kAux;
};

struct BoundKind {
  EventKind kind = EventKind::kOther;
  uint8_t slot_count = 0;
  std::array<Slot, kMaxSlots> slots;
};

}  // namespace

struct KvmDecoder::Bindings {
  std::vector<int16_t> kind_by_id;  // type id → index into kinds, -1 = not modeled
  std::vector<BoundKind> kinds;
  Isa isa_hint = Isa::kUnknown;
  uint32_t pid_offset = 4, pid_size = 4;
};

KvmDecoder::KvmDecoder(const FormatRegistry& formats, Isa isa_hint, Diagnostics* diagnostics)
    : b_(std::make_unique<Bindings>()) {
  b_->isa_hint = isa_hint;
  for (const KindSpec& spec : Specs()) {
    const EventFormat* fmt = formats.ByName("kvm", spec.event);
    if (!fmt) continue;
    BoundKind bound;
    bound.kind = spec.kind;
    for (const FieldSpec& fs : spec.fields) {
      const FieldFormat* f = fmt->Field(fs.name);
      if (!f && fs.alt_name) f = fmt->Field(fs.alt_name);
      bool usable = f && !f->is_data_loc && (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8);
      if (!usable) {
        if (!fs.optional && diagnostics) {
          diagnostics->Bump("decode.missing_field." + std::string(spec.event) + "." + fs.name, Severity::kInfo,
                            "a field this kernel's format lacks; the value reads as 0");
        }
        continue;
      }
      bound.slots[bound.slot_count++] = Slot{f->offset, f->size, fs.target};
    }
    if (const FieldFormat* pid = fmt->Field("common_pid")) {
      b_->pid_offset = pid->offset;
      b_->pid_size = pid->size;
    }
    if (fmt->id >= b_->kind_by_id.size()) b_->kind_by_id.resize(fmt->id + 1, -1);
    b_->kind_by_id[fmt->id] = static_cast<int16_t>(b_->kinds.size());
    b_->kinds.push_back(bound);
  }
}

KvmDecoder::~KvmDecoder() = default;

bool KvmDecoder::Decode(const RawEvent& raw, KvmEvent* out) const {
  if (raw.type_id >= b_->kind_by_id.size()) return false;
  int16_t idx = b_->kind_by_id[raw.type_id];
  if (idx < 0) return false;
  const BoundKind& k = b_->kinds[idx];
  const uint8_t* p = raw.payload.data();
  const size_t n = raw.payload.size();
  *out = KvmEvent{};
  out->ts_ns = raw.ts_ns;
  out->cpu = raw.cpu;
  out->kind = k.kind;
  out->isa = b_->isa_hint;
  out->tid = raw.tid;
  if (out->tid < 0 && b_->pid_offset + b_->pid_size <= n) {
    out->tid = static_cast<int32_t>(LoadLe(p + b_->pid_offset, b_->pid_size));
  }
  for (uint8_t i = 0; i < k.slot_count; ++i) {
    const Slot& s = k.slots[i];
    uint64_t v = s.offset + s.size <= n ? LoadLe(p + s.offset, s.size) : 0;
    switch (s.target) {
      case Target::kWrite: out->write = v != 0; break;
      case Target::kVcpu: out->vcpu_id = static_cast<int32_t>(v); break;
      case Target::kReason: out->reason = static_cast<uint32_t>(v); break;
      case Target::kSize: out->size = static_cast<uint32_t>(v); break;
      case Target::kRip: out->rip = v; break;
      case Target::kInfo1: out->info1 = v; break;
      case Target::kInfo2: out->info2 = v; break;
      case Target::kIntrInfo: out->intr_info = static_cast<uint32_t>(v); break;
      case Target::kErrorCode: out->error_code = static_cast<uint32_t>(v); break;
      case Target::kCount: out->count = static_cast<uint32_t>(v); break;
      case Target::kAux: out->aux = static_cast<uint32_t>(v); break;
      case Target::kIsa:
        if (v == kKvmIsaVmx) out->isa = Isa::kVmx;
        else if (v == kKvmIsaSvm) out->isa = Isa::kSvm;
        break;
      case Target::kMmioType:
        out->aux = static_cast<uint32_t>(v);
        out->write = v == kMmioWrite;
        break;
    }
  }
  return true;
}

namespace {

class DecodingSource : public KvmEventSource {
 public:
  explicit DecodingSource(std::unique_ptr<RawEventSource> raw)
      : raw_(std::move(raw)), decoder_(raw_->formats(), raw_->meta().isa_hint, &raw_->diagnostics()) {}

  const TraceMeta& meta() const override { return raw_->meta(); }
  Diagnostics& diagnostics() override { return raw_->diagnostics(); }
  uint64_t bytes_done() const override { return raw_->bytes_done(); }
  uint64_t bytes_total() const override { return raw_->bytes_total(); }

  bool Next(KvmEvent* event, LostEvents* lost) override {
    RawEvent raw;
    LostEvents l;
    if (lost) lost->cpu = -1;
    while (raw_->Next(&raw, &l)) {
      // A loss marker attached to a skipped record must still reach the caller.
      if (lost) CombineLost(lost, l);
      // Consumed: sources that write *lost only when a marker precedes (perf.data) leave it set.
      l.cpu = -1;
      if (decoder_.Decode(raw, event)) return true;
      ++skipped_;
    }
    if (skipped_) {
      raw_->diagnostics().Bump("decode.skipped_events", Severity::kInfo,
                               "records that are not modeled kvm events (other tracepoints)", skipped_);
      skipped_ = 0;
    }
    return false;
  }

 private:
  std::unique_ptr<RawEventSource> raw_;
  KvmDecoder decoder_;
  uint64_t skipped_ = 0;
};

}  // namespace

std::unique_ptr<KvmEventSource> MakeDecodingSource(std::unique_ptr<RawEventSource> raw) {
  return std::make_unique<DecodingSource>(std::move(raw));
}

}  // namespace exitscope
