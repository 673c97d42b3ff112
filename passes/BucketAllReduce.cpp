//===- BucketAllReduce.cpp - Gradient all-reduce in buckets during backward ===//
//
// Splits the data-parallel gradient all-reduce (one rn.all_reduce_mean of
// every f32 gradient in ALL_REDUCE, after the whole backward) into buckets
// of about `bucket-bytes`, in the order the backward finishes the
// gradients, each placed in DEEP_FWD_BWD right after its last gradient is
// final, with the f32 casts of its gradients moved from CAST_GRAD next to
// it, so that the replicas' reductions overlap the rest of the backward
// (PyTorch DDP's buckets). Passes.td has the details.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/StreamPolicy.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "rn-bucket-all-reduce"

namespace mlir::rn {
#define GEN_PASS_DEF_BUCKETALLREDUCE
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;
using namespace mlir::rn::subgraphs;

namespace {

bool inSubgraph(Operation *op, StringRef name) {
  auto subgraph = op ? op->getAttrOfType<FlatSymbolRefAttr>(kSubgraphAttr) : nullptr;
  return subgraph && subgraph.getValue() == name;
}

/// One gradient of the all-reduce.
struct Member {
  unsigned operand;      ///< its index in the all-reduce
  CastOp cast;           ///< its f32 cast in CAST_GRAD, if it has one
  Operation *producer;   ///< the op that finishes it (in DEEP_FWD_BWD)
  int64_t bytes;
};

int64_t tensorBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.getNumElements() * int64_t(tensor.getElementTypeBitWidth() / 8);
}

struct BucketAllReducePass
    : public mlir::rn::impl::BucketAllReduceBase<BucketAllReducePass> {
  using BucketAllReduceBase::BucketAllReduceBase;
  void runOnOperation() override;

private:
  LogicalResult runOnAllReduce(AllReduceMeanOp reduce, Block &body);
};

} // namespace

LogicalResult BucketAllReducePass::runOnAllReduce(AllReduceMeanOp reduce, Block &body) {
  // The gradients the backward finishes in DEEP_FWD_BWD can go early; the
  // others (the first layer's, finished in FIRST_LAYER_BWD) stay.
  SmallVector<Member> movable;
  SmallVector<unsigned> staying;
  unsigned castsInCastGrad = 0;
  for (Operation &op : body.without_terminator())
    if (isa<CastOp>(op) && inSubgraph(&op, kCastGrad))
      ++castsInCastGrad;
  for (auto [i, grad] : llvm::enumerate(reduce.getInputs())) {
    auto gradCast = grad.getDefiningOp<CastOp>();
    if (gradCast && (!inSubgraph(gradCast, kCastGrad) || !gradCast->hasOneUse()))
      gradCast = nullptr;
    Value finished = gradCast ? gradCast.getInput() : grad;
    Operation *producer = finished.getDefiningOp();
    if (producer && inSubgraph(producer, kDeepFwdBwd))
      movable.push_back({unsigned(i), gradCast, producer, tensorBytes(grad.getType())});
    else
      staying.push_back(unsigned(i));
  }
  // In the order the backward finishes them (a forking op finishes all
  // its gradients at once: operand order among them).
  llvm::stable_sort(movable, [](const Member &a, const Member &b) {
    return a.producer != b.producer && a.producer->isBeforeInBlock(b.producer);
  });
  SmallVector<SmallVector<Member>> buckets;
  int64_t filled = 0;
  unsigned castsMoved = 0;
  for (const Member &m : movable) {
    if (buckets.empty() || filled >= bucketBytes) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(m);
    filled += m.bytes;
    castsMoved += m.cast ? 1 : 0;
  }
  // ALL_REDUCE and CAST_GRAD keep at least one op each (their subgraphs
  // and schedules exist): the last buckets stay where they are if needed.
  while (!buckets.empty() &&
         (staying.empty() || (castsInCastGrad > 0 && castsMoved == castsInCastGrad))) {
    for (const Member &m : buckets.back()) {
      staying.push_back(m.operand);
      castsMoved -= m.cast ? 1 : 0;
    }
    buckets.pop_back();
  }
  if (buckets.empty())
    return success();

  MLIRContext *ctx = reduce.getContext();
  auto deep = FlatSymbolRefAttr::get(ctx, kDeepFwdBwd);
  OpBuilder builder(ctx);
  SmallVector<Value> replacement(reduce.getNumResults());
  Operation *previous = nullptr; // the previous bucket's all-reduce
  for (auto [k, bucket] : llvm::enumerate(buckets)) {
    // After the op finishing its last gradient, and after the previous
    // bucket (two buckets may end at the same forking op).
    Operation *after = bucket.front().producer;
    for (const Member &m : bucket)
      if (after->isBeforeInBlock(m.producer))
        after = m.producer;
    if (previous && after->isBeforeInBlock(previous))
      after = previous;
    auto index = IntegerAttr::get(IntegerType::get(ctx, 64), int64_t(k));
    SmallVector<Value> grads;
    for (const Member &m : bucket) {
      if (m.cast) {
        m.cast->moveAfter(after);
        m.cast->setAttr(kSubgraphAttr, deep);
        m.cast->setAttr(kBucketAttr, index);
        after = m.cast;
      }
      grads.push_back(reduce.getInputs()[m.operand]);
    }
    builder.setInsertionPointAfter(after);
    SmallVector<Type> types;
    for (Value g : grads)
      types.push_back(g.getType());
    auto early = AllReduceMeanOp::create(builder, reduce.getLoc(), types, grads);
    early->setAttr(kSubgraphAttr, deep);
    early->setAttr(kBucketAttr, index);
    previous = early;
    for (auto [j, m] : llvm::enumerate(bucket))
      replacement[m.operand] = early.getResult(unsigned(j));
    ++numBuckets;
    numBucketedGradients += bucket.size();
  }
  // The rest: one all-reduce where the old one was.
  llvm::sort(staying);
  SmallVector<Value> rest;
  SmallVector<Type> types;
  for (unsigned i : staying) {
    rest.push_back(reduce.getInputs()[i]);
    types.push_back(reduce.getInputs()[i].getType());
  }
  builder.setInsertionPoint(reduce);
  auto remaining = AllReduceMeanOp::create(builder, reduce.getLoc(), types, rest);
  remaining->setAttr(kSubgraphAttr, reduce->getAttr(kSubgraphAttr));
  for (auto [j, i] : llvm::enumerate(staying))
    replacement[i] = remaining.getResult(unsigned(j));
  for (auto [i, result] : llvm::enumerate(reduce.getResults()))
    result.replaceAllUsesWith(replacement[i]);
  reduce.erase();
  LLVM_DEBUG(llvm::dbgs() << "rn-bucket-all-reduce: " << buckets.size() << " buckets, "
                          << staying.size() << " gradients left in ALL_REDUCE\n");
  return success();
}

void BucketAllReducePass::runOnOperation() {
  ModuleOp module = getOperation();
  if (bucketBytes <= 0) {
    module.emitError("rn-bucket-all-reduce: bucket-bytes must be positive, got ")
        << int64_t(bucketBytes);
    return signalPassFailure();
  }
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.getSymName() != "train_step")
      continue;
    Block &body = function.getBody().front();
    SmallVector<AllReduceMeanOp> reduces;
    for (auto reduce : body.getOps<AllReduceMeanOp>()) {
      if (!reduce->hasAttr(kSubgraphAttr)) {
        reduce.emitError("rn-bucket-all-reduce needs a partitioned module: run "
                         "rn-partition first");
        return signalPassFailure();
      }
      if (reduce->hasAttr(kSlotsAttr) || reduce->hasAttr(kStreamAttr)) {
        reduce.emitError("rn-bucket-all-reduce runs before rn-plan-memory and "
                         "rn-assign-streams");
        return signalPassFailure();
      }
      if (inSubgraph(reduce, kAllReduce))
        reduces.push_back(reduce);
    }
    for (AllReduceMeanOp reduce : reduces)
      if (failed(runOnAllReduce(reduce, body)))
        return signalPassFailure();
  }
}
