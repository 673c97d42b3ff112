//===- op_table_test.cpp - The op table generated from the ODS ------------===//
//
// runtime/core/op_table.h, op_kinds.h and op_attrs.h are generated from the
// dialect's ODS (the RN_ArtifactOp ops). These tests hold the runtime to
// them: OpKind names the table's ops in its order, the loader's registry
// has exactly those ops, the CPU executor has one kernel entry for each
// (the CUDA launchers' twin is in test/runtime/cuda/), the typed readers
// read what the table says, the fuzzer's dictionary names every op and
// value, and the table says what the dialect says of a few ops.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/op_attrs.h"
#include "runtime/core/op_kinds.h"
#include "runtime/core/op_registry.h"
#include "runtime/core/op_table.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/cpu/cpu_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace rn {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::set<std::string> tableOps() {
  std::set<std::string> names;
  for (const op_table::Op &op : op_table::kOps)
    names.insert(std::string(op.name));
  return names;
}

// Tests that the loader verifies exactly the ops an artifact may hold, the
// registry's entry of each kind being that op's.
TEST(OpTable, IsTheRegistrysOps) {
  std::set<std::string> registry;
  for (const OpInfo &op : allOps())
    registry.insert(std::string(op.name));
  EXPECT_EQ(registry, tableOps());
  ASSERT_EQ(allOps().size(), kNumOpKinds);
  for (size_t k = 0; k < kNumOpKinds; ++k) {
    const OpInfo &op = allOps()[k];
    EXPECT_EQ(op.kind, static_cast<OpKind>(k)) << op.name;
    EXPECT_EQ(&opInfo(op.kind), &op) << op.name;
    EXPECT_EQ(op.table, &op_table::kOps[k]) << op.name;
    EXPECT_EQ(op.name, op_table::kOps[k].name);
    EXPECT_NE(op.verify, nullptr) << op.name;
    EXPECT_EQ(findOp(op.name), &op);
  }
}

// Tests that OpKind names the table's ops in its order, both ways.
TEST(OpTable, KindsNameTheTablesOps) {
  EXPECT_EQ(kNumOpKinds, std::size(op_table::kOps));
  for (size_t k = 0; k < kNumOpKinds; ++k) {
    const OpKind kind = static_cast<OpKind>(k);
    const op_table::Op &op = op_table::kOps[k];
    EXPECT_EQ(op.kind, kind) << op.name;
    EXPECT_EQ(&op_table::entry(kind), &op) << op.name;
    EXPECT_EQ(opName(kind), op.name);
    EXPECT_EQ(opKindOf(op.name), kind) << op.name;
    if (k > 0) {
      EXPECT_LT(op_table::kOps[k - 1].name, op.name) << "the names are sorted";
    }
  }
  static_assert(opKindOf("conv2d") == OpKind::conv2d);
  static_assert(opName(OpKind::cbr_backward) == "cbr_backward");
  EXPECT_EQ(opKindOf("rn.conv2d"), std::nullopt);
  EXPECT_EQ(opKindOf("dropout"), std::nullopt) << "a model-level op is not an artifact op";
  EXPECT_EQ(opKindOf(""), std::nullopt);
  EXPECT_EQ(opKindOf("zzz"), std::nullopt);
}

// Tests that every op an artifact may hold has exactly one CPU kernel entry
// in the family tables (runtime/cpu/cpu_ops.h), the check the executor
// makes when it is created.
TEST(OpTable, EveryOpHasACpuKernel) {
  EXPECT_THAT(opsWithout(cpu::hasKernel), IsEmpty())
      << "add a kernel to runtime/cpu/ for these ops";
  Status whole = cpu::checkCpuOps();
  EXPECT_TRUE(whole.ok()) << whole.error().message();
  for (size_t k = 0; k < kNumOpKinds; ++k) {
    const cpu::CpuOp *op = cpu::findCpuOp(static_cast<OpKind>(k));
    ASSERT_NE(op, nullptr) << op_table::kOps[k].name;
    EXPECT_EQ(op->kind, static_cast<OpKind>(k));
    EXPECT_NE(op->run, nullptr) << op_table::kOps[k].name;
  }
  // The ops that fork say what each part reads and writes.
  for (const OpInfo &op : allOps())
    EXPECT_EQ(cpu::findCpuOp(op.kind)->partAccess != nullptr, op.forkParts != nullptr)
        << op.name;
}

// Tests that the check fails for an op without a kernel: an executor whose
// kernel table lacks conv2d is reported, and only for conv2d.
TEST(OpTable, CoverageCheckNamesAMissingKernel) {
  auto withoutConv2d = [](std::string_view op) { return op != "conv2d" && cpu::hasKernel(op); };
  EXPECT_THAT(opsWithout(withoutConv2d), ElementsAre("conv2d"));
  EXPECT_FALSE(cpu::hasKernel("no_such_op"));
}

// Tests the table against the ODS of an op with optional operands and
// optional results: names and arities in ODS order, attribute kinds.
TEST(OpTable, DescribesConv2dBackward) {
  const op_table::Op *op = op_table::findOp("conv2d_backward");
  ASSERT_NE(op, nullptr);
  auto names = [](const op_table::Value *values, size_t count) {
    std::vector<std::string> result;
    for (size_t i = 0; i < count; ++i)
      result.push_back(std::string(values[i].name) +
                       (values[i].arity == op_table::Arity::optional ? "?" : ""));
    return result;
  };
  EXPECT_THAT(names(op->operands, op->numOperands),
              ElementsAre("output_grad", "input", "filter", "filter_grad_acc", "bias_grad_acc?",
                          "input_grad_addend?"));
  EXPECT_THAT(names(op->results, op->numResults),
              ElementsAre("input_grad?", "filter_grad", "bias_grad?"));
  namespace conv = op_table::conv2d_backward;
  EXPECT_EQ(conv::operand::input_grad_addend, 5u);
  EXPECT_EQ(conv::result::bias_grad, 2u);
  bool sawGroups = false;
  for (size_t i = 0; i < op->numAttributes; ++i) {
    const op_table::Attr &attr = op->attributes[i];
    EXPECT_NE(attr.name, "input_grad") << "the input gradient is a result, not a flag";
    if (attr.name == "groups") {
      sawGroups = true;
      EXPECT_EQ(attr.kind, op_table::AttrKind::integer);
      EXPECT_TRUE(attr.required);
    }
  }
  EXPECT_TRUE(sawGroups);
  EXPECT_EQ(op_table::findOp("dropout"), nullptr) << "a model-level op is not an artifact op";
  EXPECT_EQ(op_table::findOp("stochastic_depth"), nullptr)
      << "a model-level op is not an artifact op";
}

// Tests the typed readers of op_attrs.h: each attribute read with the
// kind its ODS declares, absent ones as the reader's default or the value
// given, mistyped ones as absent.
TEST(OpAttrs, ReadTheKindsTheOdsDeclares) {
  Node node;
  node.op = "cbr_forward";
  node.attributes = {{"strides", {2, 1}}, {"padding", {1, 1}}, {"dilation", {1, 1}},
                     {"groups", 4},       {"epsilon", 1e-5},   {"relu", true}};
  namespace cbr = op_table::cbr_forward;
  EXPECT_EQ(cbr::attrs::strides(node), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(cbr::attrs::groups(node), 4);
  EXPECT_DOUBLE_EQ(cbr::attrs::epsilon(node), 1e-5);
  EXPECT_TRUE(cbr::attrs::relu(node));
  const cpu::Conv2dAttrs conv = cpu::convAttrsOf<cbr::attrs>(node);
  EXPECT_EQ(conv.strides, (std::array<int64_t, 2>{2, 1}));
  EXPECT_EQ(conv.groups, 4);

  // Absent: a flag is false, an array empty, a scalar its `absent`.
  node.attributes = json::object();
  EXPECT_FALSE(cbr::attrs::relu(node));
  EXPECT_TRUE(cbr::attrs::padding(node).empty());
  EXPECT_EQ(cbr::attrs::groups(node), 0);
  EXPECT_EQ(cbr::attrs::groups(node, 1), 1);
  EXPECT_EQ(cpu::convAttrsOf<cbr::attrs>(node).dilation, (std::array<int64_t, 2>{1, 1}));
  // A pair reader takes exactly two integers, else its `otherwise`.
  node.attributes = {{"strides", {2, 1}}, {"padding", {3}}};
  EXPECT_EQ(cbr::attrs::strides_pair(node, {1, 1}), (std::array<int64_t, 2>{2, 1}));
  EXPECT_EQ(cbr::attrs::padding_pair(node, {0, 0}), (std::array<int64_t, 2>{0, 0}));
  EXPECT_EQ(cbr::attrs::dilation_pair(node, {1, 1}), (std::array<int64_t, 2>{1, 1}));

  // Mistyped: read as absent, never a throw.
  node.attributes = {{"groups", "4"}, {"epsilon", "small"}, {"relu", 1}, {"strides", {1, "x"}},
                     {"padding", 0}};
  EXPECT_EQ(cbr::attrs::groups(node, 1), 1);
  EXPECT_DOUBLE_EQ(cbr::attrs::epsilon(node), 0);
  EXPECT_FALSE(cbr::attrs::relu(node));
  EXPECT_TRUE(cbr::attrs::strides(node).empty());
  EXPECT_TRUE(cbr::attrs::padding(node).empty());
  EXPECT_EQ(cbr::attrs::strides_pair(node, {1, 1}), (std::array<int64_t, 2>{1, 1}));
  EXPECT_EQ(cbr::attrs::padding_pair(node, {0, 0}), (std::array<int64_t, 2>{0, 0}));

  // An integer attribute is an int64_t, a real one a double (an integral
  // JSON number reads as one).
  node.op = "dropout_train";
  node.attributes = {{"p", 0}, {"index", 2}, {"count", 5}};
  namespace dropout = op_table::dropout_train;
  static_assert(std::is_same_v<decltype(dropout::attrs::count(node)), int64_t>);
  static_assert(std::is_same_v<decltype(dropout::attrs::p(node)), double>);
  EXPECT_EQ(dropout::attrs::index(node), 2);
  EXPECT_EQ(dropout::attrs::count(node), 5);
  EXPECT_DOUBLE_EQ(dropout::attrs::p(node), 0.0);
}

// Tests that the fuzzer's dictionary (runtime/core/fuzz/artifact.dict,
// checked in for the fuzzing workflow of docs/reliability.md) names every
// op of the op table and every operand, result and attribute name, which
// nodes use as keys: a new op fails here until its names are added.
TEST(OpTable, FuzzDictionaryNamesEveryOpAndValue) {
  std::ifstream file(RN_ARTIFACT_FUZZ_DICT);
  ASSERT_TRUE(file) << "cannot read " << RN_ARTIFACT_FUZZ_DICT;
  std::set<std::string> entries;
  for (std::string line; std::getline(file, line);)
    entries.insert(line);
  auto entry = [](std::string_view name) { return "\"\\\"" + std::string(name) + "\\\"\""; };
  std::set<std::string> missing;
  for (const op_table::Op &op : op_table::kOps) {
    auto need = [&](std::string_view name) {
      if (!entries.count(entry(name)))
        missing.insert(std::string(name));
    };
    need(op.name);
    for (size_t i = 0; i < op.numOperands; ++i)
      need(op.operands[i].name);
    for (size_t i = 0; i < op.numResults; ++i)
      need(op.results[i].name);
    for (size_t i = 0; i < op.numAttributes; ++i)
      need(op.attributes[i].name);
  }
  std::string lines;
  for (const std::string &name : missing)
    lines += entry(name) + "\n";
  EXPECT_TRUE(missing.empty()) << "add these lines to " << RN_ARTIFACT_FUZZ_DICT << ":\n"
                               << lines;
}

} // namespace
} // namespace rn
