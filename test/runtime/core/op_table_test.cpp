//===- op_table_test.cpp - The op table generated from the ODS ------------===//
//
// runtime/core/op_table.h is generated from the dialect's ODS (the
// RN_ArtifactOp ops). These tests hold the runtime to it: the loader's
// registry verifies exactly those ops, the CPU executor has a kernel for
// each (the CUDA launchers' twin is in test/runtime/cuda/), and the table
// says what the dialect says of the ops the runtime decodes by hand.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/op_registry.h"
#include "runtime/core/op_table.h"
#include "runtime/cpu/cpu_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

namespace rn {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::set<std::string> tableOps() {
  std::set<std::string> names;
  for (const op_table::Op &op : op_table::kOps)
    names.insert(std::string(op.name));
  return names;
}

// Tests that the loader verifies exactly the ops an artifact may hold.
TEST(OpTable, IsTheRegistrysOps) {
  std::set<std::string> registry;
  for (const OpInfo &op : allOps())
    registry.insert(std::string(op.name));
  EXPECT_EQ(registry, tableOps());
}

// Tests that every op an artifact may hold has a CPU kernel.
TEST(OpTable, EveryOpHasACpuKernel) {
  EXPECT_THAT(opsWithout(cpu::hasKernel), IsEmpty())
      << "add a kernel to runtime/cpu/ for these ops";
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

} // namespace
} // namespace rn
