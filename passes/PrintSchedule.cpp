//===- PrintSchedule.cpp - Readable and Graphviz schedule dumps -----------===//

#include "passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "rn-print-schedule"

namespace mlir::rn {
#define GEN_PASS_DEF_PRINTSCHEDULE
#include "passes/Passes.h.inc"
} // namespace mlir::rn

using namespace mlir;
using namespace mlir::rn;

namespace {
struct PrintSchedulePass
    : public mlir::rn::impl::PrintScheduleBase<PrintSchedulePass> {
  using PrintScheduleBase::PrintScheduleBase;
  void runOnOperation() override;
};

/// The ops of one subgraph and the streams they use, in issue order.
struct SubgraphOps {
  SubgraphOp subgraph;
  SmallVector<Operation *> ops;
};
} // namespace

static StringRef streamOf(Operation *op) {
  if (auto record = dyn_cast<EventRecordOp>(op))
    return stringifyStreamKind(record.getStream());
  if (auto wait = dyn_cast<EventWaitOp>(op))
    return stringifyStreamKind(wait.getStream());
  if (auto stream = op->getAttrOfType<StreamKindAttr>(kStreamAttr))
    return stringifyStreamKind(stream.getValue());
  return "unassigned";
}

static SmallVector<SubgraphOps> collect(func::FuncOp function) {
  SmallVector<SubgraphOps> result;
  for (Operation &op : function.getBody().front().without_terminator()) {
    auto symbol = op.getAttrOfType<FlatSymbolRefAttr>(kSubgraphAttr);
    if (!symbol)
      continue;
    if (result.empty() ||
        result.back().subgraph.getSymName() != symbol.getValue())
      result.push_back(
          {SymbolTable::lookupNearestSymbolFrom<SubgraphOp>(&op, symbol), {}});
    result.back().ops.push_back(&op);
  }
  return result;
}

/// "rn.relu %7 -> %8", with slots when planned.
static void describeOp(Operation *op, raw_ostream &os, AsmState &state) {
  os << op->getName().getStringRef();
  if (op->getNumResults()) {
    os << " -> ";
    llvm::interleaveComma(op->getResults(), os, [&](Value v) {
      v.printAsOperand(os, state);
    });
  }
  if (auto map = op->getAttrOfType<DictionaryAttr>(kStreamMapAttr)) {
    os << "  [";
    llvm::interleaveComma(map, os, [&](NamedAttribute entry) {
      os << entry.getName().getValue() << " on "
         << stringifyStreamKind(
                cast<StreamKindAttr>(entry.getValue()).getValue());
    });
    os << "]";
  }
}

static void printText(ModuleOp module, raw_ostream &os) {
  for (auto function : module.getOps<func::FuncOp>()) {
    SmallVector<SubgraphOps> subgraphs = collect(function);
    if (subgraphs.empty())
      continue;
    AsmState state(function);
    os << "@" << function.getSymName() << "\n";
    for (SubgraphOps &group : subgraphs) {
      os << "  subgraph " << group.subgraph.getSymName() << "  primary "
         << stringifyStreamKind(group.subgraph.getPrimary())
         << (group.subgraph.getDoubleBuffered() ? "  variants A/B" : "")
         << "\n";
      SmallVector<StringRef> streams;
      for (Operation *op : group.ops)
        if (!llvm::is_contained(streams, streamOf(op)))
          streams.push_back(streamOf(op));
      for (StringRef stream : streams) {
        os << "    " << stream << ":\n";
        for (Operation *op : group.ops) {
          if (streamOf(op) != stream)
            continue;
          os << "      ";
          if (auto wait = dyn_cast<EventWaitOp>(op)) {
            os << "wait   #" << wait.getEvent() << " ("
               << stringifyEventKind(wait.getKind());
            if (wait.getDistance())
              os << ", " << wait.getDistance() << " step(s) back";
            os << ")";
          } else if (auto record = dyn_cast<EventRecordOp>(op)) {
            os << "record #" << record.getEvent() << " ("
               << stringifyEventKind(record.getKind()) << ")";
          } else {
            describeOp(op, os, state);
          }
          os << "\n";
        }
      }
    }
  }
  for (auto schedule : module.getOps<StepScheduleOp>()) {
    os << "schedule " << schedule.getSymName() << ":";
    auto name = [](StringRef subgraph, std::optional<InputBuffer> variant) {
      return (subgraph +
              (variant ? "(" + stringifyInputBuffer(*variant) + ")" : ""))
          .str();
    };
    for (Operation &op : schedule.getBody().front()) {
      if (auto launch = dyn_cast<LaunchOp>(op))
        os << " " << name(launch.getSubgraph(), launch.getVariant());
      else if (auto wait = dyn_cast<HostWaitOp>(op))
        os << " [host waits for "
           << name(wait.getSubgraph(), wait.getVariant()) << "]";
    }
    os << "\n";
  }
}

static StringRef colourOf(StringRef stream) {
  return llvm::StringSwitch<StringRef>(stream)
      .Case("trans", "grey80")
      .Case("comp1", "lightblue")
      .Case("comp2", "palegreen")
      .Case("comp3", "orange")
      .Case("update", "salmon")
      .Default("white");
}

static void printDot(ModuleOp module, raw_ostream &os) {
  os << "digraph schedule {\n  rankdir=TB;\n  node [shape=box, style=filled];\n";
  llvm::DenseMap<Operation *, unsigned> ids;
  for (auto function : module.getOps<func::FuncOp>()) {
    SmallVector<SubgraphOps> subgraphs = collect(function);
    if (subgraphs.empty())
      continue;
    llvm::DenseMap<int64_t, SmallVector<unsigned>> recordsOf;
    for (SubgraphOps &group : subgraphs) {
      os << "  subgraph cluster_" << function.getSymName() << "_"
         << group.subgraph.getSymName() << " {\n    label=\""
         << group.subgraph.getSymName() << " ("
         << stringifyStreamKind(group.subgraph.getPrimary()) << ")\";\n";
      for (Operation *op : group.ops) {
        if (isa<EventRecordOp, EventWaitOp>(op))
          continue;
        unsigned id = ids.size();
        ids[op] = id;
        os << "    n" << id << " [label=\"" << op->getName().stripDialect()
           << "\", fillcolor=" << colourOf(streamOf(op)) << "];\n";
      }
      os << "  }\n";
    }
    // Data edges, and event edges from the op before a record to the op
    // after a wait.
    Operation *lastOp = nullptr;
    SmallVector<int64_t> pendingWaits;
    for (SubgraphOps &group : subgraphs)
      for (Operation *op : group.ops) {
        if (auto record = dyn_cast<EventRecordOp>(op)) {
          if (lastOp)
            recordsOf[record.getEvent()].push_back(ids[lastOp]);
          continue;
        }
        if (auto wait = dyn_cast<EventWaitOp>(op)) {
          pendingWaits.push_back(wait.getEvent());
          continue;
        }
        for (Value operand : op->getOperands())
          if (Operation *def = operand.getDefiningOp(); def && ids.count(def))
            os << "  n" << ids[def] << " -> n" << ids[op] << ";\n";
        for (int64_t event : pendingWaits)
          for (unsigned source : recordsOf[event])
            os << "  n" << source << " -> n" << ids[op]
               << " [style=dashed, label=\"#" << event << "\"];\n";
        pendingWaits.clear();
        lastOp = op;
      }
  }
  os << "}\n";
}

void PrintSchedulePass::runOnOperation() {
  ModuleOp module = getOperation();
  if (format != "text" && format != "dot") {
    module.emitError("unknown schedule format '")
        << format << "'; expected text or dot";
    return signalPassFailure();
  }
  std::unique_ptr<llvm::ToolOutputFile> file;
  raw_ostream *os = &llvm::errs();
  if (output != "-") {
    std::string errorMessage;
    file = openOutputFile(output, &errorMessage);
    if (!file) {
      module.emitError(errorMessage);
      return signalPassFailure();
    }
    os = &file->os();
  }
  if (format == "dot")
    printDot(module, *os);
  else
    printText(module, *os);
  if (file)
    file->keep();
  markAllAnalysesPreserved();
}
