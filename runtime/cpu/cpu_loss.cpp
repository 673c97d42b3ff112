//===- cpu_loss.cpp - Softmax cross-entropy and top-1 hits ----------------===//
//
// Everything in double: log-sum-exp with the row maximum subtracted.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_kernels_detail.h"
#include "runtime/cpu/cpu_ops.h"

#include <algorithm>
#include <cmath>

namespace rn::cpu {
namespace {

using detail::Check;
using detail::shapeString;
using detail::store;

/// Checks logits [N, C] and labels [N] with every label in [0, C).
Check &checkLogits(Check &check, const TensorView &logits,
                   const LabelView &labels, int64_t &n, int64_t &c) {
  if (check.rank("logits", logits, 2, "[N, classes]").failed())
    return check;
  n = logits.dim(0);
  c = logits.dim(1);
  check.require(labels.shape == Shape{n}, "labels must have shape ",
                shapeString(Shape{n}), ", got ", shapeString(labels.shape))
      .require(labels.data != nullptr || n == 0, "labels has no data")
      .require(c > 0, "logits has no classes");
  for (int64_t i = 0; i < n && !check.failed(); ++i)
    check.require(labels.data[i] >= 0 && labels.data[i] < c, "label ",
                  labels.data[i], " of row ", i, " is not in [0, ", c, ")");
  return check;
}

/// log(sum_c exp(row[c])), shifted by the maximum.
double logSumExp(const float *row, int64_t c) {
  double m = row[0];
  for (int64_t k = 1; k < c; ++k)
    m = std::max(m, double(row[k]));
  double sum = 0;
  for (int64_t k = 0; k < c; ++k)
    sum += std::exp(row[k] - m);
  return m + std::log(sum);
}

} // namespace

KernelStatus softmaxCrossEntropy(const TensorView &logits,
                                 const LabelView &labels,
                                 double labelSmoothing, float &loss) {
  Check check("softmax_cross_entropy");
  int64_t n = 0, c = 0;
  if (checkLogits(check, logits, labels, n, c)
          .require(labelSmoothing >= 0 && labelSmoothing <= 1,
                   "label_smoothing must be in [0, 1], got ", labelSmoothing)
          .require(n > 0, "empty batch")
          .failed())
    return check.status();
  double total = 0;
  for (int64_t b = 0; b < n; ++b) {
    const float *row = logits.data + b * c;
    double lse = logSumExp(row, c);
    // -sum_c t_c * (row[c] - lse) with t = (1 - s) onehot + s / C.
    double smooth = 0;
    for (int64_t k = 0; k < c; ++k)
      smooth += lse - row[k];
    total += (1.0 - labelSmoothing) * (lse - row[labels.data[b]]) +
             labelSmoothing / static_cast<double>(c) * smooth;
  }
  loss = static_cast<float>(total / static_cast<double>(n));
  return {};
}

KernelStatus softmaxCrossEntropyBackward(const TensorView &logits,
                                         const LabelView &labels, float scale,
                                         double labelSmoothing,
                                         const TensorView &logitsGrad) {
  Check check("softmax_cross_entropy_backward");
  int64_t n = 0, c = 0;
  if (checkLogits(check, logits, labels, n, c)
          .require(labelSmoothing >= 0 && labelSmoothing <= 1,
                   "label_smoothing must be in [0, 1], got ", labelSmoothing)
          .require(n > 0, "empty batch")
          .shape("logits_grad", logitsGrad, logits.shape)
          .failed())
    return check.status();
  const double factor = double(scale) / static_cast<double>(n);
  const double uniform = labelSmoothing / static_cast<double>(c);
  for (int64_t b = 0; b < n; ++b) {
    const float *row = logits.data + b * c;
    double lse = logSumExp(row, c);
    for (int64_t k = 0; k < c; ++k) {
      double target = uniform + (k == labels.data[b] ? 1.0 - labelSmoothing : 0.0);
      logitsGrad.data[b * c + k] =
          store(logitsGrad.dtype, (std::exp(row[k] - lse) - target) * factor);
    }
  }
  return {};
}

KernelStatus countCorrect(const TensorView &logits, const LabelView &labels,
                          int32_t &correct) {
  Check check("count_correct");
  int64_t n = 0, c = 0;
  if (checkLogits(check, logits, labels, n, c).failed())
    return check.status();
  int64_t hits = 0;
  for (int64_t b = 0; b < n; ++b) {
    const float *row = logits.data + b * c;
    int64_t best = 0;
    for (int64_t k = 1; k < c; ++k)
      if (row[k] > row[best])
        best = k;
    hits += best == labels.data[b];
  }
  correct = static_cast<int32_t>(hits);
  return {};
}

//===----------------------------------------------------------------------===//
// The ops of this family (cpu_ops.h)
//===----------------------------------------------------------------------===//

namespace {

namespace ot = op_table;

KernelStatus runSoftmaxCrossEntropy(const OpRun &r) {
  using namespace ot::softmax_cross_entropy;
  float loss = 0;
  KernelStatus s = softmaxCrossEntropy(r.in(operand::logits), r.labels(operand::labels),
                                       attrs::label_smoothing(r.node), loss);
  if (s.ok())
    r.setScalar(result::loss, loss);
  return s;
}

KernelStatus runSoftmaxCrossEntropyBackward(const OpRun &r) {
  using namespace ot::softmax_cross_entropy_backward;
  return softmaxCrossEntropyBackward(
      r.in(operand::logits), r.labels(operand::labels),
      r.node.layout.operands.has(operand::scale) ? r.scalar(operand::scale) : 1.0f,
      attrs::label_smoothing(r.node), r.out(result::logits_grad));
}

KernelStatus runCountCorrect(const OpRun &r) {
  using namespace ot::count_correct;
  int32_t correct = 0;
  KernelStatus s = countCorrect(r.in(operand::logits), r.labels(operand::labels), correct);
  if (s.ok())
    r.setInteger(result::correct, correct);
  return s;
}

} // namespace

const std::vector<CpuOp> &lossOps() {
  static const std::vector<CpuOp> ops = {
      {OpKind::softmax_cross_entropy, runSoftmaxCrossEntropy},
      {OpKind::softmax_cross_entropy_backward, runSoftmaxCrossEntropyBackward},
      {OpKind::count_correct, runCountCorrect},
  };
  return ops;
}

} // namespace rn::cpu
