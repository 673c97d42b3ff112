//===- cpu_executor.h - Reference executor of an artifact on the CPU -*- C++ -*-===//
//
// Runs a loaded artifact's programs (docs/artifact.md) with the CPU reference
// kernels (cpu_kernels.h): deterministic (nodes run one at a time; only the
// kernels' dgemm calls use threads), the oracle the GPU executors are
// compared against.
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
// inputs_b. Host staging tensors (`host_input`) are separate host buffers,
// one per input as in the program, that the host fills; `host_to_device`
// copies them in.
//
// Host program. Every public call runs a host program: the host stages
// inputs into the host staging buffers, issues the launches and host waits
// of schedules (docs/scheduling.md, rn-partition) and reads outputs.
// trainStep/evalStep run <kind>_prologue (with its launches moved to the
// call's variant) and then <kind>_last_even or _last_odd: the call's inputs
// are staged, copied and computed on variant A (even calls) or B (odd
// calls), and the outputs are read after the final host wait.
// runPipelined runs consecutive steps through the prefetching schedules:
// <kind>_prologue, then <kind>_even/_odd by the step's parity, then
// <kind>_last_*; before the first launch of a step's schedule that works on
// the other variant (TRANSFER prefetching the next batch) the host stages
// the next step's inputs into the host staging buffers (one per input, as
// in the program). A launch belongs to the step whose variant it uses:
// the prefetching TRANSFER of step k is step k + 1. Outputs of a schedule
// that ends with a host wait are read by the host after it; the others
// (train_even/odd, which have no host wait at the end) are copied when the
// node that writes them runs (a GPU executor needs its own copy for them).
// Every call continues one step counter per function (the variant is its
// parity) and starts with the device idle: calls do not overlap.
//
// Sequential mode runs the host program in order, each launch's nodes in
// issue order (forking ops part by part in part order); events and host
// waits are no-ops.
//
// Interleaved mode (Options::interleave) simulates the whole host program
// of a call, all its launches and steps, as one concurrent execution in a
// random (seeded) order and checks every access against the happens-before
// relation the GPU gives with vector clocks; the call fails with the first
// hazard, naming both accesses. The model, and what it leaves out, is
// interleaving_simulator.h's.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CPU_CPU_EXECUTOR_H
#define RN_RUNTIME_CPU_CPU_EXECUTOR_H

#include "runtime/core/artifact.h"
#include "runtime/core/executor.h"
#include "runtime/core/host_program.h"
#include "runtime/core/status.h"
#include "runtime/cpu/replica_group.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace rn {

class CpuExecutor final : public Executor {
public:
  struct Options {
    uint64_t seed = 0;       ///< dropout RNG and the interleaving order
    bool interleave = false; ///< randomized interleaving + hazard checks
    /// Data-parallel replicas in this process (replica_group.h): the
    /// all_reduce_mean nodes average over the group; not owned. Null: one
    /// replica, where the mean is the value. Not with `interleave` (the
    /// replicas' random orders would issue their buckets differently).
    cpu::ReplicaGroup *replicas = nullptr;
    int replicaRank = 0;
  };

  /// Plans the CPU arena. `artifact` must outlive the executor.
  static Result<std::unique_ptr<CpuExecutor>> create(const Artifact &artifact,
                                                    Options options);

  std::string_view name() const override { return "cpu"; }
  /// Sets every state entry from the artifact's tensors and `init`.
  Status initialize() override;

  /// Stages `inputs` (by input name) and runs schedule `name` (launches and
  /// host waits) as one step at the function's step counter, which does not
  /// advance; with `variant`, every launch and host wait of a
  /// double-buffered subgraph uses it.
  Status runSchedule(std::string_view name,
                     const std::map<std::string, HostValue> &inputs,
                     std::optional<Variant> variant = std::nullopt);

  /// A state entry's current values as floats (i32 converted), by name.
  Result<std::vector<float>> readState(std::string_view name) const override;
  /// Overwrites a state entry (values rounded to its dtype).
  Status writeState(std::string_view name, const std::vector<float> &values) override;
  const Program &program() const override { return artifact_->program; }

  /// Number of nodes executed so far (for statistics).
  uint64_t executedNodes() const { return executedNodes_; }
  /// Hazardous word accesses found so far in interleaved mode (all of
  /// them; each call reports only its first).
  uint64_t hazards() const;

  CpuExecutor(const CpuExecutor &) = delete;
  CpuExecutor &operator=(const CpuExecutor &) = delete;
  ~CpuExecutor() override;

protected:
  Status issue(const HostProgram &program) override;
  Result<bool> stepComplete(const PendingStep &step) override;
  Status waitStep(const PendingStep &step) override;
  Status collect(PendingStep &step) override;
  Status synchronize() override;
  size_t maxStepsInFlight() const override { return SIZE_MAX; }

private:
  CpuExecutor() = default;
  struct Impl;
  const Artifact *artifact_ = nullptr;
  Options options_;
  std::unique_ptr<Impl> impl_;
  uint64_t executedNodes_ = 0;

  friend struct ExecutorAccess;
  Status run(const HostProgram &program);
  Status runSequential(const HostProgram &program);
  Status runInterleaved(const HostProgram &program);
};

namespace cpu {
/// Whether the CPU executor has a kernel for `op` ("conv2d"): every op of
/// the op table must (test/runtime/core/op_table_test.cpp).
bool hasKernel(std::string_view op);
} // namespace cpu

} // namespace rn

#endif // RN_RUNTIME_CPU_CPU_EXECUTOR_H
