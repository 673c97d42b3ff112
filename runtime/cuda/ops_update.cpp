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

#include "runtime/core/op_attrs.h"
#include "runtime/core/op_table.h"
#include "runtime/cuda/op_launch.h"
#include "runtime/cuda/update_kernels.h"

#include <memory>
#include <string>

namespace rn::cuda {
namespace {

// The optimizers' attributes, shared by each single-tensor op and its
// multi-tensor form: `Attrs` is the op's op_table::<op>::attrs.
template <class Attrs> SgdOptions sgdOptions(const OpLaunch &l) {
  return SgdOptions{Attrs::momentum(l.node), Attrs::weight_decay(l.node),
                    Attrs::nesterov(l.node)};
}
template <class Attrs> LarsOptions larsOptions(const OpLaunch &l) {
  return LarsOptions{Attrs::momentum(l.node), Attrs::weight_decay(l.node),
                     Attrs::trust_coefficient(l.node), Attrs::epsilon(l.node)};
}
template <class Attrs> AdamWOptions adamwOptions(const OpLaunch &l) {
  return AdamWOptions{Attrs::beta1(l.node), Attrs::beta2(l.node), Attrs::epsilon(l.node),
                      Attrs::weight_decay(l.node)};
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
                                  l.operand(operand::found_non_finite), attrs::growth(l.node),
                                  attrs::backoff(l.node), attrs::growth_interval(l.node),
                                  l.result(result::new_scale), l.result(result::new_good_steps),
                                  l.stream.stream));
}

Status launchSgdUpdate(const OpLaunch &l) {
  using namespace op_table::sgd_update;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, sgdUpdate(l.operand(operand::param), l.operand(operand::grad),
                            l.operandIfAny(operand::momentum_buffer), l.operand(operand::lr),
                            l.operandIfAny(operand::skip_if), sgdOptions<attrs>(l),
                            l.result(result::new_param),
                            l.resultIfAny(result::new_momentum_buffer), l.stream.stream));
}

/// The device table of a multi-tensor update node, kept between prepare
/// and its launches.
struct MultiTensorState final : PreparedState {
  std::unique_ptr<MultiTensorUpdate> update;
};

/// MultiTensorUpdate takes a node's operands (results) as one list: the
/// per-tensor lists, then the scalars, then skip_if, in the order given
/// here by the op table's names. The node's flat lists hold them in ODS
/// order; this checks, by name, that the two agree (an ODS reorder fails at
/// prepare, naming the value, rather than feeding the kernel the wrong
/// tensors), so launches pass the node's lists as they are.
Status checkKernelOrder(const OpLaunch &l, const op_table::Op &op,
                        std::initializer_list<size_t> operands,
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
  RN_RETURN_IF_ERROR(check(l.node.layout.operands, operands, op.operands, "operand"));
  return check(l.node.layout.results, results, op.results, "result");
}

/// checkKernelOrder for the multi-tensor op `Kind`.
template <OpKind Kind> Status checkMultiTensorOrder(const OpLaunch &l) {
  namespace ot = op_table;
  const ot::Op &op = ot::entry(Kind);
  if constexpr (Kind == OpKind::multi_sgd_update) {
    using namespace ot::multi_sgd_update;
    return checkKernelOrder(l, op,
                            {operand::params, operand::grads, operand::momentum_buffers,
                             operand::lr, operand::skip_if},
                            {result::new_values});
  } else if constexpr (Kind == OpKind::multi_lars_update) {
    using namespace ot::multi_lars_update;
    return checkKernelOrder(l, op,
                            {operand::params, operand::grads, operand::momentum_buffers,
                             operand::lr, operand::skip_if},
                            {result::new_values});
  } else if constexpr (Kind == OpKind::multi_adamw_update) {
    using namespace ot::multi_adamw_update;
    return checkKernelOrder(l, op,
                            {operand::params, operand::grads, operand::exp_avgs,
                             operand::exp_avg_sqs, operand::lr, operand::step, operand::skip_if},
                            {result::new_values});
  } else if constexpr (Kind == OpKind::multi_unscale) {
    using namespace ot::multi_unscale;
    return checkKernelOrder(l, op, {operand::grads, operand::scale}, {result::results});
  } else if constexpr (Kind == OpKind::multi_zero) {
    using namespace ot::multi_zero;
    return checkKernelOrder(l, op, {operand::inputs}, {result::results});
  } else if constexpr (Kind == OpKind::multi_cast) {
    using namespace ot::multi_cast;
    return checkKernelOrder(l, op, {operand::inputs}, {result::results});
  } else {
    static_assert(Kind == OpKind::multi_ema_update, "not a multi-tensor op");
    using namespace ot::multi_ema_update;
    return checkKernelOrder(l, op, {operand::averages, operand::params}, {result::results});
  }
}

/// Builds the node's table of tensors and chunks in device memory, once;
/// returns the workspace its launch writes (multi_lars_update's partial
/// norms).
template <OpKind Kind> Result<size_t> prepareMultiTensor(const OpLaunch &l) {
  if (l.part >= 0)
    return Error(l.node.op + ": has no parts, got part " + std::to_string(l.part));
  if (!l.prepared)
    return Error(l.node.op + ": the executor keeps no prepared state for its device table");
  RN_RETURN_IF_ERROR(checkMultiTensorOrder<Kind>(l));
  namespace ot = op_table;
  Result<std::unique_ptr<MultiTensorUpdate>> update = [&] {
    if constexpr (Kind == OpKind::multi_sgd_update)
      return MultiTensorUpdate::sgd(l.operands, l.results,
                                    sgdOptions<ot::multi_sgd_update::attrs>(l), l.stream.stream);
    else if constexpr (Kind == OpKind::multi_unscale)
      return MultiTensorUpdate::unscale(l.operands, l.results, l.stream.stream);
    else if constexpr (Kind == OpKind::multi_zero)
      return MultiTensorUpdate::zero(l.operands, l.results, l.stream.stream);
    else if constexpr (Kind == OpKind::multi_cast)
      return MultiTensorUpdate::cast(l.operands, l.results, l.stream.stream);
    else if constexpr (Kind == OpKind::multi_ema_update)
      return MultiTensorUpdate::ema(l.operands, l.results,
                                    ot::multi_ema_update::attrs::decay(l.node), l.stream.stream);
    else if constexpr (Kind == OpKind::multi_lars_update)
      return MultiTensorUpdate::lars(l.operands, l.results,
                                     larsOptions<ot::multi_lars_update::attrs>(l),
                                     l.stream.stream);
    else {
      static_assert(Kind == OpKind::multi_adamw_update, "not a multi-tensor op");
      return MultiTensorUpdate::adamw(l.operands, l.results,
                                      adamwOptions<ot::multi_adamw_update::attrs>(l),
                                      l.stream.stream);
    }
  }();
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
                              l.operandIfAny(operand::skip_if), adamwOptions<attrs>(l),
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
                             l.operandIfAny(operand::skip_if), larsOptions<attrs>(l),
                             l.result(result::new_param), l.result(result::new_momentum_buffer),
                             l.stream.stream, l.stream.workspace, l.stream.workspaceBytes));
}

Status launchEmaUpdate(const OpLaunch &l) {
  using namespace op_table::ema_update;
  RN_RETURN_IF_ERROR(requireWhole(l));
  return named(l, emaUpdate(l.operand(operand::average), l.operand(operand::param),
                            attrs::decay(l.node), l.result(result::new_average),
                            l.stream.stream));
}

} // namespace

const std::vector<OpLauncher> &updateLaunchers() {
  static const std::vector<OpLauncher> launchers = {
      {OpKind::check_finite, nullptr, launchCheckFinite},
      {OpKind::unscale, nullptr, launchUnscale},
      {OpKind::multi_unscale, prepareMultiTensor<OpKind::multi_unscale>, launchMultiTensor},
      {OpKind::multi_zero, prepareMultiTensor<OpKind::multi_zero>, launchMultiTensor},
      {OpKind::multi_cast, prepareMultiTensor<OpKind::multi_cast>, launchMultiTensor},
      {OpKind::update_loss_scale, nullptr, launchUpdateLossScale},
      {OpKind::sgd_update, nullptr, launchSgdUpdate},
      {OpKind::multi_sgd_update, prepareMultiTensor<OpKind::multi_sgd_update>, launchMultiTensor},
      {OpKind::adamw_update, nullptr, launchAdamWUpdate},
      {OpKind::multi_adamw_update, prepareMultiTensor<OpKind::multi_adamw_update>,
       launchMultiTensor},
      {OpKind::lars_update, prepareLarsUpdate, launchLarsUpdate},
      {OpKind::multi_lars_update, prepareMultiTensor<OpKind::multi_lars_update>, launchMultiTensor},
      {OpKind::ema_update, nullptr, launchEmaUpdate},
      {OpKind::multi_ema_update, prepareMultiTensor<OpKind::multi_ema_update>, launchMultiTensor},
  };
  return launchers;
}

} // namespace rn::cuda
