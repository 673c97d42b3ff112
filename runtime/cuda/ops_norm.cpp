//===- ops_norm.cpp - GPU launchers of the batch-norm ops -----------------===//
//
// batch_norm, batch_norm_train, batch_norm_inference, batch_norm_backward,
// update_running_stats, the bn_add_relu family and bn_scale_bias (the
// prologue's scale and bias, rn-fuse-bn-prologue), mapped onto the kernels
// of norm_kernels.h with the operand order of the op definitions (the same
// the CPU executor uses). Reductions use the stream's workspace; `prepare`
// reports how much, from the input's shape alone.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/align.h"
#include "runtime/cuda/norm_kernels.h"
#include "runtime/cuda/op_launch.h"

#include <string>

namespace rn::cuda {
namespace {

double numAttr(const OpLaunch &l, const char *name) {
  auto it = l.node.attributes.find(name);
  return it != l.node.attributes.end() && it->is_number() ? it->get<double>() : 0.0;
}

/// An error unless the node has exactly these operand and result counts
/// and runs whole.
Status expectArity(const OpLaunch &l, size_t operands, size_t results) {
  if (l.part >= 0)
    return Error(l.node.op + ": has no parts, got part " + std::to_string(l.part));
  if (l.operands.size() != operands || l.results.size() != results)
    return Error(l.node.op + ": expects " + std::to_string(operands) + " operands and " +
                 std::to_string(results) + " results, got " + std::to_string(l.operands.size()) +
                 " and " + std::to_string(l.results.size()));
  return Status::success();
}

// batch_norm (model level): the statistics live in the workspace, after
// the partials.
size_t batchNormWorkspace(const std::vector<int64_t> &shape) {
  int64_t channels = shape.empty() ? 0 : shape.back();
  return bnStatsWorkspaceBytes(shape) + 2 * alignUp(size_t(channels) * sizeof(float));
}

Result<size_t> prepareBatchNorm(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 5, 1));
  return batchNormWorkspace(l.operands[0].shape);
}

Status launchBatchNorm(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 5, 1));
  const DeviceTensor &x = l.operands[0];
  const int64_t channels = x.shape.empty() ? 0 : x.shape.back();
  const size_t statsBytes = bnStatsWorkspaceBytes(x.shape);
  if (l.stream.workspaceBytes < batchNormWorkspace(x.shape) || !l.stream.workspace)
    return Error(l.node.op + ": needs " + std::to_string(batchNormWorkspace(x.shape)) +
                 " workspace bytes on " + std::string(l.stream.name) + ", has " +
                 std::to_string(l.stream.workspaceBytes));
  char *base = static_cast<char *>(l.stream.workspace);
  DeviceTensor mean{base + statsBytes, DType::f32, {channels}};
  DeviceTensor invStd{base + statsBytes + alignUp(size_t(channels) * sizeof(float)), DType::f32,
                      {channels}};
  RN_RETURN_IF_ERROR(named(l, bnBatchStats(x, numAttr(l, "epsilon"), mean, invStd, l.stream.stream,
                                      l.stream.workspace, statsBytes)));
  return named(l, bnApply(x, l.operands[1], l.operands[2], mean, invStd, false, l.results[0],
                          l.stream.stream));
}

Result<size_t> prepareBatchNormTrain(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 3, 3));
  return bnStatsWorkspaceBytes(l.operands[0].shape);
}

Status launchBatchNormTrain(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 3, 3));
  const DeviceTensor &x = l.operands[0];
  RN_RETURN_IF_ERROR(named(l, bnBatchStats(x, numAttr(l, "epsilon"), l.results[1], l.results[2],
                                      l.stream.stream, l.stream.workspace,
                                      l.stream.workspaceBytes)));
  return named(l, bnApply(x, l.operands[1], l.operands[2], l.results[1], l.results[2], false,
                          l.results[0], l.stream.stream));
}

Status launchBatchNormInference(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 5, 1));
  const auto &o = l.operands;
  return named(l, bnInference(o[0], o[1], o[2], o[3], o[4], numAttr(l, "epsilon"), false,
                              l.results[0], l.stream.stream));
}

Result<size_t> prepareBatchNormBackward(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 7, 3));
  return bnBackwardWorkspaceBytes(l.operands[1].shape);
}

Status launchBatchNormBackward(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 7, 3));
  const auto &o = l.operands;
  const auto &r = l.results;
  return named(l, bnBackward(o[0], nullptr, nullptr, o[1], o[2], o[3], o[4], o[5], o[6], r[0], r[1],
                             r[2], l.stream.stream, l.stream.workspace, l.stream.workspaceBytes));
}

Status launchUpdateRunningStats(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 4, 2));
  const auto &o = l.operands;
  return named(l, bnUpdateRunningStats(o[0], o[1], o[2], o[3], numAttr(l, "epsilon"),
                                       numAttr(l, "momentum"),
                                       static_cast<int64_t>(numAttr(l, "count")), l.results[0],
                                       l.results[1], l.stream.stream));
}

Result<size_t> prepareBnAddRelu(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 4, 3));
  return bnStatsWorkspaceBytes(l.operands[0].shape);
}

Status launchBnAddRelu(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 4, 3));
  const auto &o = l.operands;
  const auto &r = l.results;
  RN_RETURN_IF_ERROR(named(l, bnBatchStats(o[0], numAttr(l, "epsilon"), r[1], r[2], l.stream.stream,
                                      l.stream.workspace, l.stream.workspaceBytes)));
  return named(l, bnApplyAddRelu(o[0], o[1], o[2], r[1], r[2], o[3], r[0], l.stream.stream));
}

Result<size_t> prepareBnAddReluBackward(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 8, 4));
  return bnBackwardWorkspaceBytes(l.operands[2].shape);
}

Status launchBnAddReluBackward(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 8, 4));
  const auto &o = l.operands;
  const auto &r = l.results;
  return named(l, bnAddReluBackward(o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], r[0], r[1],
                                    r[2], r[3], l.stream.stream, l.stream.workspace,
                                    l.stream.workspaceBytes));
}

Status launchBnAddReluInference(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 6, 1));
  const auto &o = l.operands;
  return named(l, bnInferenceAddRelu(o[0], o[1], o[2], o[3], o[4], o[5], numAttr(l, "epsilon"),
                                     l.results[0], l.stream.stream));
}

// bn_scale_bias: batch_mean, batch_inv_std, gamma, beta -> scale, bias.
Status launchBnScaleBias(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 4, 2));
  const auto &o = l.operands;
  return named(l, bnScaleBias(o[0], o[1], o[2], o[3], l.results[0], l.results[1],
                              l.stream.stream));
}

} // namespace

const std::vector<OpLauncher> &normLaunchers() {
  static const std::vector<OpLauncher> launchers = {
      {"batch_norm", prepareBatchNorm, launchBatchNorm},
      {"batch_norm_train", prepareBatchNormTrain, launchBatchNormTrain},
      {"batch_norm_inference", nullptr, launchBatchNormInference},
      {"batch_norm_backward", prepareBatchNormBackward, launchBatchNormBackward},
      {"update_running_stats", nullptr, launchUpdateRunningStats},
      {"bn_add_relu", prepareBnAddRelu, launchBnAddRelu},
      {"bn_add_relu_backward", prepareBnAddReluBackward, launchBnAddReluBackward},
      {"bn_add_relu_inference", nullptr, launchBnAddReluInference},
      {"bn_scale_bias", nullptr, launchBnScaleBias},
  };
  return launchers;
}

} // namespace rn::cuda
