//===- op_registry_test.cpp - The registry's checks of a node -------------===//
//
// The registry alone (op_registry.h), without a program around the node:
// readNamedValues against the op table, each op's counts and attribute
// ranges, the forms of the fused ops and the parts forking ops split into.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/artifact.h"
#include "runtime/core/op_registry.h"
#include "runtime/core/op_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace rn {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

/// Named operands (results) as a node holds them: each name with the next
/// tensor id, "name[n]" a list of n ids.
json named(const std::vector<const char *> &names) {
  json object = json::object();
  uint64_t id = 0;
  for (std::string name : names) {
    size_t bracket = name.find('[');
    if (bracket == std::string::npos) {
      object[name] = id++;
      continue;
    }
    json list = json::array();
    for (size_t n = std::stoul(name.substr(bracket + 1)); n > 0; --n)
      list.push_back(id++);
    object[name.substr(0, bracket)] = std::move(list);
  }
  return object;
}

/// cbr_backward's ten required operands, then `more`.
json cbrBackwardOperands(const std::vector<const char *> &more) {
  std::vector<const char *> names = {"output_grad",  "input",          "filter",
                                     "conv_output",  "gamma",          "batch_mean",
                                     "batch_inv_std", "filter_grad_acc", "gamma_grad_acc",
                                     "beta_grad_acc"};
  names.insert(names.end(), more.begin(), more.end());
  return named(names);
}

/// The layout of an `op` node with these operands and results, read as the
/// loader reads them, or the first error.
Result<NodeLayout> readLayout(const char *op, const json &operands, const json &results) {
  const OpInfo *info = findOp(op);
  if (!info || !info->table)
    return Error(std::string("no op ") + op);
  std::vector<uint64_t> ids;
  Result<ValueLayout> operandLayout =
      readNamedValues(*info->table, /*results=*/false, operands, "operand", ids);
  if (!operandLayout)
    return operandLayout.error();
  ids.clear();
  Result<ValueLayout> resultLayout =
      readNamedValues(*info->table, /*results=*/true, results, "result", ids);
  if (!resultLayout)
    return resultLayout.error();
  return NodeLayout{std::move(*operandLayout), std::move(*resultLayout)};
}

/// The layout of a node that reads.
NodeLayout layoutOf(const char *op, const json &operands, const json &results) {
  Result<NodeLayout> layout = readLayout(op, operands, results);
  EXPECT_TRUE(layout.ok()) << op << ": " << layout.error().message();
  return layout.ok() ? *layout : NodeLayout{};
}

/// What the loader says of an `op` node with these operands, results and
/// attributes (the op table's rules, then the registry's verify): its
/// first error, or "" when it passes.
std::string check(const char *op, const json &operands, const json &results,
                  const json &attributes) {
  Result<NodeLayout> layout = readLayout(op, operands, results);
  if (!layout)
    return layout.error().message();
  Status status = findOp(op)->verify({*layout, attributes});
  return status.ok() ? std::string() : status.error().message();
}

/// The parts a forking node that verifies runs as.
std::vector<std::string_view> partsOf(const char *op, const json &operands, const json &results,
                                      const json &attributes) {
  EXPECT_EQ(check(op, operands, results, attributes), "") << op;
  const NodeLayout layout = layoutOf(op, operands, results);
  EXPECT_NE(findOp(op)->forkParts, nullptr) << op;
  if (!findOp(op)->forkParts)
    return {};
  return findOp(op)->forkParts({layout, attributes});
}

/// readNamedValues: named operands become the flat list in op-table order,
/// one segment per ODS operand (a list's in place), and the table's arity
/// rules hold.
TEST(OpRegistry, ReadsNamedValues) {
  namespace backward = op_table::conv2d_backward;
  const op_table::Op &conv2dBackward = *findOp("conv2d_backward")->table;
  // Ids are unsigned, as the loader's JSON parser reads them.
  std::vector<uint64_t> ids;
  Result<ValueLayout> operands = readNamedValues(conv2dBackward, false,
                                                 {{"output_grad", 5u},
                                                  {"input", 1u},
                                                  {"filter", 2u},
                                                  {"filter_grad_acc", 3u},
                                                  {"bias_grad_acc", 4u}},
                                                 "operand", ids);
  ASSERT_TRUE(operands.ok()) << operands.error().message();
  EXPECT_EQ(ids, (std::vector<uint64_t>{5, 1, 2, 3, 4}));
  ASSERT_EQ(operands->segments.size(), 6u);
  EXPECT_TRUE(operands->has(backward::operand::bias_grad_acc));
  EXPECT_EQ(operands->index(backward::operand::bias_grad_acc), 4u);
  EXPECT_EQ(operands->count(backward::operand::filter), 1u);
  EXPECT_FALSE(operands->has(backward::operand::input_grad_addend));
  EXPECT_EQ(operands->count(backward::operand::input_grad_addend), 0u);
  EXPECT_FALSE(operands->has(99));
  EXPECT_EQ(operands->total(), 5u);
  ids.clear();
  Result<ValueLayout> results = readNamedValues(
      conv2dBackward, true, {{"input_grad", 7u}, {"filter_grad", 8u}, {"bias_grad", 9u}}, "result",
      ids);
  ASSERT_TRUE(results.ok()) << results.error().message();
  EXPECT_EQ(ids, (std::vector<uint64_t>{7, 8, 9}));
  EXPECT_EQ(results->index(backward::result::input_grad), 0u);
  EXPECT_EQ(results->index(backward::result::filter_grad), 1u);
  EXPECT_EQ(results->index(backward::result::bias_grad), 2u);
  ids.clear();
  results = readNamedValues(conv2dBackward, true, {{"filter_grad", 8u}}, "result", ids);
  ASSERT_TRUE(results.ok()) << results.error().message();
  EXPECT_FALSE(results->has(backward::result::input_grad));
  EXPECT_EQ(results->index(backward::result::filter_grad), 0u);
  EXPECT_FALSE(results->has(backward::result::bias_grad));

  // Lists: their ids in place, absent or empty ones of no ids.
  namespace multi = op_table::multi_sgd_update;
  ids.clear();
  operands = readNamedValues(*findOp("multi_sgd_update")->table, false,
                             {{"params", {4u, 5u, 6u}}, {"grads", {7u, 8u, 9u}}, {"lr", 10u}},
                             "operand", ids);
  ASSERT_TRUE(operands.ok()) << operands.error().message();
  EXPECT_EQ(ids, (std::vector<uint64_t>{4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(operands->index(multi::operand::params), 0u);
  EXPECT_EQ(operands->count(multi::operand::params), 3u);
  EXPECT_EQ(operands->index(multi::operand::grads), 3u);
  EXPECT_EQ(operands->count(multi::operand::grads), 3u);
  EXPECT_FALSE(operands->has(multi::operand::momentum_buffers));
  EXPECT_EQ(operands->index(multi::operand::lr), 6u);
  EXPECT_FALSE(operands->has(multi::operand::skip_if));
  EXPECT_EQ(operands->total(), 7u);
  ids.clear();
  results = readNamedValues(*findOp("multi_sgd_update")->table, true,
                            {{"new_values", json::array()}}, "result", ids);
  ASSERT_TRUE(results.ok()) << results.error().message();
  EXPECT_EQ(results->count(multi::result::new_values), 0u);

  auto error = [](const char *op, bool results, const json &object) {
    std::vector<uint64_t> ids;
    Result<ValueLayout> read = readNamedValues(*findOp(op)->table, results, object,
                                               results ? "result" : "operand", ids);
    return read.ok() ? std::string() : read.error().message();
  };
  EXPECT_EQ(error("conv2d", false, {{"input", 0u}, {"filter", 1u}}), "");
  // An unknown name, a missing required one.
  EXPECT_EQ(error("conv2d", false, {{"input", 0u}, {"filter", 1u}, {"foo", 2u}}),
            "operand \"foo\" is not one of conv2d's operands: input, filter, bias?");
  EXPECT_EQ(error("conv2d", false, {{"input", 0u}}),
            "operand \"filter\" is missing (conv2d's operands: input, filter, bias?)");
  EXPECT_EQ(error("conv2d", true, {{"output", 0u}}),
            "result \"output\" is not one of conv2d's results: result");
  EXPECT_EQ(error("conv2d", true, json::object()),
            "result \"result\" is missing (conv2d's results: result)");
  EXPECT_EQ(error("multi_sgd_update", false,
                  {{"params", json::array({0u})}, {"grads", json::array({1u})}}),
            "operand \"lr\" is missing (multi_sgd_update's operands: params[], grads[], "
            "momentum_buffers[], lr, skip_if?)");
  // An optional one given as an array, a list given as a number.
  EXPECT_EQ(error("conv2d", false, {{"input", 0u}, {"filter", 1u}, {"bias", json::array({2u})}}),
            "operand \"bias\" must be a tensor id (a non-negative integer), got array");
  EXPECT_EQ(error("multi_zero", false, {{"inputs", 3u}}),
            "operand \"inputs\" is a list: it must be an array of tensor ids, got number");
  EXPECT_EQ(error("multi_zero", true, {{"results", nullptr}}),
            "result \"results\" is a list: it must be an array of tensor ids, got null");
  // Ids that are not non-negative integers.
  EXPECT_EQ(error("conv2d", false, {{"input", -1}, {"filter", 1u}}),
            "operand \"input\" must be a tensor id (a non-negative integer), got -1");
  EXPECT_EQ(error("conv2d", false, {{"input", 0u}, {"filter", 1.5}}),
            "operand \"filter\" must be a tensor id (a non-negative integer), got 1.5");
  EXPECT_EQ(error("conv2d", false, {{"input", "0"}, {"filter", 1u}}),
            "operand \"input\" must be a tensor id (a non-negative integer), got string");
  EXPECT_EQ(error("multi_zero", false, {{"inputs", {0u, -2}}}),
            "operand \"inputs\"[1] must be a tensor id (a non-negative integer), got -2");
  // Not an object: format 1's positional array.
  EXPECT_EQ(error("conv2d", false, json::array({0u, 1u})),
            "\"operands\" must be an object from name to tensor id (conv2d's operands: "
            "input, filter, bias?), got array");
}

/// The registry alone: what the op table cannot say (attribute ranges, how
/// the present operands and results go together, the sizes of lists).
TEST(OpRegistry, ChecksCountsAndAttributes) {
  json conv = {{"strides", {1, 1}}, {"padding", {1, 1}}, {"dilation", {1, 1}}, {"groups", 1}};
  const json input = named({"input", "filter"});
  const json result = named({"result"});
  EXPECT_EQ(check("conv2d", input, result, conv), "");
  EXPECT_EQ(check("conv2d", named({"input", "filter", "bias"}), result, conv), "");
  EXPECT_EQ(check("conv2d", named({"input", "filter", "bias", "residual"}), result, conv),
            "operand \"residual\" is not one of conv2d's operands: input, filter, bias?");
  json bad = conv;
  bad["strides"] = {1, 0};
  EXPECT_THAT(check("conv2d", input, result, bad),
              HasSubstr("attribute \"strides\" must be positive, got 0 for width"));
  bad = conv;
  bad["padding"] = {-1, 0};
  EXPECT_THAT(check("conv2d", input, result, bad),
              HasSubstr("must be non-negative, got -1 for height"));
  bad = conv;
  bad["groups"] = 0;
  EXPECT_THAT(check("conv2d", input, result, bad),
              HasSubstr("\"groups\" must be at least 1, got 0"));
  bad = conv;
  bad["dilation"] = {1, 1, 1};
  EXPECT_THAT(check("conv2d", input, result, bad), HasSubstr("must be an array of 2 integers"));
  bad = conv;
  bad["groups"] = ~uint64_t(0);
  EXPECT_THAT(check("conv2d", input, result, bad), HasSubstr("\"groups\" must be an integer"));

  // conv2d_backward: results input_grad?, filter_grad, bias_grad?; the bias
  // gradient comes with its accumulator.
  const json weightOnly = named({"output_grad", "input", "filter", "filter_grad_acc"});
  const json withBias =
      named({"output_grad", "input", "filter", "filter_grad_acc", "bias_grad_acc"});
  const json allGrads = named({"input_grad", "filter_grad", "bias_grad"});
  EXPECT_EQ(check("conv2d_backward", weightOnly, named({"filter_grad"}), conv), "");
  EXPECT_EQ(check("conv2d_backward", withBias, named({"filter_grad", "bias_grad"}), conv), "");
  EXPECT_EQ(check("conv2d_backward", withBias, allGrads, conv), "");
  EXPECT_EQ(check("conv2d_backward", withBias, named({"input_grad", "filter_grad"}), conv),
            "operand \"bias_grad_acc\" is present without result \"bias_grad\"");
  EXPECT_EQ(check("conv2d_backward", weightOnly, named({"filter_grad", "bias_grad"}), conv),
            "result \"bias_grad\" is present without operand \"bias_grad_acc\"");
  EXPECT_EQ(check("conv2d_backward", weightOnly, named({"input_grad"}), conv),
            "result \"filter_grad\" is missing (conv2d_backward's results: input_grad?, "
            "filter_grad, bias_grad?)");
  EXPECT_EQ(partsOf("conv2d_backward", withBias, allGrads, conv),
            (std::vector<std::string_view>{"weight_grad", "bias_grad", "input_grad"}));
  EXPECT_EQ(partsOf("conv2d_backward", weightOnly, named({"filter_grad"}), conv),
            (std::vector<std::string_view>{"weight_grad"}));
  // linear_backward: the input gradient is its optional result (no unit
  // attribute), one id.
  const json linearOperands = named({"output_grad", "input", "weight", "weight_grad_acc"});
  EXPECT_EQ(check("linear_backward", linearOperands, named({"input_grad", "weight_grad"}),
                  json::object()),
            "");
  EXPECT_EQ(partsOf("linear_backward", linearOperands, named({"input_grad", "weight_grad"}),
                    json::object()),
            (std::vector<std::string_view>{"weight_grad", "input_grad"}));
  json listed = named({"input_grad", "weight_grad"});
  listed["input_grad"] = json::array({0});
  EXPECT_EQ(check("linear_backward", linearOperands, listed, json::object()),
            "result \"input_grad\" must be a tensor id (a non-negative integer), got array");
  EXPECT_EQ(check("linear_backward", named({"output_grad", "input", "weight", "weight_grad_acc",
                                            "bias_grad_acc"}),
                  named({"weight_grad"}), json::object()),
            "operand \"bias_grad_acc\" is present without result \"bias_grad\"");

  const json found = named({"found_non_finite"});
  EXPECT_EQ(check("check_finite", named({"inputs[7]"}), found, json::object()), "");
  EXPECT_EQ(check("check_finite", named({"inputs[0]"}), found, json::object()),
            "operand \"inputs\" is empty (it needs at least one tensor)");
  EXPECT_EQ(check("check_finite", json::object(), found, json::object()),
            "operand \"inputs\" is empty (it needs at least one tensor)");

  // sgd_update: the momentum buffer and its new value exactly with momentum.
  json sgd = {{"momentum", 0.0}, {"weight_decay", 0.0}};
  const json plainSgd = named({"param", "grad", "lr"});
  const json buffered = named({"param", "grad", "momentum_buffer", "lr"});
  const json newParam = named({"new_param"});
  const json newBoth = named({"new_param", "new_momentum_buffer"});
  EXPECT_EQ(check("sgd_update", plainSgd, newParam, sgd), "");
  EXPECT_EQ(check("sgd_update", named({"param", "grad", "lr", "skip_if"}), newParam, sgd), "");
  EXPECT_EQ(check("sgd_update", buffered, newBoth, sgd),
            "with momentum 0 takes no \"momentum_buffer\"");
  EXPECT_EQ(check("sgd_update", plainSgd, newBoth, sgd),
            "with momentum 0 produces no \"new_momentum_buffer\"");
  sgd["momentum"] = 0.9;
  EXPECT_EQ(check("sgd_update", buffered, newBoth, sgd), "");
  EXPECT_EQ(check("sgd_update", named({"param", "grad", "momentum_buffer", "lr", "skip_if"}),
                  newBoth, sgd),
            "");
  EXPECT_EQ(check("sgd_update", buffered, newParam, sgd),
            "with momentum 0.9 produces result \"new_momentum_buffer\"");
  EXPECT_EQ(check("sgd_update", plainSgd, newBoth, sgd),
            "with momentum 0.9 needs operand \"momentum_buffer\"");
  EXPECT_THAT(check("sgd_update", plainSgd, newParam,
                    {{"momentum", 0.0}, {"weight_decay", 0.0}, {"nesterov", true}}),
              HasSubstr("Nesterov momentum needs momentum > 0"));

  // multi_sgd_update: params[n], grads[n], momentum_buffers[n] (with
  // momentum), lr, skip_if? -> new_values: the n new params, then the n new
  // buffers.
  json multi = {{"momentum", 0.9}, {"weight_decay", 5e-4}, {"nesterov", true}};
  const json six = named({"new_values[6]"});
  EXPECT_EQ(check("multi_sgd_update",
                  named({"params[3]", "grads[3]", "momentum_buffers[3]", "lr"}), six, multi),
            "");
  EXPECT_EQ(check("multi_sgd_update",
                  named({"params[3]", "grads[3]", "momentum_buffers[3]", "lr", "skip_if"}), six,
                  multi),
            "");
  EXPECT_EQ(check("multi_sgd_update",
                  named({"params[3]", "grads[2]", "momentum_buffers[3]", "lr"}), six, multi),
            "operand \"grads\" has 2 tensors, expected 3 (one per param)");
  EXPECT_EQ(check("multi_sgd_update",
                  named({"params[3]", "grads[3]", "momentum_buffers[2]", "lr"}), six, multi),
            "operand \"momentum_buffers\" has 2 tensors, expected 3 (one per param)");
  EXPECT_EQ(check("multi_sgd_update",
                  named({"params[3]", "grads[3]", "momentum_buffers[3]", "lr"}),
                  named({"new_values[5]"}), multi),
            "result \"new_values\" has 5 tensors, expected 6 (the new params, then the new "
            "momentum buffers)");
  EXPECT_EQ(check("multi_sgd_update",
                  named({"params[0]", "grads[0]", "momentum_buffers[0]", "lr"}),
                  named({"new_values[0]"}), multi),
            "operand \"params\" is empty (it needs at least one tensor)");
  json plain = {{"momentum", 0.0}, {"weight_decay", 0.0}};
  const json two = named({"new_values[2]"});
  EXPECT_EQ(check("multi_sgd_update", named({"params[2]", "grads[2]", "lr"}), two, plain), "");
  EXPECT_EQ(check("multi_sgd_update", named({"params[2]", "grads[2]", "momentum_buffers[0]", "lr"}),
                  two, plain),
            "");
  EXPECT_EQ(check("multi_sgd_update", named({"params[2]", "grads[2]", "momentum_buffers[2]", "lr"}),
                  two, plain),
            "operand \"momentum_buffers\" has 2 tensors, expected 0 (momentum 0 keeps none)");
  EXPECT_EQ(check("multi_sgd_update", named({"params[2]", "grads[2]", "lr"}),
                  named({"new_values[4]"}), plain),
            "result \"new_values\" has 4 tensors, expected 2 (the new params)");
  json number = two;
  number["new_values"] = 7;
  EXPECT_EQ(check("multi_sgd_update", named({"params[2]", "grads[2]", "lr"}), number, plain),
            "result \"new_values\" is a list: it must be an array of tensor ids, got number");
  const json oneParam = named({"params[1]", "grads[1]", "lr"});
  const json one = named({"new_values[1]"});
  EXPECT_THAT(check("multi_sgd_update", oneParam, one,
                    {{"momentum", 0.0}, {"weight_decay", 0.0}, {"nesterov", true}}),
              HasSubstr("Nesterov momentum needs momentum > 0"));
  EXPECT_THAT(check("multi_sgd_update", oneParam, one, {{"momentum", 0.0}, {"weight_decay", -1.0}}),
              HasSubstr("\"weight_decay\" must be non-negative"));

  // multi_adamw_update: params, grads, exp_avgs, exp_avg_sqs (n each), lr,
  // step, skip_if? -> new_values[3n].
  json adam = {{"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 1e-8}, {"weight_decay", 0.01}};
  const json adamResults = named({"new_values[6]"});
  EXPECT_EQ(check("multi_adamw_update",
                  named({"params[2]", "grads[2]", "exp_avgs[2]", "exp_avg_sqs[2]", "lr", "step"}),
                  adamResults, adam),
            "");
  EXPECT_EQ(check("multi_adamw_update",
                  named({"params[2]", "grads[2]", "exp_avgs[2]", "exp_avg_sqs[2]", "lr", "step",
                         "skip_if"}),
                  adamResults, adam),
            "");
  EXPECT_EQ(check("multi_adamw_update",
                  named({"params[2]", "grads[2]", "exp_avgs[2]", "exp_avg_sqs[1]", "lr", "step"}),
                  adamResults, adam),
            "operand \"exp_avg_sqs\" has 1 tensor, expected 2 (one per param)");
  EXPECT_EQ(check("multi_adamw_update",
                  named({"params[2]", "grads[2]", "exp_avgs[2]", "exp_avg_sqs[2]", "lr", "step"}),
                  named({"new_values[5]"}), adam),
            "result \"new_values\" has 5 tensors, expected 6 (the new params, exp_avgs and "
            "exp_avg_sqs)");
  EXPECT_EQ(check("multi_adamw_update",
                  named({"params[2]", "grads[2]", "exp_avgs[2]", "exp_avg_sqs[2]", "lr"}),
                  adamResults, adam),
            "operand \"step\" is missing (multi_adamw_update's operands: params[], grads[], "
            "exp_avgs[], exp_avg_sqs[], lr, step, skip_if?)");
  EXPECT_THAT(check("multi_adamw_update",
                    named({"params[1]", "grads[1]", "exp_avgs[1]", "exp_avg_sqs[1]", "lr", "step"}),
                    named({"new_values[3]"}),
                    {{"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 0.0}, {"weight_decay", 0.0}}),
              HasSubstr("\"epsilon\" must be positive"));

  // multi_lars_update: params, grads, momentum_buffers (n each), lr,
  // skip_if? -> new_values[2n].
  json lars = {{"momentum", 0.9},
               {"weight_decay", 1e-4},
               {"trust_coefficient", 1e-3},
               {"epsilon", 1e-9}};
  const json larsOperands = named({"params[2]", "grads[2]", "momentum_buffers[2]", "lr"});
  const json larsResults = named({"new_values[4]"});
  EXPECT_EQ(check("multi_lars_update", larsOperands, larsResults, lars), "");
  EXPECT_EQ(check("multi_lars_update",
                  named({"params[2]", "grads[2]", "momentum_buffers[2]", "lr", "skip_if"}),
                  larsResults, lars),
            "");
  EXPECT_EQ(check("multi_lars_update",
                  named({"params[2]", "grads[2]", "momentum_buffers[1]", "lr"}), larsResults, lars),
            "operand \"momentum_buffers\" has 1 tensor, expected 2 (one per param)");
  EXPECT_EQ(check("multi_lars_update", larsOperands, named({"new_values[3]"}), lars),
            "result \"new_values\" has 3 tensors, expected 4 (the new params, then the new "
            "momentum buffers)");
  EXPECT_EQ(check("multi_lars_update",
                  named({"params[0]", "grads[0]", "momentum_buffers[0]", "lr"}),
                  named({"new_values[0]"}), lars),
            "operand \"params\" is empty (it needs at least one tensor)");
  const json larsOne = named({"params[1]", "grads[1]", "momentum_buffers[1]", "lr"});
  const json larsOneResults = named({"new_values[2]"});
  lars["trust_coefficient"] = 0.0;
  EXPECT_THAT(check("multi_lars_update", larsOne, larsOneResults, lars),
              HasSubstr("\"trust_coefficient\" must be positive"));
  lars["trust_coefficient"] = 1e-3;
  lars["momentum"] = 1.0;
  EXPECT_THAT(check("multi_lars_update", larsOne, larsOneResults, lars),
              HasSubstr("\"momentum\" must be in [0, 1), got 1"));

  // dropout_train: input and the device step; its stream is step * count + index.
  json dropout = {{"p", 0.5}, {"index", 1}, {"count", 2}};
  const json dropoutOperands = named({"input", "step"});
  const json dropoutResults = named({"result", "mask"});
  EXPECT_EQ(check("dropout_train", dropoutOperands, dropoutResults, dropout), "");
  EXPECT_EQ(check("dropout_train", named({"input"}), dropoutResults, dropout),
            "operand \"step\" is missing (dropout_train's operands: input, step)");
  EXPECT_THAT(check("dropout_train", dropoutOperands, dropoutResults,
                    {{"p", 1.0}, {"index", 0}, {"count", 1}}),
              HasSubstr("\"p\" must be in [0, 1), got 1"));
  EXPECT_THAT(check("dropout_train", dropoutOperands, dropoutResults,
                    {{"p", 0.5}, {"index", 2}, {"count", 2}}),
              HasSubstr("\"index\" must be below \"count\" (2), got 2"));
  EXPECT_THAT(check("dropout_train", dropoutOperands, dropoutResults, {{"p", 0.5}, {"count", 2}}),
              HasSubstr("\"index\" is missing"));
  EXPECT_THAT(check("dropout_train", dropoutOperands, dropoutResults,
                    {{"p", 0.5}, {"index", 0}, {"count", 0}}),
              HasSubstr("\"count\" must be at least 1, got 0"));
  // stochastic_depth_train: keyed as dropout_train, but p = 1 (every sample
  // dropped) is allowed; its backward reads the per-sample mask.
  const json depthResults = named({"result", "mask"});
  EXPECT_EQ(check("stochastic_depth_train", dropoutOperands, depthResults,
                  {{"p", 1.0}, {"index", 0}, {"count", 1}}),
            "");
  EXPECT_THAT(check("stochastic_depth_train", dropoutOperands, depthResults,
                    {{"p", 1.5}, {"index", 0}, {"count", 1}}),
              HasSubstr("\"p\" must be in [0, 1], got 1.5"));
  EXPECT_THAT(check("stochastic_depth_train", dropoutOperands, depthResults,
                    {{"p", 0.5}, {"index", 3}, {"count", 3}}),
              HasSubstr("\"index\" must be below \"count\" (3), got 3"));
  EXPECT_EQ(check("stochastic_depth_train", named({"input"}), depthResults, dropout),
            "operand \"step\" is missing (stochastic_depth_train's operands: input, step)");
  EXPECT_EQ(check("stochastic_depth_backward", named({"output_grad", "mask"}),
                  named({"input_grad"}), json::object()),
            "");
  // hardtanh and its backward: finite bounds, min_val below max_val.
  EXPECT_EQ(check("hardtanh", named({"input"}), result, {{"min_val", 0.0}, {"max_val", 6.0}}),
            "");
  EXPECT_THAT(check("hardtanh", named({"input"}), result, {{"min_val", 6.0}, {"max_val", 6.0}}),
              HasSubstr("attribute \"min_val\" (6) must be below \"max_val\" (6)"));
  EXPECT_THAT(check("hardtanh", named({"input"}), result, {{"min_val", 0.0}}),
              HasSubstr("attribute \"max_val\" is missing"));
  EXPECT_THAT(check("hardtanh_backward", named({"output_grad", "saved"}), named({"input_grad"}),
                    {{"min_val", 1.0}, {"max_val", -1.0}}),
              HasSubstr("attribute \"min_val\" (1) must be below \"max_val\" (-1)"));
  EXPECT_EQ(check("hardtanh_backward", named({"output_grad", "saved"}), named({"input_grad"}),
                  {{"min_val", -1.0}, {"max_val", 1.0}}),
            "");
  // The model-level ops have no step to key their masks: no program may hold them.
  EXPECT_EQ(findOp("dropout"), nullptr);
  EXPECT_EQ(findOp("stochastic_depth"), nullptr);
  EXPECT_THAT(check("batch_norm", named({"input", "weight", "bias", "running_mean", "running_var"}),
                    result, {{"epsilon", 1e-5}, {"momentum", 1.1}}),
              HasSubstr("\"momentum\" must be in [0, 1], got 1.1"));
  EXPECT_THAT(check("batch_norm_train", named({"input", "weight", "bias"}),
                    named({"result", "batch_mean", "batch_inv_std"}), {{"epsilon", 0}}),
              HasSubstr("must be positive"));
  EXPECT_THAT(check("max_pool2d", named({"input"}), result,
                    {{"kernel", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 2}}}),
              HasSubstr("\"padding\" 2 exceeds half the kernel size 2 for width"));
  EXPECT_THAT(check("update_loss_scale", named({"scale", "good_steps", "found_non_finite"}),
                    named({"new_scale", "new_good_steps"}),
                    {{"growth", 2.0}, {"backoff", 0.5}, {"growth_interval", 0}}),
              HasSubstr("\"growth_interval\" must be at least 1"));
  EXPECT_THAT(check("update_running_stats",
                    named({"running_mean", "running_var", "batch_mean", "batch_inv_std"}),
                    named({"new_running_mean", "new_running_var"}),
                    {{"epsilon", 1e-5}, {"momentum", 0.1}, {"count", 1}}),
              HasSubstr("\"count\" must be at least 2"));

  // cbr_backward: ten operands, then a ReLU mask or none, an input
  // prologue, an input gradient addend; its input gradient is an optional
  // result.
  json cbr = conv;
  const json cbrResults =
      named({"conv_output_grad", "input_grad", "filter_grad", "gamma_grad", "beta_grad"});
  const json cbrNoInputGrad = named({"conv_output_grad", "filter_grad", "gamma_grad", "beta_grad"});
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_output"}), cbrResults, cbr), "");
  EXPECT_EQ(partsOf("cbr_backward", cbrBackwardOperands({"relu_output"}), cbrResults, cbr),
            (std::vector<std::string_view>{"bn_grad", "weight_grad", "input_grad"}));
  EXPECT_EQ(partsOf("cbr_backward", cbrBackwardOperands({"relu_output"}), cbrNoInputGrad, cbr),
            (std::vector<std::string_view>{"bn_grad", "weight_grad"}));
  EXPECT_EQ(findOp("relu")->forkParts, nullptr);
  EXPECT_EQ(findOp("rn.relu"), nullptr);
  EXPECT_EQ(check("all_reduce_mean", named({"inputs[2]"}), named({"results[2]"}), json::object()),
            "");
  EXPECT_EQ(check("all_reduce_mean", named({"inputs[2]"}), named({"results[1]"}), json::object()),
            "result \"results\" has 1 tensor, expected 2 (one per input)");
  EXPECT_EQ(check("multi_zero", named({"inputs[3]"}), named({"results[3]"}), json::object()), "");
  EXPECT_EQ(check("multi_zero", named({"inputs[0]"}), named({"results[0]"}), json::object()),
            "operand \"inputs\" is empty (it needs at least one tensor)");
  EXPECT_EQ(check("multi_unscale", named({"grads[2]", "scale"}), named({"results[2]"}),
                  json::object()),
            "");
  EXPECT_EQ(check("multi_unscale", named({"grads[2]", "scale"}), named({"results[3]"}),
                  json::object()),
            "result \"results\" has 3 tensors, expected 2 (one per grad)");
  EXPECT_EQ(check("multi_unscale", named({"grads[0]", "scale"}), named({"results[0]"}),
                  json::object()),
            "operand \"grads\" is empty (it needs at least one tensor)");
  EXPECT_EQ(check("multi_cast", named({"inputs[2]"}), named({"results[2]"}), json::object()), "");
  EXPECT_EQ(check("multi_cast", named({"inputs[2]"}), named({"results[1]"}), json::object()),
            "result \"results\" has 1 tensor, expected 2 (one per input)");
  json decay = {{"decay", 0.5}};
  EXPECT_EQ(check("multi_ema_update", named({"averages[2]", "params[2]"}), named({"results[2]"}),
                  decay),
            "");
  EXPECT_EQ(check("multi_ema_update", named({"averages[2]", "params[1]"}), named({"results[2]"}),
                  decay),
            "operand \"params\" has 1 tensor, expected 2 (one per average)");
  EXPECT_EQ(check("multi_ema_update", named({"averages[2]", "params[2]"}), named({"results[1]"}),
                  decay),
            "result \"results\" has 1 tensor, expected 2 (one per average)");

  // The input gradient's addend (rn-fold-gradient-adds): an operand of its
  // own beside the bias accumulator, and only with an input gradient.
  namespace conv2d_backward = op_table::conv2d_backward;
  const json addend =
      named({"output_grad", "input", "filter", "filter_grad_acc", "input_grad_addend"});
  const json addendAndBias = named(
      {"output_grad", "input", "filter", "filter_grad_acc", "bias_grad_acc", "input_grad_addend"});
  EXPECT_EQ(check("conv2d_backward", addend, named({"input_grad", "filter_grad"}), conv), "");
  EXPECT_EQ(check("conv2d_backward", addend, allGrads, conv),
            "result \"bias_grad\" is present without operand \"bias_grad_acc\"");
  EXPECT_EQ(check("conv2d_backward", addendAndBias, allGrads, conv), "");
  EXPECT_EQ(check("conv2d_backward", addend, named({"filter_grad"}), conv),
            "has an input gradient addend but no input_grad result");
  NodeLayout convLayout = layoutOf("conv2d_backward", addend, named({"input_grad", "filter_grad"}));
  EXPECT_TRUE(convLayout.operands.has(conv2d_backward::operand::input_grad_addend));
  EXPECT_EQ(convLayout.operands.index(conv2d_backward::operand::input_grad_addend), 4u);
  EXPECT_FALSE(convLayout.operands.has(conv2d_backward::operand::bias_grad_acc));
  convLayout = layoutOf("conv2d_backward", addendAndBias, allGrads);
  EXPECT_EQ(convLayout.operands.index(conv2d_backward::operand::bias_grad_acc), 4u);
  EXPECT_EQ(convLayout.operands.index(conv2d_backward::operand::input_grad_addend), 5u);
  EXPECT_FALSE(layoutOf("conv2d_backward", withBias, allGrads)
                   .operands.has(conv2d_backward::operand::input_grad_addend));

  // cbr_backward's ReLU mask: relu_output, or relu_beta (rn-recompute-
  // relu-mask), or none; never both.
  namespace cbr_backward = op_table::cbr_backward;
  const json cbrAddend = cbrBackwardOperands({"relu_output", "input_grad_addend"});
  EXPECT_EQ(check("cbr_backward", cbrAddend, cbrResults, cbr), "");
  NodeLayout cbrLayout = layoutOf("cbr_backward", cbrAddend, cbrResults);
  EXPECT_TRUE(cbrLayout.operands.has(cbr_backward::operand::input_grad_addend));
  EXPECT_EQ(cbrLayout.operands.index(cbr_backward::operand::input_grad_addend), 11u);
  EXPECT_EQ(cbrBackwardReluMask(cbrLayout), ReluMask::output);
  EXPECT_EQ(check("cbr_backward", cbrAddend, cbrNoInputGrad, cbr),
            "has an input gradient addend but no input_grad result");
  const json recomputed = cbrBackwardOperands({"relu_beta", "input_grad_addend"});
  EXPECT_EQ(check("cbr_backward", recomputed, cbrResults, cbr), "");
  cbrLayout = layoutOf("cbr_backward", recomputed, cbrResults);
  EXPECT_EQ(cbrBackwardReluMask(cbrLayout), ReluMask::recomputed);
  EXPECT_TRUE(cbrLayout.operands.has(cbr_backward::operand::input_grad_addend));
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_beta"}), cbrResults, cbr), "");
  cbrLayout = layoutOf("cbr_backward", cbrBackwardOperands({"relu_beta"}), cbrResults);
  EXPECT_EQ(cbrBackwardReluMask(cbrLayout), ReluMask::recomputed);
  EXPECT_FALSE(cbrLayout.operands.has(cbr_backward::operand::input_grad_addend));
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({}), cbrResults, cbr), "");
  EXPECT_EQ(cbrBackwardReluMask(layoutOf("cbr_backward", cbrBackwardOperands({}), cbrResults)),
            ReluMask::none);
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_output", "relu_beta"}), cbrResults,
                  cbr),
            "has both ReLU masks (relu_output and relu_beta); it takes one");
  EXPECT_EQ(check("pad_channels", named({"input"}), result, json::object()), "");
  EXPECT_EQ(check("pad_channels", named({"input", "filter"}), result, json::object()),
            "operand \"filter\" is not one of pad_channels's operands: input, mean?, std?");
  // A normalizing pad (uint8 images) has both vectors.
  EXPECT_EQ(check("pad_channels", named({"input", "mean", "std"}), result, json::object()), "");
  EXPECT_EQ(check("pad_channels", named({"input", "mean"}), result, json::object()),
            "operand \"mean\" is present without operand \"std\"");
  EXPECT_EQ(check("normalize_images", named({"input", "mean", "std"}), result, json::object()),
            "");
}

/// checkAttributes holds a node's attributes to the kinds of the op table:
/// each required one present, each present one of its kind's JSON type.
/// Today's ops' verifiers check their attributes first, so the messages
/// here come from an op entry of every kind, made up for the test.
TEST(OpRegistry, ChecksAttributeKinds) {
  using op_table::AttrKind;
  static constexpr op_table::Attr kAttrs[] = {
      {"flag", AttrKind::flag, false},        {"on", AttrKind::boolean, true},
      {"n", AttrKind::integer, true},         {"x", AttrKind::real, true},
      {"pair", AttrKind::integers, true},     {"label", AttrKind::string, false},
      {"mode", AttrKind::enumeration, false}, {"callee", AttrKind::symbol, false},
  };
  const op_table::Op op{OpKind::relu, "made_up", nullptr, 0,
                        nullptr,      0,         kAttrs,  std::size(kAttrs)};
  const json valid = {{"on", false}, {"n", 3}, {"x", 1}, {"pair", {1, 2}}};
  auto check = [&](const json &attributes) {
    Status status = checkAttributes(op, attributes);
    return status.ok() ? std::string() : status.error().message();
  };
  EXPECT_EQ(check(valid), "");
  json all = valid;
  all.update({{"flag", true}, {"label", "a"}, {"mode", "tanh"}, {"callee", "f"}});
  EXPECT_EQ(check(all), "");
  all["mode"] = 1; // an enum case by its value, as rn-compile writes an I32EnumAttr
  EXPECT_EQ(check(all), "");
  json bad = valid;
  bad.erase("n");
  EXPECT_EQ(check(bad), "attribute \"n\" is missing (an integer)");
  bad = valid;
  bad["x"] = "1";
  EXPECT_EQ(check(bad), "attribute \"x\" must be a number, got string");
  bad = valid;
  bad["n"] = 2.5;
  EXPECT_EQ(check(bad), "attribute \"n\" must be an integer, got number 2.5");
  bad = valid;
  bad["pair"] = {1, "2"};
  EXPECT_EQ(check(bad), "attribute \"pair\" must be an array of integers, got array");
  bad = valid;
  bad["flag"] = 1;
  EXPECT_EQ(check(bad), "attribute \"flag\" must be a boolean, got number 1");
  bad = valid;
  bad["mode"] = true;
  EXPECT_EQ(check(bad), "attribute \"mode\" must be an enum case (its name or value), got "
                        "boolean true");
  // No attributes at all: only the ops with a required one fail.
  for (const OpInfo &info : allOps())
    EXPECT_EQ(checkAttributes(*info.table, json::object()).ok(),
              std::none_of(info.table->attributes,
                           info.table->attributes + info.table->numAttributes,
                           [](const op_table::Attr &a) { return a.required; }))
        << info.name;
}

/// rn-fuse-bn-prologue's forms: cbr_forward and conv_bn_stats with or
/// without a prologue pair, bn_scale_bias, and cbr_backward's input
/// prologue (input_scale and input_bias) and prologue_mask.
TEST(OpRegistry, ChecksBnPrologueForms) {
  const json conv = {{"strides", {1, 1}}, {"padding", {1, 1}}, {"dilation", {1, 1}},
                     {"groups", 1},       {"epsilon", 1e-5}};

  // cbr_forward: input, filter, gamma, beta, and prologue_scale with
  // prologue_bias or neither.
  namespace cbr_forward = op_table::cbr_forward;
  json forward = conv;
  forward["relu"] = true;
  const json forwardResults = named({"result", "conv_output", "batch_mean", "batch_inv_std"});
  const json plain = named({"input", "filter", "gamma", "beta"});
  const json prologue =
      named({"input", "filter", "gamma", "beta", "prologue_scale", "prologue_bias"});
  EXPECT_EQ(check("cbr_forward", plain, forwardResults, forward), "");
  EXPECT_EQ(check("cbr_forward", prologue, forwardResults, forward), "");
  EXPECT_EQ(check("cbr_forward", named({"input", "filter", "gamma", "beta", "prologue_scale"}),
                  forwardResults, forward),
            "operand \"prologue_scale\" is present without operand \"prologue_bias\"");
  EXPECT_EQ(check("cbr_forward", named({"input", "filter", "gamma", "beta", "prologue_bias"}),
                  forwardResults, forward),
            "operand \"prologue_bias\" is present without operand \"prologue_scale\"");
  json listed = prologue;
  listed["prologue_scale"] = json::array({4, 5});
  EXPECT_EQ(check("cbr_forward", listed, forwardResults, forward),
            "operand \"prologue_scale\" must be a tensor id (a non-negative integer), got array");
  EXPECT_EQ(check("cbr_forward", prologue, named({"result", "conv_output", "batch_mean"}), forward),
            "result \"batch_inv_std\" is missing (cbr_forward's results: result, conv_output, "
            "batch_mean, batch_inv_std)");
  // Where the prologue is in the flat list.
  NodeLayout layout = layoutOf("cbr_forward", prologue, forwardResults);
  EXPECT_TRUE(layout.operands.has(cbr_forward::operand::prologue_scale));
  EXPECT_EQ(layout.operands.index(cbr_forward::operand::prologue_scale), 4u);
  EXPECT_EQ(layout.operands.index(cbr_forward::operand::prologue_bias), 5u);
  EXPECT_FALSE(layoutOf("cbr_forward", plain, forwardResults)
                   .operands.has(cbr_forward::operand::prologue_scale));
  // The prologue needs an ungrouped convolution (the dialect's verifier).
  forward["groups"] = 2;
  EXPECT_EQ(check("cbr_forward", plain, forwardResults, forward), "");
  EXPECT_EQ(check("cbr_forward", prologue, forwardResults, forward),
            "has a prologue with \"groups\" 2 (the prologue needs groups 1)");

  // conv_bn_stats: input, filter, and the prologue or not.
  namespace conv_bn_stats = op_table::conv_bn_stats;
  const json statsResults = named({"conv_output", "batch_mean", "batch_inv_std"});
  const json statsPlain = named({"input", "filter"});
  const json statsPrologue = named({"input", "filter", "prologue_scale", "prologue_bias"});
  EXPECT_EQ(check("conv_bn_stats", statsPlain, statsResults, conv), "");
  EXPECT_EQ(check("conv_bn_stats", statsPrologue, statsResults, conv), "");
  EXPECT_EQ(check("conv_bn_stats", named({"input", "filter", "prologue_scale"}), statsResults,
                  conv),
            "operand \"prologue_scale\" is present without operand \"prologue_bias\"");
  EXPECT_EQ(check("conv_bn_stats", statsPrologue,
                  named({"conv_output", "batch_mean", "batch_inv_std", "result"}), conv),
            "result \"result\" is not one of conv_bn_stats's results: conv_output, "
            "batch_mean, batch_inv_std");
  layout = layoutOf("conv_bn_stats", statsPrologue, statsResults);
  EXPECT_EQ(layout.operands.index(conv_bn_stats::operand::prologue_scale), 2u);
  EXPECT_EQ(layout.operands.index(conv_bn_stats::operand::prologue_bias), 3u);
  EXPECT_FALSE(layoutOf("conv_bn_stats", statsPlain, statsResults)
                   .operands.has(conv_bn_stats::operand::prologue_scale));
  json stats = conv;
  stats.erase("epsilon");
  EXPECT_THAT(check("conv_bn_stats", statsPlain, statsResults, stats),
              HasSubstr("\"epsilon\" is missing"));
  stats = conv;
  stats["groups"] = 4;
  EXPECT_EQ(check("conv_bn_stats", statsPlain, statsResults, stats), "");
  EXPECT_THAT(check("conv_bn_stats", statsPrologue, statsResults, stats),
              HasSubstr("the prologue needs groups 1"));

  // bn_scale_bias: batch_mean, batch_inv_std, gamma, beta -> scale, bias.
  const json scaleBiasOperands = named({"batch_mean", "batch_inv_std", "gamma", "beta"});
  EXPECT_EQ(check("bn_scale_bias", scaleBiasOperands, named({"scale", "bias"}), json::object()),
            "");
  EXPECT_EQ(check("bn_scale_bias", named({"batch_mean", "batch_inv_std", "gamma"}),
                  named({"scale", "bias"}), json::object()),
            "operand \"beta\" is missing (bn_scale_bias's operands: batch_mean, "
            "batch_inv_std, gamma, beta)");
  EXPECT_EQ(check("bn_scale_bias", scaleBiasOperands, named({"scale"}), json::object()),
            "result \"bias\" is missing (bn_scale_bias's results: scale, bias)");

  // cbr_backward's input prologue (input_scale, input_bias) after its ReLU
  // mask, before the addend.
  namespace cbr_backward = op_table::cbr_backward;
  json backward = conv;
  backward.erase("epsilon");
  const json backwardResults =
      named({"conv_output_grad", "input_grad", "filter_grad", "gamma_grad", "beta_grad"});
  const json recomputed = cbrBackwardOperands({"relu_beta", "input_scale", "input_bias"});
  EXPECT_EQ(check("cbr_backward", recomputed, backwardResults, backward), "");
  layout = layoutOf("cbr_backward", recomputed, backwardResults);
  EXPECT_TRUE(layout.operands.has(cbr_backward::operand::input_scale));
  EXPECT_EQ(layout.operands.index(cbr_backward::operand::input_scale), 11u);
  EXPECT_EQ(layout.operands.index(cbr_backward::operand::input_bias), 12u);
  EXPECT_EQ(cbrBackwardReluMask(layout), ReluMask::recomputed);
  EXPECT_FALSE(layout.operands.has(cbr_backward::operand::input_grad_addend));
  EXPECT_FALSE(cbrBackwardPrologueMask(backward));
  // With the mask recomputed in the prologue's rounding.
  backward["prologue_mask"] = true;
  EXPECT_EQ(check("cbr_backward", recomputed, backwardResults, backward), "");
  EXPECT_TRUE(cbrBackwardPrologueMask(backward));
  EXPECT_EQ(partsOf("cbr_backward", recomputed, backwardResults, backward),
            (std::vector<std::string_view>{"bn_grad", "weight_grad", "input_grad"}));
  backward.erase("prologue_mask");
  // With relu_output and an addend: input_scale is operand 11, the addend
  // the last.
  const json full =
      cbrBackwardOperands({"relu_output", "input_scale", "input_bias", "input_grad_addend"});
  EXPECT_EQ(check("cbr_backward", full, backwardResults, backward), "");
  layout = layoutOf("cbr_backward", full, backwardResults);
  EXPECT_EQ(layout.operands.index(cbr_backward::operand::input_scale), 11u);
  EXPECT_EQ(layout.operands.index(cbr_backward::operand::input_grad_addend), 13u);
  EXPECT_EQ(layout.operands.total(), 14u);
  EXPECT_EQ(cbrBackwardReluMask(layout), ReluMask::output);
  EXPECT_TRUE(layout.operands.has(cbr_backward::operand::input_grad_addend));
  // No ReLU: input_scale is operand 10.
  const json noRelu = cbrBackwardOperands({"input_scale", "input_bias"});
  EXPECT_EQ(check("cbr_backward", noRelu, backwardResults, backward), "");
  layout = layoutOf("cbr_backward", noRelu, backwardResults);
  EXPECT_EQ(layout.operands.index(cbr_backward::operand::input_scale), 10u);
  EXPECT_EQ(cbrBackwardReluMask(layout), ReluMask::none);
  // No input prologue.
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_beta"}), backwardResults, backward),
            "");
  EXPECT_FALSE(layoutOf("cbr_backward", cbrBackwardOperands({"relu_beta"}), backwardResults)
                   .operands.has(cbr_backward::operand::input_scale));
  // Half an input prologue.
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_beta", "input_scale"}),
                  backwardResults, backward),
            "operand \"input_scale\" is present without operand \"input_bias\"");
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_beta", "input_bias"}),
                  backwardResults, backward),
            "operand \"input_bias\" is present without operand \"input_scale\"");
  // prologue_mask only with relu_recompute (relu_beta).
  backward["prologue_mask"] = true;
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_output", "input_scale", "input_bias"}),
                  backwardResults, backward),
            "has prologue_mask without relu_recompute");
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({}), backwardResults, backward),
            "has prologue_mask without relu_recompute");
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_beta"}), backwardResults, backward),
            "");
  backward["prologue_mask"] = 1;
  EXPECT_EQ(check("cbr_backward", cbrBackwardOperands({"relu_beta"}), backwardResults, backward),
            "attribute \"prologue_mask\" must be a boolean, got number");
  EXPECT_FALSE(cbrBackwardPrologueMask(backward));
}

} // namespace
} // namespace rn
