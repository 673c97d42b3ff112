//===- timeline.h - rn-run --trace: a run's GPU timeline --------*- C++ -*-===//
//
// Ties CuptiTrace to a program: the executors label every prepared item's
// launch (or capture) with its index in itemLabels() (device_program.h);
// this names each GPU record by its node, op, part and subgraph and puts it
// on the track of the program stream the node was issued on (TRANS, COMP_1,
// COMP_2, COMP_3, UPDATE), whether it ran eagerly or inside a replayed
// graph. The host's spans (what rn-run was doing: preparing batches,
// submitting, waiting) go on host-thread tracks. Besides the JSON, the
// GPU's busy time over the traced window: the union of every kernel, copy
// and memset interval, so idle = window - busy, the time the GPU waited.
//
// Create the Timeline before the executor (graph nodes are only followed
// from then on), pass trace() in the executor's options, start() before the
// steps of interest and write() after they drained.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_TIMELINE_H
#define RN_RUNTIME_CUDA_TIMELINE_H

#include "runtime/core/artifact.h"
#include "runtime/core/status.h"
#include "runtime/cuda/cupti_trace.h"
#include "runtime/cuda/device_program.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace rn::cuda {

class Timeline {
public:
  static Result<std::unique_ptr<Timeline>> create(const Program &program);

  CuptiTrace *trace() { return trace_.get(); }
  Status start() { return trace_->start(); }

  /// A span of host work on `track` ("main").
  void hostSpan(std::string track, std::string name, std::chrono::steady_clock::time_point begin,
                std::chrono::steady_clock::time_point end);

  struct Summary {
    size_t gpuRecords = 0;  ///< kernels, copies, memsets
    size_t unlabeled = 0;   ///< of those, not issued by a program node
    double windowMs = 0;    ///< first GPU start to last GPU end
    double busyMs = 0;      ///< union of the GPU records' intervals
    uint64_t dropped = 0;   ///< records CUPTI dropped
  };
  /// Stops recording and writes the Chrome trace to `path`.
  Result<Summary> write(const std::string &path);

private:
  Timeline() = default;
  std::vector<ItemLabel> labels_;
  std::unique_ptr<CuptiTrace> trace_;
  struct Span {
    std::string track, name;
    std::chrono::steady_clock::time_point begin, end;
  };
  std::mutex spansMutex_; ///< host spans come from several threads
  std::vector<Span> spans_;
};

/// The trace track of a program stream ("COMP_1").
std::string streamTrack(Stream stream);

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_TIMELINE_H
