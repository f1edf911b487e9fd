// Human names for the numbers KVM's detail tracepoints carry: MSR indices (kvm_msr), I/O ports
// (kvm_pio), KVM_EXIT_* reasons (kvm_userspace_exit), control registers (kvm_cr), hypercall numbers
// (kvm_hypercall) and kvm_mmio access types. In: a raw number. Out: a name, or "" when we have none
// (callers then print the number alone). Assumption: x86 hosts; names follow the kernel's headers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace exitscope {

// The kernel's spelling without MSR_ (msr-index.h): "IA32_TSC_DEADLINE", "X2APIC_ICR",
// "ARCH_PERFMON_EVENTSEL3", "HV_SINT2", "MTRRphysBase1" … or "". The only MSR table: the report and
// advise both name MSRs through it.
std::string MsrName(uint32_t index);
// "COM1 LSR", "PCI CONFIG_DATA", "PIT ch0", "CMOS/RTC index", "POST code" … or "".
std::string IoPortName(uint32_t port);
// "KVM_EXIT_IO" … or "KVM_EXIT_UNKNOWN(0x…)" for codes past the table.
std::string KvmExitName(uint32_t reason);
// "cr0", "cr3", "cr4", "cr8" … ("cr<N>" for any other N).
std::string CrName(uint32_t cr);
// "KVM_HC_KICK_CPU" … or "".
std::string_view HypercallName(uint64_t nr);
// kvm_mmio's type (include/trace/events/kvm.h KVM_TRACE_MMIO_*): "unsatisfied-read", "read", "write".
std::string_view MmioTypeName(uint32_t type);

}  // namespace exitscope
