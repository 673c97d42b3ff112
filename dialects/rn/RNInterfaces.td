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

#endif // RN_DIALECT_RN_INTERFACES_TD
