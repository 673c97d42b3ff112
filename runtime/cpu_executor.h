//===- cpu_executor.h - Reference executor of an artifact on the CPU -*- C++ -*-===//
//
// Runs a loaded artifact's programs (docs/artifact.md) with the CPU reference
// kernels (cpu_kernels.h): deterministic, single threaded, the oracle the GPU
// executors are compared against.
//
// Memory. Every element is held as one 32-bit word in one CPU arena: float
// for f32/f16/bf16 (values rounded to their dtype by the kernels), the int32
// bits for i32, 0.0f/1.0f for i1. A device tensor at byte `offset` of region
// R starts at word regionBase(R) + offset / 2 (f16, the smallest float type,
// is 2 bytes, so two f16 tensors that share bytes on the GPU share words
// here; in-place results, which reuse their operand's slot, always do). A
// region gets as many words as its slots need (max over its slots of
// offset / 2 + max(elements, ceil(bytes / 2))), so the large cuDNN workspace
// regions cost nothing. `inputs_b` mirrors `inputs_a`: in the B variant of a
// double-buffered subgraph a slot in inputs_a is read at the same offset in
// inputs_b. Host staging tensors (`host_input`) are separate host buffers
// that trainStep/evalStep fill; `host_to_device` copies them in.
//
// Execution. A schedule step `launch` runs a subgraph's nodes for a variant.
// Sequential mode runs the nodes in issue order (forking ops part by part in
// part order; events are no-ops). Interleaved mode (Options::interleave)
// simulates the five streams of one launch as FIFOs (op parts go to their
// part's stream) and repeatedly executes the head of a randomly chosen
// stream whose head is ready (seeded, reproducible): a wait on an event
// recorded in the same launch (distance 0) is ready once the record ran; a
// wait on an event of another launch is ready (launches run one after the
// other, so earlier launches are complete); a part listed later in a
// part_waits pair waits for the earlier part. Each access is checked against
// a vector clock per stream (a record copies the stream's clock into the
// event, a wait merges it, part waits likewise): an access to words written
// or read (for writes) by another stream's node that the executed events do
// not order before it is a hazard, reported as an error naming both nodes.
// Hazards across launches are not modelled (each launch starts with all
// streams synchronized).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CPU_EXECUTOR_H
#define RN_RUNTIME_CPU_EXECUTOR_H

#include "runtime/artifact.h"
#include "runtime/status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
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

/// A host input value by name, as 32-bit words (float, or int32 for i32).
struct HostValue {
  std::vector<float> floats;
  std::vector<int32_t> ints;
};

class CpuExecutor {
public:
  struct Options {
    uint64_t seed = 0;       ///< dropout RNG and the interleaving order
    bool interleave = false; ///< randomized stream interleaving + hazard checks
  };

  /// Plans the CPU arena. `artifact` must outlive the executor.
  static Result<std::unique_ptr<CpuExecutor>> create(const Artifact &artifact,
                                                    Options options);

  /// Sets every state entry from the artifact's tensors and `init`.
  Status initialize();

  /// One training step on `batch` (train_step): copies the batch, lr and
  /// step into the input buffer of variant A (even calls) or B (odd calls)
  /// and runs the compute launches of train_last_even / train_last_odd.
  /// `step` keys the dropout RNG and feeds the program's step input.
  Status trainStep(const HostBatch &batch, float lr, int32_t step,
                   TrainOutputs &outputs);
  /// One evaluation step (eval_step) in the same way.
  Status evalStep(const HostBatch &batch, EvalOutputs &outputs);

  /// Runs the launches of schedule `name` (host waits are no-ops) with the
  /// host inputs of its function set from `inputs` (by input name); with
  /// `variant`, every launch of a double-buffered subgraph uses it.
  Status runSchedule(std::string_view name,
                     const std::map<std::string, HostValue> &inputs,
                     std::optional<Variant> variant = std::nullopt);

  /// The shape of a host input of `function` ("images"), or an error.
  Result<std::vector<int64_t>> inputShape(std::string_view function,
                                          std::string_view input) const;

  /// A state entry's current values as floats (i32 converted), by name.
  Result<std::vector<float>> readState(std::string_view name) const;
  /// Overwrites a state entry (values rounded to its dtype).
  Status writeState(std::string_view name, const std::vector<float> &values);
  const Program &program() const { return artifact_->program; }

  /// Number of nodes executed so far (for statistics).
  uint64_t executedNodes() const { return executedNodes_; }

  CpuExecutor(const CpuExecutor &) = delete;
  CpuExecutor &operator=(const CpuExecutor &) = delete;
  ~CpuExecutor();

private:
  CpuExecutor() = default;
  struct Impl;
  const Artifact *artifact_ = nullptr;
  Options options_;
  std::unique_ptr<Impl> impl_;
  int64_t trainCalls_ = 0;
  int64_t evalCalls_ = 0;
  uint64_t executedNodes_ = 0;

  friend struct ExecutorAccess;
  Status launch(const Function &function, const Subgraph &subgraph,
                Variant variant);
  Result<const Function *> runStep(const std::string &kind, bool odd,
                                   const std::map<std::string, HostValue> &inputs);
  Status runFunctionStep(const Function &function, const Schedule &schedule,
                         const std::map<std::string, HostValue> &inputs,
                         std::optional<Variant> variant,
                         const Schedule *transferFrom);
};

} // namespace rn

#endif // RN_RUNTIME_CPU_EXECUTOR_H
