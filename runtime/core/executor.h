//===- executor.h - One interface for every executor ------------*- C++ -*-===//
//
// The CPU reference executor and the GPU executors run the same program the
// same way: create from a validated artifact, initialize the state, run
// steps through the prefetching schedules (host_program.h), read and write
// state. The training loop of rn-run is written once against this class.
// trainSteps / evalStep are the batch-level conveniences built on
// runPipelined.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_EXECUTOR_H
#define RN_RUNTIME_CORE_EXECUTOR_H

#include "runtime/core/artifact.h"
#include "runtime/core/host_program.h"
#include "runtime/core/status.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace rn {

/// One step's host inputs: the batch (f32 images in the program's input
/// shape, NHWC, and int32 labels).
struct HostBatch {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

struct TrainOutputs {
  float loss = 0;
};

struct EvalOutputs {
  float loss = 0;
  int32_t correct = 0;
  std::vector<float> logits; ///< [N, classes], when the program outputs them
};

class Executor {
public:
  virtual ~Executor() = default;

  /// "cpu", "cuda-eager", ...
  virtual std::string_view name() const = 0;
  virtual const Program &program() const = 0;

  /// Sets every state entry from the artifact's tensors and `init`.
  virtual Status initialize() = 0;

  /// Runs `steps` consecutive steps of `kind` ("train" or "eval") through
  /// the prefetching schedules (buildPipelinedProgram) and returns when
  /// their outputs are on the host; `outputs` gets one entry per step.
  virtual Status runPipelined(std::string_view kind, const std::vector<StepInputs> &steps,
                              std::vector<StepOutputs> &outputs) = 0;

  /// A state entry's current values as floats (i32 converted), by name.
  virtual Result<std::vector<float>> readState(std::string_view name) const = 0;
  /// Overwrites a state entry (values rounded to its dtype).
  virtual Status writeState(std::string_view name, const std::vector<float> &values) = 0;

  /// The shape of a host input of `function` ("images"), or an error.
  Result<std::vector<int64_t>> inputShape(std::string_view function,
                                          std::string_view input) const;

  /// runPipelined for training: batch i with learning rate lrs[i] and step
  /// number firstStep + i (the program's step input and the dropout key).
  Status trainSteps(const std::vector<HostBatch> &batches, const std::vector<float> &lrs,
                    int32_t firstStep, std::vector<TrainOutputs> &outputs);
  Status trainStep(const HostBatch &batch, float lr, int32_t step, TrainOutputs &outputs);
  /// One evaluation step (eval_step).
  Status evalStep(const HostBatch &batch, EvalOutputs &outputs);
};

} // namespace rn

#endif // RN_RUNTIME_CORE_EXECUTOR_H
