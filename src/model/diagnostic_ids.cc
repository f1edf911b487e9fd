#include "model/diagnostic_ids.h"

#include "base/check.h"

namespace exitscope {
namespace {

constexpr DiagSpec kSpecs[] = {
#define EXITSCOPE_DIAG_SPEC(id, name, severity, meaning) {name, Severity::severity, meaning},
    EXITSCOPE_DIAGNOSTICS(EXITSCOPE_DIAG_SPEC)
#undef EXITSCOPE_DIAG_SPEC
};
static_assert(sizeof(kSpecs) / sizeof(kSpecs[0]) == static_cast<size_t>(DiagId::kCount));

}  // namespace

const DiagSpec& DiagSpecOf(DiagId id) {
  EXITSCOPE_CHECK(id < DiagId::kCount);
  return kSpecs[static_cast<size_t>(id)];
}

}  // namespace exitscope
