//===- node_layout.h - Op nodes for launcher tests, laid out as loaded ----*- C++ -*-===//
//
// Launcher tests build nodes by hand with flat operand and result lists in
// the op table's order. The launchers take their tensors by ODS name
// through the node's layout (op_registry.h), which the loader fills from an
// artifact's named values; layOut fills it from the flat counts instead.
//
//===----------------------------------------------------------------------===//

#ifndef RN_TEST_RUNTIME_CUDA_NODE_LAYOUT_H
#define RN_TEST_RUNTIME_CUDA_NODE_LAYOUT_H

#include "runtime/core/artifact.h"
#include "runtime/core/op_registry.h"
#include "runtime/core/op_table.h"

#include <algorithm>
#include <string_view>
#include <vector>

namespace rn::test {

/// node.info and node.layout for `numOperands` operands and `numResults`
/// results of node.op in table order: each single entry takes one value,
/// the variadic entries share what is left equally, and the optional ones
/// (in order) take what that share leaves over; `absent` names entries
/// that hold nothing; SGD's momentum buffers are absent by themselves when
/// node.attributes say momentum 0. False for an op the table lacks or
/// counts that do not fit.
inline bool layOut(Node &node, size_t numOperands, size_t numResults,
                   std::vector<std::string_view> absent = {}) {
  auto momentum = node.attributes.find("momentum");
  if ((node.op == "sgd_update" || node.op == "multi_sgd_update") &&
      momentum != node.attributes.end() && momentum->is_number() && momentum->get<double>() == 0)
    absent.insert(absent.end(), {"momentum_buffer", "new_momentum_buffer", "momentum_buffers"});
  node.info = findOp(node.op);
  if (!node.info || !node.info->table)
    return false;
  auto isAbsent = [&](std::string_view name) {
    return std::find(absent.begin(), absent.end(), name) != absent.end();
  };
  auto fill = [&](const op_table::Value *entries, size_t count, size_t total,
                  ValueLayout &layout) {
    size_t left = total, variadics = 0;
    for (size_t i = 0; i < count; ++i) {
      if (entries[i].arity == op_table::Arity::one)
        left -= std::min<size_t>(left, 1);
      else if (entries[i].arity == op_table::Arity::variadic && !isAbsent(entries[i].name))
        ++variadics;
    }
    // With lists, the present optional entries are what the equal share
    // leaves over; without, they take the values left in order.
    size_t optionals = variadics ? left % variadics : left;
    std::vector<uint32_t> counts(count, 0);
    for (size_t i = 0; i < count; ++i) {
      if (entries[i].arity == op_table::Arity::one) {
        counts[i] = 1;
      } else if (entries[i].arity == op_table::Arity::optional && !isAbsent(entries[i].name) &&
                 optionals > 0) {
        counts[i] = 1;
        --optionals;
        --left;
      }
    }
    for (size_t i = 0; i < count; ++i)
      if (entries[i].arity == op_table::Arity::variadic && !isAbsent(entries[i].name))
        counts[i] = static_cast<uint32_t>(left / variadics);
    layout.segments.clear();
    uint32_t begin = 0;
    for (uint32_t c : counts) {
      layout.segments.push_back({begin, c});
      begin += c;
    }
    return begin == total;
  };
  const op_table::Op &op = *node.info->table;
  return fill(op.operands, op.numOperands, numOperands, node.layout.operands) &&
         fill(op.results, op.numResults, numResults, node.layout.results);
}

} // namespace rn::test

#endif // RN_TEST_RUNTIME_CUDA_NODE_LAYOUT_H
