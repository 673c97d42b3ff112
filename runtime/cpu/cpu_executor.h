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
// of a call, all its launches and steps, as one concurrent execution and
// repeatedly runs one ready action chosen at random (seeded, reproducible):
// the host's next action, or the head of one stream of one started launch.
// Happens-before, as the GPU gives it (docs/scheduling.md):
//   - program order of the host, and of each stream inside one launch (a
//     launch is a graph: the streams of different launches are unrelated
//     even where they have the same name);
//   - graph launch order on the same primary stream: a launch starts when
//     the previous launch on its primary stream has completed (all of its
//     nodes), and after what the host did before issuing it;
//   - fork/join: a stream other than the primary may only run after it
//     waited on an event recorded in the same launch (else "capture error:
//     ... not forked"), and must be joined back into the primary before the
//     launch ends (else "... not joined back"); a part listed later in a
//     part_waits pair waits for the earlier part;
//   - events: a wait is bound when its launch is issued to the most recent
//     record of its event issued before it (earlier nodes of its own launch,
//     earlier launches of this call or earlier calls); between two
//     double-buffered subgraphs to the record of the step `distance` back
//     (none if that step recorded none before); a single-variant wait on a
//     double-buffered producer to the most recent record of each variant.
//     A wait is ready once its records ran, and then orders its stream
//     after them. A wait bound to no record orders nothing;
//   - a host wait blocks the host until the most recent launch of its
//     subgraph and variant has completed.
// Vector clocks (a thread for the host and one per stream of a launch; a
// stream of a later launch reuses a thread whose whole past it is ordered
// after) check every access: the words a node (or part) reads and writes,
// the host's writes of the staging buffers and the host_to_device reads of
// them, and the host's reads of outputs. An access to words last written,
// or (for a write) read, by an access that happens-before does not order
// before it is a hazard, reported as "hazard (<kind>) on tensor T: <this
// access> is not ordered after <the other>", each side naming the
// function, subgraph, variant, step, node, op, part and stream (or the
// host). The call runs to the end, then fails with the first hazard;
// hazards() counts them all (per word). Since waits are bound in host
// order, the happens-before relation does not depend on the interleaving:
// an unordered pair is found on every seed, whichever ran first (the shadow
// of a word keeps its last write and up to 4 reads not ordered after each
// other; only a fifth such read would push one out). The seed changes
// which of several hazards is reported first and what a racy run computes.
// Dropout reads its step from the program's step input (its device copy),
// so an interleaving also checks that the read is ordered after the copy.
//
// Stream workspaces: every op (or part) writes one shadow word per
// workspace region of its stream, so that two ops of different launches on
// a same-named stream left unordered are reported as a hazard.
//
// Not modelled: overlap between host programs (each issue() starts from an
// idle device, as if the executor synchronized at its end: a schedule's
// final host wait is not checked to cover every launch; streamed steps are
// simulated one submit at a time); host reads through readState/writeState,
// and of the outputs of schedules without a final host wait; memory outside
// the program (the allocator); CUDA beyond the above (capture rules other
// than fork/join, stream priorities; the GPU executors' event mapping is
// checked by EventBinder, host_program.h); and timing: the order is random,
// not exhaustive or weighted by cost.
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

} // namespace rn

#endif // RN_RUNTIME_CPU_CPU_EXECUTOR_H
