#include "model/event_source.h"

namespace exitscope {

bool KvmEventSource::NextBatch(KvmEventBatch* batch) {
  batch_events_.resize(kKvmEventBatchSize);
  batch_losses_.clear();
  size_t n = 0;
  LostEvents lost;
  while (n < kKvmEventBatchSize) {
    lost.cpu = -1;
    if (!Next(&batch_events_[n], &lost)) break;
    if (lost.cpu >= 0) batch_losses_.push_back({static_cast<uint32_t>(n), lost});
    ++n;
  }
  batch->events = {batch_events_.data(), n};
  batch->refs = {};
  batch->losses = batch_losses_;
  return n != 0;
}

}  // namespace exitscope
