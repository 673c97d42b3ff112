//===- cpu_update.cpp - Loss scaling, optimizers, EMA ---------------------===//
//
// Optimizer arithmetic is done in double per element; what is stored (the
// new parameter and each new piece of optimizer state) is rounded to its
// dtype, and later terms of the same update read the stored value, as
// PyTorch does with its f32 state tensors. Every update may run in place
// (new state aliasing old state).
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_kernels_detail.h"
#include "runtime/cpu/cpu_ops.h"

#include <cmath>

namespace rn::cpu {
namespace {

using detail::Check;
using detail::store;

/// Copies `from` into `to` (the skipped update); nothing to do in place.
void copyInto(const TensorView &from, const TensorView &to) {
  if (from.data == to.data)
    return;
  for (int64_t i = 0, e = from.numel(); i < e; ++i)
    to.data[i] = store(to.dtype, from.data[i]);
}

} // namespace

bool checkFinite(TensorList inputs) {
  for (const TensorView &v : inputs)
    for (int64_t i = 0, e = v.numel(); i < e; ++i)
      if (!std::isfinite(v.data[i]))
        return true;
  return false;
}

KernelStatus unscale(const TensorView &grad, float scale,
                     const TensorView &result) {
  Check check("unscale");
  if (check.view("grad", grad).shape("result", result, grad.shape).failed())
    return check.status();
  for (int64_t i = 0, e = grad.numel(); i < e; ++i)
    result.data[i] = store(result.dtype, double(grad.data[i]) / double(scale));
  return {};
}

KernelStatus updateLossScale(float scale, int32_t goodSteps,
                             bool foundNonFinite, double growth,
                             double backoff, int64_t growthInterval,
                             float &newScale, int32_t &newGoodSteps) {
  Check check("update_loss_scale");
  if (check.require(growthInterval > 0, "growth interval must be positive, got ",
                    growthInterval)
          .failed())
    return check.status();
  newScale = scale;
  if (foundNonFinite) {
    newScale = static_cast<float>(double(scale) * backoff);
    newGoodSteps = 0;
    return {};
  }
  int64_t successful = int64_t(goodSteps) + 1;
  if (successful >= growthInterval) {
    float grown = static_cast<float>(double(scale) * growth);
    if (std::isfinite(grown))
      newScale = grown;
    newGoodSteps = 0;
  } else {
    newGoodSteps = static_cast<int32_t>(successful);
  }
  return {};
}

KernelStatus sgdUpdate(const TensorView &param, const TensorView &grad,
                       const TensorView *momentumBuffer, float lr, bool skip,
                       const SgdAttrs &attrs, const TensorView &newParam,
                       const TensorView *newMomentumBuffer) {
  Check check("sgd_update");
  const bool hasMomentum = attrs.momentum != 0;
  check.view("param", param)
      .shape("grad", grad, param.shape)
      .shape("new_param", newParam, param.shape)
      .require((momentumBuffer != nullptr) == hasMomentum &&
                   (newMomentumBuffer != nullptr) == hasMomentum,
               "the momentum buffer and its result are given exactly when "
               "momentum is non-zero")
      .require(!attrs.nesterov || attrs.momentum > 0,
               "nesterov needs a positive momentum");
  if (hasMomentum && !check.failed())
    check.shape("momentum_buffer", *momentumBuffer, param.shape)
        .shape("new_momentum_buffer", *newMomentumBuffer, param.shape);
  if (check.failed())
    return check.status();
  if (skip) {
    copyInto(param, newParam);
    if (hasMomentum)
      copyInto(*momentumBuffer, *newMomentumBuffer);
    return {};
  }
  for (int64_t i = 0, e = param.numel(); i < e; ++i) {
    double p = param.data[i];
    double g = grad.data[i] + attrs.weightDecay * p;
    double step = g;
    if (hasMomentum) {
      float buf = store(newMomentumBuffer->dtype,
                        attrs.momentum * momentumBuffer->data[i] + g);
      newMomentumBuffer->data[i] = buf;
      step = attrs.nesterov ? g + attrs.momentum * buf : double(buf);
    }
    newParam.data[i] = store(newParam.dtype, p - double(lr) * step);
  }
  return {};
}

KernelStatus multiSgdUpdate(TensorList params,
                            TensorList grads,
                            TensorList momentumBuffers, float lr,
                            bool skip, const SgdAttrs &attrs,
                            TensorList newParams,
                            TensorList newMomentumBuffers) {
  Check check("multi_sgd_update");
  const bool hasMomentum = attrs.momentum != 0;
  const size_t count = params.size();
  check.require(count > 0, "needs at least one tensor")
      .require(grads.size() == count && newParams.size() == count,
               "takes one grad and one new param per param (", count, " params, ",
               grads.size(), " grads, ", newParams.size(), " new params)")
      .require(momentumBuffers.size() == (hasMomentum ? count : 0) &&
                   newMomentumBuffers.size() == momentumBuffers.size(),
               "takes one momentum buffer and its result per param exactly when momentum "
               "is non-zero (", momentumBuffers.size(), " buffers, ",
               newMomentumBuffers.size(), " results)");
  if (check.failed())
    return check.status();
  for (size_t i = 0; i < count; ++i) {
    KernelStatus s = sgdUpdate(params[i], grads[i], hasMomentum ? &momentumBuffers[i] : nullptr,
                               lr, skip, attrs, newParams[i],
                               hasMomentum ? &newMomentumBuffers[i] : nullptr);
    if (!s.ok())
      return KernelStatus{"multi_sgd_update: tensor " + std::to_string(i) + ": " + s.error};
  }
  return {};
}

KernelStatus adamwUpdate(const TensorView &param, const TensorView &grad,
                         const TensorView &expAvg, const TensorView &expAvgSq,
                         float lr, int32_t step, bool skip,
                         const AdamWAttrs &attrs, const TensorView &newParam,
                         const TensorView &newExpAvg,
                         const TensorView &newExpAvgSq) {
  Check check("adamw_update");
  if (check.view("param", param)
          .shape("grad", grad, param.shape)
          .shape("exp_avg", expAvg, param.shape)
          .shape("exp_avg_sq", expAvgSq, param.shape)
          .shape("new_param", newParam, param.shape)
          .shape("new_exp_avg", newExpAvg, param.shape)
          .shape("new_exp_avg_sq", newExpAvgSq, param.shape)
          .require(step >= 1, "step must be at least 1, got ", step)
          .failed())
    return check.status();
  if (skip) {
    copyInto(param, newParam);
    copyInto(expAvg, newExpAvg);
    copyInto(expAvgSq, newExpAvgSq);
    return {};
  }
  const double b1 = attrs.beta1, b2 = attrs.beta2, rate = lr;
  const double biasCorrection1 = 1.0 - std::pow(b1, step);
  const double biasCorrection2Sqrt = std::sqrt(1.0 - std::pow(b2, step));
  const double stepSize = rate / biasCorrection1;
  for (int64_t i = 0, e = param.numel(); i < e; ++i) {
    double g = grad.data[i];
    double p = double(param.data[i]) * (1.0 - rate * attrs.weightDecay);
    float m = store(newExpAvg.dtype, b1 * expAvg.data[i] + (1.0 - b1) * g);
    float v = store(newExpAvgSq.dtype, b2 * expAvgSq.data[i] + (1.0 - b2) * g * g);
    newExpAvg.data[i] = m;
    newExpAvgSq.data[i] = v;
    double denom = std::sqrt(double(v)) / biasCorrection2Sqrt + attrs.epsilon;
    newParam.data[i] = store(newParam.dtype, p - stepSize * m / denom);
  }
  return {};
}

KernelStatus multiAdamwUpdate(TensorList params,
                              TensorList grads,
                              TensorList expAvgs,
                              TensorList expAvgSqs, float lr, int32_t step,
                              bool skip, const AdamWAttrs &attrs,
                              TensorList newParams,
                              TensorList newExpAvgs,
                              TensorList newExpAvgSqs) {
  Check check("multi_adamw_update");
  const size_t count = params.size();
  check.require(count > 0, "needs at least one tensor")
      .require(grads.size() == count && expAvgs.size() == count && expAvgSqs.size() == count &&
                   newParams.size() == count && newExpAvgs.size() == count &&
                   newExpAvgSqs.size() == count,
               "takes one grad, exp_avg, exp_avg_sq and their results per param (", count,
               " params)");
  if (check.failed())
    return check.status();
  for (size_t i = 0; i < count; ++i) {
    KernelStatus s = adamwUpdate(params[i], grads[i], expAvgs[i], expAvgSqs[i], lr, step, skip,
                                 attrs, newParams[i], newExpAvgs[i], newExpAvgSqs[i]);
    if (!s.ok())
      return KernelStatus{"multi_adamw_update: tensor " + std::to_string(i) + ": " + s.error};
  }
  return {};
}

KernelStatus larsUpdate(const TensorView &param, const TensorView &grad,
                        const TensorView &momentumBuffer, float lr, bool skip,
                        const LarsAttrs &attrs, const TensorView &newParam,
                        const TensorView &newMomentumBuffer) {
  Check check("lars_update");
  if (check.view("param", param)
          .shape("grad", grad, param.shape)
          .shape("momentum_buffer", momentumBuffer, param.shape)
          .shape("new_param", newParam, param.shape)
          .shape("new_momentum_buffer", newMomentumBuffer, param.shape)
          .failed())
    return check.status();
  if (skip) {
    copyInto(param, newParam);
    copyInto(momentumBuffer, newMomentumBuffer);
    return {};
  }
  const int64_t count = param.numel();
  double paramSq = 0, gradSq = 0;
  for (int64_t i = 0; i < count; ++i) {
    paramSq += double(param.data[i]) * param.data[i];
    gradSq += double(grad.data[i]) * grad.data[i];
  }
  const double paramNorm = std::sqrt(paramSq), gradNorm = std::sqrt(gradSq);
  const double localLr =
      paramNorm > 0 && gradNorm > 0
          ? attrs.trustCoefficient * paramNorm /
                (gradNorm + attrs.weightDecay * paramNorm + attrs.epsilon)
          : 1.0;
  for (int64_t i = 0; i < count; ++i) {
    double p = param.data[i];
    double g = localLr * (grad.data[i] + attrs.weightDecay * p);
    float buf = store(newMomentumBuffer.dtype,
                      attrs.momentum * momentumBuffer.data[i] + g);
    newMomentumBuffer.data[i] = buf;
    newParam.data[i] = store(newParam.dtype, p - double(lr) * buf);
  }
  return {};
}

KernelStatus multiLarsUpdate(TensorList params,
                             TensorList grads,
                             TensorList momentumBuffers, float lr, bool skip,
                             const LarsAttrs &attrs, TensorList newParams,
                             TensorList newMomentumBuffers) {
  Check check("multi_lars_update");
  const size_t count = params.size();
  check.require(count > 0, "needs at least one tensor")
      .require(grads.size() == count && momentumBuffers.size() == count &&
                   newParams.size() == count && newMomentumBuffers.size() == count,
               "takes one grad, momentum buffer and their results per param (", count,
               " params)");
  if (check.failed())
    return check.status();
  for (size_t i = 0; i < count; ++i) {
    KernelStatus s = larsUpdate(params[i], grads[i], momentumBuffers[i], lr, skip, attrs,
                                newParams[i], newMomentumBuffers[i]);
    if (!s.ok())
      return KernelStatus{"multi_lars_update: tensor " + std::to_string(i) + ": " + s.error};
  }
  return {};
}

KernelStatus emaUpdate(const TensorView &average, const TensorView &param,
                       double decay, const TensorView &newAverage) {
  Check check("ema_update");
  if (check.view("average", average)
          .shape("param", param, average.shape)
          .shape("new_average", newAverage, average.shape)
          .failed())
    return check.status();
  for (int64_t i = 0, e = average.numel(); i < e; ++i)
    newAverage.data[i] = store(newAverage.dtype, decay * average.data[i] +
                                                     (1.0 - decay) * param.data[i]);
  return {};
}

//===----------------------------------------------------------------------===//
// The ops of this family (cpu_ops.h)
//===----------------------------------------------------------------------===//

namespace {

namespace ot = op_table;

// The optimizers' attributes, shared by each single-tensor op and its
// multi-tensor form: `Attrs` is the op's op_table::<op>::attrs.
template <class Attrs> SgdAttrs sgdAttrsOf(const Node &node) {
  return {Attrs::momentum(node), Attrs::weight_decay(node), Attrs::nesterov(node)};
}
template <class Attrs> AdamWAttrs adamwAttrsOf(const Node &node) {
  return {Attrs::beta1(node), Attrs::beta2(node), Attrs::epsilon(node),
          Attrs::weight_decay(node)};
}
template <class Attrs> LarsAttrs larsAttrsOf(const Node &node) {
  return {Attrs::momentum(node), Attrs::weight_decay(node), Attrs::trust_coefficient(node),
          Attrs::epsilon(node)};
}

KernelStatus runCheckFinite(const OpRun &r) {
  using namespace ot::check_finite;
  *r.out(result::found_non_finite).data = checkFinite(r.inList(operand::inputs)) ? 1.0f : 0.0f;
  return {};
}

KernelStatus runUnscale(const OpRun &r) {
  using namespace ot::unscale;
  return unscale(r.in(operand::grad), r.scalar(operand::scale), r.out(result::result));
}

KernelStatus runMultiUnscale(const OpRun &r) { // rn.unscale of each grad by the scale
  using namespace ot::multi_unscale;
  const float scale = r.scalar(operand::scale);
  const IdList grads = r.inIds(operand::grads), to = r.outIds(result::results);
  for (size_t q = 0; q < to.size(); ++q)
    if (KernelStatus s = unscale(r.view(grads[q]), scale, r.view(to[q])); !s.ok())
      return s;
  return {};
}

KernelStatus runUpdateLossScale(const OpRun &r) {
  using namespace ot::update_loss_scale;
  float scale = 0;
  int32_t good = 0;
  KernelStatus s = updateLossScale(r.scalar(operand::scale), r.integer(operand::good_steps),
                                   r.scalar(operand::found_non_finite) != 0,
                                   attrs::growth(r.node), attrs::backoff(r.node),
                                   attrs::growth_interval(r.node), scale, good);
  if (s.ok()) {
    r.setScalar(result::new_scale, scale);
    r.setInteger(result::new_good_steps, good);
  }
  return s;
}

KernelStatus runSgdUpdate(const OpRun &r) {
  using namespace ot::sgd_update;
  return sgdUpdate(r.in(operand::param), r.in(operand::grad), r.inIfAny(operand::momentum_buffer),
                   r.scalar(operand::lr), r.skipIf(operand::skip_if), sgdAttrsOf<attrs>(r.node),
                   r.out(result::new_param), r.outIfAny(result::new_momentum_buffer));
}

KernelStatus runMultiSgdUpdate(const OpRun &r) {
  // new_values: the new params, then (with momentum) the new buffers.
  using namespace ot::multi_sgd_update;
  const IdList newValues = r.outIds(result::new_values);
  const size_t n = r.node.layout.operands.count(operand::params);
  return multiSgdUpdate(r.inList(operand::params), r.inList(operand::grads),
                        r.inList(operand::momentum_buffers), r.scalar(operand::lr),
                        r.skipIf(operand::skip_if), sgdAttrsOf<attrs>(r.node),
                        r.views(newValues, 0, n), r.views(newValues, n, newValues.size() - n));
}

KernelStatus runAdamwUpdate(const OpRun &r) {
  using namespace ot::adamw_update;
  return adamwUpdate(r.in(operand::param), r.in(operand::grad), r.in(operand::exp_avg),
                     r.in(operand::exp_avg_sq), r.scalar(operand::lr), r.integer(operand::step),
                     r.skipIf(operand::skip_if), adamwAttrsOf<attrs>(r.node),
                     r.out(result::new_param), r.out(result::new_exp_avg),
                     r.out(result::new_exp_avg_sq));
}

KernelStatus runMultiAdamwUpdate(const OpRun &r) {
  // new_values: the new params, exp_avgs, then exp_avg_sqs.
  using namespace ot::multi_adamw_update;
  const IdList newValues = r.outIds(result::new_values);
  const size_t n = r.node.layout.operands.count(operand::params);
  return multiAdamwUpdate(r.inList(operand::params), r.inList(operand::grads),
                          r.inList(operand::exp_avgs), r.inList(operand::exp_avg_sqs),
                          r.scalar(operand::lr), r.integer(operand::step),
                          r.skipIf(operand::skip_if), adamwAttrsOf<attrs>(r.node),
                          r.views(newValues, 0, n), r.views(newValues, n, n),
                          r.views(newValues, 2 * n, n));
}

KernelStatus runLarsUpdate(const OpRun &r) {
  using namespace ot::lars_update;
  return larsUpdate(r.in(operand::param), r.in(operand::grad), r.in(operand::momentum_buffer),
                    r.scalar(operand::lr), r.skipIf(operand::skip_if), larsAttrsOf<attrs>(r.node),
                    r.out(result::new_param), r.out(result::new_momentum_buffer));
}

KernelStatus runMultiLarsUpdate(const OpRun &r) {
  // new_values: the new params, then the new momentum buffers.
  using namespace ot::multi_lars_update;
  const IdList newValues = r.outIds(result::new_values);
  const size_t n = r.node.layout.operands.count(operand::params);
  return multiLarsUpdate(r.inList(operand::params), r.inList(operand::grads),
                         r.inList(operand::momentum_buffers), r.scalar(operand::lr),
                         r.skipIf(operand::skip_if), larsAttrsOf<attrs>(r.node),
                         r.views(newValues, 0, n), r.views(newValues, n, n));
}

KernelStatus runEmaUpdate(const OpRun &r) {
  using namespace ot::ema_update;
  return emaUpdate(r.in(operand::average), r.in(operand::param), attrs::decay(r.node),
                   r.out(result::new_average));
}

KernelStatus runMultiEmaUpdate(const OpRun &r) { // rn.ema_update of (averages[q], params[q])
  using namespace ot::multi_ema_update;
  const IdList averages = r.inIds(operand::averages), params = r.inIds(operand::params),
               to = r.outIds(result::results);
  const double decay = attrs::decay(r.node);
  for (size_t q = 0; q < to.size(); ++q)
    if (KernelStatus s = emaUpdate(r.view(averages[q]), r.view(params[q]), decay, r.view(to[q]));
        !s.ok())
      return s;
  return {};
}

} // namespace

const std::vector<CpuOp> &updateOps() {
  static const std::vector<CpuOp> ops = {
      {OpKind::check_finite, runCheckFinite},
      {OpKind::unscale, runUnscale},
      {OpKind::multi_unscale, runMultiUnscale},
      {OpKind::update_loss_scale, runUpdateLossScale},
      {OpKind::sgd_update, runSgdUpdate},
      {OpKind::multi_sgd_update, runMultiSgdUpdate},
      {OpKind::adamw_update, runAdamwUpdate},
      {OpKind::multi_adamw_update, runMultiAdamwUpdate},
      {OpKind::lars_update, runLarsUpdate},
      {OpKind::multi_lars_update, runMultiLarsUpdate},
      {OpKind::ema_update, runEmaUpdate},
      {OpKind::multi_ema_update, runMultiEmaUpdate},
  };
  return ops;
}

} // namespace rn::cpu
