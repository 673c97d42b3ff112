//===- cpu_kernels_test.cpp - CPU reference kernels vs direct formulas ----===//
//
// Forward ops against straightforward computations written here, optimizers
// and loss scaling against PyTorch's formulas, f16/bf16 rounding, dropout's
// and stochastic depth's random streams. Gradients are checked in
// gradcheck_test.cpp.
//
//===----------------------------------------------------------------------===//

#include "cpu_test_util.h"
#include "runtime/cpu/cpu_kernels_detail.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace rn::cpu {
namespace {

using testing::Views;
using testing::Buffer;
using testing::expectClose;
using testing::randomBuffer;

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

/// The textbook formula: one sum per output element.
std::vector<double> naiveConv2d(const Buffer &x, const Buffer &w,
                                const Buffer *b, const Conv2dAttrs &a,
                                Shape &outShape) {
  int64_t n = x.shape[0], h = x.shape[1], wd = x.shape[2], c = x.shape[3];
  int64_t o = w.shape[0], kh = w.shape[1], kw = w.shape[2], cg = w.shape[3];
  int64_t oh = (h + 2 * a.padding[0] - a.dilation[0] * (kh - 1) - 1) / a.strides[0] + 1;
  int64_t ow = (wd + 2 * a.padding[1] - a.dilation[1] * (kw - 1) - 1) / a.strides[1] + 1;
  int64_t og = o / a.groups;
  outShape = {n, oh, ow, o};
  std::vector<double> y(static_cast<size_t>(n * oh * ow * o));
  for (int64_t in = 0; in < n; ++in)
    for (int64_t yy = 0; yy < oh; ++yy)
      for (int64_t xx = 0; xx < ow; ++xx)
        for (int64_t oc = 0; oc < o; ++oc) {
          int64_t g = oc / og;
          double s = b ? (*b)[oc] : 0.0;
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx)
              for (int64_t ci = 0; ci < cg; ++ci) {
                int64_t iy = yy * a.strides[0] - a.padding[0] + ky * a.dilation[0];
                int64_t ix = xx * a.strides[1] - a.padding[1] + kx * a.dilation[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd)
                  continue;
                s += double(x[((in * h + iy) * wd + ix) * c + g * cg + ci]) *
                     w[((oc * kh + ky) * kw + kx) * cg + ci];
              }
          y[((in * oh + yy) * ow + xx) * o + oc] = s;
        }
  return y;
}

struct ConvCase {
  Shape input, filter;
  Conv2dAttrs attrs;
  bool bias;
};

void PrintTo(const ConvCase &c, std::ostream *os) {
  *os << "input " << testing::str(c.input) << " filter " << testing::str(c.filter) << " "
      << testing::str(c.attrs) << (c.bias ? " bias" : "");
}


class Conv2dForward : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2dForward, MatchesNaiveFormula) {
  const ConvCase &cc = GetParam();
  std::mt19937 rng(7);
  Buffer x = randomBuffer(cc.input, rng);
  Buffer w = randomBuffer(cc.filter, rng);
  Buffer b = randomBuffer({cc.filter[0]}, rng);
  Shape expectedShape;
  std::vector<double> expected =
      naiveConv2d(x, w, cc.bias ? &b : nullptr, cc.attrs, expectedShape);
  Shape shape;
  RN_ASSERT_OK(conv2dOutputShape(cc.input, cc.filter, cc.attrs, shape));
  ASSERT_EQ(shape, expectedShape);
  Buffer y(shape);
  TensorView bv = b.view();
  RN_ASSERT_OK(conv2d(x.view(), w.view(), cc.bias ? &bv : nullptr, cc.attrs, y.view()));
  expectClose("conv2d", y.data, expected, 1e-5, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Conv2dForward,
    ::testing::Values(
        // stride 2, padding, dilation 2, groups 2, bias
        ConvCase{{2, 7, 8, 4}, {6, 3, 3, 2}, {{2, 2}, {1, 2}, {2, 2}, 2}, true},
        // plain 3x3 "same" convolution
        ConvCase{{2, 5, 5, 3}, {4, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}, false},
        // asymmetric everything, depthwise (groups = channels)
        ConvCase{{1, 6, 9, 3}, {3, 2, 3, 1}, {{1, 3}, {0, 1}, {3, 1}, 3}, true},
        // 1x1 with stride 2
        ConvCase{{3, 4, 4, 5}, {2, 1, 1, 5}, {{2, 2}, {0, 0}, {1, 1}, 1}, true},
        // two groups of 10 output and 9 input channels
        ConvCase{{2, 5, 6, 18}, {20, 3, 3, 9}, {{1, 2}, {1, 1}, {1, 1}, 2}, true},
        // 2304 patch columns: the 576 output pixels take two chunks
        ConvCase{{1, 24, 24, 256}, {4, 3, 3, 256}, {{1, 1}, {1, 1}, {1, 1}, 1}, true}));

// dX and dW are the adjoints of the forward product: for the convolution
// y = conv(x, w) without bias, <y, dy> = <x, dX(dy, w)> = <w, dW(dy, x)>.
// Checked on a shape whose pixels span several chunks (cpu_conv.cpp), with
// padding and stride.
TEST(Conv2d, ChunkedBackwardIsTheAdjoint) {
  std::mt19937 rng(11);
  const Conv2dAttrs attrs{{2, 1}, {1, 1}, {1, 1}, 1};
  Buffer x = randomBuffer({2, 40, 24, 128}, rng);
  Buffer w = randomBuffer({5, 3, 3, 128}, rng);
  Shape yShape;
  RN_ASSERT_OK(conv2dOutputShape(x.shape, w.shape, attrs, yShape));
  Buffer y(yShape);
  RN_ASSERT_OK(conv2d(x.view(), w.view(), nullptr, attrs, y.view()));
  Buffer dy = randomBuffer(yShape, rng);
  Buffer dx(x.shape), zero(w.shape), dw(w.shape);
  RN_ASSERT_OK(conv2dBackwardInput(dy.view(), w.view(), attrs, dx.view()));
  RN_ASSERT_OK(conv2dBackwardFilter(dy.view(), x.view(), zero.view(), attrs, dw.view()));
  const double forward = dot(y, dy);
  EXPECT_NEAR(dot(x, dx), forward, 1e-5 * std::abs(forward) + 1e-3);
  EXPECT_NEAR(dot(w, dw), forward, 1e-5 * std::abs(forward) + 1e-3);
}

// The input gradient with an addend (rn-fold-gradient-adds' `plus`) is
// dX + addend rounded once: in f16 it is the rounding of the f32 dX plus
// the addend, which the add of the unfolded program rounds twice.
TEST(Conv2d, InputGradientAddendIsRoundedOnce) {
  std::mt19937 rng(23);
  const Conv2dAttrs attrs{{1, 1}, {1, 1}, {1, 1}, 1};
  Buffer dy = randomBuffer({2, 5, 5, 4}, rng), w = randomBuffer({4, 3, 3, 6}, rng);
  Buffer addend = randomBuffer({2, 5, 5, 6}, rng);
  for (float &v : addend.data)
    v = roundTo(DType::f16, v);
  addend.dtype = DType::f16;
  Buffer dx32({2, 5, 5, 6}), sum({2, 5, 5, 6}, 0.0f, DType::f16);
  RN_ASSERT_OK(conv2dBackwardInput(dy.view(), w.view(), attrs, dx32.view()));
  TensorView addendView = addend.view();
  RN_ASSERT_OK(conv2dBackwardInput(dy.view(), w.view(), attrs, sum.view(), &addendView));
  for (size_t i = 0; i < sum.size(); ++i)
    ASSERT_EQ(sum[i], roundTo(DType::f16, dx32[i] + addend[i])) << i;
  Buffer wrong({2, 5, 5, 5}, 0.0f, DType::f16);
  TensorView wrongView = wrong.view();
  EXPECT_FALSE(conv2dBackwardInput(dy.view(), w.view(), attrs, sum.view(), &wrongView).ok());
}

// rn-pad-conv-channels' rewrite is exact: the input and the filter padded
// with zero channels (pad_channels, which also converts f32 to the input's
// f16) give the unpadded convolution's output, and the filter gradient into
// the parameter's 3-channel accumulator is the unpadded one's.
TEST(Conv2d, ZeroPaddedChannelsChangeNothing) {
  std::mt19937 rng(17);
  const Conv2dAttrs attrs{{2, 2}, {3, 3}, {1, 1}, 1};
  Buffer images = randomBuffer({2, 11, 9, 3}, rng);
  Buffer x(images.shape, 0.0f, DType::f16), w = randomBuffer({4, 7, 7, 3}, rng);
  RN_ASSERT_OK(cast(images.view(), x.view()));
  Buffer x8({2, 11, 9, 8}, -1.0f, DType::f16), w8({4, 7, 7, 8}, -1.0f);
  RN_ASSERT_OK(padChannels(images.view(), x8.view()));
  RN_ASSERT_OK(padChannels(w.view(), w8.view()));
  for (size_t i = 0; i < x8.size(); ++i)
    ASSERT_EQ(x8[i], i % 8 < 3 ? x[i / 8 * 3 + i % 8] : 0.0f) << i;

  Shape yShape;
  RN_ASSERT_OK(conv2dOutputShape(x.shape, w.shape, attrs, yShape));
  Buffer y(yShape), y8(yShape);
  RN_ASSERT_OK(conv2d(x.view(), w.view(), nullptr, attrs, y.view()));
  RN_ASSERT_OK(conv2d(x8.view(), w8.view(), nullptr, attrs, y8.view()));
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y8[i], y[i], 1e-5) << i;

  Buffer dy = randomBuffer(yShape, rng), acc = randomBuffer(w.shape, rng);
  Buffer dw(w.shape), dw8(w.shape);
  RN_ASSERT_OK(conv2dBackwardFilter(dy.view(), x.view(), acc.view(), attrs, dw.view()));
  RN_ASSERT_OK(conv2dBackwardFilter(dy.view(), x8.view(), acc.view(), attrs, dw8.view()));
  for (size_t i = 0; i < dw.size(); ++i)
    ASSERT_NEAR(dw8[i], dw[i], 1e-5) << i;
  // The same through conv2d_backward, which checks the filter against the
  // accumulator.
  Buffer dwOp(w.shape);
  RN_ASSERT_OK(conv2dBackward(dy.view(), x8.view(), w8.view(), acc.view(), nullptr, attrs,
                              nullptr, dwOp.view(), nullptr));
  EXPECT_EQ(dwOp.data, dw8.data);

  // A narrower result than the input, more channels than the filter, and a
  // grouped convolution's narrower accumulator are refused.
  Buffer narrow({2, 11, 9, 2});
  EXPECT_FALSE(padChannels(images.view(), narrow.view()).ok());
  Buffer wide({4, 7, 7, 9});
  EXPECT_FALSE(conv2dBackwardFilter(dy.view(), x8.view(), wide.view(), attrs, wide.view()).ok());
  Conv2dAttrs grouped = attrs;
  grouped.groups = 2;
  Buffer accHalf({4, 7, 7, 3});
  EXPECT_FALSE(
      conv2dBackwardFilter(dy.view(), x8.view(), accHalf.view(), grouped, accHalf.view()).ok());
}

// detail::gemm (OpenBLAS when the build has it) against plain loops, for
// every transpose pair, leading dimensions wider than the matrices, beta 0
// (C's old values ignored, NaN included) and 1, and K = 0.
TEST(Gemm, MatchesPlainLoops) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> value(-1, 1);
  const int64_t m = 37, n = 29, k = 41, pad = 3;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (double beta : {0.0, 1.0})
        for (int64_t kk : {k, int64_t{0}}) {
          const int64_t lda = (ta ? m : kk) + pad, ldb = (tb ? kk : n) + pad, ldc = n + pad;
          std::vector<double> a(size_t((ta ? kk : m) * lda)), b(size_t((tb ? n : kk) * ldb)),
              c(size_t(m * ldc));
          for (auto *vec : {&a, &b, &c})
            for (double &v : *vec)
              v = value(rng);
          if (beta == 0)
            c[0] = std::numeric_limits<double>::quiet_NaN();
          std::vector<double> expected = c;
          detail::referenceGemm(ta, tb, m, n, kk, 0.5, a.data(), lda, b.data(), ldb, beta,
                                expected.data(), ldc);
          detail::gemm(ta, tb, m, n, kk, 0.5, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j)
              ASSERT_NEAR(c[size_t(i * ldc + j)], expected[size_t(i * ldc + j)], 1e-12)
                  << "transpose " << ta << tb << " beta " << beta << " k " << kk << " at "
                  << i << "," << j;
        }
}

TEST(Conv2d, ShapeErrors) {
  Shape out;
  KernelStatus s = conv2dOutputShape({1, 5, 5, 4}, {6, 3, 3, 3}, {{1, 1}, {0, 0}, {1, 1}, 2}, out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error.find("input channels per group"), std::string::npos) << s.error;
  EXPECT_FALSE(conv2dOutputShape({1, 2, 2, 1}, {1, 3, 3, 1}, {}, out).ok());
  EXPECT_FALSE(conv2dOutputShape({1, 5, 5}, {1, 3, 3, 1}, {}, out).ok());

  // A result view of the wrong shape is refused, not written.
  Buffer x({1, 4, 4, 1}, 1.0f), w({1, 3, 3, 1}, 1.0f), y({1, 4, 4, 1}, 7.0f);
  KernelStatus bad = conv2d(x.view(), w.view(), nullptr, {}, y.view());
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find("conv2d: result must have shape [1, 2, 2, 1]"), std::string::npos)
      << bad.error;
  EXPECT_EQ(y[0], 7.0f);
}

TEST(Conv2d, LowPrecisionResultIsRoundedOnce) {
  std::mt19937 rng(3);
  Buffer x = randomBuffer({1, 4, 4, 3}, rng), w = randomBuffer({2, 3, 3, 3}, rng);
  Conv2dAttrs attrs{{1, 1}, {1, 1}, {1, 1}, 1};
  Buffer y32({1, 4, 4, 2}), y16({1, 4, 4, 2}, 0.0f, DType::f16);
  RN_ASSERT_OK(conv2d(x.view(), w.view(), nullptr, attrs, y32.view()));
  RN_ASSERT_OK(conv2d(x.view(), w.view(), nullptr, attrs, y16.view()));
  for (size_t i = 0; i < y32.size(); ++i)
    EXPECT_EQ(y16[i], roundTo(DType::f16, y32[i])) << i;
}

//===----------------------------------------------------------------------===//
// Fully connected
//===----------------------------------------------------------------------===//

TEST(Linear, MatchesFormula) {
  std::mt19937 rng(11);
  Buffer x = randomBuffer({3, 5}, rng), w = randomBuffer({4, 5}, rng),
         b = randomBuffer({4}, rng), y({3, 4});
  TensorView bv = b.view();
  RN_ASSERT_OK(linear(x.view(), w.view(), &bv, y.view()));
  std::vector<double> expected;
  for (int n = 0; n < 3; ++n)
    for (int o = 0; o < 4; ++o) {
      double s = b[o];
      for (int i = 0; i < 5; ++i)
        s += double(x[n * 5 + i]) * w[o * 5 + i];
      expected.push_back(s);
    }
  expectClose("linear", y.data, expected, 1e-6, 1e-6);
  Buffer bad({3, 5});
  EXPECT_FALSE(linear(x.view(), w.view(), nullptr, bad.view()).ok());
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

TEST(MaxPool2d, HandExample) {
  // One 4x4 channel, kernel 2, stride 2.
  Buffer x({1, 4, 4, 1});
  float values[16] = {1, 5, 2, 0, 3, 4, 8, 8, -1, -2, -3, -4, -5, -6, -7, -0.5f};
  std::copy(values, values + 16, x.data.begin());
  Buffer y({1, 2, 2, 1});
  Pool2dAttrs attrs{{2, 2}, {2, 2}, {0, 0}};
  RN_ASSERT_OK(maxPool2d(x.view(), attrs, y.view()));
  EXPECT_EQ(y.data, (std::vector<float>{5, 8, -1, -0.5f}));

  // Ties: the gradient goes to the first maximum in row-major order.
  Buffer dy({1, 2, 2, 1}, 1.0f), dx({1, 4, 4, 1});
  RN_ASSERT_OK(maxPool2dBackward(dy.view(), x.view(), attrs, dx.view()));
  EXPECT_EQ(dx[6], 1.0f);
  EXPECT_EQ(dx[7], 0.0f);
}

TEST(MaxPool2d, PaddingNeverWinsAndTiesGoFirst) {
  // All-negative input: a padded zero would win if padding took part.
  std::mt19937 rng(5);
  Buffer x = randomBuffer({2, 5, 6, 3}, rng, -3.0f, -1.0f);
  Pool2dAttrs attrs{{3, 2}, {2, 1}, {1, 1}};
  Shape shape;
  RN_ASSERT_OK(pool2dOutputShape(x.shape, attrs, shape));
  ASSERT_EQ(shape, (Shape{2, 3, 7, 3}));
  Buffer y(shape);
  RN_ASSERT_OK(maxPool2d(x.view(), attrs, y.view()));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t oy = 0; oy < 3; ++oy)
      for (int64_t ox = 0; ox < 7; ++ox)
        for (int64_t c = 0; c < 3; ++c) {
          float best = -std::numeric_limits<float>::infinity();
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 2; ++kx) {
              int64_t iy = oy * 2 - 1 + ky, ix = ox - 1 + kx;
              if (iy >= 0 && iy < 5 && ix >= 0 && ix < 6)
                best = std::max(best, x[((n * 5 + iy) * 6 + ix) * 3 + c]);
            }
          EXPECT_EQ(y[((n * 3 + oy) * 7 + ox) * 3 + c], best);
        }

  // A constant input: every window's first element in row-major order gets
  // the gradient. With stride 1 and kernel 2 (no padding), window (oy, ox)
  // starts at (oy, ox), so every element but the last row/column gets 1.
  Buffer flat({1, 3, 3, 1}, 2.0f), dy({1, 2, 2, 1}, 1.0f), dx({1, 3, 3, 1});
  RN_ASSERT_OK(maxPool2dBackward(dy.view(), flat.view(), {{2, 2}, {1, 1}, {0, 0}}, dx.view()));
  EXPECT_EQ(dx.data, (std::vector<float>{1, 1, 0, 1, 1, 0, 0, 0, 0}));
}

TEST(MaxPool2d, NaNPropagates) {
  Buffer x({1, 2, 2, 1});
  x.data = {1.0f, std::nanf(""), 3.0f, 2.0f};
  Buffer y({1, 1, 1, 1});
  RN_ASSERT_OK(maxPool2d(x.view(), {{2, 2}, {2, 2}, {0, 0}}, y.view()));
  EXPECT_TRUE(std::isnan(y[0]));
}

TEST(MaxPool2d, RejectsWidePadding) {
  Buffer x({1, 4, 4, 1}), y({1, 4, 4, 1});
  KernelStatus s = maxPool2d(x.view(), {{2, 2}, {1, 1}, {2, 0}}, y.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error.find("exceeds half the kernel"), std::string::npos) << s.error;
}

TEST(AvgPool2d, PaddingCountsInTheDivisor) {
  std::mt19937 rng(9);
  Buffer x = randomBuffer({2, 5, 4, 2}, rng);
  Pool2dAttrs attrs{{3, 3}, {2, 2}, {1, 1}};
  Shape shape;
  RN_ASSERT_OK(pool2dOutputShape(x.shape, attrs, shape));
  ASSERT_EQ(shape, (Shape{2, 3, 2, 2}));
  Buffer y(shape);
  RN_ASSERT_OK(avgPool2d(x.view(), attrs, y.view()));
  std::vector<double> expected;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t oy = 0; oy < 3; ++oy)
      for (int64_t ox = 0; ox < 2; ++ox)
        for (int64_t c = 0; c < 2; ++c) {
          double s = 0;
          for (int64_t iy = oy * 2 - 1; iy < oy * 2 + 2; ++iy)
            for (int64_t ix = ox * 2 - 1; ix < ox * 2 + 2; ++ix)
              if (iy >= 0 && iy < 5 && ix >= 0 && ix < 4)
                s += x[((n * 5 + iy) * 4 + ix) * 2 + c];
          expected.push_back(s / 9.0);
        }
  expectClose("avg_pool2d", y.data, expected, 1e-6);
  // The corner window holds 4 real elements out of 9.
  EXPECT_NEAR(y[0], (x[0] + x[2] + x[8] + x[10]) / 9.0, 1e-6);
}

TEST(Pool2d, PartialWindowsMatchPyTorch) {
  // Constants from PyTorch (F.max_pool2d / F.avg_pool2d in float64 and
  // their backward with dy[j] = j % 5 - 1.5) on a 5x6 input
  // x[i] = (7i mod 30) / 2 - 7, distinct values: ceil_mode's partial last
  // windows (3x3/2 over 6 columns: 3 windows, the last 2 wide), the window
  // dropped for starting in the right padding (2x2/2 pad 1 over 5 rows: 3
  // rows, not 4), and both of PyTorch's divisors (count_include_pad).
  struct Case {
    bool max;
    Pool2dAttrs attrs;
    Shape out;
    std::vector<double> y, dx;
  };
  const Case cases[] = {
      {true, {{3, 3}, {2, 2}, {0, 0}, true, false},
       Shape{1, 2, 3, 1},
       {6.0, 7.0, 7.5, 5.5, 6.5, 7.5},
       {0.0, 0.0, 0.0, 0.0, -0.5, 0.0, 0.0, 0.0, -1.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        0.0, -1.0, 0.0, 0.0, 0.0, 2.5, 0.0, 0.0, 0.0, 1.5, 0.0, 0.0, 0.0, 0.0}},
      {true, {{2, 2}, {2, 2}, {1, 1}, true, false},
       Shape{1, 3, 4, 1},
       {-7.0, 0.0, 7.0, -4.5, 5.0, 6.0, 4.0, 7.5, 2.0, 5.5, 6.5, 4.5},
       {-1.5, 0.0, -0.5, 0.0, 0.5, 1.5, 0.0, 0.0, -1.5, 0.0, 0.0, 0.0, 2.5, 0.0, 0.0, 0.0,
        -0.5, 0.5, 0.0, 0.0, 0.0, -1.5, 0.0, 0.0, 1.5, 2.5, 0.0, 0.0, 0.0, -0.5}},
      {false, {{3, 3}, {2, 2}, {1, 1}, true, false},
       Shape{1, 3, 4, 1},
       {-1.0, 0.3333333333333333, 0.0, -0.5, -0.5, 0.3333333333333333, 0.6666666666666666,
        1.25, 0.3333333333333333, 0.6666666666666666, 0.3333333333333333, 0.5},
       {-0.16666666666666666, -0.2222222222222222, -0.05555555555555555, 0.0,
        0.05555555555555555, 0.3055555555555556, 0.11111111111111113, -0.11111111111111108,
        -0.2222222222222222, -0.2222222222222222, 0.0, 0.3333333333333333,
        0.2777777777777778, 0.11111111111111113, -0.16666666666666666, -0.2222222222222222,
        -0.05555555555555555, 0.027777777777777776, 0.4444444444444444, 0.5555555555555556,
        0.11111111111111113, -0.11111111111111108, -0.2222222222222222,
        -0.2222222222222222, 0.16666666666666666, 0.4444444444444444, 0.2777777777777778,
        0.11111111111111113, -0.16666666666666666, -0.25}},
      {false, {{3, 3}, {2, 2}, {1, 1}, true, true},
       Shape{1, 3, 4, 1},
       {-2.25, 0.5, 0.0, -1.5, -0.75, 0.3333333333333333, 0.6666666666666666, 2.5, 0.75,
        1.0, 0.5, 1.5},
       {-0.375, -0.4583333333333333, -0.08333333333333333, 0.0, 0.08333333333333333,
        0.8333333333333334, 0.041666666666666685, -0.2083333333333333, -0.25,
        -0.2222222222222222, 0.027777777777777776, 0.9444444444444444, 0.4166666666666667,
        0.25, -0.16666666666666666, -0.2222222222222222, -0.05555555555555555,
        0.1111111111111111, 0.7916666666666667, 1.0416666666666667, 0.25,
        -0.055555555555555525, -0.3055555555555556, -0.3888888888888889, 0.375,
        0.7916666666666667, 0.4166666666666667, 0.16666666666666669, -0.25, -0.5}},
      {false, {{3, 3}, {2, 2}, {1, 1}, false, true},
       Shape{1, 3, 3, 1},
       {-2.25, 0.5, 0.0, -0.75, 0.3333333333333333, 0.6666666666666666, 0.75, 1.0, 0.5},
       {-0.375, -0.4583333333333333, -0.08333333333333333, 0.0, 0.08333333333333333,
        0.08333333333333333, -0.125, 0.06944444444444448, 0.19444444444444448,
        0.11111111111111113, -0.08333333333333333, -0.08333333333333333, 0.25,
        0.5277777777777778, 0.2777777777777778, 0.11111111111111113, -0.16666666666666666,
        -0.16666666666666666, 0.125, 0.4861111111111111, 0.3611111111111111,
        0.4444444444444445, 0.08333333333333334, 0.08333333333333334, -0.125,
        -0.04166666666666667, 0.08333333333333333, 0.3333333333333333, 0.25, 0.25}},
      {false, {{2, 2}, {2, 2}, {1, 1}, true, false},
       Shape{1, 3, 4, 1},
       {-1.75, -0.875, 2.625, -1.125, 1.0, -0.25, -0.75, 2.25, -0.5, 0.5, 0.0, 0.75},
       {-0.375, -0.125, -0.125, 0.125, 0.125, 0.375, 0.625, -0.375, -0.375, -0.125, -0.125,
        0.125, 0.625, -0.375, -0.375, -0.125, -0.125, 0.125, 0.375, 0.625, 0.625, -0.375,
        -0.375, -0.125, 0.375, 0.625, 0.625, -0.375, -0.375, -0.125}},

  };
  Buffer x({1, 5, 6, 1});
  for (int i = 0; i < 30; ++i)
    x[i] = float((i * 7) % 30) * 0.5f - 7.0f;
  for (const Case &c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.attrs.kernel) + " stride " +
                 ::testing::PrintToString(c.attrs.strides) + " pad " +
                 ::testing::PrintToString(c.attrs.padding) + (c.attrs.ceilMode ? " ceil" : "") +
                 (c.attrs.excludePad ? " exclude_pad" : "") + (c.max ? " max" : " avg"));
    Shape shape;
    RN_ASSERT_OK(pool2dOutputShape(x.shape, c.attrs, shape));
    ASSERT_EQ(shape, c.out);
    Buffer y(shape), dy(shape), dx(x.shape);
    for (size_t j = 0; j < dy.size(); ++j)
      dy[j] = float(j % 5) - 1.5f;
    if (c.max) {
      RN_ASSERT_OK(maxPool2d(x.view(), c.attrs, y.view()));
      RN_ASSERT_OK(maxPool2dBackward(dy.view(), x.view(), c.attrs, dx.view()));
    } else {
      RN_ASSERT_OK(avgPool2d(x.view(), c.attrs, y.view()));
      RN_ASSERT_OK(avgPool2dBackward(dy.view(), c.attrs, dx.view()));
    }
    expectClose("pool2d", y.data, c.y, 1e-6);
    expectClose("pool2d backward", dx.data, c.dx, 1e-6);
  }
}

TEST(GlobalAvgPool, MeanOverSpace) {
  std::mt19937 rng(13);
  Buffer x = randomBuffer({2, 3, 4, 5}, rng), y({2, 1, 1, 5});
  RN_ASSERT_OK(globalAvgPool(x.view(), y.view()));
  std::vector<double> expected;
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 5; ++c) {
      double s = 0;
      for (int p = 0; p < 12; ++p)
        s += x[(n * 12 + p) * 5 + c];
      expected.push_back(s / 12);
    }
  expectClose("global_avg_pool", y.data, expected, 1e-6);
}

TEST(AdaptiveAvgPool2d, PyTorchWindows) {
  // PyTorch's windows [floor(i * in / out), ceil((i + 1) * in / out)).
  EXPECT_EQ(adaptiveWindow(0, 5, 3), (std::pair<int64_t, int64_t>{0, 2}));
  EXPECT_EQ(adaptiveWindow(1, 5, 3), (std::pair<int64_t, int64_t>{1, 4}));
  EXPECT_EQ(adaptiveWindow(2, 5, 3), (std::pair<int64_t, int64_t>{3, 5}));
  EXPECT_EQ(adaptiveWindow(1, 2, 3), (std::pair<int64_t, int64_t>{0, 2})); // larger output
  EXPECT_EQ(adaptiveWindow(6, 10, 7), (std::pair<int64_t, int64_t>{8, 10}));

  // Rows 1..5 pooled 5 -> 3 (windows of 2, 3 and 2 rows that overlap).
  Buffer x({1, 5, 1, 1});
  x.data = {1, 2, 3, 4, 5};
  Buffer y({1, 3, 1, 1});
  RN_ASSERT_OK(adaptiveAvgPool2d(x.view(), y.view()));
  EXPECT_EQ(y.data, (std::vector<float>{1.5f, 3.0f, 4.5f}));
  // The backward: each element gets dy / count of every window holding it.
  Buffer dy({1, 3, 1, 1}, 1.0f), dx(x.shape);
  RN_ASSERT_OK(adaptiveAvgPool2dBackward(dy.view(), dx.view()));
  expectClose("adaptive_avg_pool2d_backward", dx.data,
              std::vector<double>{0.5, 0.5 + 1.0 / 3, 1.0 / 3, 1.0 / 3 + 0.5, 0.5}, 1e-7);

  // Two dimensions and channels against the definition.
  std::mt19937 rng(17);
  Buffer a = randomBuffer({2, 10, 7, 3}, rng), b({2, 4, 3, 3});
  RN_ASSERT_OK(adaptiveAvgPool2d(a.view(), b.view()));
  std::vector<double> expected;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t c = 0; c < 3; ++c) {
          // 10 -> 4: rows [0,3) [2,5) [5,8) [7,10); 7 -> 3: columns [0,3) [2,5) [4,7).
          const int64_t h0 = (i * 10) / 4, h1 = (i * 10 + 13) / 4, w0 = (j * 7) / 3,
                        w1 = (j * 7 + 9) / 3;
          double sum = 0;
          for (int64_t y0 = h0; y0 < h1; ++y0)
            for (int64_t x0 = w0; x0 < w1; ++x0)
              sum += a[size_t(((n * 10 + y0) * 7 + x0) * 3 + c)];
          expected.push_back(sum / double((h1 - h0) * (w1 - w0)));
        }
  expectClose("adaptive_avg_pool2d 10x7 -> 4x3", b.data, expected, 1e-6);
}

TEST(AdaptiveAvgPool2d, EqualsPlainAndGlobalPoolingWhereTheyApply) {
  std::mt19937 rng(19);
  Buffer x = randomBuffer({2, 6, 4, 5}, rng);
  // 6x4 -> 3x2: kernel = stride = 2x2, the same sums in the same order.
  Buffer adaptive({2, 3, 2, 5}), plain({2, 3, 2, 5});
  RN_ASSERT_OK(adaptiveAvgPool2d(x.view(), adaptive.view()));
  RN_ASSERT_OK(avgPool2d(x.view(), Pool2dAttrs{{2, 2}, {2, 2}, {0, 0}}, plain.view()));
  EXPECT_EQ(adaptive.data, plain.data);
  Buffer dyPlain = randomBuffer(plain.shape, rng), dxA(x.shape), dxP(x.shape);
  RN_ASSERT_OK(adaptiveAvgPool2dBackward(dyPlain.view(), dxA.view()));
  RN_ASSERT_OK(avgPool2dBackward(dyPlain.view(), Pool2dAttrs{{2, 2}, {2, 2}, {0, 0}}, dxP.view()));
  EXPECT_EQ(dxA.data, dxP.data);
  // 1x1: the global mean.
  Buffer one({2, 1, 1, 5}), global({2, 1, 1, 5});
  RN_ASSERT_OK(adaptiveAvgPool2d(x.view(), one.view()));
  RN_ASSERT_OK(globalAvgPool(x.view(), global.view()));
  EXPECT_EQ(one.data, global.data);

  // Other channels or batch are refused by name, nothing written.
  Buffer bad({2, 3, 3, 4}, 7.0f);
  KernelStatus st = adaptiveAvgPool2d(x.view(), bad.view());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error, "adaptive_avg_pool2d: result [2, 3, 3, 4] must keep the batch and the "
                      "channels of input [2, 6, 4, 5]");
  EXPECT_EQ(bad[0], 7.0f);
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

class BatchNormShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(BatchNormShapes, TrainMatchesFormulas) {
  Shape shape = GetParam();
  int64_t c = shape.back();
  std::mt19937 rng(17);
  Buffer x = randomBuffer(shape, rng, -2.0f, 3.0f);
  Buffer gamma = randomBuffer({c}, rng, 0.5f, 1.5f), beta = randomBuffer({c}, rng);
  Buffer y(shape), mean({c}), invStd({c});
  const double eps = 1e-3;
  RN_ASSERT_OK(batchNormTrain(x.view(), gamma.view(), beta.view(), eps, y.view(),
                              mean.view(), invStd.view()));
  int64_t m = static_cast<int64_t>(x.size()) / c;
  std::vector<double> mu(c, 0), var(c, 0), expected(x.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t k = 0; k < c; ++k)
      mu[k] += x[i * c + k] / double(m);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t k = 0; k < c; ++k)
      var[k] += std::pow(x[i * c + k] - mu[k], 2) / double(m);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t k = 0; k < c; ++k)
      expected[i * c + k] =
          (x[i * c + k] - mu[k]) / std::sqrt(var[k] + eps) * gamma[k] + beta[k];
  expectClose("batch_norm_train result", y.data, expected, 1e-5);
  for (int64_t k = 0; k < c; ++k) {
    EXPECT_NEAR(mean[k], mu[k], 1e-6);
    EXPECT_NEAR(invStd[k], 1 / std::sqrt(var[k] + eps), 1e-6);
  }

  // Inference with given running statistics.
  Buffer runMean = randomBuffer({c}, rng), runVar = randomBuffer({c}, rng, 0.5f, 2.0f);
  Buffer yi(shape);
  RN_ASSERT_OK(batchNormInference(x.view(), gamma.view(), beta.view(), runMean.view(),
                                  runVar.view(), eps, yi.view()));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t k = 0; k < c; ++k)
      expected[i * c + k] =
          (x[i * c + k] - runMean[k]) / std::sqrt(runVar[k] + eps) * gamma[k] + beta[k];
  expectClose("batch_norm_inference", yi.data, expected, 1e-5);

  // Running statistics: PyTorch's momentum convention, unbiased variance.
  const double momentum = 0.1;
  Buffer newMean({c}), newVar({c});
  RN_ASSERT_OK(updateRunningStats(runMean.view(), runVar.view(), mean.view(), invStd.view(),
                                  eps, momentum, m, newMean.view(), newVar.view()));
  for (int64_t k = 0; k < c; ++k) {
    EXPECT_NEAR(newMean[k], 0.9 * runMean[k] + 0.1 * mu[k], 1e-6);
    EXPECT_NEAR(newVar[k], 0.9 * runVar[k] + 0.1 * var[k] * m / (m - 1), 1e-5);
  }
  // In place (the result in the operand's slot).
  RN_ASSERT_OK(updateRunningStats(runMean.view(), runVar.view(), mean.view(), invStd.view(),
                                  eps, momentum, m, runMean.view(), runVar.view()));
  EXPECT_EQ(runMean.data, newMean.data);
  EXPECT_EQ(runVar.data, newVar.data);
}

INSTANTIATE_TEST_SUITE_P(Layouts, BatchNormShapes,
                         ::testing::Values(Shape{2, 3, 4, 5}, Shape{6, 3}));

TEST(BatchNorm, ChecksSavedStatisticsAreF32) {
  Buffer x({4, 2}), g({2}, 1.0f), b({2}), y({4, 2}), mean({2}, 0.0f, DType::f16), inv({2});
  KernelStatus s = batchNormTrain(x.view(), g.view(), b.view(), 1e-5, y.view(), mean.view(),
                                  inv.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error.find("batch_mean must be f32"), std::string::npos) << s.error;
}

TEST(BatchNorm, MixedPrecisionRoundsTheResult) {
  std::mt19937 rng(19);
  Buffer x = randomBuffer({4, 3}, rng), g = randomBuffer({3}, rng), b = randomBuffer({3}, rng);
  for (float &v : x.data)
    v = roundTo(DType::bf16, v);
  x.dtype = DType::bf16;
  Buffer y32({4, 3}), ybf({4, 3}, 0.0f, DType::bf16), mean({3}), inv({3});
  RN_ASSERT_OK(batchNormTrain(x.view(), g.view(), b.view(), 1e-5, y32.view(), mean.view(), inv.view()));
  RN_ASSERT_OK(batchNormTrain(x.view(), g.view(), b.view(), 1e-5, ybf.view(), mean.view(), inv.view()));
  for (size_t i = 0; i < y32.size(); ++i)
    EXPECT_EQ(ybf[i], roundTo(DType::bf16, y32[i]));
}

TEST(LayerNorm, MatchesPyTorch) {
  // torch.nn.functional.layer_norm(x, (4,), w, b, 1e-6) and its backward in
  // f64, dy given.
  Buffer x({2, 4}), w({4}), b({4}), dy({2, 4});
  x.data = {1.0f, -2.0f, 0.5f, 3.0f, 0.25f, 0.0f, -1.5f, 2.0f};
  w.data = {1.5f, -0.5f, 2.0f, 0.25f};
  b.data = {0.1f, 0.2f, -0.3f, 0.0f};
  dy.data = {0.5f, -1.0f, 0.25f, 2.0f, -0.75f, 1.5f, 0.5f, -0.25f};
  Buffer y({2, 4});
  RN_ASSERT_OK(layerNorm(x.view(), w.view(), b.view(), 1e-6, y.view()));
  const double expected[] = {0.415838033, 0.936955410, -0.440372459, 0.333384590,
                             0.175473166, 0.275473166, -3.01703399, 0.364786971};
  for (size_t i = 0; i < 8; ++i)
    EXPECT_NEAR(y[i], expected[i], 1e-6) << i;
  Buffer acc({4}, 0.0f), accB({4}, 1.0f), dx({2, 4}), dw({4}), db({4});
  RN_ASSERT_OK(layerNormBackward(dy.view(), x.view(), w.view(), acc.view(), accB.view(), 1e-6,
                                 dx.view(), dw.view(), db.view()));
  const double dxExpected[] = {0.103723492, -0.0242021516, -0.0345744975, -0.0449468434,
                               -0.702887658, -0.457424682, 0.612829620, 0.547482721};
  const double dwExpected[] = {0.0675427612, 1.24749132, -0.696805055, 2.30228975};
  const double dbExpected[] = {-0.25, 0.5, 0.75, 1.75};
  for (size_t i = 0; i < 8; ++i)
    EXPECT_NEAR(dx[i], dxExpected[i], 1e-6) << i;
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_NEAR(dw[k], dwExpected[k], 1e-6) << k;
    EXPECT_NEAR(db[k], 1.0 + dbExpected[k], 1e-6) << k;
  }
}

TEST(LayerNorm, MixedPrecisionKeepsF32Parameters) {
  // bf16 activations, f32 weight and bias (mixed precision's norm
  // parameters): the result is the f32 one rounded once.
  std::mt19937 rng(23);
  Buffer x = randomBuffer({3, 8}, rng), g = randomBuffer({8}, rng), b = randomBuffer({8}, rng);
  for (float &v : x.data)
    v = roundTo(DType::bf16, v);
  x.dtype = DType::bf16;
  Buffer y32({3, 8}), ybf({3, 8}, 0.0f, DType::bf16);
  RN_ASSERT_OK(layerNorm(x.view(), g.view(), b.view(), 1e-6, y32.view()));
  RN_ASSERT_OK(layerNorm(x.view(), g.view(), b.view(), 1e-6, ybf.view()));
  for (size_t i = 0; i < y32.size(); ++i)
    EXPECT_EQ(ybf[i], roundTo(DType::bf16, y32[i]));
}

TEST(ChannelScale, ScalesTheLastDimension) {
  Buffer x({2, 1, 1, 3}), s({3}), y({2, 1, 1, 3});
  x.data = {1, 2, 3, 4, 5, 6};
  s.data = {0.5f, -1.0f, 2.0f};
  RN_ASSERT_OK(channelScale(x.view(), s.view(), y.view()));
  EXPECT_EQ(y.data, (std::vector<float>{0.5f, -2, 6, 2, -5, 12}));
  Buffer bad({2});
  EXPECT_FALSE(channelScale(x.view(), bad.view(), y.view()).ok());
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

TEST(SoftmaxCrossEntropy, LabelSmoothingHandValues) {
  Buffer logits({2, 3});
  logits.data = {1.0f, 2.0f, 3.0f, 0.5f, -1.0f, 2.0f};
  std::vector<int32_t> labelData = {0, 2};
  LabelView labels{labelData.data(), {2}};
  float loss = 0;
  // Computed by hand (Python, double): per row
  // (1 - s) * (lse - x_y) + s / C * sum_c (lse - x_c).
  RN_ASSERT_OK(softmaxCrossEntropy(logits.view(), labels, 0.1, loss));
  EXPECT_NEAR(loss, (2.3076059644443805 + 0.39131129665715714) / 2, 1e-6);
  RN_ASSERT_OK(softmaxCrossEntropy(logits.view(), labels, 0.0, loss));
  double lse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  double lse1 = std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0));
  EXPECT_NEAR(loss, ((lse0 - 1.0) + (lse1 - 2.0)) / 2, 1e-6);

  Buffer grad({2, 3});
  RN_ASSERT_OK(softmaxCrossEntropyBackward(logits.view(), labels, 4.0f, 0.1, grad.view()));
  expectClose("loss gradient", grad.data,
              std::vector<double>{-1.6866055203259058, 0.42279027544292874,
                                  1.2638152448829774, 0.28391411761340674,
                                  0.011558479874708233, -0.29547259748811516},
              1e-6);
}

TEST(SoftmaxCrossEntropy, StableForLargeLogits) {
  Buffer logits({1, 2});
  logits.data = {1000.0f, 0.0f};
  std::vector<int32_t> label = {1};
  float loss = 0;
  RN_ASSERT_OK(softmaxCrossEntropy(logits.view(), LabelView{label.data(), {1}}, 0.0, loss));
  EXPECT_FLOAT_EQ(loss, 1000.0f);
}

TEST(SoftmaxCrossEntropy, RejectsBadLabels) {
  Buffer logits({2, 3});
  std::vector<int32_t> labels = {0, 3};
  float loss;
  KernelStatus s = softmaxCrossEntropy(logits.view(), LabelView{labels.data(), {2}}, 0.0, loss);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error.find("label 3 of row 1"), std::string::npos) << s.error;
}

TEST(CountCorrect, FirstMaximumWinsTies) {
  Buffer logits({4, 3});
  logits.data = {0, 5, 1, /**/ 2, 2, 1, /**/ 3, 3, 3, /**/ -1, -2, 0};
  std::vector<int32_t> labels = {1, 1, 0, 2};
  int32_t correct = -1;
  RN_ASSERT_OK(countCorrect(logits.view(), LabelView{labels.data(), {4}}, correct));
  EXPECT_EQ(correct, 3); // row 1's arg-max is 0 (tie), not 1
}

//===----------------------------------------------------------------------===//
// Elementwise, casts, reshapes
//===----------------------------------------------------------------------===//

TEST(Elementwise, Activations) {
  Buffer x({5});
  x.data = {-2.0f, -0.5f, 0.0f, 0.25f, 3.0f};
  Buffer y({5});
  RN_ASSERT_OK(relu(x.view(), y.view()));
  EXPECT_EQ(y.data, (std::vector<float>{0, 0, 0, 0.25f, 3.0f}));
  RN_ASSERT_OK(tanh(x.view(), y.view()));
  for (size_t i = 0; i < 5; ++i)
    EXPECT_FLOAT_EQ(y[i], std::tanh(x[i]));
  RN_ASSERT_OK(silu(x.view(), y.view()));
  for (size_t i = 0; i < 5; ++i)
    EXPECT_FLOAT_EQ(y[i], x[i] / (1 + std::exp(-x[i])));
  Buffer n({1});
  n.data = {std::nanf("")};
  RN_ASSERT_OK(relu(n.view(), n.view()));
  EXPECT_TRUE(std::isnan(n[0]));
}

TEST(Elementwise, Gelu) {
  // PyTorch's torch.nn.functional.gelu in f64, both forms.
  Buffer x({5});
  x.data = {-2.0f, -0.5f, 0.0f, 0.25f, 3.0f};
  Buffer y({5});
  RN_ASSERT_OK(gelu(x.view(), /*tanhForm=*/false, y.view()));
  std::vector<double> exact = {-0.0455002639, -0.154268769, 0, 0.149676581, 2.99595031};
  for (size_t i = 0; i < 5; ++i)
    EXPECT_NEAR(y[i], exact[i], 1e-6) << i;
  RN_ASSERT_OK(gelu(x.view(), /*tanhForm=*/true, y.view()));
  std::vector<double> tanhForm = {-0.0454023059, -0.15428599, 0, 0.149675351, 2.99636261};
  for (size_t i = 0; i < 5; ++i)
    EXPECT_NEAR(y[i], tanhForm[i], 1e-6) << i;
}

TEST(Elementwise, MobileActivations) {
  // The kinks and both sides of each, a NaN and a value off every grid.
  Buffer x({9});
  x.data = {-4.0f, -3.0f, -1.5f, 0.0f, 0.1f, 3.0f, 5.0f, 7.0f, std::nanf("")};
  Buffer y({9});
  RN_ASSERT_OK(hardtanh(x.view(), 0.0, 6.0, y.view())); // ReLU6
  std::vector<float> relu6 = {0, 0, 0, 0, 0.1f, 3, 5, 6};
  for (size_t i = 0; i < 8; ++i)
    EXPECT_EQ(y[i], relu6[i]) << i;
  EXPECT_TRUE(std::isnan(y[8]));
  RN_ASSERT_OK(hardtanh(x.view(), -1.0, 1.0, y.view()));
  std::vector<float> clamped = {-1, -1, -1, 0, 0.1f, 1, 1, 1};
  for (size_t i = 0; i < 8; ++i)
    EXPECT_EQ(y[i], clamped[i]) << i;
  // Bounds apply as f32: 0.1 clamps to 0.1f exactly.
  RN_ASSERT_OK(hardtanh(x.view(), 0.1, 0.2, y.view()));
  EXPECT_EQ(y[0], 0.1f);
  EXPECT_EQ(y[6], 0.2f);

  RN_ASSERT_OK(hardswish(x.view(), y.view()));
  std::vector<double> swish = {0, 0, -1.5 * 1.5 / 6, 0, 0.1 * 3.1 / 6, 3, 5, 7};
  for (size_t i = 0; i < 8; ++i)
    EXPECT_FLOAT_EQ(y[i], float(swish[i])) << i;
  EXPECT_TRUE(std::isnan(y[8]));

  RN_ASSERT_OK(hardsigmoid(x.view(), y.view()));
  std::vector<double> hsig = {0, 0, 0.25, 0.5, 3.1 / 6, 1, 1, 1};
  for (size_t i = 0; i < 8; ++i)
    EXPECT_FLOAT_EQ(y[i], float(hsig[i])) << i;
  EXPECT_TRUE(std::isnan(y[8]));

  RN_ASSERT_OK(sigmoid(x.view(), y.view()));
  for (size_t i = 0; i < 8; ++i)
    EXPECT_FLOAT_EQ(y[i], float(1 / (1 + std::exp(-double(x[i]))))) << i;
  EXPECT_TRUE(std::isnan(y[8]));
}

TEST(Elementwise, MobileActivationGradientsAtTheKinks) {
  Buffer x({9});
  x.data = {-4.0f, -3.0f, -1.5f, 0.0f, 0.1f, 3.0f, 5.0f, 7.0f, std::nanf("")};
  Buffer dy({9}, 2.0f), dx({9});
  // hardswish: 0 below -3, the closed middle piece (2x + 3) / 6 at both
  // kinks (PyTorch's), dy above 3; NaN stays NaN.
  RN_ASSERT_OK(hardswishBackward(dy.view(), x.view(), dx.view()));
  std::vector<double> swish = {0, 2 * -3.0 / 6, 0, 1, 2 * 3.2 / 6, 2 * 9.0 / 6, 2, 2};
  for (size_t i = 0; i < 8; ++i)
    EXPECT_FLOAT_EQ(dx[i], float(swish[i])) << i;
  EXPECT_TRUE(std::isnan(dx[8]));
  // hardsigmoid: dy / 6 on the open interval only.
  RN_ASSERT_OK(hardsigmoidBackward(dy.view(), x.view(), dx.view()));
  std::vector<float> hsig = {0, 0, float(2.0 / 6), float(2.0 / 6), float(2.0 / 6), 0, 0, 0, 0};
  EXPECT_EQ(dx.data, hsig);

  // hardtanh from its result: clipped elements (equal to a bound) get 0.
  Buffer y({9});
  RN_ASSERT_OK(hardtanh(x.view(), 0.0, 6.0, y.view()));
  RN_ASSERT_OK(hardtanhBackward(dy.view(), y.view(), 0.0, 6.0, dx.view()));
  EXPECT_EQ(dx.data, (std::vector<float>{0, 0, 0, 0, 2, 2, 2, 0, 0}));
  // Bounds that f16 cannot hold, both rounding inwards (0.3 up, 1.6
  // down): the clipped f16 results lie inside the f32 bounds, and only the
  // rounded bounds tell them from elements that were not clipped.
  Buffer h({3}, 0.0f, DType::f16), hy({3}, 0.0f, DType::f16), hdx({3});
  h.data = {-1.0f, 0.5f, 2.0f};
  RN_ASSERT_OK(hardtanh(h.view(), 0.3, 1.6, hy.view()));
  ASSERT_GT(hy[0], 0.3f);
  ASSERT_LT(hy[2], 1.6f);
  Buffer hdy({3}, 1.0f);
  RN_ASSERT_OK(hardtanhBackward(hdy.view(), hy.view(), 0.3, 1.6, hdx.view()));
  EXPECT_EQ(hdx.data, (std::vector<float>{0, 1, 0}));

  // sigmoid from its result.
  Buffer s({2});
  s.data = {0.25f, 0.5f};
  Buffer sdy({2}, 4.0f), sdx({2});
  RN_ASSERT_OK(sigmoidBackward(sdy.view(), s.view(), sdx.view()));
  EXPECT_EQ(sdx.data, (std::vector<float>{0.75f, 1.0f}));
}

TEST(Elementwise, ChannelMulScalesEachImageAndChannel) {
  // [2, 1, 2, 3]: two images of two pixels of three channels.
  Buffer x({2, 1, 2, 3});
  x.data = {1, 2, 3, 4, 5, 6, /**/ -1, -2, -3, 0.5f, 0.25f, 2};
  Buffer s({2, 1, 1, 3});
  s.data = {10, 100, 1000, /**/ 2, -1, 0.5f};
  Buffer y(x.shape);
  RN_ASSERT_OK(channelMul(x.view(), s.view(), y.view()));
  EXPECT_EQ(y.data, (std::vector<float>{10, 200, 3000, 40, 500, 6000, /**/ -2, 2, -1.5f, 1,
                                        -0.25f, 1}));
  Buffer dy(x.shape);
  dy.data = {1, 1, 1, 2, 2, 2, /**/ 1, -1, 2, 3, 1, 0};
  Buffer dx(x.shape), ds(s.shape);
  RN_ASSERT_OK(channelMulBackward(dy.view(), x.view(), s.view(), dx.view(), ds.view()));
  EXPECT_EQ(dx.data, (std::vector<float>{10, 100, 1000, 20, 200, 2000, /**/ 2, 1, 1, 6, -1, 0}));
  // ds[n, c] = sum over the pixels of dy * x.
  EXPECT_EQ(ds.data, (std::vector<float>{1 + 8, 2 + 10, 3 + 12, /**/ -1 + 1.5f, 2 + 0.25f,
                                         -6 + 0}));

  // The scale gradient is summed wide and rounded once: 1 + 2^-24 + 2^-24
  // is 1 + 2^-23 (f32 partial sums would give 1).
  Buffer ones({1, 3, 1, 1}, 1.0f), tiny({1, 3, 1, 1}), one({1, 1, 1, 1}, 1.0f);
  tiny.data = {1.0f, std::ldexp(1.0f, -24), std::ldexp(1.0f, -24)};
  Buffer gx(ones.shape), gs(one.shape);
  RN_ASSERT_OK(channelMulBackward(tiny.view(), ones.view(), one.view(), gx.view(), gs.view()));
  EXPECT_EQ(gs[0], 1.0f + std::ldexp(1.0f, -23));

  // A scale of another shape is refused by name, nothing written.
  Buffer bad({2, 1, 1, 2}), untouched(x.shape, 7.0f);
  KernelStatus st = channelMul(x.view(), bad.view(), untouched.view());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error, "channel_mul: scale must have shape [2, 1, 1, 3], got [2, 1, 1, 2]");
  EXPECT_EQ(untouched[0], 7.0f);
  Buffer flat({2, 6});
  st = channelMulBackward(dy.view(), flat.view(), s.view(), dx.view(), ds.view());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error.find("channel_mul_backward: input must be NHWC"), std::string::npos)
      << st.error;
}

TEST(Elementwise, AddZeroReshapeFlatten) {
  std::mt19937 rng(23);
  Buffer a = randomBuffer({2, 2, 2, 3}, rng), b = randomBuffer({2, 2, 2, 3}, rng), s({2, 2, 2, 3});
  RN_ASSERT_OK(add(a.view(), b.view(), s.view()));
  for (size_t i = 0; i < s.size(); ++i)
    EXPECT_EQ(s[i], a[i] + b[i]);
  Buffer bad({2, 2, 3, 2});
  EXPECT_FALSE(add(a.view(), bad.view(), s.view()).ok());

  Buffer f({2, 12});
  RN_ASSERT_OK(flatten(a.view(), f.view()));
  EXPECT_EQ(f.data, a.data); // memory (NHWC) order
  Buffer wrong({4, 6});
  EXPECT_FALSE(flatten(a.view(), wrong.view()).ok());
  Buffer back({2, 2, 2, 3});
  RN_ASSERT_OK(reshape(f.view(), back.view()));
  EXPECT_EQ(back.data, a.data);
  Buffer small({5});
  EXPECT_FALSE(reshape(f.view(), small.view()).ok());

  RN_ASSERT_OK(zero(s.view()));
  for (float v : s.data)
    EXPECT_EQ(v, 0.0f);
}

TEST(LowPrecision, CastRoundsLikeRoundTo) {
  std::vector<float> values = {0.1f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048,
                               65504.0f, 65520.0f, 1e-8f, -3.14159f,
                               1.00390625f, 1.01171875f, 3e38f};
  for (DType type : {DType::f16, DType::bf16}) {
    Buffer in({static_cast<int64_t>(values.size())});
    in.data = values;
    Buffer out(in.shape, 0.0f, type);
    RN_ASSERT_OK(cast(in.view(), out.view()));
    for (size_t i = 0; i < values.size(); ++i) {
      float expected = roundTo(type, values[i]);
      if (std::isnan(expected))
        EXPECT_TRUE(std::isnan(out[i]));
      else
        EXPECT_EQ(out[i], expected) << dtypeName(type) << " " << values[i];
    }
    // Back to f32 is exact.
    Buffer again(in.shape);
    RN_ASSERT_OK(cast(out.view(), again.view()));
    EXPECT_EQ(again.data, out.data);
  }
  // f16 overflow becomes infinity, bf16 keeps the f32 range.
  Buffer big({1}, 70000.0f), h({1}, 0.0f, DType::f16), bf({1}, 0.0f, DType::bf16);
  RN_ASSERT_OK(cast(big.view(), h.view()));
  RN_ASSERT_OK(cast(big.view(), bf.view()));
  EXPECT_TRUE(std::isinf(h[0]));
  EXPECT_EQ(bf[0], 70144.0f);
}

TEST(LowPrecision, ElementwiseResultsAreRounded) {
  Buffer a({1}, 1.0f), b({1}, 1.0f / 4096), r({1}, 0.0f, DType::f16);
  RN_ASSERT_OK(add(a.view(), b.view(), r.view()));
  EXPECT_EQ(r[0], 1.0f); // 1 + 2^-12 is below f16's half ulp at 1
  a.dtype = b.dtype = DType::f32;
  r.dtype = DType::bf16;
  b[0] = 1.0f / 128;
  RN_ASSERT_OK(add(a.view(), b.view(), r.view()));
  EXPECT_EQ(r[0], 1.0078125f); // exactly representable in bf16
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

// The device's input normalization of uint8 images: every value is the
// data sources' f32 formula, rounded once to the result's dtype, so a uint8
// run equals a float run whose host normalized the same pixels.
TEST(InputNormalization, NormalizeImagesIsTheSourcesFormula) {
  Buffer pixels({2, 3, 5, 3}, 0.0f, DType::u8);
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = float((i * 37 + 11) % 256);
  pixels[0] = 0.0f, pixels[1] = 255.0f;
  Buffer mean({3}), deviation({3});
  mean.data = {0.4914f, 0.4822f, 0.4465f};
  deviation.data = {0.2470f, 0.2435f, 0.2616f};
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    Buffer out(pixels.shape, -7.0f, dtype);
    RN_ASSERT_OK(normalizeImages(pixels.view(), mean.view(), deviation.view(), out.view()));
    for (size_t i = 0; i < out.size(); ++i) {
      const size_t c = i % 3;
      const float host = (pixels[i] / 255.0f - mean[c]) * (1.0f / deviation[c]);
      ASSERT_EQ(out[i], roundTo(dtype, host)) << dtypeName(dtype) << " element " << i;
    }
  }
}

// The fused stem pad: the normalized channels, then zeros, and exactly the
// unfused normalize_images followed by pad_channels.
TEST(InputNormalization, PadChannelsNormalizesAndPads) {
  Buffer pixels({2, 4, 3, 3}, 0.0f, DType::u8);
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = float((i * 101 + 3) % 256);
  Buffer mean({3}), deviation({3});
  mean.data = {0.5f, 0.25f, 0.125f};
  deviation.data = {0.3f, 0.7f, 1.5f};
  Buffer normalized(pixels.shape, 0.0f, DType::f16), twoPasses({2, 4, 3, 8}, 0.0f, DType::f16);
  RN_ASSERT_OK(normalizeImages(pixels.view(), mean.view(), deviation.view(), normalized.view()));
  RN_ASSERT_OK(padChannels(normalized.view(), twoPasses.view()));
  Buffer fused({2, 4, 3, 8}, -1.0f, DType::f16);
  TensorView m = mean.view(), s = deviation.view();
  RN_ASSERT_OK(padChannels(pixels.view(), fused.view(), &m, &s));
  EXPECT_EQ(fused.data, twoPasses.data);
  for (size_t i = 0; i < fused.size(); ++i) {
    if (i % 8 >= 3) {
      ASSERT_EQ(fused[i], 0.0f) << i;
    }
  }
}

TEST(InputNormalization, ShapeErrors) {
  Buffer pixels({2, 2, 2, 3}, 0.0f, DType::u8), floats({2, 2, 2, 3});
  Buffer mean({3}), deviation({3}), narrow({2}), out({2, 2, 2, 3}), wide({2, 2, 2, 8});
  TensorView m = mean.view(), s = deviation.view(), n = narrow.view();
  auto error = [](KernelStatus status) { return status.error; };
  EXPECT_EQ(error(normalizeImages(floats.view(), mean.view(), deviation.view(), out.view())),
            "normalize_images: input must be ui8 images, got f32");
  EXPECT_EQ(error(normalizeImages(pixels.view(), narrow.view(), deviation.view(), out.view())),
            "normalize_images: mean must have shape [3], got [2]");
  EXPECT_EQ(error(normalizeImages(pixels.view(), mean.view(), deviation.view(), wide.view())),
            "normalize_images: result must have shape [2, 2, 2, 3], got [2, 2, 2, 8]");
  EXPECT_EQ(error(padChannels(pixels.view(), wide.view(), &m, &n)),
            "pad_channels: std must have shape [3], got [2]");
  EXPECT_EQ(error(padChannels(pixels.view(), wide.view(), &m, nullptr)),
            "pad_channels: normalizes with both mean and std");
  EXPECT_EQ(error(padChannels(pixels.view(), out.view(), &m, &s)),
            "pad_channels: the result must have more channels than the input");
}

TEST(Dropout, PhiloxKnownAnswers) {
  // Random123's kat_vectors for philox4x32 with 10 rounds.
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                       {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                       {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Dropout, DeterministicAndOrderIndependent) {
  std::mt19937 rng(29);
  Buffer x = randomBuffer({1000}, rng);
  RngKey key{1234, 77};
  Buffer y1({1000}), m1({1000}), y2({1000}), m2({1000});
  RN_ASSERT_OK(dropoutTrain(x.view(), 0.5, key, y1.view(), m1.view()));
  RN_ASSERT_OK(dropoutTrain(x.view(), 0.5, key, y2.view(), m2.view()));
  EXPECT_EQ(m1.data, m2.data);
  EXPECT_EQ(y1.data, y2.data);
  // Element i depends only on (key, i): a longer tensor starts with the same mask.
  Buffer xl = randomBuffer({2001}, rng), yl({2001}), ml({2001});
  RN_ASSERT_OK(dropoutTrain(xl.view(), 0.5, key, yl.view(), ml.view()));
  for (size_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(ml[i], m1[i]) << i;
    EXPECT_EQ(ml[i] == 0.0f, dropoutDrops(key, i, 0.5)) << i;
  }
  // Another stream or seed gives another mask.
  Buffer m3({1000}), m4({1000});
  RN_ASSERT_OK(dropoutTrain(x.view(), 0.5, {1234, 78}, y2.view(), m3.view()));
  RN_ASSERT_OK(dropoutTrain(x.view(), 0.5, {1235, 77}, y2.view(), m4.view()));
  EXPECT_NE(m3.data, m1.data);
  EXPECT_NE(m4.data, m1.data);
  EXPECT_NE(m3.data, m4.data);
}

TEST(Dropout, MaskStatistics) {
  const int64_t count = 200000;
  std::mt19937 rng(31);
  Buffer x = randomBuffer({count}, rng, 0.5f, 1.5f), y({count}), mask({count});
  for (double p : {0.1, 0.3, 0.5, 0.9}) {
    RN_ASSERT_OK(dropoutTrain(x.view(), p, {42, 7}, y.view(), mask.view()));
    const float keep = static_cast<float>(1.0 / (1.0 - p));
    int64_t dropped = 0;
    for (int64_t i = 0; i < count; ++i) {
      if (mask[i] == 0.0f) {
        ++dropped;
        EXPECT_EQ(y[i], 0.0f);
      } else {
        ASSERT_EQ(mask[i], keep);
        ASSERT_EQ(y[i], static_cast<float>(double(x[i]) * keep));
      }
    }
    double fraction = double(dropped) / count;
    double sigma = std::sqrt(p * (1 - p) / count);
    EXPECT_NEAR(fraction, p, 5 * sigma) << "p = " << p;
  }
  // p = 0 keeps everything unscaled; p = 1 drops everything.
  RN_ASSERT_OK(dropoutTrain(x.view(), 0.0, {42, 8}, y.view(), mask.view()));
  EXPECT_EQ(y.data, x.data);
  RN_ASSERT_OK(dropoutTrain(x.view(), 1.0, {42, 8}, y.view(), mask.view()));
  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(y[i], 0.0f);
  EXPECT_FALSE(dropoutTrain(x.view(), 1.5, {}, y.view(), mask.view()).ok());
}

TEST(Dropout, BackwardAppliesTheMaskAndModelLevelMatches) {
  std::mt19937 rng(37);
  Buffer x = randomBuffer({3, 7}, rng), y({3, 7}), mask({3, 7}, 0.0f, DType::bf16);
  RN_ASSERT_OK(dropoutTrain(x.view(), 0.3, {5, 5}, y.view(), mask.view()));
  for (float m : mask.data)
    EXPECT_TRUE(m == 0.0f || m == roundTo(DType::bf16, float(1 / 0.7)));
  Buffer dy = randomBuffer({3, 7}, rng), dx({3, 7});
  RN_ASSERT_OK(dropoutBackward(dy.view(), mask.view(), dx.view()));
  for (size_t i = 0; i < dx.size(); ++i)
    EXPECT_EQ(dx[i], static_cast<float>(double(dy[i]) * mask[i]));
  Buffer y2({3, 7});
  mask.dtype = DType::f32;
  RN_ASSERT_OK(dropoutTrain(x.view(), 0.3, {5, 5}, y.view(), mask.view()));
  RN_ASSERT_OK(dropout(x.view(), 0.3, {5, 5}, y2.view()));
  EXPECT_EQ(y2.data, y.data);
}

//===----------------------------------------------------------------------===//
// Stochastic depth
//===----------------------------------------------------------------------===//

/// The executor's key of a random op (Note [Random streams], cpu_kernels.h).
RngKey randomOpKey(uint64_t seed, int32_t step, uint64_t count, uint64_t index) {
  return {seed, uint64_t(int64_t(step)) * count + index};
}

/// Checks that every sample of `y` is either all zero (mask 0) or exactly
/// x * float(1 / (1 - p)) (mask that value), and that the mask is the
/// dropout draw of element n. Returns how many samples were kept.
int64_t expectWholeSamples(const Buffer &x, const Buffer &y, const Buffer &mask, double p,
                           const RngKey &key) {
  const int64_t samples = x.shape[0], perSample = int64_t(x.size()) / samples;
  const float keep = static_cast<float>(1.0 / (1.0 - p));
  int64_t kept = 0;
  for (int64_t n = 0; n < samples; ++n) {
    const bool dropped = mask[n] == 0.0f;
    EXPECT_EQ(dropped, dropoutDrops(key, uint64_t(n), p)) << "sample " << n;
    if (!dropped) {
      ++kept;
      EXPECT_EQ(mask[n], keep) << "sample " << n;
    }
    for (int64_t i = n * perSample; i < (n + 1) * perSample; ++i) {
      const float expected = dropped ? 0.0f : static_cast<float>(double(x[i]) * keep);
      if (y[i] != expected) {
        ADD_FAILURE() << "sample " << n << " element " << i << ": " << y[i] << ", expected "
                      << expected << (dropped ? " (dropped sample)" : " (kept sample)");
        return kept;
      }
    }
  }
  return kept;
}

TEST(StochasticDepth, SamplesAreKeptOrDroppedWhole) {
  std::mt19937 rng(41);
  const RngKey key = randomOpKey(7, 12, 3, 1);
  for (const Shape &shape : {Shape{37}, Shape{37, 5}, Shape{37, 3, 4, 6}}) {
    Buffer x = randomBuffer(shape, rng, 0.5f, 1.5f), y(shape), mask({37});
    for (double p : {0.2, 0.5, 0.8}) {
      RN_ASSERT_OK(stochasticDepthTrain(x.view(), p, key, y.view(), mask.view()));
      const int64_t kept = expectWholeSamples(x, y, mask, p, key);
      EXPECT_GT(kept, 0) << "p " << p;
      EXPECT_LT(kept, 37) << "p " << p;
    }
  }
}

TEST(StochasticDepth, KeepRateIsWithinABinomialBound) {
  // 64 samples for 1000 steps (index 1 of 3, as the second random op of a
  // step): 64000 draws, the kept fraction within 5 sigma of 1 - p.
  const int64_t samples = 64, steps = 1000;
  std::mt19937 rng(43);
  Buffer x = randomBuffer({samples, 2, 2, 3}, rng, 0.5f, 1.5f), y(x.shape), mask({samples});
  for (double p : {0.1, 0.2, 0.5, 0.9}) {
    int64_t kept = 0;
    for (int32_t step = 0; step < steps; ++step) {
      const RngKey key = randomOpKey(42, step, 3, 1);
      RN_ASSERT_OK(stochasticDepthTrain(x.view(), p, key, y.view(), mask.view()));
      kept += expectWholeSamples(x, y, mask, p, key);
    }
    const double draws = double(samples * steps), fraction = double(kept) / draws;
    const double sigma = std::sqrt(p * (1 - p) / draws);
    EXPECT_NEAR(fraction, 1 - p, 5 * sigma) << "p = " << p;
  }
}

TEST(StochasticDepth, SameKeyRedrawsOtherStepsAndIndicesDiffer) {
  std::mt19937 rng(47);
  Buffer x = randomBuffer({256, 3}, rng), y1(x.shape), y2(x.shape);
  Buffer m1({256}), m2({256});
  auto draw = [&](int32_t step, uint64_t index, Buffer &y, Buffer &m) {
    EXPECT_TRUE(
        stochasticDepthTrain(x.view(), 0.5, randomOpKey(99, step, 4, index), y.view(), m.view())
            .ok());
  };
  draw(5, 2, y1, m1);
  draw(5, 2, y2, m2);
  EXPECT_EQ(m1.data, m2.data) << "the same (seed, step, index) redraws the same mask";
  EXPECT_EQ(y1.data, y2.data);
  draw(6, 2, y2, m2);
  EXPECT_NE(m1.data, m2.data) << "another step";
  draw(5, 3, y2, m2);
  EXPECT_NE(m1.data, m2.data) << "another index";
  EXPECT_TRUE(stochasticDepthTrain(x.view(), 0.5, {100, 5 * 4 + 2}, y2.view(), m2.view()).ok());
  EXPECT_NE(m1.data, m2.data) << "another seed";
  // A longer batch starts with the same mask: sample n depends only on (key, n).
  Buffer xl = randomBuffer({301, 3}, rng), yl(xl.shape), ml({301});
  draw(5, 2, y1, m1);
  ASSERT_TRUE(
      stochasticDepthTrain(xl.view(), 0.5, randomOpKey(99, 5, 4, 2), yl.view(), ml.view()).ok());
  for (size_t n = 0; n < 256; ++n)
    EXPECT_EQ(ml[n], m1[n]) << n;
}

TEST(StochasticDepth, PZeroIsTheIdentityPOneDropsEverything) {
  std::mt19937 rng(53);
  Buffer x = randomBuffer({9, 4, 4, 2}, rng), y(x.shape), mask({9});
  RN_ASSERT_OK(stochasticDepthTrain(x.view(), 0.0, {1, 2}, y.view(), mask.view()));
  EXPECT_EQ(y.data, x.data);
  EXPECT_EQ(mask.data, std::vector<float>(9, 1.0f));
  RN_ASSERT_OK(stochasticDepthTrain(x.view(), 1.0, {1, 2}, y.view(), mask.view()));
  EXPECT_EQ(y.data, std::vector<float>(x.size(), 0.0f));
  EXPECT_EQ(mask.data, std::vector<float>(9, 0.0f));

  KernelStatus s = stochasticDepthTrain(x.view(), 1.5, {}, y.view(), mask.view());
  EXPECT_NE(s.error.find("p must be in [0, 1], got 1.5"), std::string::npos) << s.error;
  Buffer wrongMask({9, 1});
  s = stochasticDepthTrain(x.view(), 0.5, {}, y.view(), wrongMask.view());
  EXPECT_NE(s.error.find("stochastic_depth_train: mask"), std::string::npos) << s.error;
  Buffer scalar(Shape{}), scalarY(Shape{});
  s = stochasticDepthTrain(scalar.view(), 0.5, {}, scalarY.view(), mask.view());
  EXPECT_NE(s.error.find("input must have a batch dimension"), std::string::npos) << s.error;
}

TEST(StochasticDepth, BackwardScalesEachSampleAndModelLevelMatches) {
  // f16 activations with the f32 mask of mixed-precision training.
  std::mt19937 rng(59);
  const Shape shape{6, 3, 5};
  Buffer x = randomBuffer(shape, rng), y(shape, 0.0f, DType::f16), mask({6});
  for (float &v : x.data)
    v = roundTo(DType::f16, v);
  x.dtype = DType::f16;
  const RngKey key{5, 5};
  RN_ASSERT_OK(stochasticDepthTrain(x.view(), 0.3, key, y.view(), mask.view()));
  for (float m : mask.data)
    EXPECT_TRUE(m == 0.0f || m == static_cast<float>(1 / 0.7)) << m;
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_EQ(y[i], roundTo(DType::f16, static_cast<float>(double(x[i]) * mask[i / 15]))) << i;
  Buffer dy = randomBuffer(shape, rng), dx(shape, 0.0f, DType::bf16);
  RN_ASSERT_OK(stochasticDepthBackward(dy.view(), mask.view(), dx.view()));
  for (size_t i = 0; i < dx.size(); ++i)
    EXPECT_EQ(dx[i], roundTo(DType::bf16, static_cast<float>(double(dy[i]) * mask[i / 15])))
        << i;
  Buffer y2(shape, 0.0f, DType::f16);
  RN_ASSERT_OK(stochasticDepth(x.view(), 0.3, key, y2.view()));
  EXPECT_EQ(y2.data, y.data);
  Buffer wrongMask({5});
  KernelStatus s = stochasticDepthBackward(dy.view(), wrongMask.view(), dx.view());
  EXPECT_NE(s.error.find("stochastic_depth_backward: mask"), std::string::npos) << s.error;
}

//===----------------------------------------------------------------------===//
// Loss scaling
//===----------------------------------------------------------------------===//

TEST(LossScaling, CheckFinite) {
  Buffer a({3}, 1.0f), b({2}, -2.0f);
  EXPECT_FALSE(checkFinite(Views{a.view(), b.view()}));
  b[1] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(checkFinite(Views{a.view(), b.view()}));
  b[1] = 0.0f;
  a[0] = std::nanf("");
  EXPECT_TRUE(checkFinite(Views{a.view(), b.view()}));
  a[0] = -std::numeric_limits<float>::infinity();
  EXPECT_TRUE(checkFinite(Views{a.view()}));
  EXPECT_FALSE(checkFinite(Views{}));
}

TEST(LossScaling, Unscale) {
  Buffer g({3});
  g.data = {65536.0f, -3.0f, 1.0f};
  RN_ASSERT_OK(unscale(g.view(), 65536.0f, g.view()));
  EXPECT_EQ(g.data, (std::vector<float>{1.0f, -3.0f / 65536, 1.0f / 65536}));
}

TEST(LossScaling, BackOffAndGrowthSequence) {
  // growth 2, backoff 0.5, interval 3.
  float scale = 1024;
  int32_t good = 0;
  struct Step {
    bool overflow;
    float scale;
    int32_t good;
  };
  const Step steps[] = {
      {false, 1024, 1}, {false, 1024, 2}, {false, 2048, 0}, // grows on the 3rd
      {true, 1024, 0},                                      // backs off
      {false, 1024, 1}, {true, 512, 0},                     // count reset
      {true, 256, 0},   {false, 256, 1}, {false, 256, 2},
      {false, 512, 0},
  };
  for (const Step &s : steps) {
    RN_ASSERT_OK(updateLossScale(scale, good, s.overflow, 2.0, 0.5, 3, scale, good));
    EXPECT_EQ(scale, s.scale);
    EXPECT_EQ(good, s.good);
  }
  // Growth that would overflow f32 keeps the scale (and resets the count).
  float big = 3e38f, newScale;
  int32_t newGood;
  RN_ASSERT_OK(updateLossScale(big, 0, false, 2.0, 0.5, 1, newScale, newGood));
  EXPECT_EQ(newScale, big);
  EXPECT_EQ(newGood, 0);
  EXPECT_FALSE(updateLossScale(1, 0, false, 2, 0.5, 0, newScale, newGood).ok());
}

//===----------------------------------------------------------------------===//
// Optimizers (PyTorch's formulas, written out in double)
//===----------------------------------------------------------------------===//

struct SgdCase {
  double momentum, weightDecay;
  bool nesterov;
};

void PrintTo(const SgdCase &c, std::ostream *os) {
  *os << "momentum " << c.momentum << " weight_decay " << c.weightDecay
      << (c.nesterov ? " nesterov" : "");
}

class Sgd : public ::testing::TestWithParam<SgdCase> {};

TEST_P(Sgd, ThreeStepsMatchTorch) {
  SgdCase c = GetParam();
  std::mt19937 rng(41);
  Buffer param = randomBuffer({7}, rng), buf({7});
  std::vector<double> p(param.data.begin(), param.data.end()), b(7, 0.0);
  const float lrs[] = {0.1f, 0.05f, 0.2f};
  for (float lr : lrs) {
    Buffer grad = randomBuffer({7}, rng);
    TensorView bv = buf.view();
    bool hasBuf = c.momentum != 0;
    RN_ASSERT_OK(sgdUpdate(param.view(), grad.view(), hasBuf ? &bv : nullptr, lr, false,
                           {c.momentum, c.weightDecay, c.nesterov}, param.view(),
                           hasBuf ? &bv : nullptr));
    // torch.optim.SGD._single_tensor_sgd (dampening 0; the first step's
    // buffer is the gradient, which momentum * 0 + g equals).
    for (int i = 0; i < 7; ++i) {
      double d = grad[i] + c.weightDecay * p[i];
      if (c.momentum != 0) {
        b[i] = c.momentum * b[i] + d;
        d = c.nesterov ? d + c.momentum * b[i] : b[i];
      }
      p[i] -= double(lr) * d;
    }
  }
  expectClose("sgd param", param.data, p, 1e-6, 1e-6);
  if (c.momentum != 0)
    expectClose("sgd momentum", buf.data, b, 1e-6, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Variants, Sgd,
                         ::testing::Values(SgdCase{0.0, 0.0, false},
                                           SgdCase{0.0, 5e-4, false},
                                           SgdCase{0.9, 0.0, false},
                                           SgdCase{0.9, 1e-2, false},
                                           SgdCase{0.9, 1e-2, true}));

TEST(Sgd, MomentumBufferMustMatchMomentum) {
  Buffer p({2}), g({2}), b({2});
  TensorView bv = b.view();
  EXPECT_FALSE(sgdUpdate(p.view(), g.view(), nullptr, 0.1f, false, {0.9, 0, false}, p.view(), nullptr).ok());
  EXPECT_FALSE(sgdUpdate(p.view(), g.view(), &bv, 0.1f, false, {0.0, 0, false}, p.view(), &bv).ok());
}

TEST(AdamW, ThreeStepsMatchTorch) {
  std::mt19937 rng(43);
  const AdamWAttrs attrs{0.9, 0.99, 1e-6, 0.05};
  Buffer param = randomBuffer({9}, rng), m({9}), v({9});
  std::vector<double> p(param.data.begin(), param.data.end()), em(9, 0), ev(9, 0);
  const float lrs[] = {1e-2f, 2e-2f, 5e-3f};
  for (int step = 1; step <= 3; ++step) {
    float lr = lrs[step - 1];
    Buffer grad = randomBuffer({9}, rng);
    RN_ASSERT_OK(adamwUpdate(param.view(), grad.view(), m.view(), v.view(), lr, step, false,
                             attrs, param.view(), m.view(), v.view()));
    // torch.optim.AdamW._single_tensor_adam (decoupled weight decay).
    double bc1 = 1 - std::pow(attrs.beta1, step), bc2 = 1 - std::pow(attrs.beta2, step);
    for (int i = 0; i < 9; ++i) {
      p[i] *= 1 - lr * attrs.weightDecay;
      em[i] = attrs.beta1 * em[i] + (1 - attrs.beta1) * grad[i];
      ev[i] = attrs.beta2 * ev[i] + (1 - attrs.beta2) * double(grad[i]) * grad[i];
      double denom = std::sqrt(ev[i]) / std::sqrt(bc2) + attrs.epsilon;
      p[i] -= lr / bc1 * em[i] / denom;
    }
  }
  expectClose("adamw param", param.data, p, 1e-6, 1e-5);
  expectClose("adamw exp_avg", m.data, em, 1e-7, 1e-5);
  expectClose("adamw exp_avg_sq", v.data, ev, 1e-8, 1e-5);
  Buffer g({9});
  EXPECT_FALSE(adamwUpdate(param.view(), g.view(), m.view(), v.view(), 0.1f, 0, false, attrs,
                           param.view(), m.view(), v.view()).ok());
}

TEST(Lars, TrustRatio) {
  std::mt19937 rng(47);
  const LarsAttrs attrs{0.9, 1e-3, 0.02, 1e-9};
  Buffer param = randomBuffer({6}, rng), grad = randomBuffer({6}, rng, -0.1f, 0.1f);
  Buffer buf = randomBuffer({6}, rng), newParam({6}), newBuf({6});
  RN_ASSERT_OK(larsUpdate(param.view(), grad.view(), buf.view(), 0.5f, false, attrs,
                          newParam.view(), newBuf.view()));
  double pn = 0, gn = 0;
  for (int i = 0; i < 6; ++i) {
    pn += double(param[i]) * param[i];
    gn += double(grad[i]) * grad[i];
  }
  pn = std::sqrt(pn);
  gn = std::sqrt(gn);
  double localLr = attrs.trustCoefficient * pn / (gn + attrs.weightDecay * pn + attrs.epsilon);
  std::vector<double> eb(6), ep(6);
  for (int i = 0; i < 6; ++i) {
    eb[i] = attrs.momentum * buf[i] + localLr * (grad[i] + attrs.weightDecay * param[i]);
    ep[i] = param[i] - 0.5 * eb[i];
  }
  expectClose("lars momentum", newBuf.data, eb, 1e-7, 1e-6);
  expectClose("lars param", newParam.data, ep, 1e-7, 1e-6);

  // A zero gradient norm: local_lr = 1.
  Buffer zeroGrad({6}), zeroBuf({6});
  RN_ASSERT_OK(larsUpdate(param.view(), zeroGrad.view(), zeroBuf.view(), 0.5f, false, attrs,
                          newParam.view(), newBuf.view()));
  for (int i = 0; i < 6; ++i)
    EXPECT_NEAR(newBuf[i], attrs.weightDecay * param[i], 1e-9);
}

TEST(Ema, Formula) {
  std::mt19937 rng(53);
  Buffer avg = randomBuffer({5}, rng), param = randomBuffer({5}, rng), out({5});
  RN_ASSERT_OK(emaUpdate(avg.view(), param.view(), 0.99, out.view()));
  for (int i = 0; i < 5; ++i)
    EXPECT_NEAR(out[i], 0.99 * avg[i] + 0.01 * param[i], 1e-7);
}

TEST(Optimizers, SkipIfChangesNothing) {
  std::mt19937 rng(59);
  Buffer param = randomBuffer({4}, rng), grad = randomBuffer({4}, rng),
         s1 = randomBuffer({4}, rng), s2 = randomBuffer({4}, rng, 0, 1);
  const Buffer p0 = param, a0 = s1, b0 = s2;
  TensorView s1v = s1.view();
  // In place, as the memory planner runs them.
  RN_ASSERT_OK(sgdUpdate(param.view(), grad.view(), &s1v, 0.1f, true, {0.9, 1e-4, true},
                         param.view(), &s1v));
  RN_ASSERT_OK(adamwUpdate(param.view(), grad.view(), s1.view(), s2.view(), 0.1f, 3, true,
                           {}, param.view(), s1.view(), s2.view()));
  RN_ASSERT_OK(larsUpdate(param.view(), grad.view(), s1.view(), 0.1f, true, {},
                          param.view(), s1.view()));
  EXPECT_EQ(param.data, p0.data);
  EXPECT_EQ(s1.data, a0.data);
  EXPECT_EQ(s2.data, b0.data);
  // Out of place: the results are copies.
  Buffer np({4}), n1({4}), n2({4});
  RN_ASSERT_OK(adamwUpdate(param.view(), grad.view(), s1.view(), s2.view(), 0.1f, 3, true,
                           {}, np.view(), n1.view(), n2.view()));
  EXPECT_EQ(np.data, p0.data);
  EXPECT_EQ(n1.data, a0.data);
  EXPECT_EQ(n2.data, b0.data);
}

} // namespace
} // namespace rn::cpu
