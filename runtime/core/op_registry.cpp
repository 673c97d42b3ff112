//===- op_registry.cpp - The ops the runtime knows ------------------------===//
//
// One verify function per op (or per family of ops with one signature).
// Ranges follow the dialect's verifiers (dialects/rn/*.cpp) so that anything
// rn-opt accepts loads, and anything an executor could divide by zero or
// index out of bounds with is rejected here.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/op_registry.h"
#include "runtime/core/op_table.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <iterator>
#include <string>

namespace rn {

using json = nlohmann::json;

namespace {

std::string formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

/// An integral JSON number that fits int64_t (nlohmann stores larger ones
/// as unsigned or float).
std::optional<int64_t> asInt64(const json &value) {
  if (!value.is_number_integer())
    return std::nullopt;
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return value.get<int64_t>();
}

/// A unit attribute that is present and true (never throws, unlike
/// json::value on a mistyped attribute).
bool isSet(const json &attributes, const char *name) {
  auto it = attributes.find(name);
  return it != attributes.end() && it->is_boolean() && it->get<bool>();
}

} // namespace

size_t ValueLayout::total() const {
  size_t sum = 0;
  for (const ValueSegment &segment : segments)
    sum += segment.count;
  return sum;
}

namespace {

/// `op`'s operands (results) as a list for messages: "input, filter,
/// bias?" with `?` after optional ones and `[]` after lists.
std::string describeValues(const op_table::Value *values, size_t count) {
  std::string text;
  for (size_t i = 0; i < count; ++i) {
    text += (i ? ", " : "") + std::string(values[i].name);
    if (values[i].arity == op_table::Arity::optional)
      text += "?";
    else if (values[i].arity == op_table::Arity::variadic)
      text += "[]";
  }
  return text.empty() ? "none" : text;
}

} // namespace

Result<ValueLayout>
readNamedValues(const op_table::Op &op, bool results, const json &object, const char *what,
                std::vector<uint64_t> &ids,
                const std::function<Status(uint64_t id, const std::string &place)> &checkId) {
  const op_table::Value *values = results ? op.results : op.operands;
  const size_t count = results ? op.numResults : op.numOperands;
  const std::string list = std::string(op.name) + "'s " + what + "s: " +
                           describeValues(values, count);
  if (!object.is_object())
    return Error("\"" + std::string(what) + "s\" must be an object from name to tensor id (" +
                 list + "), got " + object.type_name());
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool known = false;
    for (size_t i = 0; i < count && !known; ++i)
      known = values[i].name == it.key();
    if (!known)
      return Error(std::string(what) + " \"" + it.key() + "\" is not one of " + list);
  }
  auto readId = [&](const json &value, const std::string &place) -> Status {
    // A parsed file holds non-negative integers as unsigned; JSON built in
    // C++ may hold them as signed.
    const bool id = value.is_number_unsigned() ||
                    (value.is_number_integer() && value.get<int64_t>() >= 0);
    if (!id)
      return Error(place + " must be a tensor id (a non-negative integer), got " +
                   (value.is_number() ? value.dump() : std::string(value.type_name())));
    const uint64_t tensor = value.get<uint64_t>();
    if (checkId)
      RN_RETURN_IF_ERROR(checkId(tensor, place));
    ids.push_back(tensor);
    return Status::success();
  };
  ValueLayout layout;
  for (size_t i = 0; i < count; ++i) {
    const std::string name(values[i].name);
    const std::string place = std::string(what) + " \"" + name + "\"";
    ValueSegment segment{static_cast<uint32_t>(ids.size()), 0};
    auto it = object.find(name);
    if (it == object.end()) {
      if (values[i].arity == op_table::Arity::one)
        return Error(place + " is missing (" + list + ")");
    } else if (values[i].arity == op_table::Arity::variadic) {
      if (!it->is_array())
        return Error(place + " is a list: it must be an array of tensor ids, got " +
                     it->type_name());
      for (size_t k = 0; k < it->size(); ++k)
        RN_RETURN_IF_ERROR(readId((*it)[k], place + "[" + std::to_string(k) + "]"));
      segment.count = static_cast<uint32_t>(it->size());
    } else {
      RN_RETURN_IF_ERROR(readId(*it, place));
      segment.count = 1;
    }
    layout.segments.push_back(segment);
  }
  return layout;
}

ReluMask cbrBackwardReluMask(const NodeLayout &layout) {
  namespace operand = op_table::cbr_backward::operand;
  if (layout.operands.has(operand::relu_output))
    return ReluMask::output;
  if (layout.operands.has(operand::relu_beta))
    return ReluMask::recomputed;
  return ReluMask::none;
}

bool cbrBackwardPrologueMask(const json &attributes) { return isSet(attributes, "prologue_mask"); }

namespace {

/// Collects the first problem of one node.
class Checker {
public:
  explicit Checker(const OpNodeSignature &node) : node_(node) {}

  bool hasOperand(size_t ods) const { return node_.layout.operands.has(ods); }
  bool hasResult(size_t ods) const { return node_.layout.results.has(ods); }
  size_t operands(size_t ods) const { return node_.layout.operands.count(ods); }
  size_t results(size_t ods) const { return node_.layout.results.count(ods); }

  /// A list (`what`) that must hold at least one value.
  void nonEmpty(const char *what, size_t got) {
    if (got == 0)
      fail(std::string(what) + " is empty (it needs at least one tensor)");
  }
  /// A list (`what`) whose size follows from another's (`why`).
  void listSize(const char *what, size_t got, size_t expected, const std::string &why) {
    if (got != expected)
      fail(std::string(what) + " has " + std::to_string(got) +
           (got == 1 ? " tensor" : " tensors") + ", expected " + std::to_string(expected) +
           " (" + why + ")");
  }
  /// Two optional values that come together or not at all.
  void together(const char *first, bool hasFirst, const char *second, bool hasSecond) {
    if (hasFirst != hasSecond)
      fail(std::string(hasFirst ? first : second) + " is present without " +
           (hasFirst ? second : first));
  }

  /// An optional boolean (a unit attribute: absent means false).
  bool flag(const char *name) {
    auto it = node_.attributes.find(name);
    if (it == node_.attributes.end())
      return false;
    if (!it->is_boolean()) {
      fail(quoted(name) + " must be a boolean, got " + it->type_name());
      return false;
    }
    return it->get<bool>();
  }

  /// A required integer >= min.
  int64_t integer(const char *name, int64_t min) {
    const json *value = require(name, "an integer");
    if (!value)
      return min;
    std::optional<int64_t> parsed = asInt64(*value);
    if (!parsed) {
      fail(quoted(name) + " must be an integer, got " + describe(*value));
      return min;
    }
    int64_t result = *parsed;
    if (result < min) {
      fail(quoted(name) + " must be at least " + std::to_string(min) +
           ", got " + std::to_string(result));
      return min;
    }
    return result;
  }

  /// A required finite number.
  double number(const char *name) {
    const json *value = require(name, "a number");
    if (!value)
      return 0;
    if (!value->is_number()) {
      fail(quoted(name) + " must be a number, got " + value->type_name());
      return 0;
    }
    double result = value->get<double>();
    if (!std::isfinite(result)) {
      fail(quoted(name) + " must be finite");
      return 0;
    }
    return result;
  }

  /// A required number in [low, high] or [low, high).
  double inRange(const char *name, double low, double high, bool highInclusive) {
    double value = number(name);
    if (ok() && !(value >= low && (highInclusive ? value <= high : value < high)))
      fail(quoted(name) + " must be in [" + formatNumber(low) + ", " +
           formatNumber(high) + (highInclusive ? "]" : ")") + ", got " +
           formatNumber(value));
    return value;
  }
  double positive(const char *name) {
    double value = number(name);
    if (ok() && !(value > 0))
      fail(quoted(name) + " must be positive, got " + formatNumber(value));
    return value;
  }
  double nonNegative(const char *name) {
    double value = number(name);
    if (ok() && !(value >= 0))
      fail(quoted(name) + " must be non-negative, got " + formatNumber(value));
    return value;
  }

  /// A required [height, width] pair of integers >= min.
  std::vector<int64_t> pair(const char *name, int64_t min) {
    const json *value = require(name, "an array of 2 integers");
    if (!value)
      return {min, min};
    if (!value->is_array() || value->size() != 2) {
      fail(quoted(name) + " must be an array of 2 integers (height, width), got " +
           describe(*value));
      return {min, min};
    }
    std::vector<int64_t> result;
    static const char *const dims[] = {"height", "width"};
    for (size_t i = 0; i < 2; ++i) {
      const json &element = (*value)[i];
      std::optional<int64_t> element64 = asInt64(element);
      if (!element64) {
        fail(quoted(name) + " must hold integers, got " + describe(element) +
             " for " + dims[i]);
        return {min, min};
      }
      if (*element64 < min) {
        fail(quoted(name) + " must be " + (min > 0 ? "positive" : "non-negative") +
             ", got " + std::to_string(*element64) + " for " + dims[i]);
        return {min, min};
      }
      result.push_back(*element64);
    }
    return result;
  }

  /// strides, padding, dilation and groups of a convolution.
  void convolution() {
    pair("strides", 1);
    pair("padding", 0);
    pair("dilation", 1);
    integer("groups", 1);
  }

  /// kernel, strides and padding of a pooling window; PyTorch's rule
  /// bounds the padding by half the kernel (a window of padding only).
  void pooling() {
    std::vector<int64_t> kernel = pair("kernel", 1);
    pair("strides", 1);
    std::vector<int64_t> padding = pair("padding", 0);
    for (size_t i = 0; i < 2 && ok(); ++i)
      if (padding[i] > kernel[i] / 2)
        fail("\"padding\" " + std::to_string(padding[i]) +
             " exceeds half the kernel size " + std::to_string(kernel[i]) +
             (i == 0 ? " for height" : " for width"));
  }

  void fail(std::string message) {
    if (!problem_)
      problem_ = std::move(message);
  }
  bool ok() const { return !problem_; }
  Status finish() {
    if (problem_)
      return Error(std::move(*problem_));
    return Status::success();
  }

private:
  static std::string quoted(const char *name) {
    return std::string("attribute \"") + name + "\"";
  }
  /// The JSON type, and the value when it is a short scalar.
  static std::string describe(const json &value) {
    if (value.is_number() || value.is_boolean())
      return value.type_name() + std::string(" ") + value.dump();
    return value.type_name();
  }
  const json *require(const char *name, const char *what) {
    auto it = node_.attributes.find(name);
    if (it == node_.attributes.end()) {
      fail(quoted(name) + " is missing (" + what + ")");
      return nullptr;
    }
    return &*it;
  }

  const OpNodeSignature &node_;
  std::optional<std::string> problem_;
};

//===----------------------------------------------------------------------===//
// Families
//===----------------------------------------------------------------------===//

/// Ops the op table settles: their values' names and arities
/// (readNamedValues) and their attributes' kinds (checkAttributes).
Status verifyTableOnly(const OpNodeSignature &) { return Status::success(); }

Status verifyConv2d(const OpNodeSignature &node) {
  Checker c(node);
  c.convolution();
  return c.finish();
}

Status verifyBatchNorm(const OpNodeSignature &node) {
  Checker c(node);
  c.positive("epsilon");
  c.inRange("momentum", 0, 1, /*highInclusive=*/true);
  return c.finish();
}

Status verifyEpsilon(const OpNodeSignature &node) {
  Checker c(node);
  c.positive("epsilon");
  return c.finish();
}

/// dropout_train and stochastic_depth_train: index must be below count
/// (see Note [Random streams] in runtime/cpu/cpu_kernels.h).
/// Dropout's p is below 1, stochastic depth's may be 1 (every sample
/// dropped), as the dialect's verifiers say.
template <bool PMayBeOne> Status verifyRandomOp(const OpNodeSignature &node) {
  Checker c(node);
  c.inRange("p", 0, 1, /*highInclusive=*/PMayBeOne);
  int64_t count = c.integer("count", 1);
  int64_t index = c.integer("index", 0);
  if (c.ok() && index >= count)
    c.fail("attribute \"index\" must be below \"count\" (" + std::to_string(count) +
           "), got " + std::to_string(index));
  return c.finish();
}

/// hardtanh and its backward: finite bounds, min_val below max_val (the
/// dialect's verifier).
Status verifyHardtanh(const OpNodeSignature &node) {
  Checker c(node);
  double minVal = c.number("min_val");
  double maxVal = c.number("max_val");
  if (c.ok() && !(minVal < maxVal))
    c.fail("attribute \"min_val\" (" + formatNumber(minVal) +
           ") must be below \"max_val\" (" + formatNumber(maxVal) + ")");
  return c.finish();
}

Status verifyPool(const OpNodeSignature &node) {
  Checker c(node);
  c.pooling();
  return c.finish();
}

Status verifySoftmaxCrossEntropy(const OpNodeSignature &node) {
  Checker c(node);
  c.inRange("label_smoothing", 0, 1, /*highInclusive=*/false);
  return c.finish();
}

Status verifyUpdateRunningStats(const OpNodeSignature &node) {
  Checker c(node);
  c.positive("epsilon");
  c.inRange("momentum", 0, 1, /*highInclusive=*/true);
  c.integer("count", 2); // the unbiased variance divides by count - 1
  return c.finish();
}

/// conv2d_backward and linear_backward (their input_grad, bias_grad and
/// bias_grad_acc have the same indices): the bias gradient comes with the
/// bias accumulator; conv2d_backward's input gradient addend needs an
/// input gradient.
template <bool Conv> Status verifyWeightedBackward(const OpNodeSignature &node) {
  namespace operand = op_table::conv2d_backward::operand;
  namespace result = op_table::conv2d_backward::result;
  static_assert(result::input_grad == op_table::linear_backward::result::input_grad &&
                result::bias_grad == op_table::linear_backward::result::bias_grad &&
                operand::bias_grad_acc == op_table::linear_backward::operand::bias_grad_acc);
  Checker c(node);
  c.together("operand \"bias_grad_acc\"", c.hasOperand(operand::bias_grad_acc),
             "result \"bias_grad\"", c.hasResult(result::bias_grad));
  if (Conv) {
    if (c.ok() && c.hasOperand(operand::input_grad_addend) && !c.hasResult(result::input_grad))
      c.fail("has an input gradient addend but no input_grad result");
    c.convolution();
  }
  return c.finish();
}

std::vector<std::string_view> weightedBackwardParts(const OpNodeSignature &node) {
  namespace result = op_table::conv2d_backward::result;
  std::vector<std::string_view> parts = {"weight_grad"};
  if (node.layout.results.has(result::bias_grad))
    parts.push_back("bias_grad");
  if (node.layout.results.has(result::input_grad))
    parts.push_back("input_grad");
  return parts;
}

Status verifyCheckFinite(const OpNodeSignature &node) {
  Checker c(node);
  c.nonEmpty("operand \"inputs\"", c.operands(op_table::check_finite::operand::inputs));
  return c.finish();
}

/// inputs[N] -> results[N] (all_reduce_mean, multi_zero, multi_cast: the
/// lists are the first operand and result of each).
Status verifyOnePerInput(const OpNodeSignature &node) {
  static_assert(op_table::all_reduce_mean::operand::inputs == 0 &&
                op_table::multi_zero::operand::inputs == 0 &&
                op_table::multi_cast::operand::inputs == 0);
  Checker c(node);
  c.nonEmpty("operand \"inputs\"", c.operands(0));
  c.listSize("result \"results\"", c.results(0), c.operands(0), "one per input");
  return c.finish();
}

/// grads[N], scale -> results[N].
Status verifyMultiUnscale(const OpNodeSignature &node) {
  namespace ops = op_table::multi_unscale;
  Checker c(node);
  c.nonEmpty("operand \"grads\"", c.operands(ops::operand::grads));
  c.listSize("result \"results\"", c.results(ops::result::results),
             c.operands(ops::operand::grads), "one per grad");
  return c.finish();
}

Status verifyUpdateLossScale(const OpNodeSignature &node) {
  Checker c(node);
  double growth = c.number("growth");
  if (c.ok() && !(growth > 1))
    c.fail("attribute \"growth\" must be greater than 1, got " + formatNumber(growth));
  double backoff = c.inRange("backoff", 0, 1, /*highInclusive=*/false);
  if (c.ok() && backoff == 0)
    c.fail("attribute \"backoff\" must be positive");
  c.integer("growth_interval", 1);
  return c.finish();
}

/// SGD's momentum in [0, 1), its weight decay, and Nesterov only with
/// momentum; returns the momentum.
double checkSgdAttributes(Checker &c) {
  double momentum = c.inRange("momentum", 0, 1, /*highInclusive=*/false);
  c.nonNegative("weight_decay");
  bool nesterov = c.flag("nesterov");
  if (c.ok() && nesterov && momentum == 0)
    c.fail("Nesterov momentum needs momentum > 0");
  return momentum;
}

/// The momentum buffer and its new value are there exactly when momentum
/// is non-zero.
Status verifySgdUpdate(const OpNodeSignature &node) {
  namespace ops = op_table::sgd_update;
  Checker c(node);
  double momentum = checkSgdAttributes(c);
  if (!c.ok())
    return c.finish();
  const bool buffer = momentum != 0;
  if (c.hasOperand(ops::operand::momentum_buffer) != buffer)
    c.fail(std::string("with momentum ") + formatNumber(momentum) +
           (buffer ? " needs operand \"momentum_buffer\"" : " takes no \"momentum_buffer\""));
  if (c.ok() && c.hasResult(ops::result::new_momentum_buffer) != buffer)
    c.fail(std::string("with momentum ") + formatNumber(momentum) +
           (buffer ? " produces result \"new_momentum_buffer\""
                   : " produces no \"new_momentum_buffer\""));
  return c.finish();
}

/// params[n], grads[n], momentum_buffers[n or 0] -> new_values: the new
/// params, then (with momentum) the new momentum buffers.
Status verifyMultiSgdUpdate(const OpNodeSignature &node) {
  namespace ops = op_table::multi_sgd_update;
  Checker c(node);
  double momentum = checkSgdAttributes(c);
  if (!c.ok())
    return c.finish();
  const bool buffer = momentum != 0;
  const size_t n = c.operands(ops::operand::params);
  c.nonEmpty("operand \"params\"", n);
  c.listSize("operand \"grads\"", c.operands(ops::operand::grads), n, "one per param");
  c.listSize("operand \"momentum_buffers\"", c.operands(ops::operand::momentum_buffers),
             buffer ? n : 0,
             buffer ? "one per param" : "momentum " + formatNumber(momentum) + " keeps none");
  c.listSize("result \"new_values\"", c.results(ops::result::new_values), buffer ? 2 * n : n,
             buffer ? "the new params, then the new momentum buffers" : "the new params");
  return c.finish();
}

void checkAdamWAttributes(Checker &c) {
  c.inRange("beta1", 0, 1, /*highInclusive=*/false);
  c.inRange("beta2", 0, 1, /*highInclusive=*/false);
  c.positive("epsilon");
  c.nonNegative("weight_decay");
}

Status verifyAdamWUpdate(const OpNodeSignature &node) {
  Checker c(node);
  checkAdamWAttributes(c);
  return c.finish();
}

/// params[n], grads[n], exp_avgs[n], exp_avg_sqs[n] -> new_values: new
/// params, exp_avgs, exp_avg_sqs.
Status verifyMultiAdamWUpdate(const OpNodeSignature &node) {
  namespace ops = op_table::multi_adamw_update;
  Checker c(node);
  checkAdamWAttributes(c);
  const size_t n = c.operands(ops::operand::params);
  c.nonEmpty("operand \"params\"", n);
  c.listSize("operand \"grads\"", c.operands(ops::operand::grads), n, "one per param");
  c.listSize("operand \"exp_avgs\"", c.operands(ops::operand::exp_avgs), n, "one per param");
  c.listSize("operand \"exp_avg_sqs\"", c.operands(ops::operand::exp_avg_sqs), n,
             "one per param");
  c.listSize("result \"new_values\"", c.results(ops::result::new_values), 3 * n,
             "the new params, exp_avgs and exp_avg_sqs");
  return c.finish();
}

/// LARS's momentum in [0, 1), weight decay, trust coefficient and epsilon.
void checkLarsAttributes(Checker &c) {
  c.inRange("momentum", 0, 1, /*highInclusive=*/false);
  c.nonNegative("weight_decay");
  c.positive("trust_coefficient");
  c.nonNegative("epsilon");
}

Status verifyLarsUpdate(const OpNodeSignature &node) {
  Checker c(node);
  checkLarsAttributes(c);
  return c.finish();
}

/// params[n], grads[n], momentum_buffers[n] -> new_values: new params, then
/// new momentum buffers.
Status verifyMultiLarsUpdate(const OpNodeSignature &node) {
  namespace ops = op_table::multi_lars_update;
  Checker c(node);
  checkLarsAttributes(c);
  const size_t n = c.operands(ops::operand::params);
  c.nonEmpty("operand \"params\"", n);
  c.listSize("operand \"grads\"", c.operands(ops::operand::grads), n, "one per param");
  c.listSize("operand \"momentum_buffers\"", c.operands(ops::operand::momentum_buffers), n,
             "one per param");
  c.listSize("result \"new_values\"", c.results(ops::result::new_values), 2 * n,
             "the new params, then the new momentum buffers");
  return c.finish();
}

/// averages[n], params[n] -> results[n].
Status verifyMultiEmaUpdate(const OpNodeSignature &node) {
  namespace ops = op_table::multi_ema_update;
  Checker c(node);
  const size_t n = c.operands(ops::operand::averages);
  c.nonEmpty("operand \"averages\"", n);
  c.listSize("operand \"params\"", c.operands(ops::operand::params), n, "one per average");
  c.listSize("result \"results\"", c.results(ops::result::results), n, "one per average");
  c.inRange("decay", 0, 1, /*highInclusive=*/false);
  return c.finish();
}

Status verifyEmaUpdate(const OpNodeSignature &node) {
  Checker c(node);
  c.inRange("decay", 0, 1, /*highInclusive=*/false);
  return c.finish();
}

Status verifyCbrInference(const OpNodeSignature &node) {
  Checker c(node);
  c.convolution();
  c.positive("epsilon");
  c.flag("relu");
  return c.finish();
}

/// A convolution with an optional scale-bias-ReLU prologue (operands
/// `scale` and `scale + 1`, the prologue's bias): both or neither, and
/// the dialect's verifier allows it only on an ungrouped convolution.
void checkPrologue(Checker &c, size_t scale) {
  const bool prologue = c.hasOperand(scale);
  c.together("operand \"prologue_scale\"", prologue, "operand \"prologue_bias\"",
             c.hasOperand(scale + 1));
  int64_t groups = c.integer("groups", 1);
  c.convolution();
  if (c.ok() && prologue && groups != 1)
    c.fail("has a prologue with \"groups\" " + std::to_string(groups) +
           " (the prologue needs groups 1)");
}

Status verifyCbrForward(const OpNodeSignature &node) {
  namespace operand = op_table::cbr_forward::operand;
  static_assert(operand::prologue_bias == operand::prologue_scale + 1);
  Checker c(node);
  checkPrologue(c, operand::prologue_scale);
  c.positive("epsilon");
  c.flag("relu");
  return c.finish();
}

Status verifyConvBnStats(const OpNodeSignature &node) {
  namespace operand = op_table::conv_bn_stats::operand;
  static_assert(operand::prologue_bias == operand::prologue_scale + 1);
  Checker c(node);
  checkPrologue(c, operand::prologue_scale);
  c.positive("epsilon");
  return c.finish();
}

/// At most one ReLU mask operand; the input prologue's scale and bias
/// together; an addend only with an input gradient; prologue_mask only
/// with a recomputed mask.
Status verifyCbrBackward(const OpNodeSignature &node) {
  namespace operand = op_table::cbr_backward::operand;
  namespace result = op_table::cbr_backward::result;
  Checker c(node);
  if (c.hasOperand(operand::relu_output) && c.hasOperand(operand::relu_beta))
    c.fail("has both ReLU masks (relu_output and relu_beta); it takes one");
  c.together("operand \"input_scale\"", c.hasOperand(operand::input_scale),
             "operand \"input_bias\"", c.hasOperand(operand::input_bias));
  if (c.ok() && c.hasOperand(operand::input_grad_addend) && !c.hasResult(result::input_grad))
    c.fail("has an input gradient addend but no input_grad result");
  if (c.flag("prologue_mask") && cbrBackwardReluMask(node.layout) != ReluMask::recomputed)
    c.fail("has prologue_mask without relu_recompute");
  c.convolution();
  return c.finish();
}

/// A normalizing pad (uint8 images) has both mean and std.
Status verifyPadChannels(const OpNodeSignature &node) {
  namespace operand = op_table::pad_channels::operand;
  Checker c(node);
  c.together("operand \"mean\"", c.hasOperand(operand::mean), "operand \"std\"",
             c.hasOperand(operand::std));
  return c.finish();
}

std::vector<std::string_view> cbrBackwardParts(const OpNodeSignature &node) {
  std::vector<std::string_view> parts = {"bn_grad", "weight_grad"};
  if (node.layout.results.has(op_table::cbr_backward::result::input_grad))
    parts.push_back("input_grad");
  return parts;
}

/// What an op's nodes need beyond the op table's checks. Ops not listed
/// verify by the table alone (readNamedValues and checkAttributes): the
/// elementwise ops without attributes, linear, flatten, ..., and a new op
/// until it needs a rule.
struct Rules {
  OpKind kind;
  Status (*verify)(const OpNodeSignature &node);
  std::vector<std::string_view> (*forkParts)(const OpNodeSignature &node) = nullptr;
};

constexpr Rules kRules[] = {
    // RNOps.td
    {OpKind::conv2d, verifyConv2d},
    {OpKind::batch_norm, verifyBatchNorm},
    {OpKind::hardtanh, verifyHardtanh},
    {OpKind::max_pool2d, verifyPool},
    {OpKind::avg_pool2d, verifyPool},
    {OpKind::softmax_cross_entropy, verifySoftmaxCrossEntropy},
    // RNTrainingOps.td
    {OpKind::pad_channels, verifyPadChannels},
    {OpKind::batch_norm_train, verifyEpsilon},
    {OpKind::batch_norm_inference, verifyEpsilon},
    {OpKind::update_running_stats, verifyUpdateRunningStats},
    {OpKind::dropout_train, verifyRandomOp</*PMayBeOne=*/false>},
    {OpKind::stochastic_depth_train, verifyRandomOp</*PMayBeOne=*/true>},
    {OpKind::hardtanh_backward, verifyHardtanh},
    {OpKind::conv2d_backward, verifyWeightedBackward<true>, weightedBackwardParts},
    {OpKind::linear_backward, verifyWeightedBackward<false>, weightedBackwardParts},
    {OpKind::max_pool2d_backward, verifyPool},
    {OpKind::avg_pool2d_backward, verifyPool},
    {OpKind::softmax_cross_entropy_backward, verifySoftmaxCrossEntropy},
    {OpKind::multi_zero, verifyOnePerInput},
    {OpKind::multi_cast, verifyOnePerInput},
    {OpKind::check_finite, verifyCheckFinite},
    {OpKind::multi_unscale, verifyMultiUnscale},
    {OpKind::update_loss_scale, verifyUpdateLossScale},
    {OpKind::all_reduce_mean, verifyOnePerInput},
    {OpKind::sgd_update, verifySgdUpdate},
    {OpKind::multi_sgd_update, verifyMultiSgdUpdate},
    {OpKind::adamw_update, verifyAdamWUpdate},
    {OpKind::multi_adamw_update, verifyMultiAdamWUpdate},
    {OpKind::lars_update, verifyLarsUpdate},
    {OpKind::multi_lars_update, verifyMultiLarsUpdate},
    {OpKind::ema_update, verifyEmaUpdate},
    {OpKind::multi_ema_update, verifyMultiEmaUpdate},
    // RNFusedOps.td
    {OpKind::cbr_forward, verifyCbrForward},
    {OpKind::cbr_backward, verifyCbrBackward, cbrBackwardParts},
    {OpKind::cbr_inference, verifyCbrInference},
    {OpKind::bn_add_relu, verifyEpsilon},
    {OpKind::bn_add_relu_inference, verifyEpsilon},
    {OpKind::conv_bn_stats, verifyConvBnStats},
};

constexpr bool eachOpOnce(const Rules (&rules)[std::size(kRules)]) {
  for (size_t i = 0; i < std::size(kRules); ++i)
    for (size_t j = 0; j < i; ++j)
      if (rules[i].kind == rules[j].kind)
        return false;
  return true;
}
static_assert(eachOpOnce(kRules), "an op has two entries in kRules");

std::vector<OpInfo> buildOps() {
  std::vector<OpInfo> ops;
  for (const op_table::Op &op : op_table::kOps)
    ops.push_back(OpInfo{op.name, op.kind, verifyTableOnly, nullptr, &op});
  for (const Rules &rules : kRules) {
    OpInfo &op = ops[static_cast<size_t>(rules.kind)];
    op.verify = rules.verify;
    op.forkParts = rules.forkParts;
  }
  return ops;
}

/// What a JSON value of `kind` is, for messages.
const char *describeKind(op_table::AttrKind kind) {
  switch (kind) {
  case op_table::AttrKind::flag:
  case op_table::AttrKind::boolean:
    return "a boolean";
  case op_table::AttrKind::integer:
    return "an integer";
  case op_table::AttrKind::real:
    return "a number";
  case op_table::AttrKind::integers:
    return "an array of integers";
  case op_table::AttrKind::enumeration:
    return "an enum case (its name or value)";
  case op_table::AttrKind::string:
  case op_table::AttrKind::symbol:
  case op_table::AttrKind::other:
    return "a string";
  }
  return "a value";
}

bool hasKind(const json &value, op_table::AttrKind kind) {
  switch (kind) {
  case op_table::AttrKind::flag:
  case op_table::AttrKind::boolean:
    return value.is_boolean();
  case op_table::AttrKind::integer:
    return asInt64(value).has_value();
  case op_table::AttrKind::real:
    return value.is_number();
  case op_table::AttrKind::integers:
    if (!value.is_array())
      return false;
    for (const json &element : value)
      if (!asInt64(element))
        return false;
    return true;
  case op_table::AttrKind::enumeration:
    return value.is_string() || asInt64(value).has_value();
  case op_table::AttrKind::string:
  case op_table::AttrKind::symbol:
  case op_table::AttrKind::other:
    return value.is_string();
  }
  return false;
}

} // namespace

Status checkAttributes(const op_table::Op &op, const json &attributes) {
  for (size_t i = 0; i < op.numAttributes; ++i) {
    const op_table::Attr &attr = op.attributes[i];
    const std::string name = "attribute \"" + std::string(attr.name) + "\"";
    auto it = attributes.find(attr.name);
    if (it == attributes.end()) {
      if (attr.required)
        return Error(name + " is missing (" + describeKind(attr.kind) + ")");
      continue;
    }
    if (!hasKind(*it, attr.kind))
      return Error(name + " must be " + describeKind(attr.kind) + ", got " +
                   (it->is_number() || it->is_boolean() ? std::string(it->type_name()) + " " +
                                                              it->dump()
                                                        : std::string(it->type_name())));
  }
  return Status::success();
}

const std::vector<OpInfo> &allOps() {
  static const std::vector<OpInfo> ops = buildOps();
  return ops;
}

const OpInfo &opInfo(OpKind kind) { return allOps()[static_cast<size_t>(kind)]; }

const OpInfo *findOp(std::string_view name) {
  std::optional<OpKind> kind = opKindOf(name);
  return kind ? &opInfo(*kind) : nullptr;
}

std::vector<std::string_view>
opsWithout(const std::function<bool(std::string_view op)> &implemented) {
  std::vector<std::string_view> missing;
  for (const op_table::Op &op : op_table::kOps)
    if (!implemented(op.name))
      missing.push_back(op.name);
  return missing;
}

} // namespace rn
