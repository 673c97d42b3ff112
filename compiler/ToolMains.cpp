//===- ToolMains.cpp - The rn-compile and rn-opt command lines ------------===//
//
// The tools' whole mains live in the library, next to the LLVM they parse
// their flags with: tools/rn-compile and tools/rn-opt are one call each,
// linking librn_compiler.so (one copy of the compiler in the wheel). The
// command-line options are locals of each main, not globals: both mains
// share one LLVM option registry, and rn-opt's MLIR flags must not meet
// rn-compile's `-o` or its positional input.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compiler.h"
#include "compiler/Registration.h"

#include "dialects/rn/RNDialect.h"
#include "passes/Passes.h"
#include "passes/TrainingPipeline.h"

#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;

namespace rn::compiler {

namespace {

int fail(const char *tool, const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), tool) << message << "\n";
  return EXIT_FAILURE;
}

void setVersionPrinter(const char *tool) {
  llvm::cl::SetVersionPrinter([tool](llvm::raw_ostream &os) {
    os << tool << " " << version() << " (RN; LLVM/MLIR " << LLVM_VERSION_STRING
       << " linked in)\n";
  });
}

} // namespace

int compileToolMain(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::cl::OptionCategory category("rn-compile options");
  llvm::cl::opt<std::string> inputFilename(llvm::cl::Positional,
                                           llvm::cl::desc("<model.mlir>"),
                                           llvm::cl::cat(category));
  llvm::cl::opt<std::string> outputFilename(
      "o", llvm::cl::desc("artifact to write (.rnx)"),
      llvm::cl::value_desc("file"), llvm::cl::cat(category));
  llvm::cl::opt<std::string> pipelineOptions(
      "pipeline",
      llvm::cl::desc("options of rn-training-pipeline, e.g. \"precision=f16 "
                     "loss-scaling=dynamic optimizer=adamw beta1=0.95\" "
                     "(--pipeline-help lists them)"),
      llvm::cl::init(""), llvm::cl::cat(category));
  llvm::cl::opt<bool> pipelineHelp(
      "pipeline-help",
      llvm::cl::desc("list every --pipeline option with its default and "
                     "description, and exit"),
      llvm::cl::init(false), llvm::cl::cat(category));
  llvm::cl::opt<bool> listPipelineOptions(
      "list-pipeline-options",
      llvm::cl::desc("print every --pipeline option as JSON (name, default, "
                     "pass, pass_option, type, help, choices) and exit"),
      llvm::cl::init(false), llvm::cl::cat(category));
  llvm::cl::opt<std::string> stepOutput(
      "step-output",
      llvm::cl::desc("also write the scheduled module the artifact is made of "
                     "(MLIR text; rn-opt --rn-print-schedule reads it)"),
      llvm::cl::value_desc("file"), llvm::cl::init(""),
      llvm::cl::cat(category));
  llvm::cl::opt<uint64_t> seed(
      "seed", llvm::cl::desc("seed of the parameter initialization"),
      llvm::cl::init(0), llvm::cl::cat(category));
  llvm::cl::opt<bool> noWeights(
      "no-weights",
      llvm::cl::desc("write the program alone: no parameter tensors, and an "
                     "\"init\" entry with which the runtime samples them"),
      llvm::cl::init(false), llvm::cl::cat(category));
  llvm::cl::opt<bool> quiet("quiet", llvm::cl::desc("no progress messages"),
                            llvm::cl::init(false), llvm::cl::cat(category));

  // --help lists these only, not the options LLVM's libraries register.
  llvm::cl::HideUnrelatedOptions(category);
  setVersionPrinter("rn-compile");
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "rn-compile: compile a model (rn dialect) into a training artifact\n\n"
      "  rn-compile model.mlir -o model.rnx --pipeline \"precision=f16 "
      "loss-scaling=dynamic\"\n");
  if (pipelineHelp) {
    registerCompilerPasses();
    mlir::rn::printTrainingPipelineHelp();
    return EXIT_SUCCESS;
  }
  if (listPipelineOptions) {
    llvm::outs() << pipelineOptionsJson() << "\n";
    return EXIT_SUCCESS;
  }
  if (inputFilename.empty() || outputFilename.empty())
    return fail("rn-compile",
                "expected a model and an output: rn-compile <model.mlir> -o "
                "<artifact.rnx> (--help lists the options)");

  CompileOptions options;
  options.pipeline = pipelineOptions;
  options.seed = seed;
  options.weights = !noWeights;
  options.stepOutput = stepOutput;
  if (!quiet)
    options.progress = [](const std::string &line) {
      llvm::errs() << "rn-compile: " << line << "\n";
    };
  CompileResult result = compileFile(inputFilename, outputFilename, options);
  if (result.ok)
    return EXIT_SUCCESS;
  llvm::errs() << result.diagnostics;
  if (!result.error.empty())
    return fail("rn-compile", result.error);
  return EXIT_FAILURE;
}

int optToolMain(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerTransformsPasses();
  registerCompilerPasses();

  DialectRegistry registry;
  registry.insert<mlir::rn::RNDialect, func::FuncDialect>();
  func::registerInlinerExtension(registry);

  setVersionPrinter("rn-opt");
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
    return fail("rn-opt", errorMessage);
  // An empty file parses as an empty module, which is never what a user of
  // rn-opt meant (usually a failed producer upstream of a pipe): say so.
  if (input->getBuffer().trim().empty())
    return fail("rn-opt", input->getBufferIdentifier() +
                              ":1:1: input is empty; expected a module");

  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &errorMessage);
  if (!output)
    return fail("rn-opt", errorMessage);
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}

} // namespace rn::compiler
