//===- cpu_fused.cpp - Fused CBR and BN+add+ReLU ops ----------------------===//
//
// Each fused op is, by definition (dialects/rn/RNFusedOps.td), the
// composition of the unfused ops it replaces; these kernels are exactly that
// composition, with every intermediate rounded to the dtype the unfused
// program would store it in. Errors name the fused op and the inner op.
//
// rn-fuse-bn-prologue's ops have no unfused form with the same rounding:
// bn_scale_bias and the scale-bias-ReLU prologue are defined by their f32
// formulas (docs/cpu-kernels.md), and the ops that carry a prologue are the
// composition of the prologue, materialized in the input's dtype, with the
// op without it.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_kernels_detail.h"
#include "runtime/cpu/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace rn::cpu {

using detail::Check;

namespace {

/// `status` with the fused op's name in front.
KernelStatus within(const char *op, KernelStatus status) {
  if (!status.ok())
    status.error = std::string(op) + ": " + status.error;
  return status;
}

/// The scale-bias-ReLU prologue of one element: relu(round(x * scale +
/// bias)), one f32 fused multiply-add rounded once to `type` (for f16 and
/// bf16 operands the product is exact in f32, so this is also the product
/// and the sum in f32); relu(v) = v <= 0 ? 0 : v (NaN stays NaN, -0 becomes
/// +0). cuDNN's fused prologue engines round so (docs/cpu-kernels.md).
float prologueValue(DType type, float x, float scale, float bias) {
  const float shifted = roundTo(type, std::fmaf(x, scale, bias));
  return shifted <= 0.0f ? 0.0f : shifted;
}

/// A tensor the kernel owns, with a view on it.
struct Temporary {
  std::vector<float> data;
  TensorView view;
  Temporary(Shape shape, DType dtype) {
    view.shape = std::move(shape);
    view.dtype = dtype;
    data.assign(static_cast<size_t>(std::max<int64_t>(view.numel(), 0)), 0.0f);
    view.data = data.data();
  }
};

/// What a convolution reads: `input` itself, or P(input) materialized in
/// `storage` (input's shape and dtype) when the prologue's scale and bias
/// are given; `scaleName` and `biasName` name them in errors.
KernelStatus prologueInput(const TensorView &input, const TensorView *scale,
                           const TensorView *bias, const char *scaleName, const char *biasName,
                           std::vector<float> &storage, TensorView &activated) {
  activated = input;
  if (!scale && !bias)
    return {};
  if (!scale || !bias)
    return KernelStatus{std::string("has half a prologue: ") + (scale ? biasName : scaleName) +
                        " is missing"};
  storage.assign(static_cast<size_t>(std::max<int64_t>(input.numel(), 0)), 0.0f);
  activated.data = storage.data();
  return scaleBiasRelu(input, *scale, *bias, activated);
}

/// conv2d (no bias) of `input`, or of P(input) with a forward prologue:
/// the convolution of cbr_forward and conv_bn_stats.
KernelStatus prologueConv2d(const TensorView &input, const TensorView &filter,
                            const TensorView *prologueScale, const TensorView *prologueBias,
                            const Conv2dAttrs &attrs, const TensorView &convOutput) {
  std::vector<float> activated;
  TensorView x;
  KernelStatus s = prologueInput(input, prologueScale, prologueBias, "prologue_scale",
                                 "prologue_bias", activated, x);
  if (s.ok())
    s = conv2d(x, filter, nullptr, attrs, convOutput);
  return s;
}

} // namespace

KernelStatus bnScaleBias(const TensorView &batchMean, const TensorView &batchInvStd,
                         const TensorView &gamma, const TensorView &beta,
                         const TensorView &scale, const TensorView &bias) {
  Check check("bn_scale_bias");
  if (check.rank("batch_mean", batchMean, 1, "[C]").failed())
    return check.status();
  const Shape vec = batchMean.shape;
  check.f32("batch_mean", batchMean, vec)
      .f32("batch_inv_std", batchInvStd, vec)
      .shape("gamma", gamma, vec)
      .shape("beta", beta, vec)
      .shape("scale", scale, vec)
      .shape("bias", bias, vec);
  if (check.failed())
    return check.status();
  check.require(bias.dtype == scale.dtype, "bias must have scale's dtype ",
                dtypeName(scale.dtype), ", got ", dtypeName(bias.dtype));
  if (check.failed())
    return check.status();
  for (int64_t c = 0; c < vec[0]; ++c) {
    // In f32: the product rounded once, then rounded to T; the bias from
    // the rounded scale with one fused multiply-add.
    const float s = roundTo(scale.dtype, batchInvStd.data[c] * gamma.data[c]);
    const float b = roundTo(bias.dtype, std::fmaf(-batchMean.data[c], s, beta.data[c]));
    scale.data[c] = s;
    bias.data[c] = b;
  }
  return {};
}

KernelStatus scaleBiasRelu(const TensorView &input, const TensorView &scale,
                           const TensorView &bias, const TensorView &result) {
  Check check("scale_bias_relu");
  if (check.view("input", input).failed())
    return check.status();
  if (check.require(input.rank() >= 1, "input must have a channel dimension, got shape ",
                    detail::shapeString(input.shape))
          .failed())
    return check.status();
  const int64_t channels = input.shape.back();
  check.vector("scale", scale, channels)
      .vector("bias", bias, channels)
      .shape("result", result, input.shape);
  if (check.failed())
    return check.status();
  check
      .require(scale.dtype == input.dtype, "scale must have the input's dtype ",
               dtypeName(input.dtype), ", got ", dtypeName(scale.dtype))
      .require(bias.dtype == input.dtype, "bias must have the input's dtype ",
               dtypeName(input.dtype), ", got ", dtypeName(bias.dtype))
      .require(result.dtype == input.dtype, "result must have the input's dtype ",
               dtypeName(input.dtype), ", got ", dtypeName(result.dtype));
  if (check.failed())
    return check.status();
  const int64_t count = channels ? input.numel() / channels : 0;
  for (int64_t r = 0; r < count; ++r)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = r * channels + c;
      result.data[i] = prologueValue(input.dtype, input.data[i], scale.data[c], bias.data[c]);
    }
  return {};
}

KernelStatus cbrForward(const TensorView &input, const TensorView &filter,
                        const TensorView &gamma, const TensorView &beta,
                        const Conv2dAttrs &attrs, double epsilon, bool relu,
                        const TensorView &result, const TensorView &convOutput,
                        const TensorView &batchMean,
                        const TensorView &batchInvStd) {
  return cbrForward(input, filter, gamma, beta, nullptr, nullptr, attrs, epsilon, relu, result,
                    convOutput, batchMean, batchInvStd);
}

KernelStatus cbrForward(const TensorView &input, const TensorView &filter,
                        const TensorView &gamma, const TensorView &beta,
                        const TensorView *prologueScale, const TensorView *prologueBias,
                        const Conv2dAttrs &attrs, double epsilon, bool relu,
                        const TensorView &result, const TensorView &convOutput,
                        const TensorView &batchMean, const TensorView &batchInvStd) {
  const char *op = "cbr_forward";
  KernelStatus s =
      prologueConv2d(input, filter, prologueScale, prologueBias, attrs, convOutput);
  if (s.ok())
    s = batchNormTrain(convOutput, gamma, beta, epsilon, result, batchMean,
                       batchInvStd);
  if (s.ok() && relu)
    s = cpu::relu(result, result);
  return within(op, std::move(s));
}

KernelStatus convBnStats(const TensorView &input, const TensorView &filter,
                         const TensorView *prologueScale, const TensorView *prologueBias,
                         const Conv2dAttrs &attrs, double epsilon,
                         const TensorView &convOutput, const TensorView &batchMean,
                         const TensorView &batchInvStd) {
  const char *op = "conv_bn_stats";
  KernelStatus s =
      prologueConv2d(input, filter, prologueScale, prologueBias, attrs, convOutput);
  if (s.ok())
    s = batchNormStatistics(convOutput, epsilon, batchMean, batchInvStd);
  return within(op, std::move(s));
}

KernelStatus reluBackwardPrologueMask(const TensorView &outputGrad, const TensorView &input,
                                      const TensorView &gamma, const TensorView &beta,
                                      const TensorView &batchMean,
                                      const TensorView &batchInvStd,
                                      const TensorView &inputGrad) {
  const char *op = "relu_backward (prologue mask)";
  Check check(op);
  int64_t channels, count;
  if (detail::checkBatchNormInput(check, input, channels, count).failed())
    return check.status();
  // The prologue's scale and bias in conv_output's dtype, then the
  // activation the prologue computes from conv_output, whose ReLU the mask is.
  Temporary scale({channels}, input.dtype), bias({channels}, input.dtype);
  Temporary activation(input.shape, input.dtype);
  KernelStatus s = bnScaleBias(batchMean, batchInvStd, gamma, beta, scale.view, bias.view);
  if (s.ok())
    s = scaleBiasRelu(input, scale.view, bias.view, activation.view);
  if (s.ok())
    s = reluBackward(outputGrad, activation.view, inputGrad);
  return within(op, std::move(s));
}

KernelStatus cbrBackwardBatchNorm(const TensorView &outputGrad, const TensorView &convOutput,
                                  const TensorView &gamma, const TensorView &batchMean,
                                  const TensorView &batchInvStd,
                                  const TensorView &gammaGradAcc,
                                  const TensorView &betaGradAcc,
                                  const CbrBackwardOptions &options,
                                  const TensorView &convOutputGrad,
                                  const TensorView &gammaGrad, const TensorView &betaGrad) {
  const char *op = "cbr_backward";
  if (options.reluOutput && options.reluBeta)
    return KernelStatus{std::string(op) + ": has two ReLU masks (relu_output and relu_beta)"};
  if (options.prologueMask && !options.reluBeta)
    return KernelStatus{std::string(op) + ": has prologue_mask without relu_recompute"};
  // The gradient at the batch norm's output: masked by the ReLU if any.
  std::vector<float> masked;
  TensorView bnGrad = outputGrad;
  KernelStatus s;
  if (options.reluOutput || options.reluBeta) {
    masked.resize(static_cast<size_t>(std::max<int64_t>(outputGrad.numel(), 0)));
    bnGrad.data = masked.data();
    if (options.reluOutput)
      s = reluBackward(outputGrad, *options.reluOutput, bnGrad);
    else if (options.prologueMask)
      s = reluBackwardPrologueMask(outputGrad, convOutput, gamma, *options.reluBeta, batchMean,
                                   batchInvStd, bnGrad);
    else
      s = reluBackwardRecomputed(outputGrad, convOutput, gamma, *options.reluBeta, batchMean,
                                 batchInvStd, bnGrad);
  }
  if (s.ok())
    s = batchNormBackward(bnGrad, convOutput, gamma, batchMean, batchInvStd, gammaGradAcc,
                          betaGradAcc, convOutputGrad, gammaGrad, betaGrad);
  return within(op, std::move(s));
}

KernelStatus cbrBackwardFilter(const TensorView &convOutputGrad, const TensorView &input,
                               const TensorView *inputScale, const TensorView *inputBias,
                               const TensorView &filterGradAcc, const Conv2dAttrs &attrs,
                               const TensorView &filterGrad) {
  const char *op = "cbr_backward";
  std::vector<float> activated;
  TensorView x;
  KernelStatus s =
      prologueInput(input, inputScale, inputBias, "input_scale", "input_bias", activated, x);
  if (s.ok())
    s = conv2dBackwardFilter(convOutputGrad, x, filterGradAcc, attrs, filterGrad);
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
  CbrBackwardOptions options;
  options.reluOutput = reluOutput;
  return cbrBackward(outputGrad, input, filter, convOutput, gamma, batchMean, batchInvStd,
                     filterGradAcc, gammaGradAcc, betaGradAcc, options, attrs, convOutputGrad,
                     inputGrad, filterGrad, gammaGrad, betaGrad);
}

KernelStatus cbrBackward(const TensorView &outputGrad, const TensorView &input,
                         const TensorView &filter, const TensorView &convOutput,
                         const TensorView &gamma, const TensorView &batchMean,
                         const TensorView &batchInvStd, const TensorView &filterGradAcc,
                         const TensorView &gammaGradAcc, const TensorView &betaGradAcc,
                         const CbrBackwardOptions &options, const Conv2dAttrs &attrs,
                         const TensorView &convOutputGrad, const TensorView *inputGrad,
                         const TensorView &filterGrad, const TensorView &gammaGrad,
                         const TensorView &betaGrad) {
  const char *op = "cbr_backward";
  if (options.inputGradAddend && !inputGrad)
    return KernelStatus{std::string(op) + ": has an input gradient addend but no input_grad"};
  KernelStatus s = cbrBackwardBatchNorm(outputGrad, convOutput, gamma, batchMean, batchInvStd,
                                        gammaGradAcc, betaGradAcc, options, convOutputGrad,
                                        gammaGrad, betaGrad);
  if (!s.ok())
    return s;
  // The convolution's backward at what the forward convolution read; the
  // input gradient is the gradient there (at P(input) with a prologue).
  std::vector<float> activated;
  TensorView x;
  s = prologueInput(input, options.inputScale, options.inputBias, "input_scale", "input_bias",
                    activated, x);
  const TensorView *plainInputGrad = options.inputGradAddend ? nullptr : inputGrad;
  if (s.ok())
    s = conv2dBackward(convOutputGrad, x, filter, filterGradAcc, nullptr, attrs, plainInputGrad,
                       filterGrad, nullptr);
  if (s.ok() && options.inputGradAddend)
    s = conv2dBackwardInput(convOutputGrad, filter, attrs, *inputGrad, options.inputGradAddend);
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

//===----------------------------------------------------------------------===//
// The ops of this family (cpu_ops.h)
//===----------------------------------------------------------------------===//

namespace {

namespace ot = op_table;

KernelStatus runCbrForward(const OpRun &r) {
  using namespace ot::cbr_forward;
  return cbrForward(r.in(operand::input), r.in(operand::filter), r.in(operand::gamma),
                    r.in(operand::beta), r.inIfAny(operand::prologue_scale),
                    r.inIfAny(operand::prologue_bias), convAttrsOf<attrs>(r.node),
                    attrs::epsilon(r.node), attrs::relu(r.node), r.out(result::result),
                    r.out(result::conv_output), r.out(result::batch_mean),
                    r.out(result::batch_inv_std));
}

KernelStatus runConvBnStats(const OpRun &r) {
  using namespace ot::conv_bn_stats;
  return convBnStats(r.in(operand::input), r.in(operand::filter),
                     r.inIfAny(operand::prologue_scale), r.inIfAny(operand::prologue_bias),
                     convAttrsOf<attrs>(r.node), attrs::epsilon(r.node),
                     r.out(result::conv_output), r.out(result::batch_mean),
                     r.out(result::batch_inv_std));
}

KernelStatus runBnScaleBias(const OpRun &r) {
  using namespace ot::bn_scale_bias;
  return bnScaleBias(r.in(operand::batch_mean), r.in(operand::batch_inv_std),
                     r.in(operand::gamma), r.in(operand::beta), r.out(result::scale),
                     r.out(result::bias));
}

KernelStatus runCbrInference(const OpRun &r) {
  using namespace ot::cbr_inference;
  return cbrInference(r.in(operand::input), r.in(operand::filter), r.in(operand::gamma),
                      r.in(operand::beta), r.in(operand::running_mean),
                      r.in(operand::running_var), convAttrsOf<attrs>(r.node),
                      attrs::epsilon(r.node), attrs::relu(r.node), r.out(result::result));
}

KernelStatus runBnAddRelu(const OpRun &r) {
  using namespace ot::bn_add_relu;
  return bnAddRelu(r.in(operand::input), r.in(operand::gamma), r.in(operand::beta),
                   r.in(operand::shortcut), attrs::epsilon(r.node), r.out(result::result),
                   r.out(result::batch_mean), r.out(result::batch_inv_std));
}

KernelStatus runBnAddReluBackward(const OpRun &r) {
  using namespace ot::bn_add_relu_backward;
  return bnAddReluBackward(r.in(operand::output_grad), r.in(operand::relu_output),
                           r.in(operand::input), r.in(operand::gamma),
                           r.in(operand::batch_mean), r.in(operand::batch_inv_std),
                           r.in(operand::gamma_grad_acc), r.in(operand::beta_grad_acc),
                           r.out(result::input_grad), r.out(result::shortcut_grad),
                           r.out(result::gamma_grad), r.out(result::beta_grad));
}

KernelStatus runBnAddReluInference(const OpRun &r) {
  using namespace ot::bn_add_relu_inference;
  return bnAddReluInference(r.in(operand::input), r.in(operand::gamma), r.in(operand::beta),
                            r.in(operand::running_mean), r.in(operand::running_var),
                            r.in(operand::shortcut), attrs::epsilon(r.node),
                            r.out(result::result));
}

KernelStatus runCbrBackward(const OpRun &r) {
  using namespace ot::cbr_backward;
  if (r.role == "bn_grad") {
    CbrBackwardOptions forms;
    forms.reluOutput = r.inIfAny(operand::relu_output);
    forms.reluBeta = r.inIfAny(operand::relu_beta);
    forms.prologueMask = attrs::prologue_mask(r.node);
    return cbrBackwardBatchNorm(r.in(operand::output_grad), r.in(operand::conv_output),
                                r.in(operand::gamma), r.in(operand::batch_mean),
                                r.in(operand::batch_inv_std), r.in(operand::gamma_grad_acc),
                                r.in(operand::beta_grad_acc), forms,
                                r.out(result::conv_output_grad), r.out(result::gamma_grad),
                                r.out(result::beta_grad));
  }
  if (r.role == "weight_grad") // at P(input) with an input prologue
    return cbrBackwardFilter(r.out(result::conv_output_grad), r.in(operand::input),
                             r.inIfAny(operand::input_scale), r.inIfAny(operand::input_bias),
                             r.in(operand::filter_grad_acc), convAttrsOf<attrs>(r.node),
                             r.out(result::filter_grad));
  if (r.role == "input_grad")
    return conv2dBackwardInput(r.out(result::conv_output_grad), r.in(operand::filter),
                               convAttrsOf<attrs>(r.node), r.out(result::input_grad),
                               r.inIfAny(operand::input_grad_addend));
  return unknownPart(r);
}

Access cbrBackwardAccess(const Node &node, std::string_view role) {
  using namespace ot::cbr_backward;
  if (role == "bn_grad")
    return partAccess(node, {},
                      {operand::output_grad, operand::conv_output, operand::gamma,
                       operand::batch_mean, operand::batch_inv_std, operand::gamma_grad_acc,
                       operand::beta_grad_acc, operand::relu_output, operand::relu_beta},
                      {result::conv_output_grad, result::gamma_grad, result::beta_grad});
  if (role == "weight_grad") // at P(input) with an input prologue
    return partAccess(node, {result::conv_output_grad},
                      {operand::input, operand::filter_grad_acc, operand::input_scale,
                       operand::input_bias},
                      {result::filter_grad});
  if (role == "input_grad")
    return partAccess(node, {result::conv_output_grad},
                      {operand::filter, operand::input_grad_addend}, {result::input_grad});
  return {};
}

} // namespace

const std::vector<CpuOp> &fusedOps() {
  static const std::vector<CpuOp> ops = {
      {OpKind::cbr_forward, runCbrForward},
      {OpKind::conv_bn_stats, runConvBnStats},
      {OpKind::bn_scale_bias, runBnScaleBias},
      {OpKind::cbr_inference, runCbrInference},
      {OpKind::bn_add_relu, runBnAddRelu},
      {OpKind::bn_add_relu_backward, runBnAddReluBackward},
      {OpKind::bn_add_relu_inference, runBnAddReluInference},
      {OpKind::cbr_backward, runCbrBackward, cbrBackwardAccess},
  };
  return ops;
}

} // namespace rn::cpu
