//===- ops_collective.cpp - GPU launchers of the data-parallel collectives -===//
//
// all_reduce_mean averages its f32 operands over the data-parallel ranks
// into its results (the same slots: the op updates its inputs): one NCCL
// group of ncclAllReduce(ncclAvg) calls on the node's stream, which the
// cuda-graph executor captures with the rest of the subgraph; operands the
// memory plan placed back to back (a bucket's gradients, PlanMemory.cpp)
// are one call over their range. Without a
// communicator (one process) the mean over the one replica is the value,
// copied when result and operand are different buffers.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/communicator.h"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/op_launch.h"

#include <string>

namespace rn::cuda {
namespace {

Status launchAllReduceMean(const OpLaunch &l) {
  if (l.part >= 0)
    return Error("all_reduce_mean: has no parts, asked for part " + std::to_string(l.part));
  if (l.operands.empty() || l.operands.size() != l.results.size())
    return Error("all_reduce_mean: expects one result per operand, got " +
                 std::to_string(l.operands.size()) + " operands and " +
                 std::to_string(l.results.size()) + " results");
  if (!l.communicator) {
    for (size_t q = 0; q < l.operands.size(); ++q)
      RN_RETURN_IF_ERROR(
          copyTensor("all_reduce_mean", l.operands[q], l.results[q], l.stream.stream));
    return Status::success();
  }
  std::vector<Communicator::Buffer> buffers;
  for (size_t q = 0; q < l.operands.size(); ++q) {
    const DeviceTensor &in = l.operands[q], &out = l.results[q];
    if (in.dtype != DType::f32 || out.dtype != DType::f32 || in.numel() != out.numel())
      return Error("all_reduce_mean: operand " + std::to_string(q) +
                   " and its result must be f32 tensors of one size");
    buffers.push_back({static_cast<const float *>(in.data), static_cast<float *>(out.data),
                       size_t(in.numel())});
  }
  // A bucket the memory plan laid out back to back is one collective.
  return l.communicator->allReduceMean(
      Communicator::coalesce(std::move(buffers), size_t(l.arenaAlignment)), l.stream.stream);
}

} // namespace

const std::vector<OpLauncher> &collectiveLaunchers() {
  static const std::vector<OpLauncher> launchers = {
      {"all_reduce_mean", nullptr, launchAllReduceMean},
  };
  return launchers;
}

} // namespace rn::cuda
