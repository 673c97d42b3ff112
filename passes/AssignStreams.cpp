//===- AssignStreams.cpp - Give every op its stream -----------------------===//
//
// Applies the static policy of StreamPolicy.cpp: each op of a partitioned
// step function gets its representative stream (rn.stream); forking ops
// also get the stream of each part (rn.stream_map: role -> stream).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/StreamPolicy.h"

#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "rn-assign-streams"

namespace mlir::rn {
#define GEN_PASS_DEF_ASSIGNSTREAMS
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;

namespace {
struct AssignStreamsPass
    : public mlir::rn::impl::AssignStreamsBase<AssignStreamsPass> {
  using AssignStreamsBase::AssignStreamsBase;
  void runOnOperation() override;
};
} // namespace

void AssignStreamsPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = module.getContext();
  StreamPolicy policyTable(ctx);
  std::string errorMessage;
  if (failed(policyTable.applyOverrides(policy, errorMessage))) {
    module.emitError(errorMessage);
    return signalPassFailure();
  }
  if (module.getOps<SubgraphOp>().empty()) {
    module.emitError("rn-assign-streams needs a partitioned module; run "
                     "rn-partition first");
    return signalPassFailure();
  }
  auto streamAttr = [&](StreamKind kind) {
    return StreamKindAttr::get(ctx, kind);
  };
  if (singleStream)
    for (SubgraphOp subgraph : module.getOps<SubgraphOp>())
      subgraph.setPrimaryAttr(streamAttr(StreamKind::comp1));

  WalkResult result = module.walk([&](Operation *op) -> WalkResult {
    auto subgraph = op->getAttrOfType<FlatSymbolRefAttr>(kSubgraphAttr);
    if (!subgraph || isa<EventRecordOp, EventWaitOp>(op))
      return WalkResult::advance();
    // Subgraph symbols of @eval_step carry an EVAL_ prefix; the policy
    // keys on the plain name.
    StringRef name = subgraph.getValue();
    name.consume_front("EVAL_");
    std::optional<StreamKind> stream =
        singleStream ? StreamKind::comp1 : policyTable.getStream(op, name);
    if (!stream) {
      op->emitError("no stream policy for '")
          << op->getName()
          << "'; give the op RN_OnStream<\"...\"> in its ODS or pass "
             "policy=...";
      return WalkResult::interrupt();
    }
    op->setAttr(kStreamAttr, streamAttr(*stream));
    ++numOps;
    if (auto forking = dyn_cast<ForkingOpInterface>(op)) {
      SmallVector<NamedAttribute> map;
      for (const ForkPart &part : forking.getForkParts()) {
        std::optional<StreamKind> partStream =
            singleStream ? StreamKind::comp1
                         : policyTable.getRoleStream(part.role);
        if (!partStream) {
          op->emitError("no stream policy for the '")
              << part.role << "' part of '" << op->getName() << "'";
          return WalkResult::interrupt();
        }
        map.push_back(NamedAttribute(StringAttr::get(ctx, part.role),
                                     streamAttr(*partStream)));
      }
      op->setAttr(kStreamMapAttr, DictionaryAttr::get(ctx, map));
      ++numForkingOps;
    }
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    signalPassFailure();
}
