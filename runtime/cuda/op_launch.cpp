//===- op_launch.cpp - The table of GPU op launchers ----------------------===//

#include "runtime/cuda/op_launch.h"

#include <array>

namespace rn::cuda {

const OpLauncher *findOpLauncher(OpKind op) {
  static const std::array<const OpLauncher *, kNumOpKinds> table = [] {
    std::array<const OpLauncher *, kNumOpKinds> t{};
    for (const std::vector<OpLauncher> *family :
         {&elementwiseLaunchers(), &normLaunchers(), &updateLaunchers(), &convLinearLaunchers(),
          &collectiveLaunchers()})
      for (const OpLauncher &l : *family)
        if (!t[static_cast<size_t>(l.op)])
          t[static_cast<size_t>(l.op)] = &l;
    return t;
  }();
  return table[static_cast<size_t>(op)];
}

const OpLauncher *findOpLauncher(std::string_view op) {
  std::optional<OpKind> kind = opKindOf(op);
  return kind ? findOpLauncher(*kind) : nullptr;
}

Status named(const OpLaunch &launch, Status status) {
  if (status.ok())
    return status;
  return status.error().withContext(launch.node.op);
}

Status requireWhole(const OpLaunch &launch) {
  if (launch.part >= 0)
    return Error(launch.node.op + ": has no parts, asked for part " +
                 std::to_string(launch.part));
  return Status::success();
}

} // namespace rn::cuda
