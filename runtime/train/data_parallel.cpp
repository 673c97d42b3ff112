//===- data_parallel.cpp - Rank groups, NCCL start-up, in-process ranks ---===//

#include "runtime/train/data_parallel.h"

#include "runtime/cpu/replica_group.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace rn::train {

RankGroup::RankGroup(ProcessGroup group) : group_(std::move(group)) {}

// Out of line: the communicator's type is complete only here.
RankGroup::~RankGroup() = default;

std::unique_ptr<RankGroup> RankGroup::cpuReplica(ProcessGroup group,
                                                 cpu::ReplicaGroup &replicas) {
  auto ranks = std::make_unique<RankGroup>(std::move(group));
  ranks->replicas_ = &replicas;
  return ranks;
}

Result<std::unique_ptr<RankGroup>> RankGroup::connectGpu(ProcessGroup group,
                                                         const std::string &artifactPath,
                                                         uint64_t seed,
                                                         const InProcessRanks *shared) {
  Result<GpuBackend *> backend = gpuBackend();
  if (!backend)
    return Error(group.describe() + ": data-parallel GPU ranks need the GPU executors: " +
                 backend.error().message());
  Result<int> devices = (*backend)->deviceCount();
  if (!devices)
    return Error(group.describe() + ": " + devices.error().message());
  if (group.localRank >= *devices)
    return Error(group.describe() + ": LOCAL_RANK=" + std::to_string(group.localRank) +
                 " but this machine has " + std::to_string(*devices) + " GPU(s)");
  auto start = std::chrono::steady_clock::now();
  const bool threads = shared && shared->ncclId_;
  Result<std::unique_ptr<GpuRankLink>> link =
      (*backend)->connectRank(group, threads ? shared->ncclId_.get() : nullptr);
  if (!link)
    return link.error();
  auto ranks = std::make_unique<RankGroup>(group);
  ranks->link_ = std::move(*link);
  Result<uint64_t> digest = startupDigest(artifactPath, seed);
  if (!digest)
    return digest.error();
  RN_RETURN_IF_ERROR(
      ranks->link_->checkSameOnEveryRank(*digest, "artifact digest (its bytes and --seed)"));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string how = threads               ? "one process, a thread per GPU"
                    : group.distributed() ? "bootstrap " + group.rendezvous
                                          : "one rank";
  char line[512];
  std::snprintf(line, sizeof line,
                "NCCL communicator: %s on GPU %d, %s, ready in %.2f s; artifact digest "
                "%016llx on every rank",
                group.describe().c_str(), group.localRank, how.c_str(), seconds,
                (unsigned long long)*digest);
  ranks->connectionSummary_ = line;
  return ranks;
}

Status RankGroup::sum(std::vector<double> &values) {
  if (replicas_)
    return replicas_->allReduceSum(group_.rank, values);
  if (link_ && link_->distributed())
    return link_->allReduceSumHost(values);
  return Status::success();
}

namespace {

/// The buffers the ranks average: f32 ones that train_step updates (BN
/// running statistics). One no step writes (a uint8 model's input mean and
/// std) is the same on every rank, and an average could change its bits.
bool averagedBuffer(const Program &program, const StateEntry &e) {
  if (!e.slot || e.role != "buffer" || e.dtype != DType::f32)
    return false;
  const Function *train = program.findFunction("train_step");
  return train && std::any_of(train->stateResults.begin(), train->stateResults.end(),
                              [&](const Binding &b) { return b.name == e.name; });
}

} // namespace

Status RankGroup::averageBuffers(Executor &executor) {
  if (replicas_) {
    for (const StateEntry &e : executor.program().state) {
      if (!averagedBuffer(executor.program(), e))
        continue;
      Result<std::vector<float>> values = executor.readState(e.name);
      if (!values)
        return values.error();
      RN_RETURN_IF_ERROR(replicas_->allReduceMean(group_.rank, {{values->data(), values->size()}}));
      RN_RETURN_IF_ERROR(executor.writeState(e.name, *values));
    }
    return Status::success();
  }
  if (!link_ || !link_->distributed())
    return Status::success();
  std::vector<std::string> names;
  for (const StateEntry &e : executor.program().state)
    if (averagedBuffer(executor.program(), e))
      names.push_back(e.name);
  if (names.empty())
    return Status::success();
  return link_->averageState(executor, names);
}

void RankGroup::abort() noexcept {
  if (replicas_)
    replicas_->abort(group_.rank);
  if (link_)
    link_->abort();
}

bool compiledDataParallel(const Program &program) {
  for (const Function &f : program.functions)
    for (const Subgraph &sg : f.subgraphs)
      for (const Node &n : sg.nodes)
        if (n.kind == Node::Kind::op && n.op == "all_reduce_mean")
          return true;
  return false;
}

Status checkDataParallelRun(const Program &program, const std::string &artifactPath,
                            const ProcessGroup &group, bool cpuExecutor, bool cpuReplicas) {
  if (group.distributed() && !compiledDataParallel(program))
    return Error(group.describe() + ": " + artifactPath +
                 " was not compiled data-parallel (no all_reduce_mean): compile it with "
                 "--pipeline \"data-parallel=true ...\"");
  if (cpuExecutor && group.distributed() && !cpuReplicas)
    return Error(group.describe() +
                 ": data-parallel training needs a GPU executor (the CPU executor runs one "
                 "replica; --cpu-replicas N runs N in one process)");
  return Status::success();
}

InProcessRanks::InProcessRanks() = default;
InProcessRanks::~InProcessRanks() = default;

Result<std::unique_ptr<InProcessRanks>> InProcessRanks::gpus(int count) {
  Result<GpuBackend *> backend = gpuBackend();
  if (!backend)
    return backend.error();
  Result<int> devices = (*backend)->deviceCount();
  if (!devices)
    return devices.error();
  if (count > *devices)
    return Error("this machine has " + std::to_string(*devices) + " GPU(s)");
  Result<GpuCommunicatorId> id = (*backend)->newCommunicatorId();
  if (!id)
    return id.error();
  std::unique_ptr<InProcessRanks> ranks(new InProcessRanks());
  ranks->size_ = count;
  ranks->ncclId_ = std::make_unique<GpuCommunicatorId>(*id);
  return ranks;
}

std::unique_ptr<InProcessRanks> InProcessRanks::cpuReplicas(int count) {
  std::unique_ptr<InProcessRanks> ranks(new InProcessRanks());
  ranks->size_ = count;
  ranks->replicas_ = std::make_unique<cpu::ReplicaGroup>(count);
  return ranks;
}

bool InProcessRanks::run(const std::function<bool(int rank)> &rank) {
  std::vector<char> succeeded(size_t(size_), 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < size_; ++r)
    threads.emplace_back([&, r] {
      succeeded[size_t(r)] = rank(r);
      // A failed replica must not leave the others waiting for it.
      if (!succeeded[size_t(r)] && replicas_)
        replicas_->abort(r);
    });
  for (std::thread &t : threads)
    t.join();
  for (char ok : succeeded)
    if (!ok)
      return false;
  return true;
}

} // namespace rn::train
