//===- rn-opt.cpp - The rn dialect's mlir-opt driver ----------------------===//
//
// MLIR's usual flags (--pass-pipeline, --mlir-print-ir-after-all,
// --split-input-file, --verify-diagnostics, ...) with the rn dialect, the
// func dialect and the generic transforms (canonicalize, cse, view-op-graph)
// registered.
//
//===----------------------------------------------------------------------===//

#include "dialects/rn/RNDialect.h"

#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;

/// An empty file parses as an empty module, which is never what a user of
/// rn-opt meant; say so instead of printing an empty module.
static LogicalResult checkInputNotEmpty(llvm::StringRef inputFilename) {
  if (inputFilename == "-")
    return success(); // stdin cannot be peeked without consuming it
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(inputFilename);
  if (!buffer)
    return success(); // MlirOptMain reports unreadable files itself
  if (!(*buffer)->getBuffer().trim().empty())
    return success();
  llvm::WithColor::error(llvm::errs(), "rn-opt")
      << inputFilename << ":1:1: input is empty; expected a module\n";
  return failure();
}

int main(int argc, char **argv) {
  registerTransformsPasses();

  DialectRegistry registry;
  registry.insert<rn::RNDialect, func::FuncDialect>();
  func::registerInlinerExtension(registry);

  auto [inputFilename, outputFilename] =
      registerAndParseCLIOptions(argc, argv, "RN optimizer driver\n", registry);
  if (failed(checkInputNotEmpty(inputFilename)))
    return EXIT_FAILURE;
  return asMainReturnCode(
      MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}
