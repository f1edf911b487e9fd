#include "sources/perfdata/perfdata_reader.h"

#include <algorithm>
#include <cstring>

#include "base/byte_reader.h"
#include "sources/perfdata/perfdata_format.h"

namespace exitscope {

namespace pd = perfdata;

namespace {

// struct perf_header_string: u32 len (including NUL padding); char str[len].
bool ReadHeaderString(std::span<const uint8_t> body, size_t* pos, std::string* out) {
  if (*pos + 4 > body.size()) return false;
  uint32_t len = LoadLe32(body.data() + *pos);
  *pos += 4;
  if (len > body.size() - *pos) return false;
  const char* s = reinterpret_cast<const char*>(body.data() + *pos);
  *out = std::string(s, strnlen(s, len));
  *pos += len;
  return true;
}

std::string ClockName(int32_t clockid) {
  // include/uapi/linux/time.h clock ids.
  switch (clockid) {
    case 0: return "realtime";
    case 1: return "monotonic";
    case 4: return "monotonic_raw";
    case 7: return "boottime";
    case 11: return "tai";
    default: return "clockid " + std::to_string(clockid);
  }
}

}  // namespace

Result<std::unique_ptr<PerfDataFile>> PerfDataFile::Open(const std::string& path, Diagnostics* diagnostics) {
  auto in = MappedFile::Open(path);
  if (!in) return in.error();
  return Open(std::move(in.value()), diagnostics);
}

Result<std::unique_ptr<PerfDataFile>> PerfDataFile::Open(std::unique_ptr<MappedFile> input, Diagnostics* diagnostics) {
  return OpenWith(std::move(input), diagnostics, false);
}

Result<std::unique_ptr<PerfDataFile>> PerfDataFile::OpenChunked(std::unique_ptr<MappedFile> input,
                                                                Diagnostics* diagnostics) {
  return OpenWith(std::move(input), diagnostics, true);
}

Result<std::unique_ptr<PerfDataFile>> PerfDataFile::OpenWith(std::unique_ptr<MappedFile> input,
                                                             Diagnostics* diagnostics, bool chunked) {
  std::unique_ptr<PerfDataFile> f(new PerfDataFile());
  f->input_ = std::move(input);
  f->diagnostics_ = diagnostics;
  f->meta_.source_path = f->input_->path();
  if (Status st = f->ParseFileHeader(); !st) return st.error();
  if (chunked && !f->pipe_mode_) {
    f->scan_pending_ = true;
    f->records_end_ = f->data_.size();
  } else {
    f->ScanRecords();
  }
  f->FinishAttrs();
  f->meta_.source_format = f->pipe_mode_ ? "perf.data (pipe mode)" : "perf.data";
  // Without attr.use_clockid samples carry perf_clock() (local_clock on x86: per-CPU, not global).
  if (f->meta_.clock.empty()) f->meta_.clock = "perf";
  return f;
}

Status PerfDataFile::ParseFileHeader() {
  auto bytes = input_->bytes();
  const std::string& path = input_->path();
  if (bytes.size() < pd::kPipeHeaderSize) {
    return MakeError(kExitDataErr, "perfdata.truncated", "'" + path + "' is too short for a perf.data header",
                     "the recording was cut off; record again");
  }
  uint64_t magic = LoadLe64(bytes.data());
  if (magic == pd::kMagicSwapped) {
    return MakeError(kExitDataErr, "perfdata.foreign-endian", "'" + path + "' is a big-endian perf.data file",
                     "read it with perf on a big-endian host "
                     "(perf script) and give exitscope the text");
  }
  if (magic != pd::kMagicLe) {
    return MakeError(kExitDataErr, "perfdata.bad-magic", "'" + path + "' is not a perf.data file (no PERFILE2 magic)",
                     "omit --format (or use --format auto) to detect the input kind from its content");
  }
  uint64_t header_size = LoadLe64(bytes.data() + 8);
  if (header_size == pd::kPipeHeaderSize) {
    pipe_mode_ = true;
    data_offset_ = pd::kPipeHeaderSize;
    data_ = bytes.subspan(pd::kPipeHeaderSize);
    return Status::Ok();
  }
  if (header_size >= pd::kFileHeaderMinSize && bytes.size() < header_size) {
    return MakeError(kExitDataErr, "perfdata.truncated",
                     "'" + path + "' is " + std::to_string(bytes.size()) + " bytes, shorter than its " +
                         std::to_string(header_size) + "-byte perf.data header",
                     "the file was cut short (perf killed, partial copy); record or copy it again");
  }
  if (header_size < pd::kFileHeaderMinSize) {
    return MakeError(kExitDataErr, "perfdata.bad-header",
                     "'" + path + "' has a perf.data header of impossible size " + std::to_string(header_size) +
                         " (a file header is at least " + std::to_string(pd::kFileHeaderMinSize) + " bytes, a pipe's " +
                         std::to_string(pd::kPipeHeaderSize) + ")",
                     "the file is damaged; record it again");
  }
  const uint8_t* h = bytes.data();
  uint64_t attr_size = LoadLe64(h + pd::kHeaderAttrSizeOff);
  if (Status st = ParseAttrSection(attr_size, LoadLe64(h + pd::kHeaderAttrsOff), LoadLe64(h + pd::kHeaderAttrsOff + 8));
      !st) {
    return st;
  }
  uint64_t data_off = LoadLe64(h + pd::kHeaderDataOff);
  uint64_t data_size = LoadLe64(h + pd::kHeaderDataOff + 8);
  if (data_off > bytes.size()) {
    return MakeError(kExitDataErr, "perfdata.truncated", "'" + path + "' ends before its data section",
                     "the file was cut short (perf killed, partial copy); record or copy it again");
  }
  if (data_size == 0) {
    // perf writes the final header only when recording ends; a killed `perf record` leaves size 0
    // and no feature sections. Read the records up to the end of the file.
    diagnostics_->Bump(DiagId::kPerfdataUnfinishedHeader);
    data_size = bytes.size() - data_off;
  } else if (data_size > bytes.size() - data_off) {
    diagnostics_->Bump(DiagId::kPerfdataTruncated);
    data_size = bytes.size() - data_off;
  }
  data_offset_ = data_off;
  data_ = bytes.subspan(data_off, data_size);
  // Feature sections: an array of {offset, size}, one per set bit, right after the data section.
  if (data_off + LoadLe64(h + pd::kHeaderDataOff + 8) <= bytes.size()) {
    ParseFeatureSections(bytes.subspan(0, header_size));
  }
  return Status::Ok();
}

Status PerfDataFile::ParseAttrSection(uint64_t attr_size, uint64_t offset, uint64_t size) {
  auto bytes = input_->bytes();
  // Each entry is a struct perf_file_attr: perf_event_attr, then a perf_file_section locating its
  // ids; the header's attr_size counts both.
  const std::string hint = "the file is damaged; `perf report --header-only -i FILE` shows whether perf reads it";
  if (offset > bytes.size() || size > bytes.size() - offset) {
    return MakeError(kExitDataErr, "perfdata.truncated",
                     "'" + input_->path() + "' is " + std::to_string(bytes.size()) +
                         " bytes and ends inside its attrs section (bytes " + std::to_string(offset) + " to " +
                         std::to_string(offset + size) + ")",
                     "the file was cut short (perf killed, partial copy); record or copy it again");
  }
  if (attr_size < pd::kAttrMinSize + 16) {
    return MakeError(kExitDataErr, "perfdata.bad-attrs", "'" + input_->path() + "' has a damaged attrs section", hint);
  }
  uint64_t attr_bytes = attr_size - 16;
  // Two claims on each entry's size: the header's attr_size and the attr's own size field. Trusting
  // a wrong attr_size reads every attr from the wrong place (0 events, no word of it).
  uint32_t own_size = size >= pd::kAttrMinSize ? LoadLe32(bytes.data() + offset + pd::kAttrSizeOff) : 0;
  if (size % attr_size != 0 || (size != 0 && own_size != attr_bytes)) {
    return MakeError(kExitDataErr, "perfdata.bad-attr-size",
                     "'" + input_->path() + "': its header's attr_size " + std::to_string(attr_size) +
                         " does not fit its attrs section (" + std::to_string(size) + " bytes, the first attr says " +
                         std::to_string(own_size) + " + 16)",
                     hint);
  }
  // Written so that a huge attr_size cannot wrap around (found by fuzz/perfdata_fuzzer).
  for (uint64_t pos = offset; attr_size <= offset + size - pos; pos += attr_size) {
    uint64_t ids_off = LoadLe64(bytes.data() + pos + attr_bytes);
    uint64_t ids_size = LoadLe64(bytes.data() + pos + attr_bytes + 8);
    std::span<const uint8_t> ids;
    if (ids_off <= bytes.size() && ids_size <= bytes.size() - ids_off) ids = bytes.subspan(ids_off, ids_size);
    AddAttr(bytes.subspan(pos, attr_bytes), ids);
  }
  return Status::Ok();
}

void PerfDataFile::AddAttr(std::span<const uint8_t> a, std::span<const uint8_t> id_bytes) {
  if (a.size() < pd::kAttrMinSize) {
    diagnostics_->Bump(DiagId::kPerfdataBadAttr);
    return;
  }
  PerfAttr attr;
  attr.type = LoadLe32(a.data() + pd::kAttrTypeOff);
  attr.config = LoadLe64(a.data() + pd::kAttrConfigOff);
  attr.sample_type = LoadLe64(a.data() + pd::kAttrSampleTypeOff);
  attr.read_format = LoadLe64(a.data() + pd::kAttrReadFormatOff);
  uint64_t flags = LoadLe64(a.data() + pd::kAttrFlagsOff);
  attr.sample_id_all = flags & pd::kAttrFlagSampleIdAll;
  if ((flags & pd::kAttrFlagUseClockId) && a.size() >= pd::kAttrClockIdOff + 4) {
    meta_.clock = ClockName(static_cast<int32_t>(LoadLe32(a.data() + pd::kAttrClockIdOff)));
  }
  for (size_t i = 0; i + 8 <= id_bytes.size(); i += 8) attr.ids.push_back(LoadLe64(id_bytes.data() + i));
  attrs_.push_back(std::move(attr));
}

void PerfDataFile::ParseFeatureSections(std::span<const uint8_t> header) {
  auto bytes = input_->bytes();
  uint64_t table = data_offset_ + data_.size();
  int n = 0;
  for (int bit = 0; bit < pd::kFeatureBits; ++bit) {
    uint64_t word = LoadLe64(header.data() + pd::kHeaderFeaturesOff + (bit / 64) * 8);
    if (!(word >> (bit % 64) & 1)) continue;
    uint64_t entry = table + static_cast<uint64_t>(n++) * 16;
    if (entry + 16 > bytes.size()) {
      diagnostics_->Bump(DiagId::kPerfdataMissingFeatures);
      return;
    }
    uint64_t off = LoadLe64(bytes.data() + entry), size = LoadLe64(bytes.data() + entry + 8);
    if (off > bytes.size() || size > bytes.size() - off) {
      diagnostics_->Bump(DiagId::kPerfdataBadFeature);
      continue;
    }
    ParseFeature(bit, bytes.subspan(off, size));
  }
}

namespace {

// HEADER_CMDLINE: u32 nr, then nr strings: the perf command line, joined by spaces.
std::string RecordCommand(std::span<const uint8_t> body) {
  uint32_t nr = LoadLe32(body.data());
  size_t pos = 4;
  std::string cmd, s;
  for (uint32_t i = 0; i < nr && ReadHeaderString(body, &pos, &s); ++i) cmd += (i ? " " : "") + s;
  return cmd;
}

// HEADER_EVENT_DESC: u32 nr, u32 attr_size; per event: attr, u32 nr_ids, string name, u64 ids[nr_ids].
// Each attr is named by its first id (or, without ids, by its position).
void NameAttrsFromEventDesc(std::span<const uint8_t> body, std::vector<PerfAttr>* attrs) {
  if (body.size() < 8) return;
  uint32_t nr = LoadLe32(body.data()), attr_size = LoadLe32(body.data() + 4);
  size_t pos = 8;
  std::string s;
  for (uint32_t i = 0; i < nr; ++i) {
    if (pos + attr_size + 4 > body.size()) break;
    pos += attr_size;
    uint32_t nr_ids = LoadLe32(body.data() + pos);
    pos += 4;
    if (!ReadHeaderString(body, &pos, &s)) break;
    if (pos + uint64_t{nr_ids} * 8 > body.size()) break;
    uint64_t first_id = nr_ids ? LoadLe64(body.data() + pos) : 0;
    pos += uint64_t{nr_ids} * 8;
    for (auto& a : *attrs) {
      if (!a.ids.empty() && a.ids[0] == first_id) a.name = s;
    }
    if (nr_ids == 0 && i < attrs->size()) (*attrs)[i].name = s;
  }
}

}  // namespace

void PerfDataFile::ParseFeature(int feature, std::span<const uint8_t> body) {
  size_t pos = 0;
  std::string s;
  switch (feature) {
    case pd::kFeatTracingData: tracing_data_ = body; break;
    case pd::kFeatHostname:
      if (ReadHeaderString(body, &pos, &s)) meta_.hostname = s;
      break;
    case pd::kFeatOsRelease:
      if (ReadHeaderString(body, &pos, &s)) meta_.kernel = s;
      break;
    case pd::kFeatArch:
      if (ReadHeaderString(body, &pos, &s)) meta_.arch = s;
      break;
    case pd::kFeatNrCpus:
      // u32 nr_cpus_available, u32 nr_cpus_online.
      if (body.size() >= 4) meta_.cpu_count = static_cast<int>(LoadLe32(body.data()));
      break;
    case pd::kFeatCpuDesc:
      if (ReadHeaderString(body, &pos, &s)) {
        meta_.cpu_description = meta_.cpu_description.empty() ? s : s + " " + meta_.cpu_description;
      }
      break;
    case pd::kFeatCpuId:
      // x86: "vendor,family,model,stepping" (tools/perf/arch/x86/util/header.c).
      if (ReadHeaderString(body, &pos, &s)) {
        if (s.starts_with("AuthenticAMD") || s.starts_with("HygonGenuine")) meta_.isa_hint = Isa::kSvm;
        if (s.starts_with("GenuineIntel")) meta_.isa_hint = Isa::kVmx;
        meta_.cpu_description += meta_.cpu_description.empty() ? s : " (" + s + ")";
      }
      break;
    case pd::kFeatCmdline:
      if (body.size() >= 4) meta_.record_command = RecordCommand(body);
      break;
    case pd::kFeatEventDesc: NameAttrsFromEventDesc(body, &attrs_); break;
    default: break;
  }
}

namespace {

// PERF_RECORD_COMM: u32 pid, tid; char comm[].
void ApplyComm(std::span<const uint8_t> body, TraceMeta* meta) {
  if (body.size() < 9) return;
  int32_t pid = static_cast<int32_t>(LoadLe32(body.data())), tid = static_cast<int32_t>(LoadLe32(body.data() + 4));
  const char* c = reinterpret_cast<const char*>(body.data() + 8);
  meta->comm_by_tid[tid] = std::string(c, strnlen(c, body.size() - 8));
  meta->tgid_by_tid[tid] = pid;
}

// PERF_RECORD_FORK: u32 pid, ppid, tid, ptid; u64 time. A new thread carries its parent's comm until
// COMM.
void ApplyFork(std::span<const uint8_t> body, TraceMeta* meta) {
  if (body.size() < 16) return;
  int32_t pid = static_cast<int32_t>(LoadLe32(body.data())), tid = static_cast<int32_t>(LoadLe32(body.data() + 8));
  int32_t ptid = static_cast<int32_t>(LoadLe32(body.data() + 12));
  meta->tgid_by_tid[tid] = pid;
  if (!meta->comm_by_tid.count(tid) && meta->comm_by_tid.count(ptid)) {
    meta->comm_by_tid[tid] = meta->comm_by_tid[ptid];
  }
}

// What the metadata pass found that loses data: perf's own losses and records we cannot read.
void BumpScanLosses(const PerfRecordStats& stats, Diagnostics* diagnostics) {
  if (stats.lost_events || stats.lost_records) {
    diagnostics->Bump(DiagId::kPerfdataLostEvents, stats.lost_events ? stats.lost_events : stats.lost_records);
  }
  if (stats.compressed_records) diagnostics->Bump(DiagId::kPerfdataCompressedUnsupported, stats.compressed_records);
}

// PERF_SAMPLE_READ's values (perf_event.h read_format): one value or a group of them, each with the
// optional id and lost count, after the optional enabled/running times.
bool SkipReadValues(uint64_t rf, size_t body_size, const uint8_t** p, const uint8_t* end) {
  auto need = [&](uint64_t n) { return static_cast<uint64_t>(end - *p) >= n; };
  uint64_t per_value = 8 + ((rf & pd::kReadId) ? 8 : 0) + ((rf & pd::kReadLost) ? 8 : 0);
  uint64_t times = ((rf & pd::kReadTotalTimeEnabled) ? 8 : 0) + ((rf & pd::kReadTotalTimeRunning) ? 8 : 0);
  uint64_t nr = 1;
  if (rf & pd::kReadGroup) {
    if (!need(8)) return false;
    nr = LoadLe64(*p);
    if (nr > body_size) return false;
    *p += 8;
  }
  if (!need(times + nr * per_value)) return false;
  *p += times + nr * per_value;
  return true;
}

// PERF_SAMPLE_CALLCHAIN: u64 nr; u64 ips[nr].
bool SkipCallchain(size_t body_size, const uint8_t** p, const uint8_t* end) {
  if (end - *p < 8) return false;
  uint64_t nr = LoadLe64(*p);
  *p += 8;
  if (nr > body_size / 8 || static_cast<uint64_t>(end - *p) < nr * 8) return false;
  *p += nr * 8;
  return true;
}

// Sequential access to a perf.data's records through a window read with pread(2) (`read`), or in
// place in data() (not `read`: pipe-mode input in memory, fuzzers' bytes). At(pos, size) stays
// valid until the next call; the caller keeps [pos, pos + size) inside data().
class DataWindow {
 public:
  DataWindow(const PerfDataFile* file, bool read) : file_(file), read_(read) {}
  const uint8_t* At(uint64_t pos, size_t size) {
    if (!read_) return file_->data().data() + pos;
    if (pos < begin_ || pos + size > end_) {
      begin_ = pos;
      end_ = std::min<uint64_t>(file_->data().size(), pos + std::max<uint64_t>(kBytes, size));
      buffer_.resize(std::max<size_t>(buffer_.size(), end_ - begin_));
      file_->ReadData(begin_, end_ - begin_, buffer_.data());
    }
    return buffer_.data() + (pos - begin_);
  }

 private:
  static constexpr uint64_t kBytes = 256 << 10;  // > the largest record (u16 size); stays in L2
  const PerfDataFile* file_;
  bool read_;
  uint64_t begin_ = 0, end_ = 0;  // the window, inside data()
  std::vector<uint8_t> buffer_;
};

// DataWindow's access for one chunk read whole: data()[begin, ...) read (pread) into one buffer
// that grows as the walk goes on (`first` bytes, then what a record needs, at least kMore), so the
// chunk's bytes are there, read once, for whoever parses it next. Not `read`: in place.
class ChunkWindow {
 public:
  ChunkWindow(const PerfDataFile* file, bool read, uint64_t begin, uint64_t first, HugeVector<uint8_t>* buffer)
      : file_(file),
        read_(read),
        begin_(begin),
        end_(begin),
        grow_(std::max<uint64_t>(first, kMore)),
        buffer_(buffer) {}
  const uint8_t* At(uint64_t pos, size_t size) {
    if (!read_) return file_->data().data() + pos;
    if (pos + size > end_) {
      const uint64_t to = std::min<uint64_t>(file_->data().size(), std::max<uint64_t>(pos + size, end_ + grow_));
      grow_ = kMore;
      // Grown only, never shrunk: a buffer kept from chunk to chunk is not zeroed again.
      if (buffer_->size() < to - begin_) buffer_->resize(to - begin_);
      file_->ReadData(end_, to - end_, buffer_->data() + (end_ - begin_));
      end_ = to;
    }
    return buffer_->data() + (pos - begin_);
  }

 private:
  static constexpr uint64_t kMore = 4 << 10;  // past the first read: what is read past a chunk's end
  const PerfDataFile* file_;
  bool read_;
  uint64_t begin_, end_;  // read so far, inside data()
  uint64_t grow_;
  HugeVector<uint8_t>* buffer_;
};

}  // namespace

namespace {

enum class WalkStop { kEnd, kReached, kTruncated, kBadRecord, kRefused };

// The record chain from *pos: on(type, body, &next) for each whole record (false refuses it: the
// walk stops before it), until `end`, or until *pos reaches `stop_at` (which `on` may move).
// *pos: where it stopped. `window`: DataWindow or ChunkWindow.
template <typename Window, typename OnRecord>
WalkStop WalkRecords(Window& window, uint64_t* pos, uint64_t end, const uint64_t& stop_at, OnRecord&& on) {
  while (*pos < end) {
    if (*pos >= stop_at) return WalkStop::kReached;
    if (end - *pos < pd::kRecordHeaderSize) return WalkStop::kTruncated;
    const uint8_t* r = window.At(*pos, pd::kRecordHeaderSize);
    const uint32_t type = LoadLe32(r);
    const uint16_t size = LoadLe16(r + 6);
    if (size < pd::kRecordHeaderSize) return WalkStop::kBadRecord;
    if (size > end - *pos) return WalkStop::kTruncated;
    r = window.At(*pos, size);
    uint64_t next = *pos + size;
    if (!on(type, std::span<const uint8_t>(r + pd::kRecordHeaderSize, size - pd::kRecordHeaderSize), &next)) {
      return WalkStop::kRefused;
    }
    *pos = next;
  }
  return WalkStop::kEnd;
}

// HEADER_TRACING_DATA: u32 size, and the tracing data follows the record, padded to 8 bytes: *next
// past it. False (*next = end) when it runs past `end`.
bool SkipTracingData(std::span<const uint8_t> body, uint64_t end, uint64_t* next) {
  const uint64_t padded = PerfDataFile::TracingDataPaddedSize(body);
  if (padded > end - *next) {
    *next = end;
    return false;
  }
  *next += padded;
  return true;
}

void CountRecord(uint32_t type, std::span<const uint8_t> body, PerfRecordStats* stats) {
  switch (type) {
    case pd::kRecordSample: ++stats->samples; break;
    case pd::kRecordLost:  // u64 id; u64 lost.
      ++stats->lost_records;
      if (body.size() >= 16) stats->lost_events += LoadLe64(body.data() + 8);
      break;
    case pd::kRecordLostSamples:  // u64 lost.
      ++stats->lost_records;
      if (body.size() >= 8) stats->lost_events += LoadLe64(body.data());
      break;
    case pd::kRecordFinishedRound: ++stats->finished_rounds; break;
    case pd::kRecordCompressed: ++stats->compressed_records; break;
    default: break;
  }
}

}  // namespace

void PerfDataFile::ScanRecords() {
  const uint64_t end = data_.size();
  // A mapped file-mode file is read through a window (pread): its pages are never mapped into the
  // process, so a 15 GB recording needs no 15 GB of memory to be opened, and the walk takes no
  // page fault. Pipe-mode records keep spans into the data (tracing data, attrs): read in place.
  const bool read = !pipe_mode_ && input_->mapped();
  DataWindow window(this, read);
  auto on = [&](uint32_t type, std::span<const uint8_t> body, uint64_t* next) {
    CountRecord(type, body, &stats_);
    switch (type) {
      case pd::kRecordComm:
      case pd::kRecordFork: ApplyNameRecord(type, body); break;
      case pd::kRecordHeaderAttr:
        // Pipe mode: perf_event_attr (its own size field) then the ids to the record end. A file
        // has its attrs, tracing data and features in its header: these records are not its own
        // (and a reader that walks it chunk by chunk could not take them in late).
        if (pipe_mode_ && body.size() >= pd::kAttrMinSize) {
          uint32_t attr_size = LoadLe32(body.data() + pd::kAttrSizeOff);
          if (attr_size < pd::kAttrMinSize || attr_size > body.size()) attr_size = pd::kAttrMinSize;
          AddAttr(body.subspan(0, attr_size), body.subspan(attr_size));
        }
        break;
      case pd::kRecordHeaderTracingData: {
        // Pipe mode: u32 size; the tracing data follows the record, padded to 8 bytes (skipped in
        // a file, as every reader of its records skips it).
        const uint64_t at = *next;
        if (!SkipTracingData(body, end, next)) {
          diagnostics_->Bump(DiagId::kPerfdataTruncated);
          return true;
        }
        if (pipe_mode_ && body.size() >= 4)
          tracing_data_ = std::span<const uint8_t>(data_.data() + at, LoadLe32(body.data()));
        break;
      }
      case pd::kRecordHeaderFeature:
        // Pipe mode: u64 feature id, then the same body as a file-mode feature section.
        if (pipe_mode_ && body.size() >= 8) ParseFeature(static_cast<int>(LoadLe64(body.data())), body.subspan(8));
        break;
      default: break;
    }
    return true;
  };
  uint64_t pos = 0;
  const WalkStop stop = WalkRecords(window, &pos, end, UINT64_MAX, on);
  if (stop == WalkStop::kTruncated || stop == WalkStop::kBadRecord) {
    diagnostics_->Bump(stop == WalkStop::kBadRecord ? DiagId::kPerfdataBadRecord : DiagId::kPerfdataTruncated);
  }
  records_end_ = pos;
  BumpScanLosses(stats_, diagnostics_);
}

void PerfDataFile::CompleteScan() {
  if (!scan_pending_) return;
  scan_pending_ = false;
  ScanRecords();
}

const uint8_t* PerfDataFile::CutChunk(ChunkScan* scan, uint64_t spacing, HugeVector<uint8_t>* bytes, uint64_t* begin,
                                      uint64_t* end, std::vector<NameRecord>* names) const {
  const bool read = input_->mapped();
  const uint64_t size = data_.size();
  *begin = scan->pos;
  ChunkWindow window(this, read, scan->pos, spacing, bytes);
  uint64_t stop_at = UINT64_MAX;
  // ScanRecords' walk for a file (pipe mode's header records are not a file's).
  const WalkStop stop =
      WalkRecords(window, &scan->pos, size, stop_at, [&](uint32_t type, std::span<const uint8_t> body, uint64_t* next) {
        CountRecord(type, body, &scan->stats);
        if (type == pd::kRecordComm || type == pd::kRecordFork) names->push_back({type, {body.begin(), body.end()}});
        if (type == pd::kRecordHeaderTracingData && !SkipTracingData(body, size, next)) scan->truncated = true;
        if (*next - *begin >= spacing) stop_at = *next;  // the chunk ends past this record
        return true;
      });
  *end = scan->pos;
  if (stop != WalkStop::kReached) scan->ended = true;
  if (stop == WalkStop::kTruncated) scan->truncated = true;
  if (stop == WalkStop::kBadRecord) scan->bad_record = true;
  return read ? bytes->data() : data_.data() + *begin;
}

void PerfDataFile::ApplyNames(const std::vector<NameRecord>& names) {
  for (const NameRecord& n : names) ApplyNameRecord(n.type, n.body);
}

void PerfDataFile::ApplyNameRecord(uint32_t type, std::span<const uint8_t> body) {
  // Applied to the records' own names first, so a FORK copies its parent's name from a record,
  // never from the tracing data's cmdlines, whether the walk runs before those are read (Open) or
  // after (OpenChunked).
  const bool comm = type == pd::kRecordComm;
  (comm ? ApplyComm : ApplyFork)(body, &record_names_);
  if (body.size() < (comm ? 9u : 16u)) return;  // what ApplyComm / ApplyFork take
  const int32_t tid = static_cast<int32_t>(LoadLe32(body.data() + (comm ? 4 : 8)));
  if (auto t = record_names_.tgid_by_tid.find(tid); t != record_names_.tgid_by_tid.end())
    meta_.tgid_by_tid[tid] = t->second;
  if (auto c = record_names_.comm_by_tid.find(tid); c != record_names_.comm_by_tid.end())
    meta_.comm_by_tid[tid] = c->second;
}

void PerfDataFile::FinishChunkScan(const ChunkScan& scan) {
  scan_pending_ = false;
  stats_ = scan.stats;
  records_end_ = scan.pos;
  if (scan.truncated) diagnostics_->Bump(DiagId::kPerfdataTruncated);
  if (scan.bad_record) diagnostics_->Bump(DiagId::kPerfdataBadRecord);
  BumpScanLosses(stats_, diagnostics_);
}

void PerfDataFile::FinishAttrs() {
  if (attrs_.empty()) return;
  uint64_t st = attrs_[0].sample_type;
  for (uint32_t i = 0; i < attrs_.size(); ++i) {
    if (attrs_[i].sample_type != st) uniform_sample_type_ = false;
    for (uint64_t id : attrs_[i].ids) attr_by_id_[id] = i;
  }
  // The id's position must not depend on the attr (perf requires it too: evlist id_pos).
  if (st & pd::kSampleIdentifier) {
    id_pos_ = 0;
  } else if (st & pd::kSampleId) {
    id_pos_ = !!(st & pd::kSampleIp) + !!(st & pd::kSampleTid) + !!(st & pd::kSampleTime) + !!(st & pd::kSampleAddr);
  }
  FinishFixedLayout();
}

// The offsets ParseSample would read at, when they are the same for every sample that carries RAW:
// one sample_type among the attrs with RAW (others, such as perf's dummy event for side-band
// records, may differ), no READ or CALLCHAIN (variable-sized) before RAW, a little-endian host (the
// fast path loads in host order; perf.data is read as little-endian), and, unless every attr has
// that sample_type, an id in every sample and ids dense enough to index a table by.
void PerfDataFile::FinishFixedLayout() {
  fixed_ = FixedLayout{};
  if constexpr (std::endian::native != std::endian::little) return;
  uint64_t st = 0;
  bool found = false;
  for (const PerfAttr& a : attrs_) {
    if (!(a.sample_type & pd::kSampleRaw)) continue;
    if (found && a.sample_type != st) return;
    st = a.sample_type;
    found = true;
  }
  if (!found || (st & (pd::kSampleRead | pd::kSampleCallchain))) return;
  if (!uniform_sample_type_) {
    if (id_pos_ < 0) return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& [id, index] : attr_by_id_) lo = std::min(lo, id), hi = std::max(hi, id);
    if (attr_by_id_.empty() || hi - lo >= kMaxDenseIds) return;
    dense_id_base_ = lo;
    attr_by_dense_id_.assign(hi - lo + 1, -1);
    for (const auto& [id, index] : attr_by_id_) attr_by_dense_id_[id - lo] = static_cast<int32_t>(index);
  }
  int at = 0;
  auto field = [&](uint64_t bit, int* where) {
    if (!(st & bit)) return;
    if (where) *where = at;
    at += 8;
  };
  // PERF_RECORD_SAMPLE's order (perf_event.h), as ParseSample reads it: the later id wins.
  field(pd::kSampleIdentifier, &fixed_.id_at);
  field(pd::kSampleIp, nullptr);
  field(pd::kSampleTid, &fixed_.tid_at);
  field(pd::kSampleTime, &fixed_.time_at);
  field(pd::kSampleAddr, nullptr);
  field(pd::kSampleId, &fixed_.id_at);
  field(pd::kSampleStreamId, nullptr);
  field(pd::kSampleCpu, &fixed_.cpu_at);
  field(pd::kSamplePeriod, nullptr);
  // The id is looked up where every attr has it (id_pos_, as perf requires).
  if (!uniform_sample_type_ && fixed_.id_at != id_pos_ * 8) {
    fixed_ = FixedLayout{};
    return;
  }
  fixed_.raw_at = static_cast<uint32_t>(at);
  fixed_.after_raw = (st & pd::kSampleFieldsAfterRaw) != 0;
  fixed_.sample_type = st;
  fixed_.on = true;
}

int64_t PerfDataFile::FirstFastParseMismatch(uint64_t* fast_parsed) const {
  if (fast_parsed) *fast_parsed = 0;
  DataWindow window(this, !pipe_mode_ && input_->mapped());
  uint64_t pos = 0;
  int64_t mismatch = -1;
  WalkRecords(
      window, &pos, records_end_, UINT64_MAX, [&](uint32_t type, std::span<const uint8_t> body, uint64_t* next) {
        if (type == pd::kRecordHeaderTracingData) *next += TracingDataPaddedSize(body);
        PerfSample fast, slow;
        if (type != pd::kRecordSample || !TryParseSampleFast(body, &fast)) return true;
        if (fast_parsed) ++*fast_parsed;
        const bool ok = ParseSample(body, &slow);
        if (!ok || fast.ts_ns != slow.ts_ns || fast.pid != slow.pid || fast.tid != slow.tid || fast.cpu != slow.cpu ||
            fast.id != slow.id || fast.attr != slow.attr || fast.raw.data() != slow.raw.data() ||
            fast.raw.size() != slow.raw.size() || fast.size_mismatch != slow.size_mismatch) {
          mismatch = static_cast<int64_t>(pos);
          return false;
        }
        return true;
      });
  return mismatch;
}

bool PerfDataFile::ParseSample(std::span<const uint8_t> body, PerfSample* out) const {
  if (attrs_.empty()) return false;
  const PerfAttr* attr = &attrs_[0];
  if (!uniform_sample_type_ && id_pos_ >= 0) {
    if (body.size() < static_cast<size_t>(id_pos_ + 1) * 8) return false;
    const uint64_t id = LoadLe64(body.data() + id_pos_ * 8);
    bool covered = false;
    attr = DenseAttr(id, &covered);
    if (!covered) {
      auto it = attr_by_id_.find(id);
      attr = it == attr_by_id_.end() ? nullptr : &attrs_[it->second];
    }
    if (!attr) return false;
  }
  uint64_t st = attr->sample_type;
  const uint8_t* p = body.data();
  const uint8_t* end = p + body.size();
  auto need = [&](size_t n) { return static_cast<size_t>(end - p) >= n; };
  // Fields in the order of perf.data-file-format.txt / perf_event.h's PERF_RECORD_SAMPLE.
  if (st & pd::kSampleIdentifier) {
    if (!need(8)) return false;
    out->id = LoadLe64(p), p += 8;
  }
  if (st & pd::kSampleIp) {
    if (!need(8)) return false;
    p += 8;
  }
  if (st & pd::kSampleTid) {
    if (!need(8)) return false;
    out->pid = static_cast<int32_t>(LoadLe32(p)), out->tid = static_cast<int32_t>(LoadLe32(p + 4)), p += 8;
  }
  if (st & pd::kSampleTime) {
    if (!need(8)) return false;
    out->ts_ns = LoadLe64(p), p += 8;
  }
  if (st & pd::kSampleAddr) {
    if (!need(8)) return false;
    p += 8;
  }
  if (st & pd::kSampleId) {
    if (!need(8)) return false;
    out->id = LoadLe64(p), p += 8;
  }
  if (st & pd::kSampleStreamId) {
    if (!need(8)) return false;
    p += 8;
  }
  if (st & pd::kSampleCpu) {
    if (!need(8)) return false;
    out->cpu = static_cast<int32_t>(LoadLe32(p)), p += 8;
  }
  if (st & pd::kSamplePeriod) {
    if (!need(8)) return false;
    p += 8;
  }
  if ((st & pd::kSampleRead) && !SkipReadValues(attr->read_format, body.size(), &p, end)) return false;
  if ((st & pd::kSampleCallchain) && !SkipCallchain(body.size(), &p, end)) return false;
  if (st & pd::kSampleRaw) {
    // u32 size; char data[size]; the record is padded to u64 after it.
    if (!need(4)) return false;
    uint32_t size = LoadLe32(p);
    p += 4;
    if (!need(size)) return false;
    out->raw = std::span<const uint8_t>(p, size);
    p += size;
  }
  // Bytes left over mean the sample_type does not describe this record (a flipped bit drops or
  // adds a field, shifting every field after it): what was read is not this sample's.
  if (!(st & pd::kSampleFieldsAfterRaw) && end - p >= 8) {
    out->size_mismatch = true;
    return false;
  }
  // Later fields (BRANCH_STACK, REGS_USER, … CGROUP) follow RAW; a tracepoint reader needs none.
  out->attr = attr;
  return true;
}

uint64_t PerfDataFile::LoadDataU64(uint64_t offset) const {
  auto bytes = input_->bytes();
  uint64_t at = data_offset_ + offset;
  uint8_t buf[8] = {};
  if (at < bytes.size()) std::memcpy(buf, bytes.data() + at, std::min<uint64_t>(8, bytes.size() - at));
  return LoadLe64(buf);
}

bool PerfDataFile::ParseSampleIdTrailer(std::span<const uint8_t> body, uint64_t* ts_ns, int32_t* cpu,
                                        bool* has_ts) const {
  if (has_ts) *has_ts = false;
  if (attrs_.empty() || !attrs_[0].sample_id_all) return false;
  uint64_t st = attrs_[0].sample_type;
  // struct sample_id: {pid,tid} {time} {id} {stream_id} {cpu,res} {identifier}, at the record end.
  size_t n = !!(st & pd::kSampleTid) + !!(st & pd::kSampleTime) + !!(st & pd::kSampleId) +
             !!(st & pd::kSampleStreamId) + !!(st & pd::kSampleCpu) + !!(st & pd::kSampleIdentifier);
  if (body.size() < n * 8) return false;
  const uint8_t* p = body.data() + body.size() - n * 8;
  if (st & pd::kSampleTid) p += 8;
  if (st & pd::kSampleTime) {
    *ts_ns = LoadLe64(p), p += 8;
    if (has_ts) *has_ts = true;
  }
  if (st & pd::kSampleId) p += 8;
  if (st & pd::kSampleStreamId) p += 8;
  if (st & pd::kSampleCpu) *cpu = static_cast<int32_t>(LoadLe32(p));
  return true;
}

}  // namespace exitscope
