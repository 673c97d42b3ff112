//===- PadConvChannels.cpp - Zero-pad unaligned convolution inputs --------===//
//
// Gives a convolution whose f16/bf16 input has a channel count the tensor
// cores do not take (the 3-channel image stem) zero-padded copies of its
// input and filter (rn.pad_channels), for it and for its backward op, which
// accumulates the gradient of the filter's first channels only. The padded
// channels add zero to every output and get zero gradient, so the step
// computes what it computed before, with cuDNN's tensor-core kernels. The
// batch's cast, and the normalization of uint8 images, fold into the
// input's pad: one pass from the batch to the stem's input.
//
//===----------------------------------------------------------------------===//

#include "passes/ConvBackward.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "rn-pad-conv-channels"

namespace mlir::rn {
#define GEN_PASS_DEF_PADCONVCHANNELS
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;

namespace {

/// A forward convolution's input and filter operands and its attributes.
struct ConvOperands {
  Operation *op;
  Value input, filter;
  int64_t groups;
};

std::optional<ConvOperands> forwardConvolution(Operation *op) {
  if (auto conv = dyn_cast<Conv2dOp>(op))
    return ConvOperands{op, conv.getInput(), conv.getFilter(), int64_t(conv.getGroups())};
  if (auto cbr = dyn_cast<CbrForwardOp>(op))
    return ConvOperands{op, cbr.getInput(), cbr.getFilter(), int64_t(cbr.getGroups())};
  if (auto cbr = dyn_cast<CbrInferenceOp>(op))
    return ConvOperands{op, cbr.getInput(), cbr.getFilter(), int64_t(cbr.getGroups())};
  return std::nullopt;
}

/// A backward op of (`input`, `filter`) that computes no input gradient:
/// the only other reader the padded values may have.
bool isFilterOnlyBackward(Operation *op, Value input, Value filter) {
  return onConvBackward(op, false, [&](auto backward) {
    return backward.getInput() == input && backward.getFilter() == filter &&
           !backward.getInputGrad();
  });
}

/// A backward op that computes its input's gradient.
bool computesInputGrad(Operation *op) {
  return onConvBackward(op, false,
                        [](auto backward) { return bool(backward.getInputGrad()); });
}

/// `type` with its last dimension `channels`, and `element` as its element
/// type.
RankedTensorType withChannels(RankedTensorType type, int64_t channels, Type element) {
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = channels;
  return RankedTensorType::get(shape, element);
}

struct PadConvChannelsPass
    : public mlir::rn::impl::PadConvChannelsBase<PadConvChannelsPass> {
  using PadConvChannelsBase::PadConvChannelsBase;
  void runOnOperation() override;

private:
  /// The input channels `conv` is padded to (its own count: none).
  int64_t paddedChannels(const ConvOperands &conv) const;
  /// Why `conv` keeps its channels, or nothing when it is padded.
  std::optional<std::string> pad(const ConvOperands &conv);
};

} // namespace

int64_t PadConvChannelsPass::paddedChannels(const ConvOperands &conv) const {
  auto input = cast<RankedTensorType>(conv.input.getType());
  auto filter = cast<RankedTensorType>(conv.filter.getType());
  const int64_t channels = input.getShape().back();
  // An ImageNet-style stem: what cuDNN's image first-layer kernels take.
  ArrayRef<int64_t> strides = cast<DenseI64ArrayAttr>(conv.op->getAttr("strides")).asArrayRef();
  if (imageStemChannels > 0 && channels <= imageStemChannels && filter.getRank() == 4 &&
      filter.getDimSize(1) >= 7 && filter.getDimSize(2) >= 7 && strides.size() == 2 &&
      strides[0] == 2 && strides[1] == 2)
    return imageStemChannels;
  if (channelMultiple <= 1)
    return channels;
  return llvm::divideCeil(channels, channelMultiple) * channelMultiple;
}

std::optional<std::string> PadConvChannelsPass::pad(const ConvOperands &conv) {
  auto input = cast<RankedTensorType>(conv.input.getType());
  auto filter = cast<RankedTensorType>(conv.filter.getType());
  [[maybe_unused]] int64_t channels = input.getShape().back(); // debug output
  int64_t padded = paddedChannels(conv);
  if (conv.groups != 1)
    return std::string("it has ") + std::to_string(conv.groups) + " groups";
  for (Value value : {conv.input, conv.filter})
    for (Operation *user : value.getUsers())
      if (user != conv.op && !isFilterOnlyBackward(user, conv.input, conv.filter))
        return "its " + std::string(value == conv.input ? "input" : "filter") +
               " is also read by " + user->getName().getStringRef().str() +
               " (only its own backward, without an input gradient, may read it)";

  // The forward op and its backward ops, taken before the pads read the
  // input too.
  SmallVector<Operation *> readers = llvm::to_vector(conv.input.getUsers());
  OpBuilder builder(conv.op);
  Location loc = conv.op->getLoc();
  // The batch's cast to f16 folds into the pad, which converts as it copies.
  Value source = conv.input;
  auto batchCast = conv.input.getDefiningOp<CastOp>();
  bool foldCast = batchCast && batchCast.getInput().getType().hasStaticShape();
  if (foldCast)
    source = batchCast.getInput();
  // uint8 images: their normalization folds into the pad too, which then
  // reads the bytes and writes normalized, converted, padded values.
  auto normalize = source.getDefiningOp<NormalizeImagesOp>();
  Value mean, std;
  if (normalize) {
    source = normalize.getInput();
    mean = normalize.getMean();
    std = normalize.getStd();
  }
  // The input's pad comes first: rn-partition puts it with the first layer
  // (it reads the batch), then the filter's, whose readers read the batch.
  Value paddedInput = PadChannelsOp::create(
      builder, loc, withChannels(input, padded, input.getElementType()), source, mean, std);
  Value paddedFilter = PadChannelsOp::create(
      builder, loc, withChannels(filter, padded, filter.getElementType()), conv.filter,
      Value(), Value());
  llvm::SmallPtrSet<Operation *, 4> uniqueReaders(readers.begin(), readers.end());
  for (Operation *reader : uniqueReaders)
    for (OpOperand &operand : reader->getOpOperands()) {
      if (operand.get() == conv.input)
        operand.set(paddedInput);
      else if (operand.get() == conv.filter)
        operand.set(paddedFilter);
    }
  if (foldCast && batchCast->use_empty())
    batchCast->erase();
  if (normalize && normalize->use_empty())
    normalize->erase();
  LLVM_DEBUG(llvm::dbgs() << "padded " << conv.op->getName() << " at " << loc << ": "
                          << channels << " -> " << padded << " input channels"
                          << (foldCast ? " (the cast folded into the pad)" : "")
                          << (normalize ? " (the normalization folded into the pad)" : "")
                          << "\n");
  return std::nullopt;
}

void PadConvChannelsPass::runOnOperation() {
  if (channelMultiple <= 1)
    return;
  SmallVector<ConvOperands> candidates;
  getOperation().walk([&](Operation *op) {
    std::optional<ConvOperands> conv = forwardConvolution(op);
    if (!conv)
      return;
    auto input = cast<RankedTensorType>(conv->input.getType());
    Type element = input.getElementType();
    if ((element.isF16() || element.isBF16()) && input.hasStaticShape() &&
        input.getRank() == 4 && paddedChannels(*conv) != input.getShape().back())
      candidates.push_back(*conv);
  });
  for (const ConvOperands &conv : candidates) {
    // A layer whose input needs a gradient (an interior layer) is no stem:
    // its padded input gradient would need slicing, and such layers are not
    // what the pass is for, so they stay as they are without a remark.
    if (llvm::any_of(conv.input.getUsers(), computesInputGrad))
      continue;
    if (std::optional<std::string> reason = pad(conv)) {
      ++numSkipped;
      conv.op->emitRemark("input channels left unpadded: ") << *reason;
      continue;
    }
    ++numPadded;
  }
}
