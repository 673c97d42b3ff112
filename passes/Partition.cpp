//===- Partition.cpp - Cut the step functions into subgraphs --------------===//
//
// Classifies every op of @train_step and @eval_step into a named subgraph,
// reorders each function so its subgraphs are contiguous in launch order,
// makes the host -> device copies of the per-step inputs explicit
// (rn.host_to_device, the TRANSFER subgraph) and writes the host-side step
// schedules.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/StreamPolicy.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "rn-partition"

namespace mlir::rn {
#define GEN_PASS_DEF_PARTITION
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;
using namespace mlir::rn::subgraphs;

namespace {

/// The subgraphs of each step function, in launch order.
constexpr StringLiteral kTrainOrder[] = {
    kTransfer,  kZeroGrad,  kFirstLayerFwd, kDeepFwdBwd,
    kFirstLayerBwd, kCastGrad, kAllReduce, kNanCheck, kOptimizer,
    kUpdateBnStats, kCastWeights, kEmaUpdate};
constexpr StringLiteral kEvalOrder[] = {kTransfer, kInference};

/// The function-specific prefix of its subgraph symbols.
StringRef symbolPrefix(func::FuncOp function) {
  return function.getSymName() == "eval_step" ? "EVAL_" : "";
}

struct PartitionPass : public mlir::rn::impl::PartitionBase<PartitionPass> {
  using PartitionBase::PartitionBase;
  void runOnOperation() override;

private:
  /// Makes every rn.input argument that is read a host staging buffer copied
  /// by rn.host_to_device; returns the device copy of the images.
  Value insertTransfers(func::FuncOp function);
  /// Subgraph of each op; an op no rule names is DEEP_FWD_BWD work
  /// (INFERENCE in @eval_step), so none is left out.
  void classify(func::FuncOp function, Value images,
                llvm::DenseMap<Operation *, StringRef> &subgraphOf);
  LogicalResult partition(ModuleOp module, func::FuncOp function,
                          ArrayRef<StringLiteral> order,
                          llvm::SetVector<StringRef> &present,
                          llvm::DenseSet<StringRef> &doubleBuffered);
};

} // namespace

Value PartitionPass::insertTransfers(func::FuncOp function) {
  OpBuilder builder = OpBuilder::atBlockBegin(&function.getBody().front());
  Value images;
  for (BlockArgument arg : function.getArguments()) {
    auto input = function.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                       kInputAttr);
    // An input nothing reads (the step number under SGD) gets no copy: it
    // would be the one copy no event follows, still reading the host buffer
    // after the step's final host wait, when the host restages it.
    if (!input || arg.use_empty())
      continue;
    auto copy = HostToDeviceOp::create(builder, arg.getLoc(), arg.getType(),
                                       arg);
    arg.replaceAllUsesExcept(copy.getResult(), copy);
    if (input.getValue() == "images")
      images = copy.getResult();
  }
  return images;
}

/// Ops that only re-type or re-shape the batch belong to the first layer
/// (normalize_images makes uint8 images floats).
static bool isBatchView(Operation *op) {
  return isa<CastOp, FlattenOp, ReshapeOp, PadChannelsOp, NormalizeImagesOp>(op);
}

/// Whether an operand of `op` is made by DEEP_FWD_BWD work, which launches
/// after the first layer's forward.
static bool readsDeepWork(Operation &op,
                          const llvm::DenseMap<Operation *, StringRef> &subgraphOf) {
  return llvm::any_of(op.getOperands(), [&](Value v) {
    auto it = subgraphOf.find(v.getDefiningOp());
    return it != subgraphOf.end() && it->second == kDeepFwdBwd;
  });
}

void PartitionPass::classify(
    func::FuncOp function, Value images,
    llvm::DenseMap<Operation *, StringRef> &subgraphOf) {
  bool isTrain = function.getSymName() == "train_step";
  // Values that are the batch or a view of it: their readers are the first
  // layer (forward or backward), the only compute that needs A/B variants
  // besides the loss, which reads the labels.
  llvm::DenseSet<Value> batchViews;
  if (images)
    batchViews.insert(images);
  bool inBackward = false;
  for (Operation &op : function.getBody().front().without_terminator()) {
    StringRef subgraph;
    bool readsBatch = llvm::any_of(op.getOperands(), [&](Value v) {
      return batchViews.contains(v);
    });
    if (isa<HostToDeviceOp>(op)) {
      subgraph = kTransfer;
    } else if (!isTrain) {
      subgraph = kInference;
    } else if (isa<SoftmaxCrossEntropyBackwardOp>(op)) {
      inBackward = true;
      subgraph = kDeepFwdBwd;
    } else if (isa<ZeroOp>(op)) {
      subgraph = kZeroGrad;
    } else if (isa<AllReduceMeanOp>(op)) {
      subgraph = kAllReduce;
    } else if (isa<CheckFiniteOp, UnscaleOp, UpdateLossScaleOp>(op)) {
      subgraph = kNanCheck;
    } else if (isa<SgdUpdateOp, MultiSgdUpdateOp, AdamWUpdateOp,
                   MultiAdamWUpdateOp, LarsUpdateOp, MultiLarsUpdateOp>(op)) {
      subgraph = kOptimizer;
    } else if (isa<UpdateRunningStatsOp>(op)) {
      subgraph = kUpdateBnStats;
    } else if (isa<EmaUpdateOp>(op)) {
      subgraph = kEmaUpdate;
    } else if (auto cast = dyn_cast<CastOp>(op); cast && !readsBatch) {
      bool toF32 = cast.getResult().getType().getElementType().isF32();
      subgraph = toF32 ? kCastGrad : kCastWeights;
    } else if (readsBatch && !inBackward && readsDeepWork(op, subgraphOf)) {
      // The batch added to a deeper branch (a residual around the stem):
      // the op waits for that branch, so it runs with it.
      subgraph = kDeepFwdBwd;
    } else if (readsBatch) {
      subgraph = inBackward ? kFirstLayerBwd : kFirstLayerFwd;
      if (!inBackward && isBatchView(&op))
        for (Value result : op.getResults())
          batchViews.insert(result);
    } else if (isa<PadChannelsOp>(op) &&
               llvm::all_of(op.getUsers(), [&](Operation *user) {
                 return llvm::any_of(user->getOperands(), [&](Value v) {
                   return batchViews.contains(v);
                 });
               })) {
      // A padded filter of the first layer (rn-pad-conv-channels) is made
      // with it, after the step's weights are cast.
      subgraph = kFirstLayerFwd;
    } else {
      subgraph = kDeepFwdBwd;
    }
    subgraphOf[&op] = subgraph;
  }
}

LogicalResult
PartitionPass::partition(ModuleOp module, func::FuncOp function,
                         ArrayRef<StringLiteral> order,
                         llvm::SetVector<StringRef> &present,
                         llvm::DenseSet<StringRef> &doubleBuffered) {
  Value images = insertTransfers(function);
  llvm::DenseMap<Operation *, StringRef> subgraphOf;
  classify(function, images, subgraphOf);

  // Which subgraphs read the double-buffered inputs (the device copies of
  // the batch and labels, and everything TRANSFER writes).
  llvm::DenseSet<Value> inputs;
  for (auto copy : function.getOps<HostToDeviceOp>())
    inputs.insert(copy.getResult());
  for (auto &[op, subgraph] : subgraphOf) {
    if (subgraph == kTransfer ||
        llvm::any_of(op->getOperands(),
                     [&](Value v) { return inputs.contains(v); }))
      doubleBuffered.insert(subgraph);
  }

  // Stable reorder: subgraphs contiguous, in launch order.
  Block &body = function.getBody().front();
  SmallVector<Operation *> ordered;
  for (StringRef subgraph : order)
    for (Operation &op : body.without_terminator())
      if (subgraphOf.lookup(&op) == subgraph)
        ordered.push_back(&op);
  Operation *terminator = body.getTerminator();
  for (Operation *op : ordered)
    op->moveBefore(terminator);
  // The order must keep every value defined before its uses.
  DominanceInfo dominance(function);
  for (Operation *op : ordered)
    for (Value operand : op->getOperands())
      if (!dominance.properlyDominates(operand, op))
        return op->emitError("rn-partition would move this op (subgraph ")
               << subgraphOf.lookup(op)
               << ") before the op defining one of its operands";

  Builder builder(module.getContext());
  for (Operation *op : ordered) {
    std::string symbol = (symbolPrefix(function) + subgraphOf.lookup(op)).str();
    op->setAttr(kSubgraphAttr, FlatSymbolRefAttr::get(builder.getContext(),
                                                      symbol));
    present.insert(subgraphOf.lookup(op));
  }
  return success();
}

/// Appends the launches of one step to `builder`'s block: `current` is the
/// variant the step computes on; with `prefetch`, the next batch is copied
/// into the other buffer first.
static void emitStep(OpBuilder &builder, Location loc, StringRef prefix,
                     ArrayRef<StringRef> subgraphs,
                     const llvm::DenseSet<StringRef> &doubleBuffered,
                     InputBuffer current, bool prefetch, bool hostWaitAtEnd) {
  MLIRContext *ctx = builder.getContext();
  InputBuffer next = current == InputBuffer::a ? InputBuffer::b : InputBuffer::a;
  auto symbol = [&](StringRef name) {
    return FlatSymbolRefAttr::get(ctx, (prefix + name).str());
  };
  auto variant = [&](StringRef name, InputBuffer buffer) {
    return doubleBuffered.contains(name)
               ? InputBufferAttr::get(ctx, buffer)
               : InputBufferAttr();
  };
  if (prefetch) {
    // The host refills its staging buffer before each prefetch: the copy
    // launched by the previous step (into this step's buffer) must be done.
    HostWaitOp::create(builder, loc, symbol(kTransfer),
                       variant(kTransfer, current));
    LaunchOp::create(builder, loc, symbol(kTransfer), variant(kTransfer, next));
  }
  StringRef last;
  for (StringRef name : subgraphs) {
    if (name == kTransfer)
      continue;
    LaunchOp::create(builder, loc, symbol(name), variant(name, current));
    last = name;
  }
  if (hostWaitAtEnd && !last.empty())
    HostWaitOp::create(builder, loc, symbol(last), variant(last, current));
}

void PartitionPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (!module.getOps<SubgraphOp>().empty()) {
    module.emitError("the module is already partitioned");
    return signalPassFailure();
  }
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  auto eval = module.lookupSymbol<func::FuncOp>("eval_step");
  if (!train || !eval) {
    module.emitError("rn-partition needs @train_step and @eval_step; run "
                     "rn-build-training first");
    return signalPassFailure();
  }

  OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
  // Declarations go after the last state declaration, before the functions.
  for (Operation &op : *module.getBody())
    if (isa<ParameterOp, StateOp>(op))
      builder.setInsertionPointAfter(&op);
  Location loc = module.getLoc();

  struct StepFunction {
    func::FuncOp function;
    ArrayRef<StringLiteral> order;
    StringRef schedulePrefix;
  };
  StepFunction steps[] = {{train, kTrainOrder, "train"},
                          {eval, kEvalOrder, "eval"}};
  for (StepFunction &step : steps) {
    llvm::SetVector<StringRef> present;
    llvm::DenseSet<StringRef> doubleBuffered;
    if (failed(partition(module, step.function, step.order, present,
                         doubleBuffered)))
      return signalPassFailure();
    StringRef prefix = symbolPrefix(step.function);
    SmallVector<StringRef> launchOrder;
    for (StringRef name : step.order)
      if (present.contains(name)) {
        launchOrder.push_back(name);
        SubgraphOp::create(
            builder, loc, builder.getStringAttr((prefix + name).str()),
            FlatSymbolRefAttr::get(step.function.getSymNameAttr()),
            StreamKindAttr::get(builder.getContext(), getPrimaryStream(name)),
            doubleBuffered.contains(name) ? builder.getUnitAttr()
                                          : UnitAttr());
        ++numSubgraphs;
      }

    // The schedules: a prologue copies the first batch into A; steps then
    // alternate A and B, each prefetching the next batch into the other
    // buffer; the last step prefetches nothing and the host waits for it.
    auto schedule = [&](StringRef suffix, auto fill) {
      auto op = StepScheduleOp::create(
          builder, loc,
          builder.getStringAttr((step.schedulePrefix + "_" + suffix).str()));
      Block *block = new Block();
      op.getBody().push_back(block);
      OpBuilder inner = OpBuilder::atBlockBegin(block);
      fill(inner);
    };
    bool evalStep = step.function == eval;
    schedule("prologue", [&](OpBuilder &b) {
      LaunchOp::create(
          b, loc, FlatSymbolRefAttr::get(b.getContext(),
                                         (prefix + kTransfer).str()),
          InputBufferAttr::get(b.getContext(), InputBuffer::a));
    });
    for (auto [suffix, current] :
         {std::pair<StringRef, InputBuffer>{"even", InputBuffer::a},
          {"odd", InputBuffer::b}}) {
      schedule(suffix, [&](OpBuilder &b) {
        emitStep(b, loc, prefix, launchOrder, doubleBuffered, current,
                 /*prefetch=*/true, /*hostWaitAtEnd=*/evalStep);
      });
      schedule(("last_" + suffix).str(), [&](OpBuilder &b) {
        emitStep(b, loc, prefix, launchOrder, doubleBuffered, current,
                 /*prefetch=*/false, /*hostWaitAtEnd=*/true);
      });
    }
  }
}
