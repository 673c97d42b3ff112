//===- artifact.cpp - The compiled program and its loader -----------------===//
//
// The loader walks the program JSON once, building the structs and checking
// each field where it is read, then checks what spans several places (state
// bindings, events, schedules, the inputs_b mirror, the safetensors). Inside
// this file a failure throws LoadError carrying the message prefixed with
// the current place (Context's frames); the public functions catch it, and
// anything nlohmann or the allocator throws, and return an Error.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/artifact.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <new>
#include <set>
#include <unordered_map>

namespace rn {

using json = nlohmann::json;

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

std::string artifactVersionMismatch(uint64_t version) {
  const std::string theirs = "format " + std::to_string(version);
  const std::string ours = "this runtime reads format " + std::to_string(kArtifactVersion);
  if (version < uint64_t(kArtifactVersion))
    return "compiled by an older rn-compile, " + theirs + "; " + ours +
           ": compile the model again";
  return "compiled by a newer rn-compile, " + theirs + "; " + ours +
         ": use the runtime of that rn-compile";
}

std::string_view streamName(Stream stream) {
  switch (stream) {
  case Stream::trans:
    return "trans";
  case Stream::comp1:
    return "comp1";
  case Stream::comp2:
    return "comp2";
  case Stream::comp3:
    return "comp3";
  case Stream::update:
    return "update";
  }
  return "?";
}

std::optional<Stream> parseStream(std::string_view name) {
  for (Stream stream : {Stream::trans, Stream::comp1, Stream::comp2,
                        Stream::comp3, Stream::update})
    if (streamName(stream) == name)
      return stream;
  return std::nullopt;
}

std::string_view eventKindName(EventKind kind) {
  switch (kind) {
  case EventKind::internal:
    return "internal";
  case EventKind::fork:
    return "fork";
  case EventKind::join:
    return "join";
  case EventKind::external:
    return "external";
  }
  return "?";
}

static std::optional<EventKind> parseEventKind(std::string_view name) {
  for (EventKind kind : {EventKind::internal, EventKind::fork, EventKind::join,
                         EventKind::external})
    if (eventKindName(kind) == name)
      return kind;
  return std::nullopt;
}

const Region *Arena::find(std::string_view kind) const {
  for (const Region &region : regions)
    if (region.kind == kind)
      return &region;
  return nullptr;
}

/// The first of `items` called `name`, or null.
template <typename T>
static const T *findNamed(const std::vector<T> &items, std::string_view name) {
  for (const T &item : items)
    if (item.name == name)
      return &item;
  return nullptr;
}

const Subgraph *Function::findSubgraph(std::string_view name) const {
  return findNamed(subgraphs, name);
}

const Function *Program::findFunction(std::string_view name) const {
  return findNamed(functions, name);
}

const StateEntry *Program::findState(std::string_view name) const {
  return findNamed(state, name);
}

const Schedule *Program::findSchedule(std::string_view name) const {
  return findNamed(schedules, name);
}

namespace {

// The region kinds of rn-plan-memory (RegionKind in RNScheduleOps.td).
constexpr std::string_view kRegionKinds[] = {
    "weights",         "weights_low_precision", "gradients",
    "optimizer_state", "bn_statistics",         "ema",
    "inputs_a",        "inputs_b",              "scalars",
    "activations",     "workspace_trans",       "workspace_comp1",
    "workspace_comp2", "workspace_comp3",       "workspace_update"};

// State roles: the model's parameters and buffers, then StateRole.
constexpr std::string_view kStateRoles[] = {
    "parameter",   "buffer",  "gradient",  "master_gradient",
    "momentum",    "adam_m",  "adam_v",    "low_precision_weight",
    "ema",         "loss_scale", "loss_scale_good_steps"};

constexpr std::string_view kInitKinds[] = {"zeros",    "ones",     "uniform", "normal",
                                           "constant", "derived",  "values"};

template <size_t N>
bool contains(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

/// Roles whose entry names its parameter with "of" (as rn.state's verifier).
bool isPerParameterRole(std::string_view role) {
  return role != "parameter" && role != "buffer" && role != "loss_scale" &&
         role != "loss_scale_good_steps";
}

/// Roles whose initial value is computed from their parameter.
bool isDerivedRole(std::string_view role) {
  return role == "low_precision_weight" || role == "ema";
}

/// Roles whose initial value the artifact's tensors must hold.
bool needsInitialValue(std::string_view role) {
  return role == "parameter" || role == "buffer";
}

std::string typeString(DType dtype, const std::vector<int64_t> &shape) {
  return std::string(dtypeName(dtype)) + " " + shapeString(shape);
}

std::string slotString(const Slot &slot) {
  return slot.region + "+" + std::to_string(slot.offset) + " (" +
         std::to_string(slot.bytes) + " bytes)";
}

//===----------------------------------------------------------------------===//
// Errors with a place
//===----------------------------------------------------------------------===//

/// Never leaves this file.
struct LoadError {
  std::string message;
};

/// The place being read, as frames ("function train_step", "node 17
/// (conv2d)") joined into the prefix of every failure.
class Context {
public:
  class Scope {
  public:
    Scope(Context &context, std::string frame) : context_(context) {
      context_.frames_.push_back(std::move(frame));
    }
    ~Scope() { context_.frames_.pop_back(); }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    Context &context_;
  };

  [[noreturn]] void fail(const std::string &message) const {
    std::string text;
    for (const std::string &frame : frames_)
      text += (text.empty() ? "" : ", ") + frame;
    throw LoadError{text.empty() ? message : text + ": " + message};
  }

private:
  std::vector<std::string> frames_;
};

//===----------------------------------------------------------------------===//
// JSON accessors
//===----------------------------------------------------------------------===//

/// The JSON type of `value`, with the value when it is short.
std::string describe(const json &value) {
  if (value.is_number() || value.is_boolean())
    return std::string(value.type_name()) + " " + value.dump();
  if (value.is_string()) {
    std::string text = value.dump(-1, ' ', /*ensure_ascii=*/true);
    if (text.size() > 40)
      text = text.substr(0, 37) + "...";
    return "string " + text;
  }
  return value.type_name();
}

std::string inQuotes(std::string_view key) {
  return "\"" + std::string(key) + "\"";
}

void requireObject(const Context &cx, const json &value) {
  if (!value.is_object())
    cx.fail("must be an object, got " + describe(value));
}

const json *optionalMember(const json &object, const char *key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const json &member(const Context &cx, const json &object, const char *key) {
  const json *value = optionalMember(object, key);
  if (!value)
    cx.fail("missing " + inQuotes(key));
  return *value;
}

const json &arrayMember(const Context &cx, const json &object, const char *key) {
  const json &value = member(cx, object, key);
  if (!value.is_array())
    cx.fail(inQuotes(key) + " must be an array, got " + describe(value));
  return value;
}

/// An optional array: empty when absent.
const json &optionalArray(const Context &cx, const json &object, const char *key) {
  static const json empty = json::array();
  const json *value = optionalMember(object, key);
  if (!value)
    return empty;
  if (!value->is_array())
    cx.fail(inQuotes(key) + " must be an array, got " + describe(*value));
  return *value;
}

std::string stringMember(const Context &cx, const json &object, const char *key) {
  const json &value = member(cx, object, key);
  if (!value.is_string())
    cx.fail(inQuotes(key) + " must be a string, got " + describe(value));
  return value.get<std::string>();
}

std::string nameMember(const Context &cx, const json &object, const char *key) {
  std::string name = stringMember(cx, object, key);
  if (name.empty())
    cx.fail(inQuotes(key) + " must not be empty");
  return name;
}

uint64_t unsignedValue(const Context &cx, const json &value, std::string_view what) {
  std::optional<uint64_t> result = jsonUnsigned(value);
  if (!result)
    cx.fail(std::string(what) + " must be a non-negative integer, got " +
            describe(value));
  return *result;
}

uint64_t unsignedMember(const Context &cx, const json &object, const char *key) {
  return unsignedValue(cx, member(cx, object, key), inQuotes(key));
}

bool boolMember(const Context &cx, const json &object, const char *key,
                bool otherwise) {
  const json *value = optionalMember(object, key);
  if (!value)
    return otherwise;
  if (!value->is_boolean())
    cx.fail(inQuotes(key) + " must be a boolean, got " + describe(*value));
  return value->get<bool>();
}

DType dtypeMember(const Context &cx, const json &object) {
  std::string name = stringMember(cx, object, "dtype");
  std::optional<DType> dtype = parseDType(name);
  if (!dtype)
    cx.fail("unknown dtype " + inQuotes(name) + " (f32, f16, bf16, i32, i1 or ui8)");
  return *dtype;
}

std::vector<int64_t> shapeMember(const Context &cx, const json &object) {
  std::vector<int64_t> shape;
  for (const json &dim : arrayMember(cx, object, "shape")) {
    std::optional<uint64_t> size = jsonUnsigned(dim);
    if (!size || *size > uint64_t(std::numeric_limits<int64_t>::max()))
      cx.fail("shape dimensions must be non-negative integers below 2^63, got " +
              describe(dim));
    shape.push_back(static_cast<int64_t>(*size));
  }
  return shape;
}

Stream streamMember(const Context &cx, const json &object, const char *key) {
  std::string name = stringMember(cx, object, key);
  std::optional<Stream> stream = parseStream(name);
  if (!stream)
    cx.fail("unknown stream " + inQuotes(name) +
            " (trans, comp1, comp2, comp3 or update)");
  return *stream;
}

uint64_t checkedAdd(const Context &cx, uint64_t a, uint64_t b, std::string_view what) {
  uint64_t sum;
  if (__builtin_add_overflow(a, b, &sum))
    cx.fail(std::string(what) + " overflows 64 bits (" + std::to_string(a) +
            " + " + std::to_string(b) + ")");
  return sum;
}

/// Bytes of a dtype/shape, failing on overflow.
uint64_t tensorBytes(const Context &cx, DType dtype, const std::vector<int64_t> &shape) {
  std::optional<uint64_t> bytes = byteCount(dtype, shape);
  if (!bytes)
    cx.fail("shape " + shapeString(shape) + " is too large");
  return *bytes;
}

/// "function train_step" when the entry has a name, else "functions[3]"
/// (the entry's own checks then report what is wrong with it).
std::string frameFor(const json &entry, const char *what, const char *array,
                     size_t index) {
  if (entry.is_object())
    if (const json *name = optionalMember(entry, "name");
        name && name->is_string() && !name->get_ref<const std::string &>().empty())
      return std::string(what) + " " + name->get<std::string>();
  return std::string(array) + "[" + std::to_string(index) + "]";
}

//===----------------------------------------------------------------------===//
// The parser
//===----------------------------------------------------------------------===//

class ProgramParser {
public:
  Program parse(const json &root, const Safetensors *tensors);

private:
  void parseHeader(const json &root);
  void parseArena(const json &arena);
  Slot parseSlot(const json &object, DType dtype, const std::vector<int64_t> &shape);
  void parseState(const json &state);
  Function parseFunction(const json &object);
  std::vector<Binding> parseBindings(const json &object, const char *key,
                                     const Function &function);
  Subgraph parseSubgraph(const json &object, const Function &function);
  Node parseNode(const json &object, const Function &function);
  void parseOpNode(const json &object, const Function &function, Node &node);
  void checkDefinitions(const Function &function);
  void checkStateBindings(const Function &function);
  void checkEvents(const Function &function);
  Schedule parseSchedule(const json &object);
  void checkInputMirror();
  void checkTensors(const Safetensors &tensors);

  Context cx_;
  Program program_;
  // Lookups by name, so that hostile sizes stay linear.
  std::unordered_map<std::string, size_t> stateIndex_;
  std::unordered_map<std::string_view, const Function *> functionIndex_;
  std::unordered_map<const Function *,
                     std::unordered_map<std::string_view, const Subgraph *>>
      subgraphIndex_;

  const StateEntry *findState(const std::string &name) const {
    auto it = stateIndex_.find(name);
    return it == stateIndex_.end() ? nullptr : &program_.state[it->second];
  }
};

Program ProgramParser::parse(const json &root, const Safetensors *tensors) {
  if (!root.is_object())
    cx_.fail("the program must be a JSON object, got " + describe(root));
  // Format and version first: a newer program may differ anywhere else.
  parseHeader(root);

  {
    Context::Scope scope(cx_, "arena");
    const json &arena = member(cx_, root, "arena");
    requireObject(cx_, arena);
    parseArena(arena);
  }

  uint64_t numEvents = unsignedMember(cx_, root, "num_events");
  if (numEvents > kMaxEvents)
    cx_.fail("num_events " + std::to_string(numEvents) + " exceeds the limit of " +
             std::to_string(kMaxEvents));
  program_.numEvents = static_cast<uint32_t>(numEvents);

  parseState(arrayMember(cx_, root, "state"));

  std::set<std::string> functionNames;
  std::set<std::string> subgraphNames;
  const json &functions = arrayMember(cx_, root, "functions");
  for (size_t i = 0; i < functions.size(); ++i) {
    Context::Scope scope(cx_, frameFor(functions[i], "function", "functions", i));
    requireObject(cx_, functions[i]);
    program_.functions.push_back(parseFunction(functions[i]));
    const Function &function = program_.functions.back();
    if (!functionNames.insert(function.name).second)
      cx_.fail("defined twice");
    // Subgraphs are module-level symbols: one name, one subgraph.
    for (const Subgraph &subgraph : function.subgraphs)
      if (!subgraphNames.insert(subgraph.name).second)
        cx_.fail("subgraph " + subgraph.name + " is also defined by another function");
  }

  // Functions are complete now; index them for the schedules.
  for (const Function &function : program_.functions) {
    functionIndex_.emplace(function.name, &function);
    for (const Subgraph &subgraph : function.subgraphs)
      subgraphIndex_[&function].emplace(subgraph.name, &subgraph);
  }
  std::set<std::string> scheduleNames;
  const json &schedules = optionalArray(cx_, root, "schedules");
  for (size_t i = 0; i < schedules.size(); ++i) {
    Context::Scope scope(cx_, frameFor(schedules[i], "schedule", "schedules", i));
    requireObject(cx_, schedules[i]);
    program_.schedules.push_back(parseSchedule(schedules[i]));
    if (!scheduleNames.insert(program_.schedules.back().name).second)
      cx_.fail("defined twice");
  }

  checkInputMirror();
  if (tensors)
    checkTensors(*tensors);
  return std::move(program_);
}

void ProgramParser::parseHeader(const json &root) {
  std::string format = stringMember(cx_, root, "format");
  if (format != "rn-program")
    cx_.fail("format " + inQuotes(format) + " is not an rn program (expected \"rn-program\")");
  const json &version = member(cx_, root, "version");
  std::optional<uint64_t> number = jsonUnsigned(version);
  if (!number)
    cx_.fail("\"version\" must be a positive integer, got " + describe(version));
  if (*number != uint64_t(kArtifactVersion))
    cx_.fail(artifactVersionMismatch(*number));
  program_.version = kArtifactVersion;
  if (const json *model = optionalMember(root, "model")) {
    if (!model->is_string())
      cx_.fail("\"model\" must be a string, got " + describe(*model));
    program_.model = model->get<std::string>();
  }
  if (const json *training = optionalMember(root, "training")) {
    if (!training->is_object())
      cx_.fail("\"training\" must be an object, got " + describe(*training));
    program_.training = *training;
  }
  // Weight-free programs say how to sample the parameters instead.
  if (const json *init = optionalMember(root, "init")) {
    Context::Scope scope(cx_, "init");
    requireObject(cx_, *init);
    InitSampling sampling;
    sampling.sampler = stringMember(cx_, *init, "sampler");
    if (sampling.sampler != kInitSampler)
      cx_.fail("unknown sampler " + inQuotes(sampling.sampler) + " (this runtime has \"" +
               std::string(kInitSampler) + "\")");
    sampling.seed = unsignedMember(cx_, *init, "seed");
    program_.sampling = std::move(sampling);
  }
}

void ProgramParser::parseArena(const json &object) {
  Arena &arena = program_.arena;
  arena.bytes = unsignedMember(cx_, object, "bytes");
  arena.alignment = unsignedMember(cx_, object, "alignment");
  if (arena.alignment == 0 || (arena.alignment & (arena.alignment - 1)) != 0)
    cx_.fail("alignment must be a power of two, got " + std::to_string(arena.alignment));

  const json &regions = arrayMember(cx_, object, "regions");
  for (size_t i = 0; i < regions.size(); ++i) {
    Context::Scope scope(cx_, "region " + std::to_string(i));
    requireObject(cx_, regions[i]);
    Region region;
    region.kind = stringMember(cx_, regions[i], "kind");
    if (!contains(kRegionKinds, region.kind))
      cx_.fail("unknown region kind " + inQuotes(region.kind));
    if (arena.find(region.kind))
      cx_.fail("region " + region.kind + " appears twice");
    region.offset = unsignedMember(cx_, regions[i], "offset");
    region.bytes = unsignedMember(cx_, regions[i], "bytes");
    if (region.offset % arena.alignment != 0)
      cx_.fail("region " + region.kind + " at offset " + std::to_string(region.offset) +
               " is not " + std::to_string(arena.alignment) + "-byte aligned");
    uint64_t end = checkedAdd(cx_, region.offset, region.bytes, "region end");
    if (end > arena.bytes)
      cx_.fail("region " + region.kind + " [" + std::to_string(region.offset) +
               ", " + std::to_string(end) + ") ends past the arena of " +
               std::to_string(arena.bytes) + " bytes");
    arena.regions.push_back(std::move(region));
  }

  // Disjoint: sorted by offset, each ends before the next begins (the ends
  // cannot overflow, each was checked against the arena).
  std::vector<const Region *> sorted;
  for (const Region &region : arena.regions)
    if (region.bytes != 0)
      sorted.push_back(&region);
  std::sort(sorted.begin(), sorted.end(), [](const Region *a, const Region *b) {
    return a->offset < b->offset;
  });
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i - 1]->offset + sorted[i - 1]->bytes > sorted[i]->offset)
      cx_.fail("regions " + sorted[i - 1]->kind + " [" +
               std::to_string(sorted[i - 1]->offset) + ", " +
               std::to_string(sorted[i - 1]->offset + sorted[i - 1]->bytes) +
               ") and " + sorted[i]->kind + " [" + std::to_string(sorted[i]->offset) +
               ", " + std::to_string(sorted[i]->offset + sorted[i]->bytes) +
               ") overlap");
}

/// A slot object, checked to lie in its region and hold a tensor of `dtype`
/// and `shape`.
Slot ProgramParser::parseSlot(const json &object, DType dtype,
                              const std::vector<int64_t> &shape) {
  uint64_t needed = tensorBytes(cx_, dtype, shape);
  if (!object.is_object())
    cx_.fail("\"slot\" must be an object, got " + describe(object));
  Slot slot;
  slot.region = stringMember(cx_, object, "region");
  slot.offset = unsignedMember(cx_, object, "offset");
  slot.bytes = unsignedMember(cx_, object, "bytes");
  const Region *region = program_.arena.find(slot.region);
  if (!region)
    cx_.fail("slot names region " + inQuotes(slot.region) +
             ", which the arena does not have");
  uint64_t end = checkedAdd(cx_, slot.offset, slot.bytes, "slot end");
  if (end > region->bytes)
    cx_.fail("slot [" + std::to_string(slot.offset) + ", " + std::to_string(end) +
             ") runs past region " + slot.region + " of " +
             std::to_string(region->bytes) + " bytes");
  if (slot.bytes < needed)
    cx_.fail("slot of " + std::to_string(slot.bytes) + " bytes cannot hold " +
             typeString(dtype, shape) + " (" + std::to_string(needed) + " bytes)");
  return slot;
}

void ProgramParser::parseState(const json &state) {
  std::unordered_map<std::string, size_t> &byName = stateIndex_;
  for (size_t i = 0; i < state.size(); ++i) {
    const json &object = state[i];
    Context::Scope scope(cx_, frameFor(object, "state", "state", i));
    requireObject(cx_, object);
    StateEntry entry;
    entry.name = nameMember(cx_, object, "name");
    if (!byName.emplace(entry.name, i).second)
      cx_.fail("declared twice");
    entry.role = stringMember(cx_, object, "role");
    if (!contains(kStateRoles, entry.role))
      cx_.fail("unknown role " + inQuotes(entry.role));
    entry.dtype = dtypeMember(cx_, object);
    if (entry.dtype == DType::i1 || entry.dtype == DType::u8)
      cx_.fail("state cannot be " + std::string(dtypeName(entry.dtype)));
    entry.shape = shapeMember(cx_, object);
    tensorBytes(cx_, entry.dtype, entry.shape);
    if (const json *slot = optionalMember(object, "slot"))
      entry.slot = parseSlot(*slot, entry.dtype, entry.shape);

    if (const json *of = optionalMember(object, "of")) {
      if (!of->is_string())
        cx_.fail("\"of\" must be a string, got " + describe(*of));
      entry.of = of->get<std::string>();
    }
    if (isPerParameterRole(entry.role) == entry.of.empty())
      cx_.fail("'" + entry.role + "' state " +
               (entry.of.empty() ? "must name its parameter with \"of\""
                                 : "must not name a parameter with \"of\""));

    const json &init = member(cx_, object, "init");
    requireObject(cx_, init);
    entry.init.kind = stringMember(cx_, init, "kind");
    if (!contains(kInitKinds, entry.init.kind))
      cx_.fail("unknown init kind " + inQuotes(entry.init.kind));
    if (const json *scale = optionalMember(init, "scale")) {
      if (!scale->is_number())
        cx_.fail("init \"scale\" must be a number, got " + describe(*scale));
      entry.init.scale = scale->get<double>();
    }
    if (const json *values = optionalMember(init, "values")) {
      if (!values->is_array())
        cx_.fail("init \"values\" must be an array of numbers, got " + describe(*values));
      for (const json &value : *values) {
        if (!value.is_number() || !std::isfinite(value.get<double>()))
          cx_.fail("init \"values\" must hold finite numbers, got " + describe(value));
        entry.init.values.push_back(value.get<double>());
      }
    }
    if ((entry.init.kind == "values") != !entry.init.values.empty())
      cx_.fail(entry.init.kind == "values"
                   ? "init \"values\" needs a non-empty \"values\" array"
                   : "only init \"values\" has a \"values\" array");
    if (entry.init.kind == "values" &&
        int64_t(entry.init.values.size()) != numel(entry.shape))
      cx_.fail("init \"values\" gives " + std::to_string(entry.init.values.size()) +
               " values for shape " + shapeString(entry.shape) + " (" +
               std::to_string(numel(entry.shape)) + " elements)");
    if ((entry.init.kind == "derived") != isDerivedRole(entry.role))
      cx_.fail("'" + entry.role + "' state " +
               (isDerivedRole(entry.role) ? "must" : "cannot") +
               " be initialized as \"derived\"");
    if (program_.sampling && needsInitialValue(entry.role) &&
        !isSampledInit(entry.init.kind))
      cx_.fail("init " + inQuotes(entry.init.kind) + " of this " + entry.role +
               " cannot be sampled, and the program carries no weights");
    program_.state.push_back(std::move(entry));
  }

  // "of" names a trainable parameter of the same shape.
  for (const StateEntry &entry : program_.state) {
    if (entry.of.empty())
      continue;
    Context::Scope scope(cx_, "state " + entry.name);
    auto it = byName.find(entry.of);
    if (it == byName.end() || program_.state[it->second].role != "parameter")
      cx_.fail("\"of\" names " + inQuotes(entry.of) + ", which is not a parameter");
    if (program_.state[it->second].shape != entry.shape)
      cx_.fail("shape " + shapeString(entry.shape) + " differs from parameter " +
               entry.of + "'s " + shapeString(program_.state[it->second].shape));
  }
}

Function ProgramParser::parseFunction(const json &object) {
  Function function;
  function.name = nameMember(cx_, object, "name");

  const json &tensors = arrayMember(cx_, object, "tensors");
  if (tensors.size() > std::numeric_limits<uint32_t>::max())
    cx_.fail("too many tensors");
  function.tensors.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    Context::Scope tensorScope(cx_, "tensor " + std::to_string(i));
    const json &entry = tensors[i];
    requireObject(cx_, entry);
    TensorInfo tensor;
    uint64_t id = unsignedMember(cx_, entry, "id");
    if (id != i)
      cx_.fail("tensor ids must be dense and in order: entry " + std::to_string(i) +
               " has id " + std::to_string(id));
    tensor.id = static_cast<uint32_t>(i);
    tensor.dtype = dtypeMember(cx_, entry);
    tensor.shape = shapeMember(cx_, entry);
    tensor.bytes = tensorBytes(cx_, tensor.dtype, tensor.shape);
    const json *slot = optionalMember(entry, "slot");
    const json *host = optionalMember(entry, "host_input");
    if (!slot == !host)
      cx_.fail("a tensor has either a \"slot\" (device) or a \"host_input\" "
               "(host staging buffer), and this one has " +
               std::string(slot ? "both" : "neither"));
    if (slot) {
      tensor.slot = parseSlot(*slot, tensor.dtype, tensor.shape);
    } else {
      if (!host->is_string() || host->get_ref<const std::string &>().empty())
        cx_.fail("\"host_input\" must be an input name, got " + describe(*host));
      tensor.hostInput = host->get<std::string>();
    }
    function.tensors.push_back(std::move(tensor));
  }

  function.inputs = parseBindings(object, "inputs", function);
  function.state = parseBindings(object, "state", function);
  function.outputs = parseBindings(object, "outputs", function);
  function.stateResults = parseBindings(object, "state_results", function);

  const json &subgraphs = arrayMember(cx_, object, "subgraphs");
  std::set<std::string> subgraphNames;
  for (size_t i = 0; i < subgraphs.size(); ++i) {
    Context::Scope subgraphScope(cx_, frameFor(subgraphs[i], "subgraph", "subgraphs", i));
    requireObject(cx_, subgraphs[i]);
    function.subgraphs.push_back(parseSubgraph(subgraphs[i], function));
    if (!subgraphNames.insert(function.subgraphs.back().name).second)
      cx_.fail("defined twice");
  }

  checkDefinitions(function);
  checkStateBindings(function);
  checkEvents(function);
  return function;
}

std::vector<Binding> ProgramParser::parseBindings(const json &object, const char *key,
                                                  const Function &function) {
  std::vector<Binding> bindings;
  std::set<std::string> names;
  const json &array = optionalArray(cx_, object, key);
  for (size_t i = 0; i < array.size(); ++i) {
    Context::Scope scope(cx_, std::string(key) + "[" + std::to_string(i) + "]");
    requireObject(cx_, array[i]);
    Binding binding;
    binding.name = nameMember(cx_, array[i], "name");
    if (!names.insert(binding.name).second)
      cx_.fail(inQuotes(binding.name) + " is bound twice");
    uint64_t tensor = unsignedMember(cx_, array[i], "tensor");
    if (tensor >= function.tensors.size())
      cx_.fail(binding.name + " refers to tensor " + std::to_string(tensor) +
               ", but the function has " + std::to_string(function.tensors.size()) +
               " tensors");
    binding.tensor = static_cast<uint32_t>(tensor);
    bindings.push_back(std::move(binding));
  }
  return bindings;
}

Subgraph ProgramParser::parseSubgraph(const json &object, const Function &function) {
  Subgraph subgraph;
  subgraph.name = nameMember(cx_, object, "name");
  subgraph.primary = streamMember(cx_, object, "primary");
  subgraph.doubleBuffered = boolMember(cx_, object, "double_buffered", false);
  const json &nodes = arrayMember(cx_, object, "nodes");
  subgraph.nodes.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    // The op name joins the frame once known ("node 17 (conv2d)").
    std::string frame = "node " + std::to_string(i);
    if (nodes[i].is_object()) {
      const json *op = optionalMember(nodes[i], "op");
      const json *kind = optionalMember(nodes[i], "kind");
      if (op && op->is_string())
        frame += " (" + op->get<std::string>() + ")";
      else if (kind && kind->is_string() && *kind != "op")
        frame += " (" + kind->get<std::string>() + ")";
    }
    Context::Scope nodeScope(cx_, frame);
    requireObject(cx_, nodes[i]);
    subgraph.nodes.push_back(parseNode(nodes[i], function));
  }
  return subgraph;
}

Node ProgramParser::parseNode(const json &object, const Function &function) {
  Node node;
  std::string kind = stringMember(cx_, object, "kind");
  node.stream = streamMember(cx_, object, "stream");
  if (kind == "op") {
    node.kind = Node::Kind::op;
    parseOpNode(object, function, node);
    return node;
  }
  if (kind != "event_record" && kind != "event_wait")
    cx_.fail("unknown node kind " + inQuotes(kind) +
             " (op, event_record or event_wait)");
  node.kind = kind == "event_record" ? Node::Kind::event_record : Node::Kind::event_wait;
  uint64_t event = unsignedMember(cx_, object, "event");
  if (event >= program_.numEvents)
    cx_.fail("event " + std::to_string(event) + " is not below num_events " +
             std::to_string(program_.numEvents));
  node.event = static_cast<uint32_t>(event);
  std::string eventKind = stringMember(cx_, object, "event_kind");
  std::optional<EventKind> parsedKind = parseEventKind(eventKind);
  if (!parsedKind)
    cx_.fail("unknown event kind " + inQuotes(eventKind) +
             " (internal, fork, join or external)");
  node.eventKind = *parsedKind;
  if (const json *distance = optionalMember(object, "distance")) {
    if (node.kind != Node::Kind::event_wait)
      cx_.fail("only an event_wait has a \"distance\"");
    uint64_t steps = unsignedValue(cx_, *distance, "\"distance\"");
    if (steps > 2)
      cx_.fail("distance must be 0, 1 or 2 steps, got " + std::to_string(steps));
    node.distance = static_cast<uint32_t>(steps);
  }
  return node;
}

void ProgramParser::parseOpNode(const json &object, const Function &function,
                                Node &node) {
  node.op = stringMember(cx_, object, "op");
  node.info = findOp(node.op);
  if (!node.info || !node.info->table)
    cx_.fail("unknown op " + inQuotes(node.op) + " (not in the runtime's op registry)");

  // Tensor references by ODS name (op_table.h); only host_to_device
  // touches a host buffer (its operand), every other access needs device
  // memory.
  bool hostToDevice = node.op == "host_to_device";
  auto readIds = [&](const char *key, const char *what, bool results, bool hostAllowed,
                     ValueLayout &layout) {
    std::vector<uint64_t> raw;
    auto checkId = [&](uint64_t id, const std::string &place) -> Status {
      if (id >= function.tensors.size())
        return Error(place + " refers to tensor " + std::to_string(id) +
                     ", but the function has " + std::to_string(function.tensors.size()) +
                     " tensors");
      const TensorInfo &tensor = function.tensors[id];
      if (tensor.isHost() != hostAllowed)
        return Error(place + " is tensor " + std::to_string(id) + ", " +
                     (tensor.isHost()
                          ? "a host staging buffer (host_input " + tensor.hostInput +
                                "); only host_to_device reads host buffers"
                          : std::string("a device tensor; host_to_device reads a host "
                                        "staging buffer")));
      return Status::success();
    };
    Result<ValueLayout> read = readNamedValues(*node.info->table, results,
                                               member(cx_, object, key), what, raw, checkId);
    if (!read)
      cx_.fail(read.error().message());
    layout = std::move(*read);
    return std::vector<uint32_t>(raw.begin(), raw.end());
  };
  node.operands = readIds("operands", "operand", false, hostToDevice, node.layout.operands);
  node.results = readIds("results", "result", true, false, node.layout.results);

  if (const json *attributes = optionalMember(object, "attributes")) {
    if (!attributes->is_object())
      cx_.fail("\"attributes\" must be an object, got " + describe(*attributes));
    node.attributes = *attributes;
  }
  OpNodeSignature signature{node.layout, node.attributes};
  if (Status status = node.info->verify(signature); !status.ok())
    cx_.fail(status.error().message());
  if (Status status = checkAttributes(*node.info->table, node.attributes); !status.ok())
    cx_.fail(status.error().message());

  // Parts: absent (the executor runs the op on its stream), or exactly the
  // op's parts in ForkingOpInterface order.
  const json &parts = optionalArray(cx_, object, "parts");
  if (!parts.empty()) {
    if (!node.info->forkParts)
      cx_.fail(node.op + " does not fork, but the node lists " +
               std::to_string(parts.size()) + " parts");
    std::vector<std::string_view> roles = node.info->forkParts(signature);
    std::string expected;
    for (std::string_view role : roles)
      expected += (expected.empty() ? "" : ", ") + std::string(role);
    if (parts.size() != roles.size())
      cx_.fail("lists " + std::to_string(parts.size()) + " parts, but this " +
               node.op + " has " + std::to_string(roles.size()) + " (" + expected + ")");
    for (size_t i = 0; i < parts.size(); ++i) {
      Context::Scope scope(cx_, "part " + std::to_string(i));
      requireObject(cx_, parts[i]);
      Part part;
      part.role = stringMember(cx_, parts[i], "role");
      if (part.role != roles[i])
        cx_.fail("role " + inQuotes(part.role) + ", expected " + inQuotes(roles[i]) +
                 " (parts: " + expected + ")");
      part.stream = streamMember(cx_, parts[i], "stream");
      node.parts.push_back(std::move(part));
    }
  }
  const json &waits = optionalArray(cx_, object, "part_waits");
  for (size_t i = 0; i < waits.size(); ++i) {
    Context::Scope scope(cx_, "part_waits[" + std::to_string(i) + "]");
    if (!waits[i].is_array() || waits[i].size() != 2)
      cx_.fail("must be a pair [earlier part, later part], got " + describe(waits[i]));
    uint64_t from = unsignedValue(cx_, waits[i][0], "a part index");
    uint64_t to = unsignedValue(cx_, waits[i][1], "a part index");
    if (from >= node.parts.size() || to >= node.parts.size())
      cx_.fail("part index out of range: the node has " +
               std::to_string(node.parts.size()) + " parts");
    if (from == to)
      cx_.fail("part " + std::to_string(from) + " cannot wait for itself");
    node.partWaits.emplace_back(static_cast<uint32_t>(from), static_cast<uint32_t>(to));
  }
}

/// Values are SSA: each is an argument or the result of one node.
void ProgramParser::checkDefinitions(const Function &function) {
  std::vector<std::string> definedBy(function.tensors.size());
  for (const auto *bindings : {&function.inputs, &function.state})
    for (const Binding &binding : *bindings) {
      std::string &place = definedBy[binding.tensor];
      if (!place.empty())
        cx_.fail("tensor " + std::to_string(binding.tensor) + " is bound to both " +
                 place + " and argument " + binding.name);
      place = "argument " + binding.name;
    }
  for (const Subgraph &subgraph : function.subgraphs)
    for (size_t i = 0; i < subgraph.nodes.size(); ++i) {
      const Node &node = subgraph.nodes[i];
      for (uint32_t id : node.results) {
        std::string &place = definedBy[id];
        std::string here = "subgraph " + subgraph.name + ", node " +
                           std::to_string(i) + " (" + node.op + ")";
        if (!place.empty())
          cx_.fail(here + ": result tensor " + std::to_string(id) +
                   " is already defined by " + place);
        place = std::move(here);
      }
    }

  // A host staging buffer is the input of its name.
  std::unordered_map<std::string, uint32_t> inputs;
  for (const Binding &binding : function.inputs)
    inputs.emplace(binding.name, binding.tensor);
  for (const TensorInfo &tensor : function.tensors) {
    if (!tensor.isHost())
      continue;
    auto input = inputs.find(tensor.hostInput);
    if (input == inputs.end() || input->second != tensor.id)
      cx_.fail("tensor " + std::to_string(tensor.id) + " is the host buffer of input " +
               inQuotes(tensor.hostInput) + ", but that input is " +
               (input == inputs.end() ? std::string("not bound")
                                      : "tensor " + std::to_string(input->second)));
  }
}

/// State arguments live in their state's slot and state results are written
/// in place of their argument.
void ProgramParser::checkStateBindings(const Function &function) {
  auto sameType = [&](const std::string &place, const TensorInfo &tensor,
                      const StateEntry &entry) {
    if (tensor.dtype != entry.dtype || tensor.shape != entry.shape)
      cx_.fail(place + ": tensor " + std::to_string(tensor.id) + " is " +
               typeString(tensor.dtype, tensor.shape) + ", but state " + entry.name +
               " is " + typeString(entry.dtype, entry.shape));
    if (tensor.isHost())
      cx_.fail(place + ": tensor " + std::to_string(tensor.id) +
               " is a host buffer, but state lives on the device");
  };
  auto sameSlot = [](const Slot &a, const Slot &b) {
    return a.region == b.region && a.offset == b.offset;
  };
  for (const Binding &binding : function.state) {
    std::string place = "state argument " + binding.name;
    const StateEntry *entry = findState(binding.name);
    if (!entry)
      cx_.fail(place + ": no state entry of that name");
    const TensorInfo &tensor = function.tensors[binding.tensor];
    sameType(place, tensor, *entry);
    if (entry->slot && !sameSlot(*entry->slot, *tensor.slot))
      cx_.fail(place + ": tensor " + std::to_string(tensor.id) + " lives at " +
               slotString(*tensor.slot) + ", but the state lives at " +
               slotString(*entry->slot));
  }
  std::unordered_map<std::string, uint32_t> arguments;
  for (const Binding &binding : function.state)
    arguments.emplace(binding.name, binding.tensor);
  for (const Binding &binding : function.stateResults) {
    std::string place = "state result " + binding.name;
    auto argument = arguments.find(binding.name);
    if (argument == arguments.end())
      cx_.fail(place + ": the function takes no state argument of that name");
    const TensorInfo &tensor = function.tensors[binding.tensor];
    sameType(place, tensor, *findState(binding.name));
    const TensorInfo &old = function.tensors[argument->second];
    if (!sameSlot(*tensor.slot, *old.slot))
      cx_.fail(place + ": tensor " + std::to_string(tensor.id) + " lives at " +
               slotString(*tensor.slot) + ", but it must be written in place of " +
               "its argument at " + slotString(*old.slot));
  }
}

/// Waits need a record of their event in the same function; a wait on an
/// earlier step (distance > 0) only exists between double-buffered
/// subgraphs.
void ProgramParser::checkEvents(const Function &function) {
  // Event -> whether some record of it is in a single-variant subgraph
  // (a map, not a vector of num_events: most functions record few).
  std::unordered_map<uint32_t, bool> recordedSingle;
  for (const Subgraph &subgraph : function.subgraphs)
    for (const Node &node : subgraph.nodes)
      if (node.kind == Node::Kind::event_record)
        recordedSingle[node.event] |= !subgraph.doubleBuffered;
  for (const Subgraph &subgraph : function.subgraphs)
    for (size_t i = 0; i < subgraph.nodes.size(); ++i) {
      const Node &node = subgraph.nodes[i];
      if (node.kind != Node::Kind::event_wait)
        continue;
      Context::Scope scope(cx_, "subgraph " + subgraph.name + ", node " +
                                    std::to_string(i) + " (event_wait)");
      auto record = recordedSingle.find(node.event);
      if (record == recordedSingle.end())
        cx_.fail("waits on event " + std::to_string(node.event) +
                 ", which no node of function " + function.name + " records");
      if (node.distance > 0 && (!subgraph.doubleBuffered || record->second))
        cx_.fail("distance " + std::to_string(node.distance) +
                 " needs double-buffered subgraphs on both sides, but " +
                 (subgraph.doubleBuffered
                      ? "event " + std::to_string(node.event) +
                            " is recorded in a subgraph that is not"
                      : "subgraph " + subgraph.name + " is not"));
    }
}

Schedule ProgramParser::parseSchedule(const json &object) {
  Schedule schedule;
  schedule.name = nameMember(cx_, object, "name");
  schedule.function = nameMember(cx_, object, "function");
  auto foundFunction = functionIndex_.find(schedule.function);
  if (foundFunction == functionIndex_.end())
    cx_.fail("runs unknown function " + inQuotes(schedule.function));
  const Function *function = foundFunction->second;
  const auto &subgraphs = subgraphIndex_[function];
  const json &steps = arrayMember(cx_, object, "steps");
  for (size_t i = 0; i < steps.size(); ++i) {
    Context::Scope stepScope(cx_, "step " + std::to_string(i));
    requireObject(cx_, steps[i]);
    Step step;
    const json *launch = optionalMember(steps[i], "launch");
    const json *wait = optionalMember(steps[i], "host_wait");
    if (!launch == !wait)
      cx_.fail("a step is either a \"launch\" or a \"host_wait\"");
    step.kind = launch ? Step::Kind::launch : Step::Kind::host_wait;
    step.subgraph = stringMember(cx_, steps[i], launch ? "launch" : "host_wait");
    if (const json *variant = optionalMember(steps[i], "variant")) {
      if (*variant == "a")
        step.variant = Variant::a;
      else if (*variant == "b")
        step.variant = Variant::b;
      else
        cx_.fail("variant must be \"a\" or \"b\", got " + describe(*variant));
    }
    const char *verb = launch ? "launches" : "waits for";
    auto found = subgraphs.find(step.subgraph);
    if (found == subgraphs.end())
      cx_.fail(std::string(verb) + " unknown subgraph " + inQuotes(step.subgraph) +
               " (not in function " + function->name + ")");
    const Subgraph *subgraph = found->second;
    if (subgraph->doubleBuffered && !step.variant)
      cx_.fail(std::string(verb) + " double-buffered subgraph " + subgraph->name +
               " without a variant (a or b)");
    if (!subgraph->doubleBuffered && step.variant)
      cx_.fail(std::string(verb) + " subgraph " + subgraph->name + " with variant " +
               (*step.variant == Variant::a ? "a" : "b") +
               ", but it is not double-buffered");
    schedule.steps.push_back(std::move(step));
  }
  return schedule;
}

/// The B variant reads inputs_b at the offsets of inputs_a.
void ProgramParser::checkInputMirror() {
  bool doubled = false;
  for (const Function &function : program_.functions)
    for (const Subgraph &subgraph : function.subgraphs)
      doubled |= subgraph.doubleBuffered;
  const Region *mirror = program_.arena.find("inputs_b");
  if (!doubled)
    return;
  for (const Function &function : program_.functions)
    for (const TensorInfo &tensor : function.tensors) {
      if (!tensor.slot || tensor.slot->region != "inputs_a")
        continue;
      if (!mirror || tensor.slot->offset + tensor.slot->bytes > mirror->bytes)
        cx_.fail("function " + function.name + ", tensor " + std::to_string(tensor.id) +
                 ": slot " + slotString(*tensor.slot) +
                 " has no mirror in inputs_b (" +
                 (mirror ? std::to_string(mirror->bytes) + " bytes" : "absent") +
                 "), which the B variants read");
    }
}

void ProgramParser::checkTensors(const Safetensors &tensors) {
  // Weight-free: the runtime samples every parameter and buffer.
  if (program_.sampling) {
    if (!tensors.tensors.empty())
      cx_.fail("the program has no weights (it has \"init\"), but the artifact holds " +
               std::to_string(tensors.tensors.size()) + " tensor" +
               (tensors.tensors.size() == 1 ? "" : "s") + " (first " +
               inQuotes(tensors.tensors.front().name) + ")");
    return;
  }
  std::unordered_map<std::string_view, const SafetensorsEntry *> byName;
  for (const SafetensorsEntry &tensor : tensors.tensors)
    byName.emplace(tensor.name, &tensor);
  for (const StateEntry &entry : program_.state) {
    Context::Scope scope(cx_, "state " + entry.name);
    auto found = byName.find(entry.name);
    const SafetensorsEntry *tensor = found == byName.end() ? nullptr : found->second;
    if (!tensor) {
      if (needsInitialValue(entry.role))
        cx_.fail("the artifact has no tensor " + inQuotes(entry.name) +
                 " with the initial value of this " + entry.role);
      continue;
    }
    if (tensor->dtype != entry.dtype || tensor->shape != entry.shape)
      cx_.fail("the artifact's tensor is " +
               std::string(safetensorsDTypeName(tensor->dtype)) + " " +
               shapeString(tensor->shape) + ", but the state is " +
               typeString(entry.dtype, entry.shape));
  }
  // Anything else is a name that drifted between writer and program.
  for (const SafetensorsEntry &tensor : tensors.tensors)
    if (!findState(tensor.name))
      cx_.fail("the artifact's tensor " + inQuotes(tensor.name) +
               " is not a state entry of the program");
}

/// Everything thrown below the API becomes an Error.
template <typename Fn> auto guarded(Fn &&fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const LoadError &error) {
    return Error(error.message);
  } catch (const std::bad_alloc &) {
    return Error("out of memory while loading the program");
  } catch (const std::exception &error) {
    return Error(std::string("internal error while loading the program: ") +
                 error.what());
  }
}

Result<Program> parseProgramImpl(std::string_view text, const Safetensors *tensors) {
  Result<json> root = parseJsonDocument(text, "rn.program");
  if (!root)
    return root.error();
  return guarded([&]() -> Result<Program> {
    return ProgramParser().parse(*root, tensors);
  });
}

/// The metadata checks, then the program against the tensors.
Result<Artifact> fromSafetensors(Safetensors &&tensors) {
  auto meta = [&](const char *key) -> const std::string * {
    auto it = tensors.metadata.find(key);
    return it == tensors.metadata.end() ? nullptr : &it->second;
  };
  const std::string *format = meta("rn.format");
  if (!format)
    return Error("not an rn artifact: the safetensors metadata has no \"rn.format\"");
  if (*format != "rn-program")
    return Error("not an rn artifact: rn.format is \"" + *format +
                 "\", expected \"rn-program\"");
  const std::string *version = meta("rn.version");
  if (!version)
    return Error("the safetensors metadata has no \"rn.version\"");
  uint64_t number = 0;
  auto [end, ec] = std::from_chars(version->data(), version->data() + version->size(), number);
  if (ec != std::errc() || end != version->data() + version->size() || version->empty())
    return Error("rn.version \"" + *version + "\" is not a version number");
  if (number != uint64_t(kArtifactVersion))
    return Error(artifactVersionMismatch(number));
  const std::string *program = meta("rn.program");
  if (!program)
    return Error("the safetensors metadata has no \"rn.program\"");
  Result<Program> parsed = parseProgramImpl(*program, &tensors);
  if (!parsed)
    return parsed.error();
  return guarded([&]() -> Result<Artifact> {
    return Artifact{std::move(*parsed), std::move(tensors)};
  });
}

} // namespace

Result<Program> parseProgram(std::string_view json, const Safetensors *tensors) {
  return parseProgramImpl(json, tensors);
}

Result<Artifact> parseArtifact(std::string_view file) {
  Result<Safetensors> tensors = parseSafetensors(file);
  if (!tensors)
    return tensors.error();
  return fromSafetensors(std::move(*tensors));
}

Result<Artifact> loadArtifact(const std::string &path) {
  Result<Safetensors> tensors = readSafetensors(path);
  if (!tensors)
    return tensors.error(); // already names the path
  Result<Artifact> artifact = fromSafetensors(std::move(*tensors));
  if (!artifact)
    return artifact.error().withContext(path);
  return artifact;
}

} // namespace rn
