//===- RNScheduleOps.cpp - Verification of scheduling-level rn ops --------===//

#include "dialects/rn/RNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::rn;

LogicalResult
SubgraphOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (!symbolTable.lookupNearestSymbolFrom<func::FuncOp>(*this,
                                                         getFunctionAttr()))
    return emitOpError("names ")
           << getFunctionAttr() << ", which is not a function";
  return success();
}

/// A launch or host wait names a subgraph, with a variant exactly when the
/// subgraph is double-buffered.
static LogicalResult verifySubgraphReference(Operation *op,
                                             FlatSymbolRefAttr subgraph,
                                             bool hasVariant,
                                             SymbolTableCollection &table) {
  auto declaration = table.lookupNearestSymbolFrom<SubgraphOp>(op, subgraph);
  if (!declaration)
    return op->emitOpError("names ")
           << subgraph << ", which is not an rn.subgraph";
  if (declaration.getDoubleBuffered() != hasVariant)
    return op->emitOpError()
           << subgraph
           << (hasVariant ? " is not double-buffered and has no variant"
                          : " is double-buffered: name variant a or b");
  return success();
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifySubgraphReference(*this, getSubgraphAttr(),
                                 getVariant().has_value(), table);
}

LogicalResult HostWaitOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifySubgraphReference(*this, getSubgraphAttr(),
                                 getVariant().has_value(), table);
}

LogicalResult MemoryPlanOp::verify() {
  int64_t alignment = getAlignment();
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0)
    return emitOpError("alignment must be a power of two, got ") << alignment;
  SmallVector<ExtentAttr> extents;
  llvm::SmallDenseSet<unsigned> kinds;
  for (Attribute attr : getRegions()) {
    auto extent = cast<ExtentAttr>(attr);
    if (!kinds.insert(static_cast<unsigned>(extent.getRegion())).second)
      return emitOpError("region ")
             << stringifyRegionKind(extent.getRegion()) << " appears twice";
    if (extent.getOffset() % alignment != 0)
      return emitOpError("region ")
             << stringifyRegionKind(extent.getRegion()) << " at offset "
             << extent.getOffset() << " is not " << alignment
             << "-byte aligned";
    if (extent.getOffset() + extent.getSize() >
        static_cast<uint64_t>(getArenaBytes()))
      return emitOpError("region ")
             << stringifyRegionKind(extent.getRegion()) << " ends at "
             << extent.getOffset() + extent.getSize()
             << ", past the arena of " << getArenaBytes() << " bytes";
    extents.push_back(extent);
  }
  llvm::sort(extents, [](ExtentAttr a, ExtentAttr b) {
    return a.getOffset() < b.getOffset();
  });
  for (size_t i = 1; i < extents.size(); ++i)
    if (extents[i - 1].getOffset() + extents[i - 1].getSize() >
        extents[i].getOffset())
      return emitOpError("regions ")
             << stringifyRegionKind(extents[i - 1].getRegion()) << " and "
             << stringifyRegionKind(extents[i].getRegion()) << " overlap";
  return success();
}

static LogicalResult verifyEventId(Operation *op, int64_t event) {
  if (event < 0)
    return op->emitOpError("event id must be non-negative, got ") << event;
  return success();
}

LogicalResult EventRecordOp::verify() {
  return verifyEventId(*this, getEvent());
}

LogicalResult EventWaitOp::verify() {
  if (getDistance() > 2) // unsigned: a negative distance reads as huge
    return emitOpError("distance must be 0, 1 or 2 steps, got ")
           << getDistance();
  return verifyEventId(*this, getEvent());
}
