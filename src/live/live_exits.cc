#include "live/live_exits.h"

namespace exitscope {

Result<std::unique_ptr<LiveExitSession>> LiveExitSession::Start(const LiveExitOptions& options, ExitSampleSink* sink,
                                                                std::function<void(const LostEvents&)> on_lost) {
  std::string tracefs = options.tracefs;
  if (!tracefs.empty()) {
    if (Status st = CheckTracefs(tracefs); !st.ok()) return st.error();
  } else {
    auto t = FindTracefs();
    if (!t.ok()) return t.error();
    tracefs = *t;
  }
  std::unique_ptr<LiveExitSession> s(new LiveExitSession());
  s->on_lost_ = std::move(on_lost);
  s->tap_ = options.tap;
  auto inst = TracefsInstance::Create(tracefs, options.buffer_kb);
  if (!inst.ok()) return inst.error();
  s->instance_ = std::move(*inst);
  if (Status st = s->instance_->EnableEvents(options.events.empty() ? DefaultExitEvents() : options.events, true); !st)
    return st.error();
  if (options.pid > 0) {
    auto tids = ThreadsOf(options.pid);
    if (!tids.ok()) return tids.error();
    if (Status st = s->instance_->FilterPids(*tids); !st) return st.error();
  }
  auto decoder = LivePageDecoder::Create(*s->instance_, &s->diag_);
  if (!decoder.ok()) return decoder.error();
  s->decoder_ = std::move(*decoder);
  s->pairer_ = std::make_unique<ExitPairer>(s->decoder_->meta(), &s->diag_, sink);
  auto reader = TracePipeReader::Open(*s->instance_);
  if (!reader.ok()) return reader.error();
  s->reader_ = std::move(*reader);
  LivePageDecoder* d = s->decoder_.get();
  s->page_sink_ = [d](int cpu, std::span<const uint8_t> page) -> Status {
    d->AddPage(cpu, page);
    return {};
  };
  if (Status st = s->instance_->SetTracingOn(true); !st) return st.error();
  return s;
}

Status LiveExitSession::Poll(int wait_ms) {
  auto n = reader_->Poll(wait_ms, page_sink_);
  if (!n.ok()) return n.error();
  return {};
}

Status LiveExitSession::Collect() {
  if (auto n = reader_->Drain(page_sink_); !n.ok()) return n.error();
  decoder_->Flush(
      [&](const KvmEvent& e) {
        if (tap_) tap_->OnKvmEvent(e);
        pairer_->OnEvent(e);
      },
      [&](const LostEvents& l) {
        pairer_->OnLost(l);
        if (on_lost_) on_lost_(l);
      });
  reader_->UpdateStats();
  return {};
}

Status LiveExitSession::Stop() {
  if (!instance_) return {};
  reader_.reset();  // open trace_pipe_raw files would keep the instance busy (rmdir: EBUSY)
  Status s = instance_->Remove();
  instance_.reset();
  return s;
}

LiveExitSession::~LiveExitSession() { (void)Stop(); }

}  // namespace exitscope
