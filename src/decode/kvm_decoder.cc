// Table-driven: each modeled kvm tracepoint lists the fields it needs and where each lands in a
// KvmEvent. Binding happens once per trace (offsets from its own formats); decoding an event is a
// type-id table lookup plus a few bounded loads — no strings, no allocation.
#include "decode/kvm_decoder.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/byte_reader.h"
#include "decode/arm64_exit_codes.h"

namespace exitscope {
namespace {

enum class Target : uint8_t {
  kWrite,
  kVcpu,
  kReason,
  kSize,
  kRip,
  kInfo1,
  kInfo2,
  kIntrInfo,
  kErrorCode,
  kCount,
  kAux,
  kIsa,
  kMmioType,
  kLevel,
  // kvm_sys_access's Op0..Op2, OR-ed into info1 as sys_reg() encodes them
  kOp0,
  kOp1,
  kCrn,
  kCrm,
  kOp2
};

struct FieldSpec {
  const char* name;
  const char* alt_name;  // the field's name on older kernels, or nullptr
  Target target;
  bool optional;  // absent on some kernels without loss of meaning: not counted
};

// Which host ISA's layout of an event a spec is: kvm_exit and kvm_entry differ between x86
// (arch/x86/kvm/trace.h) and arm64 (arch/arm64/kvm/trace_arm.h); the generic ones (include/trace/
// events/kvm.h) and the arm64-only details are bound wherever the trace has them.
enum class Layout : uint8_t { kAny, kX86, kArm64 };

struct KindSpec {
  const char* event;
  EventKind kind;
  std::vector<FieldSpec> fields;
  Layout layout = Layout::kAny;
};

// arch/x86/kvm/trace.h (field names as of 6.1; alt names from older kernels); arm64: arch/arm64/kvm/
// trace_arm.h, trace_handle_exit.h, vgic/trace.h (6.1).
const std::vector<KindSpec>& Specs() {
  static const std::vector<KindSpec> specs = {
      {"kvm_exit",
       EventKind::kExit,
       {{"exit_reason", nullptr, Target::kReason, false},
        {"guest_rip", nullptr, Target::kRip, false},
        {"isa", nullptr, Target::kIsa, true},
        {"info1", nullptr, Target::kInfo1, false},
        {"info2", nullptr, Target::kInfo2, false},
        {"intr_info", nullptr, Target::kIntrInfo, true},
        {"error_code", nullptr, Target::kErrorCode, true},
        {"vcpu_id", nullptr, Target::kVcpu, true}},
       Layout::kX86},
      {"kvm_entry",
       EventKind::kEntry,
       {{"vcpu_id", nullptr, Target::kVcpu, false},
        {"rip", nullptr, Target::kRip, true},
        {"guest_mode", nullptr, Target::kLevel, true}},
       Layout::kX86},
      // arm64: ret and esr_ec fold into one reason after the load (Arm64ExitKey); no vCPU id, the
      // vCPU is the host thread.
      {"kvm_exit",
       EventKind::kExit,
       {{"ret", nullptr, Target::kReason, false},
        {"esr_ec", nullptr, Target::kInfo1, false},
        {"vcpu_pc", nullptr, Target::kRip, false}},
       Layout::kArm64},
      {"kvm_entry", EventKind::kEntry, {{"vcpu_pc", nullptr, Target::kRip, false}}, Layout::kArm64},
      {"kvm_sys_access",
       EventKind::kSysReg,
       {{"vcpu_pc", nullptr, Target::kRip, false},
        {"is_write", nullptr, Target::kWrite, false},
        {"Op0", nullptr, Target::kOp0, false},
        {"Op1", nullptr, Target::kOp1, false},
        {"CRn", nullptr, Target::kCrn, false},
        {"CRm", nullptr, Target::kCrm, false},
        {"Op2", nullptr, Target::kOp2, false}}},
      {"kvm_handle_sys_reg", EventKind::kHandleSysReg, {{"hsr", nullptr, Target::kInfo2, false}}},
      {"kvm_hvc_arm64",
       EventKind::kHvcArm64,
       {{"vcpu_pc", nullptr, Target::kRip, false},
        {"r0", nullptr, Target::kInfo1, false},
        {"imm", nullptr, Target::kInfo2, false}}},
      {"kvm_wfx_arm64",
       EventKind::kWfx,
       {{"vcpu_pc", nullptr, Target::kRip, false}, {"is_wfe", nullptr, Target::kAux, false}}},
      {"kvm_guest_fault",
       EventKind::kGuestFault,
       {{"vcpu_pc", nullptr, Target::kRip, false},
        {"hsr", nullptr, Target::kInfo2, false},
        {"ipa", nullptr, Target::kInfo1, false}}},
      {"kvm_timer_update_irq",
       EventKind::kTimerIrq,
       {{"vcpu_id", nullptr, Target::kVcpu, false},
        {"irq", nullptr, Target::kInfo1, false},
        {"level", nullptr, Target::kAux, false}}},
      {"vgic_update_irq_pending",
       EventKind::kVgicIrq,
       {{"vcpu_id", nullptr, Target::kVcpu, false},
        {"irq", nullptr, Target::kInfo1, false},
        {"level", nullptr, Target::kAux, false}}},
      {"kvm_msr",
       EventKind::kMsr,
       {{"write", nullptr, Target::kWrite, false},
        {"ecx", nullptr, Target::kInfo1, false},
        {"data", nullptr, Target::kInfo2, false},
        {"exception", nullptr, Target::kErrorCode, true}}},
      {"kvm_pio",
       EventKind::kPio,
       {{"rw", nullptr, Target::kWrite, false},
        {"port", nullptr, Target::kInfo1, false},
        {"size", nullptr, Target::kSize, false},
        {"count", nullptr, Target::kCount, false},
        {"val", nullptr, Target::kInfo2, true}}},
      {"kvm_mmio",
       EventKind::kMmio,
       {{"type", nullptr, Target::kMmioType, false},
        {"len", nullptr, Target::kSize, false},
        {"gpa", nullptr, Target::kInfo1, false},
        {"val", nullptr, Target::kInfo2, false}}},
      {"kvm_cr",
       EventKind::kCr,
       {{"rw", nullptr, Target::kWrite, false},
        {"cr", nullptr, Target::kSize, false},
        {"val", nullptr, Target::kInfo2, false}}},
      {"kvm_hypercall",
       EventKind::kHypercall,
       {{"nr", nullptr, Target::kInfo1, false},
        {"nr", nullptr, Target::kReason, false},
        {"a0", nullptr, Target::kInfo2, false}}},
      {"kvm_userspace_exit",
       EventKind::kUserspaceExit,
       {{"reason", nullptr, Target::kReason, false}, {"errno", nullptr, Target::kErrorCode, false}}},
      {"kvm_page_fault",
       EventKind::kPageFault,
       {{"vcpu_id", nullptr, Target::kVcpu, true},
        {"guest_rip", nullptr, Target::kRip, true},
        {"fault_address", nullptr, Target::kInfo1, false},
        {"error_code", nullptr, Target::kInfo2, false}}},
      {"kvm_emulate_insn",
       EventKind::kEmulateInsn,
       {{"rip", nullptr, Target::kRip, false},
        {"len", nullptr, Target::kSize, false},
        {"failed", nullptr, Target::kErrorCode, false}}},
      {"kvm_fast_mmio", EventKind::kFastMmio, {{"gpa", nullptr, Target::kInfo1, false}}},
      {"kvm_cpuid",
       EventKind::kCpuid,
       {{"function", nullptr, Target::kInfo1, false},
        {"index", nullptr, Target::kCount, true},
        {"rax", nullptr, Target::kInfo2, false}}},
      {"kvm_apic_ipi",
       EventKind::kApicIpi,
       {{"icr_low", nullptr, Target::kCount, false}, {"dest_id", nullptr, Target::kAux, false}}},
      {"kvm_apic",
       EventKind::kApic,
       {{"rw", nullptr, Target::kWrite, false},
        {"reg", nullptr, Target::kAux, false},
        {"val", nullptr, Target::kInfo2, false}}},
      {"kvm_inj_virq", EventKind::kInjVirq, {{"vector", "irq", Target::kInfo1, false}}},
      {"kvm_halt_poll_ns",
       EventKind::kHaltPoll,
       {{"grow", nullptr, Target::kWrite, false},
        {"vcpu_id", nullptr, Target::kVcpu, false},
        {"new", nullptr, Target::kInfo1, false},
        {"old", nullptr, Target::kInfo2, false}}},
      {"kvm_vcpu_wakeup",
       EventKind::kVcpuWakeup,
       {{"ns", nullptr, Target::kInfo1, false},
        {"waited", nullptr, Target::kAux, false},
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
  uint64_t need = 0;  // bytes a record must hold for every slot to be inside it
  std::array<Slot, kMaxSlots> slots;
};

// kvm_exit and kvm_entry are two thirds of a trace's decoded events. When the trace's layout of
// them is the one every kernel since 5.x writes (every field present, at its usual width), they are
// read by straight-line code: the generic slot loop's switches mispredict as event kinds alternate,
// and that was a fifth of the whole report's time.
struct FastExit {
  bool on = false;
  uint64_t need = 0;  // bytes the record must hold
  uint32_t reason, rip, isa, info1, info2, intr_info, error_code, vcpu;
};
struct FastEntry {
  bool on = false;
  uint64_t need = 0;
  uint32_t vcpu, rip;
  int32_t level = -1;  // offset of the 1-byte guest_mode field, -1 when the kernel lacks it
};

// The slot of `target` when it was bound with `size` bytes, else nullptr.
const Slot* SlotOf(const BoundKind& k, Target target, uint32_t size) {
  for (uint8_t i = 0; i < k.slot_count; ++i) {
    if (k.slots[i].target == target) return k.slots[i].size == size ? &k.slots[i] : nullptr;
  }
  return nullptr;
}

// The helpers of KvmDecoder::Decode, the hot loop of every report: each is called from one place
// and inlined there.

// kvm_exit in the fast layout. Every field written: no zeroing pass over the event first.
inline void StoreFastExit(const FastExit& f, const RawEvent& raw, const uint8_t* p, int32_t tid, Isa isa_hint,
                          KvmEvent* out) {
  uint32_t isa = LoadLe32(p + f.isa);
  *out = KvmEvent{raw.ts_ns,
                  raw.cpu,
                  tid,
                  EventKind::kExit,
                  isa == kKvmIsaVmx   ? Isa::kVmx
                  : isa == kKvmIsaSvm ? Isa::kSvm
                                      : isa_hint,
                  false,
                  static_cast<int32_t>(LoadLe32(p + f.vcpu)),
                  LoadLe32(p + f.reason),
                  0,
                  LoadLe64(p + f.rip),
                  LoadLe64(p + f.info1),
                  LoadLe64(p + f.info2),
                  LoadLe32(p + f.intr_info),
                  LoadLe32(p + f.error_code),
                  0,
                  0};
}

// kvm_entry in the fast layout.
inline void StoreFastEntry(const FastEntry& f, const RawEvent& raw, const uint8_t* p, int32_t tid, Isa isa_hint,
                           KvmEvent* out) {
  uint32_t level = f.level < 0 ? 0 : 1u + (p[f.level] != 0);
  *out = KvmEvent{raw.ts_ns,
                  raw.cpu,
                  tid,
                  EventKind::kEntry,
                  isa_hint,
                  false,
                  static_cast<int32_t>(LoadLe32(p + f.vcpu)),
                  0,
                  0,
                  LoadLe64(p + f.rip),
                  0,
                  0,
                  0,
                  0,
                  0,
                  level};
}

// One bound field's value, put where its target says.
[[gnu::always_inline]] inline void StoreField(Target target, uint64_t v, KvmEvent* out) {
  switch (target) {
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
      if (v == kKvmIsaVmx)
        out->isa = Isa::kVmx;
      else if (v == kKvmIsaSvm)
        out->isa = Isa::kSvm;
      break;
    case Target::kMmioType:
      out->aux = static_cast<uint32_t>(v);
      out->write = v == kMmioWrite;
      break;
    case Target::kLevel: out->aux = 1u + (v != 0); break;  // kvm_entry guest_mode: 1 = L1, 2 = L2
    case Target::kOp0: out->info1 |= (v & 3) << kSysRegOp0Shift; break;
    case Target::kOp1: out->info1 |= (v & 7) << kSysRegOp1Shift; break;
    case Target::kCrn: out->info1 |= (v & 15) << kSysRegCrnShift; break;
    case Target::kCrm: out->info1 |= (v & 15) << kSysRegCrmShift; break;
    case Target::kOp2: out->info1 |= (v & 7) << kSysRegOp2Shift; break;
  }
}

// What the fields mean together, once all are read (arm64's exit key, the ESR's system register).
inline void FinishFields(EventKind kind, bool arm64, KvmEvent* out) {
  switch (kind) {
    case EventKind::kExit:
      if (arm64) {  // ret is kept whole in info2 (its SError bit included)
        out->info2 = out->reason;
        out->reason = Arm64ExitKey(out->reason, static_cast<uint32_t>(out->info1));
        out->isa = Isa::kArm64;
      }
      break;
    case EventKind::kHandleSysReg:
      out->info1 = SysRegFromEsr(out->info2);
      out->write = !SysRegEsrIsRead(out->info2);
      break;
    case EventKind::kGuestFault: out->aux = static_cast<uint32_t>(FaultAccessFromEsr(out->info2)); break;
    default: break;
  }
}

}  // namespace

struct KvmDecoder::Bindings {
  std::vector<int16_t> kind_by_id;  // type id → index into kinds, -1 = not modeled
  std::vector<bool> known_id;       // type id → some format of the trace has it
  std::vector<BoundKind> kinds;
  Isa isa_hint = Isa::kUnknown;
  bool arm64 = false;  // the trace's kvm_exit is arm64's
  uint32_t pid_offset = 4, pid_size = 4;
  FastExit fast_exit;
  FastEntry fast_entry;
  void BindFast(const BoundKind& k);
};

void KvmDecoder::Bindings::BindFast(const BoundKind& k) {
  auto need = [](std::initializer_list<const Slot*> slots, uint64_t* out) {
    uint64_t end = 0;  // 64-bit: a damaged format's offset near 4 GiB must not wrap past the record
    for (const Slot* s : slots) {
      if (!s) return false;
      end = std::max(end, uint64_t{s->offset} + s->size);
    }
    *out = end;
    return true;
  };
  if (k.kind == EventKind::kExit) {
    const Slot *reason = SlotOf(k, Target::kReason, 4), *rip = SlotOf(k, Target::kRip, 8),
               *isa = SlotOf(k, Target::kIsa, 4), *info1 = SlotOf(k, Target::kInfo1, 8),
               *info2 = SlotOf(k, Target::kInfo2, 8), *intr = SlotOf(k, Target::kIntrInfo, 4),
               *err = SlotOf(k, Target::kErrorCode, 4), *vcpu = SlotOf(k, Target::kVcpu, 4);
    FastExit& f = fast_exit;
    f.on = need({reason, rip, isa, info1, info2, intr, err, vcpu}, &f.need);
    if (f.on) {
      f.reason = reason->offset, f.rip = rip->offset, f.isa = isa->offset, f.info1 = info1->offset;
      f.info2 = info2->offset, f.intr_info = intr->offset, f.error_code = err->offset, f.vcpu = vcpu->offset;
    }
  } else if (k.kind == EventKind::kEntry) {
    const Slot *vcpu = SlotOf(k, Target::kVcpu, 4), *rip = SlotOf(k, Target::kRip, 8);
    FastEntry& f = fast_entry;
    const Slot* level = SlotOf(k, Target::kLevel, 1);
    f.on = need(
        level ? std::initializer_list<const Slot*>{vcpu, rip, level} : std::initializer_list<const Slot*>{vcpu, rip},
        &f.need);
    if (f.on) {
      f.vcpu = vcpu->offset, f.rip = rip->offset;
      f.level = level ? static_cast<int32_t>(level->offset) : -1;
    }
  }
}

KvmDecoder::KvmDecoder(const FormatRegistry& formats, Isa isa_hint, Diagnostics* diagnostics)
    : b_(std::make_unique<Bindings>()) {
  b_->isa_hint = isa_hint;
  for (const auto& f : formats.all()) {
    if (f->id >= b_->known_id.size()) b_->known_id.resize(f->id + 1, false);
    b_->known_id[f->id] = true;
  }
  // The host ISA from the trace's own formats: arm64's kvm_exit has esr_ec (trace_arm.h), x86's
  // exit_reason. Each kvm_exit / kvm_entry then binds with its ISA's layout only.
  const EventFormat* exit_fmt = formats.ByName("kvm", "kvm_exit");
  const bool arm64 = exit_fmt && exit_fmt->Field("esr_ec") && !exit_fmt->Field("exit_reason");
  if (arm64) b_->isa_hint = Isa::kArm64;
  b_->arm64 = arm64;
  for (const KindSpec& spec : Specs()) {
    if (spec.layout == (arm64 ? Layout::kX86 : Layout::kArm64)) continue;
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
          diagnostics->Bump(DiagId::kDecodeMissingField, std::string(spec.event) + "." + fs.name);
        }
        continue;
      }
      // Each FieldSpec list is ours and shorter than kMaxSlots (a static table below).
      EXITSCOPE_CHECK(bound.slot_count < kMaxSlots);
      bound.slots[bound.slot_count++] = Slot{f->offset, f->size, fs.target};
      bound.need = std::max<uint64_t>(bound.need, uint64_t{f->offset} + f->size);
    }
    if (const FieldFormat* pid = fmt->Field("common_pid")) {
      b_->pid_offset = pid->offset;
      b_->pid_size = pid->size;
    }
    if (fmt->id >= b_->kind_by_id.size()) b_->kind_by_id.resize(fmt->id + 1, -1);

    b_->kind_by_id[fmt->id] = static_cast<int16_t>(b_->kinds.size());
    b_->kinds.push_back(bound);
    b_->BindFast(bound);
  }
}

KvmDecoder::~KvmDecoder() = default;

std::vector<uint8_t> KvmDecoder::UndecodedIds() const {
  std::vector<uint8_t> ids(b_->known_id.size(), 0);
  for (size_t id = 0; id < ids.size(); ++id) {
    ids[id] = b_->known_id[id] && (id >= b_->kind_by_id.size() || b_->kind_by_id[id] < 0);
  }
  return ids;
}

void DecodeAnomalies::Report(Diagnostics* d) {
  if (unknown_ids) d->Bump(DiagId::kDecodeUnknownEventId, unknown_ids);
  if (field_outside) d->Bump(DiagId::kDecodeFieldOutsideRecord, field_outside);
  *this = {};
}

bool KvmDecoder::Decode(const RawEvent& raw, KvmEvent* out, DecodeAnomalies* anomalies) const {
  int16_t idx = raw.type_id < b_->kind_by_id.size() ? b_->kind_by_id[raw.type_id] : -1;
  if (idx < 0) {
    if (anomalies && (raw.type_id >= b_->known_id.size() || !b_->known_id[raw.type_id])) ++anomalies->unknown_ids;
    return false;
  }
  const BoundKind& k = b_->kinds[idx];
  const uint8_t* p = raw.payload.data();
  const size_t n = raw.payload.size();
  int32_t tid = raw.tid;
  if (tid < 0 && uint64_t{b_->pid_offset} + b_->pid_size <= n) {
    tid = static_cast<int32_t>(LoadLe(p + b_->pid_offset, b_->pid_size));
  }
  if (k.kind == EventKind::kExit && b_->fast_exit.on && n >= b_->fast_exit.need) {
    StoreFastExit(b_->fast_exit, raw, p, tid, b_->isa_hint, out);
    return true;
  }
  if (k.kind == EventKind::kEntry && b_->fast_entry.on && n >= b_->fast_entry.need) {
    StoreFastEntry(b_->fast_entry, raw, p, tid, b_->isa_hint, out);
    return true;
  }
  *out = KvmEvent{};
  out->ts_ns = raw.ts_ns;
  out->cpu = raw.cpu;
  out->kind = k.kind;
  out->isa = b_->isa_hint;
  out->tid = tid;
  if (n >= k.need) {
    for (uint8_t i = 0; i < k.slot_count; ++i) {
      const Slot& s = k.slots[i];
      StoreField(s.target, LoadLe(p + s.offset, s.size), out);
    }
  } else {
    bool outside = false;  // a field past the record's end: damage, not an absent field
    for (uint8_t i = 0; i < k.slot_count; ++i) {
      const Slot& s = k.slots[i];
      uint64_t v = 0;
      if (uint64_t{s.offset} + s.size <= n)
        v = LoadLe(p + s.offset, s.size);
      else
        outside = true;
      StoreField(s.target, v, out);
    }
    if (outside && anomalies) ++anomalies->field_outside;
  }
  FinishFields(k.kind, b_->arm64, out);
  return true;
}

namespace {

class DecodingSource : public KvmEventSource {
 public:
  explicit DecodingSource(std::unique_ptr<RawEventSource> raw)
      : raw_(std::move(raw)), decoder_(raw_->formats(), raw_->meta().isa_hint, &raw_->diagnostics()) {
    raw_->LeaveOut(decoder_.UndecodedIds());
  }

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
      if (decoder_.Decode(raw, event, &anomalies_)) return true;
      ++skipped_;
    }
    CountSkipped();
    return false;
  }

  // Decodes straight into the batch: no second copy of each event, no call per event.
  bool NextBatch(KvmEventBatch* batch) override {
    events_.resize(kKvmEventBatchSize);
    losses_.clear();
    size_t n = 0;
    RawEvent raw;
    LostEvents l, acc;
    acc.cpu = -1;
    while (n < kKvmEventBatchSize && !ended_) {
      if (!raw_->Next(&raw, &l)) {
        ended_ = true;  // raw sources need not answer again after their end
        break;
      }
      CombineLost(&acc, l);
      l.cpu = -1;
      if (!decoder_.Decode(raw, &events_[n], &anomalies_)) {
        ++skipped_;
        continue;
      }
      if (acc.cpu >= 0) {
        losses_.push_back({static_cast<uint32_t>(n), acc});
        acc.cpu = -1;
      }
      ++n;
    }
    // A marker on skipped records at the very end has no event to go with: Next drops it too.
    if (n == 0) CountSkipped();
    batch->events = {events_.data(), n};
    batch->refs = {};
    batch->losses = losses_;
    return n != 0;
  }

 private:
  void CountSkipped() {
    anomalies_.Report(&raw_->diagnostics());
    // What the source left out is skipped as if this loop had: one count for both.
    skipped_ += raw_->left_out() - left_out_counted_;
    left_out_counted_ = raw_->left_out();
    if (skipped_) {
      raw_->diagnostics().Bump(DiagId::kDecodeSkippedEvents, skipped_);
      skipped_ = 0;
    }
  }

  std::unique_ptr<RawEventSource> raw_;
  KvmDecoder decoder_;
  uint64_t skipped_ = 0;
  uint64_t left_out_counted_ = 0;  // of raw_->left_out(), already in a skipped count
  DecodeAnomalies anomalies_;
  bool ended_ = false;
  std::vector<KvmEvent> events_;  // NextBatch's buffers
  std::vector<LossAt> losses_;
};

}  // namespace

std::unique_ptr<KvmEventSource> MakeDecodingSource(std::unique_ptr<RawEventSource> raw) {
  return std::make_unique<DecodingSource>(std::move(raw));
}

}  // namespace exitscope
