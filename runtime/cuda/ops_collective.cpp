//===- ops_collective.cpp - GPU launchers of the data-parallel collectives -===//
//
// all_reduce_mean averages its f32 operands over the data-parallel ranks
// into its results (the same slots: the op updates its inputs): one NCCL
// group of ncclAllReduce(ncclAvg) calls on the node's stream, which the
// cuda-graph executor captures with the rest of the subgraph; operands the
// memory plan placed back to back (a bucket's gradients, PlanMemory.cpp)
// are one call over their range, merged once in `prepare`. Without a
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

/// A launch's NCCL buffers, coalesced once at load (the operands are
/// gradients: the same slots in either variant).
struct AllReduceState : PreparedState {
  std::vector<Communicator::Buffer> buffers;
};

Status checkArity(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  if (l.operands.empty() || l.operands.size() != l.results.size())
    return Error("all_reduce_mean: expects one result per operand, got " +
                 std::to_string(l.operands.size()) + " operands and " +
                 std::to_string(l.results.size()) + " results");
  return Status::success();
}

Result<size_t> prepareAllReduceMean(const OpLaunch &l) {
  if (Status st = checkArity(l); !st.ok())
    return st.error();
  if (!l.communicator)
    return size_t(0);
  if (!l.prepared)
    return Error("all_reduce_mean: the executor keeps no prepared state");
  auto state = std::make_unique<AllReduceState>();
  for (size_t q = 0; q < l.operands.size(); ++q) {
    const DeviceTensor &in = l.operands[q], &out = l.results[q];
    if (in.dtype != DType::f32 || out.dtype != DType::f32 || in.numel() != out.numel())
      return Error("all_reduce_mean: operand " + std::to_string(q) +
                   " and its result must be f32 tensors of one size");
    state->buffers.push_back({static_cast<const float *>(in.data),
                              static_cast<float *>(out.data), size_t(in.numel())});
  }
  // A bucket the memory plan laid out back to back is one collective.
  state->buffers = Communicator::coalesce(std::move(state->buffers), size_t(l.arenaAlignment));
  *l.prepared = std::move(state);
  return size_t(0);
}

Status launchAllReduceMean(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(checkArity(l));
  if (!l.communicator) {
    for (size_t q = 0; q < l.operands.size(); ++q)
      RN_RETURN_IF_ERROR(
          copyTensor("all_reduce_mean", l.operands[q], l.results[q], l.stream.stream));
    return Status::success();
  }
  const auto *state =
      l.prepared ? dynamic_cast<const AllReduceState *>(l.prepared->get()) : nullptr;
  if (!state)
    return Error("all_reduce_mean: not prepared");
  return l.communicator->allReduceMean(state->buffers, l.stream.stream);
}

} // namespace

const std::vector<OpLauncher> &collectiveLaunchers() {
  static const std::vector<OpLauncher> launchers = {
      {OpKind::all_reduce_mean, prepareAllReduceMean, launchAllReduceMean},
  };
  return launchers;
}

} // namespace rn::cuda
