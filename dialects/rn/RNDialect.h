//===- RNDialect.h - The rn dialect, enums and attributes -------*- C++ -*-===//

#ifndef RN_DIALECTS_RN_RNDIALECT_H
#define RN_DIALECTS_RN_RNDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/rn/RNDialect.h.inc"
#include "dialects/rn/RNEnums.h.inc"
#include "mlir/IR/BuiltinTypes.h"

#define GET_ATTRDEF_CLASSES
#include "dialects/rn/RNAttrs.h.inc"

namespace mlir::rn {

/// Module attribute: which model the module holds.
constexpr llvm::StringLiteral kModelNameAttr = "rn.model";
/// Module attribute: the options rn-build-training ran with.
constexpr llvm::StringLiteral kTrainingAttr = "rn.training";
/// Function argument/result attribute: the state symbol the value is.
constexpr llvm::StringLiteral kStateAttr = "rn.state";
/// Function argument attribute: which per-step input (images, labels, lr,
/// step) the argument is.
constexpr llvm::StringLiteral kInputAttr = "rn.input";
/// Function result attribute: which per-step output (loss, correct,
/// logits) the result is.
constexpr llvm::StringLiteral kOutputAttr = "rn.output";
/// Op attribute: the rn.subgraph symbol the op is captured in.
constexpr llvm::StringLiteral kSubgraphAttr = "rn.subgraph";
/// Op attribute: the representative stream (#rn.stream<...>).
constexpr llvm::StringLiteral kStreamAttr = "rn.stream";
/// Op attribute of forking ops: result name -> stream that computes it.
constexpr llvm::StringLiteral kStreamMapAttr = "rn.stream_map";
/// Op attribute of forking ops: flattened (from, to) pairs of parts; part
/// `to` starts after part `from` (an internal event, set by
/// rn-insert-barriers).
constexpr llvm::StringLiteral kPartWaitsAttr = "rn.part_waits";
/// Op attribute: one #rn.slot per result.
constexpr llvm::StringLiteral kSlotsAttr = "rn.slots";
/// Function argument/result attribute: the #rn.slot of the value.
constexpr llvm::StringLiteral kSlotAttr = "rn.slot";
/// On a bucketed gradient all-reduce and its gradients' casts
/// (rn-bucket-all-reduce): the bucket's index, in backward order.
constexpr llvm::StringLiteral kBucketAttr = "rn.bucket";

/// Bytes a value of `type` occupies on the device (i1 takes a byte); none
/// for types without a static size.
std::optional<uint64_t> getStorageBytes(Type type);

/// An initializer fits the state it initializes: a `values` init gives one
/// value per element of `type`; else an error on `op`.
LogicalResult verifyInitFits(Operation *op, InitAttr init,
                             RankedTensorType type);

} // namespace mlir::rn

#endif // RN_DIALECTS_RN_RNDIALECT_H
