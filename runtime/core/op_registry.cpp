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
#include <string>
#include <unordered_map>

namespace rn {

using json = nlohmann::json;

namespace {

std::string formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string plural(size_t count, const char *noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
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

bool hasInputGradAddend(const json &attributes) {
  auto it = attributes.find("operandSegmentSizes");
  if (it == attributes.end() || !it->is_array() || it->empty())
    return false;
  const json &last = it->back();
  return last.is_number_integer() && last.get<int64_t>() == 1;
}

ReluMask cbrBackwardReluMask(const json &attributes, size_t operands) {
  auto it = attributes.find("operandSegmentSizes");
  auto countAt = [&](size_t i) {
    const json &entry = (*it)[i];
    return entry.is_number_integer() ? entry.get<int64_t>() : int64_t(0);
  };
  if (it != attributes.end() && it->is_array() && it->size() >= 12) {
    if (countAt(10) == 1)
      return ReluMask::output;
    if (it->size() >= 13 && countAt(11) == 1)
      return ReluMask::recomputed;
    return ReluMask::none;
  }
  return operands - size_t(hasInputGradAddend(attributes)) == 11 ? ReluMask::output
                                                                 : ReluMask::none;
}

bool cbrBackwardPrologueMask(const json &attributes) { return isSet(attributes, "prologue_mask"); }

std::optional<size_t> cbrBackwardInputPrologue(const json &attributes) {
  auto it = attributes.find("operandSegmentSizes");
  if (it == attributes.end() || !it->is_array() || it->size() != 15)
    return std::nullopt;
  auto countAt = [&](size_t i) {
    const json &entry = (*it)[i];
    return entry.is_number_integer() ? entry.get<int64_t>() : int64_t(0);
  };
  if (countAt(12) != 1)
    return std::nullopt;
  return size_t(10 + countAt(10) + countAt(11));
}

std::optional<size_t> convPrologue(std::string_view op, size_t operands) {
  if (op == "cbr_forward" && operands == 6)
    return 4;
  if (op == "conv_bn_stats" && operands == 4)
    return 2;
  return std::nullopt;
}

namespace {

/// Collects the first problem of one node.
class Checker {
public:
  explicit Checker(const OpNodeSignature &node) : node_(node) {}

  void operands(size_t min, size_t max) {
    size_t got = node_.operands;
    if (got >= min && got <= max)
      return;
    if (min == max)
      fail("takes " + plural(min, "operand") + ", got " + std::to_string(got));
    else if (max == std::numeric_limits<size_t>::max())
      fail("takes at least " + plural(min, "operand") + ", got " +
           std::to_string(got));
    else
      fail("takes " + std::to_string(min) + " to " + std::to_string(max) +
           " operands, got " + std::to_string(got));
  }
  void operands(size_t count) { operands(count, count); }

  /// `what` lists the expected results when their number depends on the
  /// node ("input_grad, filter_grad").
  void results(size_t count, const std::string &what = {}) {
    if (node_.results != count)
      fail("produces " + plural(count, "result") +
           (what.empty() ? "" : " (" + what + ")") + ", got " +
           std::to_string(node_.results));
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

/// Ops without attributes: `operands` in, `results` out.
template <size_t Operands, size_t Results>
Status verifyPlain(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(Operands);
  c.results(Results);
  return c.finish();
}

Status verifyConv2d(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(2, 3); // input, filter, optional bias
  c.results(1);
  c.convolution();
  return c.finish();
}

Status verifyLinear(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(2, 3); // input, weight, optional bias
  c.results(1);
  return c.finish();
}

Status verifyBatchNorm(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(5);
  c.results(1);
  c.positive("epsilon");
  c.inRange("momentum", 0, 1, /*highInclusive=*/true);
  return c.finish();
}

template <size_t Operands, size_t Results>
Status verifyEpsilonOnly(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(Operands);
  c.results(Results);
  c.positive("epsilon");
  return c.finish();
}

/// input and the step (i32, on the device); the random stream is
/// step * count + index (RNTrainingOps.td), so index must be below count.
Status verifyDropoutTrain(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(2);
  c.results(2); // result, mask
  c.inRange("p", 0, 1, /*highInclusive=*/false);
  int64_t count = c.integer("count", 1);
  int64_t index = c.integer("index", 0);
  if (c.ok() && index >= count)
    c.fail("attribute \"index\" must be below \"count\" (" + std::to_string(count) +
           "), got " + std::to_string(index));
  return c.finish();
}

template <size_t Operands> Status verifyPool(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(Operands);
  c.results(1);
  c.pooling();
  return c.finish();
}

/// logits, labels and, for the backward op, an optional loss scale.
template <size_t MaxOperands>
Status verifySoftmaxCrossEntropy(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(2, MaxOperands);
  c.results(1);
  c.inRange("label_smoothing", 0, 1, /*highInclusive=*/false);
  return c.finish();
}

Status verifyUpdateRunningStats(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(4);
  c.results(2);
  c.positive("epsilon");
  c.inRange("momentum", 0, 1, /*highInclusive=*/true);
  c.integer("count", 2); // the unbiased variance divides by count - 1
  return c.finish();
}

/// conv2d_backward and linear_backward: output_grad, input, weight,
/// weight_grad_acc and an optional bias_grad_acc; results [dX] dW [dB].
template <bool Conv> Status verifyWeightedBackward(const OpNodeSignature &node) {
  Checker c(node);
  const size_t addend = Conv && hasInputGradAddend(node.attributes) ? 1 : 0;
  c.operands(4 + addend, 5 + addend);
  bool inputGrad = c.flag("input_grad");
  if (addend && !inputGrad)
    c.fail("has an input gradient addend but no input_grad");
  bool bias = node.operands - addend == 5;
  std::string what = inputGrad ? "input_grad, " : "";
  what += Conv ? "filter_grad" : "weight_grad";
  if (bias)
    what += ", bias_grad";
  c.results(size_t(inputGrad) + 1 + size_t(bias), what);
  if (Conv)
    c.convolution();
  return c.finish();
}

std::vector<std::string_view> weightedBackwardParts(const OpNodeSignature &node) {
  std::vector<std::string_view> parts = {"weight_grad"};
  if (node.operands - (hasInputGradAddend(node.attributes) ? 1 : 0) == 5)
    parts.push_back("bias_grad");
  if (isSet(node.attributes, "input_grad"))
    parts.push_back("input_grad");
  return parts;
}

Status verifyCheckFinite(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(1, std::numeric_limits<size_t>::max());
  c.results(1);
  return c.finish();
}

/// inputs[N] -> N results, one per input (all_reduce_mean, multi_zero,
/// multi_cast).
Status verifyOnePerInput(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(1, std::numeric_limits<size_t>::max());
  c.results(node.operands, "one per input");
  return c.finish();
}

/// grads[N], scale -> the N unscaled grads.
Status verifyMultiUnscale(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(2, std::numeric_limits<size_t>::max());
  if (c.ok())
    c.results(node.operands - 1, "one per grad");
  return c.finish();
}

Status verifyUpdateLossScale(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(3);
  c.results(2);
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

/// param, grad, [momentum_buffer], lr, [skip_if]. The buffer is present
/// exactly when momentum is non-zero, which settles the ambiguous count.
Status verifySgdUpdate(const OpNodeSignature &node) {
  Checker c(node);
  double momentum = checkSgdAttributes(c);
  if (!c.ok())
    return c.finish();
  bool buffer = momentum != 0;
  size_t required = buffer ? 4 : 3;
  if (node.operands != required && node.operands != required + 1)
    c.fail(std::string("with momentum ") + formatNumber(momentum) +
           " takes param, grad, " + (buffer ? "momentum_buffer, " : "") +
           "lr and an optional skip_if (" + std::to_string(required) + " or " +
           std::to_string(required + 1) + " operands), got " +
           std::to_string(node.operands));
  c.results(buffer ? 2 : 1, buffer ? "new_param, new_momentum_buffer" : "new_param");
  // MLIR's segment sizes, if the exporter kept them, must agree.
  auto segments = node.attributes.find("operandSegmentSizes");
  if (c.ok() && segments != node.attributes.end()) {
    bool skip = node.operands == required + 1;
    json expected = {1, 1, int(buffer), 1, int(skip)};
    if (*segments != expected)
      c.fail("attribute \"operandSegmentSizes\" disagrees with the operands "
             "(expected [1, 1, " + std::to_string(int(buffer)) + ", 1, " +
             std::to_string(int(skip)) + "])");
  }
  return c.finish();
}

/// params[N], grads[N], [momentum_buffers[N]], lr, [skip_if] -> new params
/// [N], [new momentum buffers [N]]: the group size comes from the results
/// (the buffers are present exactly when momentum is non-zero).
Status verifyMultiSgdUpdate(const OpNodeSignature &node) {
  Checker c(node);
  double momentum = checkSgdAttributes(c);
  if (!c.ok())
    return c.finish();
  const bool buffer = momentum != 0;
  const size_t perTensor = buffer ? 2 : 1;
  if (c.ok() && (node.results == 0 || node.results % perTensor != 0))
    c.fail(std::string("produces ") + (buffer ? "two results per tensor (new params, then new "
                                               "momentum buffers)"
                                             : "one result per tensor (the new params)") +
           ", got " + std::to_string(node.results));
  const size_t count = node.results / perTensor;
  const size_t required = count * (buffer ? 3 : 2) + 1;
  if (c.ok() && node.operands != required && node.operands != required + 1)
    c.fail("with " + plural(count, "tensor") + " and momentum " + formatNumber(momentum) +
           " takes params, grads, " + (buffer ? "momentum_buffers, " : "") +
           "lr and an optional skip_if (" + std::to_string(required) + " or " +
           std::to_string(required + 1) + " operands), got " + std::to_string(node.operands));
  auto segments = node.attributes.find("operandSegmentSizes");
  if (c.ok() && segments != node.attributes.end()) {
    bool skip = node.operands == required + 1;
    int n = int(count);
    json expected = {n, n, buffer ? n : 0, 1, int(skip)};
    if (*segments != expected)
      c.fail("attribute \"operandSegmentSizes\" disagrees with the operands (expected " +
             expected.dump() + ")");
  }
  return c.finish();
}

Status verifyAdamWUpdate(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(6, 7); // param, grad, exp_avg, exp_avg_sq, lr, step, [skip_if]
  c.results(3);
  c.inRange("beta1", 0, 1, /*highInclusive=*/false);
  c.inRange("beta2", 0, 1, /*highInclusive=*/false);
  c.positive("epsilon");
  c.nonNegative("weight_decay");
  return c.finish();
}

/// params[n], grads[n], exp_avgs[n], exp_avg_sqs[n], lr, step, [skip_if] ->
/// new params[n], new exp_avgs[n], new exp_avg_sqs[n].
Status verifyMultiAdamWUpdate(const OpNodeSignature &node) {
  Checker c(node);
  c.inRange("beta1", 0, 1, /*highInclusive=*/false);
  c.inRange("beta2", 0, 1, /*highInclusive=*/false);
  c.positive("epsilon");
  c.nonNegative("weight_decay");
  if (c.ok() && (node.results == 0 || node.results % 3 != 0))
    c.fail("produces three results per tensor (new params, exp_avgs, exp_avg_sqs), got " +
           std::to_string(node.results));
  const size_t count = node.results / 3;
  const size_t required = 4 * count + 2;
  if (c.ok() && node.operands != required && node.operands != required + 1)
    c.fail("with " + plural(count, "tensor") +
           " takes params, grads, exp_avgs, exp_avg_sqs, lr, step and an optional skip_if (" +
           std::to_string(required) + " or " + std::to_string(required + 1) +
           " operands), got " + std::to_string(node.operands));
  auto segments = node.attributes.find("operandSegmentSizes");
  if (c.ok() && segments != node.attributes.end()) {
    int n = int(count);
    json expected = {n, n, n, n, 1, 1, int(node.operands == required + 1)};
    if (*segments != expected)
      c.fail("attribute \"operandSegmentSizes\" disagrees with the operands (expected " +
             expected.dump() + ")");
  }
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
  c.operands(4, 5); // param, grad, momentum_buffer, lr, [skip_if]
  c.results(2);
  checkLarsAttributes(c);
  return c.finish();
}

/// params[n], grads[n], momentum_buffers[n], lr, [skip_if] -> new params[n],
/// new momentum buffers[n].
Status verifyMultiLarsUpdate(const OpNodeSignature &node) {
  Checker c(node);
  checkLarsAttributes(c);
  if (c.ok() && (node.results == 0 || node.results % 2 != 0))
    c.fail("produces two results per tensor (new params, then new momentum buffers), got " +
           std::to_string(node.results));
  const size_t count = node.results / 2;
  const size_t required = 3 * count + 1;
  if (c.ok() && node.operands != required && node.operands != required + 1)
    c.fail("with " + plural(count, "tensor") +
           " takes params, grads, momentum_buffers, lr and an optional skip_if (" +
           std::to_string(required) + " or " + std::to_string(required + 1) +
           " operands), got " + std::to_string(node.operands));
  auto segments = node.attributes.find("operandSegmentSizes");
  if (c.ok() && segments != node.attributes.end()) {
    int n = int(count);
    json expected = {n, n, n, 1, int(node.operands == required + 1)};
    if (*segments != expected)
      c.fail("attribute \"operandSegmentSizes\" disagrees with the operands (expected " +
             expected.dump() + ")");
  }
  return c.finish();
}

/// averages[N], params[N] -> the N new averages.
Status verifyMultiEmaUpdate(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(2, std::numeric_limits<size_t>::max());
  if (c.ok() && node.operands % 2 != 0)
    c.fail("takes averages and params, one param per average, got " +
           std::to_string(node.operands) + " operands");
  if (c.ok())
    c.results(node.operands / 2, "one per average");
  c.inRange("decay", 0, 1, /*highInclusive=*/false);
  return c.finish();
}

Status verifyEmaUpdate(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(2);
  c.results(1);
  c.inRange("decay", 0, 1, /*highInclusive=*/false);
  return c.finish();
}

/// cbr_forward and cbr_inference: a convolution, a batch norm and an
/// optional ReLU.
template <size_t Operands, size_t Results>
Status verifyCbr(const OpNodeSignature &node) {
  Checker c(node);
  c.operands(Operands);
  c.results(Results);
  c.convolution();
  c.positive("epsilon");
  c.flag("relu");
  return c.finish();
}

/// `fixed` operands, or `fixed + 2` with a scale-bias-ReLU prologue; half
/// a prologue named as such.
void checkPrologueOperands(Checker &c, const OpNodeSignature &node, size_t fixed) {
  c.operands(fixed, fixed + 2);
  if (c.ok() && node.operands == fixed + 1)
    c.fail("has half a prologue (" + std::to_string(fixed + 1) + " operands: expected " +
           std::to_string(fixed) + ", or " + std::to_string(fixed + 2) +
           " with prologue_scale and prologue_bias)");
}

/// A convolution with an optional scale-bias-ReLU prologue (the last two
/// of `fixed + 2` operands): MLIR's segment sizes, if the exporter kept
/// them, must say the same (`fixed` ones, then the prologue's pair).
void checkPrologueSegments(Checker &c, const OpNodeSignature &node, size_t fixed) {
  auto segments = node.attributes.find("operandSegmentSizes");
  if (!c.ok() || segments == node.attributes.end())
    return;
  bool wellFormed = segments->is_array() && segments->size() == fixed + 2;
  int64_t total = 0;
  for (size_t i = 0; wellFormed && i < segments->size(); ++i) {
    const json &entry = (*segments)[i];
    int64_t count = entry.is_number_integer() ? entry.get<int64_t>() : -1;
    wellFormed = count == 1 || (i >= fixed && count == 0);
    total += count;
  }
  if (wellFormed && (*segments)[fixed] != (*segments)[fixed + 1])
    wellFormed = false;
  if (!wellFormed || total != int64_t(node.operands))
    c.fail("attribute \"operandSegmentSizes\" disagrees with the operands (" +
           std::to_string(fixed) + ", then [prologue_scale, prologue_bias])");
}

/// The convolution attributes of an op with an optional prologue
/// (`fixed` operands without it): the dialect's verifier allows the
/// prologue only on an ungrouped convolution.
void checkPrologueConvolution(Checker &c, const OpNodeSignature &node, size_t fixed) {
  int64_t groups = c.integer("groups", 1);
  c.convolution();
  if (c.ok() && node.operands == fixed + 2 && groups != 1)
    c.fail("has a prologue with \"groups\" " + std::to_string(groups) +
           " (the prologue needs groups 1)");
}

/// cbr_forward: input, filter, gamma, beta and an optional prologue pair;
/// result, conv_output, batch_mean, batch_inv_std.
Status verifyCbrForward(const OpNodeSignature &node) {
  Checker c(node);
  checkPrologueOperands(c, node, 4);
  c.results(4);
  checkPrologueSegments(c, node, 4);
  checkPrologueConvolution(c, node, 4);
  c.positive("epsilon");
  c.flag("relu");
  return c.finish();
}

/// conv_bn_stats: input, filter and an optional prologue pair;
/// conv_output, batch_mean, batch_inv_std.
Status verifyConvBnStats(const OpNodeSignature &node) {
  Checker c(node);
  checkPrologueOperands(c, node, 2);
  c.results(3, "conv_output, batch_mean, batch_inv_std");
  checkPrologueSegments(c, node, 2);
  checkPrologueConvolution(c, node, 2);
  c.positive("epsilon");
  return c.finish();
}

/// Ten operands, and the ReLU mask's (relu_output or relu_beta) as an
/// eleventh when the forward op applied the ReLU; results conv_output_grad,
/// [input_grad], filter, gamma and beta gradients.
Status verifyCbrBackward(const OpNodeSignature &node) {
  Checker c(node);
  const size_t addend = hasInputGradAddend(node.attributes) ? 1 : 0;
  const size_t prologue = cbrBackwardInputPrologue(node.attributes) ? 2 : 0;
  c.operands(10 + prologue + addend, 11 + prologue + addend);
  bool inputGrad = c.flag("input_grad");
  if (addend && !inputGrad)
    c.fail("has an input gradient addend but no input_grad");
  c.results(inputGrad ? 5 : 4,
            std::string("conv_output_grad, ") + (inputGrad ? "input_grad, " : "") +
                "filter_grad, gamma_grad, beta_grad");
  // MLIR's segment sizes, if the exporter kept them: ten single operands,
  // the optional ones (relu_output, relu_beta, [input_scale, input_bias,]
  // input_grad_addend) 0 or 1, the input prologue's two alike, summing to
  // the operands (which the count above keeps to one ReLU mask).
  auto segments = node.attributes.find("operandSegmentSizes");
  if (c.ok() && segments != node.attributes.end()) {
    int64_t total = 0;
    bool wellFormed = segments->is_array() &&
                      (segments->size() == 12 || segments->size() == 13 || segments->size() == 15);
    for (size_t i = 0; wellFormed && i < segments->size(); ++i) {
      const json &entry = (*segments)[i];
      int64_t count = entry.is_number_integer() ? entry.get<int64_t>() : -1;
      wellFormed = count == 1 || (i >= 10 && count == 0);
      total += count;
    }
    if (wellFormed && segments->size() == 15 && (*segments)[12] != (*segments)[13])
      wellFormed = false;
    if (!wellFormed || total != int64_t(node.operands))
      c.fail("attribute \"operandSegmentSizes\" disagrees with the operands (ten, "
             "[relu_output], [relu_beta], [input_scale, input_bias], [input_grad_addend])");
  }
  // After the segments, which say where the mask comes from.
  if (c.flag("prologue_mask") &&
      cbrBackwardReluMask(node.attributes, node.operands) != ReluMask::recomputed)
    c.fail("has prologue_mask without relu_recompute");
  c.convolution();
  return c.finish();
}

std::vector<std::string_view> cbrBackwardParts(const OpNodeSignature &node) {
  std::vector<std::string_view> parts = {"bn_grad", "weight_grad"};
  if (isSet(node.attributes, "input_grad"))
    parts.push_back("input_grad");
  return parts;
}

std::vector<OpInfo> buildOps() {
  return {
      // RNOps.td
      {"conv2d", verifyConv2d},
      {"batch_norm", verifyBatchNorm},
      {"relu", verifyPlain<1, 1>},
      {"tanh", verifyPlain<1, 1>},
      {"silu", verifyPlain<1, 1>},
      {"add", verifyPlain<2, 1>},
      // No "dropout": the model-level op never reaches a program
      // (rn-build-training makes it dropout_train, eval_step drops it) and
      // has no step operand to key its mask on the device.
      {"max_pool2d", verifyPool<1>},
      {"avg_pool2d", verifyPool<1>},
      {"global_avg_pool", verifyPlain<1, 1>},
      {"flatten", verifyPlain<1, 1>},
      {"linear", verifyLinear},
      {"softmax_cross_entropy", verifySoftmaxCrossEntropy<2>},
      // RNTrainingOps.td
      {"cast", verifyPlain<1, 1>},
      {"pad_channels", verifyPlain<1, 1>},
      {"reshape", verifyPlain<1, 1>},
      {"batch_norm_train", verifyEpsilonOnly<3, 3>},
      {"batch_norm_inference", verifyEpsilonOnly<5, 1>},
      {"update_running_stats", verifyUpdateRunningStats},
      {"dropout_train", verifyDropoutTrain},
      {"relu_backward", verifyPlain<2, 1>},
      {"tanh_backward", verifyPlain<2, 1>},
      {"silu_backward", verifyPlain<2, 1>},
      {"dropout_backward", verifyPlain<2, 1>},
      {"conv2d_backward", verifyWeightedBackward<true>, weightedBackwardParts},
      {"linear_backward", verifyWeightedBackward<false>, weightedBackwardParts},
      {"batch_norm_backward", verifyPlain<7, 3>},
      {"max_pool2d_backward", verifyPool<2>},
      {"avg_pool2d_backward", verifyPool<1>},
      {"global_avg_pool_backward", verifyPlain<1, 1>},
      {"softmax_cross_entropy_backward", verifySoftmaxCrossEntropy<3>},
      {"zero", verifyPlain<1, 1>},
      {"multi_zero", verifyOnePerInput},
      {"multi_cast", verifyOnePerInput},
      {"check_finite", verifyCheckFinite},
      {"unscale", verifyPlain<2, 1>},
      {"multi_unscale", verifyMultiUnscale},
      {"update_loss_scale", verifyUpdateLossScale},
      {"all_reduce_mean", verifyOnePerInput},
      {"sgd_update", verifySgdUpdate},
      {"multi_sgd_update", verifyMultiSgdUpdate},
      {"adamw_update", verifyAdamWUpdate},
      {"multi_adamw_update", verifyMultiAdamWUpdate},
      {"lars_update", verifyLarsUpdate},
      {"multi_lars_update", verifyMultiLarsUpdate},
      {"ema_update", verifyEmaUpdate},
      {"multi_ema_update", verifyMultiEmaUpdate},
      {"count_correct", verifyPlain<2, 1>},
      // RNFusedOps.td
      {"cbr_forward", verifyCbrForward},
      {"cbr_backward", verifyCbrBackward, cbrBackwardParts},
      {"cbr_inference", verifyCbr<6, 1>},
      {"bn_add_relu", verifyEpsilonOnly<4, 3>},
      {"bn_add_relu_backward", verifyPlain<8, 4>},
      {"bn_add_relu_inference", verifyEpsilonOnly<6, 1>},
      {"conv_bn_stats", verifyConvBnStats},
      {"bn_scale_bias", verifyPlain<4, 2>},
      // RNScheduleOps.td
      {"host_to_device", verifyPlain<1, 1>},
  };
}

} // namespace

const std::vector<OpInfo> &allOps() {
  static const std::vector<OpInfo> ops = buildOps();
  return ops;
}

const OpInfo *findOp(std::string_view name) {
  static const std::unordered_map<std::string_view, const OpInfo *> byName = [] {
    std::unordered_map<std::string_view, const OpInfo *> map;
    for (const OpInfo &op : allOps())
      map.emplace(op.name, &op);
    return map;
  }();
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : it->second;
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
