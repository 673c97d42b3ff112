//===- executor.h - One interface for every executor ------------*- C++ -*-===//
//
// The CPU reference executor and the GPU executors run the same program the
// same way: create from a validated artifact, initialize the state, run
// steps through the prefetching schedules, read and write state. The
// training loop of rn-run is written once against this class.
//
// Steps stream: submit() issues steps after those submitted before and
// returns without waiting for them, so a caller can keep a GPU fed across
// calls; poll() hands back the outputs of completed steps, oldest first;
// drain() finishes everything. The newest submitted step is held back until
// the next submit or drain, because a step's schedule prefetches the next
// step's batch (PipelineBuilder). State is read and written when nothing is
// in flight (a checkpoint is drain, then read). runPipelined is submit + drain as one
// host program; trainSteps / evalStep are the batch-level conveniences.
//
// Executors implement the primitives: issue a host program, say whether a
// step's launches completed, wait for one, and fill a completed step's
// outputs.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_EXECUTOR_H
#define RN_RUNTIME_CORE_EXECUTOR_H

#include "runtime/core/artifact.h"
#include "runtime/core/host_program.h"
#include "runtime/core/status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace rn {

/// One step's host inputs: the batch (images in the program's input shape,
/// NHWC, and int32 labels). The images are `images` (floats) for a float
/// images input, or `pixels` (uint8) for a ui8 one, which the device
/// normalizes.
struct HostBatch {
  std::vector<float> images;
  std::vector<int32_t> labels;
  std::vector<uint8_t> pixels;
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

  /// Issues `steps` of `kind` ("train" or "eval") after the steps submitted
  /// before (of the same kind: drain before switching).
  Status submit(std::string_view kind, std::vector<StepInputs> steps);
  /// Moves the outputs of completed steps, oldest first, to `finished`.
  Status poll(std::vector<StepOutputs> &finished);
  /// Finishes every submitted step and moves the remaining outputs to
  /// `finished`; the device is idle afterwards.
  Status drain(std::vector<StepOutputs> &finished);
  /// Submitted steps whose outputs were not handed back yet.
  size_t inFlight() const;

  /// Runs `steps` consecutive steps of `kind` as one host program (submit
  /// and drain) and returns their outputs; nothing may be in flight.
  Status runPipelined(std::string_view kind, std::vector<StepInputs> steps,
                      std::vector<StepOutputs> &outputs);

  /// A state entry's current values as floats (i32 converted), by name.
  virtual Result<std::vector<float>> readState(std::string_view name) const = 0;
  /// Overwrites a state entry (values rounded to its dtype).
  virtual Status writeState(std::string_view name, const std::vector<float> &values) = 0;

  /// The shape of a host input of `function` ("images"), or an error.
  Result<std::vector<int64_t>> inputShape(std::string_view function,
                                          std::string_view input) const;
  /// The element type of that input (u8 for images the device normalizes).
  Result<DType> inputDType(std::string_view function, std::string_view input) const;

  /// The inputs of one train_step: the batch, the learning rate and the step
  /// number (the program's step input, which also keys the dropout masks).
  static StepInputs trainInputs(const HostBatch &batch, float lr, int32_t step);
  /// The same with the images in `images`, a block from allocateHostInput
  /// (or allocateDeviceInput, with `imagesOnDevice`) holding the batch's
  /// `imageCount` image elements in the input's dtype (f32, or bytes for a
  /// ui8 input; no copy of them is made).
  static StepInputs trainInputs(std::shared_ptr<const void> images, size_t imageCount,
                                const std::vector<int32_t> &labels, float lr, int32_t step,
                                bool imagesOnDevice = false);
  /// A block of `bytes` of host memory for HostValue::pinned: page-locked
  /// on the GPU executors (cudaHostAlloc), so that a step's copy reads it
  /// directly; plain memory on the CPU executor. Allocate at start-up and
  /// reuse blocks, not per step (page-locking is slow).
  virtual Result<std::shared_ptr<void>> allocateHostInput(size_t bytes);
  /// A block of `bytes` of device memory for HostValue::pinned with
  /// onDevice (a batch that is already on the GPU, copied there device to
  /// device); an error on executors without a device (cpu).
  virtual Result<std::shared_ptr<void>> allocateDeviceInput(size_t bytes);

  /// runPipelined for training: batch i with learning rate lrs[i] and step
  /// number firstStep + i (the program's step input).
  Status trainSteps(const std::vector<HostBatch> &batches, const std::vector<float> &lrs,
                    int32_t firstStep, std::vector<TrainOutputs> &outputs);
  Status trainStep(const HostBatch &batch, float lr, int32_t step, TrainOutputs &outputs);
  /// One evaluation step (eval_step).
  Status evalStep(const HostBatch &batch, EvalOutputs &outputs);

  /// Seconds the host spent blocked on the device (host waits of the
  /// schedules, waits for steps) since creation: a step's host time is its
  /// wall time minus this. 0 for executors that never block (cpu).
  virtual double hostBlockedSeconds() const { return 0; }

  /// The step the next submit of `function` starts at.
  int64_t stepCounter(uint32_t function) const;

protected:
  /// Issues the actions of `program` (stage, launch, host wait, read).
  virtual Status issue(const HostProgram &program) = 0;
  /// Whether every launch of `step` has completed (without blocking).
  virtual Result<bool> stepComplete(const PendingStep &step) = 0;
  /// Blocks until every launch of `step` has completed.
  virtual Status waitStep(const PendingStep &step) = 0;
  /// Fills `step.outputs` of a completed step (executors that write them
  /// while running need nothing here).
  virtual Status collect(PendingStep &step) = 0;
  /// Blocks until the device is idle.
  virtual Status synchronize() = 0;
  /// Steps that may be in flight at once (output slots).
  virtual size_t maxStepsInFlight() const = 0;

private:
  Status collectFront(std::vector<StepOutputs> &finished);
  std::optional<PipelineBuilder> pipeline_;
  std::vector<int64_t> stepCounter_; ///< per function, sized on first use
  std::vector<StepOutputs> ready_;   ///< collected while making room
};

} // namespace rn

#endif // RN_RUNTIME_CORE_EXECUTOR_H
