//===- TrainingPipeline.h - The rn-training-pipeline ------------*- C++ -*-===//

#ifndef RN_PASSES_TRAININGPIPELINE_H
#define RN_PASSES_TRAININGPIPELINE_H

namespace mlir::rn {

/// Registers `rn-training-pipeline` with its options.
void registerTrainingPipeline();

} // namespace mlir::rn

#endif // RN_PASSES_TRAININGPIPELINE_H
