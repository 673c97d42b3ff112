//===- ops_elementwise.cpp - GPU launchers of the elementwise, pool and loss ops -*- C++ -*-===//
//
// One OpLauncher per op of this family: each reads the node's attributes
// the way the CPU executor does (cpu_executor.cpp's kernelOf: absent
// numbers are 0, absent pairs their defaults) and calls its kernel in
// kernels.h on the node's stream. Two ops need the stream workspace,
// sized at load: softmax_cross_entropy for its per-row losses and
// max_pool2d_backward (overlapping windows) for the window arg-max.
//
// host_to_device copies the host staging tensor (pinned, operands[0].data)
// to the device. The CPU executor's copy would convert between float
// dtypes, but the compiler never emits a host_to_device whose dtypes
// differ (staging tensors are created with their device tensor's dtype), so
// a mismatch is an error here rather than a byte copy of the wrong type.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/kernels.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/op_launch.h"

#include <nlohmann/json.hpp>

#include <string>

namespace rn::cuda {
namespace {

using json = nlohmann::json;

std::array<int64_t, 2> pairAttr(const json &attrs, const char *name,
                                std::array<int64_t, 2> fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_number() ||
      !(*it)[1].is_number())
    return fallback;
  return {(*it)[0].get<int64_t>(), (*it)[1].get<int64_t>()};
}

double numAttr(const json &attrs, const char *name) {
  auto it = attrs.find(name);
  return it != attrs.end() && it->is_number() ? it->get<double>() : 0.0;
}

PoolParams poolParams(const json &attrs) {
  PoolParams p;
  p.kernel = pairAttr(attrs, "kernel", {1, 1});
  p.strides = pairAttr(attrs, "strides", {1, 1});
  p.padding = pairAttr(attrs, "padding", {0, 0});
  return p;
}

/// The node has between `minOperands` and `maxOperands` operands and
/// `results` results, and the launch is of the whole node.
Status expect(const OpLaunch &l, size_t minOperands, size_t maxOperands, size_t results) {
  const std::string &op = l.node.op;
  if (l.part >= 0)
    return Error(op + ": has no parts, asked for part " + std::to_string(l.part));
  if (l.operands.size() < minOperands || l.operands.size() > maxOperands)
    return Error(op + ": expects " + std::to_string(minOperands) +
                 (maxOperands != minOperands ? " to " + std::to_string(maxOperands) : "") +
                 " operands, got " + std::to_string(l.operands.size()));
  if (l.results.size() != results)
    return Error(op + ": expects " + std::to_string(results) + " results, got " +
                 std::to_string(l.results.size()));
  return Status::success();
}

#define RN_EXPECT(launch, minOperands, maxOperands, results)                              \
  do {                                                                                     \
    ::rn::Status rn_status_ = expect(launch, minOperands, maxOperands, results);           \
    if (!rn_status_.ok())                                                                  \
      return rn_status_;                                                                   \
  } while (0)

cudaStream_t streamOf(const OpLaunch &l) { return l.stream.stream; }

template <UnaryOp Op> Status launchUnary(const OpLaunch &l) {
  RN_EXPECT(l, 1, 1, 1);
  return unary(Op, l.operands[0], l.results[0], streamOf(l));
}

template <BinaryOp Op> Status launchBinary(const OpLaunch &l) {
  RN_EXPECT(l, 2, 2, 1);
  return binary(Op, l.operands[0], l.operands[1], l.results[0], streamOf(l));
}

Status launchCast(const OpLaunch &l) {
  RN_EXPECT(l, 1, 1, 1);
  return convert("cast", l.operands[0], l.results[0], /*requireSameShape=*/true, streamOf(l));
}

Status launchPadChannels(const OpLaunch &l) {
  RN_EXPECT(l, 1, 1, 1);
  return padChannels(l.operands[0], l.results[0], streamOf(l));
}

Status launchReshape(const OpLaunch &l) {
  RN_EXPECT(l, 1, 1, 1);
  return convert("reshape", l.operands[0], l.results[0], /*requireSameShape=*/false, streamOf(l));
}

Status launchFlatten(const OpLaunch &l) {
  RN_EXPECT(l, 1, 1, 1);
  const DeviceTensor &input = l.operands[0], &result = l.results[0];
  if (input.rank() < 1)
    return Error("flatten: input must have a batch dimension");
  int64_t rest = 1;
  for (int64_t i = 1; i < input.rank(); ++i)
    rest *= input.dim(i);
  std::vector<int64_t> expected{input.dim(0), rest};
  if (result.shape != expected)
    return Error("flatten: result must have shape " + detail::shapeString(expected) + ", got " +
                 detail::shapeString(result.shape));
  return convert("flatten", input, result, /*requireSameShape=*/false, streamOf(l));
}

Status launchZero(const OpLaunch &l) {
  // rn.zero has one operand (the tensor it replaces) and writes its result.
  RN_EXPECT(l, 0, 1, 1);
  return zero(l.results[0], streamOf(l));
}

// rn.dropout_train: the mask's stream comes from the attributes (count,
// index), the input and the step; the kernel forms the stream step * count + index on
// the device. (The model-level rn.dropout never reaches a program.)
Status launchDropoutTrain(const OpLaunch &l) {
  RN_EXPECT(l, 2, 2, 2);
  const json &a = l.node.attributes;
  return dropout(l.operands[0], numAttr(a, "p"), l.seed, l.operands[1],
                 uint64_t(numAttr(a, "count")), uint64_t(numAttr(a, "index")), l.results[0],
                 &l.results[1], streamOf(l));
}

Status launchMaxPool(const OpLaunch &l) {
  RN_EXPECT(l, 1, 1, 1);
  return maxPool2d(l.operands[0], poolParams(l.node.attributes), l.results[0], streamOf(l));
}

Status launchAvgPool(const OpLaunch &l) {
  RN_EXPECT(l, 1, 1, 1);
  return avgPool2d(l.operands[0], poolParams(l.node.attributes), l.results[0], streamOf(l));
}

/// Overlapping windows keep each window's arg-max in the stream workspace
/// between the two passes: the whole batch's when it fits, else a chunk of
/// whole images at a time (disjoint windows need none).
Result<size_t> prepareMaxPoolBackward(const OpLaunch &l) {
  Status s = expect(l, 2, 2, 1);
  if (!s.ok())
    return s.error();
  return maxPool2dBackwardWorkspaceBytes(l.operands[1].shape, poolParams(l.node.attributes),
                                         l.stream.workspaceBytes);
}

Status launchMaxPoolBackward(const OpLaunch &l) {
  RN_EXPECT(l, 2, 2, 1);
  return maxPool2dBackward(l.operands[0], l.operands[1], poolParams(l.node.attributes),
                           l.results[0], l.stream.workspace, l.stream.workspaceBytes,
                           streamOf(l));
}

Status launchAvgPoolBackward(const OpLaunch &l) {
  RN_EXPECT(l, 1, 1, 1);
  return avgPool2dBackward(l.operands[0], poolParams(l.node.attributes), l.results[0],
                           streamOf(l));
}

Status launchGlobalAvgPool(const OpLaunch &l) {
  RN_EXPECT(l, 1, 1, 1);
  return globalAvgPool(l.operands[0], l.results[0], streamOf(l));
}

Status launchGlobalAvgPoolBackward(const OpLaunch &l) {
  RN_EXPECT(l, 1, 1, 1);
  return globalAvgPoolBackward(l.operands[0], l.results[0], streamOf(l));
}

Result<size_t> prepareSoftmaxCrossEntropy(const OpLaunch &l) {
  Status s = expect(l, 2, 2, 1);
  if (!s.ok())
    return s.error();
  if (l.operands[0].rank() != 2)
    return Error("softmax_cross_entropy: logits must be [N, classes] (rank 2), got shape " +
                 detail::shapeString(l.operands[0].shape));
  return softmaxCrossEntropyWorkspaceBytes(l.operands[0].dim(0));
}

Status launchSoftmaxCrossEntropy(const OpLaunch &l) {
  RN_EXPECT(l, 2, 2, 1);
  return softmaxCrossEntropy(l.operands[0], l.operands[1],
                             numAttr(l.node.attributes, "label_smoothing"), l.results[0],
                             l.stream.workspace, l.stream.workspaceBytes, streamOf(l));
}

Status launchSoftmaxCrossEntropyBackward(const OpLaunch &l) {
  RN_EXPECT(l, 2, 3, 1);
  return softmaxCrossEntropyBackward(
      l.operands[0], l.operands[1], l.operands.size() == 3 ? &l.operands[2] : nullptr,
      numAttr(l.node.attributes, "label_smoothing"), l.results[0], streamOf(l));
}

Status launchCountCorrect(const OpLaunch &l) {
  RN_EXPECT(l, 2, 2, 1);
  return countCorrect(l.operands[0], l.operands[1], l.results[0], streamOf(l));
}

Status launchHostToDevice(const OpLaunch &l) {
  RN_EXPECT(l, 1, 1, 1);
  const DeviceTensor &host = l.operands[0], &device = l.results[0];
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
  RN_CUDA_TRY(cudaMemcpyAsync(device.data, host.data, bytes, cudaMemcpyHostToDevice, streamOf(l)));
  return Status::success();
}

} // namespace

const std::vector<OpLauncher> &elementwiseLaunchers() {
  static const std::vector<OpLauncher> launchers = {
      {"relu", nullptr, launchUnary<UnaryOp::relu>},
      {"tanh", nullptr, launchUnary<UnaryOp::tanh>},
      {"silu", nullptr, launchUnary<UnaryOp::silu>},
      {"relu_backward", nullptr, launchBinary<BinaryOp::relu_backward>},
      {"tanh_backward", nullptr, launchBinary<BinaryOp::tanh_backward>},
      {"silu_backward", nullptr, launchBinary<BinaryOp::silu_backward>},
      {"dropout_backward", nullptr, launchBinary<BinaryOp::dropout_backward>},
      {"add", nullptr, launchBinary<BinaryOp::add>},
      {"cast", nullptr, launchCast},
      {"pad_channels", nullptr, launchPadChannels},
      {"reshape", nullptr, launchReshape},
      {"flatten", nullptr, launchFlatten},
      {"zero", nullptr, launchZero},
      {"dropout_train", nullptr, launchDropoutTrain},
      {"max_pool2d", nullptr, launchMaxPool},
      {"avg_pool2d", nullptr, launchAvgPool},
      {"max_pool2d_backward", prepareMaxPoolBackward, launchMaxPoolBackward},
      {"avg_pool2d_backward", nullptr, launchAvgPoolBackward},
      {"global_avg_pool", nullptr, launchGlobalAvgPool},
      {"global_avg_pool_backward", nullptr, launchGlobalAvgPoolBackward},
      {"softmax_cross_entropy", prepareSoftmaxCrossEntropy, launchSoftmaxCrossEntropy},
      {"softmax_cross_entropy_backward", nullptr, launchSoftmaxCrossEntropyBackward},
      {"count_correct", nullptr, launchCountCorrect},
      {"host_to_device", nullptr, launchHostToDevice},
  };
  return launchers;
}

} // namespace rn::cuda
