// `dump`'s field text on the real kvm_emulate_insn format (nested-svm-6.1/formats): array fields
// print as comma-separated two-digit hex, scalars as numbers, fields past the payload as nothing.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "format/event_format.h"
#include "decode/field_text.h"

namespace exitscope {
namespace {

TEST(FieldText, ArrayFieldsAreCommaSeparatedHex) {
  std::ifstream in(std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/formats/kvm_emulate_insn.format");
  auto format = ParseEventFormat(std::string(std::istreambuf_iterator<char>(in), {}), "kvm");
  ASSERT_TRUE(format.ok());
  std::vector<uint8_t> payload(38, 0);
  payload[8] = 0x12;   // rip
  payload[20] = 2;     // len
  payload[21] = 0x0f;  // insn: CPUID, then zeros
  payload[22] = 0xa2;
  payload[35] = 0xff;
  std::string text;
  AppendFieldsText(*format, payload, &text);
  EXPECT_EQ(text, " rip=0x12 csbase=0 len=2 insn={0f,a2,00,00,00,00,00,00,00,00,00,00,00,00,ff} flags=0 failed=0");
  // A payload cut inside the array: the array prints the bytes it holds, later fields read 0.
  text.clear();
  AppendFieldsText(*format, std::span<const uint8_t>(payload).first(23), &text);
  EXPECT_NE(text.find("insn={"), std::string::npos) << text;
  EXPECT_NE(text.find(" flags=0 failed=0"), std::string::npos) << text;
}

}  // namespace
}  // namespace exitscope
