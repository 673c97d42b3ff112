//===- ScheduleModel.h - Happens-before model of a scheduled step -*- C++ -*-===//
//
// The hazard analysis shared by rn-insert-barriers and rn-verify-schedule.
//
// A step function is unrolled over three consecutive steps (input variants
// A, B, A, so that the double-buffered inputs and the state carried from
// step to step are checked too) into an issue sequence of nodes: one per op
// (one per part of a forking op) and one per event op, grouped into graph
// instances (one per subgraph launch). Happens-before edges are:
//   - program order on one stream inside one graph instance;
//   - graph start -> the primary stream's first node, its last node -> graph
//     end, and graph end -> the start of the next graph on the same primary
//     stream (a graph launched on a stream starts after earlier work there);
//   - fork/join: implicit for every stream a subgraph uses (insertion), or
//     from the explicit fork/join events (verification);
//   - events: a wait depends on the most recent record of its event issued
//     before it. Records in a double-buffered subgraph exist once per
//     variant; a double-buffered wait matches its own variant, a
//     single-variant wait depends on both.
// A hazard is two accesses to overlapping bytes of one region (slots from
// the memory plan; without a plan every value is its own location, shared
// along in-place updates), at least one a write, from nodes on different
// streams or graphs that no path orders.
//
// Besides its operands and results, every unit writes the whole workspace
// region of its stream (`workspace_<stream>` of the memory plan, where the
// plan has one): the runtime hands each op its stream's workspace (cuDNN and
// cuBLASLt workspaces, reduction partials, scratch). Program order covers
// two units of one graph on one stream, launch order two graphs on one
// primary stream; graphs on different primary streams run concurrently, so
// their units on a shared stream are write-after-write hazards like any
// other.
//
//===----------------------------------------------------------------------===//

#ifndef RN_PASSES_SCHEDULEMODEL_H
#define RN_PASSES_SCHEDULEMODEL_H

#include "dialects/rn/RNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::rn {

/// Bytes of device memory: a region and a byte range in it.
struct MemoryLocation {
  unsigned region; // RegionKind, or a synthetic id above it when unplanned
  uint64_t offset;
  uint64_t size;
  /// A stream's workspace region (written by every unit on the stream, no
  /// value holds it).
  bool isWorkspace() const {
    return region >= static_cast<unsigned>(RegionKind::workspace_trans) &&
           region <= static_cast<unsigned>(RegionKind::workspace_update);
  }
  bool overlaps(const MemoryLocation &other) const {
    return region == other.region && offset < other.offset + other.size &&
           other.offset < offset + size;
  }
};

enum class HazardKind { ReadAfterWrite, WriteAfterRead, WriteAfterWrite };
llvm::StringRef stringifyHazardKind(HazardKind kind);

/// One executable piece of a step: an op, or one part of a forking op.
struct ScheduleUnit {
  Operation *op;
  int part; // index into getForkParts(), -1 for a whole op
  StreamKind stream;
  llvm::StringRef role; // fork role, empty for whole ops
  SubgraphOp subgraph;  // the subgraph the op is captured in
};

/// An unordered pair of accesses found by the analysis.
struct Hazard {
  const ScheduleUnit *earlier;
  const ScheduleUnit *later;
  HazardKind kind;
  MemoryLocation location;
  /// The accessed value of each side, for messages (null for a workspace).
  Value earlierValue, laterValue;
};

class ScheduleModel {
public:
  /// `implicitForkJoin`: order every stream a subgraph uses after its start
  /// and before its end (what rn-insert-barriers will make explicit);
  /// otherwise only the explicit fork/join events count.
  ScheduleModel(func::FuncOp function, bool implicitForkJoin);

  /// Collects units and accesses; fails (with a diagnostic) on ops without
  /// a subgraph or stream.
  LogicalResult initialize();

  /// Callbacks of `run`. `orderHazard` sees each hazard the model cannot
  /// order and returns whether the caller adds a barrier for it (an event
  /// recorded after `earlier`, waited before `later`). `onWait` sees each
  /// explicit event wait, with whether it ordered nothing new. Each run
  /// starts from the initialized model; it may be run more than once.
  struct Callbacks {
    std::function<bool(const Hazard &)> orderHazard;
    std::function<void(EventWaitOp, bool redundant)> onWait; // in IR order
  };
  void run(const Callbacks &callbacks);

  /// Barriers added through orderHazard in the latest run, to be
  /// materialized: each unit that must record, and each unit that must wait
  /// for it.
  struct Barrier {
    const ScheduleUnit *producer;
    const ScheduleUnit *consumer;
    /// Steps between the producer's and the consumer's execution.
    unsigned distance;
    /// Added for a hazard on the stream workspace (no data hazard between
    /// the pair came first).
    bool workspace;
  };
  llvm::ArrayRef<Barrier> getBarriers() const { return barriers; }

  llvm::ArrayRef<ScheduleUnit> getUnits() const { return units; }
  /// Streams used by the units of a subgraph (primary first).
  llvm::SmallVector<StreamKind> getStreams(SubgraphOp subgraph) const;
  /// Subgraphs of the function in launch order.
  llvm::ArrayRef<SubgraphOp> getSubgraphs() const { return subgraphs; }

private:
  struct Access {
    MemoryLocation location;
    Value value;
    bool write;
  };
  MemoryLocation locationOf(Value value);
  void collectAccesses(const ScheduleUnit &unit,
                       llvm::SmallVectorImpl<Access> &accesses);
  void addWorkspaceAccess(const ScheduleUnit &unit,
                          llvm::SmallVectorImpl<Access> &accesses);

  func::FuncOp function;
  bool implicitForkJoin;
  llvm::SmallVector<SubgraphOp> subgraphs;
  llvm::SmallVector<ScheduleUnit> units;
  llvm::DenseMap<const ScheduleUnit *, llvm::SmallVector<Access, 4>> accesses;
  llvm::DenseMap<Value, MemoryLocation> locations;
  /// Per stream, its workspace region in the memory plan (none when the
  /// plan gives the stream no workspace or there is no plan).
  llvm::DenseMap<StreamKind, MemoryLocation> workspaces;
  unsigned nextSyntheticRegion = 1000;
  llvm::SmallVector<Barrier> barriers;
};

} // namespace mlir::rn

#endif // RN_PASSES_SCHEDULEMODEL_H
