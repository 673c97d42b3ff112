//===- GroupUpdates.cpp - Per-parameter SGD updates -> multi-tensor ones -===//
//
// Merges the rn.sgd_update ops of a subgraph into rn.multi_sgd_update ops:
// one group per (attributes, lr, skip_if, element type, first reader), where
// the first reader of a parameter is the earliest subgraph of the step that
// reads its state argument or that of its low-precision copy. Groups are
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

/// What two updates must share to be merged.
struct GroupKey {
  Attribute subgraph;
  unsigned firstReader = kNoReader;
  Type elementType;
  Attribute momentum, weightDecay;
  bool nesterov = false;
  Value lr, skip;

  bool operator==(const GroupKey &other) const {
    return subgraph == other.subgraph && firstReader == other.firstReader &&
           elementType == other.elementType && momentum == other.momentum &&
           weightDecay == other.weightDecay && nesterov == other.nesterov &&
           lr == other.lr && skip == other.skip;
  }
};

struct Group {
  GroupKey key;
  SmallVector<SgdUpdateOp> members; ///< in function order
};

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
  SmallVector<SgdUpdateOp> updates;
  for (auto update : body.getOps<SgdUpdateOp>())
    updates.push_back(update);
  // AdamW and LARS stay per parameter (LARS needs a norm per tensor).
  unsigned others = 0;
  for (Operation &op : body)
    others += isa<AdamWUpdateOp, LarsUpdateOp>(op);
  if (updates.empty() && others == 0)
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

  // The earliest subgraph reading `param` (its argument, or its copies'),
  // the update itself aside.
  auto firstReader = [&](SgdUpdateOp update) {
    unsigned rank = kNoReader;
    auto visit = [&](Value value) {
      for (Operation *user : value.getUsers()) {
        if (user == update.getOperation())
          continue;
        auto it = rankOf.find(user->getAttr(kSubgraphAttr));
        if (it != rankOf.end())
          rank = std::min(rank, it->second);
      }
    };
    Value param = update.getParam();
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
  unsigned left = others;
  for (SgdUpdateOp update : updates) {
    Attribute subgraph = update->getAttr(kSubgraphAttr);
    Operation *&point = insertionPoint[subgraph];
    if (!point)
      point = update.getOperation();
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
        cast<RankedTensorType>(update.getParam().getType()).getElementType(),
        update.getMomentumAttr(),
        update.getWeightDecayAttr(),
        update.getNesterov(),
        update.getLr(),
        update.getSkipIf()};
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
    for (SgdUpdateOp update : group.members) {
      int64_t n = elementsOf(update.getParam());
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
  auto placeBuilder = [&](Attribute subgraph) {
    if (Operation *last = lastPlaced.lookup(subgraph))
      builder.setInsertionPointAfter(last);
    else
      builder.setInsertionPoint(insertionPoint.lookup(subgraph));
  };
  unsigned grouped = 0, created = 0;
  std::string sizes;
  for (Group &group : cut) {
    Attribute subgraph = group.key.subgraph;
    if (int64_t(group.members.size()) < std::max<int64_t>(minTensors, 1)) {
      // Too small to merge: the updates stay, at their group's place.
      for (SgdUpdateOp update : group.members) {
        Operation *last = lastPlaced.lookup(subgraph);
        if (!last) {
          Operation *first = insertionPoint.lookup(subgraph);
          if (first != update.getOperation())
            update->moveBefore(first);
        } else {
          update->moveAfter(last);
        }
        lastPlaced[subgraph] = update.getOperation();
      }
      left += group.members.size();
      continue;
    }
    SmallVector<Value> params, grads, buffers;
    SmallVector<Type> resultTypes, bufferTypes;
    SmallVector<Location> locs;
    for (SgdUpdateOp update : group.members) {
      params.push_back(update.getParam());
      grads.push_back(update.getGrad());
      resultTypes.push_back(update.getNewParam().getType());
      if (Value buffer = update.getMomentumBuffer()) {
        buffers.push_back(buffer);
        bufferTypes.push_back(update.getNewMomentumBuffer().getType());
      }
      locs.push_back(update.getLoc());
    }
    llvm::append_range(resultTypes, bufferTypes);
    SgdUpdateOp first = group.members.front();
    placeBuilder(subgraph);
    auto multi = MultiSgdUpdateOp::create(
        builder, builder.getFusedLoc(locs), resultTypes, params, grads, buffers,
        first.getLr(), first.getSkipIf(), first.getMomentumAttr(),
        first.getWeightDecayAttr(), first.getNesterovAttr());
    multi->setAttr(kSubgraphAttr, subgraph);
    lastPlaced[subgraph] = multi.getOperation();
    for (auto [i, update] : llvm::enumerate(group.members)) {
      update.getNewParam().replaceAllUsesWith(multi.getNewParams()[i]);
      if (Value buffer = update.getNewMomentumBuffer())
        buffer.replaceAllUsesWith(multi.getNewMomentumBuffers()[i]);
      update->erase();
    }
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
                          << " sgd_update in " << created << " multi_sgd_update"
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
