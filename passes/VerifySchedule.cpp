//===- VerifySchedule.cpp - Prove the event barriers sufficient -----------===//
//
// Rebuilds the happens-before model of each step function from its explicit
// events only (ScheduleModel.h, fork/join included) and reports:
//   - every cross-stream hazard no event path orders, as an error at the
//     later op naming both ops, the slot (or the stream workspace both
//     write) and the streams;
//   - every wait that orders nothing new, as a remark;
//   - capture structure errors: a secondary stream not forked from the
//     subgraph's primary at entry, or not joined back before its end;
//     waits on events nobody records.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/ScheduleModel.h"

#include "llvm/Support/FormatVariadic.h"

#define DEBUG_TYPE "rn-verify-schedule"

namespace mlir::rn {
#define GEN_PASS_DEF_VERIFYSCHEDULE
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;

namespace {
struct VerifySchedulePass
    : public mlir::rn::impl::VerifyScheduleBase<VerifySchedulePass> {
  using VerifyScheduleBase::VerifyScheduleBase;
  void runOnOperation() override;

private:
  LogicalResult verifyFunction(func::FuncOp function);
  LogicalResult verifyCaptureStructure(ScheduleModel &model,
                                       func::FuncOp function);
};
} // namespace

static std::string describe(const ScheduleUnit &unit) {
  std::string text = ("'" + unit.op->getName().getStringRef() + "'").str();
  if (!unit.role.empty())
    text += (" (" + unit.role + " part)").str();
  return text + " on " + stringifyStreamKind(unit.stream).str();
}

static std::string describe(const MemoryLocation &location) {
  if (location.isWorkspace())
    return ("the stream workspace " +
            stringifyRegionKind(static_cast<rn::RegionKind>(location.region)))
        .str();
  if (location.region <= static_cast<unsigned>(rn::RegionKind::workspace_update))
    return llvm::formatv("slot <{0}, {1}, {2}>",
                         stringifyRegionKind(
                             static_cast<rn::RegionKind>(location.region)),
                         location.offset, location.size)
        .str();
  return "an unplanned value";
}

LogicalResult
VerifySchedulePass::verifyCaptureStructure(ScheduleModel &model,
                                           func::FuncOp function) {
  // Per subgraph: each secondary stream's first element must be a fork wait
  // and its last a join record that the primary waits for.
  Block &body = function.getBody().front();
  bool ok = true;
  llvm::DenseSet<int64_t> recorded;
  function.walk([&](EventRecordOp op) { recorded.insert(op.getEvent()); });
  function.walk([&](EventWaitOp op) {
    if (!recorded.contains(op.getEvent())) {
      op.emitError("waits on event ")
          << op.getEvent() << ", which nothing in @"
          << function.getSymName() << " records";
      ok = false;
    }
  });
  for (SubgraphOp subgraph : model.getSubgraphs()) {
    StreamKind primary = subgraph.getPrimary();
    llvm::DenseMap<StreamKind, Operation *> first, last;
    llvm::DenseSet<int64_t> primaryJoinWaits;
    for (Operation &op : body.without_terminator()) {
      auto symbol = op.getAttrOfType<FlatSymbolRefAttr>(kSubgraphAttr);
      if (!symbol || symbol.getValue() != subgraph.getSymName())
        continue;
      SmallVector<StreamKind, 3> streams;
      if (auto record = dyn_cast<EventRecordOp>(op))
        streams.push_back(record.getStream());
      else if (auto wait = dyn_cast<EventWaitOp>(op)) {
        streams.push_back(wait.getStream());
        if (wait.getStream() == primary && wait.getKind() == EventKind::join)
          primaryJoinWaits.insert(wait.getEvent());
      } else if (auto map = op.getAttrOfType<DictionaryAttr>(kStreamMapAttr))
        for (NamedAttribute entry : map)
          streams.push_back(cast<StreamKindAttr>(entry.getValue()).getValue());
      else if (auto stream = op.getAttrOfType<StreamKindAttr>(kStreamAttr))
        streams.push_back(stream.getValue());
      for (StreamKind stream : streams) {
        first.try_emplace(stream, &op);
        last[stream] = &op;
      }
    }
    for (auto [stream, op] : first) {
      if (stream == primary)
        continue;
      auto wait = dyn_cast<EventWaitOp>(op);
      if (!wait || wait.getKind() != EventKind::fork) {
        op->emitError("stream ")
            << stringifyStreamKind(stream) << " starts work in subgraph @"
            << subgraph.getSymName() << " without a fork event from "
            << stringifyStreamKind(primary) << ": capture would not include it";
        ok = false;
      }
      auto record = dyn_cast<EventRecordOp>(last[stream]);
      if (!record || record.getKind() != EventKind::join ||
          !primaryJoinWaits.contains(record.getEvent())) {
        last[stream]->emitError("stream ")
            << stringifyStreamKind(stream) << " ends subgraph @"
            << subgraph.getSymName() << " without joining "
            << stringifyStreamKind(primary)
            << ": unjoined work makes capture fail";
        ok = false;
      }
    }
  }
  return success(ok);
}

LogicalResult VerifySchedulePass::verifyFunction(func::FuncOp function) {
  ScheduleModel model(function, /*implicitForkJoin=*/false);
  if (failed(model.initialize()))
    return failure();
  // Hazards are only meaningful for a well-formed capture.
  if (failed(verifyCaptureStructure(model, function)))
    return failure();
  bool ok = true;

  // One error per (producer, consumer) pair, at its first hazard.
  llvm::DenseSet<std::pair<const ScheduleUnit *, const ScheduleUnit *>> seen;
  uint64_t hazards = 0, redundant = 0;
  model.run({[&](const Hazard &hazard) {
               ++hazards;
               if (!seen.insert({hazard.earlier, hazard.later}).second)
                 return true;
               ok = false;
               InFlightDiagnostic diag =
                   hazard.later->op->emitError("missing barrier: ")
                   << describe(*hazard.later) << " "
                   << (hazard.kind == HazardKind::ReadAfterWrite ? "reads"
                                                                 : "writes")
                   << " " << describe(hazard.location) << " that "
                   << describe(*hazard.earlier)
                   << (hazard.kind == HazardKind::WriteAfterRead ? " reads"
                                                                 : " writes")
                   << ", and no event orders them ("
                   << stringifyHazardKind(hazard.kind) << ")";
               diag.attachNote(hazard.earlier->op->getLoc())
                   << "the earlier access";
               // Treat it as ordered to report each pair once.
               return true;
             },
             [&](EventWaitOp wait, bool isRedundant) {
               if (!isRedundant)
                 return;
               ++redundant;
               wait.emitRemark("redundant wait: event ")
                   << wait.getEvent()
                   << " orders nothing that is not already ordered";
             }});
  numHazards += hazards;
  numRedundantWaits += redundant;
  return success(ok);
}

void VerifySchedulePass::runOnOperation() {
  ModuleOp module = getOperation();
  bool ok = true;
  for (StringRef name : {"train_step", "eval_step"})
    if (auto function = module.lookupSymbol<func::FuncOp>(name))
      ok &= succeeded(verifyFunction(function));
  if (!ok)
    signalPassFailure();
}
