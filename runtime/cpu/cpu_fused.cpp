//===- cpu_fused.cpp - Fused CBR and BN+add+ReLU ops ----------------------===//
//
// Each fused op is, by definition (dialects/rn/RNFusedOps.td), the
// composition of the unfused ops it replaces; these kernels are exactly that
// composition, with every intermediate rounded to the dtype the unfused
// program would store it in. Errors name the fused op and the inner op.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_kernels_detail.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace rn::cpu {
namespace {

/// `status` with the fused op's name in front.
KernelStatus within(const char *op, KernelStatus status) {
  if (!status.ok())
    status.error = std::string(op) + ": " + status.error;
  return status;
}

} // namespace

KernelStatus cbrForward(const TensorView &input, const TensorView &filter,
                        const TensorView &gamma, const TensorView &beta,
                        const Conv2dAttrs &attrs, double epsilon, bool relu,
                        const TensorView &result, const TensorView &convOutput,
                        const TensorView &batchMean,
                        const TensorView &batchInvStd) {
  const char *op = "cbr_forward";
  KernelStatus s = conv2d(input, filter, nullptr, attrs, convOutput);
  if (s.ok())
    s = batchNormTrain(convOutput, gamma, beta, epsilon, result, batchMean,
                       batchInvStd);
  if (s.ok() && relu)
    s = cpu::relu(result, result);
  return within(op, std::move(s));
}

KernelStatus cbrBackward(
    const TensorView &outputGrad, const TensorView &input,
    const TensorView &filter, const TensorView &convOutput,
    const TensorView &gamma, const TensorView &batchMean,
    const TensorView &batchInvStd, const TensorView &filterGradAcc,
    const TensorView &gammaGradAcc, const TensorView &betaGradAcc,
    const TensorView *reluOutput, const Conv2dAttrs &attrs,
    const TensorView &convOutputGrad, const TensorView *inputGrad,
    const TensorView &filterGrad, const TensorView &gammaGrad,
    const TensorView &betaGrad) {
  const char *op = "cbr_backward";
  // The gradient at the batch norm's output: masked by the ReLU if any.
  std::vector<float> masked;
  TensorView bnGrad = outputGrad;
  KernelStatus s;
  if (reluOutput) {
    masked.resize(static_cast<size_t>(std::max<int64_t>(outputGrad.numel(), 0)));
    bnGrad.data = masked.data();
    s = reluBackward(outputGrad, *reluOutput, bnGrad);
  }
  if (s.ok())
    s = batchNormBackward(bnGrad, convOutput, gamma, batchMean, batchInvStd,
                          gammaGradAcc, betaGradAcc, convOutputGrad, gammaGrad,
                          betaGrad);
  if (s.ok())
    s = conv2dBackward(convOutputGrad, input, filter, filterGradAcc, nullptr,
                       attrs, inputGrad, filterGrad, nullptr);
  return within(op, std::move(s));
}

KernelStatus cbrInference(const TensorView &input, const TensorView &filter,
                          const TensorView &gamma, const TensorView &beta,
                          const TensorView &runningMean,
                          const TensorView &runningVar,
                          const Conv2dAttrs &attrs, double epsilon, bool relu,
                          const TensorView &result) {
  const char *op = "cbr_inference";
  // The convolution output has the input's dtype and the result's shape.
  std::vector<float> conv(static_cast<size_t>(std::max<int64_t>(result.numel(), 0)));
  TensorView convOutput{conv.data(), result.shape, input.dtype};
  KernelStatus s = conv2d(input, filter, nullptr, attrs, convOutput);
  if (s.ok())
    s = batchNormInference(convOutput, gamma, beta, runningMean, runningVar,
                           epsilon, result);
  if (s.ok() && relu)
    s = cpu::relu(result, result);
  return within(op, std::move(s));
}

KernelStatus bnAddRelu(const TensorView &input, const TensorView &gamma,
                       const TensorView &beta, const TensorView &shortcut,
                       double epsilon, const TensorView &result,
                       const TensorView &batchMean,
                       const TensorView &batchInvStd) {
  const char *op = "bn_add_relu";
  KernelStatus s = batchNormTrain(input, gamma, beta, epsilon, result,
                                  batchMean, batchInvStd);
  if (s.ok())
    s = add(result, shortcut, result);
  if (s.ok())
    s = cpu::relu(result, result);
  return within(op, std::move(s));
}

KernelStatus bnAddReluBackward(
    const TensorView &outputGrad, const TensorView &reluOutput,
    const TensorView &input, const TensorView &gamma,
    const TensorView &batchMean, const TensorView &batchInvStd,
    const TensorView &gammaGradAcc, const TensorView &betaGradAcc,
    const TensorView &inputGrad, const TensorView &shortcutGrad,
    const TensorView &gammaGrad, const TensorView &betaGrad) {
  const char *op = "bn_add_relu_backward";
  // The add passes the masked gradient to both of its operands.
  KernelStatus s = reluBackward(outputGrad, reluOutput, shortcutGrad);
  if (s.ok())
    s = batchNormBackward(shortcutGrad, input, gamma, batchMean, batchInvStd,
                          gammaGradAcc, betaGradAcc, inputGrad, gammaGrad,
                          betaGrad);
  return within(op, std::move(s));
}

KernelStatus bnAddReluInference(const TensorView &input,
                                const TensorView &gamma,
                                const TensorView &beta,
                                const TensorView &runningMean,
                                const TensorView &runningVar,
                                const TensorView &shortcut, double epsilon,
                                const TensorView &result) {
  const char *op = "bn_add_relu_inference";
  KernelStatus s = batchNormInference(input, gamma, beta, runningMean,
                                      runningVar, epsilon, result);
  if (s.ok())
    s = add(result, shortcut, result);
  if (s.ok())
    s = cpu::relu(result, result);
  return within(op, std::move(s));
}

} // namespace rn::cpu
