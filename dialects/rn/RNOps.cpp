//===- RNOps.cpp - Verification of model-level rn ops ---------------------===//
//
// The verifier of each shape-changing op computes the result type from the
// operands and attributes with the rules in RNShapes.h (which report a bad
// operand by name) and compares it with the written type.
//
//===----------------------------------------------------------------------===//

#include "dialects/rn/RNOps.h"
#include "dialects/rn/RNShapes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mlir::rn;
using namespace mlir::rn::shapes;

static RankedTensorType tensorTypeOf(Value value) {
  return value ? cast<RankedTensorType>(value.getType()) : RankedTensorType();
}

/// Checks the op's single result against the type its shape rule inferred.
static LogicalResult verifyResultType(Operation *op,
                                      FailureOr<RankedTensorType> inferred) {
  if (failed(inferred))
    return failure();
  Type written = op->getResult(0).getType();
  if (*inferred != written)
    return op->emitOpError("result type ")
           << written << " differs from the inferred type " << *inferred;
  return success();
}

//===----------------------------------------------------------------------===//
// ParameterOp / ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParameterOp::verify() {
  auto tensorType = dyn_cast<RankedTensorType>(getType());
  if (!tensorType || !tensorType.hasStaticShape() ||
      !isa<Float32Type, Float16Type, BFloat16Type>(
          tensorType.getElementType()))
    return emitOpError("type must be a statically shaped f32, f16 or bf16 "
                       "tensor, got ")
           << getType();
  if (getInit().getKind() == InitKind::derived)
    return emitOpError("a parameter cannot be initialized as "
                       "#rn.init<derived>; only training state derives from "
                       "a parameter");
  return verifyInitFits(*this, getInit(), tensorType);
}

LogicalResult ParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *symbol = symbolTable.lookupNearestSymbolFrom(*this, getNameAttr());
  if (!symbol)
    return emitOpError("references unknown parameter ") << getNameAttr();
  auto parameter = dyn_cast<ParameterOp>(symbol);
  if (!parameter)
    return emitOpError() << getNameAttr() << " is a '" << symbol->getName()
                         << "', not an rn.parameter";
  if (parameter.getType() != getType())
    return emitOpError("result type ")
           << getType() << " differs from the declared type "
           << parameter.getType() << " of " << getNameAttr();
  return success();
}

//===----------------------------------------------------------------------===//
// Shape-changing ops
//===----------------------------------------------------------------------===//

LogicalResult Conv2dOp::verify() {
  return verifyResultType(
      *this, inferConv2d(ShapeDiagnostics(*this), getInput().getType(),
                         getFilter().getType(), tensorTypeOf(getBias()),
                         getStrides(), getPadding(), getDilation(),
                         getGroups()));
}

LogicalResult BatchNormOp::verify() {
  ShapeDiagnostics diag(*this);
  std::pair<StringRef, Type> vectors[] = {
      {"weight", getWeight().getType()},
      {"bias", getBias().getType()},
      {"running_mean", getRunningMean().getType()},
      {"running_var", getRunningVar().getType()}};
  if (failed(verifyBatchNormOperands(diag, getInput().getType(), vectors,
                                     /*allowF32Vectors=*/false)) ||
      failed(verifyBatchNormAttributes(diag, getEpsilon().convertToDouble(),
                                       getMomentum().convertToDouble())))
    return failure();
  return verifyResultType(*this, getInput().getType());
}

LogicalResult LayerNormOp::verify() {
  ShapeDiagnostics diag(*this);
  std::pair<StringRef, Type> vectors[] = {{"weight", getWeight().getType()},
                                          {"bias", getBias().getType()}};
  if (failed(verifyBatchNormOperands(diag, getInput().getType(), vectors,
                                     /*allowF32Vectors=*/true)) ||
      failed(verifyBatchNormAttributes(diag, getEpsilon().convertToDouble(),
                                       std::nullopt)))
    return failure();
  return verifyResultType(*this, getInput().getType());
}

LogicalResult ChannelScaleOp::verify() {
  std::pair<StringRef, Type> vectors[] = {{"scale", getScale().getType()}};
  return verifyBatchNormOperands(ShapeDiagnostics(*this), getInput().getType(),
                                 vectors, /*allowF32Vectors=*/false);
}

LogicalResult ConcatOp::verify() {
  return verifyChannelSlices(ShapeDiagnostics(*this), "result",
                             getResult().getType(), "input",
                             getInputs().getTypes());
}

LogicalResult SplitOp::verify() {
  return verifyChannelSlices(ShapeDiagnostics(*this), "input",
                             getInput().getType(), "result",
                             getResults().getTypes());
}

LogicalResult ChannelShuffleOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType input = getInput().getType();
  if (failed(diag.requireRank("input", input, 4, "NHWC")))
    return failure();
  int64_t groups = getGroups(), channels = input.getDimSize(3);
  if (groups < 1 || channels % groups != 0)
    return diag.fail("groups ", groups, " must be positive and divide the ",
                     channels, " channels of ", input);
  return success();
}

LogicalResult NormalizeImagesOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType input = getInput().getType();
  if (failed(verifyImageNormalization(diag, input, getMean().getType(),
                                      getStd().getType())))
    return failure();
  return verifyResultType(
      *this, RankedTensorType::get(input.getShape(),
                                   getResult().getType().getElementType()));
}

LogicalResult HardtanhOp::verify() {
  return verifyClampBounds(ShapeDiagnostics(*this),
                           getMinVal().convertToDouble(),
                           getMaxVal().convertToDouble());
}

LogicalResult ChannelMulOp::verify() {
  return verifyChannelScale(ShapeDiagnostics(*this), getInput().getType(),
                            getScale().getType());
}

LogicalResult DropoutOp::verify() {
  double p = getP().convertToDouble();
  if (!(p >= 0.0 && p < 1.0))
    return emitOpError("drop probability must be in [0, 1), got ") << p;
  return success();
}

LogicalResult StochasticDepthOp::verify() {
  ShapeDiagnostics diag(*this);
  if (failed(requireInRange(diag, "drop probability", getP().convertToDouble(),
                            0.0, 1.0, /*highInclusive=*/true)))
    return failure();
  return verifySampleBatch(diag, getInput().getType());
}

LogicalResult MaxPool2dOp::verify() {
  return verifyResultType(
      *this, inferPool2d(ShapeDiagnostics(*this), getInput().getType(),
                         getKernel(), getStrides(), getPadding(),
                         getCeilMode()));
}

LogicalResult AvgPool2dOp::verify() {
  return verifyResultType(
      *this, inferPool2d(ShapeDiagnostics(*this), getInput().getType(),
                         getKernel(), getStrides(), getPadding(),
                         getCeilMode()));
}

LogicalResult AdaptiveAvgPool2dOp::verify() {
  return verifyAdaptivePool(ShapeDiagnostics(*this), "input",
                            getInput().getType(), "result",
                            getResult().getType());
}

LogicalResult GlobalAvgPoolOp::verify() {
  return verifyResultType(*this, inferGlobalAvgPool(ShapeDiagnostics(*this),
                                                    getInput().getType()));
}

LogicalResult FlattenOp::verify() {
  ShapeDiagnostics diag(*this);
  RankedTensorType input = getInput().getType();
  if (input.getRank() < 2)
    return diag.fail("input must have a batch dimension and at least one "
                     "feature dimension, got ",
                     input);
  if (failed(diag.requireStatic("input", input)))
    return failure();
  int64_t features = 1;
  for (int64_t size : input.getShape().drop_front())
    features *= size;
  return verifyResultType(
      *this, RankedTensorType::get({input.getDimSize(0), features},
                                   input.getElementType()));
}

LogicalResult LinearOp::verify() {
  return verifyResultType(
      *this, inferLinear(ShapeDiagnostics(*this), getInput().getType(),
                         getWeight().getType(), tensorTypeOf(getBias())));
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  ShapeDiagnostics diag(*this);
  if (failed(verifyLogitsAndLabels(diag, getLogits().getType(),
                                   getLabels().getType())))
    return failure();
  double smoothing = getLabelSmoothing().convertToDouble();
  if (!(smoothing >= 0.0 && smoothing < 1.0))
    return diag.fail("label smoothing must be in [0, 1), got ", smoothing);
  return success();
}

//===----------------------------------------------------------------------===//
// custom<WeightGradientTypes>: the result types of conv2d_backward and
// linear_backward
//===----------------------------------------------------------------------===//

// Both results but one are optional (the input gradient, the bias
// gradient), so the types alone are ambiguous at two; the bias gradient is
// present exactly when the bias accumulator operand is, which settles it.
// Printed as functional-type prints results: one type bare, several in
// parentheses.

static ParseResult parseWeightGradientTypes(
    OpAsmParser &parser, Type &inputGrad, Type &weightGrad, Type &biasGrad,
    const std::optional<OpAsmParser::UnresolvedOperand> &biasAcc) {
  SmallVector<Type, 3> types;
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (succeeded(parser.parseOptionalLParen())) {
    if (parser.parseTypeList(types) || parser.parseRParen())
      return failure();
  } else if (parser.parseType(types.emplace_back())) {
    return failure();
  }
  const size_t withoutInput = biasAcc ? 2 : 1;
  if (types.size() != withoutInput && types.size() != withoutInput + 1)
    return parser.emitError(loc)
           << "expected " << withoutInput << " or " << withoutInput + 1
           << " result types ([input_grad,] weight gradient"
           << (biasAcc ? ", bias_grad" : "") << "), got " << types.size();
  size_t next = 0;
  if (types.size() == withoutInput + 1)
    inputGrad = types[next++];
  weightGrad = types[next++];
  if (biasAcc)
    biasGrad = types[next];
  return success();
}

static void printWeightGradientTypes(OpAsmPrinter &printer, Operation *op,
                                     Type inputGrad, Type weightGrad,
                                     Type biasGrad, Value /*biasAcc*/) {
  SmallVector<Type, 3> types;
  for (Type type : {inputGrad, weightGrad, biasGrad})
    if (type)
      types.push_back(type);
  if (types.size() == 1) {
    printer << types.front();
    return;
  }
  printer << '(';
  llvm::interleaveComma(types, printer);
  printer << ')';
}

#define GET_OP_CLASSES
#include "dialects/rn/RNOps.cpp.inc"
