//===- cpu_ops.h - The CPU executor's ops, one table per family -*- C++ -*-===//
//
// Every op of the op table (op_kinds.h) has one CpuOp: `run` executes a node,
// or one part of a forking node, on the views of its tensors. It takes the
// node's operands and results by their ODS names (op_indices.h) through
// OpRun and its attributes through the typed readers (op_attrs.h), and
// calls the op's kernel (cpu_kernels.h). The entries live with their
// kernels, one table per family file (cpu_elementwise.cpp, cpu_norm.cpp,
// cpu_pool.cpp, cpu_conv.cpp, cpu_linear.cpp, cpu_loss.cpp, cpu_update.cpp,
// cpu_fused.cpp; the data movement of host_to_device and all_reduce_mean in
// cpu_ops.cpp), as the GPU launchers do (runtime/cuda/op_launch.h);
// cpu_ops.cpp joins them and checks, when an executor is created, that
// every op has exactly one. A new op needs its kernel and one entry in its
// family's table.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CPU_CPU_OPS_H
#define RN_RUNTIME_CPU_CPU_OPS_H

#include "runtime/core/artifact.h"
#include "runtime/core/op_attrs.h"
#include "runtime/core/op_kinds.h"
#include "runtime/core/op_table.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/cpu/interleaving_simulator.h"

#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace rn::cpu {

class ReplicaGroup;

/// A list operand or result of a node: its ids where they sit in the
/// node's flat list (no copy).
struct IdList {
  const uint32_t *first = nullptr;
  size_t count = 0;
  const uint32_t *begin() const { return first; }
  const uint32_t *end() const { return first + count; }
  size_t size() const { return count; }
  uint32_t operator[](size_t i) const { return first[i]; }
};

/// One execution of a node (or of one part of a forking node): the node,
/// the views of its function's tensors (on the launch's variant) and what
/// the run provides. Operands and results by their ODS names.
struct OpRun {
  const Node &node;
  /// The part's role ("weight_grad"); empty for a node that does not fork.
  std::string_view role;
  /// The views of the function's tensors, by tensor id.
  const std::vector<TensorView> &tensors;
  /// The run's dropout and stochastic-depth seed (RngKey::seed).
  uint64_t seed = 0;
  /// The data-parallel replicas (all_reduce_mean averages over them), or null.
  ReplicaGroup *replicas = nullptr;
  int replicaRank = 0;

  const TensorView &view(uint32_t tensor) const { return tensors[tensor]; }
  const TensorView &in(size_t ods) const { return view(node.operand(ods)); }
  const TensorView &out(size_t ods) const { return view(node.result(ods)); }
  /// An optional operand (result): null when absent.
  const TensorView *inIfAny(size_t ods) const {
    return node.layout.operands.has(ods) ? &in(ods) : nullptr;
  }
  const TensorView *outIfAny(size_t ods) const {
    return node.layout.results.has(ods) ? &out(ods) : nullptr;
  }
  /// The ids of list operand (result) `ods`.
  IdList inIds(size_t ods) const {
    return {node.operands.data() + node.layout.operands.index(ods),
            node.layout.operands.count(ods)};
  }
  IdList outIds(size_t ods) const {
    return {node.results.data() + node.layout.results.index(ods), node.layout.results.count(ods)};
  }
  /// Views of ids[from, from + count), in place (nothing is copied).
  TensorList views(IdList ids, size_t from, size_t count) const {
    return TensorList(tensors.data(), ids.first + from, count);
  }
  TensorList inList(size_t ods) const {
    IdList ids = inIds(ods);
    return views(ids, 0, ids.size());
  }
  /// Scalar operands: a float, an int32 (the step, the good-step count).
  float scalar(size_t ods) const { return *in(ods).data; }
  int32_t integer(size_t ods) const {
    int32_t value;
    std::memcpy(&value, in(ods).data, 4);
    return value;
  }
  /// An optional skip flag: true when present and set.
  bool skipIf(size_t ods) const { return node.layout.operands.has(ods) && scalar(ods) != 0; }
  LabelView labels(size_t ods) const {
    return LabelView{reinterpret_cast<const int32_t *>(in(ods).data), in(ods).shape};
  }
  /// Scalar results, rounded to their dtype.
  void setScalar(size_t ods, float value) const {
    *out(ods).data = roundTo(out(ods).dtype, value);
  }
  void setInteger(size_t ods, int32_t value) const { std::memcpy(out(ods).data, &value, 4); }
};

struct CpuOp {
  OpKind kind;
  KernelStatus (*run)(const OpRun &run) = nullptr;
  /// Forking ops: the tensors the part `role` reads and writes (the
  /// interleaved mode checks them). Null for the ops that do not fork, whose
  /// node reads all its operands and writes all its results. The executor
  /// runs a forking node issued whole as its parts in order.
  Access (*partAccess)(const Node &node, std::string_view role) = nullptr;
};

/// The entry of `kind`, or null when the CPU executor has none.
const CpuOp *findCpuOp(OpKind kind);

/// An error naming every op of the op table without a CPU entry and every
/// op with more than one (a family table's mistake): the executor refuses
/// to run until the tables are whole.
Status checkCpuOps();

/// The convolution geometry of an op with conv2d's attributes (conv2d,
/// conv2d_backward, the CBR ops, conv_bn_stats): `Attrs` is its
/// op_table::<op>::attrs.
template <class Attrs> Conv2dAttrs convAttrsOf(const Node &node) {
  Conv2dAttrs c;
  c.strides = Attrs::strides_pair(node, {1, 1});
  c.padding = Attrs::padding_pair(node, {0, 0});
  c.dilation = Attrs::dilation_pair(node, {1, 1});
  c.groups = Attrs::groups(node, 1);
  return c;
}

/// The accesses of one part of a forking op: the results `readResults`
/// (computed by an earlier part), the operands `reads` that are present,
/// the results `writes`.
inline Access partAccess(const Node &node, std::initializer_list<size_t> readResults,
                         std::initializer_list<size_t> reads,
                         std::initializer_list<size_t> writes) {
  Access a;
  for (size_t ods : readResults)
    a.reads.push_back(node.result(ods));
  for (size_t ods : reads)
    if (node.layout.operands.has(ods))
      a.reads.push_back(node.operand(ods));
  for (size_t ods : writes)
    a.writes.push_back(node.result(ods));
  return a;
}

/// The error of a forking op asked for a part it does not have.
inline KernelStatus unknownPart(const OpRun &r) {
  return KernelStatus{"unknown part '" + std::string(r.role) + "' of " + r.node.op};
}

// The family tables cpu_ops.cpp joins.
const std::vector<CpuOp> &elementwiseOps();
const std::vector<CpuOp> &normOps();
const std::vector<CpuOp> &poolOps();
const std::vector<CpuOp> &convOps();
const std::vector<CpuOp> &linearOps();
const std::vector<CpuOp> &lossOps();
const std::vector<CpuOp> &updateOps();
const std::vector<CpuOp> &fusedOps();
const std::vector<CpuOp> &transferOps();
const std::vector<CpuOp> &layoutOps();

} // namespace rn::cpu

#endif // RN_RUNTIME_CPU_CPU_OPS_H
