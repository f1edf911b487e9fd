// `dump`'s field text on the real kvm_emulate_insn format (nested-svm-6.1/formats): array fields
// print as comma-separated two-digit hex, scalars as numbers, fields past the payload as nothing.
#include <gtest/gtest.h>

#include <cstring>
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

// A format of the given fields after common_type, parsed (the test fails when it does not parse).
EventFormat TestFormat(const std::string& fields) {
  const std::string text =
      "name: test_event\nID: 9\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n" +
      fields + "\nprint fmt: \"x\"\n";
  auto format = ParseEventFormat(text, "test");
  EXPECT_TRUE(format.ok()) << format.error().message;
  return format.ok() ? std::move(format.value()) : EventFormat{};
}

// A plan worked out once reads every record as AppendFieldsText does, with signed, unsigned, hex,
// string and array fields (the format text below), and with a payload cut short.
TEST(FieldText, OnePlanForManyRecords) {
  const EventFormat format = TestFormat(
      "\tfield:int delta;\toffset:8;\tsize:4;\tsigned:1;\n"
      "\tfield:u8 flags;\toffset:12;\tsize:1;\tsigned:0;\n"
      "\tfield:u64 gpa;\toffset:16;\tsize:8;\tsigned:0;\n"
      "\tfield:char comm[8];\toffset:24;\tsize:8;\tsigned:1;\n"
      "\tfield:u8 raw[3];\toffset:32;\tsize:3;\tsigned:0;\n"
      "\tfield:__data_loc char[] msg;\toffset:36;\tsize:4;\tsigned:1;\n");
  ASSERT_EQ(format.fields.size(), 6u);
  FieldTextPlan plan(format);
  std::vector<uint8_t> payload(46, 0);
  const int32_t delta = -5;
  std::memcpy(&payload[8], &delta, 4);
  payload[12] = 200;
  payload[16] = 0xef, payload[17] = 0xbe;
  std::memcpy(&payload[24], "qemu", 4);
  payload[32] = 0x0a, payload[34] = 0xff;
  payload[36] = 40, payload[38] = 3;  // __data_loc: offset 40, length 3
  std::memcpy(&payload[40], "hi\0", 3);
  std::string once;
  plan.Append(payload, &once);
  EXPECT_EQ(once, " delta=-5 flags=200 gpa=0xbeef comm=qemu raw={0a,00,ff} msg=hi");
  std::string by_call;
  AppendFieldsText(format, payload, &by_call);
  EXPECT_EQ(by_call, once);
  // Cut inside gpa: what lies past the end reads 0 and prints empty.
  std::string cut;
  plan.Append(std::span<const uint8_t>(payload).first(20), &cut);
  EXPECT_EQ(cut, " delta=-5 flags=200 gpa=0x0 comm= raw={} msg=");
}

// The JSON a plan appends is the text the json object of AppendFieldsJson dumps to: members in name
// order, a repeated name once (its last value), strings escaped (a quote, a control character,
// invalid UTF-8 replaced), arrays as numbers.
TEST(FieldText, PlanJsonIsTheJsonObjectsText) {
  const EventFormat format = TestFormat(
      "\tfield:u64 zeta;\toffset:8;\tsize:8;\tsigned:0;\n"
      "\tfield:char comm[8];\toffset:16;\tsize:8;\tsigned:1;\n"
      "\tfield:s16 alpha;\toffset:24;\tsize:2;\tsigned:1;\n"
      "\tfield:u32 zeta;\toffset:28;\tsize:4;\tsigned:0;\n"
      "\tfield:u8 raw[2];\toffset:32;\tsize:2;\tsigned:0;\n");
  FieldTextPlan plan(format);
  std::vector<uint8_t> payload(34, 0);
  payload[8] = 1, payload[28] = 2;  // zeta twice: the second (u32 at 28) is the one json keeps
  const char comm[8] = {'a', '"', '\n', '\xff', 'b', 0, 'c', 0};
  std::memcpy(&payload[16], comm, 8);
  payload[24] = 0xfe, payload[25] = 0xff;  // alpha = -2
  payload[32] = 7, payload[33] = 200;
  for (size_t cut : {payload.size(), size_t{20}, size_t{0}}) {
    const auto p = std::span<const uint8_t>(payload).first(cut);
    nlohmann::json object = nlohmann::json::object();
    AppendFieldsJson(format, p, &object);
    std::string json;
    plan.AppendJson(p, &json);
    EXPECT_EQ(json, object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) << cut;
  }
  std::string whole;
  plan.AppendJson(payload, &whole);
  EXPECT_EQ(whole,
            "{\"alpha\":-2,\"comm\":\"a\\\"\\n\xef\xbf\xbd"
            "b\",\"raw\":[7,200],\"zeta\":2}");
}

}  // namespace
}  // namespace exitscope
