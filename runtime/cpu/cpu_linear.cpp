//===- cpu_linear.cpp - Fully connected layer: forward and backward -------===//
//
// Matrix products in double through OpenBLAS's dgemm (products of floats
// are exact in double, sums are in double; deterministic, see detail::gemm).
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_kernels_detail.h"
#include "runtime/cpu/cpu_ops.h"

#include <algorithm>
#include <vector>

namespace rn::cpu {
namespace {

using detail::Check;
using detail::shapeString;
using detail::store;
using detail::widen;

/// Checks x [N, in] and W [out, in]; sets the sizes.
Check &checkLinear(Check &check, const Shape &input, const Shape &weight,
                   int64_t &n, int64_t &in, int64_t &out) {
  if (input.size() != 2)
    return check.fail("input must be [N, in_features], got shape ",
                      shapeString(input));
  if (weight.size() != 2)
    return check.fail("weight must be [out_features, in_features], got shape ",
                      shapeString(weight));
  n = input[0];
  in = input[1];
  out = weight[0];
  return check.require(weight[1] == in, "weight ", shapeString(weight),
                       " expects ", weight[1], " input features but the input ",
                       shapeString(input), " has ", in);
}

} // namespace

KernelStatus linear(const TensorView &input, const TensorView &weight,
                    const TensorView *bias, const TensorView &result) {
  Check check("linear");
  int64_t n, in, out;
  if (check.view("input", input).view("weight", weight).failed() ||
      checkLinear(check, input.shape, weight.shape, n, in, out).failed())
    return check.status();
  if (bias)
    check.shape("bias", *bias, Shape{out});
  if (check.shape("result", result, Shape{n, out}).failed())
    return check.status();

  // y[N, out] = x[N, in] * W[out, in]^T + b.
  const std::vector<double> x = widen(input.data, n * in);
  const std::vector<double> w = widen(weight.data, out * in);
  std::vector<double> y(static_cast<size_t>(n * out));
  detail::gemm(false, true, n, out, in, 1.0, x.data(), in, w.data(), in, 0.0,
               y.data(), out);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < out; ++o)
      result.data[b * out + o] =
          store(result.dtype, y[b * out + o] + (bias ? bias->data[o] : 0.0));
  return {};
}

KernelStatus linearBackwardInput(const TensorView &outputGrad,
                                 const TensorView &weight,
                                 const TensorView &inputGrad) {
  Check check("linear_backward (input gradient)");
  int64_t n, in, out;
  if (check.view("input_grad", inputGrad).view("weight", weight).failed() ||
      checkLinear(check, inputGrad.shape, weight.shape, n, in, out).failed() ||
      check.shape("output_grad", outputGrad, Shape{n, out}).failed())
    return check.status();
  // dx[N, in] = dy[N, out] * W[out, in].
  const std::vector<double> dy = widen(outputGrad.data, n * out);
  const std::vector<double> w = widen(weight.data, out * in);
  std::vector<double> dx(static_cast<size_t>(n * in));
  detail::gemm(false, false, n, in, out, 1.0, dy.data(), out, w.data(), in,
               0.0, dx.data(), in);
  for (size_t i = 0; i < dx.size(); ++i)
    inputGrad.data[i] = store(inputGrad.dtype, dx[i]);
  return {};
}

KernelStatus linearBackwardWeight(const TensorView &outputGrad,
                                  const TensorView &input,
                                  const TensorView &weightGradAcc,
                                  const TensorView &weightGrad) {
  Check check("linear_backward (weight gradient)");
  int64_t n, in, out;
  if (check.view("input", input).view("weight_grad_acc", weightGradAcc).failed() ||
      checkLinear(check, input.shape, weightGradAcc.shape, n, in, out).failed() ||
      check.shape("output_grad", outputGrad, Shape{n, out})
          .shape("weight_grad", weightGrad, weightGradAcc.shape)
          .failed())
    return check.status();
  // dW[out, in] = dy[N, out]^T * x[N, in].
  const std::vector<double> dy = widen(outputGrad.data, n * out);
  const std::vector<double> x = widen(input.data, n * in);
  std::vector<double> acc(static_cast<size_t>(out * in));
  detail::gemm(true, false, out, in, n, 1.0, dy.data(), out, x.data(), in, 0.0,
               acc.data(), in);
  for (size_t k = 0; k < acc.size(); ++k)
    weightGrad.data[k] = store(weightGrad.dtype, double(weightGradAcc.data[k]) + acc[k]);
  return {};
}

KernelStatus linearBackwardBias(const TensorView &outputGrad,
                                const TensorView &biasGradAcc,
                                const TensorView &biasGrad) {
  Check check("linear_backward (bias gradient)");
  if (check.rank("output_grad", outputGrad, 2, "[N, out_features]").failed())
    return check.status();
  int64_t n = outputGrad.dim(0), out = outputGrad.dim(1);
  if (check.shape("bias_grad_acc", biasGradAcc, Shape{out})
          .shape("bias_grad", biasGrad, Shape{out})
          .failed())
    return check.status();
  detail::accumulateChannelSums(outputGrad.data, n, out, biasGradAcc, biasGrad);
  return {};
}

KernelStatus linearBackward(const TensorView &outputGrad,
                            const TensorView &input, const TensorView &weight,
                            const TensorView &weightGradAcc,
                            const TensorView *biasGradAcc,
                            const TensorView *inputGrad,
                            const TensorView &weightGrad,
                            const TensorView *biasGrad) {
  Check check("linear_backward");
  check.require((biasGradAcc == nullptr) == (biasGrad == nullptr),
                "bias_grad_acc and the bias gradient go together");
  check.shape("weight", weight, weightGradAcc.shape);
  if (inputGrad)
    check.shape("input_grad", *inputGrad, input.shape);
  if (check.failed())
    return check.status();
  if (inputGrad) {
    KernelStatus s = linearBackwardInput(outputGrad, weight, *inputGrad);
    if (!s.ok())
      return s;
  }
  KernelStatus s = linearBackwardWeight(outputGrad, input, weightGradAcc, weightGrad);
  if (!s.ok() || !biasGrad)
    return s;
  return linearBackwardBias(outputGrad, *biasGradAcc, *biasGrad);
}

//===----------------------------------------------------------------------===//
// The ops of this family (cpu_ops.h)
//===----------------------------------------------------------------------===//

namespace {

namespace ot = op_table;

KernelStatus runLinear(const OpRun &r) {
  using namespace ot::linear;
  return linear(r.in(operand::input), r.in(operand::weight), r.inIfAny(operand::bias),
                r.out(result::result));
}

KernelStatus runLinearBackward(const OpRun &r) {
  using namespace ot::linear_backward;
  if (r.role == "weight_grad")
    return linearBackwardWeight(r.in(operand::output_grad), r.in(operand::input),
                                r.in(operand::weight_grad_acc), r.out(result::weight_grad));
  if (r.role == "bias_grad")
    return linearBackwardBias(r.in(operand::output_grad), r.in(operand::bias_grad_acc),
                              r.out(result::bias_grad));
  if (r.role == "input_grad")
    return linearBackwardInput(r.in(operand::output_grad), r.in(operand::weight),
                               r.out(result::input_grad));
  return unknownPart(r);
}

Access linearBackwardAccess(const Node &node, std::string_view role) {
  using namespace ot::linear_backward;
  if (role == "weight_grad")
    return partAccess(node, {}, {operand::output_grad, operand::input, operand::weight_grad_acc},
                      {result::weight_grad});
  if (role == "bias_grad")
    return partAccess(node, {}, {operand::output_grad, operand::bias_grad_acc},
                      {result::bias_grad});
  if (role == "input_grad")
    return partAccess(node, {}, {operand::output_grad, operand::weight}, {result::input_grad});
  return {};
}

} // namespace

const std::vector<CpuOp> &linearOps() {
  static const std::vector<CpuOp> ops = {
      {OpKind::linear, runLinear},
      {OpKind::linear_backward, runLinearBackward, linearBackwardAccess},
  };
  return ops;
}

} // namespace rn::cpu
