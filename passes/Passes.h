//===- Passes.h - RN compiler passes ----------------------------*- C++ -*-===//

#ifndef RN_PASSES_PASSES_H
#define RN_PASSES_PASSES_H

#include "dialects/rn/RNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::rn {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mlir::rn

#endif // RN_PASSES_PASSES_H
