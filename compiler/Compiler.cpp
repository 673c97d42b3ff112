//===- Compiler.cpp - A model to an artifact, in-process ------------------===//
//
// What rn-compile did in its main, as a library call: parse the model, run
// rn-training-pipeline, optionally print the scheduled module, write the
// artifact. Diagnostics are collected as text (file:line:col with the
// source line) so that the Python binding raises them as rn.CompileError
// and the tool prints them unchanged.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compiler.h"

#include "compiler/ArtifactWriter.h"
#include "compiler/Registration.h"
#include "dialects/rn/RNDialect.h"
#include "passes/Passes.h"
#include "passes/TrainingPipeline.h"
#include "runtime/train/artifact_file.h"
#include "rn_version.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cstring>
#include <mutex>

using namespace mlir;
namespace json = llvm::json;

namespace rn::compiler {

const char *version() { return RN_VERSION_STRING; }

void registerCompilerPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::rn::registerRNPasses();
    mlir::rn::registerTrainingPipeline();
  });
}

namespace {

/// What a file that is not MLIR text is, from its first bytes: RN's own
/// files (an artifact, a checkpoint: both safetensors with RN metadata),
/// another safetensors file, or any binary file. Empty for text. A model
/// is the only input, and printing 44 KB of an artifact as the "source
/// line" of a parse error helps nobody.
std::string describeBinaryInput(llvm::StringRef bytes, llvm::StringRef name) {
  std::string_view view(bytes.data(), bytes.size());
  if (const uint64_t length = ::rn::train::safetensorsHeaderLength(view)) {
    switch (::rn::train::rnFileKind(view.substr(8, size_t(length)))) {
    case ::rn::train::RnFileKind::checkpoint:
      return (name + " is an RN checkpoint, not a model: resume it with "
                     "rn-run --resume " + name + " on its artifact")
          .str();
    case ::rn::train::RnFileKind::artifact:
      return (name + " is an RN artifact (already compiled), not a model: "
                     "run it with rn-run " + name)
          .str();
    case ::rn::train::RnFileKind::other:
      return (name + " is a safetensors file, not a model: rn-compile takes "
                     "a model in MLIR text (.mlir)")
          .str();
    }
  }
  llvm::StringRef head = bytes.take_front(4096);
  if (head.contains('\0'))
    return (name + " is a binary file, not a model: rn-compile takes a "
                   "model in MLIR text (.mlir)")
        .str();
  return "";
}

CompileResult failure(std::string message) {
  CompileResult result;
  result.error = std::move(message);
  return result;
}

CompileResult compileBuffer(std::unique_ptr<llvm::MemoryBuffer> input,
                            const std::string &outputPath,
                            const CompileOptions &options) {
  auto progress = [&](const llvm::Twine &line) {
    if (options.progress)
      options.progress(line.str());
  };
  const std::string name = input->getBufferIdentifier().str();
  if (input->getBuffer().trim().empty())
    return failure(name + ": input is empty; expected a model");
  if (std::string binary = describeBinaryInput(input->getBuffer(), name);
      !binary.empty())
    return failure(binary);
  if (outputPath.empty())
    return failure("no output path for the artifact");
  // Fail before the pipeline runs, not after, when the artifact cannot be
  // written where asked.
  llvm::StringRef outputDirectory = llvm::sys::path::parent_path(outputPath);
  if (!outputDirectory.empty() && !llvm::sys::fs::is_directory(outputDirectory))
    return failure("cannot open output file '" + outputPath +
                   "': no such directory '" + outputDirectory.str() + "'");

  registerCompilerPasses();
  DialectRegistry registry;
  registry.insert<mlir::rn::RNDialect, func::FuncDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics point at the source; dumping whole modules helps nobody.
  context.printOpOnDiagnostic(false);

  std::string diagnosticText;
  llvm::raw_string_ostream diagnosticStream(diagnosticText);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context, diagnosticStream);
  auto failed = [&](std::string error = "") {
    CompileResult result;
    result.diagnostics = diagnosticStream.str();
    result.error = std::move(error);
    return result;
  };

  progress("parsing " + name);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return failed();

  PassManager pm = PassManager::on<ModuleOp>(&context);
  std::string pipeline = "rn-training-pipeline{" + options.pipeline + "}";
  if (mlir::failed(parsePassPipeline(pipeline, pm, diagnosticStream)))
    return failed("bad --pipeline options: " + options.pipeline +
                  " (rn-compile --pipeline-help lists them)");
  progress("running rn-training-pipeline" +
           (options.pipeline.empty() ? std::string()
                                     : " (" + options.pipeline + ")"));
  if (mlir::failed(pm.run(*module)))
    return failed();
  if (!options.stepOutput.empty()) {
    std::string errorMessage;
    auto file = openOutputFile(options.stepOutput, &errorMessage);
    if (!file)
      return failed(errorMessage);
    module->print(file->os());
    file->keep();
    progress("wrote the scheduled module to " + options.stepOutput);
  }

  std::string fileError;
  FailureOr<mlir::rn::ArtifactSummary> written = mlir::rn::writeArtifact(
      *module, outputPath, {options.seed, options.weights}, fileError);
  if (mlir::failed(written))
    return failed(fileError);
  if (!options.weights)
    progress("wrote " + outputPath + " (" +
             llvm::Twine(written->programBytes >> 10) +
             " KiB of program; no parameters, the runtime samples them)");
  else
    progress("wrote " + outputPath + " (" +
             llvm::Twine(written->parameterBytes >> 10) +
             " KiB of parameters, " + llvm::Twine(written->programBytes >> 10) +
             " KiB of program)");
  CompileResult result;
  result.ok = true;
  return result;
}

} // namespace

CompileResult compileFile(const std::string &inputPath,
                          const std::string &outputPath,
                          const CompileOptions &options) {
  if (llvm::sys::fs::is_directory(inputPath))
    return failure(inputPath + " is a directory; expected a model (.mlir)");
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputPath, &errorMessage);
  if (!input)
    return failure(errorMessage);
  return compileBuffer(std::move(input), outputPath, options);
}

CompileResult compileSource(const std::string &source,
                            const std::string &sourceName,
                            const std::string &outputPath,
                            const CompileOptions &options) {
  return compileBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, sourceName),
                       outputPath, options);
}

std::string pipelineOptionsJson() {
  json::Array options;
  for (const mlir::rn::PipelineOption &option :
       mlir::rn::trainingPipelineOptions())
    options.push_back(json::Object{
        {"name", option.name},
        {"default", option.defaultValue},
        {"pass", option.pass},
        {"pass_option", option.passOption},
        {"type", option.type},
        {"help", option.help},
        {"choices", json::Array(option.choices)}});
  return llvm::formatv("{0:2}", json::Value(std::move(options))).str();
}

} // namespace rn::compiler
