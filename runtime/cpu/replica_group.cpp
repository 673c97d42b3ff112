//===- replica_group.cpp - Data-parallel CPU replicas in one process ------===//
//
// See replica_group.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/replica_group.h"

namespace rn::cpu {

ReplicaGroup::ReplicaGroup(int size) : size_(size), pending_(size_t(size)) {}

void ReplicaGroup::abort(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.empty())
    failure_ = "replica " + std::to_string(rank) + " failed";
  done_.notify_all();
}

Status ReplicaGroup::allReduceMean(int rank, const std::vector<Buffer> &buffers) {
  return rendezvous(rank, Contribution{buffers, nullptr}, /*mean=*/true);
}

Status ReplicaGroup::allReduceSum(int rank, std::vector<double> &values) {
  return rendezvous(rank, Contribution{{}, &values}, /*mean=*/false);
}

Status ReplicaGroup::rendezvous(int rank, Contribution contribution, bool mean) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto failed = [&] {
    return Error("replica " + std::to_string(rank) + " of " + std::to_string(size_) +
                 ": collective abandoned: " + failure_);
  };
  if (!failure_.empty())
    return failed();
  if (rank < 0 || rank >= size_)
    return Error("replica rank " + std::to_string(rank) + " out of range");
  pending_[size_t(rank)] = std::move(contribution);
  uint64_t generation = generation_;
  if (++arrived_ < size_) {
    done_.wait(lock, [&] { return generation_ != generation || !failure_.empty(); });
    if (generation_ == generation)
      return failed();
    return Status::success();
  }
  // The last to arrive: every rank's contribution, in rank order.
  const Contribution &first = pending_[0];
  for (const Contribution &c : pending_)
    if (c.buffers.size() != first.buffers.size() || (c.values == nullptr) != (first.values == nullptr) ||
        (c.values && c.values->size() != first.values->size()))
      failure_ = "the ranks' collectives do not match (different buffers or order)";
  for (size_t b = 0; failure_.empty() && b < first.buffers.size(); ++b)
    for (const Contribution &c : pending_)
      if (c.buffers[b].count != first.buffers[b].count)
        failure_ = "the ranks' buffers " + std::to_string(b) + " differ in size";
  if (!failure_.empty()) {
    done_.notify_all();
    return failed();
  }
  for (size_t b = 0; b < first.buffers.size(); ++b)
    for (size_t i = 0; i < first.buffers[b].count; ++i) {
      double sum = 0;
      for (const Contribution &c : pending_)
        sum += double(c.buffers[b].data[i]);
      float value = float(mean ? sum / double(size_) : sum);
      for (const Contribution &c : pending_)
        c.buffers[b].data[i] = value;
    }
  if (first.values)
    for (size_t i = 0; i < first.values->size(); ++i) {
      double sum = 0;
      for (const Contribution &c : pending_)
        sum += (*c.values)[i];
      for (const Contribution &c : pending_)
        (*c.values)[i] = mean ? sum / double(size_) : sum;
    }
  arrived_ = 0;
  ++generation_;
  done_.notify_all();
  return Status::success();
}

} // namespace rn::cpu
