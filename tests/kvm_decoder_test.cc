// KvmDecoder (decode/kvm_decoder.h): fields bound by name from a format, absent ones counted and read
// as 0; and MakeDecodingSource's loss-marker hand-off: a raw source (like perf.data's PerfSampleStream) writes
// *lost only when a marker precedes a record, so a marker on a skipped (non-kvm) record must reach the
// caller once, with its own count, however many skipped records follow it.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "decode/kvm_decoder.h"

namespace exitscope {
namespace {

const std::string kFormats = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/formats/";
constexpr uint16_t kNotKvmTypeId = 9999;  // no format in the registry: the decoder skips it

struct ScriptedRecord {
  uint16_t type_id;
  int32_t lost_cpu;  // -1: no marker before this record
  uint64_t lost_count;
};

// Replays records with the real 6.1 kvm_exit format; like PerfSampleStream, it leaves *lost alone
// when no marker precedes the record.
class ScriptedRawSource : public RawEventSource {
 public:
  explicit ScriptedRawSource(std::vector<ScriptedRecord> records) : records_(std::move(records)) {
    std::ifstream in(kFormats + "kvm_exit.format");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    auto f = ParseEventFormat(text, "kvm");
    EXPECT_TRUE(f.ok());
    exit_id_ = f->id;
    formats_.Add(std::move(f.value()));
  }
  uint16_t exit_id() const { return exit_id_; }
  const TraceMeta& meta() const override { return meta_; }
  const FormatRegistry& formats() const override { return formats_; }
  Diagnostics& diagnostics() override { return diagnostics_; }
  bool Next(RawEvent* event, LostEvents* lost) override {
    if (next_ == records_.size()) return false;
    const ScriptedRecord& r = records_[next_++];
    payload_.assign(64, 0);
    uint16_t id = r.type_id == 0 ? exit_id_ : r.type_id;
    std::memcpy(payload_.data(), &id, sizeof id);
    event->ts_ns = 1000 * next_;
    event->cpu = 0;
    event->tid = 42;
    event->type_id = id;
    event->payload = payload_;
    if (r.lost_cpu >= 0 && lost) *lost = LostEvents{r.lost_cpu, event->ts_ns, r.lost_count};
    return true;
  }

 private:
  std::vector<ScriptedRecord> records_;
  size_t next_ = 0;
  std::vector<uint8_t> payload_;
  TraceMeta meta_;
  FormatRegistry formats_;
  Diagnostics diagnostics_;
  uint16_t exit_id_ = 0;
};

TEST(DecodingSourceTest, LossMarkerOnSkippedRecordsIsReportedOnce) {
  // marker(5) on a skipped record, two more skipped records, then a kvm_exit; then a plain kvm_exit.
  auto raw = std::make_unique<ScriptedRawSource>(std::vector<ScriptedRecord>{
      {kNotKvmTypeId, 0, 5}, {kNotKvmTypeId, -1, 0}, {kNotKvmTypeId, -1, 0}, {0, -1, 0}, {0, -1, 0}});
  auto src = MakeDecodingSource(std::move(raw));
  KvmEvent e;
  LostEvents lost;
  ASSERT_TRUE(src->Next(&e, &lost));
  EXPECT_EQ(e.kind, EventKind::kExit);
  EXPECT_EQ(lost.cpu, 0);
  EXPECT_EQ(lost.count, 5u);
  ASSERT_TRUE(src->Next(&e, &lost));
  EXPECT_EQ(lost.cpu, -1);  // no marker before the second exit
  EXPECT_FALSE(src->Next(&e, &lost));
  EXPECT_EQ(src->diagnostics().Count("decode.skipped_events"), 3u);
}

TEST(DecodingSourceTest, MarkersOnTwoSkippedRecordsOfOneCpuAreSummed) {
  auto raw = std::make_unique<ScriptedRawSource>(
      std::vector<ScriptedRecord>{{kNotKvmTypeId, 1, 5}, {kNotKvmTypeId, -1, 0}, {kNotKvmTypeId, 1, 2}, {0, -1, 0}});
  auto src = MakeDecodingSource(std::move(raw));
  KvmEvent e;
  LostEvents lost;
  ASSERT_TRUE(src->Next(&e, &lost));
  EXPECT_EQ(lost.cpu, 1);
  EXPECT_EQ(lost.count, 7u);
}

TEST(KvmDecoder, FormatLackingAFieldIsCountedAndReadsZero) {
  std::string text =
      "name: kvm_exit\nID: 7\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n"
      "\tfield:unsigned long guest_rip;\toffset:16;\tsize:8;\tsigned:0;\n"
      "print fmt: \"x\"\n";
  FormatRegistry reg;
  auto f = ParseEventFormat(text, "kvm");
  ASSERT_TRUE(f.ok());
  reg.Add(std::move(f.value()));
  Diagnostics diag;
  KvmDecoder dec(reg, Isa::kVmx, &diag);
  EXPECT_EQ(diag.Count("decode.missing_field.kvm_exit.info1"), 1u);
  EXPECT_EQ(diag.Count("decode.missing_field.kvm_exit.vcpu_id"), 0u);  // optional on old kernels
  uint8_t payload[24] = {7, 0, 0, 0, 42, 0, 0, 0, 30, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x20, 0, 0, 0, 0, 0, 0};
  RawEvent raw{100, 1, -1, 7, payload};
  KvmEvent ev;
  ASSERT_TRUE(dec.Decode(raw, &ev));
  EXPECT_EQ(ev.kind, EventKind::kExit);
  EXPECT_EQ(ev.reason, 30u);
  EXPECT_EQ(ev.rip, 0x2010u);
  EXPECT_EQ(ev.tid, 42);
  EXPECT_EQ(ev.vcpu_id, -1);
  EXPECT_EQ(ev.info1, 0u);
  EXPECT_EQ(ev.isa, Isa::kVmx);
  // A payload shorter than the format reads the missing bytes as 0, not out of bounds.
  RawEvent shortraw{100, 1, -1, 7, std::span<const uint8_t>(payload, 12)};
  ASSERT_TRUE(dec.Decode(shortraw, &ev));
  EXPECT_EQ(ev.rip, 0u);
  EXPECT_EQ(ev.reason, 30u);
}

// A damaged format may place a field near 4 GiB: offset + size must not wrap to a small number and
// pass the record-length check (it read 4 GiB past the record). Both the slot loop and kvm_exit's
// fast layout are checked.
TEST(KvmDecoder, FieldOffsetNearFourGiBIsOutsideTheRecord) {
  std::ifstream in(kFormats + "kvm_exit.format");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const std::string rip = "guest_rip;\toffset:16;";
  ASSERT_NE(text.find(rip), std::string::npos);
  text.replace(text.find(rip), rip.size(), "guest_rip;\toffset:4294967292;");
  FormatRegistry reg;
  auto f = ParseEventFormat(text, "kvm");
  ASSERT_TRUE(f.ok());
  const uint16_t id = static_cast<uint16_t>(f->id);
  reg.Add(std::move(f.value()));
  KvmDecoder dec(reg, Isa::kSvm, nullptr);
  std::vector<uint8_t> payload(64, 0);
  std::memcpy(payload.data(), &id, 2);
  payload[8] = 0x72;  // exit_reason
  RawEvent raw{100, 1, 5, id, payload};
  KvmEvent ev;
  DecodeAnomalies anomalies;
  ASSERT_TRUE(dec.Decode(raw, &ev, &anomalies));
  EXPECT_EQ(ev.reason, 0x72u);
  EXPECT_EQ(ev.rip, 0u);
  EXPECT_EQ(anomalies.field_outside, 1u);
}

// UndecodedIds: what a source may leave out is exactly what Decode rejects without counting: ids of
// formats the decoder does not model. kvm ids it models, and ids with no format, stay 0.
TEST(KvmDecoder, UndecodedIdsAreTheFormatsItDoesNotModel) {
  FormatRegistry reg;
  uint16_t exit_id = 0, other_id = 0;
  for (const char* name : {"kvm_exit", "kvm_fpu"}) {
    std::ifstream in(kFormats + name + ".format");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    auto f = ParseEventFormat(text, "kvm");
    ASSERT_TRUE(f.ok()) << name;
    (std::string(name) == "kvm_exit" ? exit_id : other_id) = static_cast<uint16_t>(f->id);
    reg.Add(std::move(f.value()));
  }
  KvmDecoder dec(reg, Isa::kSvm, nullptr);
  std::vector<uint8_t> ids = dec.UndecodedIds();
  ASSERT_GT(ids.size(), std::max(exit_id, other_id));
  EXPECT_EQ(ids[exit_id], 0);
  EXPECT_EQ(ids[other_id], 1);
  size_t marked = 0;
  for (uint8_t v : ids) marked += v;
  EXPECT_EQ(marked, 1u);  // no id without a format is marked
}

}  // namespace
}  // namespace exitscope
