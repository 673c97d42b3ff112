//===- ops_norm.cpp - GPU launchers of the batch-norm ops -----------------===//
//
// batch_norm, batch_norm_train, batch_norm_inference, batch_norm_backward,
// update_running_stats, layer_norm(_backward), channel_scale(_backward), the bn_add_relu family and bn_scale_bias (the
// prologue's scale and bias, rn-fuse-bn-prologue), mapped onto the kernels
// of norm_kernels.h with the operand order of the op definitions (the same
// the CPU executor uses). Reductions use the stream's workspace; `prepare`
// reports how much, from the input's shape alone.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/align.h"
#include "runtime/core/op_attrs.h"
#include "runtime/core/op_table.h"
#include "runtime/cuda/norm_kernels.h"
#include "runtime/cuda/op_launch.h"

#include <string>

namespace rn::cuda {
namespace {

// batch_norm (model level): the statistics live in the workspace, after
// the partials.
size_t batchNormWorkspace(const std::vector<int64_t> &shape) {
  int64_t channels = shape.empty() ? 0 : shape.back();
  return bnStatsWorkspaceBytes(shape) + 2 * alignUp(size_t(channels) * sizeof(float));
}

Result<size_t> prepareBatchNorm(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  return batchNormWorkspace(l.operand(op_table::batch_norm::operand::input).shape);
}

Status launchBatchNorm(const OpLaunch &l) {
  using namespace op_table::batch_norm;
  RN_RETURN_IF_ERROR(requireWhole(l));
  const DeviceTensor &x = l.operand(operand::input);
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
  RN_RETURN_IF_ERROR(named(l, bnBatchStats(x, attrs::epsilon(l.node), mean, invStd, l.stream.stream,
                                      l.stream.workspace, statsBytes)));
  return named(l, bnApply(x, l.operand(operand::weight), l.operand(operand::bias), mean, invStd,
                          false, l.result(result::result), l.stream.stream));
}

Result<size_t> prepareBatchNormTrain(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  return bnStatsWorkspaceBytes(l.operand(op_table::batch_norm_train::operand::input).shape);
}

Status launchBatchNormTrain(const OpLaunch &l) {
  using namespace op_table::batch_norm_train;
  RN_RETURN_IF_ERROR(requireWhole(l));
  const DeviceTensor &x = l.operand(operand::input);
  const DeviceTensor &mean = l.result(result::batch_mean), &invStd = l.result(result::batch_inv_std);
  RN_RETURN_IF_ERROR(named(l, bnBatchStats(x, attrs::epsilon(l.node), mean, invStd,
                                      l.stream.stream, l.stream.workspace,
                                      l.stream.workspaceBytes)));
  return named(l, bnApply(x, l.operand(operand::weight), l.operand(operand::bias), mean, invStd,
                          false, l.result(result::result), l.stream.stream));
}

Status launchBatchNormInference(const OpLaunch &l) {
  using namespace op_table::batch_norm_inference;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, bnInference(l.operand(operand::input), l.operand(operand::weight),
                              l.operand(operand::bias), l.operand(operand::running_mean),
                              l.operand(operand::running_var), attrs::epsilon(l.node), false,
                              l.result(result::result), l.stream.stream));
}

Result<size_t> prepareBatchNormBackward(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  return bnBackwardWorkspaceBytes(l.operand(op_table::batch_norm_backward::operand::input).shape);
}

Status launchBatchNormBackward(const OpLaunch &l) {
  using namespace op_table::batch_norm_backward;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, bnBackward(l.operand(operand::output_grad), nullptr, nullptr,
                             l.operand(operand::input), l.operand(operand::weight),
                             l.operand(operand::batch_mean), l.operand(operand::batch_inv_std),
                             l.operand(operand::weight_grad_acc), l.operand(operand::bias_grad_acc),
                             l.result(result::input_grad), l.result(result::weight_grad),
                             l.result(result::bias_grad), l.stream.stream, l.stream.workspace,
                             l.stream.workspaceBytes));
}

Status launchUpdateRunningStats(const OpLaunch &l) {
  using namespace op_table::update_running_stats;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, bnUpdateRunningStats(
                      l.operand(operand::running_mean), l.operand(operand::running_var),
                      l.operand(operand::batch_mean), l.operand(operand::batch_inv_std),
                      attrs::epsilon(l.node), attrs::momentum(l.node), attrs::count(l.node),
                      l.result(result::new_running_mean), l.result(result::new_running_var),
                      l.stream.stream));
}

Result<size_t> prepareBnAddRelu(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  return bnStatsWorkspaceBytes(l.operand(op_table::bn_add_relu::operand::input).shape);
}

Status launchBnAddRelu(const OpLaunch &l) {
  using namespace op_table::bn_add_relu;
  RN_RETURN_IF_ERROR(requireWhole(l));
  const DeviceTensor &x = l.operand(operand::input);
  const DeviceTensor &mean = l.result(result::batch_mean), &invStd = l.result(result::batch_inv_std);
  RN_RETURN_IF_ERROR(named(l, bnBatchStats(x, attrs::epsilon(l.node), mean, invStd, l.stream.stream,
                                      l.stream.workspace, l.stream.workspaceBytes)));
  return named(l, bnApplyAddRelu(x, l.operand(operand::gamma), l.operand(operand::beta), mean,
                                 invStd, l.operand(operand::shortcut), l.result(result::result),
                                 l.stream.stream));
}

Result<size_t> prepareBnAddReluBackward(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  return bnBackwardWorkspaceBytes(l.operand(op_table::bn_add_relu_backward::operand::input).shape);
}

Status launchBnAddReluBackward(const OpLaunch &l) {
  using namespace op_table::bn_add_relu_backward;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, bnAddReluBackward(
                      l.operand(operand::output_grad), l.operand(operand::relu_output),
                      l.operand(operand::input), l.operand(operand::gamma),
                      l.operand(operand::batch_mean), l.operand(operand::batch_inv_std),
                      l.operand(operand::gamma_grad_acc), l.operand(operand::beta_grad_acc),
                      l.result(result::input_grad), l.result(result::shortcut_grad),
                      l.result(result::gamma_grad), l.result(result::beta_grad), l.stream.stream,
                      l.stream.workspace, l.stream.workspaceBytes));
}

Status launchBnAddReluInference(const OpLaunch &l) {
  using namespace op_table::bn_add_relu_inference;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, bnInferenceAddRelu(l.operand(operand::input), l.operand(operand::gamma),
                                     l.operand(operand::beta), l.operand(operand::running_mean),
                                     l.operand(operand::running_var), l.operand(operand::shortcut),
                                     attrs::epsilon(l.node), l.result(result::result),
                                     l.stream.stream));
}

Status launchBnScaleBias(const OpLaunch &l) {
  using namespace op_table::bn_scale_bias;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, bnScaleBias(l.operand(operand::batch_mean), l.operand(operand::batch_inv_std),
                              l.operand(operand::gamma), l.operand(operand::beta),
                              l.result(result::scale), l.result(result::bias), l.stream.stream));
}

Status launchLayerNorm(const OpLaunch &l) {
  using namespace op_table::layer_norm;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, layerNorm(l.operand(operand::input), l.operand(operand::weight),
                            l.operand(operand::bias), attrs::epsilon(l.node),
                            l.result(result::result), l.stream.stream));
}

Result<size_t> prepareLayerNormBackward(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  return layerNormBackwardWorkspaceBytes(
      l.operand(op_table::layer_norm_backward::operand::input).shape);
}

Status launchLayerNormBackward(const OpLaunch &l) {
  using namespace op_table::layer_norm_backward;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, layerNormBackward(l.operand(operand::output_grad), l.operand(operand::input),
                                    l.operand(operand::weight),
                                    l.operand(operand::weight_grad_acc),
                                    l.operand(operand::bias_grad_acc), attrs::epsilon(l.node),
                                    l.result(result::input_grad), l.result(result::weight_grad),
                                    l.result(result::bias_grad), l.stream.stream,
                                    l.stream.workspace, l.stream.workspaceBytes));
}

Status launchChannelScale(const OpLaunch &l) {
  using namespace op_table::channel_scale;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, channelScale(l.operand(operand::input), l.operand(operand::scale),
                               l.result(result::result), l.stream.stream));
}

Result<size_t> prepareChannelScaleBackward(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  return channelScaleBackwardWorkspaceBytes(
      l.operand(op_table::channel_scale_backward::operand::input).shape);
}

Status launchChannelScaleBackward(const OpLaunch &l) {
  using namespace op_table::channel_scale_backward;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, channelScaleBackward(l.operand(operand::output_grad), l.operand(operand::input),
                                       l.operand(operand::scale),
                                       l.operand(operand::scale_grad_acc),
                                       l.result(result::input_grad), l.result(result::scale_grad),
                                       l.stream.stream, l.stream.workspace,
                                       l.stream.workspaceBytes));
}

} // namespace

const std::vector<OpLauncher> &normLaunchers() {
  static const std::vector<OpLauncher> launchers = {
      {OpKind::batch_norm, prepareBatchNorm, launchBatchNorm},
      {OpKind::batch_norm_train, prepareBatchNormTrain, launchBatchNormTrain},
      {OpKind::batch_norm_inference, nullptr, launchBatchNormInference},
      {OpKind::batch_norm_backward, prepareBatchNormBackward, launchBatchNormBackward},
      {OpKind::update_running_stats, nullptr, launchUpdateRunningStats},
      {OpKind::bn_add_relu, prepareBnAddRelu, launchBnAddRelu},
      {OpKind::bn_add_relu_backward, prepareBnAddReluBackward, launchBnAddReluBackward},
      {OpKind::bn_add_relu_inference, nullptr, launchBnAddReluInference},
      {OpKind::bn_scale_bias, nullptr, launchBnScaleBias},
      {OpKind::layer_norm, nullptr, launchLayerNorm},
      {OpKind::layer_norm_backward, prepareLayerNormBackward, launchLayerNormBackward},
      {OpKind::channel_scale, nullptr, launchChannelScale},
      {OpKind::channel_scale_backward, prepareChannelScaleBackward, launchChannelScaleBackward},
  };
  return launchers;
}

} // namespace rn::cuda
