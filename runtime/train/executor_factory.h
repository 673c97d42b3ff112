//===- executor_factory.h - Executors by name, and their GPU extras -*- C++ -*-===//
//
// The one place that knows which executors exist: `cpu` (the reference),
// `cuda-eager` and `cuda-graph` (runtime/cuda), created from one
// configuration. Everything else in the trainer sees an rn::Executor. The
// GPU-only extras (the load summary, the eager profile, the convolution
// floor, device memory, the CUPTI timeline) are reached through functions
// here that answer for any executor, so callers need no CUDA headers and
// the CPU-only build needs no switch: there they report what is missing.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_EXECUTOR_FACTORY_H
#define RN_RUNTIME_TRAIN_EXECUTOR_FACTORY_H

#include "runtime/core/artifact.h"
#include "runtime/core/executor.h"
#include "runtime/core/status.h"
#include "runtime/train/gpu_backend.h"
#include "runtime/train/host_spans.h"
#include "runtime/train/run_options.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace rn::train {

class RankGroup;
class GpuTrace;

/// Success when a CUDA driver and device answer; else why not (also when
/// built without CUDA, or when the GPU half or an NVIDIA library it needs
/// does not load: gpu_backend.h).
Status gpuAvailable();
/// "auto" resolved: cuda-graph when a GPU answers, else cpu; other names
/// are returned as given.
std::string resolveExecutorKind(const std::string &kind);

struct ExecutorConfig {
  /// cpu, cuda-eager or cuda-graph.
  std::string kind = "cpu";
  /// The run's seed; each rank draws its dropout masks from
  /// dropoutSeedOfRank(seed, rank). The defaults are rn-run's
  /// (run_options.h).
  uint64_t seed = runDefaults().seed;
  /// The data-parallel rank's links (CPU replicas or NCCL), or null.
  RankGroup *ranks = nullptr;
  /// cpu: randomized interleaving with hazard checks.
  bool interleave = false;
  // GPU executors (runtime/cuda/device_program.h's options).
  bool syncDebug = false;
  bool deterministic = false;
  bool allowTf32 = false;
  bool allowReducedPrecisionReduction = false;
  /// Where convolution autotuning results are kept (planCachePath); empty:
  /// nowhere.
  std::string planCacheFile;
  int autotuneCandidates = int(runDefaults().autotuneCandidates);
  /// cuda-eager: timing events around every node (profileReport).
  bool profile = false;
  /// cuda-graph: Graphviz of every captured graph in this folder.
  std::string dumpGraphsDir;
  /// A timeline that follows the executor's work from its load, or null.
  GpuTrace *trace = nullptr;
};

/// The executor `config` names, created (not yet initialized) for
/// `artifact`, which must outlive it.
Result<std::unique_ptr<Executor>> createExecutor(const Artifact &artifact,
                                                 const ExecutorConfig &config);

/// What a GPU executor's load did (arena, graphs, timings); empty for cpu.
std::string loadSummary(const Executor &executor);
/// cuda-eager created with `profile`: the GPU time of the last train step
/// by op. Empty for other executors.
Result<std::string> profileReport(Executor &executor);
/// The autotuned times of a step's convolutions, summed; -1 when unknown
/// (cpu, or plans not timed).
double convFloorMs(const Executor &executor);
/// The device's memory in use (total - free); 0 on the CPU or when the
/// device does not say.
size_t deviceMemoryInUse(const Executor &executor);

/// Where convolution autotuning results are kept across runs: `flag` when
/// given ("none": nowhere, the empty string), else
/// $XDG_CACHE_HOME/rn/conv-plans.json or ~/.cache/rn/conv-plans.json (the
/// folder is created). Empty when no folder can be made.
std::string planCachePath(const std::string &flag);

/// A CUPTI timeline of the GPU's work with a track per program stream, plus
/// the host spans recorded between start() and write() (rn-run --trace).
/// Created before the executor (ExecutorConfig::trace), which labels its
/// work for it.
class GpuTrace final : public SpanRecorder {
public:
  /// Fails without CUDA or CUPTI.
  static Result<std::unique_ptr<GpuTrace>> create(const Program &program);
  ~GpuTrace() override;

  Status start();
  /// gpuRecords: kernels, copies, memsets; unlabeled: of those, not issued
  /// by a program node; windowMs: first GPU start to last GPU end; busyMs:
  /// the union of the GPU records' intervals; dropped: records CUPTI dropped.
  using Summary = GpuTimeline::Summary;
  /// Stops recording and writes the Chrome trace to `path`.
  Result<Summary> write(const std::string &path);

  void record(const char *track, std::string name, std::chrono::steady_clock::time_point begin,
              std::chrono::steady_clock::time_point end) override;

  GpuTrace(const GpuTrace &) = delete;
  GpuTrace &operator=(const GpuTrace &) = delete;

  /// The backend's timeline, for the GPU executor it follows.
  GpuTimeline *timeline() const;

private:
  explicit GpuTrace(std::unique_ptr<GpuTimeline> timeline);
  std::unique_ptr<GpuTimeline> timeline_;
  std::atomic<bool> recording_{false};
};

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_EXECUTOR_FACTORY_H
