#include "model/kvm_event.h"

namespace exitscope {

std::string_view EventKindName(EventKind k) {
  static constexpr std::string_view kNames[] = {"other",
                                                "kvm_exit",
                                                "kvm_entry",
                                                "kvm_msr",
                                                "kvm_pio",
                                                "kvm_mmio",
                                                "kvm_cr",
                                                "kvm_hypercall",
                                                "kvm_userspace_exit",
                                                "kvm_page_fault",
                                                "kvm_emulate_insn",
                                                "kvm_fast_mmio",
                                                "kvm_cpuid",
                                                "kvm_apic_ipi",
                                                "kvm_apic",
                                                "kvm_inj_virq",
                                                "kvm_halt_poll_ns",
                                                "kvm_vcpu_wakeup",
                                                "kvm_sys_access",
                                                "kvm_handle_sys_reg",
                                                "kvm_hvc_arm64",
                                                "kvm_wfx_arm64",
                                                "kvm_guest_fault",
                                                "kvm_timer_update_irq",
                                                "vgic_update_irq_pending"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(EventKind::kCount));
  return kNames[static_cast<size_t>(k)];
}

}  // namespace exitscope
