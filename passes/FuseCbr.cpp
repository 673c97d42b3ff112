//===- FuseCbr.cpp - Fuse conv + batch norm (+ relu) into CBR ops ---------===//
//
// Rewrites, in every function:
//
//   forward    conv2d -> batch_norm_train (-> relu)         rn.cbr_forward
//              batch_norm_train -> add -> relu              rn.bn_add_relu
//   backward   (relu_backward ->) batch_norm_backward
//                -> conv2d_backward                         rn.cbr_backward
//              relu_backward -> batch_norm_backward         rn.bn_add_relu_backward
//   inference  conv2d -> batch_norm_inference (-> relu)     rn.cbr_inference
//              batch_norm_inference -> add -> relu          rn.bn_add_relu_inference
//
// Forward chains are matched first; a backward chain is fused when it
// differentiates a fused forward op (its batch norm backward reads the
// fused op's saved statistics), so the backward op mirrors its forward op.
// A value the fused op does not return (the batch norm output before the
// ReLU, the sum of a residual add, the ReLU gradient, the conv output at
// inference) must have no user outside the chain; otherwise the chain is
// left alone (or fused without its ReLU) with a remark saying why.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "rn-fuse-cbr"

namespace mlir::rn {
#define GEN_PASS_DEF_FUSECBR
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;

namespace {

/// What one function's fusion did, for the pass statistics.
struct FusionCounts {
  unsigned forward = 0, backward = 0, inference = 0, residualTails = 0,
           skipped = 0;
};

/// A value of the unfused chain that a result of the fused op replaces.
using Replacement = std::pair<Value, Value>;

/// A conv2d -> batch norm (-> relu) chain, the forward or inference CBR.
struct ConvBnChain {
  Conv2dOp conv;
  ReluOp relu; // null when the chain ends at the batch norm
  SmallVector<Operation *, 3> ops;
  Location loc;
  /// The value the fused op's main result replaces.
  Value output;
};

class FunctionFuser {
public:
  FunctionFuser(func::FuncOp function, bool preferResidualTails)
      : function(function), dominance(function),
        preferResidualTails(preferResidualTails) {}

  void run();
  const FusionCounts &getCounts() const { return counts; }

private:
  // Forward and inference chains.
  bool fuseTail(ReluOp relu);
  bool fuseCbr(BatchNormTrainOp bn);
  bool fuseCbrInference(BatchNormInferenceOp bn);
  /// The conv2d -> `bn` (-> relu) chain, if `bn` reads a conv2d that can be
  /// fused (with a remark when it cannot). `convOutputReturned`: the fused
  /// op returns the conv output; otherwise it must have no other user.
  template <typename BatchNormOp>
  std::optional<ConvBnChain> matchConvBn(BatchNormOp bn,
                                         bool convOutputReturned);
  // Backward chains of fused forward ops.
  void fuseCbrBackward(CbrForwardOp forward);
  void fuseTailBackward(BnAddReluOp forward);

  /// Emits "REASON" as a remark on `op` and counts a skipped candidate.
  void skip(Operation *op, const Twine &reason);

  /// Where the op fusing `ops` can be inserted: before the last of them when
  /// every use of a replaced value outside `ops` follows it, else before the
  /// first when every operand is defined before it. Null (with a remark on
  /// `anchor`) when neither works or the ops are not in one block.
  Operation *findInsertionPoint(Operation *anchor, ArrayRef<Operation *> ops,
                                ValueRange operands,
                                ArrayRef<Replacement> replacements);

  /// Replaces the values of the chain with the fused op's results and erases
  /// the chain, users first.
  void replaceChain(ArrayRef<Operation *> ops,
                    ArrayRef<Replacement> replacements);

  template <typename Op>
  SmallVector<Op> collect() {
    SmallVector<Op> ops;
    function.walk([&](Op op) { ops.push_back(op); });
    return ops;
  }

  func::FuncOp function;
  DominanceInfo dominance;
  bool preferResidualTails;
  FusionCounts counts;
};

} // namespace

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

void FunctionFuser::skip(Operation *op, const Twine &reason) {
  ++counts.skipped;
  op->emitRemark(reason);
  LLVM_DEBUG(llvm::dbgs() << "skipped at " << op->getLoc() << ": " << reason
                          << "\n");
}

Operation *FunctionFuser::findInsertionPoint(
    Operation *anchor, ArrayRef<Operation *> ops, ValueRange operands,
    ArrayRef<Replacement> replacements) {
  Block *block = ops.front()->getBlock();
  if (llvm::any_of(ops, [&](Operation *op) { return op->getBlock() != block; })) {
    skip(anchor, "not fusing: the ops of the chain are in different blocks");
    return nullptr;
  }
  llvm::SmallPtrSet<Operation *, 4> chain(ops.begin(), ops.end());
  Operation *first = ops.front(), *last = ops.front();
  for (Operation *op : ops) {
    if (op->isBeforeInBlock(first))
      first = op;
    if (last->isBeforeInBlock(op))
      last = op;
  }
  auto isValid = [&](Operation *point) {
    for (Value operand : operands)
      if (!dominance.properlyDominates(operand, point))
        return false;
    for (auto [old, replacement] : replacements)
      for (Operation *user : old.getUsers()) {
        Operation *ancestor = block->findAncestorOpInBlock(*user);
        if (ancestor && chain.contains(ancestor))
          continue;
        if (!dominance.properlyDominates(point, user))
          return false;
      }
    return true;
  };
  if (isValid(last))
    return last;
  if (isValid(first))
    return first;
  skip(anchor, "not fusing: no position in the block has every operand "
               "defined before it and every use of a result after it");
  return nullptr;
}

void FunctionFuser::replaceChain(ArrayRef<Operation *> ops,
                                 ArrayRef<Replacement> replacements) {
  for (auto [old, replacement] : replacements)
    old.replaceAllUsesWith(replacement);
  SmallVector<Operation *> ordered(ops.begin(), ops.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) {
    return b->isBeforeInBlock(a);
  });
  for (Operation *op : ordered) {
    assert(op->use_empty() && "a value of the fused chain is still used");
    op->erase();
  }
}

/// The ReLU that is the only user of `value`, if any; `reluWithOtherUsers`
/// tells whether a ReLU user exists next to other users.
static ReluOp soleReluUser(Value value, bool &reluWithOtherUsers) {
  reluWithOtherUsers = false;
  if (value.hasOneUse())
    return dyn_cast<ReluOp>(*value.getUsers().begin());
  reluWithOtherUsers =
      llvm::any_of(value.getUsers(), [](Operation *op) { return isa<ReluOp>(op); });
  return {};
}

/// True when `backward` differentiates the bias-free convolution of `cbr`.
static bool isBackwardOf(Conv2dBackwardOp backward, CbrForwardOp cbr) {
  return backward.getInput() == cbr.getInput() &&
         backward.getFilter() == cbr.getFilter() &&
         !backward.getBiasGradAcc() &&
         backward.getStridesAttr() == cbr.getStridesAttr() &&
         backward.getPaddingAttr() == cbr.getPaddingAttr() &&
         backward.getDilationAttr() == cbr.getDilationAttr() &&
         backward.getGroupsAttr() == cbr.getGroupsAttr();
}

/// The batch_norm_backward among the users of `usedValue` that reads the
/// given forward values and, when `outputGrad` is set, that output gradient.
static BatchNormBackwardOp findBatchNormBackward(Value usedValue, Value input,
                                                 Value gamma, Value batchMean,
                                                 Value batchInvStd,
                                                 Value outputGrad) {
  for (Operation *user : usedValue.getUsers()) {
    auto backward = dyn_cast<BatchNormBackwardOp>(user);
    if (backward && backward.getInput() == input &&
        backward.getWeight() == gamma &&
        backward.getBatchMean() == batchMean &&
        backward.getBatchInvStd() == batchInvStd &&
        (!outputGrad || backward.getOutputGrad() == outputGrad))
      return backward;
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Forward and inference chains
//===----------------------------------------------------------------------===//

/// batch_norm_{train,inference} -> add(shortcut) -> relu.
bool FunctionFuser::fuseTail(ReluOp relu) {
  auto add = relu.getInput().getDefiningOp<AddOp>();
  if (!add)
    return false;
  // The batch norm operand of the add: the left one when both qualify.
  SmallVector<Operation *, 2> batchNorms;
  for (Value operand : add->getOperands())
    if (isa_and_nonnull<BatchNormTrainOp, BatchNormInferenceOp>(
            operand.getDefiningOp()))
      batchNorms.push_back(operand.getDefiningOp());
  if (batchNorms.empty())
    return false;
  if (!add.getResult().hasOneUse()) {
    skip(add, "not fusing the residual tail: the add result has another user");
    return false;
  }
  Operation *bn = nullptr;
  for (Operation *candidate : batchNorms)
    if (candidate->getResult(0).hasOneUse()) {
      bn = candidate;
      break;
    }
  if (!bn) {
    skip(batchNorms.front(),
         "not fusing the residual tail: the " +
             batchNorms.front()->getName().stripDialect() +
             " result has another user");
    return false;
  }
  Value shortcut = add.getLhs() == bn->getResult(0) ? add.getRhs()
                                                     : add.getLhs();
  SmallVector<Operation *, 3> ops = {bn, add, relu};
  Location loc = FusedLoc::get(function.getContext(),
                               {bn->getLoc(), add.getLoc(), relu.getLoc()});

  if (auto train = dyn_cast<BatchNormTrainOp>(bn)) {
    SmallVector<Value> operands = {train.getInput(), train.getWeight(),
                                   train.getBias(), shortcut};
    SmallVector<Replacement> replacements = {
        {relu.getResult(), Value()},
        {train.getBatchMean(), Value()},
        {train.getBatchInvStd(), Value()}};
    Operation *point = findInsertionPoint(relu, ops, operands, replacements);
    if (!point)
      return false;
    OpBuilder builder(point);
    auto fused = BnAddReluOp::create(
        builder, loc, relu.getType(), train.getBatchMean().getType(),
        train.getBatchInvStd().getType(), train.getInput(), train.getWeight(),
        train.getBias(), shortcut, train.getEpsilonAttr());
    replacements[0].second = fused.getResult();
    replacements[1].second = fused.getBatchMean();
    replacements[2].second = fused.getBatchInvStd();
    replaceChain(ops, replacements);
    ++counts.forward;
  } else {
    auto inference = cast<BatchNormInferenceOp>(bn);
    SmallVector<Value> operands = {
        inference.getInput(),       inference.getWeight(),
        inference.getBias(),        inference.getRunningMean(),
        inference.getRunningVar(),  shortcut};
    SmallVector<Replacement> replacements = {{relu.getResult(), Value()}};
    Operation *point = findInsertionPoint(relu, ops, operands, replacements);
    if (!point)
      return false;
    OpBuilder builder(point);
    auto fused = BnAddReluInferenceOp::create(
        builder, loc, relu.getType(), inference.getInput(),
        inference.getWeight(), inference.getBias(),
        inference.getRunningMean(), inference.getRunningVar(), shortcut,
        inference.getEpsilonAttr());
    replacements[0].second = fused.getResult();
    replaceChain(ops, replacements);
    ++counts.inference;
  }
  ++counts.residualTails;
  return true;
}

template <typename BatchNormOp>
std::optional<ConvBnChain>
FunctionFuser::matchConvBn(BatchNormOp bn, bool convOutputReturned) {
  auto conv = bn.getInput().template getDefiningOp<Conv2dOp>();
  if (!conv)
    return std::nullopt;
  if (conv.getBias()) {
    skip(conv, "not fusing: the conv2d has a bias, which CBR ops do not take "
               "(the batch norm cancels it)");
    return std::nullopt;
  }
  if (!convOutputReturned && !conv.getResult().hasOneUse()) {
    skip(conv, "not fusing: the conv2d result has another user");
    return std::nullopt;
  }
  bool reluWithOtherUsers;
  ReluOp relu = soleReluUser(bn.getResult(), reluWithOtherUsers);
  if (reluWithOtherUsers)
    skip(bn, "fusing without the relu: the " +
                 bn->getName().stripDialect() + " result has another user");

  SmallVector<Operation *, 3> ops = {conv, bn};
  SmallVector<Location, 3> locs = {conv.getLoc(), bn.getLoc()};
  if (relu) {
    ops.push_back(relu);
    locs.push_back(relu.getLoc());
  }
  return ConvBnChain{conv, relu, std::move(ops),
                     FusedLoc::get(function.getContext(), locs),
                     relu ? relu.getResult() : bn.getResult()};
}

/// conv2d -> batch_norm_train (-> relu).
bool FunctionFuser::fuseCbr(BatchNormTrainOp bn) {
  std::optional<ConvBnChain> chain =
      matchConvBn(bn, /*convOutputReturned=*/true);
  if (!chain)
    return false;
  Conv2dOp conv = chain->conv;
  SmallVector<Value> operands = {conv.getInput(), conv.getFilter(),
                                 bn.getWeight(), bn.getBias()};
  SmallVector<Replacement> replacements = {{chain->output, Value()},
                                           {conv.getResult(), Value()},
                                           {bn.getBatchMean(), Value()},
                                           {bn.getBatchInvStd(), Value()}};
  Operation *point = findInsertionPoint(bn, chain->ops, operands, replacements);
  if (!point)
    return false;
  OpBuilder builder(point);
  auto fused = CbrForwardOp::create(
      builder, chain->loc, bn.getResult().getType(), conv.getType(),
      bn.getBatchMean().getType(), bn.getBatchInvStd().getType(),
      conv.getInput(), conv.getFilter(), bn.getWeight(), bn.getBias(),
      /*prologue_scale=*/Value(), /*prologue_bias=*/Value(),
      conv.getStridesAttr(), conv.getPaddingAttr(), conv.getDilationAttr(),
      conv.getGroupsAttr(), bn.getEpsilonAttr(),
      chain->relu ? builder.getUnitAttr() : UnitAttr());
  for (auto [index, result] : llvm::enumerate(fused->getResults()))
    replacements[index].second = result;
  replaceChain(chain->ops, replacements);
  ++counts.forward;
  return true;
}

/// conv2d -> batch_norm_inference (-> relu).
bool FunctionFuser::fuseCbrInference(BatchNormInferenceOp bn) {
  std::optional<ConvBnChain> chain =
      matchConvBn(bn, /*convOutputReturned=*/false);
  if (!chain)
    return false;
  Conv2dOp conv = chain->conv;
  SmallVector<Value> operands = {conv.getInput(),      conv.getFilter(),
                                 bn.getWeight(),       bn.getBias(),
                                 bn.getRunningMean(),  bn.getRunningVar()};
  SmallVector<Replacement> replacements = {{chain->output, Value()}};
  Operation *point = findInsertionPoint(bn, chain->ops, operands, replacements);
  if (!point)
    return false;
  OpBuilder builder(point);
  auto fused = CbrInferenceOp::create(
      builder, chain->loc, bn.getResult().getType(), conv.getInput(),
      conv.getFilter(), bn.getWeight(), bn.getBias(), bn.getRunningMean(),
      bn.getRunningVar(), conv.getStridesAttr(), conv.getPaddingAttr(),
      conv.getDilationAttr(), conv.getGroupsAttr(), bn.getEpsilonAttr(),
      chain->relu ? builder.getUnitAttr() : UnitAttr());
  replacements[0].second = fused.getResult();
  replaceChain(chain->ops, replacements);
  ++counts.inference;
  return true;
}

//===----------------------------------------------------------------------===//
// Backward chains
//===----------------------------------------------------------------------===//

/// (relu_backward ->) batch_norm_backward -> conv2d_backward of a
/// cbr_forward.
void FunctionFuser::fuseCbrBackward(CbrForwardOp forward) {
  BatchNormBackwardOp bnBackward = findBatchNormBackward(
      forward.getBatchMean(), forward.getConvOutput(), forward.getGamma(),
      forward.getBatchMean(), forward.getBatchInvStd(), Value());
  if (!bnBackward)
    return; // Not differentiated here (an inference-only function).
  Value convOutputGrad = bnBackward.getInputGrad();
  Conv2dBackwardOp convBackward;
  for (Operation *user : convOutputGrad.getUsers()) {
    auto candidate = dyn_cast<Conv2dBackwardOp>(user);
    if (candidate && candidate.getOutputGrad() == convOutputGrad &&
        isBackwardOf(candidate, forward)) {
      convBackward = candidate;
      break;
    }
  }
  if (!convBackward) {
    skip(bnBackward, "not fusing the backward: no rn.conv2d_backward of the "
                     "fused convolution reads the batch_norm_backward input "
                     "gradient");
    return;
  }

  // The ReLU backward, when the forward op applied the ReLU.
  ReluBackwardOp reluBackward;
  if (forward.getRelu()) {
    auto candidate =
        bnBackward.getOutputGrad().getDefiningOp<ReluBackwardOp>();
    if (candidate && candidate.getSaved() == forward.getResult()) {
      if (candidate.getInputGrad().hasOneUse())
        reluBackward = candidate;
      else
        skip(candidate, "fusing the backward without the relu_backward: its "
                        "result has another user");
    }
  }

  SmallVector<Operation *, 3> ops;
  SmallVector<Location, 3> locs;
  if (reluBackward) {
    ops.push_back(reluBackward);
    locs.push_back(reluBackward.getLoc());
  }
  ops.append({bnBackward, convBackward});
  locs.append({bnBackward.getLoc(), convBackward.getLoc()});
  Value outputGrad = reluBackward ? reluBackward.getOutputGrad()
                                  : bnBackward.getOutputGrad();
  Value reluOutput = reluBackward ? reluBackward.getSaved() : Value();
  SmallVector<Value> operands = {
      outputGrad,
      forward.getInput(),
      forward.getFilter(),
      forward.getConvOutput(),
      forward.getGamma(),
      forward.getBatchMean(),
      forward.getBatchInvStd(),
      convBackward.getFilterGradAcc(),
      bnBackward.getWeightGradAcc(),
      bnBackward.getBiasGradAcc()};
  if (reluOutput)
    operands.push_back(reluOutput);
  Value inputGrad = convBackward.getInputGrad();
  SmallVector<Replacement> replacements = {{convOutputGrad, Value()}};
  if (inputGrad)
    replacements.push_back({inputGrad, Value()});
  replacements.append({{convBackward.getFilterGrad(), Value()},
                       {bnBackward.getWeightGrad(), Value()},
                       {bnBackward.getBiasGrad(), Value()}});
  Operation *point =
      findInsertionPoint(bnBackward, ops, operands, replacements);
  if (!point)
    return;

  OpBuilder builder(point);
  auto fused = CbrBackwardOp::create(
      builder, FusedLoc::get(function.getContext(), locs),
      convOutputGrad.getType(), inputGrad ? inputGrad.getType() : Type(),
      convBackward.getFilterGrad().getType(),
      bnBackward.getWeightGrad().getType(), bnBackward.getBiasGrad().getType(),
      outputGrad, forward.getInput(), forward.getFilter(),
      forward.getConvOutput(), forward.getGamma(), forward.getBatchMean(),
      forward.getBatchInvStd(), convBackward.getFilterGradAcc(),
      bnBackward.getWeightGradAcc(), bnBackward.getBiasGradAcc(), reluOutput,
      /*relu_beta=*/Value(), /*input_scale=*/Value(), /*input_bias=*/Value(),
      /*input_grad_addend=*/Value(), forward.getStridesAttr(),
      forward.getPaddingAttr(), forward.getDilationAttr(),
      forward.getGroupsAttr(), /*prologue_mask=*/UnitAttr());
  for (auto [index, result] : llvm::enumerate(fused->getResults()))
    replacements[index].second = result;
  replaceChain(ops, replacements);
  ++counts.backward;
}

/// relu_backward -> batch_norm_backward of a bn_add_relu.
void FunctionFuser::fuseTailBackward(BnAddReluOp forward) {
  ReluBackwardOp reluBackward;
  for (Operation *user : forward.getResult().getUsers()) {
    auto candidate = dyn_cast<ReluBackwardOp>(user);
    if (candidate && candidate.getSaved() == forward.getResult()) {
      reluBackward = candidate;
      break;
    }
  }
  if (!reluBackward)
    return; // Not differentiated here.
  Value sumGrad = reluBackward.getInputGrad();
  BatchNormBackwardOp bnBackward = findBatchNormBackward(
      sumGrad, forward.getInput(), forward.getGamma(), forward.getBatchMean(),
      forward.getBatchInvStd(), sumGrad);
  if (!bnBackward) {
    skip(reluBackward, "not fusing the residual tail backward: no "
                       "rn.batch_norm_backward of the fused batch norm reads "
                       "the relu_backward result");
    return;
  }

  SmallVector<Operation *, 2> ops = {reluBackward, bnBackward};
  SmallVector<Value> operands = {
      reluBackward.getOutputGrad(), forward.getResult(),
      forward.getInput(),           forward.getGamma(),
      forward.getBatchMean(),       forward.getBatchInvStd(),
      bnBackward.getWeightGradAcc(), bnBackward.getBiasGradAcc()};
  // The ReLU gradient survives as the shortcut gradient.
  SmallVector<Replacement> replacements = {
      {bnBackward.getInputGrad(), Value()},
      {sumGrad, Value()},
      {bnBackward.getWeightGrad(), Value()},
      {bnBackward.getBiasGrad(), Value()}};
  Operation *point =
      findInsertionPoint(bnBackward, ops, operands, replacements);
  if (!point)
    return;
  OpBuilder builder(point);
  auto fused = BnAddReluBackwardOp::create(
      builder,
      FusedLoc::get(function.getContext(),
                    {reluBackward.getLoc(), bnBackward.getLoc()}),
      bnBackward.getInputGrad().getType(), sumGrad.getType(),
      bnBackward.getWeightGrad().getType(), bnBackward.getBiasGrad().getType(),
      reluBackward.getOutputGrad(), forward.getResult(), forward.getInput(),
      forward.getGamma(), forward.getBatchMean(), forward.getBatchInvStd(),
      bnBackward.getWeightGradAcc(), bnBackward.getBiasGradAcc());
  for (auto [index, result] : llvm::enumerate(fused->getResults()))
    replacements[index].second = result;
  replaceChain(ops, replacements);
  ++counts.backward;
  ++counts.residualTails;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

void FunctionFuser::run() {
  // Forward and inference chains. A batch norm between a conv2d and an
  // add + relu joins the residual tail or the conv, by preference.
  auto fuseTails = [&] {
    for (ReluOp relu : collect<ReluOp>())
      fuseTail(relu);
  };
  if (preferResidualTails)
    fuseTails();
  for (BatchNormTrainOp bn : collect<BatchNormTrainOp>())
    fuseCbr(bn);
  for (BatchNormInferenceOp bn : collect<BatchNormInferenceOp>())
    fuseCbrInference(bn);
  if (!preferResidualTails)
    fuseTails();

  // Backward chains of the fused forward ops.
  for (CbrForwardOp forward : collect<CbrForwardOp>())
    fuseCbrBackward(forward);
  for (BnAddReluOp forward : collect<BnAddReluOp>())
    fuseTailBackward(forward);
}

namespace {
struct FuseCbrPass : public mlir::rn::impl::FuseCbrBase<FuseCbrPass> {
  using FuseCbrBase::FuseCbrBase;

  void runOnOperation() override {
    if (!enabled)
      return markAllAnalysesPreserved();
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      FunctionFuser fuser(function, preferResidualTails);
      fuser.run();
      const FusionCounts &counts = fuser.getCounts();
      numFusedForward += counts.forward;
      numFusedBackward += counts.backward;
      numFusedInference += counts.inference;
      numResidualTails += counts.residualTails;
      numSkipped += counts.skipped;
      LLVM_DEBUG(llvm::dbgs()
                 << "@" << function.getSymName() << ": " << counts.forward
                 << " forward, " << counts.backward << " backward, "
                 << counts.inference << " inference, " << counts.skipped
                 << " skipped\n");
    }
  }
};
} // namespace
