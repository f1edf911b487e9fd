// LivePageDecoder (pipeline/live_page_decoder.h), what `top` runs on each interval's pages: real
// ring-buffer pages (tests/data/pages/*.xxd, from nested-svm-6.1/kvmprobe-200.trace.dat) fed through
// a tracefs instance on a fake tracefs (tests/fake_tracefs.h) carrying that kernel's own formats;
// the events that come out must be the kernel's, as trace-cmd printed them beside the dumps (*.txt),
// in time order across CPUs, and a page flagged "missed events" must give one loss marker.
#include "pipeline/live_page_decoder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "fake_tracefs.h"
#include "xxd.h"

namespace exitscope {
namespace {

namespace fs = std::filesystem;
using testing::FakeTracefs;
using testing::FromXxd;

const std::string kPages = std::string(EXITSCOPE_TESTDATA_DIR) + "/pages/";
const std::string kFormats = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/formats/";

struct TextEvent {
  uint64_t ts_us = 0;
  int cpu = -1;
  int tid = -1;
  std::string name, body;
};

// "        kvmprobe-499   [001]    14.747994: kvm_exit:             reason EXIT_NPF rip 0x1000 …"
std::vector<TextEvent> ReadTraceCmdText(const std::string& path) {
  std::vector<TextEvent> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    TextEvent e;
    size_t lb = line.find('['), rb = line.find(']'), dash = line.rfind('-', lb);
    e.tid = std::stoi(line.substr(dash + 1, lb - dash - 1));
    e.cpu = std::stoi(line.substr(lb + 1, rb - lb - 1));
    size_t colon = line.find(':', rb);
    std::string ts = line.substr(rb + 1, colon - rb - 1);
    e.ts_us = std::stoull(ts.substr(0, ts.find('.'))) * 1000000 + std::stoull(ts.substr(ts.find('.') + 1));
    size_t name_end = line.find(':', colon + 1);
    e.name = line.substr(colon + 2, name_end - colon - 2);
    size_t body = line.find_first_not_of(' ', name_end + 1);
    e.body = body == std::string::npos ? "" : line.substr(body);
    out.push_back(e);
  }
  return out;
}

// The records the decoder models (EventKindName of every kind but kOther); the others (kvm_fpu,
// kvm_write_tsc_offset …) are not decoded.
bool Modelled(const std::string& name) {
  for (int k = 1; k < static_cast<int>(EventKind::kCount); ++k) {
    if (EventKindName(static_cast<EventKind>(k)) == name) return true;
  }
  return false;
}

std::vector<TextEvent> ModelledEvents(std::initializer_list<const char*> pages) {
  std::vector<TextEvent> out;
  for (const char* page : pages) {
    for (const TextEvent& e : ReadTraceCmdText(kPages + page + ".txt")) {
      if (Modelled(e.name)) out.push_back(e);
    }
  }
  return out;
}

std::vector<uint8_t> Page(const std::string& name) {
  std::vector<uint8_t> page = FromXxd(kPages + name + ".xxd");
  page.resize(4096, 0);  // the dump holds header + commit bytes only
  return page;
}

class LivePageDecoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& f : fs::directory_iterator(kFormats)) {
      tracefs_.AddEvent("kvm", f.path().stem().string(), testing::ReadText(f.path()));
    }
    tracefs_.SetCmdlines("499 kvmprobe\n");
    auto inst = TracefsInstance::Create(tracefs_.root(), 0, FakeTracefs::Ops());
    ASSERT_TRUE(inst.ok()) << inst.error().message;
    instance_ = std::move(*inst);
    ASSERT_TRUE(instance_->EnableEvents({"kvm:*"}, false).ok());
    auto d = LivePageDecoder::Create(*instance_, &diag_);
    ASSERT_TRUE(d.ok()) << d.error().message;
    decoder_ = std::move(*d);
  }

  void Flush() {
    decoder_->Flush([this](const KvmEvent& e) { events_.push_back(e); },
                    [this](const LostEvents& l) {
                      lost_.push_back({l, events_.size()});
                    });
  }

  FakeTracefs tracefs_;
  std::unique_ptr<TracefsInstance> instance_;
  Diagnostics diag_;
  std::unique_ptr<LivePageDecoder> decoder_;
  std::vector<KvmEvent> events_;
  std::vector<std::pair<LostEvents, size_t>> lost_;  // marker, events before it
};

TEST_F(LivePageDecoderTest, RealPagesGiveTheKernelsEventsInTimeOrder) {
  EXPECT_EQ(decoder_->meta().cpu_count, testing::kFakeCpus);
  EXPECT_EQ(decoder_->meta().clock, "local");
  EXPECT_EQ(decoder_->meta().page_size, 4096u);
  // CPU 1 first: the merge, not the feeding order, decides.
  decoder_->AddPage(1, Page("svm61-cpu1-page0"));
  decoder_->AddPage(0, Page("svm61-cpu0-page0"));
  Flush();

  // CPU 0's page holds only unmodelled records (kvm_update_master_clock, kvm_apicv_inhibit_changed).
  std::vector<TextEvent> want = ModelledEvents({"svm61-cpu0-page0", "svm61-cpu1-page0"});
  ASSERT_EQ(want.size(), 66u);
  ASSERT_EQ(events_.size(), want.size());
  size_t exits = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const KvmEvent& got = events_[i];
    const TextEvent& w = want[i];
    SCOPED_TRACE(std::to_string(i) + ": " + w.name + " " + w.body);
    EXPECT_EQ((got.ts_ns + 500) / 1000, w.ts_us);  // global clock: ns already
    EXPECT_EQ(got.cpu, w.cpu);
    EXPECT_EQ(got.tid, w.tid);
    EXPECT_EQ(EventKindName(got.kind), w.name);
    if (got.kind == EventKind::kExit) {
      ++exits;
      char rip[32];
      std::snprintf(rip, sizeof rip, " rip 0x%llx ", static_cast<unsigned long long>(got.rip));
      EXPECT_NE(w.body.find(rip), std::string::npos);
      EXPECT_EQ(got.isa, Isa::kSvm);
    }
  }
  EXPECT_EQ(exits, 17u);
  EXPECT_TRUE(lost_.empty());
  EXPECT_EQ(decoder_->page_stats().truncated_pages + decoder_->page_stats().bad_lengths, 0u);

  // An interval's pages are consumed: the next Flush starts empty.
  events_.clear();
  Flush();
  EXPECT_TRUE(events_.empty());
}

TEST_F(LivePageDecoderTest, PageFlaggedMissedEventsGivesOneMarkerBeforeItsRecords) {
  std::vector<uint8_t> page = Page("svm61-cpu1-page0");
  uint64_t commit = 0;
  std::memcpy(&commit, page.data() + 8, 8);
  commit |= 1ull << 31;  // RB_MISSED_EVENTS (kernel/trace/ring_buffer.c): count not stored
  std::memcpy(page.data() + 8, &commit, 8);
  decoder_->AddPage(0, Page("svm61-cpu0-page0"));
  decoder_->AddPage(1, page);
  Flush();
  ASSERT_EQ(lost_.size(), 1u);
  EXPECT_EQ(lost_[0].first.cpu, 1);
  EXPECT_EQ(lost_[0].first.count, 0u);  // unknown how many
  EXPECT_EQ(lost_[0].second, 0u);       // before the first event of that page
  EXPECT_EQ(events_.size(), 66u);
}

TEST_F(LivePageDecoderTest, PagesOfUnknownCpusAreIgnored) {
  decoder_->AddPage(7, Page("svm61-cpu1-page0"));
  decoder_->AddPage(-1, Page("svm61-cpu1-page0"));
  Flush();
  EXPECT_TRUE(events_.empty());
}

}  // namespace
}  // namespace exitscope
