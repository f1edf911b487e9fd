// Aggregates exits per group (all / VM / vCPU thread / CPU) and exit reason: every exit is counted,
// timed ones also go into histograms,
// with the in-kernel vs VMM (userspace) split and detail breakdowns (MSR, port, GPA, CR, hypercall,
// KVM_EXIT_*, and what the exit itself carries: decode/exit_qualification.h). In: ExitSamples (as an ExitSampleSink)
// after filters. Out: a Report (report_model.h). Assumption: memory is flat in trace size: per (group, reason) one
// LogHistogram, per detail key one counter, detail keys capped per kind.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <array>
#include <climits>
#include <unordered_map>
#include <vector>

#include "analysis/exit_pairer.h"
#include "analysis/log_histogram.h"
#include "analysis/vm_grouper.h"
#include "decode/exit_reasons.h"
#include "model/trace_meta.h"
#include "model/report_model.h"

namespace exitscope {

enum class GroupBy { kReason, kVm, kVcpu, kCpu };
std::string_view GroupByName(GroupBy by);

struct ReportOptions {
  GroupBy by = GroupBy::kReason;
  std::optional<int32_t> pid;          // host pid (VM process) or thread id
  std::optional<int32_t> vcpu;         // vCPU index
  std::optional<std::string> reason;   // exit reason name (any spelling ExitReasonFromName accepts)
  std::optional<double> from_s, to_s;  // window in seconds from the first event
  bool details = true;
  int top = 0;  // reason rows per group (0 = all)
  // Keep each reason's and detail key's handling-time histogram in the Report (diff, --histogram).
  bool histograms = false;
};

// Distinct keys kept per detail kind; the rest are summed into one "other" row (flat memory).
inline constexpr size_t kMaxDetailKeysPerKind = 1024;

class ExitAggregator : public ExitSampleSink {
 public:
  ExitAggregator(const TraceMeta& meta, const ReportOptions& options);
  ~ExitAggregator() override;
  // Trace start for --from/--to (the first event's timestamp).
  void SetOrigin(uint64_t first_ts_ns) { origin_ns_ = first_ts_ns; }
  void OnExitSample(const ExitSample& s) override;
  // Counted by reason with the same filters, without time (no entry to pair with).
  void OnUntimedExit(const ExitSample& s) override;
  // Fills groups, details and totals.all of `report`; context and event counts are the caller's.
  void Fill(Report* report) const;
  uint64_t filtered_out() const { return filtered_out_; }
  // Sinks that see every exit this aggregator accepts (after its filters), in arrival order: the
  // HTML report's bins and flame graph, the timeline, so they count exactly what the report counts.
  void AddAcceptedSink(ExitSampleSink* sink) { accepted_.push_back(sink); }

 private:
  struct ReasonStats {
    LogHistogram hist;  // handling time
    uint64_t blocked_ns = 0;
    uint64_t untimed = 0;
    uint64_t user_count = 0, user_ns = 0;
  };
  struct GroupStats {
    LogHistogram total;
    uint64_t blocked_ns = 0;
    uint64_t untimed = 0;
    uint64_t user_count = 0, user_ns = 0;
    std::unordered_map<uint64_t, ReasonStats> reasons;  // key: isa << 32 | raw reason
  };
  struct DetailKey {
    uint8_t kind;
    uint8_t access;
    uint32_t size;
    uint64_t key;
    bool operator==(const DetailKey& o) const {
      return kind == o.kind && key == o.key && access == o.access && size == o.size;
    }
    bool operator<(const DetailKey& o) const {
      return std::tie(kind, key, access, size) < std::tie(o.kind, o.key, o.access, o.size);
    }
  };
  struct DetailStats {
    uint64_t count = 0, exit_ns = 0, failed = 0;
    std::unique_ptr<LogHistogram> hist;  // with ReportOptions::histograms
  };

  bool Accept(const ExitSample& s) const;
  // The (group, reason) cell of an accepted exit; nullptr when a filter rejects it.
  ReasonStats* Cell(const ExitSample& s);
  int64_t GroupId(const ExitSample& s);
  using TidsByVm = std::map<int64_t, std::vector<int32_t>>;  // VM id → its threads, ascending
  std::string GroupLabel(GroupBy by, int64_t id, const TidsByVm& tids_by_vm) const;
  // Fill's parts: one reason row of group `gr`, one group, one detail row.
  ReasonRow MakeReasonRow(uint64_t rkey, const ReasonStats& r, const GroupReport& gr) const;
  GroupReport MakeGroup(int64_t gid, const GroupStats& g, const TidsByVm& tids_by_vm) const;
  static DetailRow MakeDetailRow(const DetailKey& k, const DetailStats& st);
  // `timed`: also the detail events (kvm_msr …); untimed exits add only what the exit carries.
  void AddDetails(const ExitSample& s, bool timed);
  void CountDetail(DetailKey k, uint64_t dur_ns, bool failed, bool timed);
  DetailStats* FindDetail(DetailKey k);  // CountDetail's slow path: the map, the key cap

  const TraceMeta& meta_;
  ReportOptions options_;
  uint64_t origin_ns_ = 0;
  ReasonCodes reason_codes_;  // --reason in each ISA, equivalents included
  VmGrouper vms_;
  std::map<int32_t, int32_t> vcpu_by_tid_;              // vcpu_id seen per thread
  int32_t last_vcpu_tid_ = INT32_MIN, last_vcpu_ = -1;  // the last pair written to it
  std::map<int64_t, GroupStats> groups_;
  int64_t cached_group_id_ = INT64_MIN;
  uint64_t cached_reason_key_ = UINT64_MAX;
  GroupStats* cached_group_ = nullptr;
  ReasonStats* cached_reason_ = nullptr;
  std::map<DetailKey, DetailStats> details_;
  // Recently counted keys (map nodes never move): most exits repeat a few keys (TMICT, cr4 …).
  struct DetailSlot {
    DetailKey key{};
    DetailStats* stats = nullptr;
  };
  std::array<DetailSlot, 64> detail_cache_{};
  std::array<size_t, 256> detail_keys_per_kind_{};  // EventKind and QualKind values
  uint64_t filtered_out_ = 0;
  std::vector<ExitSampleSink*> accepted_;
  std::map<int32_t, bool> tids_seen_, tids_reported_;
  int32_t last_tid_reported_ = INT32_MIN;
  int32_t last_tid_seen_ = INT32_MIN;  // every vCPU thread with an exit (before filters)
};

}  // namespace exitscope
