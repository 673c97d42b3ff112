//===- cpu_ops.cpp - The CPU executor's op table --------------------------===//
//
// Joins the family tables (cpu_ops.h) into one entry per OpKind and checks
// that each op has exactly one. The data movement ops live here:
// host_to_device copies a host staging buffer into device words, and
// all_reduce_mean, over one replica the identity, averages over the
// replicas of a ReplicaGroup when the executor has one.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_ops.h"
#include "runtime/cpu/replica_group.h"

#include <array>
#include <cstring>

namespace rn::cpu {

namespace {

namespace ot = op_table;

bool isFloat(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

/// Copies tensor `from` into tensor `to`, rounding between float dtypes and
/// copying the words of the others.
KernelStatus copy(const OpRun &r, uint32_t from, uint32_t to) {
  const TensorView &src = r.view(from), &dst = r.view(to);
  const int64_t n = dst.numel();
  if (src.numel() != n)
    return KernelStatus{"copy: element counts differ"};
  if (src.data == dst.data)
    return {};
  if (isFloat(dst.dtype) && isFloat(src.dtype)) {
    for (int64_t k = 0; k < n; ++k)
      dst.data[k] = roundTo(dst.dtype, src.data[k]);
  } else {
    std::memmove(dst.data, src.data, size_t(n) * 4);
  }
  return {};
}

KernelStatus runHostToDevice(const OpRun &r) {
  using namespace ot::host_to_device;
  return copy(r, r.node.operand(operand::input), r.node.result(result::result));
}

KernelStatus runAllReduceMean(const OpRun &r) { // one replica: the mean is the value
  using namespace ot::all_reduce_mean;
  const IdList from = r.inIds(operand::inputs), to = r.outIds(result::results);
  for (size_t q = 0; q < from.size(); ++q)
    if (KernelStatus s = copy(r, from[q], to[q]); !s.ok())
      return s;
  if (!r.replicas)
    return {};
  std::vector<ReplicaGroup::Buffer> buffers;
  for (uint32_t t : to)
    buffers.push_back({r.view(t).data, size_t(r.view(t).numel())});
  if (Status st = r.replicas->allReduceMean(r.replicaRank, buffers); !st.ok())
    return KernelStatus{st.error().message()};
  return {};
}

/// Per OpKind, its entries in the family tables (a whole table has one).
struct Joined {
  std::array<const CpuOp *, kNumOpKinds> op{};
  std::array<int, kNumOpKinds> entries{};
};

const Joined &joined() {
  static const Joined table = [] {
    Joined t;
    for (const std::vector<CpuOp> *family :
         {&elementwiseOps(), &normOps(), &poolOps(), &convOps(), &linearOps(), &lossOps(),
          &updateOps(), &fusedOps(), &transferOps(), &layoutOps()})
      for (const CpuOp &op : *family) {
        const size_t k = static_cast<size_t>(op.kind);
        if (!t.op[k])
          t.op[k] = &op;
        ++t.entries[k];
      }
    return t;
  }();
  return table;
}

} // namespace

const std::vector<CpuOp> &transferOps() {
  static const std::vector<CpuOp> ops = {
      {OpKind::host_to_device, runHostToDevice},
      {OpKind::all_reduce_mean, runAllReduceMean},
  };
  return ops;
}

const CpuOp *findCpuOp(OpKind kind) { return joined().op[static_cast<size_t>(kind)]; }

Status checkCpuOps() {
  std::string missing, twice;
  for (size_t k = 0; k < kNumOpKinds; ++k) {
    std::string &list = joined().entries[k] == 0 ? missing : twice;
    if (joined().entries[k] != 1)
      list += (list.empty() ? "" : ", ") + std::string(opName(static_cast<OpKind>(k)));
  }
  if (missing.empty() && twice.empty())
    return Status::success();
  std::string message = "the CPU executor's op tables (runtime/cpu/cpu_ops.h) are not whole:";
  if (!missing.empty())
    message += " no entry for " + missing + " (add the kernel and its entry to its family's "
                                            "table)";
  if (!twice.empty())
    message += std::string(missing.empty() ? "" : ";") + " more than one entry for " + twice;
  return Error(message);
}

} // namespace rn::cpu
