//===- data_parallel.h - The ranks of a data-parallel run -------*- C++ -*-===//
//
// A data-parallel run has one rank per GPU (or per CPU replica), each with
// its own executor training its shard of every global batch
// (docs/rn-run.md, "Data-parallel training"). The ranks are started either
// as one process each, the way torchrun starts them (RANK, WORLD_SIZE, ...:
// runtime/core/process_group.h), or as host threads of one process
// (InProcessRanks: rn-run --gpus N, --cpu-replicas N).
//
// RankGroup is one rank's link to the others, owned by that rank (no
// per-thread globals): the NCCL communicator of a GPU rank, or the
// in-memory replica group of a CPU replica, or nothing for a run of one
// rank. The trainer sums its reported numbers and averages the BN running
// statistics through it; the executors' all_reduce_mean nodes use the
// communicator or replica group it hands out.
//
// The NCCL half compiles only with CUDA; without it connectGpu fails with a
// message, so the CPU-only build needs no other switch.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_DATA_PARALLEL_H
#define RN_RUNTIME_TRAIN_DATA_PARALLEL_H

#include "runtime/core/artifact.h"
#include "runtime/core/executor.h"
#include "runtime/core/process_group.h"
#include "runtime/core/status.h"
#include "runtime/train/gpu_backend.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rn::cpu {
class ReplicaGroup;
}

namespace rn::train {

class InProcessRanks;

class RankGroup {
public:
  /// A rank that talks to nobody: sums and averages leave values as they
  /// are (the default: rank 0 of 1).
  explicit RankGroup(ProcessGroup group = {});
  /// Rank `group.rank` of the CPU replicas `replicas` (not owned).
  static std::unique_ptr<RankGroup> cpuReplica(ProcessGroup group, cpu::ReplicaGroup &replicas);
  /// A GPU rank: selects GPU `group.localRank` for the calling thread,
  /// creates the NCCL communicator (from the rendezvous in `group`, or from
  /// the NCCL id of `shared` when the ranks are threads of this process) and
  /// checks that every rank loaded the same artifact file with the same
  /// seed (startupDigest). Errors name the rank.
  static Result<std::unique_ptr<RankGroup>> connectGpu(ProcessGroup group,
                                                        const std::string &artifactPath,
                                                        uint64_t seed,
                                                        const InProcessRanks *shared = nullptr);
  ~RankGroup();

  const ProcessGroup &group() const { return group_; }
  int rank() const { return group_.rank; }
  int size() const { return group_.worldSize; }

  /// Replaces `values` by their element-wise sums over the ranks.
  Status sum(std::vector<double> &values);
  /// Replaces every f32 "buffer" state entry that train_step updates (the
  /// BN running statistics, which each rank gathers from its own shards) by
  /// its mean over the ranks, as DDP's broadcast of buffers settles them;
  /// buffers only the host writes (a uint8 model's input mean and std) are
  /// left as they are. `executor` must be idle.
  Status averageBuffers(Executor &executor);
  /// Ends every pending and later collective of this rank with an error
  /// (NCCL: ncclCommAbort; CPU replicas: the group fails), so that no peer
  /// or teardown waits on a rank that failed. Never throws.
  void abort() noexcept;

  /// For the executors: the CPU replica group, or null.
  cpu::ReplicaGroup *cpuReplicas() const { return replicas_; }
  /// For the GPU executors: the NCCL communicator, or null.
  GpuRankLink *gpuLink() const { return link_.get(); }
  /// After connectGpu: "NCCL communicator: rank 0 of 2 on GPU 0, ..., ready
  /// in S s; artifact digest D on every rank".
  const std::string &connectionSummary() const { return connectionSummary_; }

  RankGroup(const RankGroup &) = delete;
  RankGroup &operator=(const RankGroup &) = delete;

private:
  ProcessGroup group_;
  cpu::ReplicaGroup *replicas_ = nullptr;
  std::unique_ptr<GpuRankLink> link_;
  std::string connectionSummary_;
};

/// Aborts `group` when destroyed unless succeeded() was called. Declared
/// after the executor, it runs before the executor's teardown, which waits
/// for its streams: a failed rank's collectives must not keep them busy.
class AbortUnlessSucceeded {
public:
  explicit AbortUnlessSucceeded(RankGroup *group) : group_(group) {}
  ~AbortUnlessSucceeded() {
    if (group_ && !succeeded_)
      group_->abort();
  }
  void succeeded() { succeeded_ = true; }

  AbortUnlessSucceeded(const AbortUnlessSucceeded &) = delete;
  AbortUnlessSucceeded &operator=(const AbortUnlessSucceeded &) = delete;

private:
  RankGroup *group_;
  bool succeeded_ = false;
};

/// Whether `program` averages its gradients over ranks (all_reduce_mean).
bool compiledDataParallel(const Program &program);

/// The checks of a rank launched data-parallel: several ranks need an
/// artifact compiled data-parallel (named `artifactPath`), and on the CPU
/// replicas of one process (`cpuReplicas`) rather than one CPU executor
/// per process.
Status checkDataParallelRun(const Program &program, const std::string &artifactPath,
                            const ProcessGroup &group, bool cpuExecutor, bool cpuReplicas);

/// The ranks of one process, a host thread each: GPU ranks sharing one
/// NCCL id (one communicator per GPU), or CPU replicas sharing one
/// in-memory replica group (the reference of the GPU ranks).
class InProcessRanks {
public:
  /// `count` GPU ranks; fails when the machine has fewer GPUs, or when
  /// built without CUDA.
  static Result<std::unique_ptr<InProcessRanks>> gpus(int count);
  static std::unique_ptr<InProcessRanks> cpuReplicas(int count);
  ~InProcessRanks();

  int size() const { return size_; }
  /// The CPU replicas' group, or null for GPU ranks.
  cpu::ReplicaGroup *replicas() const { return replicas_.get(); }

  /// Runs `rank(r)` for every rank r in a thread of its own and waits for
  /// all of them. A rank that fails (returns false) fails the replica group,
  /// so that no other replica waits for it (GPU ranks abort their own
  /// communicators). True when every rank succeeded.
  bool run(const std::function<bool(int rank)> &rank);

  InProcessRanks(const InProcessRanks &) = delete;
  InProcessRanks &operator=(const InProcessRanks &) = delete;

private:
  friend class RankGroup;
  InProcessRanks();
  int size_ = 0;
  std::unique_ptr<GpuCommunicatorId> ncclId_; ///< GPU ranks: their NCCL id
  std::unique_ptr<cpu::ReplicaGroup> replicas_;
};

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_DATA_PARALLEL_H
