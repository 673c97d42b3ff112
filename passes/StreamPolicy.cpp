//===- StreamPolicy.cpp - Static op -> stream policy ----------------------===//

#include "passes/StreamPolicy.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::rn;

// The policy of docs/design.md (from its source article). TRANS: host->device copies.
// COMP_1: GEMM-heavy work (convolution, fully connected, the loss, dW).
// COMP_2: reductions (BatchNorm, pooling, dropout and stochastic depth, dB,
// accuracy).
// COMP_3: elementwise work and dX. UPDATE: zero-grad, loss scaling,
// optimizers, casts of gradients and weights, EMA, running statistics and
// the gradient all-reduce of data-parallel training.
//
// Each op states its stream in its ODS (RN_OnStream<"comp1">, read through
// StreamClassOpInterface); only the parts of forking ops (conv, linear and
// CBR backward) have roles, whose streams are here.
namespace {
struct RoleEntry {
  llvm::StringLiteral role;
  StreamKind stream;
};
} // namespace

static constexpr RoleEntry kForkRoles[] = {
    {"weight_grad", StreamKind::comp1},
    {"bias_grad", StreamKind::comp2},
    {"bn_grad", StreamKind::comp2},
    {"input_grad", StreamKind::comp3},
};

StreamKind mlir::rn::getPrimaryStream(StringRef subgraph) {
  using namespace subgraphs;
  if (subgraph == kTransfer)
    return StreamKind::trans;
  if (subgraph == kFirstLayerFwd || subgraph == kDeepFwdBwd ||
      subgraph == kFirstLayerBwd || subgraph == kInference)
    return StreamKind::comp1;
  return StreamKind::update;
}

StreamPolicy::StreamPolicy(MLIRContext *context) {
  context->getOrLoadDialect<RNDialect>();
  for (RegisteredOperationName name : context->getRegisteredOperations())
    if (auto *streamClass = name.getInterface<StreamClassOpInterface>())
      table[name.stripDialect()] = streamClass->getDefaultStream();
  for (const RoleEntry &entry : kForkRoles)
    table[entry.role] = entry.stream;
}

LogicalResult StreamPolicy::applyOverrides(StringRef overrides,
                                           std::string &errorMessage) {
  SmallVector<StringRef> entries;
  overrides.split(entries, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef entry : entries) {
    auto [name, streamName] = entry.trim().split('=');
    name = name.trim();
    std::optional<StreamKind> stream = symbolizeStreamKind(streamName.trim());
    if (!stream) {
      errorMessage = ("policy entry '" + entry.trim() +
                      "' needs name=stream with stream one of trans, comp1, "
                      "comp2, comp3, update")
                         .str();
      return failure();
    }
    if (!table.count(name)) {
      errorMessage = ("policy entry '" + entry.trim() +
                      "' names no op or fork role of the table")
                         .str();
      return failure();
    }
    table[name] = *stream;
  }
  return success();
}

std::optional<StreamKind> StreamPolicy::getStream(Operation *op,
                                                  StringRef subgraph) const {
  if (isa<CastOp, MultiCastOp>(op) &&
      (subgraph == subgraphs::kCastGrad || subgraph == subgraphs::kCastWeights ||
       op->hasAttr(kBucketAttr)))
    return StreamKind::update;
  if (auto forking = dyn_cast<ForkingOpInterface>(op)) {
    SmallVector<ForkPart> parts = forking.getForkParts();
    // Consumers of dX wait on dX; without dX (the first layer), on dW.
    for (StringRef role : {"input_grad", "weight_grad"})
      for (const ForkPart &part : parts)
        if (part.role == role)
          return getRoleStream(role);
  }
  auto it = table.find(op->getName().stripDialect());
  if (it == table.end())
    return std::nullopt;
  return it->second;
}

std::optional<StreamKind> StreamPolicy::getRoleStream(StringRef role) const {
  auto it = table.find(role);
  if (it == table.end())
    return std::nullopt;
  return it->second;
}
