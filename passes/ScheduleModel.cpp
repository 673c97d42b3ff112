//===- ScheduleModel.cpp - Happens-before model of a scheduled step -------===//

#include "passes/ScheduleModel.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::rn;

StringRef mlir::rn::stringifyHazardKind(HazardKind kind) {
  switch (kind) {
  case HazardKind::ReadAfterWrite:
    return "read after write";
  case HazardKind::WriteAfterRead:
    return "write after read";
  case HazardKind::WriteAfterWrite:
    return "write after write";
  }
  llvm_unreachable("unknown hazard kind");
}

/// Steps the model unrolls: enough for hazards two steps apart (a batch
/// buffer is rewritten two steps after it was read).
static constexpr unsigned kUnrolledSteps = 3;

ScheduleModel::ScheduleModel(func::FuncOp function, bool implicitForkJoin)
    : function(function), implicitForkJoin(implicitForkJoin) {}

static SubgraphOp subgraphOf(Operation *op) {
  auto symbol = op->getAttrOfType<FlatSymbolRefAttr>(kSubgraphAttr);
  if (!symbol)
    return {};
  return SymbolTable::lookupNearestSymbolFrom<SubgraphOp>(op, symbol);
}

MemoryLocation ScheduleModel::locationOf(Value value) {
  auto it = locations.find(value);
  if (it != locations.end())
    return it->second;
  SlotAttr slot;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    slot = function.getArgAttrOfType<SlotAttr>(arg.getArgNumber(), kSlotAttr);
  } else {
    Operation *def = value.getDefiningOp();
    if (auto slots = def->getAttrOfType<ArrayAttr>(kSlotsAttr))
      slot = dyn_cast<SlotAttr>(
          slots[cast<OpResult>(value).getResultNumber()]);
  }
  MemoryLocation location;
  if (slot) {
    location = {static_cast<unsigned>(slot.getRegion()), slot.getOffset(),
                slot.getSize()};
  } else if (auto result = dyn_cast<OpResult>(value);
             result && isa<InPlaceOpInterface>(result.getOwner()) &&
             cast<InPlaceOpInterface>(result.getOwner())
                 .getUpdatedOperand(result.getResultNumber())) {
    // Unplanned: an in-place result is its operand's memory.
    unsigned operand = *cast<InPlaceOpInterface>(result.getOwner())
                            .getUpdatedOperand(result.getResultNumber());
    location = locationOf(result.getOwner()->getOperand(operand));
  } else {
    location = {nextSyntheticRegion++, 0, 1};
  }
  locations[value] = location;
  return location;
}

/// Host staging buffers (inputs copied by rn.host_to_device) are host
/// memory: the host side of the schedule orders them.
static bool isHostStaging(Value value) {
  return isa<BlockArgument>(value) && !value.use_empty() &&
         llvm::all_of(value.getUsers(),
                      [](Operation *user) { return isa<HostToDeviceOp>(user); });
}

void ScheduleModel::collectAccesses(const ScheduleUnit &unit,
                                    SmallVectorImpl<Access> &result) {
  auto add = [&](Value value, bool write) {
    if (!isa<RankedTensorType>(value.getType()) || isHostStaging(value))
      return;
    result.push_back({locationOf(value), value, write});
  };
  if (unit.part >= 0) {
    ForkPart part =
        cast<ForkingOpInterface>(unit.op).getForkParts()[unit.part];
    for (Value value : part.reads)
      add(value, /*write=*/false);
    for (Value value : part.writes)
      add(value, /*write=*/true);
    addWorkspaceAccess(unit, result);
    return;
  }
  for (Value value : unit.op->getOperands())
    add(value, /*write=*/false);
  for (Value value : unit.op->getResults())
    add(value, /*write=*/true);
  addWorkspaceAccess(unit, result);
}

/// The stream's workspace, written last: a barrier a data hazard needs
/// anyway is attributed to the data.
void ScheduleModel::addWorkspaceAccess(const ScheduleUnit &unit,
                                       SmallVectorImpl<Access> &result) {
  auto it = workspaces.find(unit.stream);
  if (it != workspaces.end())
    result.push_back({it->second, Value(), /*write=*/true});
}

LogicalResult ScheduleModel::initialize() {
  Block &body = function.getBody().front();
  // Units first (their addresses must stay stable), then accesses.
  size_t count = 0;
  for (Operation &op : body.without_terminator()) {
    if (isa<EventRecordOp, EventWaitOp>(op))
      continue;
    if (auto forking = dyn_cast<ForkingOpInterface>(op))
      count += forking.getForkParts().size();
    else
      ++count;
  }
  units.reserve(count);

  SubgraphOp current;
  for (Operation &op : body.without_terminator()) {
    SubgraphOp subgraph = subgraphOf(&op);
    if (!subgraph)
      return op.emitError("op belongs to no subgraph; run rn-partition first");
    if (subgraph != current) {
      if (llvm::is_contained(subgraphs, subgraph))
        return op.emitError("subgraph @")
               << subgraph.getSymName()
               << " is not contiguous: its ops must be adjacent";
      subgraphs.push_back(subgraph);
      current = subgraph;
    }
    if (isa<EventRecordOp, EventWaitOp>(op))
      continue;
    auto stream = op.getAttrOfType<StreamKindAttr>(kStreamAttr);
    if (!stream)
      return op.emitError("op has no stream; run rn-assign-streams first");
    if (auto forking = dyn_cast<ForkingOpInterface>(op)) {
      auto map = op.getAttrOfType<DictionaryAttr>(kStreamMapAttr);
      for (auto [index, part] : llvm::enumerate(forking.getForkParts())) {
        auto partStream =
            map ? map.getAs<StreamKindAttr>(part.role) : StreamKindAttr();
        if (!partStream)
          return op.emitError("forking op has no stream for its '")
                 << part.role << "' part; run rn-assign-streams first";
        units.push_back({&op, static_cast<int>(index), partStream.getValue(),
                         part.role, subgraph});
      }
    } else {
      units.push_back({&op, -1, stream.getValue(), StringRef(), subgraph});
    }
  }
  // The workspaces the runtime gives the streams: the plan's non-empty
  // workspace_<stream> regions.
  if (auto module = function->getParentOfType<ModuleOp>())
    for (auto plan : module.getOps<MemoryPlanOp>())
      for (auto extent : plan.getRegions().getAsRange<ExtentAttr>()) {
        MemoryLocation location{static_cast<unsigned>(extent.getRegion()), 0,
                                extent.getSize()};
        if (!location.isWorkspace() || location.size == 0)
          continue;
        std::optional<StreamKind> stream = symbolizeStreamKind(
            stringifyRegionKind(extent.getRegion())
                .drop_front(StringRef("workspace_").size()));
        if (stream)
          workspaces[*stream] = location;
      }
  for (const ScheduleUnit &unit : units)
    collectAccesses(unit, accesses[&unit]);
  return success();
}

SmallVector<StreamKind> ScheduleModel::getStreams(SubgraphOp subgraph) const {
  SmallVector<StreamKind> streams = {subgraph.getPrimary()};
  for (const ScheduleUnit &unit : units)
    if (unit.subgraph == subgraph && !llvm::is_contained(streams, unit.stream))
      streams.push_back(unit.stream);
  return streams;
}

namespace {

/// One element of a step in issue order: a unit or an event op.
struct Element {
  const ScheduleUnit *unit = nullptr;
  Operation *event = nullptr;
  StreamKind stream;
};

/// The issue sequence and its happens-before relation.
class Unrolling {
public:
  /// Adds a node after `preds`; returns its id.
  unsigned addNode(ArrayRef<unsigned> preds) {
    unsigned id = reach.size();
    reach.emplace_back();
    for (unsigned pred : preds)
      addEdge(pred, id);
    return id;
  }
  /// Orders `from` before `to` (`to` is the newest node).
  void addEdge(unsigned from, unsigned to) {
    llvm::BitVector &target = reach[to];
    if (target.size() < reach.size())
      target.resize(reach.size());
    // |= takes a shorter operand as it is: no copy of the source row.
    target |= reach[from];
    target.set(from);
  }
  bool ordered(unsigned from, unsigned to) const {
    return from < reach[to].size() && reach[to].test(from);
  }

private:
  std::vector<llvm::BitVector> reach;
};

/// Where each event (or, while inserting, each producer unit) was last
/// recorded: per unrolled step, the node of the record.
using RecordHistory = llvm::SmallVector<std::optional<unsigned>, kUnrolledSteps>;

} // namespace

void ScheduleModel::run(const Callbacks &callbacks) {
  barriers.clear();
  // The step's elements grouped by subgraph, in launch order.
  llvm::DenseMap<Operation *, SmallVector<const ScheduleUnit *, 3>> unitsOf;
  for (const ScheduleUnit &unit : units)
    unitsOf[unit.op].push_back(&unit);
  SmallVector<SmallVector<Element>> graphs(subgraphs.size());
  {
    unsigned index = 0;
    for (Operation &op : function.getBody().front().without_terminator()) {
      while (op.getAttrOfType<FlatSymbolRefAttr>(kSubgraphAttr).getAttr() !=
             subgraphs[index].getSymNameAttr())
        ++index;
      if (auto record = dyn_cast<EventRecordOp>(op))
        graphs[index].push_back({nullptr, &op, record.getStream()});
      else if (auto wait = dyn_cast<EventWaitOp>(op))
        graphs[index].push_back({nullptr, &op, wait.getStream()});
      else
        for (const ScheduleUnit *unit : unitsOf[&op])
          graphs[index].push_back({unit, nullptr, unit->stream});
    }
  }

  Unrolling order;
  llvm::DenseMap<int64_t, RecordHistory> eventRecords;
  llvm::DenseMap<const ScheduleUnit *, RecordHistory> unitInstances;
  llvm::DenseMap<int64_t, SubgraphOp> eventSubgraph;
  // Barriers added so far: consumer -> (producer, step distance).
  llvm::DenseMap<const ScheduleUnit *,
                 SmallVector<std::pair<const ScheduleUnit *, unsigned>>>
      waitsOf;
  llvm::DenseMap<Operation *, bool> waitUseful;
  for (const ScheduleUnit &unit : units)
    unitInstances[&unit].resize(kUnrolledSteps);

  // The record a wait in step `step` (node `node`) depends on: between two
  // double-buffered subgraphs the instance `distance` steps back, otherwise
  // the latest instance of each variant issued before it.
  auto sources = [&](const RecordHistory &history, bool producerDoubled,
                     bool consumerDoubled, unsigned step, unsigned distance,
                     unsigned node) {
    SmallVector<unsigned, 2> result;
    if (producerDoubled && consumerDoubled) {
      if (step >= distance && history[step - distance] &&
          *history[step - distance] < node)
        result.push_back(*history[step - distance]);
      return result;
    }
    // Latest instance per variant (steps of one parity share a variant).
    for (unsigned parity = 0; parity < (producerDoubled ? 2u : 1u); ++parity) {
      for (int s = step; s >= 0; --s) {
        if (producerDoubled && static_cast<unsigned>(s) % 2 !=
                                   (step + parity) % 2)
          continue;
        if (history[s] && *history[s] < node) {
          result.push_back(*history[s]);
          break;
        }
      }
    }
    return result;
  };

  struct AccessRecord {
    MemoryLocation location;
    unsigned node;
    unsigned step; // the unrolled step of `node`
    const ScheduleUnit *unit;
    Value value;
    bool write;
  };
  llvm::DenseMap<unsigned, std::vector<AccessRecord>> regionAccesses;
  llvm::DenseMap<StreamKind, unsigned> lastGraphEnd;

  for (unsigned step = 0; step < kUnrolledSteps; ++step) {
    for (auto [graphIndex, subgraph] : llvm::enumerate(subgraphs)) {
      bool doubled = subgraph.getDoubleBuffered();
      StreamKind primary = subgraph.getPrimary();
      SmallVector<unsigned, 1> startPreds;
      if (auto it = lastGraphEnd.find(primary); it != lastGraphEnd.end())
        startPreds.push_back(it->second);
      unsigned start = order.addNode(startPreds);
      llvm::DenseMap<StreamKind, unsigned> lastOnStream;

      for (const Element &element : graphs[graphIndex]) {
        SmallVector<unsigned, 2> preds;
        if (auto it = lastOnStream.find(element.stream);
            it != lastOnStream.end())
          preds.push_back(it->second);
        else if (implicitForkJoin || element.stream == primary)
          preds.push_back(start);
        unsigned node = order.addNode(preds);
        lastOnStream[element.stream] = node;

        if (auto record = dyn_cast_or_null<EventRecordOp>(element.event)) {
          RecordHistory &history = eventRecords[record.getEvent()];
          history.resize(kUnrolledSteps);
          history[step] = node;
          eventSubgraph[record.getEvent()] = subgraph;
          continue;
        }
        if (auto wait = dyn_cast_or_null<EventWaitOp>(element.event)) {
          auto it = eventRecords.find(wait.getEvent());
          if (it == eventRecords.end())
            continue;
          SubgraphOp producer = eventSubgraph.lookup(wait.getEvent());
          bool useful = false;
          for (unsigned source :
               sources(it->second, producer.getDoubleBuffered(), doubled,
                       step, wait.getDistance(), node)) {
            useful |= !order.ordered(source, node);
            order.addEdge(source, node);
          }
          waitUseful[wait] |= useful;
          continue;
        }

        const ScheduleUnit *unit = element.unit;
        // Parts of one op ordered by the op itself (rn.part_waits).
        if (unit->part >= 0)
          if (auto pairs =
                  unit->op->getAttrOfType<DenseI64ArrayAttr>(kPartWaitsAttr))
            for (int64_t i = 0; i + 1 < pairs.size(); i += 2)
              if (pairs[i + 1] == unit->part)
                if (std::optional<unsigned> source =
                        unitInstances[unitsOf[unit->op][pairs[i]]][step])
                  order.addEdge(*source, node);
        if (auto it = waitsOf.find(unit); it != waitsOf.end())
          for (auto [producer, distance] : it->second)
            for (unsigned source :
                 sources(unitInstances[producer],
                         SubgraphOp(producer->subgraph).getDoubleBuffered(),
                         doubled, step, distance, node))
              order.addEdge(source, node);
        unitInstances[unit][step] = node;

        for (const Access &access : accesses[unit]) {
          MemoryLocation location = access.location;
          // The B variant of a double-buffered subgraph uses the B inputs.
          if (doubled && step % 2 == 1 &&
              location.region == static_cast<unsigned>(RegionKind::inputs_a))
            location.region = static_cast<unsigned>(RegionKind::inputs_b);
          std::vector<AccessRecord> &records = regionAccesses[location.region];
          for (const AccessRecord &prior : records) {
            if (!(prior.write || access.write) || prior.node == node ||
                !prior.location.overlaps(location) ||
                order.ordered(prior.node, node))
              continue;
            HazardKind kind = !prior.write ? HazardKind::WriteAfterRead
                              : access.write ? HazardKind::WriteAfterWrite
                                             : HazardKind::ReadAfterWrite;
            Hazard hazard{prior.unit, unit, kind, location, prior.value,
                          access.value};
            if (!callbacks.orderHazard || !callbacks.orderHazard(hazard))
              continue;
            unsigned distance = step - prior.step;
            auto &waits = waitsOf[unit];
            if (!llvm::is_contained(waits, std::make_pair(prior.unit, distance))) {
              waits.push_back({prior.unit, distance});
              barriers.push_back(
                  {prior.unit, unit, distance, location.isWorkspace()});
            }
            order.addEdge(prior.node, node);
          }
          // A write covering earlier accesses ends their hazards: later
          // accesses must be ordered after it anyway.
          if (access.write)
            llvm::erase_if(records, [&](const AccessRecord &prior) {
              return prior.location.offset >= location.offset &&
                     prior.location.offset + prior.location.size <=
                         location.offset + location.size;
            });
          records.push_back(
              {location, node, step, unit, access.value, access.write});
        }
      }

      SmallVector<unsigned, 5> endPreds;
      for (auto [stream, last] : lastOnStream)
        if (implicitForkJoin || stream == primary)
          endPreds.push_back(last);
      if (endPreds.empty())
        endPreds.push_back(start);
      lastGraphEnd[primary] = order.addNode(endPreds);
    }
  }

  if (callbacks.onWait) {
    SmallVector<std::pair<Operation *, bool>> waits(waitUseful.begin(),
                                                    waitUseful.end());
    llvm::sort(waits, [](auto &a, auto &b) {
      return a.first->isBeforeInBlock(b.first);
    });
    for (auto [op, useful] : waits)
      callbacks.onWait(cast<EventWaitOp>(op), !useful);
  }
}
