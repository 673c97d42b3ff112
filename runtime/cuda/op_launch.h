//===- op_launch.h - How the GPU executors run one op node ------*- C++ -*-===//
//
// Each op of the op table (op_kinds.h) has an OpLauncher: `launch` issues the node's
// work (or one part of a forking node) on the given stream, asynchronously,
// reading every per-step value (learning rate, step, loss scale, skip flag)
// from device memory so that the same launch can be captured into a CUDA
// graph;
// `prepare`, called once per node at load, builds and caches whatever the
// launch needs (cuDNN graphs and plans, cuBLASLt descriptors, the device
// table of a multi-tensor update, kept in the node's PreparedState) and
// returns the workspace bytes it uses on its stream. Nothing is allocated,
// built or planned in `launch`.
//
// Fusion stays inside one node, or one part of a forking node: a launcher
// never merges work with another node (docs/design.md).
//
// Launchers live with their kernels, one file per family
// (ops_elementwise.cpp, ops_norm.cpp, ops_update.cpp, ops_conv_linear.cpp,
// ops_collective.cpp), keyed by OpKind; they read attributes through the
// typed readers of op_attrs.h. op_launch.cpp joins their tables.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_OP_LAUNCH_H
#define RN_RUNTIME_CUDA_OP_LAUNCH_H

#include "runtime/core/artifact.h"
#include "runtime/core/op_kinds.h"
#include "runtime/core/status.h"
#include "runtime/cuda/device_tensor.h"
#include "runtime/cuda/stream_resources.h"

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace rn::cuda {

class Communicator;
class ConvRunner;
class GemmRunner;

/// What a launcher builds for one node (or part) at load and reads at every
/// launch, such as a device table of pointers: `prepare` stores it through
/// OpLaunch::prepared. The executor owns it, one per prepared item, and
/// destroys it before its device context.
struct PreparedState {
  virtual ~PreparedState() = default;
};

/// One execution of a node (or of one part of it).
struct OpLaunch {
  const Node &node;
  int part = -1; ///< index into node.parts; -1: the whole node
  /// The node's operands and results as device views, in node order, with
  /// the launch's variant applied (inputs_a slots moved to inputs_b for B).
  const std::vector<DeviceTensor> &operands;
  const std::vector<DeviceTensor> &results;
  const StreamResources &stream; ///< the node's (or the part's) stream
  ConvRunner &conv;
  GemmRunner &gemm;
  /// The run's dropout and stochastic-depth seed (cpu::RngKey::seed). See
  /// Note [Random streams] in runtime/cpu/cpu_kernels.h.
  uint64_t seed = 0;
  /// The node's (or part's) prepared state, owned by the executor: the same
  /// slot in `prepare` and in every `launch`. Null where the executor keeps
  /// none; a launcher that needs state then fails.
  std::unique_ptr<PreparedState> *prepared = nullptr;
  /// The data-parallel communicator; null for a one-process run, where a
  /// collective over the one replica is the identity.
  Communicator *communicator = nullptr;
  /// The arena's alignment (every slot starts at a multiple of it): what a
  /// launcher may assume of the gaps between slots.
  uint64_t arenaAlignment = 0;

  /// ODS operand (result) `ods`, by the op table's constants
  /// (op_table::conv2d::operand::filter): a single one, present.
  const DeviceTensor &operand(size_t ods) const {
    return operands[node.layout.operands.index(ods)];
  }
  const DeviceTensor &result(size_t ods) const { return results[node.layout.results.index(ods)]; }
  /// An optional one: null when absent.
  const DeviceTensor *operandIfAny(size_t ods) const {
    return node.layout.operands.has(ods) ? &operand(ods) : nullptr;
  }
  const DeviceTensor *resultIfAny(size_t ods) const {
    return node.layout.results.has(ods) ? &result(ods) : nullptr;
  }
};

struct OpLauncher {
  OpKind op;
  /// Null when the op needs nothing at load and no workspace.
  Result<size_t> (*prepare)(const OpLaunch &launch) = nullptr;
  Status (*launch)(const OpLaunch &launch) = nullptr;
};

/// The launcher of `op`, or null when the GPU runtime has none.
const OpLauncher *findOpLauncher(OpKind op);
/// The launcher of the op named `op` ("conv2d"), or null.
const OpLauncher *findOpLauncher(std::string_view op);

/// `status` with the launch's op named in front, for the errors of kernels
/// and libraries, which do not know the node.
Status named(const OpLaunch &launch, Status status);

/// An error unless the launch is of the whole node: for the ops that do
/// not fork, whose launchers run no parts.
Status requireWhole(const OpLaunch &launch);

// The family tables op_launch.cpp joins.
const std::vector<OpLauncher> &elementwiseLaunchers();
const std::vector<OpLauncher> &normLaunchers();
const std::vector<OpLauncher> &updateLaunchers();
const std::vector<OpLauncher> &convLinearLaunchers();
const std::vector<OpLauncher> &collectiveLaunchers();

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_OP_LAUNCH_H
