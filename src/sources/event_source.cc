#include "sources/event_source.h"

namespace exitscope {
namespace {

// Events per batch of the default NextBatch: a few tens of KB, warm in L1/L2 when consumed.
constexpr size_t kDefaultBatch = 512;

}  // namespace

bool KvmEventSource::NextBatch(KvmEventBatch* batch) {
  batch_events_.resize(kDefaultBatch);
  batch_losses_.clear();
  size_t n = 0;
  LostEvents lost;
  while (n < kDefaultBatch) {
    lost.cpu = -1;
    if (!Next(&batch_events_[n], &lost)) break;
    if (lost.cpu >= 0) batch_losses_.push_back({static_cast<uint32_t>(n), lost});
    ++n;
  }
  batch->events = {batch_events_.data(), n};
  batch->losses = batch_losses_;
  return n != 0;
}

}  // namespace exitscope
