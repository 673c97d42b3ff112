//===- RNTrainingOps.cpp - Verification of training-level rn ops ----------===//
//
// Backward ops are checked against the shape rule of the forward op they
// differentiate (a conv2d_backward's output gradient must have the shape the
// conv2d produces); state updates return exactly the types they update.
//
//===----------------------------------------------------------------------===//

#include "dialects/rn/RNOps.h"
#include "dialects/rn/RNShapes.h"

#include <cmath>

using namespace mlir;
using namespace mlir::rn;
using namespace mlir::rn::shapes;

/// Number and types of the results of a backward op with an optional input
/// gradient and an optional bias gradient.
static LogicalResult
verifyBackwardResults(const ShapeDiagnostics &diag, ValueRange results,
                      ArrayRef<std::optional<NamedType>> expected) {
  SmallVector<NamedType> present;
  for (const std::optional<NamedType> &entry : expected)
    if (entry)
      present.push_back(*entry);
  if (results.size() != present.size()) {
    std::string names;
    for (auto [what, type] : present)
      names += (names.empty() ? "" : ", ") + what.str();
    return diag.fail("expects ", present.size(), " results (", names,
                     "), got ", results.size());
  }
  for (auto [result, entry] : llvm::zip(results, present))
    if (failed(diag.requireType(entry.first, result.getType(), entry.second)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// StateOp
//===----------------------------------------------------------------------===//

Type mlir::rn::getDeclaredStateType(Operation *declaration) {
  if (auto parameter = dyn_cast<ParameterOp>(declaration))
    return parameter.getType();
  if (auto state = dyn_cast<StateOp>(declaration))
    return state.getType();
  return {};
}

static bool isPerParameterRole(StateRole role) {
  return role != StateRole::loss_scale &&
         role != StateRole::loss_scale_good_steps;
}

LogicalResult StateOp::verify() {
  auto tensorType = dyn_cast<RankedTensorType>(getType());
  if (!tensorType || !tensorType.hasStaticShape() ||
      !isa<Float32Type, Float16Type, BFloat16Type, IntegerType>(
          tensorType.getElementType()))
    return emitOpError("type must be a statically shaped tensor, got ")
           << getType();
  if (isPerParameterRole(getRole()) != getOf().has_value())
    return emitOpError() << "'" << stringifyStateRole(getRole()) << "' state "
                         << (getOf() ? "must not name" : "must name")
                         << " a parameter with 'of'";
  bool derivedRole = getRole() == StateRole::low_precision_weight ||
                     getRole() == StateRole::ema;
  if ((getInit().getKind() == InitKind::derived) != derivedRole)
    return emitOpError() << "'" << stringifyStateRole(getRole()) << "' state "
                         << (derivedRole ? "must be" : "cannot be")
                         << " initialized as #rn.init<derived>";
  Builder builder(getContext());
  if (getRole() == StateRole::loss_scale &&
      getType() != RankedTensorType::get({}, builder.getF32Type()))
    return emitOpError("the loss scale must be tensor<f32>, got ") << getType();
  if (getRole() == StateRole::loss_scale_good_steps &&
      getType() != RankedTensorType::get({}, builder.getI32Type()))
    return emitOpError("the loss-scale step count must be tensor<i32>, got ")
           << getType();
  return verifyInitFits(*this, getInit(), tensorType);
}

LogicalResult StateOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (!getOf())
    return success();
  auto parameter =
      symbolTable.lookupNearestSymbolFrom<ParameterOp>(*this, getOfAttr());
  if (!parameter)
    return emitOpError("names ") << getOfAttr() << ", which is not an rn.parameter";
  if (!parameter.isTrainable())
    return emitOpError("names the buffer ")
           << getOfAttr() << ", which is not trained";
  RankedTensorType parameterType = parameter.getTensorType();
  if (getTensorType().getShape() != parameterType.getShape())
    return emitOpError("shape of ")
           << getType() << " differs from the parameter's " << parameterType;
  bool mayChangePrecision = getRole() == StateRole::gradient ||
                            getRole() == StateRole::low_precision_weight;
  if (!mayChangePrecision && getType() != parameterType)
    return emitOpError() << "'" << stringifyStateRole(getRole())
                         << "' state must have the parameter's type "
                         << parameterType << ", got " << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Casts and reshapes
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  if (getInput().getType().getElementType() ==
      getResult().getType().getElementType())
    return emitOpError("casts ") << getInput().getType() << " to itself";
  return success();
}

LogicalResult PadChannelsOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getResult().getType();
  ShapeDiagnostics diag(*this);
  if (failed(diag.requireStatic("input", input)) ||
      failed(diag.requireStatic("result", result)))
    return failure();
  if (input.getRank() < 1 || input.getRank() != result.getRank() ||
      input.getShape().drop_back() != result.getShape().drop_back())
    return diag.fail("result ", result, " must have the shape of input ", input,
                     " but for the last dimension");
  if (result.getShape().back() <= input.getShape().back())
    return diag.fail("must widen the channels: ", input.getShape().back(), " -> ",
                     result.getShape().back());
  // Normalizing: uint8 images with both vectors; else a float input.
  if (bool(getMean()) != bool(getStd()))
    return diag.fail("normalizes with both mean and std, or neither");
  if (getMean())
    return verifyImageNormalization(diag, input, getMean().getType(),
                                    getStd().getType());
  if (!isa<FloatType>(input.getElementType()))
    return diag.fail("input ", input,
                     " is not a float tensor: uint8 images are padded with "
                     "'normalize %mean, %std'");
  return success();
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getResult().getType();
  ShapeDiagnostics diag(*this);
  if (failed(diag.requireStatic("input", input)) ||
      failed(diag.requireStatic("result", result)))
    return failure();
  if (input.getElementType() != result.getElementType() ||
      input.getNumElements() != result.getNumElements())
    return diag.fail("cannot reshape ", input, " to ", result,
                     ": element type and count must be kept");
  return success();
}

//===----------------------------------------------------------------------===//
// Training-mode forward variants
//===----------------------------------------------------------------------===//

LogicalResult BatchNormTrainOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType input = getInput().getType();
  NamedType vectors[] = {{"weight", getWeight().getType()},
                         {"bias", getBias().getType()}};
  if (failed(verifyBatchNormOperands(diag, input, vectors,
                                     /*allowF32Vectors=*/true)) ||
      failed(verifyBatchNormAttributes(diag, getEpsilon().convertToDouble(),
                                       std::nullopt)) ||
      failed(diag.requireType("result", getResult().getType(), input)))
    return failure();
  return verifySavedStatistics(diag, input, getBatchMean(), getBatchInvStd());
}

LogicalResult BatchNormInferenceOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType input = getInput().getType();
  NamedType vectors[] = {{"weight", getWeight().getType()},
                         {"bias", getBias().getType()},
                         {"running_mean", getRunningMean().getType()},
                         {"running_var", getRunningVar().getType()}};
  if (failed(verifyBatchNormOperands(diag, input, vectors,
                                     /*allowF32Vectors=*/true)) ||
      failed(verifyBatchNormAttributes(diag, getEpsilon().convertToDouble(),
                                       std::nullopt)))
    return failure();
  return diag.requireType("result", getResult().getType(), input);
}

LogicalResult UpdateRunningStatsOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType mean = getRunningMean().getType();
  if (failed(diag.requireRank("running_mean", mean, 1, "[C]")) ||
      failed(requireSameTypes(
          diag, {"running_mean", mean},
          {{"running_var", getRunningVar().getType()},
           {"new_running_mean", getNewRunningMean().getType()},
           {"new_running_var", getNewRunningVar().getType()}})) ||
      failed(verifyBatchNormAttributes(diag, getEpsilon().convertToDouble(),
                                       getMomentum().convertToDouble())))
    return failure();
  if (getCount() < 2)
    return diag.fail("count must be at least 2 for an unbiased variance, got ",
                     getCount());
  return verifySavedStatistics(diag, mean, getBatchMean(), getBatchInvStd());
}

/// 0 <= index < count. See Note [Random streams] in runtime/cpu/cpu_kernels.h.
static LogicalResult verifyRandomStream(const ShapeDiagnostics &diag,
                                        IntegerAttr indexAttr,
                                        IntegerAttr countAttr) {
  // Signed: the unsigned getters would read a negative attribute as huge.
  const int64_t count = countAttr.getInt(), index = indexAttr.getInt();
  if (count < 1)
    return diag.fail("count must be at least 1, got ", count);
  if (index < 0 || index >= count)
    return diag.fail("index must be in [0, count) = [0, ", count, "), got ", index);
  return success();
}

LogicalResult DropoutTrainOp::verify() {
  ShapeDiagnostics diag(*this);
  if (failed(requireInRange(diag, "drop probability",
                            getP().convertToDouble(), 0.0, 1.0,
                            /*highInclusive=*/false)) ||
      failed(verifyRandomStream(diag, getIndexAttr(), getCountAttr())))
    return failure();
  return requireSameTypes(diag, {"input", getInput().getType()},
                          {{"result", getResult().getType()},
                           {"mask", getMask().getType()}});
}

LogicalResult StochasticDepthTrainOp::verify() {
  ShapeDiagnostics diag(*this);
  if (failed(requireInRange(diag, "drop probability",
                            getP().convertToDouble(), 0.0, 1.0,
                            /*highInclusive=*/true)) ||
      failed(verifyRandomStream(diag, getIndexAttr(), getCountAttr())) ||
      failed(verifySampleMask(diag, getInput().getType(),
                              getMask().getType())))
    return failure();
  return diag.requireType("result", getResult().getType(),
                          getInput().getType());
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

/// The named results of conv2d_backward and linear_backward: the optional
/// input gradient has the input's type, the weight gradient its
/// accumulator's, and the bias gradient is there exactly with a bias
/// accumulator, of its type.
template <typename BackwardOp>
static LogicalResult verifyWeightGradients(const ShapeDiagnostics &diag,
                                           BackwardOp op, Value weightGrad,
                                           Value weightAcc,
                                           StringRef weightGradName) {
  if (Value inputGrad = op.getInputGrad())
    if (failed(diag.requireType("input_grad", inputGrad.getType(),
                                op.getInput().getType())))
      return failure();
  if (failed(diag.requireType(weightGradName, weightGrad.getType(),
                              weightAcc.getType())))
    return failure();
  Value biasAcc = op.getBiasGradAcc(), biasGrad = op.getBiasGrad();
  if (bool(biasAcc) != bool(biasGrad))
    return diag.fail(biasAcc ? "has a bias accumulator but no bias_grad result"
                             : "has a bias_grad result but no bias accumulator");
  if (biasGrad)
    return diag.requireType("bias_grad", biasGrad.getType(), biasAcc.getType());
  return success();
}

LogicalResult Conv2dBackwardOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType input = getInput().getType();
  RankedTensorType filter = getFilter().getType();
  RankedTensorType bias =
      getBiasGradAcc() ? cast<RankedTensorType>(getBiasGradAcc().getType())
                       : RankedTensorType();
  FailureOr<RankedTensorType> output =
      inferConv2d(diag, input, filter, bias, getStrides(), getPadding(),
                  getDilation(), getGroups());
  if (failed(output) ||
      failed(diag.requireType("output_grad", getOutputGrad().getType(),
                              *output)) ||
      failed(verifyFilterGradAcc(diag, getFilterGradAcc().getType(), filter,
                                 getGroups())) ||
      failed(verifyInputGradAddend(diag, getInputGradAddend(), input,
                                   static_cast<bool>(getInputGrad()))))
    return failure();
  return verifyWeightGradients(diag, *this, getFilterGrad(),
                               getFilterGradAcc(), "filter_grad");
}

LogicalResult LinearBackwardOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType input = getInput().getType();
  RankedTensorType weight = getWeight().getType();
  RankedTensorType bias =
      getBiasGradAcc() ? cast<RankedTensorType>(getBiasGradAcc().getType())
                       : RankedTensorType();
  FailureOr<RankedTensorType> output = inferLinear(diag, input, weight, bias);
  if (failed(output) ||
      failed(diag.requireType("output_grad", getOutputGrad().getType(),
                              *output)) ||
      failed(diag.requireType("weight_grad_acc",
                              getWeightGradAcc().getType(), weight)))
    return failure();
  return verifyWeightGradients(diag, *this, getWeightGrad(),
                               getWeightGradAcc(), "weight_grad");
}

LogicalResult BatchNormBackwardOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType input = getInput().getType();
  NamedType vectors[] = {{"weight", getWeight().getType()},
                         {"weight_grad_acc", getWeightGradAcc().getType()},
                         {"bias_grad_acc", getBiasGradAcc().getType()}};
  if (failed(verifyBatchNormOperands(diag, input, vectors,
                                     /*allowF32Vectors=*/true)) ||
      failed(verifySavedStatistics(diag, input, getBatchMean(), getBatchInvStd())) ||
      failed(diag.requireType("output_grad", getOutputGrad().getType(),
                              input)) ||
      failed(diag.requireType("weight_grad_acc", getWeightGradAcc().getType(),
                              getWeight().getType())))
    return failure();
  std::optional<NamedType> expected[] = {
      NamedType{"input_grad", input},
      NamedType{"weight_grad", getWeightGradAcc().getType()},
      NamedType{"bias_grad", getBiasGradAcc().getType()}};
  return verifyBackwardResults(diag, getOperation()->getResults(), expected);
}

LogicalResult LayerNormBackwardOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType input = getInput().getType();
  NamedType vectors[] = {{"weight", getWeight().getType()},
                         {"weight_grad_acc", getWeightGradAcc().getType()},
                         {"bias_grad_acc", getBiasGradAcc().getType()}};
  if (failed(verifyBatchNormOperands(diag, input, vectors,
                                     /*allowF32Vectors=*/true)) ||
      failed(verifyBatchNormAttributes(diag, getEpsilon().convertToDouble(),
                                       std::nullopt)) ||
      failed(diag.requireType("output_grad", getOutputGrad().getType(),
                              input)) ||
      failed(diag.requireType("weight_grad_acc", getWeightGradAcc().getType(),
                              getWeight().getType())))
    return failure();
  std::optional<NamedType> expected[] = {
      NamedType{"input_grad", input},
      NamedType{"weight_grad", getWeightGradAcc().getType()},
      NamedType{"bias_grad", getBiasGradAcc().getType()}};
  return verifyBackwardResults(diag, getOperation()->getResults(), expected);
}

LogicalResult ChannelScaleBackwardOp::verify() {
  NamedType vectors[] = {{"scale", getScale().getType()}};
  return verifyBatchNormOperands(ShapeDiagnostics(*this), getInput().getType(),
                                 vectors, /*allowF32Vectors=*/false);
}

LogicalResult HardtanhBackwardOp::verify() {
  return verifyClampBounds(ShapeDiagnostics(*this),
                           getMinVal().convertToDouble(),
                           getMaxVal().convertToDouble());
}

LogicalResult ChannelMulBackwardOp::verify() {
  return verifyChannelScale(ShapeDiagnostics(*this), getInput().getType(),
                            getScale().getType());
}

LogicalResult StochasticDepthBackwardOp::verify() {
  return verifySampleMask(ShapeDiagnostics(*this), getOutputGrad().getType(),
                          getMask().getType());
}

LogicalResult MaxPool2dBackwardOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType input = getInput().getType();
  FailureOr<RankedTensorType> output =
      inferPool2d(diag, input, getKernel(), getStrides(), getPadding(),
                  getCeilMode());
  if (failed(output) ||
      failed(diag.requireType("output_grad", getOutputGrad().getType(),
                              *output)))
    return failure();
  return diag.requireType("input_grad", getInputGrad().getType(), input);
}

LogicalResult AvgPool2dBackwardOp::verify() {
  ShapeDiagnostics diag(*this);
  FailureOr<RankedTensorType> output =
      inferPool2d(diag, getInputGrad().getType(), getKernel(), getStrides(),
                  getPadding(), getCeilMode());
  if (failed(output))
    return failure();
  return diag.requireType("output_grad", getOutputGrad().getType(), *output);
}

LogicalResult AdaptiveAvgPool2dBackwardOp::verify() {
  return verifyAdaptivePool(ShapeDiagnostics(*this), "input_grad",
                            getInputGrad().getType(), "output_grad",
                            getOutputGrad().getType());
}

LogicalResult GlobalAvgPoolBackwardOp::verify() {
  ShapeDiagnostics diag(*this);
  FailureOr<RankedTensorType> output =
      inferGlobalAvgPool(diag, getInputGrad().getType());
  if (failed(output))
    return failure();
  return diag.requireType("output_grad", getOutputGrad().getType(), *output);
}

LogicalResult SoftmaxCrossEntropyBackwardOp::verify() {
  ShapeDiagnostics diag(*this);
  if (failed(verifyLogitsAndLabels(diag, getLogits().getType(),
                                   getLabels().getType())) ||
      failed(requireInRange(diag, "label smoothing",
                            getLabelSmoothing().convertToDouble(), 0.0, 1.0,
                            /*highInclusive=*/false)))
    return failure();
  return diag.requireType("logits_grad", getLogitsGrad().getType(),
                          getLogits().getType());
}

//===----------------------------------------------------------------------===//
// Loss scaling
//===----------------------------------------------------------------------===//

LogicalResult CheckFiniteOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one tensor to check");
  return success();
}

LogicalResult UnscaleOp::verify() {
  return ShapeDiagnostics(*this).requireType("result", getResult().getType(),
                                             getGrad().getType());
}

/// A multi-tensor op's group: at least one tensor, result i of input i's
/// type, one element type.
static LogicalResult verifyElementwiseGroup(Operation *op, ValueRange inputs,
                                            ValueRange results) {
  ShapeDiagnostics diag(op);
  if (inputs.empty())
    return diag.fail("needs at least one tensor");
  if (inputs.getTypes() != results.getTypes())
    return diag.fail("results must have the types of the inputs (", inputs.size(),
                     " inputs, ", results.size(), " results)");
  Type elementType = cast<RankedTensorType>(inputs[0].getType()).getElementType();
  for (auto [i, input] : llvm::enumerate(inputs))
    if (cast<RankedTensorType>(input.getType()).getElementType() != elementType)
      return diag.fail("has one element type: tensor #", i, " is ",
                       cast<RankedTensorType>(input.getType()).getElementType(),
                       ", tensor #0 ", elementType);
  return success();
}

LogicalResult MultiZeroOp::verify() {
  return verifyElementwiseGroup(*this, getInputs(), getResults());
}

LogicalResult MultiUnscaleOp::verify() {
  return verifyElementwiseGroup(*this, getGrads(), getResults());
}

LogicalResult MultiCastOp::verify() {
  ShapeDiagnostics diag(*this);
  if (getInputs().empty())
    return diag.fail("needs at least one tensor");
  if (getInputs().size() != getResults().size())
    return diag.fail("returns one result per input (", getInputs().size(), " inputs, ",
                     getResults().size(), " results)");
  auto elementOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  };
  Type from = elementOf(getInputs()[0]), to = elementOf(getResults()[0]);
  if (from == to)
    return diag.fail("casts ", from, " to itself");
  for (auto [i, pair] : llvm::enumerate(llvm::zip(getInputs(), getResults()))) {
    auto [input, result] = pair;
    if (elementOf(input) != from || elementOf(result) != to)
      return diag.fail("converts one element type to one other: tensor #", i, " is ",
                       elementOf(input), " -> ", elementOf(result), ", tensor #0 ", from,
                       " -> ", to);
    if (cast<RankedTensorType>(input.getType()).getShape() !=
        cast<RankedTensorType>(result.getType()).getShape())
      return diag.fail("result #", i, " must have the shape of input #", i);
  }
  return success();
}

LogicalResult UpdateLossScaleOp::verify() {
  ShapeDiagnostics diag(*this);
  double growth = getGrowth().convertToDouble();
  if (!(growth > 1.0) || !std::isfinite(growth))
    return diag.fail("growth factor must be greater than 1, got ", growth);
  if (failed(requireInRange(diag, "backoff factor",
                            getBackoff().convertToDouble(), 0.0, 1.0,
                            /*highInclusive=*/false)))
    return failure();
  if (getBackoff().convertToDouble() == 0.0)
    return diag.fail("backoff factor must be positive");
  if (getGrowthInterval() < 1)
    return diag.fail("growth interval must be at least 1, got ",
                     getGrowthInterval());
  return success();
}

//===----------------------------------------------------------------------===//
// Data parallelism
//===----------------------------------------------------------------------===//

LogicalResult AllReduceMeanOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one tensor to reduce");
  if (getInputs().getTypes() != getResults().getTypes())
    return emitOpError("results must have the types of the inputs");
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizers and EMA
//===----------------------------------------------------------------------===//

static LogicalResult verifyWeightDecay(const ShapeDiagnostics &diag,
                                       double weightDecay) {
  if (!(weightDecay >= 0.0) || !std::isfinite(weightDecay))
    return diag.fail("weight decay must be non-negative, got ", weightDecay);
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  ShapeDiagnostics diag(*this);
  double momentum = getMomentum().convertToDouble();
  NamedType param = {"param", getParam().getType()};
  SmallVector<NamedType> others = {{"grad", getGrad().getType()},
                                   {"new_param", getNewParam().getType()}};
  if (getMomentumBuffer())
    others.push_back({"momentum_buffer", getMomentumBuffer().getType()});
  if (getNewMomentumBuffer())
    others.push_back({"new_momentum_buffer", getNewMomentumBuffer().getType()});
  if (failed(requireSameTypes(diag, param, others)) ||
      failed(requireInRange(diag, "momentum", momentum, 0.0, 1.0,
                            /*highInclusive=*/false)) ||
      failed(verifyWeightDecay(diag, getWeightDecay().convertToDouble())))
    return failure();
  bool hasBuffer = static_cast<bool>(getMomentumBuffer());
  if (hasBuffer != (momentum != 0.0))
    return diag.fail(hasBuffer ? "has a momentum buffer but momentum is 0"
                               : "needs a momentum buffer for momentum ",
                     hasBuffer ? "" : std::to_string(momentum));
  if (hasBuffer != static_cast<bool>(getNewMomentumBuffer()))
    return diag.fail("returns the momentum buffer exactly when it takes one");
  if (getNesterov() && momentum == 0.0)
    return diag.fail("Nesterov momentum needs momentum > 0");
  return success();
}

ResultRange MultiSgdUpdateOp::getNewParams() {
  return getNewValues().take_front(getParams().size());
}

ResultRange MultiSgdUpdateOp::getNewMomentumBuffers() {
  return getNewValues().drop_front(
      std::min(getParams().size(), getNewValues().size()));
}

/// A multi-tensor update has one element type (one kernel per group).
static LogicalResult requireGroupElementType(const ShapeDiagnostics &diag,
                                             StringRef what, Type type,
                                             Type elementType) {
  Type got = cast<RankedTensorType>(type).getElementType();
  if (got != elementType)
    return diag.fail(what, " element type ", got,
                     " differs from params #0 element type ", elementType,
                     " (one element type per group)");
  return success();
}

LogicalResult MultiSgdUpdateOp::verify() {
  ShapeDiagnostics diag(*this);
  double momentum = getMomentum().convertToDouble();
  if (failed(requireInRange(diag, "momentum", momentum, 0.0, 1.0,
                            /*highInclusive=*/false)) ||
      failed(verifyWeightDecay(diag, getWeightDecay().convertToDouble())))
    return failure();
  if (getNesterov() && momentum == 0.0)
    return diag.fail("Nesterov momentum needs momentum > 0");
  size_t count = getParams().size();
  if (count == 0)
    return diag.fail("needs at least one param");
  auto counts = [&](StringRef what, size_t got) -> LogicalResult {
    if (got == count)
      return success();
    return diag.fail("takes one ", what, " per param: ", count, " params, ",
                     got, " ", what, "s");
  };
  bool hasBuffers = momentum != 0.0;
  if (!hasBuffers && !getMomentumBuffers().empty())
    return diag.fail("has momentum buffers but momentum is 0");
  if (failed(counts("grad", getGrads().size())) ||
      (hasBuffers &&
       failed(counts("momentum_buffer", getMomentumBuffers().size()))))
    return failure();
  size_t results = count + getMomentumBuffers().size();
  if (getNewValues().size() != results)
    return diag.fail("returns the new params",
                     hasBuffers ? " and momentum buffers" : "", " (", results,
                     " results), got ", getNewValues().size());
  Type elementType =
      cast<RankedTensorType>(getParams()[0].getType()).getElementType();
  for (size_t i = 0; i < count; ++i) {
    std::string index = " #" + std::to_string(i);
    std::string param = "params" + index, grad = "grads" + index,
                newParam = "new_params" + index,
                buffer = "momentum_buffers" + index,
                newBuffer = "new_momentum_buffers" + index;
    Type type = getParams()[i].getType();
    if (failed(requireGroupElementType(diag, param, type, elementType)))
      return failure();
    SmallVector<NamedType> others = {{grad, getGrads()[i].getType()},
                                     {newParam, getNewParams()[i].getType()}};
    if (hasBuffers) {
      others.push_back({buffer, getMomentumBuffers()[i].getType()});
      others.push_back({newBuffer, getNewMomentumBuffers()[i].getType()});
    }
    if (failed(requireSameTypes(diag, {param, type}, others)))
      return failure();
  }
  return success();
}

/// AdamW's betas in [0, 1), epsilon > 0 and its weight decay.
static LogicalResult verifyAdamWAttributes(const ShapeDiagnostics &diag,
                                           double beta1, double beta2,
                                           double epsilon, double weightDecay) {
  if (failed(requireInRange(diag, "beta1", beta1, 0.0, 1.0,
                            /*highInclusive=*/false)) ||
      failed(requireInRange(diag, "beta2", beta2, 0.0, 1.0,
                            /*highInclusive=*/false)) ||
      failed(verifyWeightDecay(diag, weightDecay)))
    return failure();
  if (!(epsilon > 0.0))
    return diag.fail("epsilon must be positive, got ", epsilon);
  return success();
}

LogicalResult AdamWUpdateOp::verify() {
  ShapeDiagnostics diag(*this);
  if (failed(requireSameTypes(
          diag, {"param", getParam().getType()},
          {{"grad", getGrad().getType()},
           {"exp_avg", getExpAvg().getType()},
           {"exp_avg_sq", getExpAvgSq().getType()},
           {"new_param", getNewParam().getType()},
           {"new_exp_avg", getNewExpAvg().getType()},
           {"new_exp_avg_sq", getNewExpAvgSq().getType()}})) ||
      failed(verifyAdamWAttributes(diag, getBeta1().convertToDouble(),
                                   getBeta2().convertToDouble(),
                                   getEpsilon().convertToDouble(),
                                   getWeightDecay().convertToDouble())))
    return failure();
  return success();
}

/// The results of a multi-tensor update: `groups` runs of `count` values.
static ResultRange resultGroup(ResultRange results, size_t count, size_t k) {
  size_t begin = std::min(k * count, results.size());
  return results.drop_front(begin).take_front(count);
}

ResultRange MultiAdamWUpdateOp::getNewParams() {
  return resultGroup(getNewValues(), getParams().size(), 0);
}
ResultRange MultiAdamWUpdateOp::getNewExpAvgs() {
  return resultGroup(getNewValues(), getParams().size(), 1);
}
ResultRange MultiAdamWUpdateOp::getNewExpAvgSqs() {
  return resultGroup(getNewValues(), getParams().size(), 2);
}

LogicalResult MultiAdamWUpdateOp::verify() {
  ShapeDiagnostics diag(*this);
  if (failed(verifyAdamWAttributes(diag, getBeta1().convertToDouble(),
                                   getBeta2().convertToDouble(),
                                   getEpsilon().convertToDouble(),
                                   getWeightDecay().convertToDouble())))
    return failure();
  size_t count = getParams().size();
  if (count == 0)
    return diag.fail("needs at least one param");
  for (auto [what, got] :
       {std::pair<StringRef, size_t>{"grad", getGrads().size()},
        {"exp_avg", getExpAvgs().size()},
        {"exp_avg_sq", getExpAvgSqs().size()}})
    if (got != count)
      return diag.fail("takes one ", what, " per param: ", count, " params, ",
                       got, " ", what, "s");
  if (getNewValues().size() != 3 * count)
    return diag.fail("returns the new params, exp_avgs and exp_avg_sqs (",
                     3 * count, " results), got ", getNewValues().size());
  Type elementType =
      cast<RankedTensorType>(getParams()[0].getType()).getElementType();
  for (size_t i = 0; i < count; ++i) {
    std::string index = " #" + std::to_string(i);
    std::string param = "params" + index, grad = "grads" + index,
                m = "exp_avgs" + index, v = "exp_avg_sqs" + index,
                newParam = "new_params" + index, newM = "new_exp_avgs" + index,
                newV = "new_exp_avg_sqs" + index;
    Type type = getParams()[i].getType();
    if (failed(requireGroupElementType(diag, param, type, elementType)))
      return failure();
    if (failed(requireSameTypes(
            diag, {param, type},
            {{grad, getGrads()[i].getType()},
             {m, getExpAvgs()[i].getType()},
             {v, getExpAvgSqs()[i].getType()},
             {newParam, getNewParams()[i].getType()},
             {newM, getNewExpAvgs()[i].getType()},
             {newV, getNewExpAvgSqs()[i].getType()}})))
      return failure();
  }
  return success();
}

/// LARS's momentum in [0, 1), its weight decay, a positive trust
/// coefficient and a non-negative epsilon.
static LogicalResult verifyLarsAttributes(const ShapeDiagnostics &diag,
                                          double momentum, double weightDecay,
                                          double trust, double epsilon) {
  if (failed(requireInRange(diag, "momentum", momentum, 0.0, 1.0,
                            /*highInclusive=*/false)) ||
      failed(verifyWeightDecay(diag, weightDecay)))
    return failure();
  if (!(trust > 0.0))
    return diag.fail("trust coefficient must be positive, got ", trust);
  if (!(epsilon >= 0.0))
    return diag.fail("epsilon must be non-negative, got ", epsilon);
  return success();
}

LogicalResult LarsUpdateOp::verify() {
  ShapeDiagnostics diag(*this);
  if (failed(requireSameTypes(
          diag, {"param", getParam().getType()},
          {{"grad", getGrad().getType()},
           {"momentum_buffer", getMomentumBuffer().getType()},
           {"new_param", getNewParam().getType()},
           {"new_momentum_buffer", getNewMomentumBuffer().getType()}})))
    return failure();
  return verifyLarsAttributes(diag, getMomentum().convertToDouble(),
                              getWeightDecay().convertToDouble(),
                              getTrustCoefficient().convertToDouble(),
                              getEpsilon().convertToDouble());
}

ResultRange MultiLarsUpdateOp::getNewParams() {
  return resultGroup(getNewValues(), getParams().size(), 0);
}
ResultRange MultiLarsUpdateOp::getNewMomentumBuffers() {
  return resultGroup(getNewValues(), getParams().size(), 1);
}

LogicalResult MultiLarsUpdateOp::verify() {
  ShapeDiagnostics diag(*this);
  if (failed(verifyLarsAttributes(diag, getMomentum().convertToDouble(),
                                  getWeightDecay().convertToDouble(),
                                  getTrustCoefficient().convertToDouble(),
                                  getEpsilon().convertToDouble())))
    return failure();
  size_t count = getParams().size();
  if (count == 0)
    return diag.fail("needs at least one param");
  for (auto [what, got] :
       {std::pair<StringRef, size_t>{"grad", getGrads().size()},
        {"momentum_buffer", getMomentumBuffers().size()}})
    if (got != count)
      return diag.fail("takes one ", what, " per param: ", count, " params, ",
                       got, " ", what, "s");
  if (getNewValues().size() != 2 * count)
    return diag.fail("returns the new params and momentum buffers (",
                     2 * count, " results), got ", getNewValues().size());
  Type elementType =
      cast<RankedTensorType>(getParams()[0].getType()).getElementType();
  for (size_t i = 0; i < count; ++i) {
    std::string index = " #" + std::to_string(i);
    std::string param = "params" + index, grad = "grads" + index,
                buffer = "momentum_buffers" + index,
                newParam = "new_params" + index,
                newBuffer = "new_momentum_buffers" + index;
    Type type = getParams()[i].getType();
    if (failed(requireGroupElementType(diag, param, type, elementType)) ||
        failed(requireSameTypes(
            diag, {param, type},
            {{grad, getGrads()[i].getType()},
             {buffer, getMomentumBuffers()[i].getType()},
             {newParam, getNewParams()[i].getType()},
             {newBuffer, getNewMomentumBuffers()[i].getType()}})))
      return failure();
  }
  return success();
}

LogicalResult EmaUpdateOp::verify() {
  return requireInRange(ShapeDiagnostics(*this), "decay",
                        getDecay().convertToDouble(), 0.0, 1.0,
                        /*highInclusive=*/false);
}

LogicalResult MultiEmaUpdateOp::verify() {
  if (failed(requireInRange(ShapeDiagnostics(*this), "decay",
                            getDecay().convertToDouble(), 0.0, 1.0,
                            /*highInclusive=*/false)) ||
      failed(verifyElementwiseGroup(*this, getAverages(), getResults())))
    return failure();
  if (getParams().getTypes() != getAverages().getTypes())
    return emitOpError("takes one param of each average's type");
  return success();
}

LogicalResult CountCorrectOp::verify() {
  return verifyLogitsAndLabels(ShapeDiagnostics(*this), getLogits().getType(),
                               getLabels().getType());
}

//===----------------------------------------------------------------------===//
// InPlaceOpInterface: which results update which operand
//===----------------------------------------------------------------------===//

/// Results map one to one onto the leading operands.
static std::optional<unsigned> sameIndex(unsigned resultIndex,
                                         unsigned numUpdated) {
  if (resultIndex < numUpdated)
    return resultIndex;
  return std::nullopt;
}

std::optional<unsigned>
AllReduceMeanOp::getUpdatedOperand(unsigned resultIndex) {
  return sameIndex(resultIndex, getNumOperands());
}

std::optional<unsigned> ZeroOp::getUpdatedOperand(unsigned resultIndex) {
  return sameIndex(resultIndex, 1);
}

std::optional<unsigned> UnscaleOp::getUpdatedOperand(unsigned resultIndex) {
  return sameIndex(resultIndex, 1);
}

std::optional<unsigned> MultiZeroOp::getUpdatedOperand(unsigned resultIndex) {
  return sameIndex(resultIndex, getInputs().size());
}

std::optional<unsigned>
MultiUnscaleOp::getUpdatedOperand(unsigned resultIndex) {
  return sameIndex(resultIndex, getGrads().size());
}

std::optional<unsigned>
MultiEmaUpdateOp::getUpdatedOperand(unsigned resultIndex) {
  return sameIndex(resultIndex, getAverages().size());
}

std::optional<unsigned> EmaUpdateOp::getUpdatedOperand(unsigned resultIndex) {
  return sameIndex(resultIndex, 1);
}

std::optional<unsigned>
UpdateRunningStatsOp::getUpdatedOperand(unsigned resultIndex) {
  return sameIndex(resultIndex, 2);
}

std::optional<unsigned>
UpdateLossScaleOp::getUpdatedOperand(unsigned resultIndex) {
  return sameIndex(resultIndex, 2);
}

/// conv2d_backward and linear_backward: the weight gradient updates its
/// accumulator, the bias gradient the bias accumulator.
template <typename BackwardOp>
static std::optional<unsigned>
weightGradientUpdate(BackwardOp op, Value weightGrad, OpOperand &weightAcc,
                     unsigned resultIndex) {
  if (resultIndex == cast<OpResult>(weightGrad).getResultNumber())
    return weightAcc.getOperandNumber();
  if (Value biasGrad = op.getBiasGrad();
      biasGrad && resultIndex == cast<OpResult>(biasGrad).getResultNumber())
    return op.getBiasGradAccMutable()[0].getOperandNumber();
  return std::nullopt;
}

std::optional<unsigned>
Conv2dBackwardOp::getUpdatedOperand(unsigned resultIndex) {
  return weightGradientUpdate(*this, getFilterGrad(), getFilterGradAccMutable(),
                              resultIndex);
}

std::optional<unsigned>
LinearBackwardOp::getUpdatedOperand(unsigned resultIndex) {
  return weightGradientUpdate(*this, getWeightGrad(), getWeightGradAccMutable(),
                              resultIndex);
}

std::optional<unsigned>
BatchNormBackwardOp::getUpdatedOperand(unsigned resultIndex) {
  if (resultIndex == 1)
    return getWeightGradAccMutable().getOperandNumber();
  if (resultIndex == 2)
    return getBiasGradAccMutable().getOperandNumber();
  return std::nullopt;
}

std::optional<unsigned>
LayerNormBackwardOp::getUpdatedOperand(unsigned resultIndex) {
  if (resultIndex == 1)
    return getWeightGradAccMutable().getOperandNumber();
  if (resultIndex == 2)
    return getBiasGradAccMutable().getOperandNumber();
  return std::nullopt;
}

std::optional<unsigned>
ChannelScaleBackwardOp::getUpdatedOperand(unsigned resultIndex) {
  if (resultIndex == 1)
    return getScaleGradAccMutable().getOperandNumber();
  return std::nullopt;
}

std::optional<unsigned> SgdUpdateOp::getUpdatedOperand(unsigned resultIndex) {
  if (resultIndex == 0)
    return getParamMutable().getOperandNumber();
  if (resultIndex == 1 && getMomentumBuffer())
    return getMomentumBufferMutable()[0].getOperandNumber();
  return std::nullopt;
}

/// new_params[i] updates params[i], new_momentum_buffers[i] updates
/// momentum_buffers[i].
std::optional<unsigned>
MultiSgdUpdateOp::getUpdatedOperand(unsigned resultIndex) {
  unsigned count = getNewParams().size();
  if (resultIndex < count)
    return resultIndex < getParams().size()
               ? std::optional<unsigned>(
                     getParamsMutable()[resultIndex].getOperandNumber())
               : std::nullopt;
  if (resultIndex - count < getMomentumBuffers().size())
    return getMomentumBuffersMutable()[resultIndex - count].getOperandNumber();
  return std::nullopt;
}

std::optional<unsigned>
AdamWUpdateOp::getUpdatedOperand(unsigned resultIndex) {
  switch (resultIndex) {
  case 0:
    return getParamMutable().getOperandNumber();
  case 1:
    return getExpAvgMutable().getOperandNumber();
  case 2:
    return getExpAvgSqMutable().getOperandNumber();
  default:
    return std::nullopt;
  }
}

/// new_values[k * n + i] updates params[i], exp_avgs[i] or exp_avg_sqs[i].
std::optional<unsigned>
MultiAdamWUpdateOp::getUpdatedOperand(unsigned resultIndex) {
  size_t count = getParams().size();
  if (count == 0 || resultIndex >= 3 * count ||
      getExpAvgs().size() != count || getExpAvgSqs().size() != count)
    return std::nullopt;
  size_t i = resultIndex % count;
  switch (resultIndex / count) {
  case 0:
    return getParamsMutable()[i].getOperandNumber();
  case 1:
    return getExpAvgsMutable()[i].getOperandNumber();
  default:
    return getExpAvgSqsMutable()[i].getOperandNumber();
  }
}

std::optional<unsigned> LarsUpdateOp::getUpdatedOperand(unsigned resultIndex) {
  if (resultIndex == 0)
    return getParamMutable().getOperandNumber();
  if (resultIndex == 1)
    return getMomentumBufferMutable().getOperandNumber();
  return std::nullopt;
}

/// new_values[k * n + i] updates params[i] (k = 0) or momentum_buffers[i]
/// (k = 1).
std::optional<unsigned>
MultiLarsUpdateOp::getUpdatedOperand(unsigned resultIndex) {
  size_t count = getParams().size();
  if (count == 0 || resultIndex >= 2 * count ||
      getMomentumBuffers().size() != count)
    return std::nullopt;
  size_t i = resultIndex % count;
  if (resultIndex < count)
    return getParamsMutable()[i].getOperandNumber();
  return getMomentumBuffersMutable()[i].getOperandNumber();
}

//===----------------------------------------------------------------------===//
// ForkingOpInterface: dX, dW and dB of conv and linear backward
//===----------------------------------------------------------------------===//

/// dW reads the output gradient and the input and updates its accumulator;
/// dB reads the output gradient; dX reads the output gradient and the
/// weight. dX is listed last: it may overwrite the input that dW reads.
template <typename BackwardOp>
static SmallVector<ForkPart> weightedBackwardParts(BackwardOp op,
                                                   Value weight,
                                                   Value weightAcc,
                                                   Value weightGrad) {
  SmallVector<ForkPart> parts;
  parts.push_back({"weight_grad",
                   {op.getOutputGrad(), op.getInput(), weightAcc},
                   {weightGrad}});
  if (Value biasAcc = op.getBiasGradAcc())
    parts.push_back(
        {"bias_grad", {op.getOutputGrad(), biasAcc}, {op.getBiasGrad()}});
  if (Value inputGrad = op.getInputGrad())
    parts.push_back({"input_grad", {op.getOutputGrad(), weight}, {inputGrad}});
  return parts;
}

SmallVector<ForkPart> Conv2dBackwardOp::getForkParts() {
  SmallVector<ForkPart> parts = weightedBackwardParts(
      *this, getFilter(), getFilterGradAcc(), getFilterGrad());
  if (Value addend = getInputGradAddend())
    parts.back().reads.push_back(addend); // input_grad, last
  return parts;
}

SmallVector<ForkPart> LinearBackwardOp::getForkParts() {
  return weightedBackwardParts(*this, getWeight(), getWeightGradAcc(),
                               getWeightGrad());
}
