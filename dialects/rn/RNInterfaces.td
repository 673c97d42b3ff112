//===- RNInterfaces.td - Interfaces of rn ops --------------*- tablegen -*-===//

#ifndef RN_DIALECT_RN_INTERFACES_TD
#define RN_DIALECT_RN_INTERFACES_TD

include "mlir/IR/OpBase.td"

def RN_InPlaceOpInterface : OpInterface<"InPlaceOpInterface"> {
  let cppNamespace = "::mlir::rn";
  let description = [{
    An op some of whose results are new values of one of its operands (an
    optimizer's new parameter, an accumulated gradient). The memory planner
    gives such a result its operand's slot, so the update happens in place.
  }];
  let methods = [
    InterfaceMethod<
      "The operand that result `resultIndex` updates in place, if any.",
      "std::optional<unsigned>", "getUpdatedOperand",
      (ins "unsigned":$resultIndex)>,
  ];
}

def RN_ForkingOpInterface : OpInterface<"ForkingOpInterface"> {
  let cppNamespace = "::mlir::rn";
  let description = [{
    An op made of parts that can run on different streams (a convolution's
    dW, dB and dX). Each part has a role, which the stream policy maps to a
    stream, and the values it reads and writes; a part may read a result of
    an earlier part of the same op. The barrier pass orders the parts like
    separate ops; consumers of the op wait on its representative part.
  }];
  let methods = [
    InterfaceMethod<
      "The parts, in an order that respects their data dependencies.",
      "::llvm::SmallVector<::mlir::rn::ForkPart>", "getForkParts">,
  ];
}

//===----------------------------------------------------------------------===//
// Stream class
//===----------------------------------------------------------------------===//

def RN_StreamClassOpInterface : OpInterface<"StreamClassOpInterface"> {
  let cppNamespace = "::mlir::rn";
  let description = [{
    Which of the five streams of docs/design.md the op's work goes to under
    the built-in policy (passes/StreamPolicy.h: rn-partition's primary
    streams, rn-assign-streams). An op declares it with RN_OnStream<"comp1">
    beside its other traits; `stream-policy=name=stream` overrides it by op
    name. Ops without it (forking ops, whose parts have roles) are placed by
    their parts.
  }];
  let methods = [
    StaticInterfaceMethod<
      "The op's stream under the built-in policy.",
      "::mlir::rn::StreamKind", "getDefaultStream">,
  ];
}

class RN_OnStreamTrait<string kind>
    : ParamNativeOpTrait<"OnStream", "::mlir::rn::StreamKind::" # kind> {
  let cppNamespace = "::mlir::rn";
}

// The op runs on stream `kind` (trans, comp1, comp2, comp3 or update).
class RN_OnStream<string kind>
    : TraitList<[RN_StreamClassOpInterface, RN_OnStreamTrait<kind>]>;

//===----------------------------------------------------------------------===//
// Training: gradient rules, training and evaluation forms, randomness
//===----------------------------------------------------------------------===//

def RN_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::rn";
  let description = [{
    An op of the training forward pass with a gradient rule. rn-build-training
    walks the forward ops last first and, for each whose result has a
    gradient, calls `buildGradient`: the rule reads that gradient
    (`emitter.getResultGradient`), emits its backward ops at the builder's
    insertion point, adds its operands' gradients (`emitter.accumulate`, which
    sums fan-out) and advances the accumulators of the parameters it reads
    (`emitter.getAccumulator` / `setAccumulator`). Rules live in
    RNGradients.cpp, one per op.
  }];
  let methods = [
    InterfaceMethod<
      "Emits the backward ops of this op; fails with a diagnostic on the op.",
      "::mlir::LogicalResult", "buildGradient",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::rn::GradientEmitter &":$emitter)>,
  ];
}

def RN_ParameterOperandsOpInterface : OpInterface<"ParameterOperandsOpInterface"> {
  let cppNamespace = "::mlir::rn";
  let description = [{
    A model-level op that reads parameters: which of its operands are weights,
    biases, normalization parameters or running statistics. rn-build-training
    reads it to exclude biases and normalization parameters from weight decay
    on request, to keep normalization parameters f32 under mixed precision,
    to leave running statistics out of differentiation, and to refuse a
    trainable parameter read anywhere else.
  }];
  let methods = [
    InterfaceMethod<
      "The role of operand `index`.",
      "::mlir::rn::OperandRole", "getOperandRole", (ins "unsigned":$index)>,
  ];
}

def RN_TrainingFormOpInterface : OpInterface<"TrainingFormOpInterface"> {
  let cppNamespace = "::mlir::rn";
  let description = [{
    A model-level op that computes differently in training and in evaluation
    (batch statistics or running ones; a random mask or the identity).
    rn-build-training puts its training form (an op with a gradient rule) in
    train_step and its evaluation form in eval_step; other ops are cloned
    into both.
  }];
  let methods = [
    InterfaceMethod<
      "Creates the training form; maps this op's results to its results.",
      "::mlir::Operation *", "buildTrainingForm",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::rn::TrainingFormContext &":$context)>,
    InterfaceMethod<
      "Maps this op's results to their evaluation form, creating any op it "
      "needs (none for an identity).",
      "void", "buildEvalForm",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::IRMapping &":$mapping)>,
  ];
}

// The op's training form draws random numbers from its own stream of the
// step (Note [Random streams] in runtime/cpu/cpu_kernels.h): rn-build-training
// numbers these ops together in forward order.
def RN_RandomInTraining : NativeOpTrait<"RandomInTraining"> {
  let cppNamespace = "::mlir::rn";
}

#endif // RN_DIALECT_RN_INTERFACES_TD
