//===- BuildTraining.cpp - Derive the training and evaluation steps -------===//
//
// Reverse-mode differentiation of the forward function, op by op, plus
// everything a training step does besides gradients: zero-grad, loss
// scaling, mixed-precision casts, optimizer updates, BatchNorm running
// statistics and EMA. The result keeps every piece of state explicit:
// function arguments and results bound to the symbols that declare them.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "rn-build-training"

namespace mlir::rn {
#define GEN_PASS_DEF_BUILDTRAINING
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;

namespace {

enum class OptimizerKind { Sgd, AdamW, Lars };
enum class LossScalingKind { None, Static, Dynamic };

/// How a parameter is used by the forward function.
struct ParameterUse {
  ParameterOp declaration;
  /// BatchNorm weight/bias or a conv/linear bias: excluded from weight decay
  /// on request, and BatchNorm parameters stay f32 under mixed precision.
  bool isBatchNormParameter = false;
  bool isBias = false;
};

/// The state of one trainable parameter; null members do not exist.
struct TrainableState {
  ParameterOp parameter;
  bool noDecay = false;
  /// The forward pass reads a low-precision copy of this parameter.
  bool lowPrecision = false;
  StateOp gradient, masterGradient, lowPrecisionWeight, momentum, adamFirst,
      adamSecond, ema;
};

/// A function under construction: arguments are added with their binding
/// before the body is built, results while it is built.
class StepFunctionBuilder {
public:
  unsigned addInput(Type type, StringRef name) {
    return addArgument(type,
                       NamedAttribute(inputAttr(), StringAttr::get(ctx, name)));
  }
  unsigned addState(Type type, StringRef symbol) {
    return addArgument(type, stateBinding(symbol));
  }
  void addOutput(Value value, StringRef name) {
    resultValues.push_back(value);
    resultAttrs.push_back(NamedAttribute(
        StringAttr::get(ctx, kOutputAttr), StringAttr::get(ctx, name)));
  }
  void addStateResult(Value value, StringRef symbol) {
    resultValues.push_back(value);
    resultAttrs.push_back(stateBinding(symbol));
  }

  explicit StepFunctionBuilder(MLIRContext *ctx) : ctx(ctx) {}

  /// Creates the function with the arguments added so far; `build` fills
  /// the body, then the results and their bindings are set.
  func::FuncOp create(OpBuilder &moduleBuilder, Location loc, StringRef name,
                      function_ref<LogicalResult(OpBuilder &, Block &)> build) {
    auto function = func::FuncOp::create(
        moduleBuilder, loc, name, FunctionType::get(ctx, argTypes, {}));
    Block *entry = function.addEntryBlock();
    for (auto [index, attr] : llvm::enumerate(argAttrs))
      function.setArgAttr(index, attr.getName(), attr.getValue());
    OpBuilder builder = OpBuilder::atBlockBegin(entry);
    if (failed(build(builder, *entry)))
      return {};
    func::ReturnOp::create(builder, loc, resultValues);
    SmallVector<Type> resultTypes;
    for (Value value : resultValues)
      resultTypes.push_back(value.getType());
    function.setFunctionType(FunctionType::get(ctx, argTypes, resultTypes));
    for (auto [index, attr] : llvm::enumerate(resultAttrs))
      function.setResultAttr(index, attr.getName(), attr.getValue());
    return function;
  }

private:
  StringAttr inputAttr() { return StringAttr::get(ctx, kInputAttr); }
  NamedAttribute stateBinding(StringRef symbol) {
    return NamedAttribute(StringAttr::get(ctx, kStateAttr),
                          FlatSymbolRefAttr::get(ctx, symbol));
  }
  unsigned addArgument(Type type, NamedAttribute binding) {
    argTypes.push_back(type);
    argAttrs.push_back(binding);
    return argTypes.size() - 1;
  }

  MLIRContext *ctx;
  SmallVector<Type> argTypes;
  SmallVector<NamedAttribute> argAttrs;
  SmallVector<Value> resultValues;
  SmallVector<NamedAttribute> resultAttrs;
};

struct BuildTrainingPass
    : public mlir::rn::impl::BuildTrainingBase<BuildTrainingPass> {
  using BuildTrainingBase::BuildTrainingBase;

  void runOnOperation() override;

private:
  // Configuration, validated from the string options.
  LogicalResult parseOptions(ModuleOp module);
  OptimizerKind optimizerKind = OptimizerKind::Sgd;
  LossScalingKind scalingKind = LossScalingKind::None;
  /// f16/bf16 under mixed precision; null for f32 training.
  Type lowPrecisionType;

  // Analysis of the forward function.
  LogicalResult analyzeForward(func::FuncOp forward);
  LogicalResult checkByteImages(func::FuncOp forward);
  /// The images are uint8, made floats by the model's rn.normalize_images.
  bool bytesOnTheWire = false;
  SoftmaxCrossEntropyOp lossOp;
  llvm::MapVector<StringRef, ParameterUse> parameterUses;

  // Declarations.
  LogicalResult declareState(ModuleOp module, OpBuilder &builder);
  StateOp declare(OpBuilder &builder, StateRole role, StringRef name,
                  ParameterOp of, Type type, InitAttr init);
  SmallVector<ParameterOp> parameters; // declaration order
  SmallVector<TrainableState> trainables;
  StateOp lossScaleState, goodStepsState;

  // The two functions.
  LogicalResult buildTrainStep(ModuleOp module, func::FuncOp forward,
                               OpBuilder &moduleBuilder);
  LogicalResult buildEvalStep(ModuleOp module, func::FuncOp forward,
                              OpBuilder &moduleBuilder);
  Type computeType(Type type) const;
  DictionaryAttr trainingSummary(MLIRContext *ctx) const;
};

} // namespace

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

LogicalResult BuildTrainingPass::parseOptions(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  std::optional<OptimizerKind> optimizerChoice =
      llvm::StringSwitch<std::optional<OptimizerKind>>(optimizer)
          .Case("sgd", OptimizerKind::Sgd)
          .Case("adamw", OptimizerKind::AdamW)
          .Case("lars", OptimizerKind::Lars)
          .Default(std::nullopt);
  if (!optimizerChoice)
    return module.emitError("unknown optimizer '")
           << optimizer << "'; expected sgd, adamw or lars";
  optimizerKind = *optimizerChoice;

  if (precision == "f32")
    lowPrecisionType = nullptr;
  else if (precision == "f16")
    lowPrecisionType = Float16Type::get(ctx);
  else if (precision == "bf16")
    lowPrecisionType = BFloat16Type::get(ctx);
  else
    return module.emitError("unknown precision '")
           << precision << "'; expected f32, f16 or bf16";

  std::optional<LossScalingKind> scalingChoice =
      llvm::StringSwitch<std::optional<LossScalingKind>>(lossScaling)
          .Case("none", LossScalingKind::None)
          .Case("static", LossScalingKind::Static)
          .Case("dynamic", LossScalingKind::Dynamic)
          .Default(std::nullopt);
  if (!scalingChoice)
    return module.emitError("unknown loss scaling '")
           << lossScaling << "'; expected none, static or dynamic";
  scalingKind = *scalingChoice;
  if (scalingKind != LossScalingKind::None && precision == "bf16")
    return module.emitError("loss scaling is not needed with bf16, which has "
                            "the exponent range of f32; use loss-scaling=none");
  if (scalingKind != LossScalingKind::None &&
      (!(lossScale > 0.0) || !std::isfinite(lossScale)))
    return module.emitError("loss-scale must be positive, got ") << lossScale;
  if (!(momentum >= 0.0 && momentum < 1.0))
    return module.emitError("momentum must be in [0, 1), got ") << momentum;
  if (nesterov && (optimizerKind != OptimizerKind::Sgd || momentum == 0.0))
    return module.emitError("nesterov needs optimizer=sgd with momentum > 0");
  if (optimizerKind == OptimizerKind::Lars && momentum == 0.0)
    return module.emitError("lars needs momentum > 0");
  if (!(weightDecay >= 0.0))
    return module.emitError("weight-decay must be non-negative, got ")
           << weightDecay;
  if (!(emaDecay >= 0.0 && emaDecay < 1.0))
    return module.emitError("ema-decay must be in [0, 1), got ") << emaDecay;
  return success();
}

Type BuildTrainingPass::computeType(Type type) const {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!lowPrecisionType || !tensor || !tensor.getElementType().isF32())
    return type;
  return tensor.clone(lowPrecisionType);
}

//===----------------------------------------------------------------------===//
// Forward analysis
//===----------------------------------------------------------------------===//

/// uint8 images cross to the device as bytes and become floats in one
/// rn.normalize_images, their only reader: anything else that read them
/// would compute on bytes.
LogicalResult BuildTrainingPass::checkByteImages(func::FuncOp forward) {
  BlockArgument images = forward.getArgument(0);
  auto type = dyn_cast<RankedTensorType>(images.getType());
  bytesOnTheWire = type && type.getElementType().isUnsignedInteger(8);
  if (!bytesOnTheWire)
    return success();
  SmallVector<Operation *> readers;
  for (OpOperand &use : images.getUses())
    readers.push_back(use.getOwner());
  if (readers.size() == 1 && isa<NormalizeImagesOp>(readers[0]))
    return success();
  if (readers.empty())
    return forward.emitError("the uint8 images of @")
           << forwardFunction
           << " are never read; a uint8 model reads them through one "
              "rn.normalize_images";
  // Name a reader that is not a normalization, if there is one.
  Operation *other = readers[0];
  for (Operation *reader : readers)
    if (!isa<NormalizeImagesOp>(reader)) {
      other = reader;
      break;
    }
  return other->emitError("the uint8 images of @")
         << forwardFunction
         << " may be read by exactly one rn.normalize_images (which makes "
            "them floats on the device), but "
         << readers.size() << " ops read them, among them '" << other->getName()
         << "'";
}

LogicalResult BuildTrainingPass::analyzeForward(func::FuncOp forward) {
  if (forward.getNumArguments() != 2)
    return forward.emitError("@")
           << forwardFunction
           << " must take (images, labels), got "
           << forward.getNumArguments() << " arguments";
  if (!forward.getBody().hasOneBlock())
    return forward.emitError("@") << forwardFunction << " must be one block";
  auto returnOp = cast<func::ReturnOp>(forward.getBody().front().back());
  if (returnOp.getNumOperands() == 1)
    lossOp = returnOp.getOperand(0).getDefiningOp<SoftmaxCrossEntropyOp>();
  if (!lossOp)
    return returnOp.emitError("the model has no loss: @")
           << forwardFunction
           << " must return the result of rn.softmax_cross_entropy";

  auto imagesType = dyn_cast<RankedTensorType>(forward.getArgumentTypes()[0]);
  if (failed(checkByteImages(forward)))
    return failure();
  if (lowPrecisionType &&
      !(imagesType && (imagesType.getElementType().isF32() || bytesOnTheWire)))
    return forward.emitError("mixed precision needs an f32 model (the master "
                             "weights); the images are ")
           << forward.getArgumentTypes()[0];

  // Which parameters are read where, and which of them can receive a
  // gradient (those that the loss depends on through a differentiable
  // operand).
  llvm::DenseSet<Value> lossCone;
  lossCone.insert(lossOp.getLoss());
  SmallVector<Operation *> ops;
  for (Operation &op : forward.getBody().front().without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    if (!llvm::any_of(op->getResults(),
                      [&](Value v) { return lossCone.contains(v); }))
      continue;
    for (OpOperand &operand : op->getOpOperands()) {
      // Running statistics do not take part in differentiation.
      if (auto reader = dyn_cast<ParameterOperandsOpInterface>(op);
          reader && reader.getOperandRole(operand.getOperandNumber()) ==
                        OperandRole::runningStatistic)
        continue;
      lossCone.insert(operand.get());
    }
  }

  for (Operation *op : ops) {
    // An op has a gradient rule, or a training form that has one; besides
    // those, parameters (state), the loss (seeded by the step) and
    // normalize_images (reads data and buffers only).
    if (!isa<ParamOp, NormalizeImagesOp, SoftmaxCrossEntropyOp,
             GradientOpInterface, TrainingFormOpInterface>(op))
      return op->emitError("rn-build-training has no gradient rule for '")
             << op->getName() << "'";
    if (auto softmax = dyn_cast<SoftmaxCrossEntropyOp>(op);
        softmax && softmax != lossOp)
      return op->emitError("the model has more than one loss");
  }

  ModuleOp module = forward->getParentOfType<ModuleOp>();
  for (auto declaration : module.getOps<ParameterOp>()) {
    parameters.push_back(declaration);
    parameterUses[declaration.getSymName()].declaration = declaration;
  }
  llvm::DenseSet<StringRef> reachesLoss;
  for (Operation *op : ops) {
    auto param = dyn_cast<ParamOp>(op);
    if (!param)
      continue;
    ParameterUse &use = parameterUses[param.getName()];
    if (lossCone.contains(param.getResult()))
      reachesLoss.insert(param.getName());
    for (OpOperand &user : param.getResult().getUses()) {
      Operation *owner = user.getOwner();
      unsigned index = user.getOperandNumber();
      auto reader = dyn_cast<ParameterOperandsOpInterface>(owner);
      OperandRole role =
          reader ? reader.getOperandRole(index) : OperandRole::activation;
      if (role == OperandRole::normParameter)
        use.isBatchNormParameter = true;
      if (role == OperandRole::bias)
        use.isBias = true;
      bool weightOperand = role == OperandRole::weight ||
                           role == OperandRole::bias ||
                           role == OperandRole::normParameter;
      if (use.declaration.isTrainable() && !weightOperand)
        return owner->emitError("rn-build-training supports trainable "
                                "parameters only as weights, biases and "
                                "normalization parameters; @")
               << param.getName() << " is operand #" << index << " of '"
               << owner->getName() << "'";
      if (weightOperand && !use.declaration.isTrainable())
        return owner->emitError("the buffer @")
               << param.getName()
               << " is used as a weight; declare it without 'buffer' to "
                  "train it";
    }
  }
  for (ParameterOp declaration : parameters)
    if (declaration.isTrainable() &&
        !reachesLoss.contains(declaration.getSymName()))
      return declaration.emitError("trainable parameter @")
             << declaration.getSymName()
             << " does not contribute to the loss, so it would get no "
                "gradient; remove it or declare it 'buffer'";
  return success();
}

//===----------------------------------------------------------------------===//
// State declarations
//===----------------------------------------------------------------------===//

StateOp BuildTrainingPass::declare(OpBuilder &builder, StateRole role,
                                   StringRef name, ParameterOp of, Type type,
                                   InitAttr init) {
  ++numStateTensors;
  return StateOp::create(
      builder, of ? of.getLoc() : builder.getUnknownLoc(), role, name,
      of ? FlatSymbolRefAttr::get(of.getSymNameAttr()) : FlatSymbolRefAttr(),
      type, init);
}

LogicalResult BuildTrainingPass::declareState(ModuleOp module,
                                              OpBuilder &builder) {
  MLIRContext *ctx = module.getContext();
  auto zeros = InitAttr::get(ctx, InitKind::zeros, llvm::APFloat(0.0));
  auto derived = InitAttr::get(ctx, InitKind::derived, llvm::APFloat(0.0));
  SymbolTable symbols(module);
  auto checkFree = [&](StringRef name) -> LogicalResult {
    if (Operation *existing = symbols.lookup(name))
      return existing->emitError("@")
             << name << " collides with training state rn-build-training "
             << "declares; rename it";
    return success();
  };

  for (ParameterOp parameter : parameters) {
    if (!parameter.isTrainable())
      continue;
    const ParameterUse &use = parameterUses[parameter.getSymName()];
    TrainableState state;
    state.parameter = parameter;
    state.noDecay = noDecayBnBias && (use.isBatchNormParameter || use.isBias);
    state.lowPrecision = lowPrecisionType && !use.isBatchNormParameter;
    RankedTensorType type = parameter.getTensorType();
    RankedTensorType lowType =
        state.lowPrecision ? type.clone(lowPrecisionType) : type;
    // Declares the state `prefix.<parameter>` into `result`.
    auto declareFor = [&](StringRef prefix, StateRole role, Type stateType,
                          InitAttr init, StateOp &result) {
      std::string name = (prefix + "." + parameter.getSymName()).str();
      if (failed(checkFree(name)))
        return failure();
      result = declare(builder, role, name, parameter, stateType, init);
      return success();
    };

    if (failed(declareFor("grad", StateRole::gradient, lowType, zeros,
                          state.gradient)))
      return failure();
    if (state.lowPrecision &&
        (failed(declareFor("grad_f32", StateRole::master_gradient, type, zeros,
                           state.masterGradient)) ||
         failed(declareFor(precision, StateRole::low_precision_weight, lowType,
                           derived, state.lowPrecisionWeight))))
      return failure();
    bool needsMomentum =
        optimizerKind == OptimizerKind::Lars ||
        (optimizerKind == OptimizerKind::Sgd && momentum != 0.0);
    if (needsMomentum && failed(declareFor("momentum", StateRole::momentum,
                                           type, zeros, state.momentum)))
      return failure();
    if (optimizerKind == OptimizerKind::AdamW &&
        (failed(declareFor("adam_m", StateRole::adam_m, type, zeros,
                           state.adamFirst)) ||
         failed(declareFor("adam_v", StateRole::adam_v, type, zeros,
                           state.adamSecond))))
      return failure();
    if (emaDecay > 0.0 &&
        failed(declareFor("ema", StateRole::ema, type, derived, state.ema)))
      return failure();
    trainables.push_back(state);
  }

  if (scalingKind != LossScalingKind::None) {
    for (StringRef name : {"loss_scale", "loss_scale.good_steps"})
      if (failed(checkFree(name)))
        return failure();
    lossScaleState = declare(
        builder, StateRole::loss_scale, "loss_scale", nullptr,
        RankedTensorType::get({}, builder.getF32Type()),
        InitAttr::get(ctx, InitKind::constant, llvm::APFloat(lossScale)));
    if (scalingKind == LossScalingKind::Dynamic)
      goodStepsState = declare(builder, StateRole::loss_scale_good_steps,
                               "loss_scale.good_steps", nullptr,
                               RankedTensorType::get({}, builder.getI32Type()),
                               zeros);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The training step
//===----------------------------------------------------------------------===//

namespace {

/// Reverse-mode state while the backward pass is emitted: the gradient of
/// each forward value, and the running gradient accumulator of each
/// trainable parameter, as the ops' gradient rules see them.
class GradientMap final : public GradientEmitter {
public:
  GradientMap(OpBuilder &builder, const llvm::DenseSet<Value> &requiresGrad,
              llvm::StringMap<Value> &accumulators,
              const llvm::DenseMap<Value, StringRef> &parameterOfValue)
      : builder(builder), requiresGrad(requiresGrad),
        accumulators(accumulators), parameterOfValue(parameterOfValue) {}

  Value getResultGradient(Value value) override {
    return gradients.lookup(value);
  }
  bool requiresGradient(Value value) override {
    return requiresGrad.contains(value);
  }
  /// Adds a contribution to `value`'s gradient (fan-out sums with rn.add).
  void accumulate(Location loc, Value value, Value gradient) override {
    if (!requiresGrad.contains(value))
      return;
    Value &slot = gradients[value];
    if (slot)
      ++numFanOutSums;
    slot = slot ? AddOp::create(builder, loc, slot, gradient).getResult()
                : gradient;
  }
  Value getAccumulator(Value weight) override {
    return accumulators[parameterOfValue.lookup(weight)];
  }
  void setAccumulator(Value weight, Value newValue) override {
    accumulators[parameterOfValue.lookup(weight)] = newValue;
  }
  unsigned getNumFanOutSums() const { return numFanOutSums; }

private:
  OpBuilder &builder;
  const llvm::DenseSet<Value> &requiresGrad;
  llvm::StringMap<Value> &accumulators;
  const llvm::DenseMap<Value, StringRef> &parameterOfValue;
  llvm::DenseMap<Value, Value> gradients;
  unsigned numFanOutSums = 0;
};

/// Counts the ops a builder inserts.
struct InsertionCounter final : public OpBuilder::Listener {
  void notifyOperationInserted(Operation *, OpBuilder::InsertPoint) override {
    ++count;
  }
  unsigned count = 0;
};

/// A batch normalization of the training forward pass, for the running
/// statistics update.
struct BatchNormRecord {
  BatchNormTrainOp op;
  StringRef runningMean, runningVar;
  double momentum;
};

/// The training step as the ops' training forms see it
/// (TrainingFormOpInterface).
class TrainingForms final : public TrainingFormContext {
public:
  TrainingForms(IRMapping &mapping, Value step, int64_t numRandomOps,
                SmallVectorImpl<BatchNormRecord> &batchNorms)
      : mapping(mapping), step(step), numRandomOps(numRandomOps),
        batchNorms(batchNorms) {}

  Value lookup(Value forwardValue) override {
    return mapping.lookup(forwardValue);
  }
  void map(Value forwardValue, Value trainingValue) override {
    mapping.map(forwardValue, trainingValue);
  }
  Value getStep() override { return step; }
  std::pair<int64_t, int64_t> takeRandomStream() override {
    return {nextRandomIndex++, numRandomOps};
  }
  void addRunningStatistics(BatchNormTrainOp train, Value runningMean,
                            Value runningVar, double momentum) override {
    auto nameOf = [](Value v) { return v.getDefiningOp<ParamOp>().getName(); };
    batchNorms.push_back(
        {train, nameOf(runningMean), nameOf(runningVar), momentum});
  }

private:
  IRMapping &mapping;
  Value step;
  int64_t numRandomOps;
  int64_t nextRandomIndex = 0;
  SmallVectorImpl<BatchNormRecord> &batchNorms;
};

} // namespace

LogicalResult BuildTrainingPass::buildTrainStep(ModuleOp module,
                                                func::FuncOp forward,
                                                OpBuilder &moduleBuilder) {
  MLIRContext *ctx = module.getContext();
  Location loc = forward.getLoc();
  auto f32Scalar = RankedTensorType::get({}, Float32Type::get(ctx));
  auto i32Scalar = RankedTensorType::get({}, IntegerType::get(ctx, 32));

  StepFunctionBuilder step(ctx);
  unsigned imagesArg = step.addInput(forward.getArgumentTypes()[0], "images");
  unsigned labelsArg = step.addInput(forward.getArgumentTypes()[1], "labels");
  unsigned lrArg = step.addInput(f32Scalar, "lr");
  unsigned stepArg = step.addInput(i32Scalar, "step");
  llvm::StringMap<unsigned> stateArgs;
  auto addStateArg = [&](Type type, StringRef symbol) {
    stateArgs[symbol] = step.addState(type, symbol);
  };
  for (ParameterOp parameter : parameters)
    addStateArg(parameter.getType(), parameter.getSymName());
  for (TrainableState &state : trainables)
    for (StateOp op :
         {state.gradient, state.masterGradient, state.lowPrecisionWeight,
          state.momentum, state.adamFirst, state.adamSecond, state.ema})
      if (op)
        addStateArg(op.getType(), op.getSymName());
  for (StateOp op : {lossScaleState, goodStepsState})
    if (op)
      addStateArg(op.getType(), op.getSymName());

  auto build = [&](OpBuilder &b, Block &entry) -> LogicalResult {
    auto arg = [&](StringRef symbol) {
      return entry.getArgument(stateArgs.lookup(symbol));
    };

    // Zero-grad: every accumulator starts the step at zero.
    llvm::StringMap<Value> accumulators;
    for (TrainableState &state : trainables)
      accumulators[state.parameter.getSymName()] =
          ZeroOp::create(b, loc, arg(state.gradient.getSymName()));

    // Forward pass in training mode.
    IRMapping mapping;
    // uint8 images stay bytes: their rn.normalize_images, cloned below
    // with the compute type, makes them floats.
    Value images = entry.getArgument(imagesArg);
    if (lowPrecisionType && !bytesOnTheWire)
      images = CastOp::create(b, loc, computeType(images.getType()), images);
    mapping.map(forward.getArgument(0), images);
    mapping.map(forward.getArgument(1), entry.getArgument(labelsArg));

    llvm::DenseSet<Value> requiresGrad;
    llvm::DenseMap<Value, StringRef> parameterOfValue;
    llvm::StringMap<TrainableState *> trainableByName;
    for (TrainableState &state : trainables)
      trainableByName[state.parameter.getSymName()] = &state;
    SmallVector<Operation *> forwardOps;
    SmallVector<BatchNormRecord> batchNorms;
    Value loss, logits;
    // The random ops are numbered together in forward order: see Note
    // [Random streams] in runtime/cpu/cpu_kernels.h.
    TrainingForms forms(
        mapping, entry.getArgument(stepArg),
        llvm::count_if(forward.getBody().front().without_terminator(),
                       [](Operation &op) {
                         return op.hasTrait<RandomInTraining>();
                       }),
        batchNorms);

    for (Operation &op : forward.getBody().front().without_terminator()) {
      if (auto param = dyn_cast<ParamOp>(op)) {
        TrainableState *state = trainableByName.lookup(param.getName());
        Value value = arg(state && state->lowPrecision
                              ? state->lowPrecisionWeight.getSymName()
                              : param.getName());
        mapping.map(param.getResult(), value);
        if (state) {
          requiresGrad.insert(value);
          parameterOfValue[value] = param.getName();
        }
        continue;
      }
      Operation *created;
      if (auto form = dyn_cast<TrainingFormOpInterface>(op)) {
        created = form.buildTrainingForm(b, forms);
      } else {
        created = b.clone(op, mapping);
        for (Value result : created->getResults())
          if (!isa<SoftmaxCrossEntropyOp>(created))
            result.setType(computeType(result.getType()));
      }
      if (llvm::any_of(created->getOperands(), [&](Value v) {
            return requiresGrad.contains(v);
          }))
        for (Value result : created->getResults())
          requiresGrad.insert(result);
      forwardOps.push_back(created);
      if (&op == lossOp.getOperation()) {
        loss = created->getResult(0);
        logits = created->getOperand(0);
      }
    }

    // Backward pass, seeded with the (scaled) gradient of the loss.
    GradientMap grads(b, requiresGrad, accumulators, parameterOfValue);
    auto softmax = cast<SoftmaxCrossEntropyOp>(
        mapping.lookup(lossOp.getLoss()).getDefiningOp());
    Value scale = lossScaleState ? arg(lossScaleState.getSymName()) : Value();
    grads.accumulate(loc, logits,
                     SoftmaxCrossEntropyBackwardOp::create(
                         b, softmax.getLoc(), logits.getType(), logits,
                         softmax.getLabels(), scale,
                         softmax.getLabelSmoothingAttr()));
    ++numBackwardOps;

    // Each op's rule (GradientOpInterface, RNGradients.cpp), last op first.
    // The statistic counts the ops the rules create, not fan-out sums.
    InsertionCounter inserted;
    OpBuilder::Listener *previousListener = b.getListener();
    b.setListener(&inserted);
    for (Operation *op : llvm::reverse(forwardOps)) {
      if (isa<SoftmaxCrossEntropyOp>(op) ||
          llvm::none_of(op->getResults(), [&](Value result) {
            return grads.getResultGradient(result);
          }))
        continue;
      auto rule = dyn_cast<GradientOpInterface>(op);
      if (!rule)
        return op->emitError("rn-build-training has no gradient rule for '")
               << op->getName() << "'";
      if (failed(rule.buildGradient(b, grads)))
        return failure();
    }
    b.setListener(previousListener);
    numBackwardOps += inserted.count - grads.getNumFanOutSums();

    step.addOutput(loss, "loss");

    // Gradients in f32 for the optimizer: mixed precision casts the
    // low-precision accumulators (BatchNorm gradients are f32 already).
    SmallVector<Value> masterGrads;
    for (TrainableState &state : trainables) {
      Value grad = accumulators[state.parameter.getSymName()];
      if (state.lowPrecision)
        grad = CastOp::create(b, loc, state.parameter.getType(), grad);
      masterGrads.push_back(grad);
    }

    // Data parallelism: every replica continues with the mean gradient.
    if (dataParallel) {
      SmallVector<Type> types;
      for (Value grad : masterGrads)
        types.push_back(grad.getType());
      auto reduce = AllReduceMeanOp::create(b, loc, types, masterGrads);
      llvm::copy(reduce.getResults(), masterGrads.begin());
    }

    // Loss scaling: check the scaled gradients, then unscale them.
    Value foundNonFinite;
    if (scalingKind == LossScalingKind::Dynamic)
      foundNonFinite = CheckFiniteOp::create(b, loc, RankedTensorType::get({}, b.getI1Type()),
                                             masterGrads);
    if (scalingKind != LossScalingKind::None)
      for (Value &grad : masterGrads)
        grad = UnscaleOp::create(b, loc, grad.getType(), grad, scale);

    // Optimizer updates, one per parameter.
    Value lr = entry.getArgument(lrArg);
    llvm::StringMap<Value> newValues;
    for (auto [state, grad] : llvm::zip(trainables, masterGrads)) {
      ++numOptimizerUpdates;
      StringRef name = state.parameter.getSymName();
      Value param = arg(name);
      double decay = state.noDecay ? 0.0 : weightDecay.getValue();
      Location paramLoc = state.parameter.getLoc();
      switch (optimizerKind) {
      case OptimizerKind::Sgd: {
        Value buffer =
            state.momentum ? arg(state.momentum.getSymName()) : Value();
        auto update = SgdUpdateOp::create(
            b, paramLoc, param.getType(),
            buffer ? buffer.getType() : Type(), param, grad, buffer, lr,
            foundNonFinite, b.getF64FloatAttr(momentum),
            b.getF64FloatAttr(decay),
            nesterov ? b.getUnitAttr() : UnitAttr());
        newValues[name] = update.getNewParam();
        if (buffer)
          newValues[state.momentum.getSymName()] =
              update.getNewMomentumBuffer();
        break;
      }
      case OptimizerKind::AdamW: {
        auto update = AdamWUpdateOp::create(
            b, paramLoc, param.getType(), param.getType(), param.getType(),
            param, grad, arg(state.adamFirst.getSymName()),
            arg(state.adamSecond.getSymName()), lr,
            entry.getArgument(stepArg), foundNonFinite,
            b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
            b.getF64FloatAttr(adamEpsilon), b.getF64FloatAttr(decay));
        newValues[name] = update.getNewParam();
        newValues[state.adamFirst.getSymName()] = update.getNewExpAvg();
        newValues[state.adamSecond.getSymName()] = update.getNewExpAvgSq();
        break;
      }
      case OptimizerKind::Lars: {
        auto update = LarsUpdateOp::create(
            b, paramLoc, param.getType(), param.getType(), param, grad,
            arg(state.momentum.getSymName()), lr, foundNonFinite,
            b.getF64FloatAttr(momentum), b.getF64FloatAttr(decay),
            b.getF64FloatAttr(larsTrust), b.getF64FloatAttr(larsEpsilon));
        newValues[name] = update.getNewParam();
        newValues[state.momentum.getSymName()] = update.getNewMomentumBuffer();
        break;
      }
      }
      // The gradient state ends the step holding what the optimizer read:
      // unscaled (rn.unscale updates it in place) unless a separate f32
      // master gradient holds that, leaving the low-precision accumulator.
      newValues[state.gradient.getSymName()] =
          state.masterGradient ? accumulators[name] : grad;
      if (state.masterGradient)
        newValues[state.masterGradient.getSymName()] = grad;
    }

    // BatchNorm running statistics.
    for (BatchNormRecord &record : batchNorms) {
      Value mean = newValues.lookup(record.runningMean);
      Value var = newValues.lookup(record.runningVar);
      if (!mean)
        mean = arg(record.runningMean);
      if (!var)
        var = arg(record.runningVar);
      auto inputType = cast<RankedTensorType>(record.op.getInput().getType());
      int64_t count = inputType.getNumElements() / inputType.getShape().back();
      auto update = UpdateRunningStatsOp::create(
          b, record.op.getLoc(), mean.getType(), var.getType(), mean, var,
          record.op.getBatchMean(), record.op.getBatchInvStd(),
          record.op.getEpsilonAttr(), b.getF64FloatAttr(record.momentum),
          b.getI64IntegerAttr(count));
      newValues[record.runningMean] = update.getNewRunningMean();
      newValues[record.runningVar] = update.getNewRunningVar();
    }

    // Low-precision weights for the next forward pass, and EMA.
    for (TrainableState &state : trainables) {
      Value updated = newValues[state.parameter.getSymName()];
      if (state.lowPrecisionWeight)
        newValues[state.lowPrecisionWeight.getSymName()] = CastOp::create(
            b, loc, state.lowPrecisionWeight.getType(), updated);
      if (state.ema)
        newValues[state.ema.getSymName()] = EmaUpdateOp::create(
            b, loc, arg(state.ema.getSymName()), updated,
            b.getF64FloatAttr(emaDecay));
    }

    if (scalingKind == LossScalingKind::Dynamic) {
      auto update = UpdateLossScaleOp::create(
          b, loc, scale.getType(), i32Scalar, scale,
          arg(goodStepsState.getSymName()), foundNonFinite,
          b.getF64FloatAttr(growthFactor), b.getF64FloatAttr(backoffFactor),
          b.getI64IntegerAttr(growthInterval));
      newValues[lossScaleState.getSymName()] = update.getNewScale();
      newValues[goodStepsState.getSymName()] = update.getNewGoodSteps();
    }

    // Results: every state the step wrote, in argument order.
    SmallVector<std::pair<unsigned, StringRef>> written;
    for (const auto &entry : stateArgs)
      if (newValues.lookup(entry.getKey()))
        written.push_back({entry.getValue(), entry.getKey()});
    llvm::sort(written);
    for (auto [index, symbol] : written)
      step.addStateResult(newValues.lookup(symbol), symbol);
    return success();
  };

  moduleBuilder.setInsertionPointAfter(forward);
  return success(static_cast<bool>(
      step.create(moduleBuilder, loc, "train_step", build)));
}

//===----------------------------------------------------------------------===//
// The evaluation step
//===----------------------------------------------------------------------===//

LogicalResult BuildTrainingPass::buildEvalStep(ModuleOp module,
                                               func::FuncOp forward,
                                               OpBuilder &moduleBuilder) {
  MLIRContext *ctx = module.getContext();
  Location loc = forward.getLoc();
  StepFunctionBuilder step(ctx);
  unsigned imagesArg = step.addInput(forward.getArgumentTypes()[0], "images");
  unsigned labelsArg = step.addInput(forward.getArgumentTypes()[1], "labels");
  // Inference reads the weights the training forward pass reads: the
  // low-precision copies under mixed precision.
  llvm::StringMap<unsigned> weightArgs;
  llvm::StringMap<StateOp> lowPrecisionWeightOf;
  for (TrainableState &state : trainables)
    if (state.lowPrecisionWeight)
      lowPrecisionWeightOf[state.parameter.getSymName()] =
          state.lowPrecisionWeight;
  for (ParameterOp parameter : parameters) {
    StringRef name = parameter.getSymName();
    StateOp copy = lowPrecisionWeightOf.lookup(name);
    weightArgs[name] = copy ? step.addState(copy.getType(), copy.getSymName())
                            : step.addState(parameter.getType(), name);
  }

  auto build = [&](OpBuilder &b, Block &entry) -> LogicalResult {
    IRMapping mapping;
    Value images = entry.getArgument(imagesArg);
    if (lowPrecisionType && !bytesOnTheWire)
      images = CastOp::create(b, loc, computeType(images.getType()), images);
    mapping.map(forward.getArgument(0), images);
    mapping.map(forward.getArgument(1), entry.getArgument(labelsArg));
    Value loss, logits;
    for (Operation &op : forward.getBody().front().without_terminator()) {
      if (auto param = dyn_cast<ParamOp>(op)) {
        mapping.map(param.getResult(),
                    entry.getArgument(weightArgs.lookup(param.getName())));
      } else if (auto form = dyn_cast<TrainingFormOpInterface>(op)) {
        form.buildEvalForm(b, mapping);
      } else {
        Operation *created = b.clone(op, mapping);
        if (&op == lossOp.getOperation()) {
          loss = created->getResult(0);
          logits = created->getOperand(0);
        } else {
          for (Value result : created->getResults())
            result.setType(computeType(result.getType()));
        }
      }
    }
    Value labels = entry.getArgument(labelsArg);
    Value correct = CountCorrectOp::create(
        b, loc, RankedTensorType::get({}, b.getI32Type()), logits, labels);
    step.addOutput(loss, "loss");
    step.addOutput(correct, "correct");
    step.addOutput(logits, "logits");
    return success();
  };
  return success(static_cast<bool>(
      step.create(moduleBuilder, loc, "eval_step", build)));
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

DictionaryAttr BuildTrainingPass::trainingSummary(MLIRContext *ctx) const {
  Builder b(ctx);
  SmallVector<NamedAttribute> entries = {
      b.getNamedAttr("optimizer", b.getStringAttr(optimizer)),
      b.getNamedAttr("precision", b.getStringAttr(precision)),
      b.getNamedAttr("loss_scaling", b.getStringAttr(lossScaling)),
      b.getNamedAttr("momentum", b.getF64FloatAttr(momentum)),
      b.getNamedAttr("nesterov", b.getBoolAttr(nesterov)),
      b.getNamedAttr("weight_decay", b.getF64FloatAttr(weightDecay)),
      b.getNamedAttr("no_decay_bn_bias", b.getBoolAttr(noDecayBnBias)),
      b.getNamedAttr("ema_decay", b.getF64FloatAttr(emaDecay)),
      b.getNamedAttr("data_parallel", b.getBoolAttr(dataParallel)),
  };
  return b.getDictionaryAttr(entries);
}

void BuildTrainingPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (failed(parseOptions(module)))
    return signalPassFailure();
  auto forward = module.lookupSymbol<func::FuncOp>(forwardFunction);
  if (!forward) {
    module.emitError("no function @")
        << forwardFunction << " to build a training step from";
    return signalPassFailure();
  }
  if (failed(analyzeForward(forward)))
    return signalPassFailure();

  OpBuilder builder(module.getContext());
  builder.setInsertionPoint(forward);
  if (failed(declareState(module, builder)) ||
      failed(buildTrainStep(module, forward, builder)) ||
      failed(buildEvalStep(module, forward, builder)))
    return signalPassFailure();
  forward.erase();
  module->setAttr(kTrainingAttr, trainingSummary(module.getContext()));
  LLVM_DEBUG(llvm::dbgs() << "built training step with "
                          << trainables.size() << " trainable parameters\n");
}
