// perf.data (file mode and pipe mode) cut into what exitscope needs: the event attrs with their ids,
// the embedded tracing data (tracepoint formats), the header features (kernel, CPU, command line),
// thread names from COMM/FORK records, and a cursor over the data records that parses
// PERF_RECORD_SAMPLE into {time, cpu, tid, RAW tracepoint payload}.
// In: the mapped file. Out: PerfDataFile (metadata) + RecordCursor (records in FILE order — perf
// writes them only roughly time-ordered; perfdata_source.cc sorts them by rounds).
// Assumption: a little-endian host; a big-endian (swapped-magic) file is detected and refused.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/diagnostics.h"
#include "base/huge_pages.h"
#include "base/result.h"
#include "model/trace_meta.h"
#include "sources/mapped_file.h"

namespace exitscope {

struct PerfAttr {
  uint32_t type = 0;
  uint64_t config = 0;  // PERF_TYPE_TRACEPOINT: the tracepoint id (= common_type)
  uint64_t sample_type = 0;
  uint64_t read_format = 0;
  bool sample_id_all = false;
  std::string name;  // "kvm:kvm_exit" from HEADER_EVENT_DESC, when present
  std::vector<uint64_t> ids;
};

// One PERF_RECORD_SAMPLE, fields per the attr's sample_type (absent ones keep these defaults).
struct PerfSample {
  uint64_t ts_ns = 0;
  int32_t pid = -1, tid = -1;
  int32_t cpu = -1;
  uint64_t id = 0;
  const PerfAttr* attr = nullptr;
  std::span<const uint8_t> raw;  // tracepoint record starting at common_type; empty without RAW
  bool size_mismatch = false;    // ParseSample false: longer than its sample_type's fields
};

// Counts from the walk over every record header (at open, or chunk by chunk: OpenChunked).
struct PerfRecordStats {
  uint64_t samples = 0;
  uint64_t lost_records = 0;
  uint64_t lost_events = 0;  // sum of PERF_RECORD_LOST.lost and LOST_SAMPLES.lost
  uint64_t finished_rounds = 0;
  uint64_t compressed_records = 0;  // perf record -z: not decompressed (counted as loss)
};

class PerfDataFile {
 public:
  static Result<std::unique_ptr<PerfDataFile>> Open(const std::string& path, Diagnostics* diagnostics);
  // The same over an already opened input (MappedFile::View for fuzzers and tests).
  static Result<std::unique_ptr<PerfDataFile>> Open(std::unique_ptr<MappedFile> input, Diagnostics* diagnostics);

  // ---- the open walk chunk by chunk, for a reader that reads each byte once ----
  // Open without the walk over a file-mode perf.data's records (a pipe's is walked at once: its
  // header records come first). A reader then walks the records chunk by chunk (CutChunk) as it
  // reads them, applies the names each chunk carries (ApplyNames) and, at the end, what the walk
  // found (FinishChunkScan): until then stats() is empty, records_end() is the data's end, and the
  // walk's diagnostics are not counted. Saves reading the file twice (the walk is as dear as a
  // pread of every byte: ~0.1 s of CPU per GB here).
  static Result<std::unique_ptr<PerfDataFile>> OpenChunked(std::unique_ptr<MappedFile> input, Diagnostics* diagnostics);
  bool scan_pending() const { return scan_pending_; }
  // Open's walk, now: for a reader that goes sequential after all.
  void CompleteScan();
  struct NameRecord {
    uint32_t type;  // PERF_RECORD_COMM or PERF_RECORD_FORK
    std::vector<uint8_t> body;
  };
  // Where a chunk-by-chunk walk stands.
  struct ChunkScan {
    uint64_t pos = 0;  // the next chunk starts here
    PerfRecordStats stats;
    bool ended = false;  // the records ended in the last chunk cut
    bool truncated = false, bad_record = false;
  };
  // The records from scan->pos to the first record end `spacing` or more past it, or to where the
  // records end, read (pread) into *bytes (which only grows), or in place when the file is not
  // mapped.
  // Returns data()[*begin] as read; *end is the chunk's end. COMM and FORK bodies go to *names.
  // Const: threads may cut in turn while others parse.
  const uint8_t* CutChunk(ChunkScan* scan, uint64_t spacing, HugeVector<uint8_t>* bytes, uint64_t* begin, uint64_t* end,
                          std::vector<NameRecord>* names) const;
  // The names of a chunk's COMM and FORK records into meta(), in file order, as Open's walk sets
  // them (names from records win over the tracing data's cmdlines, whenever they come).
  void ApplyNames(const std::vector<NameRecord>& names);
  // What the walk found, once the last chunk was cut: stats(), records_end(), its diagnostics.
  void FinishChunkScan(const ChunkScan& scan);

  bool pipe_mode() const { return pipe_mode_; }
  const std::vector<PerfAttr>& attrs() const { return attrs_; }
  // The HEADER_TRACING_DATA bytes (same layout as trace-cmd's tracing data); empty when absent.
  std::span<const uint8_t> tracing_data() const { return tracing_data_; }
  const TraceMeta& meta() const { return meta_; }
  TraceMeta& mutable_meta() { return meta_; }
  const PerfRecordStats& stats() const { return stats_; }
  std::span<const uint8_t> data() const { return data_; }  // the data section (pipe: the stream)
  uint64_t data_offset() const { return data_offset_; }
  // Where the readable records end inside data() (before a cut-off or damaged record).
  size_t records_end() const { return records_end_; }
  uint64_t file_size() const { return input_->bytes().size(); }
  // True when data() is the page cache's (a mapped regular file, not a pipe read into memory).
  bool mapped() const { return input_->mapped(); }
  // Drops the resident pages of data()[begin, end) (MappedFile::Release): they are read again from
  // the page cache if touched, so spans into them stay valid.
  // `end` past data() is taken as its end.
  void ReleaseData(uint64_t begin, uint64_t end) const {
    end = std::min<uint64_t>(end, data_.size());
    if (end > begin) input_->Release(data_offset_ + begin, end - begin);
  }
  // Maps in data()[begin, min(begin + MappedFile::kPrefaultBytes, end)) ahead of a walk that stops at
  // `end` (MappedFile::Prefault); returns where that window ends. Pages past `end` are not mapped
  // in: they may be another walker's, already released.
  uint64_t PrefaultData(uint64_t begin, uint64_t end) const {
    end = std::min<uint64_t>(end, begin + MappedFile::kPrefaultBytes);
    if (end > begin) input_->Prefault(data_offset_ + begin, end - begin);
    return end;
  }
  // Copies data()[begin, begin + size) into `out` (MappedFile::ReadAt: pread, no page mapped).
  void ReadData(uint64_t begin, size_t size, uint8_t* out) const { input_->ReadAt(data_offset_ + begin, size, out); }
  // The u64 at data()[offset] (0-filled past the file's end): a LOST record's count field.
  uint64_t LoadDataU64(uint64_t offset) const;

  // Parses a SAMPLE record body (after the 8-byte header). False when it is shorter than its
  // sample_type says, or longer (out->size_mismatch; counted by the caller).
  bool ParseSample(std::span<const uint8_t> body, PerfSample* out) const;
  // ParseSample, inline for the samples of a file whose RAW-carrying attrs share one sample_type
  // with fixed-size fields up to RAW (perf kvm stat record's, perf record -e kvm:*'s): a few loads
  // at offsets found once, no call per record. The record's attr is found by its id in a table
  // indexed by id when the ids are dense (perf numbers them in sequence), not hashed. A record of
  // another sample_type, or one the layout does not fit (too short, a size mismatch), takes
  // ParseSample, which answers for it alike.
  bool ParseSampleFast(std::span<const uint8_t> body, PerfSample* out) const {
    if (TryParseSampleFast(body, out)) return true;
    // Into another object: `out` whose address reaches no call stays in registers once inlined.
    PerfSample slow;
    const bool ok = ParseSample(body, &slow);
    *out = slow;
    return ok;
  }
  // The data offset of the first SAMPLE record whose TryParseSampleFast answer is not
  // ParseSample's (fields, raw span, attr), or -1 when they agree on every one (tests, fuzzers).
  // *fast_parsed (when given): the samples the fast path answered for.
  int64_t FirstFastParseMismatch(uint64_t* fast_parsed = nullptr) const;
  // ParseSampleFast's inline part: false when ParseSample must answer (*out then unspecified).
  bool TryParseSampleFast(std::span<const uint8_t> body, PerfSample* out) const {
    const FixedLayout& l = fixed_;
    const size_t n = body.size();
    if (!l.on || n < l.raw_at + 4u) return false;
    const uint8_t* p = body.data();
    const PerfAttr* attr = &attrs_[0];
    if (!uniform_sample_type_) {
      uint64_t id;
      std::memcpy(&id, p + l.id_at, 8);
      bool covered = false;
      attr = DenseAttr(id, &covered);
      if (!attr || attr->sample_type != l.sample_type) return false;
    }
    uint32_t raw_size;
    std::memcpy(&raw_size, p + l.raw_at, 4);
    const size_t raw_end = l.raw_at + 4u + raw_size;
    if (raw_end > n || (!l.after_raw && n - raw_end >= 8)) return false;
    if (l.id_at >= 0) std::memcpy(&out->id, p + l.id_at, 8);
    if (l.tid_at >= 0) {
      std::memcpy(&out->pid, p + l.tid_at, 4);
      std::memcpy(&out->tid, p + l.tid_at + 4, 4);
    }
    if (l.time_at >= 0) std::memcpy(&out->ts_ns, p + l.time_at, 8);
    if (l.cpu_at >= 0) std::memcpy(&out->cpu, p + l.cpu_at, 4);
    out->raw = std::span<const uint8_t>(p + l.raw_at + 4, raw_size);
    out->attr = attr;
    return true;
  }
  // The sample_id trailer of a non-sample record (attr.sample_id_all): cpu and time, when present.
  // *has_ts (when given): whether *ts_ns came from the trailer (else it was left untouched).
  bool ParseSampleIdTrailer(std::span<const uint8_t> body, uint64_t* ts_ns, int32_t* cpu, bool* has_ts = nullptr) const;
  // A record header at `r` (perf_event_header: u32 type, u16 misc, u16 size), in host byte order; the
  // caller has checked that the header lies inside the data.
  struct RecordHeader {
    uint32_t type;
    uint16_t size;
  };
  static RecordHeader RecordHeaderAt(const uint8_t* r) {
    RecordHeader h;
    std::memcpy(&h.type, r, 4);
    std::memcpy(&h.size, r + 6, 2);
    return h;
  }
  // Pipe mode's HEADER_TRACING_DATA record: its body is a u32 size and the tracing data follows the
  // record, padded to 8 bytes. The bytes to skip after the record (0 for a body too short to say).
  static uint64_t TracingDataPaddedSize(std::span<const uint8_t> body) {
    if (body.size() < 4) return 0;
    uint32_t size = static_cast<uint32_t>(body[0]) | static_cast<uint32_t>(body[1]) << 8 |
                    static_cast<uint32_t>(body[2]) << 16 | static_cast<uint32_t>(body[3]) << 24;
    return (uint64_t{size} + 7) & ~uint64_t{7};
  }

 private:
  PerfDataFile() = default;
  static Result<std::unique_ptr<PerfDataFile>> OpenWith(std::unique_ptr<MappedFile> input, Diagnostics* diagnostics,
                                                        bool chunked);
  Status ParseFileHeader();
  Status ParseAttrSection(uint64_t attr_size, uint64_t offset, uint64_t size);
  void ParseFeatureSections(std::span<const uint8_t> header);
  void ParseFeature(int feature, std::span<const uint8_t> body);
  void AddAttr(std::span<const uint8_t> attr_bytes, std::span<const uint8_t> id_bytes);
  void ApplyNameRecord(uint32_t type, std::span<const uint8_t> body);  // a COMM or FORK record's
  void ScanRecords();  // metadata pass: COMM/FORK/EXIT, pipe-mode HEADER_* records, counts
  void FinishAttrs();
  void FinishFixedLayout();

  std::unique_ptr<MappedFile> input_;
  Diagnostics* diagnostics_ = nullptr;
  bool pipe_mode_ = false;
  std::vector<PerfAttr> attrs_;
  std::unordered_map<uint64_t, uint32_t> attr_by_id_;
  // attr_by_id_ as a table indexed by id - dense_id_base_ (-1: no attr), when the ids span few
  // enough values (kMaxDenseIds); empty otherwise.
  std::vector<int32_t> attr_by_dense_id_;
  uint64_t dense_id_base_ = 0;
  // A 256 KB table at most.
  static constexpr uint64_t kMaxDenseIds = 1 << 16;
  // The attr of sample id `id` by attr_by_dense_id_: nullptr when the table has none for it;
  // *covered says whether the id lies inside the table (outside, only attr_by_id_ can tell).
  const PerfAttr* DenseAttr(uint64_t id, bool* covered) const {
    const uint64_t slot = id - dense_id_base_;  // wraps below the base: out of range
    *covered = slot < attr_by_dense_id_.size();
    if (!*covered || attr_by_dense_id_[slot] < 0) return nullptr;
    return &attrs_[static_cast<uint32_t>(attr_by_dense_id_[slot])];
  }
  bool uniform_sample_type_ = true;  // every attr has attrs_[0]'s sample_type: no id lookup needed
  int id_pos_ = -1;                  // u64 index of the id in a SAMPLE body, -1 when absent
  // ParseSampleFast's byte offsets inside a SAMPLE body (-1: the field is absent).
  struct FixedLayout {
    bool on = false;  // the RAW attrs' one sample_type, nothing variable before RAW, ids found cheaply
    uint64_t sample_type = 0;
    bool after_raw = false;  // sample_type has fields after RAW (bytes left over are no mismatch)
    int id_at = -1, tid_at = -1, time_at = -1, cpu_at = -1;
    uint32_t raw_at = 0;  // RAW's u32 size
  };
  FixedLayout fixed_;
  std::span<const uint8_t> tracing_data_;
  std::span<const uint8_t> data_;
  uint64_t data_offset_ = 0;
  size_t records_end_ = 0;
  TraceMeta meta_;
  PerfRecordStats stats_;
  bool scan_pending_ = false;  // OpenChunked: the walk goes chunk by chunk
  TraceMeta record_names_;     // the names from COMM and FORK records alone
};

}  // namespace exitscope
