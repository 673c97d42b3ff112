//===- GroupUpdates.cpp - Per-parameter updates -> multi-tensor ones ------===//
//
// Merges the rn.sgd_update (rn.adamw_update, rn.lars_update) ops of a
// subgraph into rn.multi_sgd_update (rn.multi_adamw_update,
// rn.multi_lars_update) ops: one group per (op, attributes, per-step
// scalars, element type, first reader), where the first reader of a
// parameter is the earliest subgraph of the step that reads its state
// argument or that of its low-precision copy. Groups are
// issued in the order of their first readers, so the next step's first
// layer waits for its own parameters' group only (Passes.td has the
// details).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <limits>

namespace mlir::rn {
#define GEN_PASS_DEF_GROUPUPDATES
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;

namespace {

/// Rank of "no reader": after every subgraph.
constexpr unsigned kNoReader = std::numeric_limits<unsigned>::max();

/// What two updates must share to be merged: the op and its attributes
/// (the properties: momentum, weight decay, Nesterov, betas, trust
/// coefficient, ...), the
/// per-step scalars it reads (lr, step, skip_if), the element type, the
/// subgraph and the first reader.
struct GroupKey {
  Attribute subgraph;
  unsigned firstReader = kNoReader;
  Type elementType;
  OperationName op;
  Attribute properties;
  SmallVector<Value, 3> scalars;

  bool operator==(const GroupKey &other) const {
    return subgraph == other.subgraph && firstReader == other.firstReader &&
           elementType == other.elementType && op == other.op &&
           properties == other.properties && scalars == other.scalars;
  }
};

struct Group {
  GroupKey key;
  SmallVector<Operation *> members; ///< in function order
};

/// The parameter an update updates, or null for ops the pass leaves alone.
Value updatedParam(Operation *op) {
  if (auto sgd = dyn_cast<SgdUpdateOp>(op))
    return sgd.getParam();
  if (auto adamw = dyn_cast<AdamWUpdateOp>(op))
    return adamw.getParam();
  if (auto lars = dyn_cast<LarsUpdateOp>(op))
    return lars.getParam();
  return Value();
}

/// The per-step scalar operands of an update.
SmallVector<Value, 3> scalarsOf(Operation *op) {
  if (auto sgd = dyn_cast<SgdUpdateOp>(op))
    return {sgd.getLr(), sgd.getSkipIf()};
  if (auto lars = dyn_cast<LarsUpdateOp>(op))
    return {lars.getLr(), lars.getSkipIf()};
  auto adamw = cast<AdamWUpdateOp>(op);
  return {adamw.getLr(), adamw.getStep(), adamw.getSkipIf()};
}

/// Replaces the members of a group by one multi-tensor op before `builder`'s
/// insertion point; returns it.
Operation *mergeSgd(OpBuilder &builder, Location loc,
                    ArrayRef<Operation *> members) {
  SmallVector<Value> params, grads, buffers;
  SmallVector<Type> types, bufferTypes;
  for (Operation *op : members) {
    auto update = cast<SgdUpdateOp>(op);
    params.push_back(update.getParam());
    grads.push_back(update.getGrad());
    types.push_back(update.getNewParam().getType());
    if (Value buffer = update.getMomentumBuffer()) {
      buffers.push_back(buffer);
      bufferTypes.push_back(update.getNewMomentumBuffer().getType());
    }
  }
  llvm::append_range(types, bufferTypes);
  auto first = cast<SgdUpdateOp>(members.front());
  auto multi = MultiSgdUpdateOp::create(
      builder, loc, types, params, grads, buffers, first.getLr(),
      first.getSkipIf(), first.getMomentumAttr(), first.getWeightDecayAttr(),
      first.getNesterovAttr());
  for (auto [i, op] : llvm::enumerate(members)) {
    auto update = cast<SgdUpdateOp>(op);
    update.getNewParam().replaceAllUsesWith(multi.getNewParams()[i]);
    if (Value buffer = update.getNewMomentumBuffer())
      buffer.replaceAllUsesWith(multi.getNewMomentumBuffers()[i]);
  }
  return multi;
}

Operation *mergeAdamW(OpBuilder &builder, Location loc,
                      ArrayRef<Operation *> members) {
  SmallVector<Value> params, grads, ms, vs;
  SmallVector<Type> types;
  for (Operation *op : members) {
    auto update = cast<AdamWUpdateOp>(op);
    params.push_back(update.getParam());
    grads.push_back(update.getGrad());
    ms.push_back(update.getExpAvg());
    vs.push_back(update.getExpAvgSq());
  }
  for (int k = 0; k < 3; ++k)
    for (Operation *op : members)
      types.push_back(op->getResult(k).getType());
  auto first = cast<AdamWUpdateOp>(members.front());
  auto multi = MultiAdamWUpdateOp::create(
      builder, loc, types, params, grads, ms, vs, first.getLr(),
      first.getStep(), first.getSkipIf(), first.getBeta1Attr(),
      first.getBeta2Attr(), first.getEpsilonAttr(), first.getWeightDecayAttr());
  for (auto [i, op] : llvm::enumerate(members)) {
    auto update = cast<AdamWUpdateOp>(op);
    update.getNewParam().replaceAllUsesWith(multi.getNewParams()[i]);
    update.getNewExpAvg().replaceAllUsesWith(multi.getNewExpAvgs()[i]);
    update.getNewExpAvgSq().replaceAllUsesWith(multi.getNewExpAvgSqs()[i]);
  }
  return multi;
}

Operation *mergeLars(OpBuilder &builder, Location loc,
                     ArrayRef<Operation *> members) {
  SmallVector<Value> params, grads, buffers;
  SmallVector<Type> types;
  for (Operation *op : members) {
    auto update = cast<LarsUpdateOp>(op);
    params.push_back(update.getParam());
    grads.push_back(update.getGrad());
    buffers.push_back(update.getMomentumBuffer());
  }
  for (int k = 0; k < 2; ++k)
    for (Operation *op : members)
      types.push_back(op->getResult(k).getType());
  auto first = cast<LarsUpdateOp>(members.front());
  auto multi = MultiLarsUpdateOp::create(
      builder, loc, types, params, grads, buffers, first.getLr(),
      first.getSkipIf(), first.getMomentumAttr(), first.getWeightDecayAttr(),
      first.getTrustCoefficientAttr(), first.getEpsilonAttr());
  for (auto [i, op] : llvm::enumerate(members)) {
    auto update = cast<LarsUpdateOp>(op);
    update.getNewParam().replaceAllUsesWith(multi.getNewParams()[i]);
    update.getNewMomentumBuffer().replaceAllUsesWith(
        multi.getNewMomentumBuffers()[i]);
  }
  return multi;
}

struct GroupUpdatesPass
    : public mlir::rn::impl::GroupUpdatesBase<GroupUpdatesPass> {
  using GroupUpdatesBase::GroupUpdatesBase;
  void runOnOperation() override;

private:
  LogicalResult runOnFunction(ModuleOp module, func::FuncOp function);
};

} // namespace

/// Element count of a statically shaped tensor value.
static int64_t elementsOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

LogicalResult GroupUpdatesPass::runOnFunction(ModuleOp module,
                                              func::FuncOp function) {
  Block &body = function.getBody().front();
  SmallVector<Operation *> updates;
  for (Operation &op : body)
    if (updatedParam(&op))
      updates.push_back(&op);
  if (updates.empty())
    return success();

  // Subgraphs rank by their first op: rn-partition leaves them contiguous,
  // in launch order.
  llvm::DenseMap<Attribute, unsigned> rankOf;
  SmallVector<StringRef> nameOfRank;
  for (Operation &op : body.without_terminator()) {
    auto subgraph = op.getAttrOfType<FlatSymbolRefAttr>(kSubgraphAttr);
    if (!subgraph)
      return op.emitError("rn-group-updates needs every op in a subgraph: "
                          "run rn-partition first");
    if (op.hasAttr(kSlotsAttr) || op.hasAttr(kStreamAttr))
      return op.emitError("rn-group-updates runs before rn-plan-memory and "
                          "rn-assign-streams (this op has slots or a "
                          "stream)");
    if (rankOf.try_emplace(subgraph, nameOfRank.size()).second)
      nameOfRank.push_back(subgraph.getValue());
  }

  // State argument of each symbol, and the low-precision copies of each
  // parameter: the next step reads those instead of the f32 master.
  llvm::StringMap<BlockArgument> argumentOf;
  for (BlockArgument arg : function.getArguments())
    if (auto symbol = function.getArgAttrOfType<FlatSymbolRefAttr>(
            arg.getArgNumber(), kStateAttr))
      argumentOf[symbol.getValue()] = arg;
  llvm::StringMap<SmallVector<StringRef>> copiesOf;
  for (auto state : module.getOps<StateOp>())
    if (state.getRole() == StateRole::low_precision_weight && state.getOf())
      copiesOf[*state.getOf()].push_back(state.getSymName());

  // The earliest subgraph reading the parameter (its argument, or its
  // copies'), the update itself aside.
  auto firstReader = [&](Operation *update) {
    unsigned rank = kNoReader;
    auto visit = [&](Value value) {
      for (Operation *user : value.getUsers()) {
        if (user == update)
          continue;
        auto it = rankOf.find(user->getAttr(kSubgraphAttr));
        if (it != rankOf.end())
          rank = std::min(rank, it->second);
      }
    };
    Value param = updatedParam(update);
    visit(param);
    auto arg = dyn_cast<BlockArgument>(param);
    if (!arg || arg.getOwner() != &body)
      return rank;
    auto symbol = function.getArgAttrOfType<FlatSymbolRefAttr>(
        arg.getArgNumber(), kStateAttr);
    if (!symbol)
      return rank;
    for (StringRef copy : copiesOf.lookup(symbol.getValue()))
      if (BlockArgument copyArg = argumentOf.lookup(copy))
        visit(copyArg);
    return rank;
  };

  // Groups of each subgraph, placed where its first update is; a member's
  // operands must already be defined there (they are: OPTIMIZER holds only
  // updates, and reads what earlier subgraphs computed).
  DominanceInfo dominance(function);
  llvm::DenseMap<Attribute, Operation *> insertionPoint;
  SmallVector<Group> groups;
  unsigned left = 0;
  for (Operation *update : updates) {
    Attribute subgraph = update->getAttr(kSubgraphAttr);
    Operation *&point = insertionPoint[subgraph];
    if (!point)
      point = update;
    bool movable = llvm::all_of(update->getOperands(), [&](Value v) {
      return dominance.properlyDominates(v, point);
    });
    if (!movable) {
      ++left;
      continue;
    }
    GroupKey key{
        subgraph,
        firstReader(update),
        cast<RankedTensorType>(updatedParam(update).getType()).getElementType(),
        update->getName(),
        update->getPropertiesAsAttribute(),
        scalarsOf(update)};
    auto it =
        llvm::find_if(groups, [&](const Group &g) { return g.key == key; });
    if (it == groups.end()) {
      groups.push_back(Group{key, {}});
      it = std::prev(groups.end());
    }
    it->members.push_back(update);
  }

  // Issue order: by first reader, then by first member (stable).
  std::stable_sort(groups.begin(), groups.end(),
                   [](const Group &a, const Group &b) {
                     return a.key.firstReader < b.key.firstReader;
                   });

  // Cut by the size limits.
  SmallVector<Group> cut;
  for (Group &group : groups) {
    Group current{group.key, {}};
    int64_t elements = 0;
    for (Operation *update : group.members) {
      int64_t n = elementsOf(updatedParam(update));
      bool full =
          (maxTensors > 0 && int64_t(current.members.size()) >= maxTensors) ||
          (maxElements > 0 && !current.members.empty() &&
           elements + n > maxElements);
      if (full) {
        cut.push_back(std::move(current));
        current = Group{group.key, {}};
        elements = 0;
      }
      current.members.push_back(update);
      elements += n;
    }
    if (!current.members.empty())
      cut.push_back(std::move(current));
  }

  // Place the groups in issue order: the first before the subgraph's first
  // update (only that placement needs it, so it may be erased then), each
  // next one after the previous.
  llvm::DenseMap<Attribute, Operation *> lastPlaced;
  OpBuilder builder(function.getContext());
  unsigned grouped = 0, created = 0;
  std::string sizes;
  for (Group &group : cut) {
    Attribute subgraph = group.key.subgraph;
    if (int64_t(group.members.size()) < std::max<int64_t>(minTensors, 1)) {
      // Too small to merge: the updates stay, at their group's place.
      for (Operation *update : group.members) {
        Operation *last = lastPlaced.lookup(subgraph);
        if (!last) {
          Operation *first = insertionPoint.lookup(subgraph);
          if (first != update)
            update->moveBefore(first);
        } else {
          update->moveAfter(last);
        }
        lastPlaced[subgraph] = update;
      }
      left += group.members.size();
      continue;
    }
    if (Operation *last = lastPlaced.lookup(subgraph))
      builder.setInsertionPointAfter(last);
    else
      builder.setInsertionPoint(insertionPoint.lookup(subgraph));
    SmallVector<Location> locs;
    for (Operation *update : group.members)
      locs.push_back(update->getLoc());
    Location loc = builder.getFusedLoc(locs);
    Operation *front = group.members.front();
    Operation *multi = isa<SgdUpdateOp>(front)
                           ? mergeSgd(builder, loc, group.members)
                       : isa<LarsUpdateOp>(front)
                           ? mergeLars(builder, loc, group.members)
                           : mergeAdamW(builder, loc, group.members);
    multi->setAttr(kSubgraphAttr, subgraph);
    lastPlaced[subgraph] = multi;
    for (Operation *update : group.members)
      update->erase();
    grouped += group.members.size();
    ++created;
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(group.members.size());
    sizes += group.key.firstReader == kNoReader
                 ? std::string(" read by no subgraph")
                 : " for " + nameOfRank[group.key.firstReader].str();
  }
  numGroupedUpdates += grouped;
  numGroups += created;
  numUngroupedUpdates += left;
  if (report)
    function.emitRemark() << "rn-group-updates: " << grouped
                          << " per-parameter updates in " << created
                          << " multi-tensor updates"
                          << (sizes.empty() ? "" : " (") << sizes
                          << (sizes.empty() ? "" : ")") << ", " << left
                          << " left per parameter";
  return success();
}

void GroupUpdatesPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (module.getOps<SubgraphOp>().empty()) {
    module.emitError("rn-group-updates needs a partitioned module (it groups "
                     "by the subgraph that reads each parameter): run "
                     "rn-partition first");
    return signalPassFailure();
  }
  if (!module.getOps<MemoryPlanOp>().empty()) {
    module.emitError("rn-group-updates runs before rn-plan-memory");
    return signalPassFailure();
  }
  for (auto function : module.getOps<func::FuncOp>())
    if (failed(runOnFunction(module, function)))
      return signalPassFailure();
}
