//===- GroupElementwise.cpp - Per-tensor zero/unscale/cast -> multi-tensor ===//
//
// Merges the rn.zero, rn.unscale, rn.cast and rn.ema_update ops of each
// subgraph into rn.multi_zero, rn.multi_unscale, rn.multi_cast and
// rn.multi_ema_update ops: one group per (op, subgraph, element types,
// scale, decay, all-reduce bucket), placed where its first member was (Passes.td has the
// details).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"

namespace mlir::rn {
#define GEN_PASS_DEF_GROUPELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;

namespace {

/// What two ops must share to be merged.
struct GroupKey {
  OperationName op;
  Attribute subgraph;
  Type elementType;
  Type resultElementType; ///< rn.cast's target; the input's for the others
  Value scale;            ///< rn.unscale's; null for the others
  Attribute decay;        ///< rn.ema_update's; null for the others
  Attribute bucket;       ///< rn.bucket (rn-bucket-all-reduce's casts); null if none

  bool operator==(const GroupKey &other) const {
    return op == other.op && subgraph == other.subgraph &&
           elementType == other.elementType &&
           resultElementType == other.resultElementType && scale == other.scale &&
           decay == other.decay && bucket == other.bucket;
  }
};

struct Group {
  GroupKey key;
  SmallVector<Operation *> members; ///< in function order
};

/// The tensor a groupable op zeroes, unscales, casts or averages into; null
/// for other ops.
Value groupedTensor(Operation *op) {
  if (auto zero = dyn_cast<ZeroOp>(op))
    return zero.getInput();
  if (auto unscale = dyn_cast<UnscaleOp>(op))
    return unscale.getGrad();
  if (auto cast = dyn_cast<CastOp>(op))
    return cast.getInput();
  if (auto ema = dyn_cast<EmaUpdateOp>(op))
    return ema.getAverage();
  return Value();
}

/// Replaces the members of a group by one multi-tensor op before
/// `builder`'s insertion point; returns it.
Operation *merge(OpBuilder &builder, Location loc, const Group &group) {
  SmallVector<Value> tensors, params;
  SmallVector<Type> types;
  for (Operation *op : group.members) {
    tensors.push_back(groupedTensor(op));
    types.push_back(op->getResult(0).getType());
    if (auto ema = dyn_cast<EmaUpdateOp>(op))
      params.push_back(ema.getParam());
  }
  Operation *first = group.members.front();
  Operation *multi =
      isa<EmaUpdateOp>(first)
          ? MultiEmaUpdateOp::create(builder, loc, types, tensors, params,
                                     cast<EmaUpdateOp>(first).getDecayAttr())
                .getOperation()
      : isa<UnscaleOp>(first)
          ? MultiUnscaleOp::create(builder, loc, types, tensors, group.key.scale)
                .getOperation()
      : isa<CastOp>(first)
          ? MultiCastOp::create(builder, loc, types, tensors).getOperation()
          : MultiZeroOp::create(builder, loc, types, tensors).getOperation();
  for (auto [i, op] : llvm::enumerate(group.members))
    op->getResult(0).replaceAllUsesWith(multi->getResult(i));
  return multi;
}

struct GroupElementwisePass
    : public mlir::rn::impl::GroupElementwiseBase<GroupElementwisePass> {
  using GroupElementwiseBase::GroupElementwiseBase;
  void runOnOperation() override;

private:
  LogicalResult runOnFunction(func::FuncOp function);
};

} // namespace

LogicalResult GroupElementwisePass::runOnFunction(func::FuncOp function) {
  Block &body = function.getBody().front();
  SmallVector<Group> groups;
  for (Operation &op : body.without_terminator()) {
    auto subgraph = op.getAttrOfType<FlatSymbolRefAttr>(kSubgraphAttr);
    if (!subgraph)
      return op.emitError("rn-group-elementwise needs every op in a subgraph: "
                          "run rn-partition first");
    if (op.hasAttr(kSlotsAttr) || op.hasAttr(kStreamAttr))
      return op.emitError("rn-group-elementwise runs before rn-plan-memory and "
                          "rn-assign-streams (this op has slots or a stream)");
    Value tensor = groupedTensor(&op);
    if (!tensor)
      continue;
    Value scale;
    if (auto unscale = dyn_cast<UnscaleOp>(op))
      scale = unscale.getScale();
    Attribute decay;
    if (auto ema = dyn_cast<EmaUpdateOp>(op))
      decay = ema.getDecayAttr();
    GroupKey key{op.getName(), subgraph,
                 cast<RankedTensorType>(tensor.getType()).getElementType(),
                 cast<RankedTensorType>(op.getResult(0).getType()).getElementType(),
                 scale, decay, op.getAttr(kBucketAttr)};
    auto it = llvm::find_if(groups, [&](const Group &g) { return g.key == key; });
    if (it == groups.end()) {
      groups.push_back(Group{key, {}});
      it = std::prev(groups.end());
    }
    it->members.push_back(&op);
  }

  DominanceInfo dominance(function);
  OpBuilder builder(function.getContext());
  unsigned grouped = 0, created = 0, left = 0;
  for (Group &group : groups) {
    if (int64_t(group.members.size()) < std::max<int64_t>(minTensors, 1)) {
      left += group.members.size();
      continue;
    }
    // Every member's operands must be defined where the group goes (its
    // first member's place), and the tensor a member updates in place must
    // not be read between there and the member (the read would see the
    // new value); a member for which either fails stays per tensor.
    Operation *first = group.members.front();
    Group movable{group.key, {}};
    for (Operation *op : group.members) {
      bool defined = llvm::all_of(op->getOperands(), [&](Value v) {
        return op == first || dominance.properlyDominates(v, first);
      });
      bool unread = true;
      if (auto inPlace = dyn_cast<InPlaceOpInterface>(op))
        if (std::optional<unsigned> updated = inPlace.getUpdatedOperand(0))
          for (Operation *user : op->getOperand(*updated).getUsers())
            if (user != op && user->getBlock() == op->getBlock() &&
                first->isBeforeInBlock(user) && user->isBeforeInBlock(op))
              unread = false;
      if (defined && unread)
        movable.members.push_back(op);
      else
        ++left;
    }
    if (int64_t(movable.members.size()) < std::max<int64_t>(minTensors, 1)) {
      left += movable.members.size();
      continue;
    }
    builder.setInsertionPoint(first);
    SmallVector<Location> locs;
    for (Operation *op : movable.members)
      locs.push_back(op->getLoc());
    Operation *multi = merge(builder, builder.getFusedLoc(locs), movable);
    multi->setAttr(kSubgraphAttr, group.key.subgraph);
    if (group.key.bucket)
      multi->setAttr(kBucketAttr, group.key.bucket);
    for (Operation *op : movable.members)
      op->erase();
    grouped += movable.members.size();
    ++created;
  }
  numGroupedOps += grouped;
  numGroups += created;
  if (report)
    function.emitRemark() << "rn-group-elementwise: " << grouped
                          << " per-tensor ops in " << created
                          << " multi-tensor ops, " << left << " left per tensor";
  return success();
}

void GroupElementwisePass::runOnOperation() {
  ModuleOp module = getOperation();
  if (module.getOps<SubgraphOp>().empty()) {
    module.emitError("rn-group-elementwise needs a partitioned module (it "
                     "groups within subgraphs): run rn-partition first");
    return signalPassFailure();
  }
  if (!module.getOps<MemoryPlanOp>().empty()) {
    module.emitError("rn-group-elementwise runs before rn-plan-memory");
    return signalPassFailure();
  }
  for (auto function : module.getOps<func::FuncOp>())
    if (failed(runOnFunction(function)))
      return signalPassFailure();
}
