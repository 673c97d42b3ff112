//===- RNShapes.cpp - Shape rules shared by rn op verifiers ---------------===//

#include "dialects/rn/RNShapes.h"

#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace mlir::rn::shapes;

LogicalResult ShapeDiagnostics::requireRank(StringRef what,
                                            RankedTensorType type,
                                            int64_t rank,
                                            StringRef layout) const {
  if (type.getRank() != rank)
    return fail(what, " must be ", layout, " (rank ", rank, "), got ", type);
  return requireStatic(what, type);
}

LogicalResult ShapeDiagnostics::requireStatic(StringRef what,
                                              RankedTensorType type) const {
  if (!type.hasStaticShape())
    return fail(what, " must have a static shape, got ", type);
  return success();
}

LogicalResult ShapeDiagnostics::requireSameElementType(
    StringRef what, RankedTensorType type, StringRef refWhat,
    RankedTensorType ref) const {
  if (type.getElementType() != ref.getElementType())
    return fail("element type mismatch: ", what, " is ", type.getElementType(),
                " but ", refWhat, " is ", ref.getElementType());
  return success();
}

LogicalResult ShapeDiagnostics::requireVector(StringRef what,
                                              RankedTensorType type,
                                              int64_t channels,
                                              StringRef refWhat,
                                              RankedTensorType ref) const {
  if (type.getRank() != 1 || type.getDimSize(0) != channels)
    return fail(what, " must be [", channels,
                "] (one per output channel), got ", type);
  return requireSameElementType(what, type, refWhat, ref);
}

LogicalResult ShapeDiagnostics::requireType(StringRef what, Type type,
                                            Type expected) const {
  if (type != expected)
    return fail(what, " type ", type, " differs from the expected type ",
                expected);
  return success();
}

namespace {
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

FailureOr<RankedTensorType>
mlir::rn::shapes::inferConv2d(const ShapeDiagnostics &diag,
                              RankedTensorType input, RankedTensorType filter,
                              RankedTensorType bias, ArrayRef<int64_t> strides,
                              ArrayRef<int64_t> padding,
                              ArrayRef<int64_t> dilation, int64_t groups) {
  if (failed(diag.requireRank("input", input, 4, "NHWC")) ||
      failed(diag.requireRank("filter", filter, 4, "OHWI")) ||
      failed(diag.requireSameElementType("filter", filter, "input", input)))
    return failure();

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
  if (bias && failed(diag.requireVector("bias", bias, outChannels, "input",
                                        input)))
    return failure();

  WindowParams window{filter.getShape().slice(1, 2), strides, padding,
                      dilation};
  FailureOr<SmallVector<int64_t, 2>> spatial =
      inferWindowOutput(diag, input.getShape().slice(1, 2), window);
  if (failed(spatial))
    return failure();
  return RankedTensorType::get(
      {input.getDimSize(0), (*spatial)[0], (*spatial)[1], outChannels},
      input.getElementType());
}

LogicalResult mlir::rn::shapes::verifyFilterGradAcc(
    const ShapeDiagnostics &diag, RankedTensorType filterGradAcc,
    RankedTensorType filter, int64_t groups) {
  if (filterGradAcc == filter)
    return success();
  bool firstChannels =
      groups == 1 && filterGradAcc.getElementType() == filter.getElementType() &&
      filterGradAcc.hasStaticShape() && filter.hasStaticShape() &&
      filterGradAcc.getRank() == 4 && filter.getRank() == 4 &&
      filterGradAcc.getShape().drop_back() == filter.getShape().drop_back() &&
      filterGradAcc.getShape().back() < filter.getShape().back();
  if (firstChannels)
    return success();
  return diag.fail("filter_grad_acc type ", Type(filterGradAcc),
                   " must be the filter's type ", Type(filter),
                   " or, with groups 1, that of its first input channels");
}

LogicalResult mlir::rn::shapes::verifyInputGradAddend(const ShapeDiagnostics &diag,
                                                     Value addend,
                                                     RankedTensorType input,
                                                     bool inputGrad) {
  if (!addend)
    return success();
  if (!inputGrad)
    return diag.fail("has an input gradient addend ('plus') but no input_grad");
  return diag.requireType("input gradient addend", addend.getType(), input);
}

LogicalResult mlir::rn::shapes::verifyClampBounds(const ShapeDiagnostics &diag,
                                                  double minVal, double maxVal) {
  if (std::isfinite(minVal) && std::isfinite(maxVal) && minVal < maxVal)
    return success();
  std::string message;
  llvm::raw_string_ostream os(message);
  os << "min_val must be below max_val (both finite), got min_val "
     << llvm::format("%g", minVal) << " and max_val "
     << llvm::format("%g", maxVal);
  return diag.fail(message);
}

LogicalResult mlir::rn::shapes::verifyChannelScale(const ShapeDiagnostics &diag,
                                                   RankedTensorType input,
                                                   RankedTensorType scale) {
  if (failed(diag.requireRank("input", input, 4, "NHWC")) ||
      failed(diag.requireSameElementType("scale", scale, "input", input)))
    return failure();
  auto expected = RankedTensorType::get(
      {input.getDimSize(0), 1, 1, input.getDimSize(3)}, input.getElementType());
  if (scale != expected)
    return diag.fail("scale must be [N, 1, 1, C] of the input ", input,
                     ", that is ", expected, ", got ", scale);
  return success();
}

LogicalResult mlir::rn::shapes::verifyChannelSlices(
    const ShapeDiagnostics &diag, StringRef wholeWhat, RankedTensorType whole,
    StringRef sliceWhat, TypeRange slices) {
  int64_t rank = whole.getRank();
  if (rank != 2 && rank != 4)
    return diag.fail(wholeWhat, " must be NHWC (rank 4) or [N, C] (rank 2), got ",
                     whole);
  if (failed(diag.requireStatic(wholeWhat, whole)))
    return failure();
  if (slices.size() < 2)
    return diag.fail("expects at least 2 ", sliceWhat, "s, got ",
                     slices.size());
  int64_t channels = 0;
  for (auto [index, type] : llvm::enumerate(slices)) {
    auto slice = cast<RankedTensorType>(type);
    std::string what = (sliceWhat + " #" + Twine(index)).str();
    if (slice.getRank() != rank)
      return diag.fail(what, " must have rank ", rank, " as ", wholeWhat,
                       " ", whole, ", got ", slice);
    if (failed(diag.requireStatic(what, slice)) ||
        failed(diag.requireSameElementType(what, slice, wholeWhat, whole)))
      return failure();
    if (slice.getShape().drop_back() != whole.getShape().drop_back())
      return diag.fail(what, " ", slice,
                       " must match all but the last dimension of ", wholeWhat,
                       " ", whole);
    if (slice.getShape().back() < 1)
      return diag.fail(what, " must have at least one channel, got ", slice);
    channels += slice.getShape().back();
  }
  if (channels != whole.getShape().back())
    return diag.fail("the ", sliceWhat, "s' channels add up to ", channels,
                     ", but ", wholeWhat, " ", whole, " has ",
                     whole.getShape().back());
  return success();
}

LogicalResult mlir::rn::shapes::verifyImageNormalization(
    const ShapeDiagnostics &diag, RankedTensorType input, RankedTensorType mean,
    RankedTensorType std) {
  if (failed(diag.requireRank("input", input, 4, "NHWC")))
    return failure();
  if (!input.getElementType().isUnsignedInteger(8))
    return diag.fail("input must be uint8 (ui8) images, got ", input);
  int64_t channels = input.getDimSize(3);
  for (auto [what, type] : {NamedType{"mean", mean}, NamedType{"std", std}}) {
    auto vector = cast<RankedTensorType>(type);
    if (vector.getRank() != 1 || vector.getDimSize(0) != channels ||
        !vector.getElementType().isF32())
      return diag.fail(what, " must be [", channels,
                       "] f32 (one per channel of the input ", input, "), got ",
                       vector);
  }
  return success();
}

FailureOr<RankedTensorType> mlir::rn::shapes::inferPool2d(
    const ShapeDiagnostics &diag, RankedTensorType input,
    ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
    ArrayRef<int64_t> padding, bool ceilMode) {
  if (failed(diag.requireRank("input", input, 4, "NHWC")))
    return failure();
  static constexpr int64_t noDilation[] = {1, 1};
  WindowParams window{kernel, strides, padding, noDilation};
  FailureOr<SmallVector<int64_t, 2>> spatial =
      inferWindowOutput(diag, input.getShape().slice(1, 2), window);
  if (failed(spatial))
    return failure();
  // PyTorch's rule: a pad wider than half the window would make windows of
  // padding only.
  for (int dim = 0; dim < 2; ++dim)
    if (padding[dim] * 2 > kernel[dim])
      return diag.fail("padding ", padding[dim],
                       " exceeds half the kernel size ", kernel[dim]);
  // PyTorch's ceil_mode (pooling_output_shape): round up, then drop a last
  // window that would start past the input and its left padding.
  if (ceilMode)
    for (int dim = 0; dim < 2; ++dim) {
      int64_t size = input.getDimSize(1 + dim);
      int64_t span = size + 2 * padding[dim] - kernel[dim];
      int64_t out = (span + strides[dim] - 1) / strides[dim] + 1;
      if ((out - 1) * strides[dim] >= size + padding[dim])
        --out;
      (*spatial)[dim] = out;
    }
  return RankedTensorType::get(
      {input.getDimSize(0), (*spatial)[0], (*spatial)[1], input.getDimSize(3)},
      input.getElementType());
}

LogicalResult mlir::rn::shapes::verifyAdaptivePool(const ShapeDiagnostics &diag,
                                                   StringRef inputWhat,
                                                   RankedTensorType input,
                                                   StringRef outputWhat,
                                                   RankedTensorType output) {
  if (failed(diag.requireRank(inputWhat, input, 4, "NHWC")) ||
      failed(diag.requireRank(outputWhat, output, 4, "NHWC")) ||
      failed(diag.requireSameElementType(outputWhat, output, inputWhat, input)))
    return failure();
  if (output.getDimSize(0) != input.getDimSize(0) ||
      output.getDimSize(3) != input.getDimSize(3))
    return diag.fail(outputWhat, " ", output, " must keep the batch and the channels of the ",
                     inputWhat, " ", input);
  if (output.getDimSize(1) < 1 || output.getDimSize(2) < 1 ||
      input.getDimSize(1) < 1 || input.getDimSize(2) < 1)
    return diag.fail("the spatial sizes of ", inputWhat, " ", input, " and ",
                     outputWhat, " ", output, " must be positive");
  return success();
}

FailureOr<RankedTensorType>
mlir::rn::shapes::inferGlobalAvgPool(const ShapeDiagnostics &diag,
                                     RankedTensorType input) {
  if (failed(diag.requireRank("input", input, 4, "NHWC")))
    return failure();
  return RankedTensorType::get({input.getDimSize(0), 1, 1, input.getDimSize(3)},
                               input.getElementType());
}

FailureOr<RankedTensorType> mlir::rn::shapes::inferLinear(
    const ShapeDiagnostics &diag, RankedTensorType input,
    RankedTensorType weight, RankedTensorType bias) {
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
  if (bias &&
      failed(diag.requireVector("bias", bias, outFeatures, "input", input)))
    return failure();
  return RankedTensorType::get({input.getDimSize(0), outFeatures},
                               input.getElementType());
}

LogicalResult mlir::rn::shapes::verifyBatchNormOperands(
    const ShapeDiagnostics &diag, RankedTensorType input,
    ArrayRef<std::pair<StringRef, Type>> vectors, bool allowF32Vectors) {
  if (input.getRank() != 2 && input.getRank() != 4)
    return diag.fail("input must be NHWC (rank 4) or [N, C] (rank 2), got ",
                     input);
  if (failed(diag.requireStatic("input", input)))
    return failure();
  int64_t channels = input.getShape().back();
  for (auto [what, valueType] : vectors) {
    auto type = cast<RankedTensorType>(valueType);
    if (type.getRank() != 1 || type.getDimSize(0) != channels)
      return diag.fail(what, " must be [", channels,
                       "] (one per channel), got ", type);
    if (allowF32Vectors && type.getElementType().isF32())
      continue;
    if (failed(diag.requireSameElementType(what, type, "input", input)))
      return failure();
  }
  return success();
}

LogicalResult
mlir::rn::shapes::verifyBatchNormAttributes(const ShapeDiagnostics &diag,
                                            double epsilon,
                                            std::optional<double> momentum) {
  if (!(epsilon > 0.0) || !std::isfinite(epsilon))
    return diag.fail("epsilon must be positive, got ", epsilon);
  if (momentum && !(*momentum >= 0.0 && *momentum <= 1.0))
    return diag.fail("momentum must be in [0, 1], got ", *momentum);
  return success();
}

LogicalResult
mlir::rn::shapes::verifyLogitsAndLabels(const ShapeDiagnostics &diag,
                                        RankedTensorType logits,
                                        RankedTensorType labels) {
  if (failed(diag.requireRank("logits", logits, 2, "[N, classes]")) ||
      failed(diag.requireRank("labels", labels, 1, "[N]")))
    return failure();
  if (labels.getDimSize(0) != logits.getDimSize(0))
    return diag.fail("labels hold ", labels.getDimSize(0),
                     " entries but the logits have a batch of ",
                     logits.getDimSize(0));
  return success();
}

LogicalResult mlir::rn::shapes::verifySavedStatistics(
    const ShapeDiagnostics &diag, RankedTensorType normalized, Value batchMean,
    Value batchInvStd) {
  auto expected = RankedTensorType::get({normalized.getShape().back()},
                                        Float32Type::get(normalized.getContext()));
  if (failed(diag.requireType("batch_mean", batchMean.getType(), expected)))
    return failure();
  return diag.requireType("batch_inv_std", batchInvStd.getType(), expected);
}

LogicalResult mlir::rn::shapes::requireSameTypes(const ShapeDiagnostics &diag,
                                                 NamedType reference,
                                                 ArrayRef<NamedType> others) {
  for (auto [what, type] : others)
    if (type != reference.second)
      return diag.fail(what, " type ", type, " differs from ", reference.first,
                       " type ", reference.second);
  return success();
}

LogicalResult mlir::rn::shapes::requireInRange(const ShapeDiagnostics &diag,
                                               StringRef what, double value,
                                               double low, double high,
                                               bool highInclusive) {
  bool ok = value >= low && (highInclusive ? value <= high : value < high);
  if (ok && std::isfinite(value))
    return success();
  std::string message;
  llvm::raw_string_ostream os(message);
  os << what << " must be in [" << llvm::format("%g", low) << ", "
     << llvm::format("%g", high) << (highInclusive ? "]" : ")") << ", got "
     << llvm::format("%g", value);
  return diag.fail(message);
}

LogicalResult mlir::rn::shapes::verifySampleBatch(const ShapeDiagnostics &diag,
                                                  RankedTensorType input) {
  if (input.getRank() < 1)
    return diag.fail("input must have a batch dimension, got ", input);
  return success();
}

LogicalResult mlir::rn::shapes::verifySampleMask(const ShapeDiagnostics &diag,
                                                 RankedTensorType input,
                                                 RankedTensorType mask) {
  if (failed(verifySampleBatch(diag, input)))
    return failure();
  auto expected = RankedTensorType::get({input.getDimSize(0)},
                                        Float32Type::get(input.getContext()));
  if (mask != expected)
    return diag.fail("mask must be ", expected,
                     " (one f32 scale per sample of ", input, "), got ", mask);
  return success();
}
