//===- op_registry.h - The ops the runtime knows ---------------*- C++ -*-===//
//
// Every op an artifact's nodes may name (the rn dialect's executable ops
// without "rn."), with the rules the loader checks before anything runs:
// operand and result counts (including the variadic forms: conv2d's
// optional bias, the backward ops' optional input and bias gradients,
// sgd_update's optional momentum buffer and skip_if, the groups of tensors
// of multi_sgd_update, multi_adamw_update and multi_lars_update), the
// attributes each op needs with their JSON types and ranges (positive
// strides, probabilities in [0, 1), ...), and the parts forking ops split
// into. The rules mirror the dialect's verifiers; shapes are the executors'
// business.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_OP_REGISTRY_H
#define RN_RUNTIME_CORE_OP_REGISTRY_H

#include "runtime/core/status.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace rn {

/// What the registry looks at in an op node.
struct OpNodeSignature {
  size_t operands = 0;
  size_t results = 0;
  const nlohmann::json &attributes; ///< an object
};

struct OpInfo {
  std::string_view name;
  /// Checks the counts and attributes of `node`; messages name no place
  /// (the caller prefixes the node).
  Status (*verify)(const OpNodeSignature &node) = nullptr;
  /// The roles of the parts a forking op runs as, in ForkingOpInterface
  /// order, for a node that verified; null for ops that do not fork.
  std::vector<std::string_view> (*forkParts)(const OpNodeSignature &node) = nullptr;
};

/// Whether a conv2d_backward or cbr_backward node has an input gradient
/// addend (`plus`, rn-fold-gradient-adds): its last operand then. The
/// artifact says so in the op's "operandSegmentSizes" (one count per ODS
/// operand, the addend's last), which tells it apart from the other
/// optional operand (the bias accumulator, the ReLU output).
bool hasInputGradAddend(const nlohmann::json &attributes);

/// Where a cbr_backward node's ReLU mask comes from: none (no ReLU), the
/// forward's ReLU result (`relu`), or recomputed from the convolution
/// output with the forward's beta (`relu_recompute`,
/// rn-recompute-relu-mask). Either way the mask's operand is the eleventh.
enum class ReluMask { none, output, recomputed };
/// From the node's "operandSegmentSizes" (relu_output's and relu_beta's
/// counts; artifacts from before relu_beta have only relu_output's), or,
/// without them, an eleventh operand before any addend is relu_output.
/// Both counts set (an invalid node: verifyNode rejects it) reads as `output`.
ReluMask cbrBackwardReluMask(const nlohmann::json &attributes, size_t operands);

/// Whether a cbr_backward node's recomputed mask takes the prologue's
/// rounding (`prologue_mask`, rn-fuse-bn-prologue): positive where
/// round(fma(conv_output, scale, bias)) is, with scale and bias those
/// of rn.bn_scale_bias from the node's statistics, gamma and relu_beta.
bool cbrBackwardPrologueMask(const nlohmann::json &attributes);

/// The index of a cbr_backward node's input_scale operand (input_bias is
/// the next) when it has `input_prologue` (its `input` is then a
/// convolution output that its filter gradient reads through the
/// scale-bias-ReLU prologue); nullopt without. From "operandSegmentSizes"
/// (15 counts: ten, relu_output, relu_beta, input_scale, input_bias,
/// input_grad_addend).
std::optional<size_t> cbrBackwardInputPrologue(const nlohmann::json &attributes);

/// The index of a cbr_forward or conv_bn_stats node's prologue scale
/// operand (the bias is the next) when it has one: the two operands after
/// the op's fixed ones (four and two). nullopt without, or for other ops.
std::optional<size_t> convPrologue(std::string_view op, size_t operands);

/// The op named `name` ("conv2d"), or null.
const OpInfo *findOp(std::string_view name);

/// Every op, in the order of the dialect's .td files.
const std::vector<OpInfo> &allOps();

/// The ops of the op table (op_table.h: the dialect's RN_ArtifactOp ops)
/// that `implemented` says no to, in table order: an executor's coverage
/// check (`implemented` asks its kernel or launcher table).
std::vector<std::string_view>
opsWithout(const std::function<bool(std::string_view op)> &implemented);

} // namespace rn

#endif // RN_RUNTIME_CORE_OP_REGISTRY_H
