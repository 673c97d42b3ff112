//===- executor_factory.cpp - Executors by name, and their GPU extras -----===//

#include "runtime/train/executor_factory.h"

#include "runtime/core/process_group.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/train/data_parallel.h"
#include "runtime/train/gpu_backend.h"

#include <cerrno>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

namespace rn::train {

Status gpuAvailable() {
  Result<GpuBackend *> backend = gpuBackend();
  if (!backend)
    return backend.error();
  return (*backend)->deviceAvailable();
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
  Result<GpuBackend *> backend = gpuBackend();
  if (!backend)
    return Error(config.kind + ": " + backend.error().message());
  return (*backend)->createExecutor(artifact, config, seed);
}

// The extras ask the backend only for GPU executors: a CPU run never loads
// librn_cuda.so for them.
namespace {
GpuBackend *backendOf(const Executor &executor) {
  if (executor.name() == "cpu")
    return nullptr;
  Result<GpuBackend *> backend = gpuBackend();
  return backend ? *backend : nullptr;
}
} // namespace

std::string loadSummary(const Executor &executor) {
  GpuBackend *backend = backendOf(executor);
  return backend ? backend->loadSummary(executor) : std::string();
}

Result<std::string> profileReport(Executor &executor) {
  GpuBackend *backend = backendOf(executor);
  return backend ? backend->profileReport(executor) : Result<std::string>(std::string());
}

double convFloorMs(const Executor &executor) {
  GpuBackend *backend = backendOf(executor);
  return backend ? backend->convFloorMs(executor) : -1;
}

size_t deviceMemoryInUse(const Executor &executor) {
  GpuBackend *backend = backendOf(executor);
  return backend ? backend->deviceMemoryInUse() : 0;
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

GpuTrace::GpuTrace(std::unique_ptr<GpuTimeline> timeline) : timeline_(std::move(timeline)) {}
GpuTrace::~GpuTrace() = default;

Result<std::unique_ptr<GpuTrace>> GpuTrace::create(const Program &program) {
  Result<GpuBackend *> backend = gpuBackend();
  if (!backend)
    return Error("a GPU timeline needs the GPU executors: " + backend.error().message());
  Result<std::unique_ptr<GpuTimeline>> timeline = (*backend)->createTimeline(program);
  if (!timeline)
    return timeline.error();
  return std::unique_ptr<GpuTrace>(new GpuTrace(std::move(*timeline)));
}

GpuTimeline *GpuTrace::timeline() const { return timeline_.get(); }

Status GpuTrace::start() {
  RN_RETURN_IF_ERROR(timeline_->start());
  recording_ = true;
  return Status::success();
}

Result<GpuTrace::Summary> GpuTrace::write(const std::string &path) {
  recording_ = false;
  return timeline_->write(path);
}

void GpuTrace::record(const char *track, std::string name,
                      std::chrono::steady_clock::time_point begin,
                      std::chrono::steady_clock::time_point end) {
  if (!recording_)
    return;
  timeline_->hostSpan(track, std::move(name), begin, end);
}

} // namespace rn::train
