//===- gpu_backend.h - The GPU half of the runtime, loaded on first use -*- C++ -*-===//
//
// The GPU executors, their extras (load summary, profile, convolution
// floor, CUPTI timeline), NCCL and the device copies of Python's CUDA
// inputs live in librn_cuda.so (runtime/cuda), which links cuDNN, cuBLASLt,
// NCCL, CUPTI and the CUDA runtime. librn_runtime.so does not: it loads
// librn_cuda.so (dlopen) the first time a GPU is asked for, so that the
// runtime imports and trains on the CPU on a machine with no driver and
// none of NVIDIA's libraries, and a machine that lacks one is told which
// pip wheel brings it. Like PyTorch's and JAX's wheels, librn_cuda.so finds
// those libraries in NVIDIA's `nvidia-*` wheels through RPATHs relative to
// itself (site-packages/nvidia/{cu13,cudnn,nccl}/lib).
//
// Both libraries come from one build, so the interface is plain C++; the
// entry point checks that they agree on kGpuBackendAbi.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_GPU_BACKEND_H
#define RN_RUNTIME_TRAIN_GPU_BACKEND_H

#include "runtime/core/artifact.h"
#include "runtime/core/executor.h"
#include "runtime/core/process_group.h"
#include "runtime/core/status.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rn::train {

struct ExecutorConfig;

/// Bumped whenever this header changes: a librn_cuda.so from another build
/// is refused instead of called.
constexpr int kGpuBackendAbi = 1;

/// A CUPTI timeline (rn-run --trace).
class GpuTimeline {
public:
  virtual ~GpuTimeline() = default;
  virtual Status start() = 0;
  struct Summary {
    size_t gpuRecords = 0;
    size_t unlabeled = 0;
    double windowMs = 0;
    double busyMs = 0;
    uint64_t dropped = 0;
  };
  virtual Result<Summary> write(const std::string &path) = 0;
  virtual void hostSpan(const char *track, std::string name,
                        std::chrono::steady_clock::time_point begin,
                        std::chrono::steady_clock::time_point end) = 0;
};

/// One data-parallel rank's NCCL communicator.
class GpuRankLink {
public:
  virtual ~GpuRankLink() = default;
  virtual bool distributed() const = 0;
  /// Fails unless every rank passes the same `value` (`what` names it).
  virtual Status checkSameOnEveryRank(uint64_t value, const std::string &what) = 0;
  /// Replaces `values` by their sums over the ranks.
  virtual Status allReduceSumHost(std::vector<double> &values) = 0;
  /// Replaces the named f32 state entries of the (idle) GPU executor
  /// `executor` by their means over the ranks.
  virtual Status averageState(Executor &executor, const std::vector<std::string> &names) = 0;
  /// ncclCommAbort; never throws.
  virtual void abort() noexcept = 0;
};

/// NCCL's unique id (ncclUniqueId, 128 bytes), shared by the ranks that
/// are threads of one process.
using GpuCommunicatorId = std::array<char, 128>;

/// Which way a device copy goes (Python's CUDA inputs).
enum class GpuCopy { deviceToDevice, deviceToHost };

class GpuBackend {
public:
  virtual ~GpuBackend() = default;

  /// Success when a CUDA driver and device answer; else why not.
  virtual Status deviceAvailable() = 0;
  /// config.kind is cuda-eager or cuda-graph; `seed` is the rank's.
  virtual Result<std::unique_ptr<Executor>> createExecutor(const Artifact &artifact,
                                                           const ExecutorConfig &config,
                                                           uint64_t seed) = 0;
  /// What a GPU executor's load did; empty for other executors.
  virtual std::string loadSummary(const Executor &executor) = 0;
  /// cuda-eager with `profile`: the last step's GPU time by op.
  virtual Result<std::string> profileReport(Executor &executor) = 0;
  /// The autotuned convolutions' time per step; -1 when unknown.
  virtual double convFloorMs(const Executor &executor) = 0;
  /// The device's memory in use (total - free); 0 when it does not say.
  virtual size_t deviceMemoryInUse() = 0;

  virtual Result<std::unique_ptr<GpuTimeline>> createTimeline(const Program &program) = 0;

  /// Selects GPU group.localRank for the calling thread and connects its
  /// communicator (from the rendezvous in `group`, or from `sharedId` when
  /// the ranks are threads of this process).
  virtual Result<std::unique_ptr<GpuRankLink>> connectRank(const ProcessGroup &group,
                                                           const GpuCommunicatorId *sharedId) = 0;
  virtual Result<int> deviceCount() = 0;
  virtual Result<GpuCommunicatorId> newCommunicatorId() = 0;

  // Python's CUDA inputs (rn._native's Trainer.step on CUDA tensors).
  virtual Result<int> currentDevice() = 0;
  /// A non-blocking stream, as an opaque cudaStream_t.
  virtual Result<void *> createStream() = 0;
  virtual void destroyStream(void *stream) noexcept = 0;
  virtual Status copyAsync(void *dst, const void *src, size_t bytes, GpuCopy direction,
                           void *stream) = 0;
  virtual Status synchronize(void *stream) = 0;
  /// Tests only: the checked CUDA call `calls` from now fails.
  virtual void injectFailureAfter(uint64_t calls) = 0;
};

/// Whether this build has the GPU half (librn_cuda.so was built next to
/// librn_runtime.so).
bool builtWithCuda();

/// The GPU half, loaded on the first call (later calls return the same
/// backend, or the same error). The error says what is missing: a runtime
/// built without CUDA, librn_cuda.so not found, or which of NVIDIA's
/// libraries did not load and which pip wheel brings it. RN_CUDA_LIBRARY
/// names another librn_cuda.so.
Result<GpuBackend *> gpuBackend();

/// The pip wheel that brings the NVIDIA library named in a loader's
/// message (`dlerror()`'s "libcudnn.so.9: cannot open shared object
/// file"), or empty when it names none of them.
std::string nvidiaWheelFor(const std::string &loaderMessage);

} // namespace rn::train

/// librn_cuda.so's one exported symbol: its backend, or null (with `why`
/// set) when built for another kGpuBackendAbi.
extern "C" rn::train::GpuBackend *rn_gpu_backend(int abi, const char **why);

#endif // RN_RUNTIME_TRAIN_GPU_BACKEND_H
