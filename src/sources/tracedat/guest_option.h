// The trace.dat GUEST option, both ways: trace-cmd's fields (trace-cmd.dat.v7.5.txt, as trace-cmd
// 3.1.6 lib/trace-cmd/trace-input.c trace_guest_load reads them: a NUL-terminated name, u64 trace
// id, u32 vCPU count, then per vCPU u32 index and u32 host pid) and what `exitscope record` appends
// after them: the VMM process and each of its threads that exited. trace-cmd reads its fields and
// never looks past the last pair (nor does `trace-cmd dump --options`), so the file stays one it reads;
// an option of a new id would make every `trace-cmd report` warn "unknown option".
// In: a GuestInfo (+ RecordedVm) / the option's bytes. Out: the bytes / both (false: damaged).
// The reader hands our part on as the trace's thread → process map and process names
// (TraceMeta tgid_by_tid, comm_by_tid), which VmGrouper reads with the GUEST option's name.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "model/trace_meta.h"

namespace exitscope {

// trace-cmd rejects a GUEST option whose vCPU index is not below its count, so the pairs run
// 0..max with host pid 0 (the idle task, never a vCPU) where a vCPU did not exit; past this index
// a VM's vCPU map goes into our part only.
inline constexpr int32_t kGuestOptionMaxVcpu = 1023;

// What exitscope record knew of the VM on the live host, after trace-cmd's fields.
struct RecordedVm {
  int32_t pid = 0;  // the VMM process; 0: the option is trace-cmd's own (no part of ours)
  std::string comm, vmm, uuid;
  std::map<int32_t, int32_t> vcpu_by_tid;  // every thread of it that exited; vCPU index or -1
};

std::string EncodeGuestOption(const GuestInfo& guest, const RecordedVm* vm = nullptr);
bool DecodeGuestOption(std::span<const uint8_t> data, GuestInfo* guest, RecordedVm* vm);

}  // namespace exitscope
