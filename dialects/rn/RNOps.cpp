//===- RNOps.cpp - Verification and shape inference of rn ops -------------===//
//
// Each shape-changing op has an inference function that computes its result
// type from operands and attributes and reports a bad operand with a message
// naming it. The verifiers run it at the op's location; builders in later
// passes can run it without a location to infer types silently.
//
//===----------------------------------------------------------------------===//

#include "dialects/rn/RNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mlir::rn;

namespace {

/// Reports shape errors of one op during inference, where only an optional
/// location is at hand; messages read like emitOpError's.
class ShapeDiagnostics {
public:
  ShapeDiagnostics(std::optional<Location> loc, StringRef opName)
      : loc(loc), opName(opName) {}

  template <typename... Args>
  LogicalResult fail(Args &&...args) const {
    return emitOptionalError(loc, "'", opName, "' op ",
                             std::forward<Args>(args)...);
  }

  /// Checks that `type` is statically shaped with rank `rank`; `what` names
  /// the operand and `layout` says what its dimensions mean.
  LogicalResult requireRank(StringRef what, RankedTensorType type,
                            int64_t rank, StringRef layout) const {
    if (type.getRank() != rank)
      return fail(what, " must be ", layout, " (rank ", rank, "), got ", type);
    return requireStatic(what, type);
  }

  LogicalResult requireStatic(StringRef what, RankedTensorType type) const {
    if (!type.hasStaticShape())
      return fail(what, " must have a static shape, got ", type);
    return success();
  }

  LogicalResult requireSameElementType(StringRef what, RankedTensorType type,
                                       StringRef refWhat,
                                       RankedTensorType ref) const {
    if (type.getElementType() != ref.getElementType())
      return fail("element type mismatch: ", what, " is ",
                  type.getElementType(), " but ", refWhat, " is ",
                  ref.getElementType());
    return success();
  }

  /// A per-channel vector such as a bias or a BatchNorm statistic: [channels].
  LogicalResult requireVector(StringRef what, RankedTensorType type,
                              int64_t channels, StringRef refWhat,
                              RankedTensorType ref) const {
    if (type.getRank() != 1 || type.getDimSize(0) != channels)
      return fail(what, " must be [", channels, "] (one per output channel), got ",
                  type);
    return requireSameElementType(what, type, refWhat, ref);
  }

private:
  std::optional<Location> loc;
  StringRef opName;
};

/// Window geometry shared by convolution and pooling, per spatial dimension.
struct WindowParams {
  ArrayRef<int64_t> kernel;
  ArrayRef<int64_t> strides;
  ArrayRef<int64_t> padding;
  ArrayRef<int64_t> dilation;
};

} // namespace

static FailureOr<SmallVector<int64_t, 2>>
inferWindowOutput(const ShapeDiagnostics &diag, ArrayRef<int64_t> spatial,
                  const WindowParams &window) {
  auto requireTwo = [&](StringRef what, ArrayRef<int64_t> values) {
    if (values.size() != 2)
      return diag.fail("expects 2 ", what, " values (height, width), got ",
                       values.size());
    return success();
  };
  if (failed(requireTwo("kernel", window.kernel)) ||
      failed(requireTwo("stride", window.strides)) ||
      failed(requireTwo("padding", window.padding)) ||
      failed(requireTwo("dilation", window.dilation)))
    return failure();

  static constexpr StringLiteral dimNames[] = {"height", "width"};
  SmallVector<int64_t, 2> output;
  for (int dim = 0; dim < 2; ++dim) {
    int64_t kernel = window.kernel[dim];
    int64_t stride = window.strides[dim];
    int64_t pad = window.padding[dim];
    int64_t dilation = window.dilation[dim];
    if (kernel <= 0)
      return diag.fail("kernel ", dimNames[dim], " must be positive, got ",
                       kernel);
    if (stride <= 0)
      return diag.fail("stride must be positive, got ", stride, " for ",
                       dimNames[dim]);
    if (pad < 0)
      return diag.fail("padding must be non-negative, got ", pad, " for ",
                       dimNames[dim]);
    if (dilation <= 0)
      return diag.fail("dilation must be positive, got ", dilation, " for ",
                       dimNames[dim]);
    int64_t extent = dilation * (kernel - 1) + 1;
    int64_t padded = spatial[dim] + 2 * pad;
    if (padded < extent)
      return diag.fail("window ", dimNames[dim], " ", extent,
                       " exceeds the padded input ", dimNames[dim], " ",
                       padded);
    output.push_back((padded - extent) / stride + 1);
  }
  return output;
}

/// Runs `infer` at the op's location and checks the written result type.
template <typename OpT, typename InferFn>
static LogicalResult verifyInferredResultType(OpT op, InferFn infer) {
  ShapeDiagnostics diag(op.getLoc(), OpT::getOperationName());
  FailureOr<Type> inferred = infer(diag, typename OpT::Adaptor(op));
  if (failed(inferred))
    return failure();
  Type written = op->getResult(0).getType();
  if (*inferred != written)
    return op.emitOpError("result type ")
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
  return success();
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
// Conv2dOp
//===----------------------------------------------------------------------===//

static FailureOr<Type> inferConv2dType(const ShapeDiagnostics &diag,
                                    Conv2dOp::Adaptor adaptor) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto filter = cast<RankedTensorType>(adaptor.getFilter().getType());
  if (failed(diag.requireRank("input", input, 4, "NHWC")) ||
      failed(diag.requireRank("filter", filter, 4, "OHWI")) ||
      failed(diag.requireSameElementType("filter", filter, "input", input)))
    return failure();

  int64_t groups = adaptor.getGroups();
  int64_t inChannels = input.getDimSize(3);
  int64_t outChannels = filter.getDimSize(0);
  if (groups <= 0)
    return diag.fail("groups must be positive, got ", groups);
  if (inChannels % groups != 0)
    return diag.fail("input channels ", inChannels,
                     " are not divisible by groups ", groups);
  if (outChannels % groups != 0)
    return diag.fail("output channels ", outChannels,
                     " are not divisible by groups ", groups);
  if (filter.getDimSize(3) != inChannels / groups)
    return diag.fail("filter expects ", filter.getDimSize(3),
                     " input channels per group but the input has ",
                     inChannels, " channels in ", groups, " group(s)");
  if (Value bias = adaptor.getBias()) {
    if (failed(diag.requireVector("bias",
                                  cast<RankedTensorType>(bias.getType()),
                                  outChannels, "input", input)))
      return failure();
  }

  WindowParams window{filter.getShape().slice(1, 2), adaptor.getStrides(),
                      adaptor.getPadding(), adaptor.getDilation()};
  FailureOr<SmallVector<int64_t, 2>> spatial =
      inferWindowOutput(diag, input.getShape().slice(1, 2), window);
  if (failed(spatial))
    return failure();
  return Type(RankedTensorType::get(
      {input.getDimSize(0), (*spatial)[0], (*spatial)[1], outChannels},
      input.getElementType()));
}

//===----------------------------------------------------------------------===//
// BatchNormOp
//===----------------------------------------------------------------------===//

static FailureOr<Type> inferBatchNormType(const ShapeDiagnostics &diag,
                                    BatchNormOp::Adaptor adaptor) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (input.getRank() != 2 && input.getRank() != 4)
    return diag.fail("input must be NHWC (rank 4) or [N, C] (rank 2), got ",
                     input);
  if (failed(diag.requireStatic("input", input)))
    return failure();
  int64_t channels = input.getShape().back();
  std::pair<StringRef, Value> vectors[] = {
      {"weight", adaptor.getWeight()},
      {"bias", adaptor.getBias()},
      {"running_mean", adaptor.getRunningMean()},
      {"running_var", adaptor.getRunningVar()}};
  for (auto [what, value] : vectors) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getRank() != 1 || type.getDimSize(0) != channels)
      return diag.fail(what, " must be [", channels,
                       "] (one per channel), got ", type);
    if (failed(diag.requireSameElementType(what, type, "input", input)))
      return failure();
  }
  double epsilon = adaptor.getEpsilon().convertToDouble();
  double momentum = adaptor.getMomentum().convertToDouble();
  if (!(epsilon > 0.0) || !std::isfinite(epsilon))
    return diag.fail("epsilon must be positive, got ", epsilon);
  if (!(momentum >= 0.0 && momentum <= 1.0))
    return diag.fail("momentum must be in [0, 1], got ", momentum);
  return Type(input);
}

//===----------------------------------------------------------------------===//
// DropoutOp
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::verify() {
  double p = getP().convertToDouble();
  if (!(p >= 0.0 && p < 1.0))
    return emitOpError("drop probability must be in [0, 1), got ") << p;
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling and reshaping
//===----------------------------------------------------------------------===//

template <typename PoolOp>
static FailureOr<Type> inferPool2dType(const ShapeDiagnostics &diag,
                                       typename PoolOp::Adaptor adaptor) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (failed(diag.requireRank("input", input, 4, "NHWC")))
    return failure();
  static constexpr int64_t noDilation[] = {1, 1};
  WindowParams window{adaptor.getKernel(), adaptor.getStrides(),
                      adaptor.getPadding(), noDilation};
  FailureOr<SmallVector<int64_t, 2>> spatial =
      inferWindowOutput(diag, input.getShape().slice(1, 2), window);
  if (failed(spatial))
    return failure();
  // PyTorch's rule: a pad wider than half the window would make windows of
  // padding only.
  for (int dim = 0; dim < 2; ++dim)
    if (window.padding[dim] * 2 > window.kernel[dim])
      return diag.fail("padding ", window.padding[dim],
                       " exceeds half the kernel size ", window.kernel[dim]);
  return Type(RankedTensorType::get(
      {input.getDimSize(0), (*spatial)[0], (*spatial)[1], input.getDimSize(3)},
      input.getElementType()));
}

static FailureOr<Type> inferGlobalAvgPoolType(const ShapeDiagnostics &diag,
                                    GlobalAvgPoolOp::Adaptor adaptor) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (failed(diag.requireRank("input", input, 4, "NHWC")))
    return failure();
  return Type(RankedTensorType::get(
      {input.getDimSize(0), 1, 1, input.getDimSize(3)},
      input.getElementType()));
}

static FailureOr<Type> inferFlattenType(const ShapeDiagnostics &diag,
                                    FlattenOp::Adaptor adaptor) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (input.getRank() < 2)
    return diag.fail("input must have a batch dimension and at least one "
                     "feature dimension, got ",
                     input);
  if (failed(diag.requireStatic("input", input)))
    return failure();
  int64_t features = 1;
  for (int64_t size : input.getShape().drop_front())
    features *= size;
  return Type(RankedTensorType::get(
      {input.getDimSize(0), features}, input.getElementType()));
}

//===----------------------------------------------------------------------===//
// LinearOp / SoftmaxCrossEntropyOp
//===----------------------------------------------------------------------===//

static FailureOr<Type> inferLinearType(const ShapeDiagnostics &diag,
                                    LinearOp::Adaptor adaptor) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto weight = cast<RankedTensorType>(adaptor.getWeight().getType());
  if (failed(diag.requireRank("input", input, 2, "[N, in_features]")) ||
      failed(diag.requireRank("weight", weight, 2,
                              "[out_features, in_features]")) ||
      failed(diag.requireSameElementType("weight", weight, "input", input)))
    return failure();
  if (weight.getDimSize(1) != input.getDimSize(1))
    return diag.fail("weight expects ", weight.getDimSize(1),
                     " input features but the input has ",
                     input.getDimSize(1));
  int64_t outFeatures = weight.getDimSize(0);
  if (Value bias = adaptor.getBias()) {
    if (failed(diag.requireVector("bias",
                                  cast<RankedTensorType>(bias.getType()),
                                  outFeatures, "input", input)))
      return failure();
  }
  return Type(RankedTensorType::get(
      {input.getDimSize(0), outFeatures}, input.getElementType()));
}

static FailureOr<Type> inferSoftmaxCrossEntropyType(const ShapeDiagnostics &diag,
                                    SoftmaxCrossEntropyOp::Adaptor adaptor) {
  auto logits = cast<RankedTensorType>(adaptor.getLogits().getType());
  auto labels = cast<RankedTensorType>(adaptor.getLabels().getType());
  if (failed(diag.requireRank("logits", logits, 2, "[N, classes]")) ||
      failed(diag.requireRank("labels", labels, 1, "[N]")))
    return failure();
  if (labels.getDimSize(0) != logits.getDimSize(0))
    return diag.fail("labels hold ", labels.getDimSize(0),
                     " entries but the logits have a batch of ",
                     logits.getDimSize(0));
  double smoothing = adaptor.getLabelSmoothing().convertToDouble();
  if (!(smoothing >= 0.0 && smoothing < 1.0))
    return diag.fail("label smoothing must be in [0, 1), got ", smoothing);
  return Type(
      RankedTensorType::get({}, Float32Type::get(logits.getContext())));
}

LogicalResult Conv2dOp::verify() {
  return verifyInferredResultType(*this, inferConv2dType);
}
LogicalResult BatchNormOp::verify() {
  return verifyInferredResultType(*this, inferBatchNormType);
}
LogicalResult MaxPool2dOp::verify() {
  return verifyInferredResultType(*this, inferPool2dType<MaxPool2dOp>);
}
LogicalResult AvgPool2dOp::verify() {
  return verifyInferredResultType(*this, inferPool2dType<AvgPool2dOp>);
}
LogicalResult GlobalAvgPoolOp::verify() {
  return verifyInferredResultType(*this, inferGlobalAvgPoolType);
}
LogicalResult FlattenOp::verify() {
  return verifyInferredResultType(*this, inferFlattenType);
}
LogicalResult LinearOp::verify() {
  return verifyInferredResultType(*this, inferLinearType);
}
LogicalResult SoftmaxCrossEntropyOp::verify() {
  return verifyInferredResultType(*this, inferSoftmaxCrossEntropyType);
}

#define GET_OP_CLASSES
#include "dialects/rn/RNOps.cpp.inc"
