//===- ArtifactWriter.cpp - A scheduled module as a training artifact -----===//

#include "compiler/ArtifactWriter.h"

#include "dialects/rn/RNOps.h"
#include "runtime/core/artifact.h"
#include "runtime/core/init_sampler.h"
#include "runtime/core/op_table.h"
#include "runtime/core/safetensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::rn;
namespace json = llvm::json;

//===----------------------------------------------------------------------===//
// Program JSON
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//

static std::string dtypeName(Type type) {
  Type element = cast<RankedTensorType>(type).getElementType();
  if (element.isF32())
    return "f32";
  if (element.isF16())
    return "f16";
  if (element.isBF16())
    return "bf16";
  if (element.isInteger(32))
    return "i32";
  if (element.isInteger(1))
    return "i1";
  if (element.isUnsignedInteger(8))
    return "ui8";
  std::string name;
  llvm::raw_string_ostream os(name);
  os << element;
  return name;
}

static json::Array shapeOf(Type type) {
  json::Array shape;
  for (int64_t size : cast<RankedTensorType>(type).getShape())
    shape.push_back(size);
  return shape;
}

static json::Object slotJson(SlotAttr slot) {
  return json::Object{{"region", stringifyRegionKind(slot.getRegion()).str()},
                      {"offset", static_cast<int64_t>(slot.getOffset())},
                      {"bytes", static_cast<int64_t>(slot.getSize())}};
}

/// An op attribute as JSON: numbers, integer arrays, booleans (unit
/// attributes), strings for the rest (enums, symbols).
static json::Value attributeJson(Attribute attr) {
  if (auto array = dyn_cast<DenseI64ArrayAttr>(attr)) {
    json::Array values;
    for (int64_t v : array.asArrayRef())
      values.push_back(v);
    return values;
  }
  if (auto array = dyn_cast<DenseI32ArrayAttr>(attr)) {
    json::Array values;
    for (int32_t v : array.asArrayRef())
      values.push_back(v);
    return values;
  }
  if (auto boolean = dyn_cast<BoolAttr>(attr))
    return boolean.getValue();
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return integer.getValue().getSExtValue();
  if (auto real = dyn_cast<FloatAttr>(attr))
    return real.getValueAsDouble();
  if (isa<UnitAttr>(attr))
    return true;
  if (auto string = dyn_cast<StringAttr>(attr))
    return string.getValue().str();
  if (auto symbol = dyn_cast<FlatSymbolRefAttr>(attr))
    return symbol.getValue().str();
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os, /*elideType=*/true);
  return text;
}

/// `values` (an op's operands or results) by the op table's names for
/// them (`entries`, in ODS order): a single one as its tensor id, an
/// optional one only when present, a variadic one as a list. The segment
/// sizes come from `segments` (AttrSizedOperandSegments and
/// AttrSizedResultSegments ops); without, the optional and variadic entries
/// share what the single ones leave equally (ODS's rule).
static json::Object namedValues(const ::rn::op_table::Value *entries,
                                size_t count, ValueRange values,
                                DenseI32ArrayAttr segments,
                                const llvm::DenseMap<Value, int64_t> &ids) {
  SmallVector<int64_t> sizes;
  if (segments) {
    sizes.assign(segments.asArrayRef().begin(), segments.asArrayRef().end());
  } else {
    // Without segment sizes ODS allows one optional or variadic entry, or
    // several of one size (SameVariadicOperandSize, SameVariadicResultSize).
    int64_t singles = 0, others = 0;
    for (size_t i = 0; i < count; ++i)
      (entries[i].arity == ::rn::op_table::Arity::one ? singles : others) += 1;
    const int64_t each =
        others ? (int64_t(values.size()) - singles) / others : 0;
    for (size_t i = 0; i < count; ++i)
      sizes.push_back(entries[i].arity == ::rn::op_table::Arity::one ? 1
                                                                     : each);
  }
  json::Object named;
  size_t next = 0;
  for (size_t i = 0; i < count && i < sizes.size(); ++i) {
    const ::rn::op_table::Value &entry = entries[i];
    llvm::StringRef name(entry.name.data(), entry.name.size());
    if (entry.arity == ::rn::op_table::Arity::variadic) {
      json::Array list;
      for (int64_t k = 0; k < sizes[i]; ++k)
        list.push_back(ids.lookup(values[next++]));
      named[name] = std::move(list);
    } else if (sizes[i] == 1) {
      named[name] = ids.lookup(values[next++]);
    }
  }
  return named;
}

namespace {
class ProgramWriter {
public:
  explicit ProgramWriter(ModuleOp module) : module(module) {}
  LogicalResult write(json::Object &program);

private:
  LogicalResult writeFunction(func::FuncOp function, json::Object &out);
  json::Value node(Operation *op,
                   const llvm::DenseMap<Value, int64_t> &tensorIds);
  ModuleOp module;
  int64_t maxEvent = -1;
  bool sawUnknownOp = false; ///< node() emitted its error
};
} // namespace

json::Value ProgramWriter::node(Operation *op,
                                const llvm::DenseMap<Value, int64_t> &ids) {
  auto streamName = [](StreamKind kind) {
    return stringifyStreamKind(kind).str();
  };
  if (auto record = dyn_cast<EventRecordOp>(op)) {
    maxEvent = std::max<int64_t>(maxEvent, record.getEvent());
    return json::Object{
        {"kind", "event_record"},
        {"event", record.getEvent()},
        {"event_kind", stringifyEventKind(record.getKind()).str()},
        {"stream", streamName(record.getStream())}};
  }
  if (auto wait = dyn_cast<EventWaitOp>(op)) {
    maxEvent = std::max<int64_t>(maxEvent, wait.getEvent());
    return json::Object{
        {"kind", "event_wait"},
        {"event", wait.getEvent()},
        {"event_kind", stringifyEventKind(wait.getKind()).str()},
        {"stream", streamName(wait.getStream())},
        {"distance", wait.getDistance()}};
  }
  const ::rn::op_table::Op *entry =
      ::rn::op_table::findOp(op->getName().stripDialect());
  if (!entry) {
    op->emitError("op is not in the op table (op_table.h): mark it "
                  "RN_ArtifactOp in its ODS");
    sawUnknownOp = true;
    return json::Object{};
  }
  auto inherent =
      dyn_cast_or_null<DictionaryAttr>(op->getPropertiesAsAttribute());
  json::Object operands = namedValues(
      entry->operands, entry->numOperands, op->getOperands(),
      inherent ? inherent.getAs<DenseI32ArrayAttr>("operandSegmentSizes")
               : DenseI32ArrayAttr(),
      ids);
  json::Object results = namedValues(
      entry->results, entry->numResults, op->getResults(),
      inherent ? inherent.getAs<DenseI32ArrayAttr>("resultSegmentSizes")
               : DenseI32ArrayAttr(),
      ids);
  // Attributes by name; the segment sizes are in the names above, the
  // schedule's rn.* attributes elsewhere in the program.
  json::Object attributes;
  auto addAttributes = [&](ArrayRef<NamedAttribute> named) {
    for (NamedAttribute attr : named) {
      StringRef name = attr.getName().getValue();
      if (name != "operandSegmentSizes" && name != "resultSegmentSizes" &&
          !name.starts_with("rn."))
        attributes[name] = attributeJson(attr.getValue());
    }
  };
  if (inherent)
    addAttributes(inherent.getValue());
  addAttributes(op->getAttrDictionary().getValue());
  json::Object result{
      {"kind", "op"},
      {"op", op->getName().stripDialect().str()},
      {"stream", streamName(op->getAttrOfType<StreamKindAttr>(kStreamAttr)
                                .getValue())},
      {"operands", std::move(operands)},
      {"results", std::move(results)},
      {"attributes", std::move(attributes)}};
  if (auto forking = dyn_cast<ForkingOpInterface>(op)) {
    auto map = op->getAttrOfType<DictionaryAttr>(kStreamMapAttr);
    json::Array parts;
    for (const ForkPart &part : forking.getForkParts())
      parts.push_back(json::Object{
          {"role", part.role.str()},
          {"stream", streamName(
                         map.getAs<StreamKindAttr>(part.role).getValue())}});
    result["parts"] = std::move(parts);
    json::Array waits;
    if (auto pairs = op->getAttrOfType<DenseI64ArrayAttr>(kPartWaitsAttr))
      for (int64_t i = 0; i + 1 < int64_t(pairs.size()); i += 2)
        waits.push_back(json::Array{pairs[i], pairs[i + 1]});
    result["part_waits"] = std::move(waits);
  }
  return result;
}

LogicalResult ProgramWriter::writeFunction(func::FuncOp function,
                                           json::Object &out) {
  llvm::DenseMap<Value, int64_t> ids;
  json::Array tensors, inputs, state, outputs, stateResults;
  auto addTensor = [&](Value value, json::Object extra) {
    int64_t id = ids.size();
    ids[value] = id;
    json::Object tensor{{"id", id},
                        {"dtype", dtypeName(value.getType())},
                        {"shape", shapeOf(value.getType())}};
    for (auto &entry : extra)
      tensor[entry.first] = std::move(entry.second);
    tensors.push_back(std::move(tensor));
    return id;
  };
  for (BlockArgument arg : function.getArguments()) {
    unsigned index = arg.getArgNumber();
    json::Object extra;
    auto input = function.getArgAttrOfType<StringAttr>(index, kInputAttr);
    if (auto slot = function.getArgAttrOfType<SlotAttr>(index, kSlotAttr))
      extra["slot"] = slotJson(slot);
    else if (input)
      extra["host_input"] = input.getValue().str();
    else
      return function.emitError("argument #")
             << index << " has no slot: run rn-plan-memory";
    int64_t id = addTensor(arg, std::move(extra));
    if (input)
      inputs.push_back(json::Object{{"name", input.getValue().str()},
                                    {"tensor", id}});
    if (auto bound =
            function.getArgAttrOfType<FlatSymbolRefAttr>(index, kStateAttr))
      state.push_back(
          json::Object{{"name", bound.getValue().str()}, {"tensor", id}});
  }
  for (Operation &op : function.getBody().front().without_terminator()) {
    auto slots = op.getAttrOfType<ArrayAttr>(kSlotsAttr);
    if (op.getNumResults() && !slots)
      return op.emitError("op has no slots: run rn-plan-memory");
    for (OpResult result : op.getResults())
      addTensor(result,
                json::Object{{"slot", slotJson(cast<SlotAttr>(
                                          slots[result.getResultNumber()]))}});
  }
  auto returnOp = cast<func::ReturnOp>(function.getBody().front().back());
  for (auto [index, value] : llvm::enumerate(returnOp.getOperands())) {
    if (auto name = function.getResultAttrOfType<StringAttr>(index, kOutputAttr))
      outputs.push_back(json::Object{{"name", name.getValue().str()},
                                     {"tensor", ids.lookup(value)}});
    if (auto bound =
            function.getResultAttrOfType<FlatSymbolRefAttr>(index, kStateAttr))
      stateResults.push_back(json::Object{{"name", bound.getValue().str()},
                                          {"tensor", ids.lookup(value)}});
  }

  json::Array subgraphs;
  StringRef current;
  for (Operation &op : function.getBody().front().without_terminator()) {
    auto symbol = op.getAttrOfType<FlatSymbolRefAttr>(kSubgraphAttr);
    if (!symbol)
      return op.emitError("op belongs to no subgraph: run rn-partition");
    if (symbol.getValue() != current) {
      current = symbol.getValue();
      auto declaration = module.lookupSymbol<SubgraphOp>(current);
      subgraphs.push_back(json::Object{
          {"name", current.str()},
          {"primary", stringifyStreamKind(declaration.getPrimary()).str()},
          {"double_buffered", declaration.getDoubleBuffered()},
          {"nodes", json::Array{}}});
    }
    if (!isa<EventRecordOp, EventWaitOp>(op) &&
        !op.getAttrOfType<StreamKindAttr>(kStreamAttr))
      return op.emitError("op has no stream: run rn-assign-streams");
    subgraphs.back().getAsObject()->getArray("nodes")->push_back(
        node(&op, ids));
    if (sawUnknownOp)
      return failure();
  }

  out = json::Object{{"name", function.getSymName().str()},
                     {"tensors", std::move(tensors)},
                     {"inputs", std::move(inputs)},
                     {"state", std::move(state)},
                     {"outputs", std::move(outputs)},
                     {"state_results", std::move(stateResults)},
                     {"subgraphs", std::move(subgraphs)}};
  return success();
}

LogicalResult ProgramWriter::write(json::Object &program) {
  auto plans = module.getOps<MemoryPlanOp>();
  if (plans.empty())
    return module.emitError("the module has no memory plan: run rn-plan-memory");
  MemoryPlanOp plan = *plans.begin();
  json::Array regions;
  for (Attribute attr : plan.getRegions()) {
    auto extent = cast<ExtentAttr>(attr);
    regions.push_back(
        json::Object{{"kind", stringifyRegionKind(extent.getRegion()).str()},
                     {"offset", static_cast<int64_t>(extent.getOffset())},
                     {"bytes", static_cast<int64_t>(extent.getSize())}});
  }

  // State: parameters, buffers and training state, with the slot their
  // arguments carry in @train_step.
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  llvm::StringMap<SlotAttr> stateSlots;
  for (BlockArgument arg : train.getArguments())
    if (auto bound = train.getArgAttrOfType<FlatSymbolRefAttr>(
            arg.getArgNumber(), kStateAttr))
      stateSlots[bound.getValue()] =
          train.getArgAttrOfType<SlotAttr>(arg.getArgNumber(), kSlotAttr);
  json::Array state;
  auto initJson = [](InitAttr init) {
    json::Object object{{"kind", stringifyInitKind(init.getKind()).str()},
                        {"scale", init.getScale().convertToDouble()}};
    if (init.getKind() == InitKind::values)
      object["values"] = json::Array(init.getElementValues());
    return object;
  };
  for (Operation &op : *module.getBody()) {
    json::Object entry;
    if (auto parameter = dyn_cast<ParameterOp>(op)) {
      entry = json::Object{
          {"name", parameter.getSymName().str()},
          {"role", parameter.isTrainable() ? "parameter" : "buffer"},
          {"dtype", dtypeName(parameter.getType())},
          {"shape", shapeOf(parameter.getType())},
          {"init", initJson(parameter.getInit())}};
    } else if (auto declared = dyn_cast<StateOp>(op)) {
      entry = json::Object{
          {"name", declared.getSymName().str()},
          {"role", stringifyStateRole(declared.getRole()).str()},
          {"dtype", dtypeName(declared.getType())},
          {"shape", shapeOf(declared.getType())},
          {"init", initJson(declared.getInit())}};
      if (declared.getOf())
        entry["of"] = declared.getOf()->str();
    } else {
      continue;
    }
    StringRef name = *entry.getString("name");
    SlotAttr slot = stateSlots.lookup(name);
    if (!slot)
      return op.emitError("state @") << name << " has no slot in @train_step";
    entry["slot"] = slotJson(slot);
    state.push_back(std::move(entry));
  }

  json::Array functions;
  for (StringRef name : {"train_step", "eval_step"}) {
    json::Object function;
    if (failed(writeFunction(module.lookupSymbol<func::FuncOp>(name),
                             function)))
      return failure();
    functions.push_back(std::move(function));
  }

  json::Array schedules;
  for (auto schedule : module.getOps<StepScheduleOp>()) {
    json::Array steps;
    std::string function;
    for (Operation &op : schedule.getBody().front()) {
      json::Object step;
      StringRef subgraph;
      std::optional<InputBuffer> variant;
      if (auto launch = dyn_cast<LaunchOp>(op)) {
        subgraph = launch.getSubgraph();
        variant = launch.getVariant();
        step["launch"] = subgraph.str();
      } else if (auto wait = dyn_cast<HostWaitOp>(op)) {
        subgraph = wait.getSubgraph();
        variant = wait.getVariant();
        step["host_wait"] = subgraph.str();
      }
      if (variant)
        step["variant"] = stringifyInputBuffer(*variant).str();
      function = module.lookupSymbol<SubgraphOp>(subgraph).getFunction().str();
      steps.push_back(std::move(step));
    }
    schedules.push_back(json::Object{{"name", schedule.getSymName().str()},
                                     {"function", function},
                                     {"steps", std::move(steps)}});
  }

  json::Object training;
  if (auto options = module->getAttrOfType<DictionaryAttr>(kTrainingAttr))
    for (NamedAttribute attr : options)
      training[attr.getName().getValue()] = attributeJson(attr.getValue());
  auto model = module->getAttrOfType<StringAttr>(kModelNameAttr);
  program = json::Object{
      {"format", "rn-program"},
      {"version", int64_t(::rn::kArtifactVersion)},
      {"model", model ? model.getValue().str() : std::string("model")},
      {"training", std::move(training)},
      {"arena", json::Object{{"bytes", plan.getArenaBytes()},
                             {"alignment", plan.getAlignment()},
                             {"regions", std::move(regions)}}},
      {"state", std::move(state)},
      {"functions", std::move(functions)},
      {"schedules", std::move(schedules)},
      {"num_events", maxEvent + 1}};
  return success();
}

//===----------------------------------------------------------------------===//
// Initial parameters (safetensors)
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Initial parameters and the file
//===----------------------------------------------------------------------===//

namespace {
struct InitialTensor {
  std::string name;
  ::rn::DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
} // namespace

/// Samples a parameter's initial value with the runtime's sampler. Each
/// parameter has its own stream of random numbers (seed and name), so adding
/// a layer changes no other.
static FailureOr<InitialTensor> initialValue(ParameterOp parameter,
                                             uint64_t seed) {
  RankedTensorType type = parameter.getTensorType();
  InitAttr init = parameter.getInit();
  ::rn::DType dtype = ::rn::DType::f32;
  if (type.getElementType().isF16())
    dtype = ::rn::DType::f16;
  else if (type.getElementType().isBF16())
    dtype = ::rn::DType::bf16;
  ::rn::Init spec{stringifyInitKind(init.getKind()).str(),
                  init.getScale().convertToDouble(),
                  std::vector<double>(init.getElementValues().begin(),
                                      init.getElementValues().end())};
  auto bytes = ::rn::sampleInitialBytes(parameter.getSymName(), spec, dtype,
                                        type.getNumElements(), seed);
  if (!bytes)
    return parameter.emitError("cannot sample the initial value: ")
           << bytes.error().message();
  return InitialTensor{parameter.getSymName().str(), dtype,
                       std::vector<int64_t>(type.getShape()),
                       std::vector<uint8_t>(bytes->begin(), bytes->end())};
}

FailureOr<ArtifactSummary> mlir::rn::writeArtifact(ModuleOp module,
                                                   StringRef path,
                                                   const ArtifactOptions &options,
                                                   std::string &error) {
  json::Object program;
  ProgramWriter writer(module);
  if (failed(writer.write(program)))
    return failure();
  if (!options.weights) // the runtime samples the parameters (docs/artifact.md)
    program["init"] = json::Object{{"sampler", std::string(::rn::kInitSampler)},
                                   {"seed", options.seed}};

  std::vector<InitialTensor> initial;
  if (options.weights)
    for (auto parameter : module.getOps<ParameterOp>()) {
      FailureOr<InitialTensor> tensor = initialValue(parameter, options.seed);
      if (failed(tensor))
        return failure();
      initial.push_back(std::move(*tensor));
    }
  std::vector<::rn::TensorData> tensors;
  ArtifactSummary summary;
  for (const InitialTensor &tensor : initial) {
    tensors.push_back(::rn::TensorData{tensor.name, tensor.dtype, tensor.shape,
                                       tensor.bytes.data(),
                                       tensor.bytes.size()});
    summary.parameterBytes += tensor.bytes.size();
  }

  // The runtime's safetensors writer, so that the compiler and the runtime
  // agree on the container byte for byte.
  std::string programText;
  llvm::raw_string_ostream(programText) << json::Value(std::move(program));
  summary.programBytes = programText.size();
  ::rn::Status written = ::rn::writeSafetensors(
      path.str(), tensors,
      {{"rn.format", "rn-program"}, {"rn.version", std::to_string(::rn::kArtifactVersion)},
       {"rn.program", programText}});
  if (!written.ok()) {
    error = written.error().message();
    return failure();
  }
  return summary;
}
