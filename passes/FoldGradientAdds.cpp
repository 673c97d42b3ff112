//===- FoldGradientAdds.cpp - Residual gradient sums into the dgrad -------===//
//
// Rewrites `rn.add %a, %b`, where %b (or %a) is the input gradient of a
// conv2d_backward or cbr_backward that nothing else reads and the other
// term is defined before that op, into that op's input gradient addend
// (`plus`): the data gradient's epilogue computes the sum, and the add's
// pass over the activations goes away.
//
//===----------------------------------------------------------------------===//

#include "passes/ConvBackward.h"
#include "passes/Passes.h"

#include "llvm/Support/Debug.h"

#include <algorithm>

#define DEBUG_TYPE "rn-fold-gradient-adds"

namespace mlir::rn {
#define GEN_PASS_DEF_FOLDGRADIENTADDS
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;

namespace {

/// The largest stride of a conv2d_backward or cbr_backward.
int64_t maxStrideOf(Operation *op) {
  return onConvBackward(op, int64_t(1), [](auto backward) {
    int64_t largest = 1;
    for (int64_t s : backward.getStrides())
      largest = std::max(largest, s);
    return largest;
  });
}

/// The backward op whose input gradient `value` is, when it can take an
/// addend: `value` is read once (by the add) and the op has no addend yet.
Operation *addendTaker(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op || !value.hasOneUse())
    return nullptr;
  bool takes = onConvBackward(op, false, [&](auto backward) {
    return backward.getInputGrad() == value && !backward.getInputGradAddend();
  });
  return takes ? op : nullptr;
}

/// `value` is available before `op` (same block).
bool definedBefore(Value value, Operation *op) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return cast<BlockArgument>(value).getOwner() == op->getBlock();
  return def->getBlock() == op->getBlock() && def->isBeforeInBlock(op);
}

void setAddend(Operation *op, Value addend) {
  onConvBackward(op, false, [&](auto backward) {
    backward.getInputGradAddendMutable().assign(addend);
    return true;
  });
}

struct FoldGradientAddsPass
    : public mlir::rn::impl::FoldGradientAddsBase<FoldGradientAddsPass> {
  using FoldGradientAddsBase::FoldGradientAddsBase;

  void runOnOperation() override {
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp add) { adds.push_back(add); });
    for (AddOp add : adds) {
      Value lhs = add.getLhs(), rhs = add.getRhs();
      // Prefer the term produced later: the other one is then defined
      // before its producer.
      Operation *taker = nullptr;
      Value term, addend;
      for (auto [candidate, other] : {std::pair{rhs, lhs}, std::pair{lhs, rhs}}) {
        Operation *op = addendTaker(candidate);
        if (!op || other == candidate || !definedBefore(other, op) ||
            other.getType() != candidate.getType())
          continue;
        if (!taker || taker->isBeforeInBlock(op)) {
          taker = op;
          term = candidate;
          addend = other;
        }
      }
      if (!taker)
        continue;
      if (maxStride > 0 && maxStrideOf(taker) > maxStride) {
        LLVM_DEBUG(llvm::dbgs() << "kept the add at " << add.getLoc() << ": "
                                << taker->getName() << " at " << taker->getLoc()
                                << " is strided\n");
        ++numStrided;
        continue;
      }
      setAddend(taker, addend);
      add.getResult().replaceAllUsesWith(term);
      LLVM_DEBUG(llvm::dbgs() << "folded the add at " << add.getLoc() << " into "
                              << taker->getName() << " at " << taker->getLoc() << "\n");
      add.erase();
      ++numFolded;
    }
  }
};

} // namespace
