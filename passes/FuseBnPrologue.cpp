//===- FuseBnPrologue.cpp - BN apply + ReLU into the readers' prologue ----===//
//
// Rewrites an f16 `rn.cbr_forward` P with `relu` whose ReLU result only
// convolutions read (cbr_forward ops R with one group, the backward ops of
// those R, and P's own backward for its mask) into `rn.conv_bn_stats` (the
// convolution and its statistics) and `rn.bn_scale_bias` (the apply's
// per-channel scale and bias): each R applies the batch norm and ReLU to
// P's conv_output in its prologue, R's backward computes its filter
// gradient through the same prologue, and P's backward recomputes its ReLU
// mask in the prologue's rounding. The ReLU result is no longer stored.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "rn-fuse-bn-prologue"

namespace mlir::rn {
#define GEN_PASS_DEF_FUSEBNPROLOGUE
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;

namespace {

/// The readers of a cbr_forward's ReLU result, by what they become.
struct Readers {
  /// cbr_forward ops reading it as their input: they take `prologue`.
  SmallVector<CbrForwardOp> forwards;
  /// The backward ops of those: they take `input_prologue`.
  SmallVector<CbrBackwardOp> backwards;
  /// The forward's own backward ops (ReLU mask from the result, or already
  /// recomputed from beta): they take `relu_recompute %beta prologue_mask`.
  SmallVector<CbrBackwardOp> ownBackwards;
};

/// `backward` differentiates the convolution of `forward`.
bool isBackwardOf(CbrBackwardOp backward, CbrForwardOp forward) {
  return backward.getFilter() == forward.getFilter() &&
         backward.getStridesAttr() == forward.getStridesAttr() &&
         backward.getPaddingAttr() == forward.getPaddingAttr() &&
         backward.getDilationAttr() == forward.getDilationAttr() &&
         backward.getGroupsAttr() == forward.getGroupsAttr();
}

/// `backward` differentiates the batch norm of `forward`: it reads its
/// conv_output, gamma and statistics, so that `forward`'s beta gives its
/// mask.
bool isBatchNormBackwardOf(CbrBackwardOp backward, CbrForwardOp forward) {
  return backward.getConvOutput() == forward.getConvOutput() &&
         backward.getGamma() == forward.getGamma() &&
         backward.getBatchMean() == forward.getBatchMean() &&
         backward.getBatchInvStd() == forward.getBatchInvStd();
}

/// `use` is one of the operands of `range` (an optional operand's).
bool isOperandOf(OpOperand &use, MutableOperandRange range) {
  return llvm::any_of(range,
                      [&](OpOperand &operand) { return &operand == &use; });
}

/// "rn.add" as a remark says it.
std::string describe(Operation *op) {
  return "'" + op->getName().getStringRef().str() + "'";
}

/// Fills `readers` with the readers of `forward`'s ReLU result, or returns
/// why some reader cannot take the prologue.
std::optional<std::string> collectReaders(CbrForwardOp forward,
                                          Readers &readers) {
  Value result = forward.getResult();
  SmallVector<CbrBackwardOp> inputReaders;
  for (OpOperand &use : result.getUses()) {
    Operation *user = use.getOwner();
    if (auto reader = dyn_cast<CbrForwardOp>(user);
        reader && &use == &reader.getInputMutable()) {
      if (reader.getGroups() != 1)
        return "the ReLU result is also read by an 'rn.cbr_forward' with " +
               std::to_string(reader.getGroups()) +
               " groups (the prologue takes one)";
      if (reader.getPrologueScale())
        return std::string("the ReLU result is also read by an "
                           "'rn.cbr_forward' that has a prologue");
      readers.forwards.push_back(reader);
      continue;
    }
    if (auto backward = dyn_cast<CbrBackwardOp>(user)) {
      if (isOperandOf(use, backward.getReluOutputMutable()) &&
          isBatchNormBackwardOf(backward, forward)) {
        readers.ownBackwards.push_back(backward);
        continue;
      }
      if (&use == &backward.getInputMutable() && !backward.getInputScale()) {
        inputReaders.push_back(backward);
        continue;
      }
    }
    return "the ReLU result is also read by " + describe(user);
  }
  if (readers.forwards.empty())
    return std::string("no 'rn.cbr_forward' reads the ReLU result");
  for (CbrBackwardOp backward : inputReaders) {
    if (llvm::none_of(readers.forwards, [&](CbrForwardOp reader) {
          return isBackwardOf(backward, reader);
        }))
      return std::string("the ReLU result is also the input of an "
                         "'rn.cbr_backward' of no convolution that reads it");
    readers.backwards.push_back(backward);
  }
  // A backward whose mask rn-recompute-relu-mask already recomputes from
  // the forward's beta reads the conv output instead.
  for (Operation *user : forward.getConvOutput().getUsers()) {
    auto backward = dyn_cast<CbrBackwardOp>(user);
    if (backward && backward.getReluBeta() == forward.getBeta() &&
        isBatchNormBackwardOf(backward, forward) &&
        !llvm::is_contained(readers.ownBackwards, backward))
      readers.ownBackwards.push_back(backward);
  }
  return std::nullopt;
}

/// `forward` -> conv_bn_stats + bn_scale_bias, its readers given the
/// prologue.
void rewrite(CbrForwardOp forward, const Readers &readers) {
  OpBuilder builder(forward);
  Location loc = forward.getLoc();
  auto stats = ConvBnStatsOp::create(
      builder, loc, forward.getConvOutput().getType(),
      forward.getBatchMean().getType(), forward.getBatchInvStd().getType(),
      forward.getInput(), forward.getFilter(), forward.getPrologueScale(),
      forward.getPrologueBias(), forward.getStridesAttr(),
      forward.getPaddingAttr(), forward.getDilationAttr(),
      forward.getGroupsAttr(), forward.getEpsilonAttr());
  auto vector = RankedTensorType::get(
      {forward.getConvOutput().getType().getShape().back()},
      builder.getF16Type());
  auto scaleBias = BnScaleBiasOp::create(
      builder, loc, vector, vector, stats.getBatchMean(),
      stats.getBatchInvStd(), forward.getGamma(), forward.getBeta());
  Value convOutput = stats.getConvOutput();
  Value scale = scaleBias.getScale(), bias = scaleBias.getBias();

  for (CbrForwardOp reader : readers.forwards) {
    reader.getInputMutable().assign(convOutput);
    reader.getPrologueScaleMutable().assign(scale);
    reader.getPrologueBiasMutable().assign(bias);
  }
  for (CbrBackwardOp backward : readers.backwards) {
    backward.getInputMutable().assign(convOutput);
    backward.getInputScaleMutable().assign(scale);
    backward.getInputBiasMutable().assign(bias);
  }
  for (CbrBackwardOp backward : readers.ownBackwards) {
    if (backward.getReluOutput()) {
      backward.getReluOutputMutable().clear();
      backward.getReluBetaMutable().assign(forward.getBeta());
    }
    backward.setPrologueMask(true);
  }
  forward.getConvOutput().replaceAllUsesWith(convOutput);
  forward.getBatchMean().replaceAllUsesWith(stats.getBatchMean());
  forward.getBatchInvStd().replaceAllUsesWith(stats.getBatchInvStd());
  assert(forward.getResult().use_empty() && "the ReLU result is still read");
  forward.erase();
}

struct FuseBnProloguePass
    : public mlir::rn::impl::FuseBnPrologueBase<FuseBnProloguePass> {
  using FuseBnPrologueBase::FuseBnPrologueBase;

  void runOnOperation() override {
    // Program order: a reader given a prologue is visited after its
    // producer and may then become a conv_bn_stats itself.
    SmallVector<CbrForwardOp> candidates;
    getOperation().walk([&](CbrForwardOp forward) {
      if (forward.getRelu())
        candidates.push_back(forward);
    });
    for (CbrForwardOp forward : candidates) {
      Type element = forward.getResult().getType().getElementType();
      Readers readers;
      std::optional<std::string> reason;
      if (!element.isF16()) {
        std::string name;
        llvm::raw_string_ostream(name) << element;
        reason = "the activations are " + name +
                 " (the prologue takes f16 scale and bias)";
      } else {
        reason = collectReaders(forward, readers);
      }
      if (reason) {
        ++numKept;
        forward.emitRemark("not moving the batch norm apply into a "
                           "prologue: ")
            << *reason;
        LLVM_DEBUG(llvm::dbgs() << "kept at " << forward.getLoc() << ": "
                                << *reason << "\n");
        continue;
      }
      LLVM_DEBUG(llvm::dbgs()
                 << "fused at " << forward.getLoc() << ": "
                 << readers.forwards.size() << " readers, "
                 << readers.backwards.size() << " reader backward ops, "
                 << readers.ownBackwards.size() << " own backward ops\n");
      ++numFused;
      numReaders += readers.forwards.size();
      rewrite(forward, readers);
    }
  }
};

} // namespace
