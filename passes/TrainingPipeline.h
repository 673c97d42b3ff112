//===- TrainingPipeline.h - The rn-training-pipeline ------------*- C++ -*-===//

#ifndef RN_PASSES_TRAININGPIPELINE_H
#define RN_PASSES_TRAININGPIPELINE_H

#include <string>
#include <vector>

namespace mlir::rn {

/// Registers `rn-training-pipeline`.
void registerTrainingPipeline();

/// One option `rn-training-pipeline` takes. Options of the passes it runs
/// are declared once, in Passes.td; the pipeline's own are the switches that
/// turn a stage on or off.
struct PipelineOption {
  std::string name;         ///< as given to the pipeline, e.g. "beta1"
  std::string defaultValue; ///< as MLIR prints it, e.g. "9.000000e-01"
  std::string pass;         ///< the pass it sets, "" for a pipeline switch
  std::string passOption;   ///< its name in that pass (differs for aliases)
  /// "bool", "int", "float" or "string": a bool is a switch; a float's
  /// default prints with an exponent, an int's as digits.
  std::string type;
  std::string help;         ///< its description
  /// The values it takes, when its declaration lists them as its value
  /// description (`llvm::cl::value_desc("sgd|adamw|lars")`); else empty.
  std::vector<std::string> choices;
};

/// Every option of the pipeline: its switches, then each stage's options in
/// stage order, each in the order its pass declares them (an option several
/// passes declare is listed once per pass).
std::vector<PipelineOption> trainingPipelineOptions();

/// Prints the options with their defaults and descriptions to stdout
/// (rn-compile --pipeline-help).
void printTrainingPipelineHelp();

} // namespace mlir::rn

#endif // RN_PASSES_TRAININGPIPELINE_H
