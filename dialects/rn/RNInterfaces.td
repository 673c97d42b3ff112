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

#endif // RN_DIALECT_RN_INTERFACES_TD
