//===- host_program.h - The host side of a step, shared by every executor -*- C++ -*-===//
//
// What the host does to run steps, in program order, independent of where
// the ops run: stage the host inputs of a step into the host staging
// buffers, launch subgraphs (with a variant and the step they belong to),
// wait for a launch to complete, read a step's outputs. The walk of the
// step schedules that produces this list (prologue, even/odd, last; A/B
// variants; which step a prefetching TRANSFER belongs to; where the host
// stages the next batch and reads outputs) is written once, here; executors
// only supply the primitives (HostPrimitives) and run the list with
// runHostProgram, or simulate it (the CPU executor's interleaved mode).
//
// Event binding. The program's event waits refer to records by event id and
// step distance (docs/scheduling.md). EventBinder applies that rule in host
// issue order, the order in which a GPU executor issues the nodes, and maps
// it onto CUDA events: one CUDA event per (event id, slot), where a record
// in a launch of a double-buffered subgraph uses the slot of the launch's
// variant and any other record slot A. CUDA binds a wait to the most recent
// record of its event issued before it; EventBinder checks that this is the
// record the program's rule names, and fails otherwise (a schedule this
// mapping cannot express), so the mapping is tested wherever host programs
// run, CPU included.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_HOST_PROGRAM_H
#define RN_RUNTIME_CORE_HOST_PROGRAM_H

#include "runtime/core/artifact.h"
#include "runtime/core/status.h"

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rn {

/// A host input value by name, in the input's element type: `floats`
/// (float inputs), `ints` (i32) or `bytes` (u8: uint8 images normalized on
/// the device), or `pinned`, page-locked memory from
/// Executor::allocateHostInput holding `pinnedElements` elements of the
/// input's dtype as the device stores them (4-byte words, or bytes for u8).
/// A GPU executor copies a pinned value to the device directly, with no
/// staging copy on the host (where the input's dtype is 32-bit or u8); the
/// step holds the memory until it has completed, so the caller may reuse a
/// block once it holds the only reference again. With `onDevice`, `pinned`
/// is device memory from Executor::allocateDeviceInput instead (inputs
/// that arrive as CUDA tensors): the step's copy reads it device to device,
/// and nothing on the host may read it.
struct HostValue {
  std::vector<float> floats;
  std::vector<int32_t> ints;
  std::vector<uint8_t> bytes;
  std::shared_ptr<const void> pinned;
  size_t pinnedElements = 0;
  bool onDevice = false;

  /// The value's elements for an input of `dtype`, whichever way it is held.
  size_t elements(DType dtype) const {
    if (pinned)
      return pinnedElements;
    if (dtype == DType::i32)
      return ints.size();
    return dtype == DType::u8 ? bytes.size() : floats.size();
  }
  const float *floatData() const {
    return pinned ? static_cast<const float *>(pinned.get()) : floats.data();
  }
  const int32_t *intData() const {
    return pinned ? static_cast<const int32_t *>(pinned.get()) : ints.data();
  }
  const uint8_t *byteData() const {
    return pinned ? static_cast<const uint8_t *>(pinned.get()) : bytes.data();
  }
};

/// One step's host inputs by name ("images", "labels", "lr", "step" for
/// train_step; the dropout masks follow the "step" input on the device).
struct StepInputs {
  std::map<std::string, HostValue> values;
};

/// One step's outputs by name: `floats` for float and i1 outputs, `ints`
/// for i32 outputs.
using StepOutputs = std::map<std::string, HostValue>;

/// What the host does in one call, in program order.
struct HostAction {
  enum class Kind : uint8_t { stage, launch, wait, read };
  Kind kind = Kind::launch;
  uint32_t fn = 0;
  const Subgraph *sg = nullptr; ///< launch, wait
  Variant variant = Variant::a; ///< launch, wait, read
  int64_t step = 0;             ///< the step the action belongs to
  const std::map<std::string, HostValue> *inputs = nullptr; ///< stage
  StepOutputs *outputs = nullptr; ///< launch (outputs it writes), read
};

struct HostProgram {
  std::vector<HostAction> actions;

  void stage(uint32_t fn, int64_t step, const std::map<std::string, HostValue> *inputs);
  void launch(uint32_t fn, const Subgraph *sg, Variant variant, int64_t step,
              StepOutputs *outputs);
  void wait(uint32_t fn, const Subgraph *sg, Variant variant, int64_t step);
  void read(uint32_t fn, Variant variant, int64_t step, StepOutputs *outputs);
};

/// Checks `inputs` (by name) against the host inputs of `fn`: each named
/// one must exist, be a host input and have its element count, held as its
/// dtype takes it (bytes for a u8 input, floats or ints otherwise).
Status checkStepInputs(const Function &fn, const std::map<std::string, HostValue> &inputs);

/// A step submitted to a pipeline: its inputs and outputs (at stable
/// addresses: host actions point at them) and the launches that belong to
/// it (its prefetched TRANSFER is issued with the step before).
struct PendingStep {
  uint32_t fn = 0; ///< the function it runs
  int64_t step = 0;
  StepInputs inputs;
  StepOutputs outputs;
  std::vector<std::pair<const Subgraph *, Variant>> launches;
  /// Its own schedule (even/odd or last) was issued: no more launches.
  bool scheduled = false;
};

/// The streaming form of buildPipelinedProgram: steps arrive in batches and
/// the host actions are produced as soon as they can be. A step's even/odd
/// schedule prefetches the next step, so the newest step is held back until
/// its successor arrives (submit) or the pipeline is drained (drain: the
/// last_even/odd schedule and the read of its outputs). The prologue runs
/// before the first step after idle.
class PipelineBuilder {
public:
  static Result<PipelineBuilder> create(const Program &program, std::string_view kind,
                                        int64_t firstStep);

  /// Appends `steps` and the actions that can be issued now to `out`.
  Status submit(std::vector<StepInputs> steps, HostProgram &out);
  /// Appends the actions that finish the held step to `out`; the pipeline
  /// is idle afterwards.
  Status drain(HostProgram &out);

  const std::string &kind() const { return kind_; }
  uint32_t function() const { return fn_; }
  /// Submitted steps not yet handed back, oldest first; the caller pops
  /// steps from the front once it collected their outputs.
  std::deque<PendingStep> &pending() { return pending_; }
  const std::deque<PendingStep> &pending() const { return pending_; }
  /// The number of the next step to be submitted.
  int64_t nextStep() const { return nextStep_; }

private:
  PipelineBuilder() = default;
  Status schedule(const Schedule &s, PendingStep &step, bool isPrologue, HostProgram &out);
  const Program *program_ = nullptr;
  const Function *function_ = nullptr;
  std::string kind_;
  uint32_t fn_ = 0;
  const Schedule *prologue_ = nullptr, *even_ = nullptr, *odd_ = nullptr;
  const Schedule *lastEven_ = nullptr, *lastOdd_ = nullptr;
  std::deque<PendingStep> pending_;
  int64_t nextStep_ = 0;
  bool started_ = false; ///< the prologue ran since the last drain
};

/// The host program of schedule `name` run once as step `step`: stages
/// `inputs`, then its launches and host waits; with `variant`, every launch
/// and wait of a double-buffered subgraph uses it.
Result<HostProgram> buildScheduleProgram(const Program &program, std::string_view name,
                                         const std::map<std::string, HostValue> &inputs,
                                         int64_t step, std::optional<Variant> variant);

/// The function a pipelined `kind` runs ("train" -> train_step), or an error.
Result<uint32_t> pipelinedFunction(const Program &program, std::string_view kind);

/// The primitives an executor supplies to run a host program.
class HostPrimitives {
public:
  virtual ~HostPrimitives() = default;
  virtual Status stage(const HostAction &action) = 0;
  virtual Status launch(const HostAction &action) = 0;
  virtual Status hostWait(const HostAction &action) = 0;
  virtual Status read(const HostAction &action) = 0;
};

/// Runs `program`'s actions in order through `primitives`; stops at the
/// first error.
Status runHostProgram(const HostProgram &program, HostPrimitives &primitives);

/// A CUDA event of the mapping above: program event `event`, slot `slot`.
struct EventSlot {
  uint32_t event = 0;
  Variant slot = Variant::a;
};

class EventBinder {
public:
  explicit EventBinder(const Program &program);

  /// The slot a record node of a launch (of `sg`, `variant`, `step`) uses;
  /// remembers the record for later waits. Call in host issue order.
  EventSlot record(const Node &node, const Subgraph &sg, Variant variant, int64_t step);
  /// The CUDA events a wait node of a launch of `sg` for `step` waits on
  /// (none when the rule binds it to no record), or an error when a CUDA
  /// wait would bind to another record than the rule's. Call in host issue
  /// order.
  /// With `boundRecords`, also the issue serials of the records it bound
  /// to (record() returns them through lastRecordSerial()).
  Result<std::vector<EventSlot>> wait(const Node &node, const Subgraph &sg, int64_t step,
                                      std::vector<uint64_t> *boundRecords = nullptr);
  /// The issue serial of the most recent record() (1 for the first).
  uint64_t lastRecordSerial() const { return serial_; }
  /// Whether any record of `slot` was issued yet (a CUDA wait on an event
  /// never recorded is a no-op).
  bool everRecorded(EventSlot slot) const {
    return lastOnSlot_[slot.event][size_t(slot.slot)] != 0;
  }

private:
  struct RecordInstance {
    int64_t step = 0;
    Variant variant = Variant::a;
    bool doubled = false;
    uint64_t serial = 0; ///< issue order
  };
  /// Per event: its recent records, oldest first (waits reach at most two
  /// steps back).
  std::vector<std::vector<RecordInstance>> history_;
  /// Per event and slot: the serial of the most recent record (0: none).
  std::vector<std::array<uint64_t, 2>> lastOnSlot_;
  uint64_t serial_ = 0;
};

} // namespace rn

#endif // RN_RUNTIME_CORE_HOST_PROGRAM_H
