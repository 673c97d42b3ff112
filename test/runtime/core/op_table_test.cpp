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

// Tests the table against the ODS of an op with optional operands and a
// variadic result: names and arities in ODS order, attribute kinds.
TEST(OpTable, DescribesConv2dBackward) {
  const op_table::Op *op = op_table::findOp("conv2d_backward");
  ASSERT_NE(op, nullptr);
  std::vector<std::string> operands;
  for (size_t i = 0; i < op->numOperands; ++i)
    operands.push_back(std::string(op->operands[i].name) +
                       (op->operands[i].arity == op_table::Arity::optional ? "?" : ""));
  EXPECT_THAT(operands, ElementsAre("output_grad", "input", "filter", "filter_grad_acc",
                                    "bias_grad_acc?", "input_grad_addend?"));
  namespace conv = op_table::conv2d_backward;
  EXPECT_EQ(conv::operand::input_grad_addend, 5u);
  ASSERT_EQ(op->numResults, 1u);
  EXPECT_EQ(op->results[0].arity, op_table::Arity::variadic);
  bool sawGroups = false, sawInputGrad = false;
  for (size_t i = 0; i < op->numAttributes; ++i) {
    const op_table::Attr &attr = op->attributes[i];
    if (attr.name == "groups") {
      sawGroups = true;
      EXPECT_EQ(attr.kind, op_table::AttrKind::integer);
      EXPECT_TRUE(attr.required);
    }
    if (attr.name == "input_grad") {
      sawInputGrad = true;
      EXPECT_EQ(attr.kind, op_table::AttrKind::flag);
      EXPECT_FALSE(attr.required);
    }
  }
  EXPECT_TRUE(sawGroups && sawInputGrad);
  EXPECT_EQ(op_table::findOp("dropout"), nullptr) << "a model-level op is not an artifact op";
}

} // namespace
} // namespace rn
