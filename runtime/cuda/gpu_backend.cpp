//===- gpu_backend.cpp - librn_cuda.so's entry: the runtime's GPU half ----===//
//
// Implements runtime/train/gpu_backend.h over the executors, the
// communicator and the timeline of this folder. librn_runtime.so reaches
// it through rn_gpu_backend() after loading librn_cuda.so on the first
// request for a GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/gpu_backend.h"

#include "runtime/cuda/check.h"
#include "runtime/cuda/communicator.h"
#include "runtime/cuda/device_context.h"
#include "runtime/cuda/device_executor.h"
#include "runtime/cuda/eager_executor.h"
#include "runtime/cuda/graph_executor.h"
#include "runtime/cuda/timeline.h"
#include "runtime/train/data_parallel.h"
#include "runtime/train/executor_factory.h"

#include <algorithm>
#include <cstring>

namespace rn::cuda {
namespace {

using train::ExecutorConfig;
using train::GpuCommunicatorId;

class CudaTimeline final : public train::GpuTimeline {
public:
  explicit CudaTimeline(std::unique_ptr<Timeline> timeline) : timeline_(std::move(timeline)) {}
  Status start() override { return timeline_->start(); }
  Result<Summary> write(const std::string &path) override {
    Result<Timeline::Summary> s = timeline_->write(path);
    if (!s)
      return s.error();
    Summary summary;
    summary.gpuRecords = s->gpuRecords;
    summary.unlabeled = s->unlabeled;
    summary.windowMs = s->windowMs;
    summary.busyMs = s->busyMs;
    summary.dropped = s->dropped;
    return summary;
  }
  void hostSpan(const char *track, std::string name, std::chrono::steady_clock::time_point begin,
                std::chrono::steady_clock::time_point end) override {
    timeline_->hostSpan(track, std::move(name), begin, end);
  }
  CuptiTrace *trace() { return timeline_->trace(); }

private:
  std::unique_ptr<Timeline> timeline_;
};

class NcclRankLink final : public train::GpuRankLink {
public:
  explicit NcclRankLink(std::unique_ptr<Communicator> communicator)
      : communicator_(std::move(communicator)) {}
  bool distributed() const override { return communicator_->group().distributed(); }
  Status checkSameOnEveryRank(uint64_t value, const std::string &what) override {
    return communicator_->checkSameOnEveryRank(value, what);
  }
  Status allReduceSumHost(std::vector<double> &values) override {
    return communicator_->allReduceSumHost(values);
  }
  Status averageState(Executor &executor, const std::vector<std::string> &names) override {
    auto *device = dynamic_cast<const DeviceExecutor *>(&executor);
    if (!device)
      return Error("averaging the BN statistics over the ranks needs a GPU executor");
    const DeviceContext &ctx = device->deviceProgram().context();
    std::vector<Communicator::Buffer> buffers;
    for (const StateEntry &e : executor.program().state) {
      if (std::find(names.begin(), names.end(), e.name) == names.end() || !e.slot)
        continue;
      auto *p = static_cast<float *>(ctx.address(*e.slot, Variant::a));
      buffers.push_back({p, p, size_t(numel(e.shape))});
    }
    if (buffers.empty())
      return Status::success();
    return communicator_->allReduceMeanNow(buffers);
  }
  void abort() noexcept override { communicator_->abort(); }
  Communicator *communicator() { return communicator_.get(); }

private:
  std::unique_ptr<Communicator> communicator_;
};

static_assert(sizeof(GpuCommunicatorId) == sizeof(ncclUniqueId),
              "GpuCommunicatorId must hold an ncclUniqueId");

class CudaBackend final : public train::GpuBackend {
public:
  Status deviceAvailable() override { return cuda::deviceAvailable(); }

  Result<std::unique_ptr<Executor>> createExecutor(const Artifact &artifact,
                                                   const ExecutorConfig &config,
                                                   uint64_t seed) override {
    GraphExecutor::Options options;
    options.trace = config.trace
                        ? static_cast<CudaTimeline *>(config.trace->timeline())->trace()
                        : nullptr;
    options.seed = seed;
    options.syncDebug = config.syncDebug;
    options.deterministic = config.deterministic;
    options.allowTf32 = config.allowTf32;
    options.allowReducedPrecisionReduction = config.allowReducedPrecisionReduction;
    options.planCacheFile = config.planCacheFile;
    options.autotuneCandidates = config.autotuneCandidates;
    options.profile = config.profile;
    options.dumpGraphsDir = config.dumpGraphsDir;
    auto *link = config.ranks ? static_cast<NcclRankLink *>(config.ranks->gpuLink()) : nullptr;
    options.communicator = link ? link->communicator() : nullptr;
    options.device = config.ranks ? config.ranks->group().localRank : 0;
    auto adopt = [](auto created) -> Result<std::unique_ptr<Executor>> {
      if (!created)
        return created.error();
      return std::unique_ptr<Executor>(std::move(*created));
    };
    if (config.kind == "cuda-eager")
      return adopt(EagerExecutor::create(artifact, options));
    return adopt(GraphExecutor::create(artifact, options));
  }

  std::string loadSummary(const Executor &executor) override {
    if (auto *eager = dynamic_cast<const EagerExecutor *>(&executor))
      return eager->loadSummary();
    if (auto *graph = dynamic_cast<const GraphExecutor *>(&executor))
      return graph->loadSummary();
    return "";
  }

  Result<std::string> profileReport(Executor &executor) override {
    if (auto *eager = dynamic_cast<EagerExecutor *>(&executor))
      return eager->profileReport();
    return std::string();
  }

  double convFloorMs(const Executor &executor) override {
    if (auto *device = dynamic_cast<const DeviceExecutor *>(&executor))
      return device->convFloorMs();
    return -1;
  }

  size_t deviceMemoryInUse() override {
    Result<size_t> used = cuda::deviceMemoryInUse();
    return used ? *used : 0;
  }

  Result<std::unique_ptr<train::GpuTimeline>> createTimeline(const Program &program) override {
    Result<std::unique_ptr<Timeline>> timeline = Timeline::create(program);
    if (!timeline)
      return timeline.error();
    return std::unique_ptr<train::GpuTimeline>(new CudaTimeline(std::move(*timeline)));
  }

  Result<std::unique_ptr<train::GpuRankLink>> connectRank(
      const ProcessGroup &group, const GpuCommunicatorId *sharedId) override {
    if (cudaSetDevice(group.localRank) != cudaSuccess)
      return Error(group.describe() + ": cannot select GPU " + std::to_string(group.localRank));
    Result<std::unique_ptr<Communicator>> comm = Error("");
    if (sharedId) {
      ncclUniqueId id;
      std::memcpy(&id, sharedId->data(), sizeof id);
      comm = Communicator::create(group, id);
    } else {
      comm = Communicator::create(group);
    }
    if (!comm)
      return comm.error();
    return std::unique_ptr<train::GpuRankLink>(new NcclRankLink(std::move(*comm)));
  }

  Result<int> deviceCount() override {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess)
      return 0;
    return devices;
  }

  Result<GpuCommunicatorId> newCommunicatorId() override {
    Result<ncclUniqueId> id = Communicator::newUniqueId();
    if (!id)
      return id.error();
    GpuCommunicatorId bytes;
    std::memcpy(bytes.data(), &*id, sizeof(ncclUniqueId));
    return bytes;
  }

  Result<int> currentDevice() override {
    int device = -1;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess)
      return Error(std::string("cudaGetDevice: ") + cudaGetErrorString(e));
    return device;
  }

  Result<void *> createStream() override {
    cudaStream_t stream = nullptr;
    if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
        e != cudaSuccess)
      return Error(std::string("cudaStreamCreateWithFlags: ") + cudaGetErrorString(e));
    return static_cast<void *>(stream);
  }

  void destroyStream(void *stream) noexcept override {
    if (stream)
      (void)cudaStreamDestroy(static_cast<cudaStream_t>(stream));
  }

  Status copyAsync(void *dst, const void *src, size_t bytes, train::GpuCopy direction,
                   void *stream) override {
    const cudaMemcpyKind kind = direction == train::GpuCopy::deviceToDevice
                                    ? cudaMemcpyDeviceToDevice
                                    : cudaMemcpyDeviceToHost;
    if (cudaError_t e =
            cudaMemcpyAsync(dst, src, bytes, kind, static_cast<cudaStream_t>(stream));
        e != cudaSuccess)
      return Error(std::string("cudaMemcpyAsync: ") + cudaGetErrorString(e));
    return Status::success();
  }

  Status synchronize(void *stream) override {
    if (cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
        e != cudaSuccess)
      return Error(std::string("cudaStreamSynchronize: ") + cudaGetErrorString(e));
    return Status::success();
  }

  void injectFailureAfter(uint64_t calls) override {
    // The runtime's checked calls are counted process-wide; a test makes the
    // one `calls` from now fail, wherever it falls.
    injectFailureAt(checkedCalls() + calls);
  }
};

} // namespace
} // namespace rn::cuda

extern "C" __attribute__((visibility("default"))) rn::train::GpuBackend *
rn_gpu_backend(int abi, const char **why) {
  if (abi != rn::train::kGpuBackendAbi) {
    if (why)
      *why = "GPU backend interface version mismatch (kGpuBackendAbi)";
    return nullptr;
  }
  static rn::cuda::CudaBackend backend;
  return &backend;
}
