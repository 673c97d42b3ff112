//===- ops_update.cpp - GPU launchers of the loss-scaling and optimizer ops -===//
//
// multi_zero, multi_cast, check_finite, unscale, multi_unscale,
// update_loss_scale, sgd_update, multi_sgd_update, adamw_update,
// multi_adamw_update, lars_update, multi_lars_update, ema_update and
// multi_ema_update, mapped onto update_kernels.h. The single-tensor ops
// take their operands by ODS name (op_table.h); the multi-tensor table
// (MultiTensorUpdate) takes the node's lists in ODS order, as
// update_kernels.h documents. Only lars_update and multi_lars_update use
// workspace (their partial norms, the bytes prepare returns); the
// multi-tensor updates build their device table of tensors and chunks in
// prepare and keep it in the node's PreparedState.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/op_table.h"
#include "runtime/cuda/op_launch.h"
#include "runtime/cuda/update_kernels.h"

#include <memory>
#include <string>

namespace rn::cuda {
namespace {

double numAttr(const OpLaunch &l, const char *name) {
  auto it = l.node.attributes.find(name);
  return it != l.node.attributes.end() && it->is_number() ? it->get<double>() : 0.0;
}

bool flagAttr(const OpLaunch &l, const char *name) {
  auto it = l.node.attributes.find(name);
  return it != l.node.attributes.end() && it->is_boolean() && it->get<bool>();
}

Status launchCheckFinite(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  // check_finite's one operand is its list of inputs.
  return named(l, checkFinite(l.operands, l.result(op_table::check_finite::result::found_non_finite),
                              l.stream.stream));
}

Status launchUnscale(const OpLaunch &l) {
  using namespace op_table::unscale;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, unscale(l.operand(operand::grad), l.operand(operand::scale),
                          l.result(result::result), l.stream.stream));
}

Status launchUpdateLossScale(const OpLaunch &l) {
  using namespace op_table::update_loss_scale;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, updateLossScale(l.operand(operand::scale), l.operand(operand::good_steps),
                                  l.operand(operand::found_non_finite), numAttr(l, "growth"),
                                  numAttr(l, "backoff"),
                                  static_cast<int64_t>(numAttr(l, "growth_interval")),
                                  l.result(result::new_scale), l.result(result::new_good_steps),
                                  l.stream.stream));
}

Status launchSgdUpdate(const OpLaunch &l) {
  using namespace op_table::sgd_update;
  RN_RETURN_IF_ERROR(requireWhole(l));
  SgdOptions options{numAttr(l, "momentum"), numAttr(l, "weight_decay"),
                     flagAttr(l, "nesterov")};
  return named(l, sgdUpdate(l.operand(operand::param), l.operand(operand::grad),
                            l.operandIfAny(operand::momentum_buffer), l.operand(operand::lr),
                            l.operandIfAny(operand::skip_if), options,
                            l.result(result::new_param),
                            l.resultIfAny(result::new_momentum_buffer), l.stream.stream));
}

/// The device table of a multi-tensor update node, kept between prepare
/// and its launches.
struct MultiTensorState final : PreparedState {
  std::unique_ptr<MultiTensorUpdate> update;
};

SgdOptions sgdOptions(const OpLaunch &l) {
  return SgdOptions{numAttr(l, "momentum"), numAttr(l, "weight_decay"), flagAttr(l, "nesterov")};
}

LarsOptions larsOptions(const OpLaunch &l) {
  return LarsOptions{numAttr(l, "momentum"), numAttr(l, "weight_decay"),
                     numAttr(l, "trust_coefficient"), numAttr(l, "epsilon")};
}

AdamWOptions adamwOptions(const OpLaunch &l) {
  return AdamWOptions{numAttr(l, "beta1"), numAttr(l, "beta2"), numAttr(l, "epsilon"),
                      numAttr(l, "weight_decay")};
}

/// MultiTensorUpdate takes a node's operands (results) as one list: the
/// per-tensor lists, then the scalars, then skip_if, in the order given
/// here by the op table's names. The node's flat lists hold them in ODS
/// order; this checks, by name, that the two agree (an ODS reorder fails at
/// prepare, naming the value, rather than feeding the kernel the wrong
/// tensors), so launches pass the node's lists as they are.
Status checkKernelOrder(const OpLaunch &l, std::initializer_list<size_t> operands,
                        std::initializer_list<size_t> results) {
  auto check = [&](const ValueLayout &layout, std::initializer_list<size_t> order,
                   const op_table::Value *table, const char *what) -> Status {
    size_t next = 0;
    for (size_t ods : order) {
      if (layout.count(ods) == 0)
        continue;
      if (layout.index(ods) != next)
        return Error(l.node.op + ": " + what + " '" + std::string(table[ods].name) +
                     "' is not where the multi-tensor kernel reads it (flat index " +
                     std::to_string(layout.index(ods)) + ", expected " + std::to_string(next) +
                     ")");
      next += layout.count(ods);
    }
    if (next != layout.total())
      return Error(l.node.op + ": " + what + "s the multi-tensor kernel does not read");
    return Status::success();
  };
  const op_table::Op *op = op_table::findOp(l.node.op);
  if (!op)
    return Error(l.node.op + ": not in the op table");
  RN_RETURN_IF_ERROR(check(l.node.layout.operands, operands, op->operands, "operand"));
  return check(l.node.layout.results, results, op->results, "result");
}

/// checkKernelOrder for each multi-tensor op.
Status checkMultiTensorOrder(const OpLaunch &l) {
  namespace ot = op_table;
  const std::string &op = l.node.op;
  if (op == "multi_sgd_update") {
    using namespace ot::multi_sgd_update;
    return checkKernelOrder(
        l, {operand::params, operand::grads, operand::momentum_buffers, operand::lr, operand::skip_if},
        {result::new_values});
  }
  if (op == "multi_lars_update") {
    using namespace ot::multi_lars_update;
    return checkKernelOrder(
        l, {operand::params, operand::grads, operand::momentum_buffers, operand::lr, operand::skip_if},
        {result::new_values});
  }
  if (op == "multi_adamw_update") {
    using namespace ot::multi_adamw_update;
    return checkKernelOrder(l,
                            {operand::params, operand::grads, operand::exp_avgs,
                             operand::exp_avg_sqs, operand::lr, operand::step, operand::skip_if},
                            {result::new_values});
  }
  if (op == "multi_unscale") {
    using namespace ot::multi_unscale;
    return checkKernelOrder(l, {operand::grads, operand::scale}, {result::results});
  }
  if (op == "multi_zero") {
    using namespace ot::multi_zero;
    return checkKernelOrder(l, {operand::inputs}, {result::results});
  }
  if (op == "multi_cast") {
    using namespace ot::multi_cast;
    return checkKernelOrder(l, {operand::inputs}, {result::results});
  }
  if (op == "multi_ema_update") {
    using namespace ot::multi_ema_update;
    return checkKernelOrder(l, {operand::averages, operand::params}, {result::results});
  }
  return Error(op + ": not a multi-tensor op");
}

/// Builds the node's table of tensors and chunks in device memory, once;
/// returns the workspace its launch writes (multi_lars_update's partial
/// norms).
Result<size_t> prepareMultiTensor(const OpLaunch &l) {
  if (l.part >= 0)
    return Error(l.node.op + ": has no parts, got part " + std::to_string(l.part));
  if (!l.prepared)
    return Error(l.node.op + ": the executor keeps no prepared state for its device table");
  RN_RETURN_IF_ERROR(checkMultiTensorOrder(l));
  Result<std::unique_ptr<MultiTensorUpdate>> update =
      l.node.op == "multi_sgd_update"
          ? MultiTensorUpdate::sgd(l.operands, l.results, sgdOptions(l), l.stream.stream)
      : l.node.op == "multi_unscale"
          ? MultiTensorUpdate::unscale(l.operands, l.results, l.stream.stream)
      : l.node.op == "multi_zero"
          ? MultiTensorUpdate::zero(l.operands, l.results, l.stream.stream)
      : l.node.op == "multi_cast"
          ? MultiTensorUpdate::cast(l.operands, l.results, l.stream.stream)
      : l.node.op == "multi_ema_update"
          ? MultiTensorUpdate::ema(l.operands, l.results, numAttr(l, "decay"), l.stream.stream)
      : l.node.op == "multi_lars_update"
          ? MultiTensorUpdate::lars(l.operands, l.results, larsOptions(l), l.stream.stream)
          : MultiTensorUpdate::adamw(l.operands, l.results, adamwOptions(l), l.stream.stream);
  if (!update.ok())
    return update.error();
  const size_t workspace = (*update)->workspaceBytes();
  auto state = std::make_unique<MultiTensorState>();
  state->update = std::move(*update);
  *l.prepared = std::move(state);
  return workspace;
}

/// One kernel launch for the whole group (multi_lars_update: two).
Status launchMultiTensor(const OpLaunch &l) {
  const auto *state =
      l.prepared ? dynamic_cast<const MultiTensorState *>(l.prepared->get()) : nullptr;
  if (!state || !state->update)
    return Error(l.node.op + ": launched without the device table prepare builds");
  return state->update->launch(l.operands, l.results, l.stream.stream, l.stream.workspace,
                               l.stream.workspaceBytes);
}

Status launchAdamWUpdate(const OpLaunch &l) {
  using namespace op_table::adamw_update;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, adamwUpdate(l.operand(operand::param), l.operand(operand::grad),
                              l.operand(operand::exp_avg), l.operand(operand::exp_avg_sq),
                              l.operand(operand::lr), l.operand(operand::step),
                              l.operandIfAny(operand::skip_if), adamwOptions(l),
                              l.result(result::new_param), l.result(result::new_exp_avg),
                              l.result(result::new_exp_avg_sq), l.stream.stream));
}

Result<size_t> prepareLarsUpdate(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(requireWhole(l));
  return larsWorkspaceBytes(l.operand(op_table::lars_update::operand::param).numel());
}

Status launchLarsUpdate(const OpLaunch &l) {
  using namespace op_table::lars_update;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, larsUpdate(l.operand(operand::param), l.operand(operand::grad),
                             l.operand(operand::momentum_buffer), l.operand(operand::lr),
                             l.operandIfAny(operand::skip_if), larsOptions(l),
                             l.result(result::new_param), l.result(result::new_momentum_buffer),
                             l.stream.stream, l.stream.workspace, l.stream.workspaceBytes));
}

Status launchEmaUpdate(const OpLaunch &l) {
  using namespace op_table::ema_update;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, emaUpdate(l.operand(operand::average), l.operand(operand::param),
                            numAttr(l, "decay"), l.result(result::new_average), l.stream.stream));
}

} // namespace

const std::vector<OpLauncher> &updateLaunchers() {
  static const std::vector<OpLauncher> launchers = {
      {"check_finite", nullptr, launchCheckFinite},
      {"unscale", nullptr, launchUnscale},
      {"multi_unscale", prepareMultiTensor, launchMultiTensor},
      {"multi_zero", prepareMultiTensor, launchMultiTensor},
      {"multi_cast", prepareMultiTensor, launchMultiTensor},
      {"update_loss_scale", nullptr, launchUpdateLossScale},
      {"sgd_update", nullptr, launchSgdUpdate},
      {"multi_sgd_update", prepareMultiTensor, launchMultiTensor},
      {"adamw_update", nullptr, launchAdamWUpdate},
      {"multi_adamw_update", prepareMultiTensor, launchMultiTensor},
      {"lars_update", prepareLarsUpdate, launchLarsUpdate},
      {"multi_lars_update", prepareMultiTensor, launchMultiTensor},
      {"ema_update", nullptr, launchEmaUpdate},
      {"multi_ema_update", prepareMultiTensor, launchMultiTensor},
  };
  return launchers;
}

} // namespace rn::cuda
