//===- rn-opt.cpp - The rn dialect's mlir-opt driver ----------------------===//
//
// MLIR's usual flags (--pass-pipeline, --mlir-print-ir-after-all,
// --split-input-file, --verify-diagnostics, ...) with the rn dialect, the
// func dialect, every RN pass and the generic transforms (canonicalize, cse,
// view-op-graph) registered. Its main is compiler/ToolMains.cpp, in
// librn_compiler.so with the rest of the compiler.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compiler.h"

int main(int argc, char **argv) { return rn::compiler::optToolMain(argc, argv); }
