//===- StreamPolicy.h - Static op -> stream policy --------------*- C++ -*-===//
//
// The five streams of docs/design.md and which ops go where: one table, read by
// rn-partition (a subgraph's primary stream) and rn-assign-streams.
//
//===----------------------------------------------------------------------===//

#ifndef RN_PASSES_STREAMPOLICY_H
#define RN_PASSES_STREAMPOLICY_H

#include "dialects/rn/RNOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::rn {

/// Subgraph names, in the order a training step launches them.
namespace subgraphs {
constexpr llvm::StringLiteral kTransfer = "TRANSFER";
constexpr llvm::StringLiteral kZeroGrad = "ZERO_GRAD";
constexpr llvm::StringLiteral kFirstLayerFwd = "FIRST_LAYER_FWD";
constexpr llvm::StringLiteral kDeepFwdBwd = "DEEP_FWD_BWD";
constexpr llvm::StringLiteral kFirstLayerBwd = "FIRST_LAYER_BWD";
constexpr llvm::StringLiteral kCastGrad = "CAST_GRAD";
constexpr llvm::StringLiteral kAllReduce = "ALL_REDUCE";
constexpr llvm::StringLiteral kNanCheck = "NAN_CHECK_AND_GRAD_SCALING";
constexpr llvm::StringLiteral kOptimizer = "OPTIMIZER";
constexpr llvm::StringLiteral kUpdateBnStats = "UPDATE_BN_STATS";
constexpr llvm::StringLiteral kCastWeights = "CAST_WEIGHTS";
constexpr llvm::StringLiteral kEmaUpdate = "EMA_UPDATE";
constexpr llvm::StringLiteral kInference = "INFERENCE";
} // namespace subgraphs

/// The primary stream of a subgraph: its capture begins and ends there.
StreamKind getPrimaryStream(llvm::StringRef subgraph);

/// The stream policy: op name (without "rn.") or fork role -> stream, with
/// user overrides applied on top of the built-in one.
class StreamPolicy {
public:
  /// The built-in policy: every registered op's RN_OnStream (ODS) and the
  /// fork roles' streams.
  explicit StreamPolicy(MLIRContext *context);

  /// Applies "name=stream,..." overrides; fails with a message naming the
  /// bad entry.
  LogicalResult applyOverrides(llvm::StringRef overrides,
                               std::string &errorMessage);

  /// The stream of `op` (for forking ops: of its representative part), or
  /// none for ops outside the table. `subgraph` disambiguates casts: casts
  /// in CAST_GRAD/CAST_WEIGHTS are update work.
  std::optional<StreamKind> getStream(Operation *op,
                                      llvm::StringRef subgraph) const;

  /// The stream of a fork part role (input_grad, weight_grad, ...).
  std::optional<StreamKind> getRoleStream(llvm::StringRef role) const;

private:
  llvm::StringMap<StreamKind> table;
};

} // namespace mlir::rn

#endif // RN_PASSES_STREAMPOLICY_H
