//===- artifact.h - The compiled program and its loader --------*- C++ -*-===//
//
// An artifact (`.rnx`, docs/artifact.md) is a safetensors file: the tensors
// are the initial parameters and buffers, the metadata holds "rn.format",
// "rn.version" and "rn.program", the program as JSON. loadArtifact reads it
// and checks everything "What the loader checks" lists before a device is
// touched, so that an executor may trust every id, slot and count it finds
// here; a failure names the place ("function train_step, subgraph
// DEEP_FWD_BWD, node 17 (conv2d): ...").
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_ARTIFACT_H
#define RN_RUNTIME_CORE_ARTIFACT_H

#include "runtime/core/dtype.h"
#include "runtime/core/init_sampler.h"
#include "runtime/core/op_registry.h"
#include "runtime/core/safetensors.h"
#include "runtime/core/status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rn {

/// The format version this runtime reads. 2: nodes name their operands and
/// results by their ODS names (op_table.h); 1 listed them by position.
inline constexpr int kArtifactVersion = 2;

/// The message for an artifact of another format version: older ones are
/// compiled again, newer ones need a newer runtime.
std::string artifactVersionMismatch(uint64_t version);
/// Upper bound on num_events: the runtime creates one device event per id,
/// so a larger count is a corrupt file, not a schedule.
inline constexpr uint64_t kMaxEvents = 1u << 20;

enum class Stream : uint8_t { trans, comp1, comp2, comp3, update };
std::string_view streamName(Stream stream);
std::optional<Stream> parseStream(std::string_view name);

enum class EventKind : uint8_t { internal, fork, join, external };
std::string_view eventKindName(EventKind kind);

/// The input buffer a double-buffered subgraph reads.
enum class Variant : uint8_t { a, b };

/// A typed part of the device arena ("weights", "activations", ...).
struct Region {
  std::string kind;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct Arena {
  uint64_t bytes = 0;
  uint64_t alignment = 0;
  std::vector<Region> regions;

  const Region *find(std::string_view kind) const;
};

/// Where a device tensor lives: `bytes` bytes at `offset` in `region`.
struct Slot {
  std::string region;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

/// A weight-free artifact's "init" entry: its file holds no tensors, and the
/// runtime samples every parameter and buffer from its init with this seed
/// (init_sampler.h), as rn-compile would have written them.
struct InitSampling {
  std::string sampler; ///< kInitSampler
  uint64_t seed = 0;
};

/// Persistent training state: a parameter, buffer, gradient, optimizer
/// moment, low-precision copy, EMA weight or the loss scale.
struct StateEntry {
  std::string name;
  std::string role; ///< parameter, buffer, gradient, momentum, ...
  std::string of;   ///< the parameter of per-parameter state, else empty
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::optional<Slot> slot;
  Init init;
};

/// Elements of a tensor of `shape` (1 for a scalar).
inline int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// One value of a function.
struct TensorInfo {
  uint32_t id = 0;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  uint64_t bytes = 0;       ///< element count x element size
  std::optional<Slot> slot; ///< device tensors
  std::string hostInput;    ///< host staging buffers: the input's name

  bool isHost() const { return !slot.has_value(); }
};

/// A named argument or result of a function.
struct Binding {
  std::string name;
  uint32_t tensor = 0;
};

/// One part of a forking op and the stream it runs on.
struct Part {
  std::string role;
  Stream stream = Stream::comp1;
};

struct Node {
  enum class Kind : uint8_t { op, event_record, event_wait };
  Kind kind = Kind::op;
  Stream stream = Stream::comp1;

  // Op nodes.
  std::string op;
  const OpInfo *info = nullptr;
  /// Tensor ids in op-table order (a list's ids in place); `layout` says
  /// which ODS operand (result) each is.
  std::vector<uint32_t> operands;
  std::vector<uint32_t> results;
  NodeLayout layout;
  nlohmann::json attributes = nlohmann::json::object();
  std::vector<Part> parts;
  /// (earlier part, later part): the later waits for the earlier.
  std::vector<std::pair<uint32_t, uint32_t>> partWaits;

  // Event nodes.
  uint32_t event = 0;
  EventKind eventKind = EventKind::internal;
  uint32_t distance = 0; ///< waits: 0, 1 or 2 steps back

  /// The op's kind: its registry entry's, or for a node built without one
  /// (tests) its name's; nullopt for a name the op table lacks.
  std::optional<OpKind> opKind() const {
    return info ? std::optional<OpKind>(info->kind) : opKindOf(op);
  }

  /// The tensor of ODS operand (result) `ods`, a single one present: use
  /// the op table's constants (op_table::conv2d::operand::filter).
  uint32_t operand(size_t ods) const { return operands[layout.operands.index(ods)]; }
  uint32_t result(size_t ods) const { return results[layout.results.index(ods)]; }
};

struct Subgraph {
  std::string name;
  Stream primary = Stream::comp1;
  bool doubleBuffered = false;
  std::vector<Node> nodes;
};

struct Function {
  std::string name;
  std::vector<TensorInfo> tensors; ///< by id
  std::vector<Binding> inputs;
  std::vector<Binding> state;
  std::vector<Binding> outputs;
  std::vector<Binding> stateResults;
  std::vector<Subgraph> subgraphs;

  const Subgraph *findSubgraph(std::string_view name) const;
};

struct Step {
  enum class Kind : uint8_t { launch, host_wait };
  Kind kind = Kind::launch;
  std::string subgraph;
  std::optional<Variant> variant;
};

/// What the host issues for one step.
struct Schedule {
  std::string name;
  std::string function;
  std::vector<Step> steps;
};

struct Program {
  int version = kArtifactVersion;
  std::string model;
  nlohmann::json training = nlohmann::json::object();
  Arena arena;
  std::vector<StateEntry> state;
  std::vector<Function> functions;
  std::vector<Schedule> schedules;
  uint32_t numEvents = 0;
  /// Set for weight-free artifacts (`rn-compile --no-weights`).
  std::optional<InitSampling> sampling;

  const Function *findFunction(std::string_view name) const;
  const StateEntry *findState(std::string_view name) const;
  const Schedule *findSchedule(std::string_view name) const;
};

struct Artifact {
  Program program;
  Safetensors tensors; ///< initial values of the state, by state name
};

/// Parses and validates a program. With `tensors`, also checks that every
/// parameter and buffer has its initial value there with the state's dtype
/// and shape, and that the file holds nothing else; or, for a weight-free
/// program (an "init" entry), that there are no tensors at all.
Result<Program> parseProgram(std::string_view json,
                             const Safetensors *tensors = nullptr);

/// Parses and validates a whole artifact held in memory.
Result<Artifact> parseArtifact(std::string_view file);

/// Reads and validates `path`; errors are prefixed with the path.
Result<Artifact> loadArtifact(const std::string &path);

/// The initial values of `entry` (a state entry of `artifact`'s program), one
/// float per element, each exactly representable in the entry's dtype:
/// parameters and buffers from the artifact's tensors or, when the program
/// is weight-free, from the sampler (init_sampler.h) with its seed; zeros,
/// ones and constants from their init; derived state from its parameter,
/// rounded to its own dtype. Every executor initializes through these
/// (defined in initial_state.cpp), so the logic exists once.
Result<std::vector<float>> initialStateValues(const Artifact &artifact,
                                              const StateEntry &entry);

/// Calls `visit` with every state entry that has a slot and its initial
/// values: first the entries that are not derived, in program order, then
/// the derived ones. Errors name the state; an error of `visit` stops the
/// walk and is returned as is.
Status forEachInitialState(
    const Artifact &artifact,
    const std::function<Status(const StateEntry &, const std::vector<float> &)> &visit);

} // namespace rn

#endif // RN_RUNTIME_CORE_ARTIFACT_H
