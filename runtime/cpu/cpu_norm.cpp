//===- cpu_norm.cpp - Batch and layer normalization, channel scale --------===//
//
// Batch normalization: statistics per channel (the last dimension) over the
// M = N * H * W (or N) other positions, two-pass in double. Layer
// normalization: statistics per row of C channels, two-pass in double. The
// per-channel layer scale (channel_scale) reduces its weight gradient over
// the same rows.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_kernels_detail.h"
#include "runtime/cpu/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace rn::cpu {

using detail::Check;
using detail::checkBatchNormInput;
using detail::store;

namespace {

/// result = (x - mean[c]) * scale[c] + bias[c] per channel c (the last
/// dimension) over `count` rows: the normalization of training and
/// inference, which differ in where mean and scale come from.
void normalize(const TensorView &input, int64_t count, const std::vector<double> &mean,
               const std::vector<double> &scale, const TensorView &bias,
               const TensorView &result) {
  const int64_t channels = static_cast<int64_t>(mean.size());
  for (int64_t r = 0; r < count; ++r)
    for (int64_t k = 0; k < channels; ++k) {
      int64_t i = r * channels + k;
      result.data[i] =
          store(result.dtype, (input.data[i] - mean[k]) * scale[k] + bias.data[k]);
    }
}

/// The batch mean and inv_std = 1 / sqrt(biased var + eps) per channel of
/// an input with `count` rows of `channels`, two-pass in double.
void statistics(const TensorView &input, int64_t channels, int64_t count, double epsilon,
                std::vector<double> &mean, std::vector<double> &invStd) {
  const size_t c = static_cast<size_t>(channels);
  mean.assign(c, 0.0);
  invStd.assign(c, 0.0);
  std::vector<double> var(c, 0.0);
  for (int64_t r = 0; r < count; ++r)
    for (size_t k = 0; k < c; ++k)
      mean[k] += input.data[r * channels + k];
  for (size_t k = 0; k < c; ++k)
    mean[k] /= static_cast<double>(count);
  for (int64_t r = 0; r < count; ++r)
    for (size_t k = 0; k < c; ++k) {
      double d = input.data[r * channels + k] - mean[k];
      var[k] += d * d;
    }
  for (size_t k = 0; k < c; ++k)
    invStd[k] = 1.0 / std::sqrt(var[k] / static_cast<double>(count) + epsilon);
}

} // namespace

KernelStatus batchNormTrain(const TensorView &input, const TensorView &weight,
                            const TensorView &bias, double epsilon,
                            const TensorView &result,
                            const TensorView &batchMean,
                            const TensorView &batchInvStd) {
  Check check("batch_norm_train");
  int64_t channels, count;
  if (checkBatchNormInput(check, input, channels, count).failed())
    return check.status();
  check.vector("weight", weight, channels)
      .vector("bias", bias, channels)
      .shape("result", result, input.shape)
      .f32("batch_mean", batchMean, Shape{channels})
      .f32("batch_inv_std", batchInvStd, Shape{channels})
      .require(epsilon >= 0, "epsilon must be non-negative");
  if (check.failed())
    return check.status();

  const size_t c = static_cast<size_t>(channels);
  std::vector<double> mean, invStd;
  statistics(input, channels, count, epsilon, mean, invStd);
  std::vector<double> scale(c);
  for (size_t k = 0; k < c; ++k) {
    batchMean.data[k] = static_cast<float>(mean[k]);
    batchInvStd.data[k] = static_cast<float>(invStd[k]);
    scale[k] = invStd[k] * weight.data[k];
  }
  normalize(input, count, mean, scale, bias, result);
  return {};
}

KernelStatus batchNormStatistics(const TensorView &input, double epsilon,
                                 const TensorView &batchMean, const TensorView &batchInvStd) {
  Check check("batch_norm_statistics");
  int64_t channels, count;
  if (checkBatchNormInput(check, input, channels, count).failed())
    return check.status();
  check.f32("batch_mean", batchMean, Shape{channels})
      .f32("batch_inv_std", batchInvStd, Shape{channels})
      .require(epsilon >= 0, "epsilon must be non-negative");
  if (check.failed())
    return check.status();
  std::vector<double> mean, invStd;
  statistics(input, channels, count, epsilon, mean, invStd);
  for (size_t k = 0; k < static_cast<size_t>(channels); ++k) {
    batchMean.data[k] = static_cast<float>(mean[k]);
    batchInvStd.data[k] = static_cast<float>(invStd[k]);
  }
  return {};
}

KernelStatus batchNorm(const TensorView &input, const TensorView &weight,
                       const TensorView &bias, double epsilon,
                       const TensorView &result) {
  int64_t channels = input.shape.empty() ? 0 : input.shape.back();
  std::vector<float> mean(static_cast<size_t>(std::max<int64_t>(channels, 0)));
  std::vector<float> invStd(mean.size());
  return batchNormTrain(input, weight, bias, epsilon, result,
                        TensorView{mean.data(), {channels}},
                        TensorView{invStd.data(), {channels}});
}

KernelStatus batchNormInference(const TensorView &input,
                                const TensorView &weight,
                                const TensorView &bias,
                                const TensorView &runningMean,
                                const TensorView &runningVar, double epsilon,
                                const TensorView &result) {
  Check check("batch_norm_inference");
  int64_t channels, count;
  if (checkBatchNormInput(check, input, channels, count).failed())
    return check.status();
  check.vector("weight", weight, channels)
      .vector("bias", bias, channels)
      .vector("running_mean", runningMean, channels)
      .vector("running_var", runningVar, channels)
      .shape("result", result, input.shape)
      .require(epsilon >= 0, "epsilon must be non-negative");
  if (check.failed())
    return check.status();
  const size_t c = static_cast<size_t>(channels);
  std::vector<double> scale(c);
  for (size_t k = 0; k < c; ++k)
    scale[k] = double(weight.data[k]) / std::sqrt(double(runningVar.data[k]) + epsilon);
  normalize(input, count, detail::widen(runningMean.data, channels), scale, bias, result);
  return {};
}

KernelStatus batchNormBackward(const TensorView &outputGrad,
                               const TensorView &input,
                               const TensorView &weight,
                               const TensorView &batchMean,
                               const TensorView &batchInvStd,
                               const TensorView &weightGradAcc,
                               const TensorView &biasGradAcc,
                               const TensorView &inputGrad,
                               const TensorView &weightGrad,
                               const TensorView &biasGrad) {
  Check check("batch_norm_backward");
  int64_t channels, count;
  if (checkBatchNormInput(check, input, channels, count).failed())
    return check.status();
  check.shape("output_grad", outputGrad, input.shape)
      .vector("weight", weight, channels)
      .f32("batch_mean", batchMean, Shape{channels})
      .f32("batch_inv_std", batchInvStd, Shape{channels})
      .vector("weight_grad_acc", weightGradAcc, channels)
      .vector("bias_grad_acc", biasGradAcc, channels)
      .shape("input_grad", inputGrad, input.shape)
      .vector("weight_grad", weightGrad, channels)
      .vector("bias_grad", biasGrad, channels);
  if (check.failed())
    return check.status();

  const size_t c = static_cast<size_t>(channels);
  std::vector<double> sumDy(c, 0.0), sumDyXhat(c, 0.0);
  for (int64_t r = 0; r < count; ++r)
    for (size_t k = 0; k < c; ++k) {
      int64_t i = r * channels + static_cast<int64_t>(k);
      double xhat = (double(input.data[i]) - batchMean.data[k]) * batchInvStd.data[k];
      sumDy[k] += outputGrad.data[i];
      sumDyXhat[k] += outputGrad.data[i] * xhat;
    }
  const double m = static_cast<double>(count);
  std::vector<double> factor(c);
  for (size_t k = 0; k < c; ++k)
    factor[k] = double(weight.data[k]) * batchInvStd.data[k] / m;
  for (int64_t r = 0; r < count; ++r)
    for (size_t k = 0; k < c; ++k) {
      int64_t i = r * channels + static_cast<int64_t>(k);
      double xhat = (double(input.data[i]) - batchMean.data[k]) * batchInvStd.data[k];
      inputGrad.data[i] = store(
          inputGrad.dtype,
          factor[k] * (m * outputGrad.data[i] - sumDy[k] - xhat * sumDyXhat[k]));
    }
  for (size_t k = 0; k < c; ++k) {
    weightGrad.data[k] =
        store(weightGrad.dtype, double(weightGradAcc.data[k]) + sumDyXhat[k]);
    biasGrad.data[k] = store(biasGrad.dtype, double(biasGradAcc.data[k]) + sumDy[k]);
  }
  return {};
}

namespace {
/// A row's mean and rstd = 1 / sqrt(biased var + eps), two-pass in double.
void rowStatistics(const float *row, int64_t channels, double epsilon, double &mean,
                   double &rstd) {
  double sum = 0.0;
  for (int64_t k = 0; k < channels; ++k)
    sum += row[k];
  mean = sum / static_cast<double>(channels);
  double var = 0.0;
  for (int64_t k = 0; k < channels; ++k) {
    double d = row[k] - mean;
    var += d * d;
  }
  rstd = 1.0 / std::sqrt(var / static_cast<double>(channels) + epsilon);
}
} // namespace

KernelStatus layerNorm(const TensorView &input, const TensorView &weight,
                       const TensorView &bias, double epsilon,
                       const TensorView &result) {
  Check check("layer_norm");
  int64_t channels, count;
  if (checkBatchNormInput(check, input, channels, count).failed())
    return check.status();
  check.vector("weight", weight, channels)
      .vector("bias", bias, channels)
      .shape("result", result, input.shape)
      .require(epsilon >= 0, "epsilon must be non-negative");
  if (check.failed())
    return check.status();
  for (int64_t r = 0; r < count; ++r) {
    const float *row = input.data + r * channels;
    double mean, rstd;
    rowStatistics(row, channels, epsilon, mean, rstd);
    for (int64_t k = 0; k < channels; ++k)
      result.data[r * channels + k] =
          store(result.dtype, (row[k] - mean) * rstd * weight.data[k] + bias.data[k]);
  }
  return {};
}

KernelStatus layerNormBackward(const TensorView &outputGrad, const TensorView &input,
                               const TensorView &weight, const TensorView &weightGradAcc,
                               const TensorView &biasGradAcc, double epsilon,
                               const TensorView &inputGrad, const TensorView &weightGrad,
                               const TensorView &biasGrad) {
  Check check("layer_norm_backward");
  int64_t channels, count;
  if (checkBatchNormInput(check, input, channels, count).failed())
    return check.status();
  check.shape("output_grad", outputGrad, input.shape)
      .vector("weight", weight, channels)
      .vector("weight_grad_acc", weightGradAcc, channels)
      .vector("bias_grad_acc", biasGradAcc, channels)
      .shape("input_grad", inputGrad, input.shape)
      .vector("weight_grad", weightGrad, channels)
      .vector("bias_grad", biasGrad, channels)
      .require(epsilon >= 0, "epsilon must be non-negative");
  if (check.failed())
    return check.status();
  const size_t c = static_cast<size_t>(channels);
  std::vector<double> sumDyXhat(c, 0.0), sumDy(c, 0.0), xhat(c);
  for (int64_t r = 0; r < count; ++r) {
    const float *row = input.data + r * channels;
    const float *dy = outputGrad.data + r * channels;
    double mean, rstd;
    rowStatistics(row, channels, epsilon, mean, rstd);
    double meanG = 0.0, meanGXhat = 0.0;
    for (size_t k = 0; k < c; ++k) {
      xhat[k] = (row[k] - mean) * rstd;
      double g = double(dy[k]) * weight.data[k];
      meanG += g;
      meanGXhat += g * xhat[k];
      sumDyXhat[k] += double(dy[k]) * xhat[k];
      sumDy[k] += dy[k];
    }
    meanG /= static_cast<double>(channels);
    meanGXhat /= static_cast<double>(channels);
    for (size_t k = 0; k < c; ++k) {
      double g = double(dy[k]) * weight.data[k];
      inputGrad.data[r * channels + int64_t(k)] =
          store(inputGrad.dtype, rstd * (g - meanG - xhat[k] * meanGXhat));
    }
  }
  for (size_t k = 0; k < c; ++k) {
    weightGrad.data[k] = store(weightGrad.dtype, double(weightGradAcc.data[k]) + sumDyXhat[k]);
    biasGrad.data[k] = store(biasGrad.dtype, double(biasGradAcc.data[k]) + sumDy[k]);
  }
  return {};
}

KernelStatus channelScale(const TensorView &input, const TensorView &scale,
                          const TensorView &result) {
  Check check("channel_scale");
  int64_t channels, count;
  if (checkBatchNormInput(check, input, channels, count).failed())
    return check.status();
  check.vector("scale", scale, channels).shape("result", result, input.shape);
  if (check.failed())
    return check.status();
  for (int64_t r = 0; r < count; ++r)
    for (int64_t k = 0; k < channels; ++k) {
      const int64_t i = r * channels + k;
      result.data[i] = store(result.dtype, double(input.data[i]) * scale.data[k]);
    }
  return {};
}

KernelStatus channelScaleBackward(const TensorView &outputGrad, const TensorView &input,
                                  const TensorView &scale, const TensorView &scaleGradAcc,
                                  const TensorView &inputGrad, const TensorView &scaleGrad) {
  Check check("channel_scale_backward");
  int64_t channels, count;
  if (checkBatchNormInput(check, input, channels, count).failed())
    return check.status();
  check.shape("output_grad", outputGrad, input.shape)
      .vector("scale", scale, channels)
      .vector("scale_grad_acc", scaleGradAcc, channels)
      .shape("input_grad", inputGrad, input.shape)
      .vector("scale_grad", scaleGrad, channels);
  if (check.failed())
    return check.status();
  std::vector<double> acc(static_cast<size_t>(channels), 0.0);
  for (int64_t r = 0; r < count; ++r)
    for (int64_t k = 0; k < channels; ++k) {
      const int64_t i = r * channels + k;
      const double dy = outputGrad.data[i];
      acc[size_t(k)] += dy * input.data[i];
      inputGrad.data[i] = store(inputGrad.dtype, dy * scale.data[k]);
    }
  for (int64_t k = 0; k < channels; ++k)
    scaleGrad.data[k] = store(scaleGrad.dtype, double(scaleGradAcc.data[k]) + acc[size_t(k)]);
  return {};
}

KernelStatus reluBackwardRecomputed(const TensorView &outputGrad,
                                    const TensorView &input,
                                    const TensorView &gamma,
                                    const TensorView &beta,
                                    const TensorView &batchMean,
                                    const TensorView &batchInvStd,
                                    const TensorView &inputGrad) {
  Check check("relu_backward (recomputed mask)");
  int64_t channels, count;
  if (checkBatchNormInput(check, input, channels, count).failed())
    return check.status();
  check.shape("output_grad", outputGrad, input.shape)
      .vector("gamma", gamma, channels)
      .vector("beta", beta, channels)
      .f32("batch_mean", batchMean, Shape{channels})
      .f32("batch_inv_std", batchInvStd, Shape{channels})
      .shape("input_grad", inputGrad, input.shape);
  if (check.failed())
    return check.status();
  for (int64_t r = 0; r < count; ++r)
    for (int64_t k = 0; k < channels; ++k) {
      int64_t i = r * channels + k;
      float scale = batchInvStd.data[k] * gamma.data[k];
      float t = std::fma(input.data[i] - batchMean.data[k], scale, beta.data[k]);
      bool positive = store(input.dtype, t) > 0.f;
      inputGrad.data[i] = store(inputGrad.dtype, positive ? outputGrad.data[i] : 0.0);
    }
  return {};
}

KernelStatus updateRunningStats(const TensorView &runningMean,
                                const TensorView &runningVar,
                                const TensorView &batchMean,
                                const TensorView &batchInvStd, double epsilon,
                                double momentum, int64_t count,
                                const TensorView &newRunningMean,
                                const TensorView &newRunningVar) {
  Check check("update_running_stats");
  if (check.rank("running_mean", runningMean, 1, "[C]").failed())
    return check.status();
  Shape vec = runningMean.shape;
  check.shape("running_var", runningVar, vec)
      .f32("batch_mean", batchMean, vec)
      .f32("batch_inv_std", batchInvStd, vec)
      .shape("new_running_mean", newRunningMean, vec)
      .shape("new_running_var", newRunningVar, vec)
      .require(count >= 2, "count must be at least 2 (the unbiased variance "
                           "divides by count - 1), got ", count);
  if (check.failed())
    return check.status();
  const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
  for (int64_t k = 0; k < vec[0]; ++k) {
    double invStd = batchInvStd.data[k];
    // Clamped: rounding can push 1 / inv_std^2 - eps a hair below zero.
    double var = std::max(0.0, 1.0 / (invStd * invStd) - epsilon);
    double mean = (1.0 - momentum) * runningMean.data[k] + momentum * batchMean.data[k];
    double newVar = (1.0 - momentum) * runningVar.data[k] + momentum * var * unbias;
    newRunningMean.data[k] = store(newRunningMean.dtype, mean);
    newRunningVar.data[k] = store(newRunningVar.dtype, newVar);
  }
  return {};
}

//===----------------------------------------------------------------------===//
// The ops of this family (cpu_ops.h)
//===----------------------------------------------------------------------===//

namespace {

namespace ot = op_table;

KernelStatus runBatchNorm(const OpRun &r) {
  using namespace ot::batch_norm;
  return batchNorm(r.in(operand::input), r.in(operand::weight), r.in(operand::bias),
                   attrs::epsilon(r.node), r.out(result::result));
}
KernelStatus runBatchNormTrain(const OpRun &r) {
  using namespace ot::batch_norm_train;
  return batchNormTrain(r.in(operand::input), r.in(operand::weight), r.in(operand::bias),
                        attrs::epsilon(r.node), r.out(result::result),
                        r.out(result::batch_mean), r.out(result::batch_inv_std));
}
KernelStatus runBatchNormInference(const OpRun &r) {
  using namespace ot::batch_norm_inference;
  return batchNormInference(r.in(operand::input), r.in(operand::weight), r.in(operand::bias),
                            r.in(operand::running_mean), r.in(operand::running_var),
                            attrs::epsilon(r.node), r.out(result::result));
}
KernelStatus runUpdateRunningStats(const OpRun &r) {
  using namespace ot::update_running_stats;
  return updateRunningStats(r.in(operand::running_mean), r.in(operand::running_var),
                            r.in(operand::batch_mean), r.in(operand::batch_inv_std),
                            attrs::epsilon(r.node), attrs::momentum(r.node),
                            attrs::count(r.node), r.out(result::new_running_mean),
                            r.out(result::new_running_var));
}
KernelStatus runBatchNormBackward(const OpRun &r) {
  using namespace ot::batch_norm_backward;
  return batchNormBackward(r.in(operand::output_grad), r.in(operand::input),
                           r.in(operand::weight), r.in(operand::batch_mean),
                           r.in(operand::batch_inv_std), r.in(operand::weight_grad_acc),
                           r.in(operand::bias_grad_acc), r.out(result::input_grad),
                           r.out(result::weight_grad), r.out(result::bias_grad));
}

KernelStatus runLayerNorm(const OpRun &r) {
  using namespace ot::layer_norm;
  return layerNorm(r.in(operand::input), r.in(operand::weight), r.in(operand::bias),
                   attrs::epsilon(r.node), r.out(result::result));
}
KernelStatus runLayerNormBackward(const OpRun &r) {
  using namespace ot::layer_norm_backward;
  return layerNormBackward(r.in(operand::output_grad), r.in(operand::input),
                           r.in(operand::weight), r.in(operand::weight_grad_acc),
                           r.in(operand::bias_grad_acc), attrs::epsilon(r.node),
                           r.out(result::input_grad), r.out(result::weight_grad),
                           r.out(result::bias_grad));
}
KernelStatus runChannelScale(const OpRun &r) {
  using namespace ot::channel_scale;
  return channelScale(r.in(operand::input), r.in(operand::scale), r.out(result::result));
}
KernelStatus runChannelScaleBackward(const OpRun &r) {
  using namespace ot::channel_scale_backward;
  return channelScaleBackward(r.in(operand::output_grad), r.in(operand::input),
                              r.in(operand::scale), r.in(operand::scale_grad_acc),
                              r.out(result::input_grad), r.out(result::scale_grad));
}

} // namespace

const std::vector<CpuOp> &normOps() {
  static const std::vector<CpuOp> ops = {
      {OpKind::batch_norm, runBatchNorm},
      {OpKind::batch_norm_train, runBatchNormTrain},
      {OpKind::batch_norm_inference, runBatchNormInference},
      {OpKind::update_running_stats, runUpdateRunningStats},
      {OpKind::batch_norm_backward, runBatchNormBackward},
      {OpKind::layer_norm, runLayerNorm},
      {OpKind::layer_norm_backward, runLayerNormBackward},
      {OpKind::channel_scale, runChannelScale},
      {OpKind::channel_scale_backward, runChannelScaleBackward},
  };
  return ops;
}

} // namespace rn::cpu
