//===- op_registry.h - The ops the runtime knows ---------------*- C++ -*-===//
//
// Every op an artifact's nodes may name (the op table's ops, op_table.h,
// by OpKind), with the rules the loader checks before anything runs. A
// node names its operands and results as the dialect's ODS does; the op
// table generated from ODS says which exist, which are optional and which
// are lists, and readNamedValues holds a node to it; checkAttributes holds
// its attributes to the kinds the table gives them. The registry adds
// what the table cannot say, for the ops that need it: the ranges of
// attributes (positive strides, probabilities in [0, 1), ...), how present
// operands and results go together (the groups of multi_sgd_update are one
// size; a bias gradient comes with a bias accumulator), and the parts
// forking ops split into. An op without such rules (a new op, until it
// needs some) verifies by the table alone. The rules mirror the dialect's
// verifiers; shapes are the executors' business.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_OP_REGISTRY_H
#define RN_RUNTIME_CORE_OP_REGISTRY_H

#include "runtime/core/op_kinds.h"
#include "runtime/core/status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace rn {

namespace op_table {
struct Op;
struct Value;
} // namespace op_table

/// Where one ODS operand (or result) of a node sits in the node's flat
/// list: `count` values from `begin` (0 for an absent optional one).
struct ValueSegment {
  uint32_t begin = 0;
  uint32_t count = 0;
};

/// A node's operands or results by their ODS names: one segment per entry
/// of the op table's list, in table order. Index it with the op table's
/// constants (op_table::cbr_backward::operand::relu_output).
struct ValueLayout {
  std::vector<ValueSegment> segments;

  bool has(size_t ods) const { return ods < segments.size() && segments[ods].count > 0; }
  size_t count(size_t ods) const { return ods < segments.size() ? segments[ods].count : 0; }
  /// The flat index of the first (for a single value, the only) value.
  size_t index(size_t ods) const { return segments.at(ods).begin; }
  /// Values in all, the flat list's length.
  size_t total() const;
};

struct NodeLayout {
  ValueLayout operands, results;
};

/// What the registry looks at in an op node.
struct OpNodeSignature {
  const NodeLayout &layout;
  const nlohmann::json &attributes; ///< an object
};

struct OpInfo {
  std::string_view name;
  OpKind kind{};
  /// Checks what the op table cannot say: attributes, and how the present
  /// operands and results go together (group sizes, an optional result
  /// that comes with an optional operand); messages name no place (the
  /// caller prefixes the node).
  Status (*verify)(const OpNodeSignature &node) = nullptr;
  /// The roles of the parts a forking op runs as, in ForkingOpInterface
  /// order, for a node that verified; null for ops that do not fork.
  std::vector<std::string_view> (*forkParts)(const OpNodeSignature &node) = nullptr;
  /// The op's entry in the op table (op_table.h), which names its operands
  /// and results.
  const op_table::Op *table = nullptr;
};

/// Reads a node's "operands" (or "results") object against `op`'s list in
/// the op table: every key an ODS name of the list, each required one
/// present as one tensor id, an optional one absent or one id, a variadic
/// one an array of ids. Appends the ids to `ids` in table order and
/// returns the layout; `what` ("operand", "result") names them in errors.
/// `checkId`, when given, checks each id (its place: `operand "filter"`)
/// before it is taken: the loader's range and host-or-device checks.
Result<ValueLayout>
readNamedValues(const op_table::Op &op, bool results, const nlohmann::json &object,
                const char *what, std::vector<uint64_t> &ids,
                const std::function<Status(uint64_t id, const std::string &place)> &checkId = {});

/// Where a cbr_backward node's ReLU mask comes from: none (no ReLU), the
/// forward's ReLU result (operand `relu_output`), or recomputed from the
/// convolution output with the forward's beta (operand `relu_beta`,
/// rn-recompute-relu-mask).
enum class ReluMask { none, output, recomputed };
ReluMask cbrBackwardReluMask(const NodeLayout &layout);

/// Whether a cbr_backward node's recomputed mask takes the prologue's
/// rounding (`prologue_mask`, rn-fuse-bn-prologue): positive where
/// round(fma(conv_output, scale, bias)) is, with scale and bias those
/// of rn.bn_scale_bias from the node's statistics, gamma and relu_beta.
bool cbrBackwardPrologueMask(const nlohmann::json &attributes);

/// Holds a node's `attributes` (an object) to `op`'s attributes in the op
/// table: each required one present, each present one of the JSON type of
/// its kind (a number, an integer, a boolean, an array of integers, a
/// string; an enum case as its name or value). Names no place, like
/// OpInfo::verify; the loader runs it after the op's verify.
Status checkAttributes(const op_table::Op &op, const nlohmann::json &attributes);

/// The op named `name` ("conv2d"), or null.
const OpInfo *findOp(std::string_view name);

/// The op of kind `kind`.
const OpInfo &opInfo(OpKind kind);

/// Every op, in OpKind order (allOps()[size_t(kind)] is opInfo(kind)).
const std::vector<OpInfo> &allOps();

/// The ops of the op table (op_table.h: the dialect's RN_ArtifactOp ops)
/// that `implemented` says no to, in table order: an executor's coverage
/// check (`implemented` asks its kernel or launcher table).
std::vector<std::string_view>
opsWithout(const std::function<bool(std::string_view op)> &implemented);

} // namespace rn

#endif // RN_RUNTIME_CORE_OP_REGISTRY_H
