//===- InsertBarriers.cpp - Precise event barriers ------------------------===//
//
// Walks the happens-before model of each step function (ScheduleModel.h)
// and, for every cross-stream hazard on memory (a slot, or the workspace
// every op on a stream uses) that nothing orders yet, records an event
// after the producer on its stream and waits for it before the consumer on
// the consumer's stream. Hazards already ordered through
// earlier barriers, program order or fork/join are skipped, so the waits are
// point to point and none is implied by others. Then every subgraph gets
// explicit fork events (primary -> each secondary stream at entry) and join
// events (each secondary -> primary at exit) for multi-stream capture.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/ScheduleModel.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "rn-insert-barriers"

namespace mlir::rn {
#define GEN_PASS_DEF_INSERTBARRIERS
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;

namespace {
struct InsertBarriersPass
    : public mlir::rn::impl::InsertBarriersBase<InsertBarriersPass> {
  using InsertBarriersBase::InsertBarriersBase;
  void runOnOperation() override;

private:
  LogicalResult insertInto(func::FuncOp function);
  int64_t nextEvent = 0;
};
} // namespace


LogicalResult InsertBarriersPass::insertInto(func::FuncOp function) {
  ScheduleModel model(function, /*implicitForkJoin=*/true);
  if (failed(model.initialize()))
    return failure();

  // The baselines: every unordered hazard without transitive elision, and a
  // barrier per op (each op waiting for every other stream the step uses).
  uint64_t unelidedWaits = 0, naiveWaits = 0, waits = 0, forkJoinEvents = 0;
  // Waits that only a stream workspace needs (no data hazard of the pair
  // came first).
  uint64_t workspaceWaits = 0;
  model.run({[&](const Hazard &) {
               ++unelidedWaits;
               return false;
             },
             nullptr});
  llvm::SmallDenseSet<StreamKind> streamsUsed;
  for (SubgraphOp subgraph : model.getSubgraphs())
    for (StreamKind stream : model.getStreams(subgraph))
      streamsUsed.insert(stream);
  naiveWaits = model.getUnits().size() * (streamsUsed.size() - 1);

  // The same model again, now ordering every hazard it sees.
  model.run({[](const Hazard &) { return true; }, nullptr});

  MLIRContext *ctx = function.getContext();
  OpBuilder builder(ctx);
  auto stream = [&](StreamKind kind) { return StreamKindAttr::get(ctx, kind); };
  auto record = [&](Location loc, EventKind kind, int64_t event,
                    StreamKind on) {
    return EventRecordOp::create(builder, loc, EventKindAttr::get(ctx, kind),
                                 builder.getI64IntegerAttr(event), stream(on));
  };
  auto wait = [&](Location loc, EventKind kind, int64_t event, StreamKind on,
                  unsigned distance) {
    return EventWaitOp::create(builder, loc, EventKindAttr::get(ctx, kind),
                               builder.getI64IntegerAttr(event), stream(on),
                               builder.getI64IntegerAttr(distance));
  };
  auto tag = [&](Operation *event, Operation *like) {
    event->setAttr(kSubgraphAttr, like->getAttr(kSubgraphAttr));
  };

  // Parts of one op are ordered by the op (an internal event the executor
  // adds between its parts), listed in rn.part_waits.
  llvm::MapVector<Operation *, SmallVector<int64_t>> partWaits;
  // One event per producing unit, recorded right after its op.
  llvm::DenseMap<const ScheduleUnit *, int64_t> eventOf;
  llvm::DenseSet<std::tuple<Operation *, unsigned, int64_t, unsigned>> placed;
  for (const ScheduleModel::Barrier &barrier : model.getBarriers()) {
    const ScheduleUnit *producer = barrier.producer;
    const ScheduleUnit *consumer = barrier.consumer;
    if (producer->op == consumer->op && barrier.distance == 0) {
      SmallVector<int64_t> &pairs = partWaits[consumer->op];
      pairs.push_back(producer->part);
      pairs.push_back(consumer->part);
      ++waits;
      continue;
    }
    SubgraphOp producerGraph = producer->subgraph;
    SubgraphOp consumerGraph = consumer->subgraph;
    EventKind kind =
        producerGraph == consumerGraph ? EventKind::internal
                                       : EventKind::external;
    auto [it, isNew] = eventOf.try_emplace(producer, nextEvent);
    if (isNew) {
      ++nextEvent;
      builder.setInsertionPointAfter(producer->op);
      tag(record(producer->op->getLoc(), kind, it->second, producer->stream),
          producer->op);
    }
    bool bothDoubled = producerGraph.getDoubleBuffered() &&
                       consumerGraph.getDoubleBuffered();
    unsigned distance = bothDoubled ? barrier.distance : 0;
    if (!placed
             .insert({consumer->op, static_cast<unsigned>(consumer->stream),
                      it->second, distance})
             .second)
      continue;
    builder.setInsertionPoint(consumer->op);
    tag(wait(consumer->op->getLoc(), kind, it->second, consumer->stream,
             distance),
        consumer->op);
    ++waits;
    if (barrier.workspace)
      ++workspaceWaits;
  }
  // An internal event recorded after a producer may also be waited on from
  // another subgraph: the record's kind is the first consumer's; mark mixed
  // ones external.
  for (auto &[op, pairs] : partWaits)
    op->setAttr(kPartWaitsAttr, DenseI64ArrayAttr::get(ctx, pairs));
  llvm::DenseSet<int64_t> external;
  function.walk([&](EventWaitOp op) {
    if (op.getKind() == EventKind::external)
      external.insert(op.getEvent());
  });
  function.walk([&](EventRecordOp op) {
    if (external.contains(op.getEvent()))
      op.setKind(EventKind::external);
  });

  // Fork and join events around every subgraph that uses several streams.
  Block &body = function.getBody().front();
  for (SubgraphOp subgraph : model.getSubgraphs()) {
    SmallVector<StreamKind> streams = model.getStreams(subgraph);
    if (streams.size() < 2)
      continue;
    Operation *first = nullptr, *last = nullptr;
    for (Operation &op : body.without_terminator())
      if (op.getAttrOfType<FlatSymbolRefAttr>(kSubgraphAttr).getAttr() ==
          subgraph.getSymNameAttr()) {
        if (!first)
          first = &op;
        last = &op;
      }
    StreamKind primary = subgraph.getPrimary();
    Location loc = first->getLoc();
    builder.setInsertionPoint(first);
    int64_t fork = nextEvent++;
    tag(record(loc, EventKind::fork, fork, primary), first);
    ++forkJoinEvents;
    for (StreamKind secondary : llvm::drop_begin(streams))
      tag(wait(loc, EventKind::fork, fork, secondary, 0), first);
    builder.setInsertionPointAfter(last);
    for (StreamKind secondary : llvm::drop_begin(streams)) {
      int64_t join = nextEvent++;
      ++forkJoinEvents;
      tag(record(last->getLoc(), EventKind::join, join, secondary), last);
      auto joinWait = wait(last->getLoc(), EventKind::join, join, primary, 0);
      tag(joinWait, last);
      builder.setInsertionPointAfter(joinWait);
    }
  }

  numCrossStreamWaits += waits;
  numNaiveWaits += naiveWaits;
  numUnelidedWaits += unelidedWaits;
  numForkJoinEvents += forkJoinEvents;
  if (report)
    mlir::emitRemark(function.getLoc())
        << "@" << function.getSymName() << ": " << waits
                          << " cross-stream waits (" << unelidedWaits
                          << " without transitive elision, " << naiveWaits
                          << " with a barrier per op), " << forkJoinEvents
                          << " fork/join events; " << workspaceWaits
                          << " of the waits order stream workspaces";
  return success();
}

void InsertBarriersPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (!module.getOps<EventWaitOp>().empty() ||
      module.walk([](EventRecordOp) { return WalkResult::interrupt(); })
          .wasInterrupted()) {
    module.emitError("the module already has event barriers");
    return signalPassFailure();
  }
  for (StringRef name : {"train_step", "eval_step"}) {
    auto function = module.lookupSymbol<func::FuncOp>(name);
    if (!function)
      continue;
    if (failed(insertInto(function)))
      return signalPassFailure();
  }
}
