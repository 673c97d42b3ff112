//===- RNFusedOps.cpp - Verification of fused CBR ops ---------------------===//
//
// A fused op obeys the shape rules of the ops it replaces: the convolution
// part is checked with inferConv2d, the batch normalization part with
// verifyBatchNormOperands against the convolution's output, and every
// result against the type its unfused counterpart would have. A
// convolution's input prologue (the previous layer's apply + ReLU) takes
// one scale and one bias per input channel, in the input's type.
//
//===----------------------------------------------------------------------===//

#include "dialects/rn/RNOps.h"
#include "dialects/rn/RNShapes.h"

using namespace mlir;
using namespace mlir::rn;
using namespace mlir::rn::shapes;

/// Each named type equals `expected`.
static LogicalResult requireTypes(const ShapeDiagnostics &diag,
                                  ArrayRef<NamedType> named, Type expected) {
  for (auto [what, type] : named)
    if (failed(diag.requireType(what, type, expected)))
      return failure();
  return success();
}

/// The batch normalization part: per-channel vectors of `normalized` (f32
/// allowed under mixed precision) and, when given, a positive epsilon.
static LogicalResult verifyBatchNormPart(const ShapeDiagnostics &diag,
                                         RankedTensorType normalized,
                                         ArrayRef<NamedType> vectors,
                                         std::optional<double> epsilon) {
  if (failed(verifyBatchNormOperands(diag, normalized, vectors,
                                     /*allowF32Vectors=*/true)))
    return failure();
  if (epsilon)
    return verifyBatchNormAttributes(diag, *epsilon, std::nullopt);
  return success();
}

/// The output of the bias-free convolution of a CBR op.
template <typename CbrOp>
static FailureOr<RankedTensorType> inferCbrConvolution(const ShapeDiagnostics &diag,
                                                       CbrOp op) {
  return inferConv2d(diag, cast<RankedTensorType>(op.getInput().getType()),
                     cast<RankedTensorType>(op.getFilter().getType()),
                     RankedTensorType(), op.getStrides(), op.getPadding(),
                     op.getDilation(), op.getGroups());
}

/// The scale-bias-ReLU prologue of a convolution's input (`scaleName` and
/// `biasName`, both or neither): each [C_in] of the input's element type,
/// with one group.
static LogicalResult verifyPrologue(const ShapeDiagnostics &diag,
                                    StringRef scaleName, Value scale,
                                    StringRef biasName, Value bias,
                                    RankedTensorType input, int64_t groups) {
  if (!scale && !bias)
    return success();
  if (!scale || !bias)
    return diag.fail("takes ", scaleName, " and ", biasName,
                     " together, got only ", scale ? scaleName : biasName);
  if (groups != 1)
    return diag.fail("takes an input prologue only with groups 1, got ",
                     groups);
  int64_t channels = input.getShape().back();
  for (auto [what, value] : {std::pair{scaleName, scale}, {biasName, bias}}) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getRank() != 1 || type.getDimSize(0) != channels)
      return diag.fail(what, " must be [", channels,
                       "] (one per input channel), got ", type);
    if (failed(diag.requireSameElementType(what, type, "input", input)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CBR
//===----------------------------------------------------------------------===//

LogicalResult CbrForwardOp::verify() {
  ShapeDiagnostics diag(*this);
  FailureOr<RankedTensorType> output = inferCbrConvolution(diag, *this);
  if (failed(output) ||
      failed(verifyPrologue(diag, "prologue_scale", getPrologueScale(),
                            "prologue_bias", getPrologueBias(),
                            getInput().getType(), getGroups())))
    return failure();
  NamedType vectors[] = {{"gamma", getGamma().getType()},
                         {"beta", getBeta().getType()}};
  NamedType activations[] = {{"conv_output", getConvOutput().getType()},
                             {"result", getResult().getType()}};
  if (failed(verifyBatchNormPart(diag, *output, vectors,
                                 getEpsilon().convertToDouble())) ||
      failed(requireTypes(diag, activations, *output)))
    return failure();
  return verifySavedStatistics(diag, *output, getBatchMean(),
                               getBatchInvStd());
}

LogicalResult CbrBackwardOp::verify() {
  ShapeDiagnostics diag(*this);
  FailureOr<RankedTensorType> output = inferCbrConvolution(diag, *this);
  if (failed(output))
    return failure();
  SmallVector<NamedType> activations = {
      {"conv_output", getConvOutput().getType()},
      {"output_grad", getOutputGrad().getType()}};
  if (Value reluOutput = getReluOutput())
    activations.push_back({"relu_output", reluOutput.getType()});
  if (getReluOutput() && getReluBeta())
    return diag.fail("takes the ReLU mask from relu_output or from relu_beta, "
                     "not both");
  if (getPrologueMask() && !getReluBeta())
    return diag.fail("takes prologue_mask only with relu_recompute (the mask "
                     "recomputed from relu_beta)");
  if (failed(verifyPrologue(diag, "input_scale", getInputScale(), "input_bias",
                            getInputBias(), getInput().getType(),
                            getGroups())))
    return failure();
  SmallVector<NamedType> vectors = {
      {"gamma", getGamma().getType()},
      {"gamma_grad_acc", getGammaGradAcc().getType()},
      {"beta_grad_acc", getBetaGradAcc().getType()}};
  if (Value beta = getReluBeta())
    vectors.push_back({"relu_beta", beta.getType()});
  if (failed(requireTypes(diag, activations, *output)) ||
      failed(verifyBatchNormPart(diag, *output, vectors, std::nullopt)) ||
      failed(verifySavedStatistics(diag, *output, getBatchMean(),
                                   getBatchInvStd())) ||
      failed(diag.requireType("gamma_grad_acc", getGammaGradAcc().getType(),
                              getGamma().getType())) ||
      failed(verifyFilterGradAcc(diag, getFilterGradAcc().getType(),
                                 getFilter().getType(), getGroups())) ||
      failed(verifyInputGradAddend(diag, getInputGradAddend(),
                                   getInput().getType(),
                                   static_cast<bool>(getInputGrad()))) ||
      failed(diag.requireType("conv_output_grad",
                              getConvOutputGrad().getType(), *output)))
    return failure();

  if (Value inputGrad = getInputGrad())
    if (failed(diag.requireType("input_grad", inputGrad.getType(),
                                getInput().getType())))
      return failure();
  NamedType accumulated[][2] = {
      {{"filter_grad", getFilterGrad().getType()},
       {"filter_grad_acc", getFilterGradAcc().getType()}},
      {{"gamma_grad", getGammaGrad().getType()},
       {"gamma_grad_acc", getGammaGradAcc().getType()}},
      {{"beta_grad", getBetaGrad().getType()},
       {"beta_grad_acc", getBetaGradAcc().getType()}}};
  for (auto &[result, accumulator] : accumulated)
    if (failed(diag.requireType(result.first, result.second, accumulator.second)))
      return failure();
  return success();
}

LogicalResult CbrInferenceOp::verify() {
  ShapeDiagnostics diag(*this);
  FailureOr<RankedTensorType> output = inferCbrConvolution(diag, *this);
  if (failed(output))
    return failure();
  NamedType vectors[] = {{"gamma", getGamma().getType()},
                         {"beta", getBeta().getType()},
                         {"running_mean", getRunningMean().getType()},
                         {"running_var", getRunningVar().getType()}};
  if (failed(verifyBatchNormPart(diag, *output, vectors,
                                 getEpsilon().convertToDouble())))
    return failure();
  return diag.requireType("result", getResult().getType(), *output);
}

//===----------------------------------------------------------------------===//
// Residual tail
//===----------------------------------------------------------------------===//

LogicalResult BnAddReluOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType input = getInput().getType();
  NamedType vectors[] = {{"gamma", getGamma().getType()},
                         {"beta", getBeta().getType()}};
  NamedType activations[] = {{"shortcut", getShortcut().getType()},
                             {"result", getResult().getType()}};
  if (failed(verifyBatchNormPart(diag, input, vectors,
                                 getEpsilon().convertToDouble())) ||
      failed(requireTypes(diag, activations, input)))
    return failure();
  return verifySavedStatistics(diag, input, getBatchMean(), getBatchInvStd());
}

LogicalResult BnAddReluBackwardOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType input = getInput().getType();
  NamedType vectors[] = {{"gamma", getGamma().getType()},
                         {"gamma_grad_acc", getGammaGradAcc().getType()},
                         {"beta_grad_acc", getBetaGradAcc().getType()}};
  NamedType activations[] = {{"output_grad", getOutputGrad().getType()},
                             {"relu_output", getReluOutput().getType()},
                             {"input_grad", getInputGrad().getType()},
                             {"shortcut_grad", getShortcutGrad().getType()}};
  if (failed(verifyBatchNormPart(diag, input, vectors, std::nullopt)) ||
      failed(verifySavedStatistics(diag, input, getBatchMean(),
                                   getBatchInvStd())) ||
      failed(requireTypes(diag, activations, input)) ||
      failed(diag.requireType("gamma_grad_acc", getGammaGradAcc().getType(),
                              getGamma().getType())) ||
      failed(diag.requireType("gamma_grad", getGammaGrad().getType(),
                              getGammaGradAcc().getType())))
    return failure();
  return diag.requireType("beta_grad", getBetaGrad().getType(),
                          getBetaGradAcc().getType());
}

LogicalResult BnAddReluInferenceOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType input = getInput().getType();
  NamedType vectors[] = {{"gamma", getGamma().getType()},
                         {"beta", getBeta().getType()},
                         {"running_mean", getRunningMean().getType()},
                         {"running_var", getRunningVar().getType()}};
  NamedType activations[] = {{"shortcut", getShortcut().getType()},
                             {"result", getResult().getType()}};
  if (failed(verifyBatchNormPart(diag, input, vectors,
                                 getEpsilon().convertToDouble())))
    return failure();
  return requireTypes(diag, activations, input);
}

//===----------------------------------------------------------------------===//
// BN apply as a prologue
//===----------------------------------------------------------------------===//

LogicalResult BnScaleBiasOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType mean = getBatchMean().getType();
  if (mean.getRank() != 1)
    return diag.fail("batch_mean must be [C] (rank 1), got ", mean);
  int64_t channels = mean.getDimSize(0);
  NamedType vectors[] = {{"batch_inv_std", getBatchInvStd().getType()},
                         {"gamma", getGamma().getType()},
                         {"beta", getBeta().getType()},
                         {"scale", getScale().getType()},
                         {"bias", getBias().getType()}};
  for (auto [what, type] : vectors) {
    auto vector = cast<RankedTensorType>(type);
    if (vector.getRank() != 1 || vector.getDimSize(0) != channels)
      return diag.fail(what, " must be [", channels,
                       "] (one per channel, as batch_mean), got ", type);
  }
  return diag.requireType("bias", getBias().getType(), getScale().getType());
}

LogicalResult ConvBnStatsOp::verify() {
  ShapeDiagnostics diag(*this);
  FailureOr<RankedTensorType> output = inferCbrConvolution(diag, *this);
  if (failed(output) ||
      failed(verifyPrologue(diag, "prologue_scale", getPrologueScale(),
                            "prologue_bias", getPrologueBias(),
                            getInput().getType(), getGroups())) ||
      failed(verifyBatchNormAttributes(diag, getEpsilon().convertToDouble(),
                                       std::nullopt)) ||
      failed(diag.requireType("conv_output", getConvOutput().getType(),
                              *output)))
    return failure();
  return verifySavedStatistics(diag, *output, getBatchMean(),
                               getBatchInvStd());
}

//===----------------------------------------------------------------------===//
// InPlaceOpInterface: accumulated gradients update their accumulators
//===----------------------------------------------------------------------===//

std::optional<unsigned> CbrBackwardOp::getUpdatedOperand(unsigned resultIndex) {
  std::pair<Value, OpOperand &> updates[] = {
      {getFilterGrad(), getFilterGradAccMutable()},
      {getGammaGrad(), getGammaGradAccMutable()},
      {getBetaGrad(), getBetaGradAccMutable()}};
  for (auto &[result, accumulator] : updates)
    if (resultIndex == cast<OpResult>(result).getResultNumber())
      return accumulator.getOperandNumber();
  return std::nullopt;
}

std::optional<unsigned>
BnAddReluBackwardOp::getUpdatedOperand(unsigned resultIndex) {
  if (resultIndex == 2)
    return getGammaGradAccMutable().getOperandNumber();
  if (resultIndex == 3)
    return getBetaGradAccMutable().getOperandNumber();
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// ForkingOpInterface: batch norm backward, then dW and dX
//===----------------------------------------------------------------------===//

/// `bn_grad` (ReLU and batch norm backward) produces the gradient at the
/// convolution output that dW and dX read. dX is listed last, as for
/// rn.conv2d_backward: it may overwrite the input that dW reads.
SmallVector<ForkPart> CbrBackwardOp::getForkParts() {
  SmallVector<ForkPart> parts;
  ForkPart bnGrad{"bn_grad",
                  {getOutputGrad(), getConvOutput(), getGamma(),
                   getBatchMean(), getBatchInvStd(), getGammaGradAcc(),
                   getBetaGradAcc()},
                  {getConvOutputGrad(), getGammaGrad(), getBetaGrad()}};
  if (Value reluOutput = getReluOutput())
    bnGrad.reads.push_back(reluOutput);
  if (Value beta = getReluBeta())
    bnGrad.reads.push_back(beta);
  parts.push_back(std::move(bnGrad));
  ForkPart weightGrad{"weight_grad",
                      {getConvOutputGrad(), getInput(), getFilterGradAcc()},
                      {getFilterGrad()}};
  // With an input prologue, dW reads P(input), made from scale and bias.
  if (Value scale = getInputScale())
    weightGrad.reads.append({scale, getInputBias()});
  parts.push_back(std::move(weightGrad));
  if (Value inputGrad = getInputGrad()) {
    ForkPart part{"input_grad", {getConvOutputGrad(), getFilter()}, {inputGrad}};
    if (Value addend = getInputGradAddend())
      part.reads.push_back(addend);
    parts.push_back(std::move(part));
  }
  return parts;
}
