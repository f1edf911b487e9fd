// Format parser on the real tracefs format files of the Debian 6.1 kernel (nested-svm-6.1/formats).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "format/event_format.h"

namespace exitscope {
namespace {

const std::string kFormats = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/formats/";

std::string Slurp(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(EventFormat, EveryRealFormatParses) {
  FormatRegistry reg;
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kFormats)) {
    auto f = ParseEventFormat(Slurp(entry.path().string()), "kvm");
    ASSERT_TRUE(f.ok()) << entry.path() << ": " << f.error().message;
    EXPECT_EQ(f->name + ".format", entry.path().filename().string());
    EXPECT_EQ(f->common_fields.size(), 4u) << f->name;
    EXPECT_FALSE(f->print_fmt.empty());
    for (const auto& field : f->fields) EXPECT_GE(field.offset, 8u) << f->name << "." << field.name;
    reg.Add(std::move(f.value()));
    ++n;
  }
  EXPECT_EQ(n, 91u);  // every file in the folder
  ASSERT_NE(reg.ByName("kvm", "kvm_exit"), nullptr);
  EXPECT_EQ(reg.ById(1419), reg.ByName("kvm", "kvm_exit"));
}

TEST(EventFormat, KvmExitFieldsBoundByName) {
  auto f = ParseEventFormat(Slurp(kFormats + "kvm_exit.format"), "kvm");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->id, 1419);
  const FieldFormat* rip = f->Field("guest_rip");
  ASSERT_NE(rip, nullptr);
  EXPECT_EQ(rip->offset, 16u);
  EXPECT_EQ(rip->size, 8u);
  EXPECT_EQ(rip->type, "unsigned long");
  EXPECT_EQ(f->Field("vcpu_id")->offset, 56u);
  EXPECT_EQ(f->Field("common_pid")->offset, 4u);
  EXPECT_TRUE(f->Field("common_pid")->is_signed);
  EXPECT_EQ(f->Field("requests"), nullptr);  // a 6.1 kernel does not have it
  EXPECT_TRUE(f->print_fmt.starts_with("\"vcpu %u reason %s%s%s"));
}

TEST(EventFormat, ArraysDataLocAndSigned) {
  auto insn = ParseEventFormat(Slurp(kFormats + "kvm_emulate_insn.format"), "kvm");
  ASSERT_TRUE(insn.ok());
  const FieldFormat* a = insn->Field("insn");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->array_len, 15u);
  EXPECT_EQ(a->size, 15u);
  EXPECT_EQ(a->type, "__u8[15]");
  auto failed = ParseEventFormat(Slurp(kFormats + "kvm_nested_vmenter_failed.format"), "kvm");
  ASSERT_TRUE(failed.ok());
  bool saw_data_loc = false;
  for (const auto& f : failed->fields) saw_data_loc |= f.is_data_loc;
  EXPECT_TRUE(saw_data_loc);
  auto ue = ParseEventFormat(Slurp(kFormats + "kvm_userspace_exit.format"), "kvm");
  ASSERT_TRUE(ue.ok());
  EXPECT_TRUE(ue->Field("errno")->is_signed);
  uint8_t payload[16] = {};
  payload[12] = 0xfe;
  payload[13] = 0xff;
  payload[14] = 0xff;
  payload[15] = 0xff;
  EXPECT_EQ(ReadSigned(ue->Field("errno"), payload), -2);
  EXPECT_EQ(ReadUnsigned(ue->Field("errno"), std::span<const uint8_t>(payload, 14)), 0u);  // out of bounds
  EXPECT_EQ(ReadUnsigned(nullptr, payload), 0u);
}

TEST(EventFormat, DamagedTextIsAnError) {
  auto no_id = ParseEventFormat("name: x\nformat:\n", "kvm");
  ASSERT_FALSE(no_id.ok());
  EXPECT_EQ(no_id.error().tag, "format.incomplete");
  auto bad_field = ParseEventFormat("name: x\nID: 3\nformat:\n\tfield:int a;\toffset:zz;\tsize:4;\n", "kvm");
  ASSERT_FALSE(bad_field.ok());
  EXPECT_EQ(bad_field.error().tag, "format.bad-field");
  EXPECT_FALSE(bad_field.error().hint.empty());
}

}  // namespace
}  // namespace exitscope
