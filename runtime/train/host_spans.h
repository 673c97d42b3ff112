//===- host_spans.h - Spans of host work for a timeline ---------*- C++ -*-===//
//
// The trainer marks its host work (preparing batches, submitting steps,
// polling, draining) as named spans, which a recorder puts on a timeline
// next to the GPU's work (rn-run --trace: GpuTrace in executor_factory.h).
// Without a recorder a span costs a clock read.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_HOST_SPANS_H
#define RN_RUNTIME_TRAIN_HOST_SPANS_H

#include <chrono>
#include <string>
#include <utility>

namespace rn::train {

class SpanRecorder {
public:
  virtual ~SpanRecorder() = default;
  /// A span of host work on `track` ("main", "loader"); called from any
  /// thread.
  virtual void record(const char *track, std::string name,
                      std::chrono::steady_clock::time_point begin,
                      std::chrono::steady_clock::time_point end) = 0;
};

/// Records the span from its construction to its destruction.
class ScopedSpan {
public:
  ScopedSpan(SpanRecorder *recorder, std::string name, const char *track = "main")
      : recorder_(recorder), name_(std::move(name)), track_(track),
        begin_(std::chrono::steady_clock::now()) {}
  ~ScopedSpan() {
    if (recorder_)
      recorder_->record(track_, std::move(name_), begin_, std::chrono::steady_clock::now());
  }
  ScopedSpan(const ScopedSpan &) = delete;
  ScopedSpan &operator=(const ScopedSpan &) = delete;

private:
  SpanRecorder *recorder_;
  std::string name_;
  const char *track_;
  std::chrono::steady_clock::time_point begin_;
};

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_HOST_SPANS_H
