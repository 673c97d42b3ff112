//===- RecomputeReluMask.cpp - cbr_backward's ReLU mask from conv_output ---===//
//
// Rewrites `rn.cbr_backward ... relu %result` whose %result is the ReLU
// result of the `rn.cbr_forward` that produced its conv_output, gamma and
// statistics into `relu_recompute %beta` (that forward's beta): the
// backward recomputes the mask from conv_output, which it reads anyway,
// instead of reading the ReLU result in both of its passes.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "rn-recompute-relu-mask"

namespace mlir::rn {
#define GEN_PASS_DEF_RECOMPUTERELUMASK
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;

namespace {

/// The cbr_forward whose ReLU result, conv_output, gamma and statistics
/// `backward` reads, or null: only then is its beta the one that the
/// forward normalized with.
CbrForwardOp forwardOf(CbrBackwardOp backward) {
  Value reluOutput = backward.getReluOutput();
  auto forward = reluOutput ? reluOutput.getDefiningOp<CbrForwardOp>() : CbrForwardOp();
  if (!forward || !forward.getRelu() || forward.getResult() != reluOutput ||
      forward.getConvOutput() != backward.getConvOutput() ||
      forward.getGamma() != backward.getGamma() ||
      forward.getBatchMean() != backward.getBatchMean() ||
      forward.getBatchInvStd() != backward.getBatchInvStd())
    return CbrForwardOp();
  return forward;
}

struct RecomputeReluMaskPass
    : public mlir::rn::impl::RecomputeReluMaskBase<RecomputeReluMaskPass> {
  using RecomputeReluMaskBase::RecomputeReluMaskBase;

  void runOnOperation() override {
    getOperation().walk([&](CbrBackwardOp backward) {
      if (!backward.getReluOutput())
        return;
      CbrForwardOp forward = forwardOf(backward);
      if (!forward) {
        LLVM_DEBUG(llvm::dbgs() << "kept the stored mask at " << backward.getLoc()
                                << ": relu_output is not its cbr_forward's result\n");
        ++numKept;
        return;
      }
      backward.getReluOutputMutable().clear();
      backward.getReluBetaMutable().assign(forward.getBeta());
      LLVM_DEBUG(llvm::dbgs() << "recomputed the mask at " << backward.getLoc() << "\n");
      ++numRecomputed;
    });
  }
};

} // namespace
