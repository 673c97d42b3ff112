//===- op_launch.cpp - The table of GPU op launchers ----------------------===//

#include "runtime/cuda/op_launch.h"

#include <unordered_map>

namespace rn::cuda {

const OpLauncher *findOpLauncher(std::string_view op) {
  static const std::unordered_map<std::string_view, const OpLauncher *> table = [] {
    std::unordered_map<std::string_view, const OpLauncher *> t;
    for (const std::vector<OpLauncher> *family :
         {&elementwiseLaunchers(), &normLaunchers(), &updateLaunchers(), &convLinearLaunchers(),
          &collectiveLaunchers()})
      for (const OpLauncher &l : *family)
        t.emplace(l.op, &l);
    return t;
  }();
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
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
