//===- interleaving_simulator.h - Randomized interleavings, hazard checks -*- C++ -*-===//
//
// The CPU executor's interleaved mode (CpuExecutor::Options::interleave):
// the whole host program of a call, all its launches and steps, simulated
// as one concurrent execution. The simulator repeatedly runs one ready
// action chosen at random (seeded, reproducible): the host's next action,
// or the head of one stream of one started launch; the executor runs the
// kernels and moves the data (SimulatedExecutor).
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
// Dropout and stochastic depth read their step from the program's step
// input (its device copy), so an interleaving also checks that the read is
// ordered after the copy.
//
// Stream workspaces: every op (or part) writes one shadow word per
// workspace region of its stream (Access::workspace), so that two ops of
// different launches on a same-named stream left unordered are reported as
// a hazard.
//
// Not modelled: overlap between host programs (each run() starts from an
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

#ifndef RN_RUNTIME_CPU_INTERLEAVING_SIMULATOR_H
#define RN_RUNTIME_CPU_INTERLEAVING_SIMULATOR_H

#include "runtime/core/artifact.h"
#include "runtime/core/host_program.h"
#include "runtime/core/status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace rn::cpu {

/// Streams of a launch (the values of Stream).
inline constexpr int kStreams = 5;

/// What one work item reads and writes (tensor ids), and the shadow word
/// of its stream's workspace, which every op on the stream may write (the
/// GPU runtime hands it cuDNN and cuBLASLt workspaces, reduction partials
/// and scratch there); -1 when the arena gives the stream none.
struct Access {
  std::vector<uint32_t> reads, writes;
  int64_t workspace = -1;
};

/// One work item of a subgraph: a node, or one part of a forking op.
struct WorkItem {
  uint32_t node = 0;
  int32_t part = -1;
  Stream stream = Stream::comp1;
  Access access;
  std::vector<uint32_t> outputs; ///< output bindings it writes
};

/// A subgraph's work items in issue order.
struct SubgraphWork {
  std::vector<WorkItem> items;
  std::vector<uint32_t> firstItem; ///< per node
};

/// A launch as messages name it.
struct LaunchInfo {
  uint32_t fn = 0;
  const Subgraph *sg = nullptr;
  Variant variant = Variant::a;
  int64_t step = 0;
};

/// "function F, subgraph S (variant a, step 3), node 7 (op, part role)
/// on stream comp1".
std::string describeItem(const Program &p, const LaunchInfo &l, uint32_t node, int32_t part);

/// What the simulator needs of the executor whose host programs it runs.
class SimulatedExecutor {
public:
  /// The work items of `sg` (at a stable address).
  virtual const SubgraphWork &work(const Subgraph &sg) const = 0;
  /// First shadow word and word count of tensor `tensor` of function `fn`
  /// on `variant`; a negative first word: none.
  virtual std::pair<int64_t, int64_t> shadowRange(uint32_t fn, uint32_t tensor,
                                                  Variant variant) const = 0;
  /// Runs `item` of `launch` (its accesses were checked) and copies the
  /// outputs it writes into `outputs` when that is not null.
  virtual Status runItem(const LaunchInfo &launch, const WorkItem &item,
                         StepOutputs *outputs) = 0;
  /// The host stages the inputs of a stage action.
  virtual Status stage(const HostAction &action) = 0;
  /// The host reads output `binding` of a read action.
  virtual void readOutput(const HostAction &action, size_t binding) = 0;

protected:
  ~SimulatedExecutor() = default;
};

/// The interleavings and hazard checks of one executor: its shadow words,
/// simulation threads and event records persist across run() calls.
class InterleavingSimulator {
public:
  /// `shadowWords`: the executor's shadow index space (arena words,
  /// workspaces, host staging buffers). `seed` picks the interleavings.
  InterleavingSimulator(const Program &program, size_t shadowWords, uint64_t seed);
  ~InterleavingSimulator();
  InterleavingSimulator(const InterleavingSimulator &) = delete;
  InterleavingSimulator &operator=(const InterleavingSimulator &) = delete;

  /// Runs `program` from an idle device as one concurrent execution; fails
  /// with the first hazard after running to the end, or at once on an
  /// error (a capture error, a deadlock, a failing item).
  Status run(const HostProgram &program, SimulatedExecutor &executor);

  /// Hazardous word accesses found so far (all of them; each run reports
  /// only its first).
  uint64_t hazards() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace rn::cpu

#endif // RN_RUNTIME_CPU_INTERLEAVING_SIMULATOR_H
