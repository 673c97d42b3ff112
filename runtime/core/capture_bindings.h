//===- capture_bindings.h - Event bindings fixed per captured graph -*- C++ -*-===//
//
// A CUDA graph is captured once per subgraph and variant and replayed every
// step, so each of its event waits must wait on the same CUDA events at
// every launch, and each record must be visible to the launches that wait
// on it. The cuda-eager executor binds waits per launch (EventBinder); this
// analysis runs the same binder over the host programs of several steps
// (prologue, even and odd steps, the last step, again after a drain, for
// train and eval interleaved as rn-run runs them) and derives, per
// (subgraph, variant, node):
//   - for a wait: the event slots it waits on, each either *internal* (the
//     record is earlier in the same launch: an edge of the captured graph)
//     or *external* (a record of another launch: an event wait node,
//     cudaEventWaitExternal);
//   - for a record: whether any other launch waits on it (an event record
//     node, cudaEventRecordExternal), besides the capture-internal record.
// It fails, naming the node, when a binding cannot be fixed: a wait bound
// to different slots at different launches (beyond slots never recorded
// yet, which CUDA waits treat as complete), or to one slot both inside and
// outside its launch.
//
// An external wait node binds, at graph launch, to the most recent record
// of its event issued before the launch; EventBinder checks, in the same
// issue order, that this is the record the program's rule names.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_CAPTURE_BINDINGS_H
#define RN_RUNTIME_CORE_CAPTURE_BINDINGS_H

#include "runtime/core/artifact.h"
#include "runtime/core/host_program.h"
#include "runtime/core/status.h"

#include <array>
#include <unordered_map>
#include <vector>

namespace rn {

struct BoundWait {
  EventSlot slot;
  bool internal = false; ///< recorded earlier in the same launch
};

struct NodeBinding {
  std::vector<BoundWait> waits; ///< event_wait: what it waits on (may be empty)
  bool externalRecord = false;  ///< event_record: waited on by other launches
};

class CaptureBindings {
public:
  /// Simulates `stepsPerRun` steps of every pipelined kind, twice, and
  /// fixes the bindings; an error names the subgraph, variant and node.
  static Result<CaptureBindings> analyze(const Program &program, int64_t stepsPerRun = 6);

  /// The binding of node `node` of a launch of `sg` with `variant`.
  const NodeBinding &at(const Subgraph &sg, Variant variant, size_t node) const;

  /// How many waits were found external and internal, for summaries.
  size_t externalWaits() const { return externalWaits_; }
  size_t internalWaits() const { return internalWaits_; }
  size_t externalRecords() const { return externalRecords_; }

private:
  std::unordered_map<const Subgraph *, std::array<std::vector<NodeBinding>, 2>> nodes_;
  size_t externalWaits_ = 0, internalWaits_ = 0, externalRecords_ = 0;
};

} // namespace rn

#endif // RN_RUNTIME_CORE_CAPTURE_BINDINGS_H
