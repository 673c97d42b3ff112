//===- RNOps.h - Ops of the rn dialect --------------------------*- C++ -*-===//

#ifndef RN_DIALECTS_RN_RNOPS_H
#define RN_DIALECTS_RN_RNOPS_H

#include "dialects/rn/RNDialect.h"
#include "dialects/rn/RNTraining.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::rn {

/// ODS trait RN_ArtifactOp: the op may appear in an artifact. A marker read
/// by rn-tblgen (the runtime's op table); it adds nothing to the op.
template <typename ConcreteType>
class ArtifactOp : public OpTrait::TraitBase<ConcreteType, ArtifactOp> {};

/// The state of the random generator that dropout masks are drawn from.
struct RandomGeneratorResource
    : public SideEffects::Resource::Base<RandomGeneratorResource> {
  llvm::StringRef getName() override { return "rn.random_generator"; }
};

/// What data-parallel replicas exchange: collectives must stay where they
/// are, as many as there are.
struct CollectiveResource
    : public SideEffects::Resource::Base<CollectiveResource> {
  llvm::StringRef getName() override { return "rn.collective"; }
};

/// One part of a forking op (see ForkingOpInterface): a role such as
/// "input_grad", "weight_grad" or "bias_grad", and the values it reads and
/// writes.
struct ForkPart {
  llvm::StringRef role;
  llvm::SmallVector<Value, 4> reads;
  llvm::SmallVector<Value, 2> writes;
};

/// The type of the state an rn.parameter or rn.state declares; null for
/// any other op.
Type getDeclaredStateType(Operation *declaration);

} // namespace mlir::rn

#include "dialects/rn/RNInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/rn/RNOps.h.inc"

#endif // RN_DIALECTS_RN_RNOPS_H
