//===- RNShapes.h - Shape rules shared by rn op verifiers -------*- C++ -*-===//
//
// Forward ops and their backward ops obey the same shape rules (a conv2d
// backward checks its output gradient against the conv2d it differentiates),
// so the rules live here, as functions of types and attributes.
//
//===----------------------------------------------------------------------===//

#ifndef RN_DIALECTS_RN_RNSHAPES_H
#define RN_DIALECTS_RN_RNSHAPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"

namespace mlir::rn::shapes {

/// Reports shape errors of one op; messages read like emitOpError's. Without
/// a location (type inference in builders) it stays silent.
class ShapeDiagnostics {
public:
  ShapeDiagnostics(std::optional<Location> loc, StringRef opName)
      : loc(loc), opName(opName) {}
  explicit ShapeDiagnostics(Operation *op)
      : loc(op->getLoc()), opName(op->getName().getStringRef()) {}

  template <typename... Args>
  LogicalResult fail(Args &&...args) const {
    return emitOptionalError(loc, "'", opName, "' op ",
                             std::forward<Args>(args)...);
  }

  /// `type` is statically shaped with rank `rank`; `what` names the operand
  /// and `layout` says what its dimensions mean.
  LogicalResult requireRank(StringRef what, RankedTensorType type,
                            int64_t rank, StringRef layout) const;
  LogicalResult requireStatic(StringRef what, RankedTensorType type) const;
  LogicalResult requireSameElementType(StringRef what, RankedTensorType type,
                                       StringRef refWhat,
                                       RankedTensorType ref) const;
  /// A per-output-channel vector (a bias): [channels] of the reference's
  /// element type.
  LogicalResult requireVector(StringRef what, RankedTensorType type,
                              int64_t channels, StringRef refWhat,
                              RankedTensorType ref) const;
  /// `type` equals `expected`, which the op's shape rule computed.
  LogicalResult requireType(StringRef what, Type type, Type expected) const;

private:
  std::optional<Location> loc;
  StringRef opName;
};

/// A named operand or result type, for messages.
using NamedType = std::pair<StringRef, Type>;

/// Every named type equals `reference`'s.
LogicalResult requireSameTypes(const ShapeDiagnostics &diag,
                               NamedType reference, ArrayRef<NamedType> others);

/// `value` in [low, high] (or [low, high) unless `highInclusive`); numbers
/// print as %g ("0.9", "1").
LogicalResult requireInRange(const ShapeDiagnostics &diag, StringRef what,
                             double value, double low, double high,
                             bool highInclusive);

/// The input of a stochastic depth: a batch dimension (dimension 0) whose
/// samples are kept or dropped whole.
LogicalResult verifySampleBatch(const ShapeDiagnostics &diag,
                                RankedTensorType input);

/// A stochastic depth's mask: one f32 scale per sample of `input`,
/// tensor<N x f32>.
LogicalResult verifySampleMask(const ShapeDiagnostics &diag,
                               RankedTensorType input, RankedTensorType mask);

/// The bounds of a hardtanh (and of its backward): finite, min_val below
/// max_val (PyTorch's Hardtanh asserts the same).
LogicalResult verifyClampBounds(const ShapeDiagnostics &diag, double minVal,
                                double maxVal);

/// The operands of a channel_mul (and of its backward): `input` NHWC and
/// `scale` [N, 1, 1, C] of the input's element type.
LogicalResult verifyChannelScale(const ShapeDiagnostics &diag,
                                 RankedTensorType input,
                                 RankedTensorType scale);

/// The operands of an input normalization (rn.normalize_images, a
/// normalizing rn.pad_channels): `input` uint8 NHWC, `mean` and `std`
/// [C] f32 for its C channels.
LogicalResult verifyImageNormalization(const ShapeDiagnostics &diag,
                                       RankedTensorType input,
                                       RankedTensorType mean,
                                       RankedTensorType std);

/// Result of a convolution; `bias` may be null.
FailureOr<RankedTensorType>
inferConv2d(const ShapeDiagnostics &diag, RankedTensorType input,
            RankedTensorType filter, RankedTensorType bias,
            ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
            ArrayRef<int64_t> dilation, int64_t groups);

/// The weight-gradient accumulator of a convolution's backward: the filter's
/// type, or, for a filter whose input channels rn-pad-conv-channels padded
/// with zeros (groups 1), the filter's type with fewer channels: the
/// gradient of the first ones, the padding's being dropped.
LogicalResult verifyFilterGradAcc(const ShapeDiagnostics &diag,
                                  RankedTensorType filterGradAcc,
                                  RankedTensorType filter, int64_t groups);
/// The addend of a backward op's input gradient (`plus`): only with
/// `input_grad`, and of the input's type.
LogicalResult verifyInputGradAddend(const ShapeDiagnostics &diag, Value addend,
                                    RankedTensorType input, bool inputGrad);
/// Result of max or average pooling; `ceilMode` is PyTorch's ceil_mode
/// (the output size rounds up, the last window starting inside the input
/// or its left padding).
FailureOr<RankedTensorType> inferPool2d(const ShapeDiagnostics &diag,
                                        RankedTensorType input,
                                        ArrayRef<int64_t> kernel,
                                        ArrayRef<int64_t> strides,
                                        ArrayRef<int64_t> padding,
                                        bool ceilMode);

/// The types of an adaptive average pooling: `input` [N, H, W, C] and
/// `output` [N, OH, OW, C] of its element type, OH and OW positive.
LogicalResult verifyAdaptivePool(const ShapeDiagnostics &diag,
                                 StringRef inputWhat, RankedTensorType input,
                                 StringRef outputWhat, RankedTensorType output);

FailureOr<RankedTensorType> inferGlobalAvgPool(const ShapeDiagnostics &diag,
                                               RankedTensorType input);

/// Result of a fully connected layer; `bias` may be null.
FailureOr<RankedTensorType> inferLinear(const ShapeDiagnostics &diag,
                                        RankedTensorType input,
                                        RankedTensorType weight,
                                        RankedTensorType bias);

/// The operands of a batch normalization: `input` is NHWC or [N, C] and each
/// named vector is [C]. Vectors share the input's element type, or are f32
/// when `allowF32Vectors` (mixed precision keeps BN parameters in f32).
LogicalResult
verifyBatchNormOperands(const ShapeDiagnostics &diag, RankedTensorType input,
                        ArrayRef<std::pair<StringRef, Type>> vectors,
                        bool allowF32Vectors);

/// The statistics a training-mode batch normalization of `normalized`
/// saves: [C] f32 mean and inverse standard deviation.
LogicalResult verifySavedStatistics(const ShapeDiagnostics &diag,
                                    RankedTensorType normalized,
                                    Value batchMean, Value batchInvStd);

/// A concatenation along the last dimension: `whole` (NHWC or [N, C]) is
/// the slices joined in order. Two or more slices, each of `whole`'s rank,
/// element type and leading dimensions, with at least one channel; their
/// channels add up to `whole`'s. `sliceWhat` names a slice in messages
/// ("input", "result"), with its index appended.
LogicalResult verifyChannelSlices(const ShapeDiagnostics &diag,
                                  StringRef wholeWhat, RankedTensorType whole,
                                  StringRef sliceWhat, TypeRange slices);

/// logits [N, classes] with labels [N].
LogicalResult verifyLogitsAndLabels(const ShapeDiagnostics &diag,
                                    RankedTensorType logits,
                                    RankedTensorType labels);

/// epsilon > 0 and, where given, momentum in [0, 1].
LogicalResult verifyBatchNormAttributes(const ShapeDiagnostics &diag,
                                        double epsilon,
                                        std::optional<double> momentum);

} // namespace mlir::rn::shapes

#endif // RN_DIALECTS_RN_RNSHAPES_H
