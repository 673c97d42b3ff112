//===- ops_elementwise.cpp - GPU launchers: elementwise, layout, pool, loss -===//
//
// One OpLauncher per op of this family: each reads the node's attributes
// through op_attrs.h as the CPU's entries do (absent numbers are 0, absent
// pairs their defaults) and calls its kernel in
// kernels.h on the node's stream. Two ops need the stream workspace,
// sized at load: softmax_cross_entropy for its per-row losses and
// max_pool2d_backward (overlapping windows) for the window arg-max.
//
// host_to_device copies the host staging tensor (pinned, its `input`)
// to the device. The CPU executor's copy would convert between float
// dtypes, but the compiler never emits a host_to_device whose dtypes
// differ (staging tensors are created with their device tensor's dtype), so
// a mismatch is an error here rather than a byte copy of the wrong type.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/op_attrs.h"
#include "runtime/core/op_table.h"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/op_launch.h"

#include <string>

namespace rn::cuda {
namespace {

/// The window of a pooling op: `Attrs` is its op_table::<op>::attrs.
template <class Attrs> PoolParams poolParamsOf(const Node &node) {
  PoolParams p;
  p.kernel = Attrs::kernel_pair(node, {1, 1});
  p.strides = Attrs::strides_pair(node, {1, 1});
  p.padding = Attrs::padding_pair(node, {0, 0});
  p.ceilMode = Attrs::ceil_mode(node);
  return p;
}

/// An average pooling's window: poolParamsOf's and exclude_pad.
template <class Attrs> PoolParams avgPoolParamsOf(const Node &node) {
  PoolParams p = poolParamsOf<Attrs>(node);
  p.excludePad = Attrs::exclude_pad(node);
  return p;
}

cudaStream_t streamOf(const OpLaunch &l) { return l.stream.stream; }

// The unary and binary ops share a kernel each; the template arguments
// name the op's operands and result (op_table.h).
template <UnaryOp Op, size_t Input, size_t Output> Status launchUnary(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  return unary(Op, l.operand(Input), l.result(Output), streamOf(l));
}

template <BinaryOp Op, size_t First, size_t Second, size_t Output>
Status launchBinary(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  return binary(Op, l.operand(First), l.operand(Second), l.result(Output), streamOf(l));
}

Status launchGelu(const OpLaunch &l) {
  using namespace op_table::gelu;
  RN_RETURN_IF_ERROR(requireWhole(l));
  bool tanhForm = attrs::approximate(l.node) == op_table::GeluApproximation::tanh;
  return unary(tanhForm ? UnaryOp::gelu_tanh : UnaryOp::gelu, l.operand(operand::input),
               l.result(result::result), streamOf(l));
}

Status launchGeluBackward(const OpLaunch &l) {
  using namespace op_table::gelu_backward;
  RN_RETURN_IF_ERROR(requireWhole(l));
  bool tanhForm = attrs::approximate(l.node) == op_table::GeluApproximation::tanh;
  return binary(tanhForm ? BinaryOp::gelu_tanh_backward : BinaryOp::gelu_backward,
                l.operand(operand::output_grad), l.operand(operand::saved),
                l.result(result::input_grad), streamOf(l));
}

Status launchHardtanh(const OpLaunch &l) {
  using namespace op_table::hardtanh;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return hardtanh(l.operand(operand::input), attrs::min_val(l.node), attrs::max_val(l.node),
                  l.result(result::result), streamOf(l));
}

Status launchHardtanhBackward(const OpLaunch &l) {
  using namespace op_table::hardtanh_backward;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return hardtanhBackward(l.operand(operand::output_grad), l.operand(operand::saved),
                          attrs::min_val(l.node), attrs::max_val(l.node),
                          l.result(result::input_grad), streamOf(l));
}

Status launchChannelMul(const OpLaunch &l) {
  using namespace op_table::channel_mul;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return channelMul(l.operand(operand::input), l.operand(operand::scale), l.result(result::result),
                    streamOf(l));
}

Status launchChannelMulBackward(const OpLaunch &l) {
  using namespace op_table::channel_mul_backward;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return channelMulBackward(l.operand(operand::output_grad), l.operand(operand::input),
                            l.operand(operand::scale), l.result(result::input_grad),
                            l.result(result::scale_grad), streamOf(l));
}

Status launchCast(const OpLaunch &l) {
  using namespace op_table::cast;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return convert("cast", l.operand(operand::input), l.result(result::result),
                 /*requireSameShape=*/true, streamOf(l));
}

Status launchPadChannels(const OpLaunch &l) {
  using namespace op_table::pad_channels;
  RN_RETURN_IF_ERROR(requireWhole(l));
  const DeviceTensor *mean = l.operandIfAny(operand::mean);
  const DeviceTensor *std = l.operandIfAny(operand::std);
  if (mean && std)
    return padNormalizedChannels(l.operand(operand::input), *mean, *std,
                                 l.result(result::result), streamOf(l));
  return padChannels(l.operand(operand::input), l.result(result::result), streamOf(l));
}

Status launchNormalizeImages(const OpLaunch &l) {
  using namespace op_table::normalize_images;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return normalizeImages(l.operand(operand::input), l.operand(operand::mean),
                         l.operand(operand::std), l.result(result::result), streamOf(l));
}

Status launchReshape(const OpLaunch &l) {
  using namespace op_table::reshape;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return convert("reshape", l.operand(operand::input), l.result(result::result),
                 /*requireSameShape=*/false, streamOf(l));
}

Status launchFlatten(const OpLaunch &l) {
  using namespace op_table::flatten;
  RN_RETURN_IF_ERROR(requireWhole(l));
  const DeviceTensor &input = l.operand(operand::input), &output = l.result(result::result);
  if (input.rank() < 1)
    return Error("flatten: input must have a batch dimension");
  int64_t rest = 1;
  for (int64_t i = 1; i < input.rank(); ++i)
    rest *= input.dim(i);
  std::vector<int64_t> expected{input.dim(0), rest};
  if (output.shape != expected)
    return Error("flatten: result must have shape " + detail::shapeString(expected) + ", got " +
                 detail::shapeString(output.shape));
  return convert("flatten", input, output, /*requireSameShape=*/false, streamOf(l));
}

// rn.concat's operands are its inputs and rn.split's results its slices,
// in order: the node's lists are the kernel's.
Status launchConcat(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  return channelSlices("concat", l.result(op_table::concat::result::result), l.operands,
                       /*toWhole=*/true, streamOf(l));
}

Status launchSplit(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  return channelSlices("split", l.operand(op_table::split::operand::input), l.results,
                       /*toWhole=*/false, streamOf(l));
}

Status launchChannelShuffle(const OpLaunch &l) {
  using namespace op_table::channel_shuffle;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return channelShuffle(l.operand(operand::input), attrs::groups(l.node),
                        l.result(result::result), streamOf(l));
}

Status launchZero(const OpLaunch &l) {
  // rn.zero's operand is the tensor it replaces; it only writes its result.
  RN_RETURN_IF_ERROR(requireWhole(l));
  return zero(l.result(op_table::zero::result::result), streamOf(l));
}

// rn.dropout_train: the kernel keys the mask by the attributes (count, index)
// and the device step (see Note [Random streams] in runtime/cpu/cpu_kernels.h).
// (The model-level rn.dropout never reaches a program.)
Status launchDropoutTrain(const OpLaunch &l) {
  using namespace op_table::dropout_train;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return dropout(l.operand(operand::input), attrs::p(l.node), l.seed, l.operand(operand::step),
                 uint64_t(attrs::count(l.node)), uint64_t(attrs::index(l.node)),
                 l.result(result::result), &l.result(result::mask), streamOf(l));
}

// rn.stochastic_depth_train: keyed as dropout_train (one numbering of the
// random ops: count, index), its per-sample mask drawn on the device.
Status launchStochasticDepthTrain(const OpLaunch &l) {
  using namespace op_table::stochastic_depth_train;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return stochasticDepth(l.operand(operand::input), attrs::p(l.node), l.seed,
                         l.operand(operand::step), uint64_t(attrs::count(l.node)),
                         uint64_t(attrs::index(l.node)), l.result(result::result),
                         l.result(result::mask), streamOf(l));
}

Status launchStochasticDepthBackward(const OpLaunch &l) {
  using namespace op_table::stochastic_depth_backward;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return stochasticDepthBackward(l.operand(operand::output_grad), l.operand(operand::mask),
                                 l.result(result::input_grad), streamOf(l));
}

Status launchMaxPool(const OpLaunch &l) {
  using namespace op_table::max_pool2d;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return maxPool2d(l.operand(operand::input), poolParamsOf<attrs>(l.node),
                   l.result(result::result), streamOf(l));
}

Status launchAvgPool(const OpLaunch &l) {
  using namespace op_table::avg_pool2d;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return avgPool2d(l.operand(operand::input), avgPoolParamsOf<attrs>(l.node),
                   l.result(result::result), streamOf(l));
}

/// Overlapping windows keep each window's arg-max in the stream workspace
/// between the two passes: the whole batch's when it fits, else a chunk of
/// whole images at a time (disjoint windows need none).
Result<size_t> prepareMaxPoolBackward(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  using namespace op_table::max_pool2d_backward;
  return maxPool2dBackwardWorkspaceBytes(l.operand(operand::input).shape,
                                         poolParamsOf<attrs>(l.node), l.stream.workspaceBytes);
}

Status launchMaxPoolBackward(const OpLaunch &l) {
  using namespace op_table::max_pool2d_backward;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return maxPool2dBackward(l.operand(operand::output_grad), l.operand(operand::input),
                           poolParamsOf<attrs>(l.node), l.result(result::input_grad),
                           l.stream.workspace, l.stream.workspaceBytes, streamOf(l));
}

Status launchAvgPoolBackward(const OpLaunch &l) {
  using namespace op_table::avg_pool2d_backward;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return avgPool2dBackward(l.operand(operand::output_grad), avgPoolParamsOf<attrs>(l.node),
                           l.result(result::input_grad), streamOf(l));
}

Status launchAdaptiveAvgPool(const OpLaunch &l) {
  using namespace op_table::adaptive_avg_pool2d;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return adaptiveAvgPool2d(l.operand(operand::input), l.result(result::result), streamOf(l));
}

Status launchAdaptiveAvgPoolBackward(const OpLaunch &l) {
  using namespace op_table::adaptive_avg_pool2d_backward;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return adaptiveAvgPool2dBackward(l.operand(operand::output_grad), l.result(result::input_grad),
                                   streamOf(l));
}

Status launchGlobalAvgPool(const OpLaunch &l) {
  using namespace op_table::global_avg_pool;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return globalAvgPool(l.operand(operand::input), l.result(result::result), streamOf(l));
}

Status launchGlobalAvgPoolBackward(const OpLaunch &l) {
  using namespace op_table::global_avg_pool_backward;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return globalAvgPoolBackward(l.operand(operand::output_grad), l.result(result::input_grad),
                               streamOf(l));
}

Result<size_t> prepareSoftmaxCrossEntropy(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  const DeviceTensor &logits = l.operand(op_table::softmax_cross_entropy::operand::logits);
  if (logits.rank() != 2)
    return Error("softmax_cross_entropy: logits must be [N, classes] (rank 2), got shape " +
                 detail::shapeString(logits.shape));
  return softmaxCrossEntropyWorkspaceBytes(logits.dim(0));
}

Status launchSoftmaxCrossEntropy(const OpLaunch &l) {
  using namespace op_table::softmax_cross_entropy;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return softmaxCrossEntropy(l.operand(operand::logits), l.operand(operand::labels),
                             attrs::label_smoothing(l.node),
                             l.result(result::loss), l.stream.workspace, l.stream.workspaceBytes,
                             streamOf(l));
}

Status launchSoftmaxCrossEntropyBackward(const OpLaunch &l) {
  using namespace op_table::softmax_cross_entropy_backward;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return softmaxCrossEntropyBackward(l.operand(operand::logits), l.operand(operand::labels),
                                     l.operandIfAny(operand::scale),
                                     attrs::label_smoothing(l.node),
                                     l.result(result::logits_grad), streamOf(l));
}

Status launchCountCorrect(const OpLaunch &l) {
  using namespace op_table::count_correct;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return countCorrect(l.operand(operand::logits), l.operand(operand::labels),
                      l.result(result::correct), streamOf(l));
}

Status launchHostToDevice(const OpLaunch &l) {
  using namespace op_table::host_to_device;
  RN_RETURN_IF_ERROR(requireWhole(l));
  const DeviceTensor &host = l.operand(operand::input), &device = l.result(result::result);
  if (host.dtype != device.dtype)
    return Error("host_to_device: the staging tensor is " + std::string(dtypeName(host.dtype)) +
                 " but the device tensor is " + std::string(dtypeName(device.dtype)) +
                 " (the GPU copy does not convert)");
  if (host.numel() != device.numel())
    return Error("host_to_device: copy from " + detail::shapeString(host.shape) + " to " +
                 detail::shapeString(device.shape) + ": element counts differ");
  size_t bytes = size_t(device.numel()) * elementSize(device.dtype);
  if (bytes == 0)
    return Status::success();
  if (!host.data || !device.data)
    return Error("host_to_device: a tensor has no data");
  // cudaMemcpyDefault: the source is the staging buffer or a step's pinned
  // block, or a device block for inputs that came as CUDA tensors (UVA tells
  // them apart), and a graph's copy node keeps this kind when re-pointed.
  RN_CUDA_TRY(cudaMemcpyAsync(device.data, host.data, bytes, cudaMemcpyDefault, streamOf(l)));
  return Status::success();
}

} // namespace

const std::vector<OpLauncher> &elementwiseLaunchers() {
  static const std::vector<OpLauncher> launchers = {
      {OpKind::relu, nullptr, launchUnary<UnaryOp::relu, op_table::relu::operand::input, op_table::relu::result::result>},
      {OpKind::tanh, nullptr, launchUnary<UnaryOp::tanh, op_table::tanh::operand::input, op_table::tanh::result::result>},
      {OpKind::silu, nullptr, launchUnary<UnaryOp::silu, op_table::silu::operand::input, op_table::silu::result::result>},
      {OpKind::sigmoid, nullptr,
       launchUnary<UnaryOp::sigmoid, op_table::sigmoid::operand::input, op_table::sigmoid::result::result>},
      {OpKind::hardswish, nullptr,
       launchUnary<UnaryOp::hardswish, op_table::hardswish::operand::input,
                   op_table::hardswish::result::result>},
      {OpKind::hardsigmoid, nullptr,
       launchUnary<UnaryOp::hardsigmoid, op_table::hardsigmoid::operand::input,
                   op_table::hardsigmoid::result::result>},
      {OpKind::gelu, nullptr, launchGelu},
      {OpKind::gelu_backward, nullptr, launchGeluBackward},
      {OpKind::hardtanh, nullptr, launchHardtanh},
      {OpKind::relu_backward, nullptr,
       launchBinary<BinaryOp::relu_backward, op_table::relu_backward::operand::output_grad,
                    op_table::relu_backward::operand::saved, op_table::relu_backward::result::input_grad>},
      {OpKind::tanh_backward, nullptr,
       launchBinary<BinaryOp::tanh_backward, op_table::tanh_backward::operand::output_grad,
                    op_table::tanh_backward::operand::saved, op_table::tanh_backward::result::input_grad>},
      {OpKind::silu_backward, nullptr,
       launchBinary<BinaryOp::silu_backward, op_table::silu_backward::operand::output_grad,
                    op_table::silu_backward::operand::saved, op_table::silu_backward::result::input_grad>},
      {OpKind::dropout_backward, nullptr,
       launchBinary<BinaryOp::dropout_backward, op_table::dropout_backward::operand::output_grad,
                    op_table::dropout_backward::operand::saved, op_table::dropout_backward::result::input_grad>},
      {OpKind::sigmoid_backward, nullptr,
       launchBinary<BinaryOp::sigmoid_backward, op_table::sigmoid_backward::operand::output_grad,
                    op_table::sigmoid_backward::operand::saved,
                    op_table::sigmoid_backward::result::input_grad>},
      {OpKind::hardswish_backward, nullptr,
       launchBinary<BinaryOp::hardswish_backward, op_table::hardswish_backward::operand::output_grad,
                    op_table::hardswish_backward::operand::saved,
                    op_table::hardswish_backward::result::input_grad>},
      {OpKind::hardsigmoid_backward, nullptr,
       launchBinary<BinaryOp::hardsigmoid_backward,
                    op_table::hardsigmoid_backward::operand::output_grad,
                    op_table::hardsigmoid_backward::operand::saved,
                    op_table::hardsigmoid_backward::result::input_grad>},
      {OpKind::hardtanh_backward, nullptr, launchHardtanhBackward},
      {OpKind::add, nullptr,
       launchBinary<BinaryOp::add, op_table::add::operand::lhs, op_table::add::operand::rhs,
                    op_table::add::result::result>},
      {OpKind::channel_mul, nullptr, launchChannelMul},
      {OpKind::channel_mul_backward, nullptr, launchChannelMulBackward},
      {OpKind::cast, nullptr, launchCast},
      {OpKind::pad_channels, nullptr, launchPadChannels},
      {OpKind::normalize_images, nullptr, launchNormalizeImages},
      {OpKind::reshape, nullptr, launchReshape},
      {OpKind::flatten, nullptr, launchFlatten},
      {OpKind::zero, nullptr, launchZero},
      {OpKind::concat, nullptr, launchConcat},
      {OpKind::split, nullptr, launchSplit},
      {OpKind::channel_shuffle, nullptr, launchChannelShuffle},
      {OpKind::dropout_train, nullptr, launchDropoutTrain},
      {OpKind::stochastic_depth_train, nullptr, launchStochasticDepthTrain},
      {OpKind::stochastic_depth_backward, nullptr, launchStochasticDepthBackward},
      {OpKind::max_pool2d, nullptr, launchMaxPool},
      {OpKind::avg_pool2d, nullptr, launchAvgPool},
      {OpKind::max_pool2d_backward, prepareMaxPoolBackward, launchMaxPoolBackward},
      {OpKind::avg_pool2d_backward, nullptr, launchAvgPoolBackward},
      {OpKind::adaptive_avg_pool2d, nullptr, launchAdaptiveAvgPool},
      {OpKind::adaptive_avg_pool2d_backward, nullptr, launchAdaptiveAvgPoolBackward},
      {OpKind::global_avg_pool, nullptr, launchGlobalAvgPool},
      {OpKind::global_avg_pool_backward, nullptr, launchGlobalAvgPoolBackward},
      {OpKind::softmax_cross_entropy, prepareSoftmaxCrossEntropy, launchSoftmaxCrossEntropy},
      {OpKind::softmax_cross_entropy_backward, nullptr, launchSoftmaxCrossEntropyBackward},
      {OpKind::count_correct, nullptr, launchCountCorrect},
      {OpKind::host_to_device, nullptr, launchHostToDevice},
  };
  return launchers;
}

} // namespace rn::cuda
