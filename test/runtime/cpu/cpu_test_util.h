//===- cpu_test_util.h - Buffers and gradient checks for kernel tests -*- C++ -*-===//

#ifndef RN_TEST_RUNTIME_CPU_TEST_UTIL_H
#define RN_TEST_RUNTIME_CPU_TEST_UTIL_H

#include "runtime/cpu/cpu_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace rn::cpu::testing {

/// A list operand built in place (TensorList takes a vector of views).
using Views = std::vector<TensorView>;

/// An owning tensor of floats with a view on it.
struct Buffer {
  Shape shape;
  std::vector<float> data;
  DType dtype = DType::f32;

  Buffer() = default;
  explicit Buffer(Shape s, float fill = 0.0f, DType type = DType::f32)
      : shape(std::move(s)), dtype(type) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    data.assign(static_cast<size_t>(n), fill);
  }
  TensorView view() { return TensorView{data.data(), shape, dtype}; }
  float &operator[](size_t i) { return data[i]; }
  float operator[](size_t i) const { return data[i]; }
  size_t size() const { return data.size(); }
};

inline Buffer randomBuffer(Shape shape, std::mt19937 &rng, float lo = -1.0f,
                           float hi = 1.0f) {
  Buffer b(std::move(shape));
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float &v : b.data)
    v = dist(rng);
  return b;
}

/// sum_i g[i] * y[i] in double.
inline double dot(const Buffer &g, const Buffer &y) {
  double s = 0;
  for (size_t i = 0; i < g.size(); ++i)
    s += double(g[i]) * y[i];
  return s;
}

/// "[2, 3]".
inline std::string str(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
inline std::string str(const std::array<int64_t, 2> &a) {
  return str(Shape{a[0], a[1]});
}
inline std::string str(const Conv2dAttrs &a) {
  return "stride " + str(a.strides) + " pad " + str(a.padding) + " dilation " +
         str(a.dilation) + " groups " + std::to_string(a.groups);
}

/// Expects ASSERT-style success of a kernel.
#define RN_ASSERT_OK(expr)                                                     \
  do {                                                                         \
    ::rn::cpu::KernelStatus status_ = (expr);                                  \
    ASSERT_TRUE(status_.ok()) << status_.error;                                \
  } while (0)

/// Tolerance of a gradient check: |numeric - analytic| <= atol + rtol * |analytic|.
struct GradTolerance {
  double step;
  double atol;
  double rtol;
};

/// Checks `analytic` (the gradient of `loss` with respect to `x`) against
/// central differences of `loss`, element by element. `loss` reads `x`.
/// The actual step is the float difference of the perturbed values. With
/// RN_GRADCHECK_VERBOSE set, prints the worst error / tolerance ratio.
inline void expectGradient(const char *what, Buffer &x,
                           const std::vector<float> &analytic,
                           const std::function<double()> &loss,
                           GradTolerance tol) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  double worst = 0;
  size_t worstIndex = 0;
  double worstNumeric = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    float saved = x[i];
    float plus = static_cast<float>(saved + tol.step);
    float minus = static_cast<float>(saved - tol.step);
    x[i] = plus;
    double lp = loss();
    x[i] = minus;
    double lm = loss();
    x[i] = saved;
    double numeric = (lp - lm) / (double(plus) - double(minus));
    double ratio = std::fabs(numeric - analytic[i]) /
                   (tol.atol + tol.rtol * std::fabs(analytic[i]));
    if (ratio > worst) {
      worst = ratio;
      worstIndex = i;
      worstNumeric = numeric;
    }
  }
  if (std::getenv("RN_GRADCHECK_VERBOSE"))
    std::printf("gradcheck %-40s worst error / tolerance %.4f\n", what, worst);
  EXPECT_LE(worst, 1.0) << what << ": element " << worstIndex << " numeric "
                        << worstNumeric << " analytic " << analytic[worstIndex];
}

/// Expects |a[i] - b[i]| <= atol + rtol * |b[i]| for every element.
inline void expectClose(const char *what, const std::vector<float> &a,
                        const std::vector<double> &b, double atol,
                        double rtol = 0) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], atol + rtol * std::fabs(b[i]))
        << what << " element " << i;
}

inline void expectClose(const char *what, const std::vector<float> &a,
                        const std::vector<float> &b, double atol,
                        double rtol = 0) {
  expectClose(what, a, std::vector<double>(b.begin(), b.end()), atol, rtol);
}

} // namespace rn::cpu::testing

#endif // RN_TEST_RUNTIME_CPU_TEST_UTIL_H
