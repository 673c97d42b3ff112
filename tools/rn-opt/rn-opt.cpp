//===- rn-opt.cpp - The rn dialect's mlir-opt driver ----------------------===//
//
// MLIR's usual flags (--pass-pipeline, --mlir-print-ir-after-all,
// --split-input-file, --verify-diagnostics, ...) with the rn dialect, the
// func dialect, every RN pass and the generic transforms (canonicalize, cse,
// view-op-graph) registered.
//
//===----------------------------------------------------------------------===//

#include "dialects/rn/RNDialect.h"
#include "passes/Passes.h"
#include "passes/TrainingPipeline.h"

#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;

static int fail(llvm::StringRef message) {
  llvm::WithColor::error(llvm::errs(), "rn-opt") << message << "\n";
  return EXIT_FAILURE;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerTransformsPasses();
  rn::registerRNPasses();
  rn::registerTrainingPipeline();

  DialectRegistry registry;
  registry.insert<rn::RNDialect, func::FuncDialect>();
  func::registerInlinerExtension(registry);

  auto [inputFilename, outputFilename] =
      registerAndParseCLIOptions(argc, argv, "RN optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &errorMessage);
  if (!input)
    return fail(errorMessage);
  // An empty file parses as an empty module, which is never what a user of
  // rn-opt meant (usually a failed producer upstream of a pipe): say so.
  if (input->getBuffer().trim().empty())
    return fail((input->getBufferIdentifier() +
                 ":1:1: input is empty; expected a module")
                    .str());

  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &errorMessage);
  if (!output)
    return fail(errorMessage);
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
