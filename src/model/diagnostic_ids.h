// Every diagnostics counter exitscope has, declared once: id, stable name (tests and users grep it),
// severity and meaning (Perfetto's storage/stats.h). Code bumps an id; the one printer (text and JSON
// reporters) shows name, severity and meaning from here. In: nothing. Out: DiagId and DiagSpecOf().
// Adding a counter: one X(...) line below; nothing else names it as a string.
#pragma once

#include <cstdint>
#include <string_view>

namespace exitscope {

enum class Severity : uint8_t {
  kInfo,      // expected, explained (e.g. events skipped by a filter, exits before the first entry)
  kDataLoss,  // events the trace lost or we could not use: result is partial
  kError,     // malformed input
};

// X(id, name, severity, meaning)
#define EXITSCOPE_DIAGNOSTICS(X)                                                                                       \
  /* format/ */                                                                                                        \
  X(kFormatUnparsable, "format.unparsable", kInfo,                                                                     \
    "event formats that did not parse; their events are shown undecoded")                                              \
  /* sources/tracedat/ */                                                                                              \
  X(kTracedatBadTsc2nsec, "tracedat.bad_tsc2nsec", kError,                                                             \
    "TSC2NSEC option with an impossible shift; timestamps left in TSC cycles")                                         \
  X(kTracedatCorruptChunk, "tracedat.corrupt_chunk", kError,                                                           \
    "compressed data chunks that did not decompress; their events are lost")                                           \
  X(kTracedatTruncatedData, "tracedat.truncated_data", kDataLoss,                                                      \
    "CPU data running past the end of the file (file cut short)")                                                      \
  X(kTracedatBadGuestOption, "tracedat.bad_guest_option", kInfo, "GUEST options too short to read")                    \
  X(kTracedatTimeShiftIgnored, "tracedat.time_shift_ignored", kInfo,                                                   \
    "TIME_SHIFT (guest↔host clock sync) options not applied: times stay in this file's clock")                         \
  X(kTracedatInstanceSkipped, "tracedat.instance_skipped", kInfo,                                                      \
    "extra tracing instances (trace-cmd -B) not read; only the top instance is")                                       \
  X(kTracedatLatencyBufferSkipped, "tracedat.latency_buffer_skipped", kInfo,                                           \
    "latency-tracer text buffers (no kvm events) not read")                                                            \
  X(kTracedatKernelOverrun, "tracedat.kernel_overrun", kDataLoss,                                                      \
    "events the kernel reported overrun/dropped (CPUSTAT); see missed_events for the losses inside the "               \
    "recorded pages")                                                                                                  \
  X(kTracedatOptionsLoop, "tracedat.options_loop", kDataLoss,                                                          \
    "the chain of options sections loops back on itself (a damaged next-section offset): options "                     \
    "sections after the loop, if any, were not read")                                                                  \
  X(kTracedatCpuSizeMismatch, "tracedat.cpu_size_mismatch", kError,                                                    \
    "CPUs whose data size in the BUFFER option disagrees with the data the file holds (their chunk table, "            \
    "or the pages up to the next CPU's data): damaged header; the data the file holds was read")                       \
  X(kTracedatChunkCountMismatch, "tracedat.chunk_count_mismatch", kError,                                              \
    "CPUs whose chunk count disagrees with the chunks their data size holds (damaged count); the chunks "              \
    "the file holds were read")                                                                                        \
  X(kTracedatZeroedPage, "tracedat.zeroed_page", kDataLoss,                                                            \
    "ring-buffer pages that are all zero bytes (overwritten in the file): their events are missing")                   \
  X(kTracedatTruncatedPage, "tracedat.truncated_page", kDataLoss,                                                      \
    "ring-buffer pages whose records run past the page's commit size")                                                 \
  X(kTracedatBadRecordLength, "tracedat.bad_record_length", kError, "records with an impossible length")               \
  X(kTracedatMissedEvents, "tracedat.missed_events", kDataLoss,                                                        \
    "events the kernel ring buffer dropped (overrun), as counted by the kernel")                                       \
  X(kTracedatMissedEventsUnknown, "tracedat.missed_events_unknown", kDataLoss,                                         \
    "pages after which the kernel dropped an unknown number of events")                                                \
  X(kTracedatTimestampBackwards, "tracedat.timestamp_backwards", kError,                                               \
    "pages starting earlier than the previous page of the same CPU ended")                                             \
  /* sources/perfdata/ */                                                                                              \
  X(kPerfdataUnfinishedHeader, "perfdata.unfinished_header", kDataLoss,                                                \
    "perf record did not finish the file header (killed?); reading records to EOF")                                    \
  X(kPerfdataTruncated, "perfdata.truncated", kDataLoss,                                                               \
    "the file ends early (inside its data section, a record or its tracing data): the rest is missing")                \
  X(kPerfdataBadRecord, "perfdata.bad_record", kDataLoss, "records after this point are unreadable (damaged file)")    \
  X(kPerfdataBadAttr, "perfdata.bad_attr", kError, "a perf_event_attr shorter than its first version")                 \
  X(kPerfdataMissingFeatures, "perfdata.missing_features", kInfo,                                                      \
    "the header lists feature sections the file does not hold")                                                        \
  X(kPerfdataBadFeature, "perfdata.bad_feature", kError, "a feature section points past the file end")                 \
  X(kPerfdataLostEvents, "perfdata.lost_events", kDataLoss,                                                            \
    "events perf dropped (PERF_RECORD_LOST / LOST_SAMPLES): raise `perf record -m`")                                   \
  X(kPerfdataCompressedUnsupported, "perfdata.compressed_unsupported", kDataLoss,                                      \
    "zstd-compressed records (perf record -z) are not read: record without -z or "                                     \
    "`perf inject -i IN -o OUT` to decompress")                                                                        \
  X(kPerfdataBadSample, "perfdata.bad_sample", kError,                                                                 \
    "PERF_RECORD_SAMPLE shorter than its sample_type says (skipped)")                                                  \
  X(kPerfdataSampleSizeMismatch, "perfdata.sample_size_mismatch", kError,                                              \
    "samples longer than their sample_type's fields (a damaged sample_type or record size): skipped")                  \
  X(kPerfdataSampleWithoutRaw, "perfdata.sample_without_raw", kInfo,                                                   \
    "samples without a tracepoint payload (not a tracepoint event; skipped)")                                          \
  X(kPerfdataOutOfOrder, "perfdata.out_of_order", kInfo,                                                               \
    "samples that arrived after a later round was flushed (emitted late)")                                             \
  /* text */                                                                                                           \
  X(kTextLostEvents, "text.lost_events", kDataLoss, "events the ring buffer lost (\"[LOST n EVENTS]\" lines)")         \
  X(kTextUnparsedLine, "text.unparsed_line", kError, "lines that are not events of a known text dialect (skipped)")    \
  X(kTextBadKvmLine, "text.bad_kvm_line", kError, "kvm event lines whose text did not parse (skipped)")                \
  X(kTextRawFields, "text.raw_fields", kError,                                                                         \
    "kvm event lines printed as raw fields (trace-cmd report -R): each value is in the base of the kernel's "          \
    "format for it, which the text does not say (skipped); run trace-cmd report without -R, or read the trace.dat")    \
  X(kTextTimeBackwards, "text.time_backwards", kError,                                                                 \
    "event lines stamped earlier than the line before (the text is out of time order: damaged or "                     \
    "edited); the duration and the exits around them are suspect")                                                     \
  X(kTextTimestampOutlier, "text.timestamp_outlier", kDataLoss,                                                        \
    "event lines stamped far out of line with the lines around them (one damaged timestamp): skipped, "                \
    "and not counted in the trace's duration or rates")                                                                \
  X(kTextOverlongLine, "text.overlong_line", kDataLoss,                                                                \
    "lines over 64 KiB (newlines lost or binary data?): not parsed, the events in them are missing")                   \
  X(kTextTruncatedLastLine, "text.truncated_last_line", kDataLoss,                                                     \
    "a last event line without its newline (the file was cut): skipped, its fields may be cut short")                  \
  X(kTextTruncatedGzip, "text.truncated_gzip", kDataLoss,                                                              \
    "the gzip stream ends early or is damaged: events after the cut are missing")                                      \
  X(kTextMixedDialects, "text.mixed_dialects", kInfo, "lines of more than one text dialect")                           \
  X(kTextMixedIsa, "text.mixed_isa", kInfo, "kvm_exit reason names of both VMX and SVM")                               \
  X(kTextUnknownExitReason, "text.unknown_exit_reason", kError,                                                        \
    "kvm_exit lines with a reason name exitscope does not know (skipped)")                                             \
  X(kTextCoarseTimestamps, "text.coarse_timestamps", kInfo,                                                            \
    "event lines timed to the microsecond or coarser (the kernel's trace file, and trace-cmd report and "              \
    "perf script unless told otherwise): exit times are rounded to that, shorter ones read as 0 ns; "                  \
    "`trace-cmd report -t` and `perf script --ns` print ns, or read the trace.dat / perf.data itself")                 \
  X(kTextMixedTimestampForms, "text.mixed_timestamp_forms", kError,                                                    \
    "lines whose timestamp is printed unlike the first event line's (seconds vs a plain integer): "                    \
    "their unit is unknown, skipped")                                                                                  \
  /* sort/, pipeline/ */                                                                                               \
  X(kSortOutOfOrder, "sort.out_of_order", kError, "records older than one already emitted (a CPU clock stepped back)") \
  X(kTracedatSlicesOutOfOrder, "tracedat.slices_out_of_order", kError,                                                 \
    "a CPU's time went back, so cutting the trace by time may have misplaced records; read it with "                   \
    "--threads 1")                                                                                                     \
  /* decode/ */                                                                                                        \
  X(kDecodeSkippedEvents, "decode.skipped_events", kInfo,                                                              \
    "records that are not modeled kvm events (other tracepoints)")                                                     \
  X(kDecodeMissingField, "decode.missing_field", kInfo, "a field this kernel's format lacks; the value reads as 0")    \
  X(kDecodeUnknownEventId, "decode.unknown_event_id", kError,                                                          \
    "records whose event id has no format in the trace (a damaged id or format text): not decoded")                    \
  X(kDecodeFieldOutsideRecord, "decode.field_outside_record", kError,                                                  \
    "kvm records shorter than a field their format places in them (a damaged offset or a cut record): "                \
    "that field read as 0")                                                                                            \
  /* analysis/exit_pairer */                                                                                           \
  X(kPairExitBeforeFirstEntry, "pair.exit_before_first_entry", kInfo,                                                  \
    "exits of a thread before its first entry in the trace (still paired)")                                            \
  X(kPairFirstEntryWithoutExit, "pair.first_entry_without_exit", kInfo,                                                \
    "a thread's first entry in the trace (its exit happened before the trace)")                                        \
  X(kPairEntryWithoutExit, "pair.entry_without_exit", kDataLoss,                                                       \
    "entry with no open exit on its thread: an exit was lost")                                                         \
  X(kPairLostEntry, "pair.lost_entry", kDataLoss,                                                                      \
    "exit followed by another exit of the same thread: the entry between was lost; the first exit is "                 \
    "counted, not timed")                                                                                              \
  X(kPairDroppedByLoss, "pair.exit_dropped_by_lost_events", kDataLoss,                                                 \
    "open exits counted untimed: the source lost events while they were open")                                         \
  X(kPairCpuMigration, "pair.cpu_migration", kInfo, "exits whose thread migrated CPU before its entry (still timed)")  \
  X(kPairBeforeBufferStart, "pair.exit_before_buffer_start", kInfo,                                                    \
    "exits before the latest per-CPU start of an overwritten buffer (counted, not timed)")                             \
  X(kPairFinalExit, "pair.final_exit_without_entry", kInfo,                                                            \
    "exits still open when the trace ended (counted, not timed)")                                                      \
  X(kPairDetailOutsideExit, "pair.detail_outside_exit", kInfo,                                                         \
    "detail events (kvm_msr, kvm_pio …) outside any open exit of their thread")                                        \
  X(kPairDetailsTruncated, "pair.details_truncated", kInfo,                                                            \
    "exits with more detail events than kept per exit (the rest are not broken down)")                                 \
  X(kPairEntryNotRecorded, "pair.entry_not_recorded", kInfo,                                                           \
    "exits counted, not timed: the trace has no kvm_entry events (record -e kvm:kvm_entry too, or -e kvm)")            \
  X(kPairResumeMismatch, "pair.resume_mismatch", kDataLoss,                                                            \
    "exits whose next entry resumed the guest elsewhere (not at the exit's RIP or the next "                           \
    "instruction): events were lost between; counted, not timed")                                                      \
  X(kPairExitAcrossSilence, "pair.exit_across_silence", kDataLoss,                                                     \
    "non-blocking exits open while every CPU recorded nothing for 100 ms or more (a recording hole; "                  \
    "or the vCPU thread preempted that long, or held by a VMM whose kvm_userspace_exit was not "                       \
    "recorded); counted, not timed")                                                                                   \
  X(kPairHltBlockedWithoutWakeup, "pair.hlt_blocked_without_wakeup", kInfo,                                            \
    "HLT exits without kvm_vcpu_wakeup: their whole time is counted as blocked, none as handling "                     \
    "(record kvm:kvm_vcpu_wakeup to split polling, waiting and handling)")                                             \
  X(kPairResumeNotCheckedNested, "pair.resume_not_checked_nested", kInfo,                                              \
    "pairs of a nested-hypervisor vCPU whose RIP move was not checked (this kernel's kvm_entry has no"                 \
    " guest_mode field; a reflected exit resumes L1 elsewhere)")

enum class DiagId : uint16_t {
#define EXITSCOPE_DIAG_ENUM(id, name, severity, meaning) id,
  EXITSCOPE_DIAGNOSTICS(EXITSCOPE_DIAG_ENUM)
#undef EXITSCOPE_DIAG_ENUM
      kCount
};

struct DiagSpec {
  std::string_view name;
  Severity severity;
  std::string_view meaning;
};

const DiagSpec& DiagSpecOf(DiagId id);

}  // namespace exitscope
