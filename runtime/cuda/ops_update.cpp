//===- ops_update.cpp - GPU launchers of the loss-scaling and optimizer ops -===//
//
// multi_zero, multi_cast, check_finite, unscale, multi_unscale,
// update_loss_scale, sgd_update, multi_sgd_update, adamw_update,
// multi_adamw_update, lars_update, multi_lars_update, ema_update and
// multi_ema_update, mapped onto update_kernels.h with the operand order of
// the op definitions (optional operands as the CPU executor reads them:
// sgd's momentum buffer exactly when momentum != 0, then lr, then an
// optional skip flag). Only lars_update and multi_lars_update use
// workspace (their partial norms, the bytes prepare returns); the
// multi-tensor updates build their device table of tensors and chunks in
// prepare and keep it in the node's PreparedState.
//
//===----------------------------------------------------------------------===//

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

/// An error unless the node runs whole with operands in [minOperands,
/// maxOperands] and exactly `results` results.
Status expectArity(const OpLaunch &l, size_t minOperands, size_t maxOperands, size_t results) {
  if (l.part >= 0)
    return Error(l.node.op + ": has no parts, got part " + std::to_string(l.part));
  if (l.operands.size() < minOperands || l.operands.size() > maxOperands ||
      l.results.size() != results)
    return Error(l.node.op + ": unexpected operand or result count (" +
                 std::to_string(l.operands.size()) + " operands, " +
                 std::to_string(l.results.size()) + " results)");
  return Status::success();
}

Status launchCheckFinite(const OpLaunch &l) {
  if (l.part >= 0 || l.results.size() != 1)
    return Error(l.node.op + ": expects one result and no parts");
  return named(l, checkFinite(l.operands, l.results[0], l.stream.stream));
}

Status launchUnscale(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 2, 2, 1));
  return named(l, unscale(l.operands[0], l.operands[1], l.results[0], l.stream.stream));
}

Status launchUpdateLossScale(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 3, 3, 2));
  const auto &o = l.operands;
  return named(l, updateLossScale(o[0], o[1], o[2], numAttr(l, "growth"), numAttr(l, "backoff"),
                                  static_cast<int64_t>(numAttr(l, "growth_interval")),
                                  l.results[0], l.results[1], l.stream.stream));
}

Status launchSgdUpdate(const OpLaunch &l) {
  SgdOptions options{numAttr(l, "momentum"), numAttr(l, "weight_decay"),
                     flagAttr(l, "nesterov")};
  const bool buffer = options.momentum != 0;
  const size_t lrIndex = buffer ? 3 : 2;
  RN_RETURN_IF_ERROR(expectArity(l, lrIndex + 1, lrIndex + 2, buffer ? 2 : 1));
  const auto &o = l.operands;
  const auto &r = l.results;
  const DeviceTensor *skip = o.size() > lrIndex + 1 ? &o[lrIndex + 1] : nullptr;
  return named(l, sgdUpdate(o[0], o[1], buffer ? &o[2] : nullptr, o[lrIndex], skip, options,
                            r[0], buffer ? &r[1] : nullptr, l.stream.stream));
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

/// Builds the node's table of tensors and chunks in device memory, once;
/// returns the workspace its launch writes (multi_lars_update's partial
/// norms).
Result<size_t> prepareMultiTensor(const OpLaunch &l) {
  if (l.part >= 0)
    return Error(l.node.op + ": has no parts, got part " + std::to_string(l.part));
  if (!l.prepared)
    return Error(l.node.op + ": the executor keeps no prepared state for its device table");
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
  RN_RETURN_IF_ERROR(expectArity(l, 6, 7, 3));
  AdamWOptions options{numAttr(l, "beta1"), numAttr(l, "beta2"), numAttr(l, "epsilon"),
                       numAttr(l, "weight_decay")};
  const auto &o = l.operands;
  const auto &r = l.results;
  const DeviceTensor *skip = o.size() == 7 ? &o[6] : nullptr;
  return named(l, adamwUpdate(o[0], o[1], o[2], o[3], o[4], o[5], skip, options, r[0], r[1], r[2],
                              l.stream.stream));
}

Result<size_t> prepareLarsUpdate(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 4, 5, 2));
  return larsWorkspaceBytes(l.operands[0].numel());
}

Status launchLarsUpdate(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 4, 5, 2));
  const LarsOptions options = larsOptions(l);
  const auto &o = l.operands;
  const auto &r = l.results;
  const DeviceTensor *skip = o.size() == 5 ? &o[4] : nullptr;
  return named(l, larsUpdate(o[0], o[1], o[2], o[3], skip, options, r[0], r[1], l.stream.stream,
                             l.stream.workspace, l.stream.workspaceBytes));
}

Status launchEmaUpdate(const OpLaunch &l) {
  RN_RETURN_IF_ERROR(expectArity(l, 2, 2, 1));
  return named(l, emaUpdate(l.operands[0], l.operands[1], numAttr(l, "decay"), l.results[0],
                            l.stream.stream));
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
