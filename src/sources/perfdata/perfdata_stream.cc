#include "sources/perfdata/perfdata_stream.h"

#include <algorithm>
#include <cstring>

#include "base/sorted_runs.h"
#include "sources/perfdata/perfdata_format.h"

namespace exitscope {

namespace pd = perfdata;

PerfSampleStream::PerfSampleStream(const PerfDataFile* file, Diagnostics* diagnostics)
    : file_(file), diagnostics_(diagnostics), read_(file->mapped() && !file->pipe_mode()) {}

void PerfSampleStream::ReadOn(uint64_t to) {
  // What lies below keep_ goes when that frees at least as much as is moved down: every byte is
  // moved at most about once however long the rounds, and the window holds about the pending
  // records' span, not the file.
  const uint64_t drop = std::clamp(keep_, window_begin_, window_end_) - window_begin_;
  const uint64_t kept = window_end_ - window_begin_ - drop;
  if (drop >= kept && drop > 0) {
    std::memmove(window_.data(), window_.data() + drop, kept);
    window_begin_ += drop;
  }
  to = std::min<uint64_t>(file_->data().size(), std::max(to, window_end_ + kReadBytes));
  // Grown, never shrunk or cleared: the bytes past window_end_ are read over, not zeroed again.
  if (window_.size() < to - window_begin_) window_.resize(std::max<size_t>(to - window_begin_, window_.size() * 2));
  file_->ReadData(window_end_, to - window_end_, window_.data() + (window_end_ - window_begin_));
  window_end_ = to;
}

bool PerfSampleStream::Refill() {
  // Drop what was emitted; the rest (already sorted) stays at the front.
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(ready_end_));
  ready_begin_ = ready_end_ = 0;
  keep_ = LowestPending();
  const uint64_t left_out_before = left_out_;
  ReadRound();
  // A round whose samples were all left out still moves the flush limit, as it did when they were
  // queued (and as the parallel reader's rounds do).
  if (pending_.empty() && left_out_ == left_out_before) {
    ReleasePages(pos_);
    return pos_ < file_->records_end();
  }
  ReleaseSorted();
  ReleasePages(LowestPending());
  return true;
}

uint64_t PerfSampleStream::LowestPending() const {
  uint64_t lowest = pos_;
  for (const Pending& p : pending_) lowest = std::min<uint64_t>(lowest, p.offset);
  return lowest;
}

void PerfSampleStream::ReleasePages(uint64_t below) {
  // No pending record lies below `below`: its pages will not be read again.
  if (read_ || !file_->mapped() || below - std::min(below, released_) < kReleaseBytes) return;
  file_->ReleaseData(released_, below);
  released_ = below;
}

void PerfSampleStream::ReadRound() {
  const size_t end = file_->records_end();
  bool round_end = false;
  while (pos_ < end && !round_end) {
    if (!read_ && pos_ >= prefaulted_) prefaulted_ = file_->PrefaultData(pos_, end);
    const uint8_t* r = At(pos_, pd::kRecordHeaderSize);
    const auto [type, size] = PerfDataFile::RecordHeaderAt(r);
    r = At(pos_, size);
    std::span<const uint8_t> body(r + pd::kRecordHeaderSize, size - pd::kRecordHeaderSize);
    size_t next = pos_ + size;
    switch (type) {
      case pd::kRecordSample: AddSample(body, r); break;
      case pd::kRecordLost:
      case pd::kRecordLostSamples: {
        uint64_t ts = max_ts_ns_;
        int32_t cpu = -1;
        file_->ParseSampleIdTrailer(body, &ts, &cpu);
        pending_.push_back({ts, pos_, cpu, -1, kLostMarker, 0});
        break;
      }
      case pd::kRecordFinishedRound: round_end = true; break;
      case pd::kRecordHeaderTracingData:
        // Pipe mode: the tracing data follows the record (see PerfDataFile::ScanRecords).
        next += PerfDataFile::TracingDataPaddedSize(body);
        break;
      default: break;
    }
    pos_ = next;
  }
}

void PerfSampleStream::AddSample(std::span<const uint8_t> body, const uint8_t* record) {
  PerfSample s;
  if (!file_->ParseSampleFast(body, &s)) {
    diagnostics_->Bump(s.size_mismatch ? DiagId::kPerfdataSampleSizeMismatch : DiagId::kPerfdataBadSample);
    return;
  }
  if (s.raw.size() < 2) {
    diagnostics_->Bump(DiagId::kPerfdataSampleWithoutRaw);
    return;
  }
  max_ts_ns_ = std::max(max_ts_ns_, s.ts_ns);
  // Neither sorted nor merged: about a third of a `perf record -e 'kvm:*'` is events nothing
  // decodes. Their order is not checked (perfdata.out_of_order, info), as in the parallel reader.
  if (const uint16_t type_id = static_cast<uint16_t>(s.raw[0] | s.raw[1] << 8);  // common_type, u16 LE
      type_id < left_out_ids_.size() && left_out_ids_[type_id]) {
    ++left_out_;
    left_out_first_ts_ns_ = std::min(left_out_first_ts_ns_, s.ts_ns);
    left_out_last_ts_ns_ = std::max(left_out_last_ts_ns_, s.ts_ns);
    return;
  }
  pending_.push_back(
      {s.ts_ns, pos_, s.cpu, s.tid, static_cast<uint32_t>(s.raw.size()), static_cast<uint32_t>(s.raw.data() - record)});
}

void PerfSampleStream::ReleaseSorted() {
  auto by_time = [](const Pending& a, const Pending& b) {
    return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.offset < b.offset;
  };
  // What was not handed out yet (sorted), then the round: each CPU's records in time order.
  SortAscendingRuns(pending_.data(), pending_.data() + pending_.size(), by_time, &scratch_);
  if (pos_ >= file_->records_end()) {
    ready_end_ = pending_.size();  // the end: everything may go
  } else if (have_flush_limit_) {
    ready_end_ = static_cast<size_t>(std::upper_bound(pending_.begin(), pending_.end(), flush_limit_ns_,
                                                      [](uint64_t ts, const Pending& p) { return ts < p.ts_ns; }) -
                                     pending_.begin());
  }
  flush_limit_ns_ = max_ts_ns_;
  have_flush_limit_ = true;
}

bool PerfSampleStream::Next(PerfTimedSample* out, LostEvents* lost) {
  for (;;) {
    while (ready_begin_ < ready_end_) {
      const Pending& p = pending_[ready_begin_++];
      if (p.raw_size == kLostMarker) {
        uint32_t type;
        std::memcpy(&type, At(p.offset, 4), 4);
        // LOST: u64 id, u64 lost; LOST_SAMPLES: u64 lost.
        uint64_t count = file_->LoadDataU64(p.offset + pd::kRecordHeaderSize + (type == pd::kRecordLost ? 8 : 0));
        // Without sample_id_all the CPU is unknown: report it on CPU 0 rather than not at all.
        pending_lost_.cpu = std::max(p.cpu, 0);
        pending_lost_.ts_ns = p.ts_ns;
        pending_lost_.count += count;
        continue;
      }
      if (p.ts_ns < last_emitted_ns_) {
        diagnostics_->Bump(DiagId::kPerfdataOutOfOrder);
      }
      last_emitted_ns_ = std::max(last_emitted_ns_, p.ts_ns);
      out->ts_ns = p.ts_ns;
      out->cpu = p.cpu;
      out->tid = p.tid;
      out->raw = std::span<const uint8_t>(At(p.offset, p.raw_off + size_t{p.raw_size}) + p.raw_off, p.raw_size);
      if (pending_lost_.cpu >= 0) {
        if (lost) *lost = pending_lost_;
        pending_lost_ = LostEvents{};
      }
      return true;
    }
    if (!Refill()) return false;
  }
}

}  // namespace exitscope
