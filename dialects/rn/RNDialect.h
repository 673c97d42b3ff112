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

#define GET_ATTRDEF_CLASSES
#include "dialects/rn/RNAttrs.h.inc"

namespace mlir::rn {

/// Name of the module attribute that records which model a module holds.
constexpr llvm::StringLiteral kModelNameAttr = "rn.model";

} // namespace mlir::rn

#endif // RN_DIALECTS_RN_RNDIALECT_H
