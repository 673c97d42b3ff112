//===- executor_factory.cpp - Executors by name, and their GPU extras -----===//

#include "runtime/train/executor_factory.h"

#include "runtime/core/process_group.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/train/data_parallel.h"
#if RN_HAVE_CUDA
#include "runtime/cuda/device_context.h"
#include "runtime/cuda/eager_executor.h"
#include "runtime/cuda/graph_executor.h"
#include "runtime/cuda/timeline.h"
#endif

#include <cerrno>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

namespace rn::train {

#if RN_HAVE_CUDA
struct GpuTrace::Impl {
  std::unique_ptr<cuda::Timeline> timeline;
};
#else
struct GpuTrace::Impl {};
#endif

bool builtWithCuda() { return RN_HAVE_CUDA != 0; }

Status gpuAvailable() {
#if RN_HAVE_CUDA
  return cuda::deviceAvailable();
#else
  return Error("this runtime was built without CUDA (RN_ENABLE_CUDA)");
#endif
}

std::string resolveExecutorKind(const std::string &kind) {
  if (kind != "auto")
    return kind;
  return gpuAvailable().ok() ? "cuda-graph" : "cpu";
}

Result<std::unique_ptr<Executor>> createExecutor(const Artifact &artifact,
                                                 const ExecutorConfig &config) {
  const int rank = config.ranks ? config.ranks->rank() : 0;
  // Independent dropout masks per rank (rank 0: the run's own).
  const uint64_t seed = dropoutSeedOfRank(config.seed, rank);
  if (config.kind == "cpu") {
    CpuExecutor::Options options;
    options.seed = seed;
    options.interleave = config.interleave;
    options.replicas = config.ranks ? config.ranks->cpuReplicas() : nullptr;
    options.replicaRank = rank;
    Result<std::unique_ptr<CpuExecutor>> cpu = CpuExecutor::create(artifact, options);
    if (!cpu)
      return cpu.error();
    return std::unique_ptr<Executor>(std::move(*cpu));
  }
  if (config.kind != "cuda-eager" && config.kind != "cuda-graph")
    return Error("unknown executor '" + config.kind +
                 "' (cpu, cuda-eager, cuda-graph or auto)");
#if RN_HAVE_CUDA
  cuda::GraphExecutor::Options options;
  options.trace = config.trace ? config.trace->impl_->timeline->trace() : nullptr;
  options.seed = seed;
  options.syncDebug = config.syncDebug;
  options.deterministic = config.deterministic;
  options.allowTf32 = config.allowTf32;
  options.allowReducedPrecisionReduction = config.allowReducedPrecisionReduction;
  options.planCacheFile = config.planCacheFile;
  options.autotuneCandidates = config.autotuneCandidates;
  options.profile = config.profile;
  options.dumpGraphsDir = config.dumpGraphsDir;
  options.communicator = config.ranks ? config.ranks->communicator() : nullptr;
  options.device = config.ranks ? config.ranks->group().localRank : 0;
  auto adopt = [](auto created) -> Result<std::unique_ptr<Executor>> {
    if (!created)
      return created.error();
    return std::unique_ptr<Executor>(std::move(*created));
  };
  if (config.kind == "cuda-eager")
    return adopt(cuda::EagerExecutor::create(artifact, options));
  return adopt(cuda::GraphExecutor::create(artifact, options));
#else
  (void)artifact;
  return Error(config.kind + ": this runtime was built without CUDA (RN_ENABLE_CUDA)");
#endif
}

std::string loadSummary(const Executor &executor) {
#if RN_HAVE_CUDA
  if (auto *eager = dynamic_cast<const cuda::EagerExecutor *>(&executor))
    return eager->loadSummary();
  if (auto *graph = dynamic_cast<const cuda::GraphExecutor *>(&executor))
    return graph->loadSummary();
#endif
  (void)executor;
  return "";
}

Result<std::string> profileReport(Executor &executor) {
#if RN_HAVE_CUDA
  if (auto *eager = dynamic_cast<cuda::EagerExecutor *>(&executor))
    return eager->profileReport();
#endif
  (void)executor;
  return std::string();
}

double convFloorMs(const Executor &executor) {
#if RN_HAVE_CUDA
  if (auto *device = dynamic_cast<const cuda::DeviceExecutor *>(&executor))
    return device->convFloorMs();
#endif
  (void)executor;
  return -1;
}

size_t deviceMemoryInUse(const Executor &executor) {
#if RN_HAVE_CUDA
  if (executor.name() != "cpu")
    if (Result<size_t> used = cuda::deviceMemoryInUse(); used)
      return *used;
#endif
  (void)executor;
  return 0;
}

std::string planCachePath(const std::string &flag) {
  if (flag == "none")
    return "";
  if (!flag.empty())
    return flag;
  std::string base;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    base = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    base = std::string(home) + "/.cache";
  else
    return "";
  ::mkdir(base.c_str(), 0755);
  std::string dir = base + "/rn";
  if ((::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) || ::access(dir.c_str(), W_OK) != 0)
    return ""; // a read-only home: time the plans at every load
  return dir + "/conv-plans.json";
}

GpuTrace::GpuTrace() : impl_(std::make_unique<Impl>()) {}
GpuTrace::~GpuTrace() = default;

Result<std::unique_ptr<GpuTrace>> GpuTrace::create(const Program &program) {
#if RN_HAVE_CUDA
  Result<std::unique_ptr<cuda::Timeline>> timeline = cuda::Timeline::create(program);
  if (!timeline)
    return timeline.error();
  std::unique_ptr<GpuTrace> trace(new GpuTrace());
  trace->impl_->timeline = std::move(*timeline);
  return trace;
#else
  (void)program;
  return Error("a GPU timeline needs a runtime built with CUDA (RN_ENABLE_CUDA)");
#endif
}

Status GpuTrace::start() {
#if RN_HAVE_CUDA
  RN_RETURN_IF_ERROR(impl_->timeline->start());
  recording_ = true;
  return Status::success();
#else
  return Error("a GPU timeline needs a runtime built with CUDA (RN_ENABLE_CUDA)");
#endif
}

Result<GpuTrace::Summary> GpuTrace::write(const std::string &path) {
  recording_ = false;
#if RN_HAVE_CUDA
  Result<cuda::Timeline::Summary> s = impl_->timeline->write(path);
  if (!s)
    return s.error();
  Summary summary;
  summary.gpuRecords = s->gpuRecords;
  summary.unlabeled = s->unlabeled;
  summary.windowMs = s->windowMs;
  summary.busyMs = s->busyMs;
  summary.dropped = s->dropped;
  return summary;
#else
  (void)path;
  return Error("a GPU timeline needs a runtime built with CUDA (RN_ENABLE_CUDA)");
#endif
}

void GpuTrace::record(const char *track, std::string name,
                      std::chrono::steady_clock::time_point begin,
                      std::chrono::steady_clock::time_point end) {
  if (!recording_)
    return;
#if RN_HAVE_CUDA
  impl_->timeline->hostSpan(track, std::move(name), begin, end);
#else
  (void)track, (void)name, (void)begin, (void)end;
#endif
}

} // namespace rn::train
