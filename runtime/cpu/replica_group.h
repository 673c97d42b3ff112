//===- replica_group.h - Data-parallel CPU replicas in one process -*- C++ -*-===//
//
// The CPU reference of data-parallel training: N CpuExecutors in N host
// threads of one process (rn-run --cpu-replicas N), whose all_reduce_mean
// nodes average their gradients through this group in memory. It defines
// what the GPU ranks' NCCL all-reduce must compute, so CI can check the
// multi-rank logic (batch shards, reduced losses, averaged statistics)
// without GPUs: N replicas at batch B against one at batch N*B.
//
// Every collective is a rendezvous of all ranks: each rank hands in its
// buffers and waits; the last to arrive computes the result for all, in
// rank order in double, so every rank gets the same bits whatever the
// thread timing. A rank that fails calls abort(), which ends every pending
// and later collective with an error instead of a deadlock.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CPU_REPLICA_GROUP_H
#define RN_RUNTIME_CPU_REPLICA_GROUP_H

#include "runtime/core/status.h"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace rn::cpu {

class ReplicaGroup {
public:
  explicit ReplicaGroup(int size);

  int size() const { return size_; }

  struct Buffer {
    float *data = nullptr;
    size_t count = 0;
  };
  /// Replaces rank `rank`'s buffers by the element-wise mean over the ranks
  /// (every rank passes buffers of the same counts, in the same order).
  Status allReduceMean(int rank, const std::vector<Buffer> &buffers);
  /// Replaces `values` by their element-wise sum over the ranks.
  Status allReduceSum(int rank, std::vector<double> &values);
  /// Fails every pending and later collective ("rank R failed").
  void abort(int rank);

  ReplicaGroup(const ReplicaGroup &) = delete;
  ReplicaGroup &operator=(const ReplicaGroup &) = delete;

private:
  /// One rendezvous: `combine` runs once, in the last rank to arrive, over
  /// every rank's contribution.
  struct Contribution {
    std::vector<Buffer> buffers;
    std::vector<double> *values = nullptr;
  };
  Status rendezvous(int rank, Contribution contribution, bool mean);

  const int size_;
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<Contribution> pending_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::string failure_; ///< set by abort or a mismatch; ends every collective
};

} // namespace rn::cpu

#endif // RN_RUNTIME_CPU_REPLICA_GROUP_H
