// kvm_entry's resume facts as the pairer's resume check reads them: the guest RIP, and the nesting
// level from the guest_mode field newer kernels add (aux = guest_mode + 1; 0 when the kernel's format
// has no such field). Formats: the real 6.1 one from ../shared, and the same with the fields later
// kernels append (immediate_exit, inj_info, inj_info_err, guest_mode: arch/x86/kvm/trace.h).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "decode/kvm_decoder.h"

namespace exitscope {
namespace {

std::string Format61() {
  std::ifstream in(std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/formats/kvm_entry.format");
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// 6.1's format with guest_mode after the injection fields.
std::string FormatWithGuestMode() {
  std::string f = Format61();
  size_t at = f.find("\nprint fmt");
  EXPECT_NE(at, std::string::npos);
  f.insert(at,
           "\tfield:u32 inj_info;\toffset:28;\tsize:4;\tsigned:0;\n"
           "\tfield:u32 inj_info_err;\toffset:32;\tsize:4;\tsigned:0;\n"
           "\tfield:bool guest_mode;\toffset:36;\tsize:1;\tsigned:0;\n");
  return f;
}

KvmEvent DecodeEntry(const std::string& format_text, uint64_t rip, uint8_t guest_mode) {
  auto f = ParseEventFormat(format_text, "kvm");
  EXPECT_TRUE(f.ok());
  const uint16_t id = f->id;
  FormatRegistry formats;
  formats.Add(std::move(f.value()));
  KvmDecoder decoder(formats, Isa::kVmx, nullptr);
  std::vector<uint8_t> payload(40, 0);
  std::memcpy(payload.data(), &id, sizeof id);
  const uint32_t vcpu = 3;
  std::memcpy(payload.data() + 8, &vcpu, 4);
  std::memcpy(payload.data() + 16, &rip, 8);
  payload[36] = guest_mode;
  RawEvent raw;
  raw.ts_ns = 1000;
  raw.cpu = 0;
  raw.tid = 42;
  raw.type_id = id;
  raw.payload = payload;
  KvmEvent e;
  EXPECT_TRUE(decoder.Decode(raw, &e));
  return e;
}

TEST(KvmEntryDecodeTest, RipAndGuestModeWhenTheFormatHasThem) {
  KvmEvent l2 = DecodeEntry(FormatWithGuestMode(), 0xffffffff81000010, 1);
  EXPECT_EQ(l2.kind, EventKind::kEntry);
  EXPECT_EQ(l2.vcpu_id, 3);
  EXPECT_EQ(l2.rip, 0xffffffff81000010u);
  EXPECT_EQ(l2.aux, 2u);  // L2
  KvmEvent l1 = DecodeEntry(FormatWithGuestMode(), 0x1000, 0);
  EXPECT_EQ(l1.aux, 1u);  // L1
  // 6.1 has no guest_mode: the level is unknown, byte 36 is not read.
  KvmEvent old = DecodeEntry(Format61(), 0x1000, 1);
  EXPECT_EQ(old.rip, 0x1000u);
  EXPECT_EQ(old.aux, 0u);
}

}  // namespace
}  // namespace exitscope
