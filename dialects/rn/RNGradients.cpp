//===- RNGradients.cpp - How each rn op takes part in training ------------===//
//
// The training interfaces of RNInterfaces.td, one op at a time: gradient
// rules (GradientOpInterface), training and evaluation forms
// (TrainingFormOpInterface) and parameter operand roles
// (ParameterOperandsOpInterface). rn-build-training calls them and holds no
// list of ops; a new differentiable op declares the interface in its ODS
// and writes its rule here.
//
//===----------------------------------------------------------------------===//

#include "dialects/rn/RNOps.h"

#include "mlir/IR/Builders.h"

#include <array>

using namespace mlir;
using namespace mlir::rn;

GradientEmitter::~GradientEmitter() = default;
TrainingFormContext::~TrainingFormContext() = default;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// A weighted op's backward (convolution, linear): dX unless the input needs
/// no gradient (it is the batch), and dW and dB added into the parameters'
/// accumulators. `create(inputGradType, weightGradType, biasGradType,
/// weightAccumulator, biasAccumulator)` builds the backward op and returns
/// its {input_grad, weight_grad, bias_grad}.
template <typename CreateBackward>
static LogicalResult buildWeightedGradient(GradientEmitter &emitter,
                                           Location loc, Value input,
                                           Value weight, Value bias,
                                           CreateBackward create) {
  bool inputGrad = emitter.requiresGradient(input);
  auto [inputGradient, weightGradient, biasGradient] =
      create(inputGrad ? input.getType() : Type(), weight.getType(),
             bias ? bias.getType() : Type(), emitter.getAccumulator(weight),
             bias ? emitter.getAccumulator(bias) : Value());
  emitter.setAccumulator(weight, weightGradient);
  if (bias)
    emitter.setAccumulator(bias, biasGradient);
  if (inputGrad)
    emitter.accumulate(loc, input, inputGradient);
  return success();
}

/// A one-input elementwise op whose backward op reads dy and one saved
/// value (the forward input or result).
template <typename BackwardOp>
static LogicalResult buildUnaryGradient(Operation *op, OpBuilder &builder,
                                        GradientEmitter &emitter,
                                        Value saved) {
  Value dy = emitter.getResultGradient(op->getResult(0));
  emitter.accumulate(op->getLoc(), op->getOperand(0),
                     BackwardOp::create(builder, op->getLoc(), dy, saved));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution, linear, normalization
//===----------------------------------------------------------------------===//

LogicalResult Conv2dOp::buildGradient(OpBuilder &builder,
                                      GradientEmitter &emitter) {
  Value dy = emitter.getResultGradient(getResult());
  return buildWeightedGradient(
      emitter, getLoc(), getInput(), getFilter(), getBias(),
      [&](Type inputGrad, Type filterGrad, Type biasGrad, Value filterAcc,
          Value biasAcc) {
        auto backward = Conv2dBackwardOp::create(
            builder, getLoc(), inputGrad, filterGrad, biasGrad, dy, getInput(),
            getFilter(), filterAcc, biasAcc, /*input_grad_addend=*/Value(),
            getStridesAttr(), getPaddingAttr(), getDilationAttr(),
            getGroupsAttr());
        return std::array<Value, 3>{backward.getInputGrad(),
                                    backward.getFilterGrad(),
                                    backward.getBiasGrad()};
      });
}

OperandRole Conv2dOp::getOperandRole(unsigned index) {
  if (index == getFilterMutable().getOperandNumber())
    return OperandRole::weight;
  return index == 0 ? OperandRole::activation : OperandRole::bias;
}

LogicalResult LinearOp::buildGradient(OpBuilder &builder,
                                      GradientEmitter &emitter) {
  Value dy = emitter.getResultGradient(getResult());
  return buildWeightedGradient(
      emitter, getLoc(), getInput(), getWeight(), getBias(),
      [&](Type inputGrad, Type weightGrad, Type biasGrad, Value weightAcc,
          Value biasAcc) {
        auto backward = LinearBackwardOp::create(
            builder, getLoc(), inputGrad, weightGrad, biasGrad, dy, getInput(),
            getWeight(), weightAcc, biasAcc);
        return std::array<Value, 3>{backward.getInputGrad(),
                                    backward.getWeightGrad(),
                                    backward.getBiasGrad()};
      });
}

OperandRole LinearOp::getOperandRole(unsigned index) {
  if (index == getWeightMutable().getOperandNumber())
    return OperandRole::weight;
  return index == 0 ? OperandRole::activation : OperandRole::bias;
}

Operation *BatchNormOp::buildTrainingForm(OpBuilder &builder,
                                          TrainingFormContext &context) {
  Value input = context.lookup(getInput());
  auto inputType = cast<RankedTensorType>(input.getType());
  auto statsType = RankedTensorType::get({inputType.getShape().back()},
                                         builder.getF32Type());
  auto train = BatchNormTrainOp::create(
      builder, getLoc(), TypeRange{inputType, statsType, statsType}, input,
      context.lookup(getWeight()), context.lookup(getBias()),
      getEpsilonAttr());
  context.addRunningStatistics(train, getRunningMean(), getRunningVar(),
                               getMomentum().convertToDouble());
  context.map(getResult(), train.getResult());
  return train;
}

void BatchNormOp::buildEvalForm(OpBuilder &builder, IRMapping &mapping) {
  Value input = mapping.lookup(getInput());
  mapping.map(getResult(),
              BatchNormInferenceOp::create(
                  builder, getLoc(), input.getType(), input,
                  mapping.lookup(getWeight()), mapping.lookup(getBias()),
                  mapping.lookup(getRunningMean()),
                  mapping.lookup(getRunningVar()), getEpsilonAttr()));
}

OperandRole BatchNormOp::getOperandRole(unsigned index) {
  if (index == getWeightMutable().getOperandNumber() ||
      index == getBiasMutable().getOperandNumber())
    return OperandRole::normParameter;
  return index == 0 ? OperandRole::activation : OperandRole::runningStatistic;
}

LogicalResult BatchNormTrainOp::buildGradient(OpBuilder &builder,
                                              GradientEmitter &emitter) {
  Value dy = emitter.getResultGradient(getResult());
  Value gammaAcc = emitter.getAccumulator(getWeight());
  Value betaAcc = emitter.getAccumulator(getBias());
  auto backward = BatchNormBackwardOp::create(
      builder, getLoc(),
      TypeRange{getInput().getType(), gammaAcc.getType(), betaAcc.getType()},
      dy, getInput(), getWeight(), getBatchMean(), getBatchInvStd(), gammaAcc,
      betaAcc);
  emitter.setAccumulator(getWeight(), backward.getWeightGrad());
  emitter.setAccumulator(getBias(), backward.getBiasGrad());
  emitter.accumulate(getLoc(), getInput(), backward.getInputGrad());
  return success();
}

LogicalResult LayerNormOp::buildGradient(OpBuilder &builder,
                                         GradientEmitter &emitter) {
  Value dy = emitter.getResultGradient(getResult());
  Value weightAcc = emitter.getAccumulator(getWeight());
  Value biasAcc = emitter.getAccumulator(getBias());
  auto backward = LayerNormBackwardOp::create(
      builder, getLoc(),
      TypeRange{getInput().getType(), weightAcc.getType(), biasAcc.getType()},
      dy, getInput(), getWeight(), weightAcc, biasAcc, getEpsilonAttr());
  emitter.setAccumulator(getWeight(), backward.getWeightGrad());
  emitter.setAccumulator(getBias(), backward.getBiasGrad());
  if (emitter.requiresGradient(getInput()))
    emitter.accumulate(getLoc(), getInput(), backward.getInputGrad());
  return success();
}

OperandRole LayerNormOp::getOperandRole(unsigned index) {
  return index == 0 ? OperandRole::activation : OperandRole::normParameter;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult ReluOp::buildGradient(OpBuilder &builder,
                                    GradientEmitter &emitter) {
  return buildUnaryGradient<ReluBackwardOp>(*this, builder, emitter,
                                            getResult());
}

LogicalResult TanhOp::buildGradient(OpBuilder &builder,
                                    GradientEmitter &emitter) {
  return buildUnaryGradient<TanhBackwardOp>(*this, builder, emitter,
                                            getResult());
}

LogicalResult SiluOp::buildGradient(OpBuilder &builder,
                                    GradientEmitter &emitter) {
  return buildUnaryGradient<SiluBackwardOp>(*this, builder, emitter,
                                            getInput());
}

LogicalResult SigmoidOp::buildGradient(OpBuilder &builder,
                                       GradientEmitter &emitter) {
  return buildUnaryGradient<SigmoidBackwardOp>(*this, builder, emitter,
                                               getResult());
}

LogicalResult GeluOp::buildGradient(OpBuilder &builder,
                                    GradientEmitter &emitter) {
  Value dy = emitter.getResultGradient(getResult());
  emitter.accumulate(getLoc(), getInput(),
                     GeluBackwardOp::create(builder, getLoc(), dy, getInput(),
                                            getApproximateAttr()));
  return success();
}

LogicalResult HardswishOp::buildGradient(OpBuilder &builder,
                                         GradientEmitter &emitter) {
  return buildUnaryGradient<HardswishBackwardOp>(*this, builder, emitter,
                                                 getInput());
}

LogicalResult HardsigmoidOp::buildGradient(OpBuilder &builder,
                                           GradientEmitter &emitter) {
  return buildUnaryGradient<HardsigmoidBackwardOp>(*this, builder, emitter,
                                                   getInput());
}

LogicalResult HardtanhOp::buildGradient(OpBuilder &builder,
                                        GradientEmitter &emitter) {
  // From the result, which the next layer keeps anyway (the input would be
  // one more saved tensor per ReLU6).
  Value dy = emitter.getResultGradient(getResult());
  emitter.accumulate(getLoc(), getInput(),
                     HardtanhBackwardOp::create(builder, getLoc(), dy,
                                                getResult(), getMinValAttr(),
                                                getMaxValAttr()));
  return success();
}

LogicalResult ChannelScaleOp::buildGradient(OpBuilder &builder,
                                            GradientEmitter &emitter) {
  Value dy = emitter.getResultGradient(getResult());
  Value scaleAcc = emitter.getAccumulator(getScale());
  auto backward = ChannelScaleBackwardOp::create(
      builder, getLoc(), TypeRange{getInput().getType(), scaleAcc.getType()},
      dy, getInput(), getScale(), scaleAcc);
  emitter.setAccumulator(getScale(), backward.getScaleGrad());
  if (emitter.requiresGradient(getInput()))
    emitter.accumulate(getLoc(), getInput(), backward.getInputGrad());
  return success();
}

OperandRole ChannelScaleOp::getOperandRole(unsigned index) {
  return index == 0 ? OperandRole::activation : OperandRole::weight;
}

LogicalResult ChannelMulOp::buildGradient(OpBuilder &builder,
                                          GradientEmitter &emitter) {
  // Both operands are activations (the scale is computed from the input);
  // each gets its gradient if it needs one.
  Value dy = emitter.getResultGradient(getResult());
  auto backward = ChannelMulBackwardOp::create(
      builder, getLoc(), getInput().getType(), getScale().getType(), dy,
      getInput(), getScale());
  emitter.accumulate(getLoc(), getInput(), backward.getInputGrad());
  emitter.accumulate(getLoc(), getScale(), backward.getScaleGrad());
  return success();
}

LogicalResult AddOp::buildGradient(OpBuilder &, GradientEmitter &emitter) {
  // The gradient fans out unchanged: no backward op.
  Value dy = emitter.getResultGradient(getResult());
  emitter.accumulate(getLoc(), getLhs(), dy);
  emitter.accumulate(getLoc(), getRhs(), dy);
  return success();
}

LogicalResult ConcatOp::buildGradient(OpBuilder &builder,
                                      GradientEmitter &emitter) {
  // The result's gradient cut back into the inputs' channel slices.
  Value dy = emitter.getResultGradient(getResult());
  auto split = SplitOp::create(builder, getLoc(), getInputs().getTypes(), dy);
  for (auto [input, slice] : llvm::zip(getInputs(), split.getResults()))
    emitter.accumulate(getLoc(), input, slice);
  return success();
}

LogicalResult SplitOp::buildGradient(OpBuilder &builder,
                                     GradientEmitter &emitter) {
  // The slices' gradients joined; a slice the loss does not read would need
  // a zero block, which RN has no op for.
  SmallVector<Value> slices;
  for (auto [index, result] : llvm::enumerate(getResults())) {
    Value slice = emitter.getResultGradient(result);
    if (!slice)
      return emitOpError("result #")
             << index
             << " does not reach the loss; RN differentiates a split whose "
                "every slice the loss depends on";
    slices.push_back(slice);
  }
  emitter.accumulate(
      getLoc(), getInput(),
      ConcatOp::create(builder, getLoc(), getInput().getType(), slices));
  return success();
}

LogicalResult ChannelShuffleOp::buildGradient(OpBuilder &builder,
                                              GradientEmitter &emitter) {
  // The inverse permutation is the shuffle with C / groups groups.
  Value dy = emitter.getResultGradient(getResult());
  int64_t channels = getInput().getType().getDimSize(3);
  emitter.accumulate(getLoc(), getInput(),
                     ChannelShuffleOp::create(
                         builder, getLoc(), dy.getType(), dy,
                         builder.getI64IntegerAttr(channels / getGroups())));
  return success();
}

//===----------------------------------------------------------------------===//
// Random ops: training forms draw masks, evaluation is the identity
//===----------------------------------------------------------------------===//

Operation *DropoutOp::buildTrainingForm(OpBuilder &builder,
                                        TrainingFormContext &context) {
  Value input = context.lookup(getInput());
  auto [index, count] = context.takeRandomStream();
  auto train = DropoutTrainOp::create(
      builder, getLoc(), TypeRange{input.getType(), input.getType()}, input,
      context.getStep(), getPAttr(), builder.getI64IntegerAttr(index),
      builder.getI64IntegerAttr(count));
  context.map(getResult(), train.getResult());
  return train;
}

void DropoutOp::buildEvalForm(OpBuilder &, IRMapping &mapping) {
  mapping.map(getResult(), mapping.lookup(getInput()));
}

LogicalResult DropoutTrainOp::buildGradient(OpBuilder &builder,
                                            GradientEmitter &emitter) {
  return buildUnaryGradient<DropoutBackwardOp>(*this, builder, emitter,
                                               getMask());
}

Operation *StochasticDepthOp::buildTrainingForm(OpBuilder &builder,
                                                TrainingFormContext &context) {
  Value input = context.lookup(getInput());
  auto inputType = cast<RankedTensorType>(input.getType());
  auto maskType =
      RankedTensorType::get({inputType.getDimSize(0)}, builder.getF32Type());
  auto [index, count] = context.takeRandomStream();
  auto train = StochasticDepthTrainOp::create(
      builder, getLoc(), TypeRange{inputType, maskType}, input,
      context.getStep(), getPAttr(), builder.getI64IntegerAttr(index),
      builder.getI64IntegerAttr(count));
  context.map(getResult(), train.getResult());
  return train;
}

void StochasticDepthOp::buildEvalForm(OpBuilder &, IRMapping &mapping) {
  mapping.map(getResult(), mapping.lookup(getInput()));
}

LogicalResult StochasticDepthTrainOp::buildGradient(OpBuilder &builder,
                                                    GradientEmitter &emitter) {
  Value dy = emitter.getResultGradient(getResult());
  emitter.accumulate(getLoc(), getInput(),
                     StochasticDepthBackwardOp::create(
                         builder, getLoc(), dy.getType(), dy, getMask()));
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling and reshaping
//===----------------------------------------------------------------------===//

LogicalResult MaxPool2dOp::buildGradient(OpBuilder &builder,
                                         GradientEmitter &emitter) {
  Value dy = emitter.getResultGradient(getResult());
  emitter.accumulate(getLoc(), getInput(),
                     MaxPool2dBackwardOp::create(
                         builder, getLoc(), getInput().getType(), dy,
                         getInput(), getKernelAttr(), getStridesAttr(),
                         getPaddingAttr(), getCeilModeAttr()));
  return success();
}

LogicalResult AvgPool2dOp::buildGradient(OpBuilder &builder,
                                         GradientEmitter &emitter) {
  Value dy = emitter.getResultGradient(getResult());
  emitter.accumulate(getLoc(), getInput(),
                     AvgPool2dBackwardOp::create(
                         builder, getLoc(), getInput().getType(), dy,
                         getKernelAttr(), getStridesAttr(), getPaddingAttr(),
                         getCeilModeAttr(), getExcludePadAttr()));
  return success();
}

LogicalResult AdaptiveAvgPool2dOp::buildGradient(OpBuilder &builder,
                                                 GradientEmitter &emitter) {
  Value dy = emitter.getResultGradient(getResult());
  emitter.accumulate(getLoc(), getInput(),
                     AdaptiveAvgPool2dBackwardOp::create(
                         builder, getLoc(), getInput().getType(), dy));
  return success();
}

LogicalResult GlobalAvgPoolOp::buildGradient(OpBuilder &builder,
                                             GradientEmitter &emitter) {
  Value dy = emitter.getResultGradient(getResult());
  emitter.accumulate(getLoc(), getInput(),
                     GlobalAvgPoolBackwardOp::create(
                         builder, getLoc(), getInput().getType(), dy));
  return success();
}

LogicalResult FlattenOp::buildGradient(OpBuilder &builder,
                                       GradientEmitter &emitter) {
  Value dy = emitter.getResultGradient(getResult());
  emitter.accumulate(
      getLoc(), getInput(),
      ReshapeOp::create(builder, getLoc(), getInput().getType(), dy));
  return success();
}
