//===- PlanMemory.cpp - Give every value a slot in the device arena -------===//
//
// The device memory of a training run is one arena, cut at compile time into
// typed regions (weights, gradients, optimizer state, inputs A/B, scalars,
// activations, workspaces), so that captured CUDA graphs never allocate.
// This pass gives every device value of every step function a slot
// (#rn.slot<region, offset, bytes>) and writes the regions into one
// module-level rn.memory_plan.
//
// Values are grouped into *buffers*: a result that an op updates in place
// (InPlaceOpInterface) joins the buffer of the operand it updates, so every
// buffer is a chain root -> update -> update ... whose members share one
// slot. What a buffer holds decides where it lives:
//
//   - an argument or a returned result bound to state @S: S's slot, shared
//     by all functions (weights, gradients, optimizer state, ...);
//   - a per-step input (the argument, or its rn.host_to_device copy),
//     batch or scalar alike: inputs_a, mirrored in inputs_b, since the next
//     step's copy (learning rate included) is prefetched into the other
//     buffer while this step runs; one slot per input name, shared by all
//     functions;
//   - a rank-0 rn.output (loss, correct): its own scalar slot;
//   - everything else: activations, reused by liveness over the function
//     order (the step schedule), best fit on a free list.
//
// Nothing here knows individual ops except rn.host_to_device: everything
// comes from types, InPlaceOpInterface and the function bindings.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#include <map>

#define DEBUG_TYPE "rn-plan-memory"

namespace mlir::rn {
#define GEN_PASS_DEF_PLANMEMORY
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;

namespace {

constexpr unsigned kNumRegions =
    static_cast<unsigned>(rn::RegionKind::workspace_update) + 1;
constexpr uint64_t kMiB = 1024 * 1024;
/// The UPDATE stream's workspace (multi-tensor kernels, all-reduce scratch).
constexpr uint64_t kUpdateWorkspaceBytes = 1 * kMiB;

/// The region a state declaration lives in.
static rn::RegionKind regionOfState(Operation *declaration) {
  if (auto parameter = dyn_cast<ParameterOp>(declaration))
    return parameter.isTrainable() ? rn::RegionKind::weights
                                   : rn::RegionKind::bn_statistics;
  switch (cast<StateOp>(declaration).getRole()) {
  case StateRole::gradient:
  case StateRole::master_gradient:
    return rn::RegionKind::gradients;
  case StateRole::momentum:
  case StateRole::adam_m:
  case StateRole::adam_v:
    return rn::RegionKind::optimizer_state;
  case StateRole::low_precision_weight:
    return rn::RegionKind::weights_low_precision;
  case StateRole::ema:
    return rn::RegionKind::ema;
  case StateRole::loss_scale:
  case StateRole::loss_scale_good_steps:
    return rn::RegionKind::scalars;
  }
  llvm_unreachable("unknown state role");
}

/// Best-fit allocation in a growing region: freed blocks are coalesced; when
/// nothing fits, the region grows (extending a free block at its end).
class RegionAllocator {
public:
  uint64_t allocate(uint64_t size) {
    auto best = freeBlocks.end();
    for (auto it = freeBlocks.begin(); it != freeBlocks.end(); ++it)
      if (it->second >= size &&
          (best == freeBlocks.end() || it->second < best->second))
        best = it;
    if (best != freeBlocks.end()) {
      uint64_t offset = best->first, rest = best->second - size;
      freeBlocks.erase(best);
      if (rest)
        freeBlocks[offset + size] = rest;
      return offset;
    }
    if (!freeBlocks.empty()) {
      auto last = std::prev(freeBlocks.end());
      if (last->first + last->second == top) {
        uint64_t offset = last->first;
        freeBlocks.erase(last);
        top = offset + size;
        return offset;
      }
    }
    uint64_t offset = top;
    top += size;
    return offset;
  }

  void release(uint64_t offset, uint64_t size) {
    auto [it, inserted] = freeBlocks.emplace(offset, size);
    assert(inserted && "double free");
    (void)inserted;
    auto next = std::next(it);
    if (next != freeBlocks.end() && it->first + it->second == next->first) {
      it->second += next->second;
      freeBlocks.erase(next);
    }
    if (it != freeBlocks.begin()) {
      auto previous = std::prev(it);
      if (previous->first + previous->second == it->first) {
        previous->second += it->second;
        freeBlocks.erase(it);
      }
    }
  }

  uint64_t size() const { return top; }

private:
  std::map<uint64_t, uint64_t> freeBlocks; // offset -> bytes
  uint64_t top = 0;
};

/// Where a buffer must live, and why (for diagnostics).
struct Demand {
  enum Kind { State, Input, OutputScalar } kind;
  /// The state symbol or the input name.
  StringAttr name;
  /// "argument #2 (bound to @w)", "result #0 (output \"loss\")", ...
  std::string description;
  Location loc;
  /// Where the value is read or written with this demand: the function for
  /// arguments, the return op for results, the copy op for device copies.
  Operation *anchor;
  /// A result bound to state (the new value of the state).
  bool isResult = false;
};

static std::string describeHome(const Demand &demand) {
  switch (demand.kind) {
  case Demand::State:
    return "@" + demand.name.str() + "'s slot";
  case Demand::Input:
    return "the slot of input \"" + demand.name.str() + "\"";
  case Demand::OutputScalar:
    return "a scalar output slot";
  }
  llvm_unreachable("unknown demand");
}

/// A fixed slot shared across functions: a state symbol or an input name.
struct SharedSlot {
  rn::RegionKind region = rn::RegionKind::activations;
  uint64_t bytes = 0; // aligned size
  uint64_t offset = 0;
};

/// One buffer of a function: an in-place chain of values sharing a slot.
struct Buffer {
  /// Members in chain order; members[0] is the root.
  SmallVector<Value, 2> members;
  unsigned birth = 0;   // position of the root (0: an argument)
  unsigned lastUse = 0; // last position any member is read (or defined)
  uint64_t bytes = 0;   // aligned size: the largest member
  SmallVector<Demand, 1> demands;
  // The assignment.
  rn::RegionKind region = rn::RegionKind::activations;
  uint64_t offset = 0;
  /// Key of its shared slot (state symbol or input name), if any.
  StringAttr sharedKey;
  bool isStateSlot = false;
};

/// The analysis of one step function.
struct FunctionPlan {
  func::FuncOp function;
  /// Top-level ops in order; op `i` has position i + 1, arguments 0.
  DenseMap<Operation *, unsigned> position;
  /// Arguments that are host staging buffers (no slot).
  llvm::SmallDenseSet<unsigned> hostArguments;
  /// Buffer of every device value.
  DenseMap<Value, unsigned> bufferOf;
  SmallVector<Buffer> buffers;
  uint64_t activationBytes = 0;
  uint64_t activationBytesWithoutReuse = 0;
};

struct PlanMemoryPass
    : public mlir::rn::impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

  void runOnOperation() override;

private:
  uint64_t align(uint64_t bytes) const {
    return llvm::alignTo(std::max<uint64_t>(bytes, 1),
                         static_cast<uint64_t>(alignment));
  }

  LogicalResult analyzeFunction(FunctionPlan &plan);
  LogicalResult checkSharedSlotLifetimes(FunctionPlan &plan);
  void planActivations(FunctionPlan &plan, uint64_t base);

  SymbolTable *symbols = nullptr;
  /// Shared slots by state symbol, in declaration order once laid out.
  llvm::MapVector<StringAttr, SharedSlot> stateSlots;
  /// Shared slots by input name, in order of first appearance.
  llvm::MapVector<StringAttr, SharedSlot> inputSlots;
};

} // namespace

/// "%arg3", "%new_param" - how the value prints in its function.
static std::string valueName(Value value) {
  std::string name;
  llvm::raw_string_ostream os(name);
  value.printAsOperand(os, OpPrintingFlags());
  return name;
}

static std::string argumentDescription(unsigned index, StringRef detail) {
  return ("argument #" + llvm::Twine(index) + " (" + detail + ")").str();
}

LogicalResult PlanMemoryPass::analyzeFunction(FunctionPlan &plan) {
  func::FuncOp function = plan.function;
  if (function.isExternal())
    return function.emitOpError(
        "is a step function without a body: nothing to plan");
  if (!function.getBody().hasOneBlock())
    return function.emitOpError("must have a single block to be planned");
  Block &body = function.getBody().front();

  for (auto [index, op] : llvm::enumerate(body))
    plan.position[&op] = index + 1;
  for (Operation &op : body)
    if (op.getNumRegions() != 0)
      return op.emitOpError("has regions: the memory planner only plans flat "
                            "step functions");

  // Arguments: state, device inputs or host staging buffers.
  for (BlockArgument argument : function.getArguments()) {
    unsigned index = argument.getArgNumber();
    bool isInput = function.getArgAttr(index, kInputAttr) != nullptr;
    bool isState = function.getArgAttr(index, kStateAttr) != nullptr;
    if (!isInput && !isState)
      return function.emitOpError("argument #")
             << index << " has neither '" << kStateAttr << "' nor '"
             << kInputAttr << "': the planner cannot tell where it lives";
    // An input nothing reads (the step number under SGD; rn-partition copies
    // only inputs that are read) needs no device memory: it stays a host
    // buffer.
    if (isInput && argument.use_empty()) {
      plan.hostArguments.insert(index);
      continue;
    }
    if (isInput) {
      unsigned copies = 0;
      Operation *direct = nullptr;
      for (Operation *user : argument.getUsers()) {
        if (isa<HostToDeviceOp>(user))
          ++copies;
        else if (!direct)
          direct = user;
      }
      if (copies && direct) {
        InFlightDiagnostic diag =
            direct->emitOpError("reads input argument #")
            << index
            << " directly, but it is a host staging buffer (copied to the "
               "device by rn.host_to_device): read the device copy";
        return diag;
      }
      if (copies) {
        plan.hostArguments.insert(index);
        continue;
      }
    }
    if (!getStorageBytes(argument.getType()))
      return function.emitOpError("argument #")
             << index << " has type " << argument.getType()
             << ", which has no static size: it cannot get a slot";
  }
  for (Operation &op : body)
    for (OpResult result : op.getResults())
      if (!getStorageBytes(result.getType()))
        return op.emitOpError("result #")
               << result.getResultNumber() << " has type " << result.getType()
               << ", which has no static size: it cannot get a slot";
  for (Operation &op : body)
    if (auto copy = dyn_cast<HostToDeviceOp>(op)) {
      auto argument = dyn_cast<BlockArgument>(copy.getInput());
      if (!argument || argument.getOwner() != &body ||
          !function.getArgAttr(argument.getArgNumber(), kInputAttr))
        return copy.emitOpError(
            "copies a value that is not an 'rn.input' argument of the step "
            "function: only per-step inputs come from the host");
    }

  // Last use of every value.
  auto lastUse = [&](Value value) -> unsigned {
    unsigned last = 0;
    if (Operation *def = value.getDefiningOp())
      last = plan.position.lookup(def);
    for (Operation *user : value.getUsers())
      last = std::max(last, plan.position.lookup(user));
    return last;
  };
  auto latestReader = [&](Value value) -> Operation * {
    Operation *latest = nullptr;
    for (Operation *user : value.getUsers())
      if (!latest || plan.position.lookup(user) > plan.position.lookup(latest))
        latest = user;
    return latest;
  };

  // In-place updates: each result joins its operand's buffer.
  DenseMap<Value, Value> updatedFrom;
  for (Operation &op : body) {
    auto inPlace = dyn_cast<InPlaceOpInterface>(op);
    if (!inPlace)
      continue;
    unsigned where = plan.position.lookup(&op);
    DenseMap<Value, unsigned> updatedBy;
    for (OpResult result : op.getResults()) {
      std::optional<unsigned> operandIndex =
          inPlace.getUpdatedOperand(result.getResultNumber());
      if (!operandIndex)
        continue;
      if (*operandIndex >= op.getNumOperands())
        return op.emitOpError("result #")
               << result.getResultNumber() << " updates operand #"
               << *operandIndex << ", which does not exist";
      Value operand = op.getOperand(*operandIndex);
      // Printing a value's name walks its function: only for diagnostics.
      auto name = [&] { return valueName(operand); };
      if (auto argument = dyn_cast<BlockArgument>(operand))
        if (plan.hostArguments.contains(argument.getArgNumber()))
          return op.emitOpError("updates operand #")
                 << *operandIndex << " (" << name()
                 << ") in place, but it is a host staging buffer";
      auto [previous, inserted] =
          updatedBy.try_emplace(operand, result.getResultNumber());
      if (!inserted)
        return op.emitOpError("results #")
               << previous->second << " and #" << result.getResultNumber()
               << " both update " << name()
               << " in place: they would share one slot";
      if (lastUse(operand) > where) {
        InFlightDiagnostic diag =
            op.emitOpError("updates operand #")
            << *operandIndex << " (" << name() << ") in place (result #"
            << result.getResultNumber() << "), but " << name()
            << " is still read afterwards: the update would clobber it";
        diag.attachNote(latestReader(operand)->getLoc()) << "read here";
        return diag;
      }
      updatedFrom[result] = operand;
    }
  }

  // Buffers: walk the chains from their roots (each value has at most one
  // in-place update, checked above).
  DenseMap<Value, Value> updatedBy;
  for (auto [result, operand] : updatedFrom)
    updatedBy[operand] = result;
  auto addBuffer = [&](Value root, unsigned birth) {
    unsigned id = plan.buffers.size();
    Buffer &buffer = plan.buffers.emplace_back();
    buffer.birth = birth;
    buffer.lastUse = birth;
    for (Value value = root; value; value = updatedBy.lookup(value)) {
      buffer.members.push_back(value);
      buffer.lastUse = std::max(buffer.lastUse, lastUse(value));
      buffer.bytes =
          std::max(buffer.bytes, align(*getStorageBytes(value.getType())));
      plan.bufferOf[value] = id;
    }
  };
  for (BlockArgument argument : function.getArguments())
    if (!plan.hostArguments.contains(argument.getArgNumber()))
      addBuffer(argument, 0);
  for (Operation &op : body)
    for (OpResult result : op.getResults())
      if (!updatedFrom.count(result))
        addBuffer(result, plan.position.lookup(&op));

  // Demands, in program order: arguments, device copies, results.
  auto addDemand = [&](Value value, Demand demand) -> LogicalResult {
    Buffer &buffer = plan.buffers[plan.bufferOf.lookup(value)];
    for (const Demand &other : buffer.demands) {
      if (other.kind == demand.kind && other.name == demand.name)
        continue;
      if (other.kind == Demand::OutputScalar &&
          demand.kind == Demand::OutputScalar)
        continue;
      InFlightDiagnostic diag = emitError(demand.loc)
                                << "'" << demand.anchor->getName() << "' op "
                                << demand.description << " and "
                                << other.description
                                << " are one in-place chain (one buffer), "
                                   "which cannot live in both "
                                << describeHome(other) << " and "
                                << describeHome(demand);
      if (other.anchor != demand.anchor)
        diag.attachNote(other.loc) << "see " << other.description;
      return diag;
    }
    buffer.demands.push_back(std::move(demand));
    return success();
  };
  for (BlockArgument argument : function.getArguments()) {
    unsigned index = argument.getArgNumber();
    if (plan.hostArguments.contains(index))
      continue;
    Demand demand{Demand::State, {}, "", function.getLoc(), function};
    if (auto state =
            function.getArgAttrOfType<FlatSymbolRefAttr>(index, kStateAttr)) {
      demand.name = state.getAttr();
      demand.description = argumentDescription(
          index, ("bound to @" + state.getValue()).str());
    } else {
      auto input = function.getArgAttrOfType<StringAttr>(index, kInputAttr);
      if (!input)
        return function.emitOpError("argument #")
               << index << " has a malformed '" << kInputAttr << "'";
      demand.kind = Demand::Input;
      demand.name = input;
      demand.description = argumentDescription(
          index, ("per-step input \"" + input.getValue() + "\"").str());
    }
    if (failed(addDemand(argument, std::move(demand))))
      return failure();
  }
  for (Operation &op : body)
    if (auto copy = dyn_cast<HostToDeviceOp>(op)) {
      unsigned index = cast<BlockArgument>(copy.getInput()).getArgNumber();
      auto input = function.getArgAttrOfType<StringAttr>(index, kInputAttr);
      if (!input)
        return function.emitOpError("argument #")
               << index << " has a malformed '" << kInputAttr << "'";
      Demand demand{Demand::Input, input,
                    ("the device copy of input \"" + input.getValue() + "\"")
                        .str(),
                    copy.getLoc(), copy};
      if (failed(addDemand(copy.getResult(), std::move(demand))))
        return failure();
    }
  Operation *terminator = body.getTerminator();
  for (auto [index, value] : llvm::enumerate(terminator->getOperands())) {
    if (auto argument = dyn_cast<BlockArgument>(value))
      if (plan.hostArguments.contains(argument.getArgNumber()))
        return terminator->emitOpError("returns the host staging buffer ")
               << valueName(value) << " as result #" << index;
    if (auto state = function.getResultAttrOfType<FlatSymbolRefAttr>(
            index, kStateAttr)) {
      Demand demand{Demand::State,
                    state.getAttr(),
                    ("result #" + llvm::Twine(index) + " (bound to @" +
                     state.getValue() + ")")
                        .str(),
                    terminator->getLoc(),
                    terminator,
                    /*isResult=*/true};
      if (failed(addDemand(value, std::move(demand))))
        return failure();
      continue;
    }
    auto output = function.getResultAttrOfType<StringAttr>(index, kOutputAttr);
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (output && type && type.getRank() == 0) {
      Demand demand{Demand::OutputScalar, output,
                    ("result #" + llvm::Twine(index) + " (output \"" +
                     output.getValue() + "\")")
                        .str(),
                    terminator->getLoc(), terminator};
      if (failed(addDemand(value, std::move(demand))))
        return failure();
    }
  }

  // Regions of the buffers with a fixed home.
  for (Buffer &buffer : plan.buffers) {
    if (buffer.demands.empty())
      continue;
    const Demand &demand = buffer.demands.front();
    switch (demand.kind) {
    case Demand::State: {
      Operation *declaration = symbols->lookup(demand.name);
      if (!declaration || !isa<ParameterOp, StateOp>(declaration))
        return emitError(demand.loc)
               << demand.description << ": @" << demand.name.getValue()
               << " is not an rn.parameter or rn.state";
      std::optional<uint64_t> declared =
          getStorageBytes(getDeclaredStateType(declaration));
      if (!declared)
        return declaration->emitOpError("has no static size: its state "
                                        "cannot get a slot");
      for (Value member : buffer.members) {
        uint64_t bytes = *getStorageBytes(member.getType());
        if (bytes > *declared) {
          InFlightDiagnostic diag =
              emitError(member.getLoc())
              << "value " << valueName(member) << " of type "
              << member.getType() << " needs " << bytes
              << " bytes but it lives in @" << demand.name.getValue()
              << "'s slot, which holds " << *declared;
          return diag;
        }
      }
      SharedSlot &slot = stateSlots[demand.name];
      slot.region = regionOfState(declaration);
      slot.bytes = align(*declared);
      buffer.region = slot.region;
      buffer.sharedKey = demand.name;
      buffer.isStateSlot = true;
      break;
    }
    case Demand::Input: {
      rn::RegionKind region = rn::RegionKind::inputs_a;
      auto [it, inserted] = inputSlots.try_emplace(demand.name);
      it->second.region = region;
      it->second.bytes = std::max(it->second.bytes, buffer.bytes);
      buffer.region = region;
      buffer.sharedKey = demand.name;
      break;
    }
    case Demand::OutputScalar:
      buffer.region = rn::RegionKind::scalars;
      break;
    }
  }
  return checkSharedSlotLifetimes(plan);
}

/// Buffers of one function that share a state or input slot must not be
/// alive at the same time, and state that is updated must be returned.
LogicalResult PlanMemoryPass::checkSharedSlotLifetimes(FunctionPlan &plan) {
  llvm::MapVector<StringAttr, SmallVector<unsigned>> byKey;
  for (auto [id, buffer] : llvm::enumerate(plan.buffers))
    if (buffer.sharedKey)
      byKey[buffer.sharedKey].push_back(id);
  for (auto &[key, ids] : byKey) {
    llvm::sort(ids, [&](unsigned a, unsigned b) {
      return plan.buffers[a].birth < plan.buffers[b].birth;
    });
    for (size_t i = 1; i < ids.size(); ++i) {
      Buffer &before = plan.buffers[ids[i - 1]];
      Buffer &after = plan.buffers[ids[i]];
      if (before.lastUse < after.birth)
        continue;
      Value root = after.members.front();
      Operation *writer = root.getDefiningOp();
      Value old = before.members.back();
      Operation *reader = nullptr;
      for (Value member : before.members)
        for (Operation *user : member.getUsers())
          if (!reader ||
              plan.position.lookup(user) > plan.position.lookup(reader))
            reader = user;
      InFlightDiagnostic diag =
          (writer ? writer->emitOpError() : plan.function.emitOpError())
          << "writes " << valueName(root) << " into "
          << describeHome(after.demands.front()) << " while "
          << valueName(old)
          << ", which lives there, is still read afterwards";
      if (reader)
        diag.attachNote(reader->getLoc()) << "read here";
      return diag;
    }
  }

  // State updated in place must end in its slot as a returned result.
  for (Buffer &buffer : plan.buffers) {
    if (!buffer.isStateSlot || buffer.members.size() < 2)
      continue;
    bool returned = llvm::any_of(buffer.demands, [](const Demand &demand) {
      return demand.isResult;
    });
    if (returned)
      continue;
    Operation *update = buffer.members[1].getDefiningOp();
    return update->emitOpError("updates ")
           << valueName(buffer.members.front()) << " (@"
           << buffer.sharedKey.getValue()
           << ") in place, but the function does not return the new value "
              "bound to @"
           << buffer.sharedKey.getValue();
  }
  return success();
}

/// Activation buffers of one function, by liveness over its op order; the
/// offsets are relative to the activation region, starting at `base`.
void PlanMemoryPass::planActivations(FunctionPlan &plan, uint64_t base) {
  // Buffers born and dying at each position.
  unsigned end = plan.position.size() + 1;
  SmallVector<SmallVector<unsigned>> born(end + 1), dying(end + 1);
  for (auto [id, buffer] : llvm::enumerate(plan.buffers)) {
    if (!buffer.demands.empty())
      continue;
    born[buffer.birth].push_back(id);
    dying[buffer.lastUse].push_back(id);
    plan.activationBytesWithoutReuse += buffer.bytes;
  }
  RegionAllocator allocator;
  for (unsigned position = 0; position <= end; ++position) {
    for (unsigned id : born[position])
      plan.buffers[id].offset = allocator.allocate(plan.buffers[id].bytes);
    if (reuse)
      for (unsigned id : dying[position])
        allocator.release(plan.buffers[id].offset, plan.buffers[id].bytes);
  }
  for (Buffer &buffer : plan.buffers)
    if (buffer.demands.empty())
      buffer.offset += base;
  plan.activationBytes = allocator.size();
}

void PlanMemoryPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();

  if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
    mlir::emitError(module.getLoc(),
                    "rn-plan-memory: alignment must be a power of two, got ")
        << static_cast<int64_t>(alignment);
    return signalPassFailure();
  }
  if (workspaceMiB < 0) {
    mlir::emitError(module.getLoc(),
                    "rn-plan-memory: workspace-mib must be non-negative, got ")
        << static_cast<int64_t>(workspaceMiB);
    return signalPassFailure();
  }
  for (auto existing : module.getOps<MemoryPlanOp>()) {
    existing.emitOpError("the module already has a memory plan");
    return signalPassFailure();
  }

  SymbolTable symbolTable(module);
  symbols = &symbolTable;
  stateSlots.clear();
  inputSlots.clear();

  // Step functions: those with state or per-step input arguments, in module
  // order.
  std::vector<FunctionPlan> plans;
  for (auto function : module.getOps<func::FuncOp>()) {
    bool isStep = false;
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
      isStep |= function.getArgAttr(i, kStateAttr) ||
                function.getArgAttr(i, kInputAttr);
    if (!isStep)
      continue;
    bool planned = false;
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
      planned |= function.getArgAttr(i, kSlotAttr) != nullptr;
    function.walk([&](Operation *op) { planned |= op->hasAttr(kSlotsAttr); });
    if (planned) {
      function.emitOpError("the module already has a memory plan (the "
                           "function carries slots)");
      return signalPassFailure();
    }
    plans.emplace_back().function = function;
  }
  if (plans.empty()) {
    mlir::emitError(module.getLoc(),
                    "rn-plan-memory: the module has no step function (a "
                    "function with '")
        << kStateAttr << "' or '" << kInputAttr
        << "' arguments): run rn-build-training first";
    return signalPassFailure();
  }
  for (FunctionPlan &plan : plans)
    if (failed(analyzeFunction(plan)))
      return signalPassFailure();

  // Fixed slots. The gradients of the data-parallel buckets, then the
  // other state in declaration order (neighbouring parameters stay
  // contiguous, so multi-tensor updates can cover a range), then inputs,
  // then scalar outputs.
  std::array<uint64_t, kNumRegions> regionBytes{};
  auto place = [&](rn::RegionKind region, uint64_t bytes) {
    uint64_t &top = regionBytes[static_cast<unsigned>(region)];
    uint64_t offset = top;
    top += bytes;
    return offset;
  };
  // Data-parallel buckets first: the gradients each rn.all_reduce_mean
  // averages sit back to back in the gradient region, in its operand order,
  // bucket after bucket (the backward's order), so that the runtime
  // averages a bucket with one collective over one range.
  DenseSet<StringAttr> placedStates;
  DenseSet<std::pair<FunctionPlan *, unsigned>> placedBuffers;
  for (FunctionPlan &plan : plans)
    for (Operation &op : plan.function.getBody().front()) {
      if (!isa<AllReduceMeanOp>(op))
        continue;
      for (Value operand : op.getOperands()) {
        auto id = plan.bufferOf.find(operand);
        if (id == plan.bufferOf.end())
          continue;
        Buffer &buffer = plan.buffers[id->second];
        if (buffer.region != rn::RegionKind::gradients || buffer.demands.empty())
          continue;
        if (buffer.sharedKey && buffer.isStateSlot) {
          SharedSlot &slot = stateSlots[buffer.sharedKey];
          if (placedStates.insert(buffer.sharedKey).second)
            slot.offset = place(slot.region, slot.bytes);
        } else if (!buffer.sharedKey &&
                   placedBuffers.insert({&plan, id->second}).second) {
          buffer.offset = place(buffer.region, buffer.bytes);
        }
      }
    }
  for (Operation &op : module.getBody()->getOperations()) {
    auto symbol = op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
    if (!symbol || !isa<ParameterOp, StateOp>(op))
      continue;
    auto it = stateSlots.find(symbol);
    if (it == stateSlots.end() || placedStates.contains(symbol))
      continue;
    it->second.offset = place(it->second.region, it->second.bytes);
  }
  for (auto &[name, slot] : inputSlots)
    slot.offset = place(slot.region, slot.bytes);
  for (FunctionPlan &plan : plans)
    for (auto [id, buffer] : llvm::enumerate(plan.buffers)) {
      if (buffer.demands.empty() || placedBuffers.contains({&plan, unsigned(id)}))
        continue;
      if (buffer.sharedKey) {
        const SharedSlot &slot = buffer.isStateSlot
                                     ? stateSlots.lookup(buffer.sharedKey)
                                     : inputSlots.lookup(buffer.sharedKey);
        buffer.offset = slot.offset;
      } else {
        buffer.offset = place(buffer.region, buffer.bytes);
      }
    }

  // Activations: each function from offset 0 (train and eval never run at
  // once); without reuse, every buffer of every function its own slot.
  uint64_t activationTop = 0, withoutReuse = 0;
  for (FunctionPlan &plan : plans) {
    planActivations(plan, reuse ? 0 : activationTop);
    activationTop = reuse ? std::max(activationTop, plan.activationBytes)
                          : activationTop + plan.activationBytes;
    withoutReuse += plan.activationBytesWithoutReuse;
  }
  regionBytes[static_cast<unsigned>(rn::RegionKind::activations)] = activationTop;
  regionBytes[static_cast<unsigned>(rn::RegionKind::inputs_b)] =
      regionBytes[static_cast<unsigned>(rn::RegionKind::inputs_a)];
  uint64_t computeWorkspace =
      align(static_cast<uint64_t>(workspaceMiB) * kMiB);
  if (workspaceMiB > 0)
    for (rn::RegionKind region :
         {rn::RegionKind::workspace_comp1, rn::RegionKind::workspace_comp2,
          rn::RegionKind::workspace_comp3})
      regionBytes[static_cast<unsigned>(region)] = computeWorkspace;
  regionBytes[static_cast<unsigned>(rn::RegionKind::workspace_update)] =
      align(kUpdateWorkspaceBytes);

  // Regions back to back in enum order; empty ones are left out.
  SmallVector<Attribute> extents;
  uint64_t arena = 0;
  for (unsigned kind = 0; kind < kNumRegions; ++kind) {
    uint64_t bytes = regionBytes[kind];
    if (!bytes)
      continue;
    extents.push_back(
        ExtentAttr::get(ctx, static_cast<rn::RegionKind>(kind), arena, bytes));
    arena += bytes;
  }

  // Write the slots.
  for (FunctionPlan &plan : plans) {
    auto slotOf = [&](Value value) -> Attribute {
      const Buffer &buffer = plan.buffers[plan.bufferOf.lookup(value)];
      return SlotAttr::get(ctx, buffer.region, buffer.offset,
                           *getStorageBytes(value.getType()));
    };
    func::FuncOp function = plan.function;
    for (BlockArgument argument : function.getArguments())
      if (!plan.hostArguments.contains(argument.getArgNumber()))
        function.setArgAttr(argument.getArgNumber(), kSlotAttr,
                            slotOf(argument));
    for (Operation &op : function.getBody().front()) {
      if (op.getNumResults() == 0)
        continue;
      SmallVector<Attribute> slots;
      for (Value result : op.getResults())
        slots.push_back(slotOf(result));
      op.setAttr(kSlotsAttr, ArrayAttr::get(ctx, slots));
    }
  }
  OpBuilder builder(ctx);
  builder.setInsertionPoint(plans.front().function);
  MemoryPlanOp::create(builder, module.getLoc(), arena,
                       static_cast<uint64_t>(alignment),
                       builder.getArrayAttr(extents));

  auto bytesOf = [&](rn::RegionKind region) {
    return regionBytes[static_cast<unsigned>(region)];
  };
  totalBytes = arena;
  activationBytes = activationTop;
  activationBytesWithoutReuse = withoutReuse;
  weightBytes = bytesOf(rn::RegionKind::weights);
  lowPrecisionWeightBytes = bytesOf(rn::RegionKind::weights_low_precision);
  gradientBytes = bytesOf(rn::RegionKind::gradients);
  optimizerStateBytes = bytesOf(rn::RegionKind::optimizer_state);
  bnStatisticsBytes = bytesOf(rn::RegionKind::bn_statistics);
  emaBytes = bytesOf(rn::RegionKind::ema);
  inputBytes = bytesOf(rn::RegionKind::inputs_a) + bytesOf(rn::RegionKind::inputs_b);
  scalarBytes = bytesOf(rn::RegionKind::scalars);
  workspaceBytes = bytesOf(rn::RegionKind::workspace_comp1) +
                   bytesOf(rn::RegionKind::workspace_comp2) +
                   bytesOf(rn::RegionKind::workspace_comp3) +
                   bytesOf(rn::RegionKind::workspace_update);
  unsigned slotCount = 0;
  for (FunctionPlan &plan : plans)
    slotCount += plan.bufferOf.size();
  numSlots = slotCount;

  auto writeSummary = [&](llvm::raw_ostream &os) {
    os << "memory plan: arena " << arena << " bytes, alignment "
       << static_cast<int64_t>(alignment)
       << ", activation reuse " << (reuse ? "on" : "off") << "\n";
    for (Attribute attr : extents) {
      auto extent = cast<ExtentAttr>(attr);
      os << "  " << stringifyRegionKind(extent.getRegion()) << " at "
         << extent.getOffset() << ": " << extent.getSize() << " bytes\n";
    }
    for (FunctionPlan &plan : plans)
      os << "  @" << plan.function.getSymName() << ": "
         << plan.bufferOf.size() << " device values in "
         << plan.buffers.size() << " buffers, activations "
         << plan.activationBytes << " bytes ("
         << plan.activationBytesWithoutReuse << " without reuse)\n";
    os << "  activations: " << activationTop << " bytes, "
       << withoutReuse << " without reuse";
  };
  LLVM_DEBUG({
    writeSummary(llvm::dbgs());
    llvm::dbgs() << "\n";
  });
  if (printSummary) {
    std::string text;
    llvm::raw_string_ostream os(text);
    writeSummary(os);
    // Not Operation::emitRemark: that would print the whole module too.
    mlir::emitRemark(module.getLoc(), text);
  }
}
