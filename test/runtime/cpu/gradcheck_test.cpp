//===- gradcheck_test.cpp - Backward kernels vs finite differences --------===//
//
// For every backward op: a random input, a random upstream gradient G and
// the scalar L = <G, forward(inputs)>; the backward kernel's gradient of
// each differentiable input is compared with central differences of L,
// element by element (|numeric - analytic| <= atol + rtol * |analytic|).
// Accumulating gradients are checked to be `acc + d`, in place too. The
// fused backward ops are also compared with the unfused composition.
//
//===----------------------------------------------------------------------===//

#include "cpu_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <utility>

namespace rn::cpu {
namespace {

using testing::Buffer;
using testing::dot;
using testing::expectClose;
using testing::expectGradient;
using testing::GradTolerance;
using testing::randomBuffer;

// Ops exactly linear in the checked input (convolution, linear, average
// pooling, dropout, stochastic depth, batch norm in gamma and beta): central
// differences have no truncation error at any step, so a large step drowns
// the f32 rounding of the outputs.
constexpr GradTolerance kExact{0.5, 2e-6, 2e-6};
// Piecewise linear ops (max pooling, ReLU), stepping within one piece.
constexpr GradTolerance kLinear{1e-2, 5e-5, 2e-4};
// Smooth nonlinear ops (batch norm, tanh, silu, softmax).
constexpr GradTolerance kSmooth{5e-3, 1e-4, 1e-3};
// Compositions with a ReLU kink, evaluated away from the kink.
constexpr GradTolerance kKinked{5e-3, 2e-4, 2e-3};

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

struct ConvCase {
  Shape input, filter;
  Conv2dAttrs attrs;
};

void PrintTo(const ConvCase &c, std::ostream *os) {
  *os << "input " << testing::str(c.input) << " filter " << testing::str(c.filter) << " "
      << testing::str(c.attrs);
}


class Conv2dGrad : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2dGrad, MatchesFiniteDifferences) {
  const ConvCase &cc = GetParam();
  std::mt19937 rng(101);
  Buffer x = randomBuffer(cc.input, rng), w = randomBuffer(cc.filter, rng),
         b = randomBuffer({cc.filter[0]}, rng);
  Shape outShape;
  RN_ASSERT_OK(conv2dOutputShape(x.shape, w.shape, cc.attrs, outShape));
  Buffer g = randomBuffer(outShape, rng);
  auto loss = [&] {
    Buffer y(outShape);
    TensorView bv = b.view();
    EXPECT_TRUE(conv2d(x.view(), w.view(), &bv, cc.attrs, y.view()).ok());
    return dot(g, y);
  };
  Buffer dx(x.shape), zeroW(w.shape), dw(w.shape), zeroB(b.shape), db(b.shape);
  TensorView dxv = dx.view(), zbv = zeroB.view(), dbv = db.view();
  RN_ASSERT_OK(conv2dBackward(g.view(), x.view(), w.view(), zeroW.view(), &zbv, cc.attrs,
                              &dxv, dw.view(), &dbv));
  expectGradient("conv2d dX", x, dx.data, loss, kExact);
  expectGradient("conv2d dW", w, dw.data, loss, kExact);
  expectGradient("conv2d dB", b, db.data, loss, kExact);

  // Accumulation: results are acc + d, also in place, also without dX.
  Buffer accW = randomBuffer(w.shape, rng), accB = randomBuffer(b.shape, rng);
  Buffer outW(w.shape), outB(b.shape);
  TensorView accBv = accB.view(), outBv = outB.view();
  RN_ASSERT_OK(conv2dBackward(g.view(), x.view(), w.view(), accW.view(), &accBv, cc.attrs,
                              nullptr, outW.view(), &outBv));
  std::vector<double> sumW(w.size()), sumB(b.size());
  for (size_t i = 0; i < w.size(); ++i)
    sumW[i] = double(accW[i]) + dw[i];
  for (size_t i = 0; i < b.size(); ++i)
    sumB[i] = double(accB[i]) + db[i];
  expectClose("conv2d filter_grad_acc + dW", outW.data, sumW, 1e-6, 1e-6);
  expectClose("conv2d bias_grad_acc + dB", outB.data, sumB, 1e-6, 1e-6);
  RN_ASSERT_OK(conv2dBackward(g.view(), x.view(), w.view(), accW.view(), &accBv, cc.attrs,
                              nullptr, accW.view(), &accBv));
  EXPECT_EQ(accW.data, outW.data);
  EXPECT_EQ(accB.data, outB.data);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Conv2dGrad,
    ::testing::Values(
        // stride 2, padding, dilation 2, groups 2
        ConvCase{{2, 7, 6, 4}, {6, 3, 2, 2}, {{2, 2}, {1, 1}, {2, 1}, 2}},
        // 3x3 "same", groups 1
        ConvCase{{2, 5, 5, 3}, {4, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}},
        // stride larger than the kernel (input positions no window reads)
        ConvCase{{1, 7, 7, 2}, {3, 2, 2, 2}, {{3, 3}, {0, 1}, {1, 1}, 1}},
        // 10 output and 9 input channels per group: full register blocks of
        // 8 channels and tails
        ConvCase{{2, 4, 5, 18}, {20, 3, 3, 9}, {{1, 2}, {1, 1}, {1, 1}, 2}}));

//===----------------------------------------------------------------------===//
// Fully connected
//===----------------------------------------------------------------------===//

TEST(LinearGrad, MatchesFiniteDifferences) {
  std::mt19937 rng(103);
  Buffer x = randomBuffer({3, 6}, rng), w = randomBuffer({5, 6}, rng), b = randomBuffer({5}, rng);
  Buffer g = randomBuffer({3, 5}, rng);
  auto loss = [&] {
    Buffer y({3, 5});
    TensorView bv = b.view();
    EXPECT_TRUE(linear(x.view(), w.view(), &bv, y.view()).ok());
    return dot(g, y);
  };
  Buffer dx(x.shape), dw(w.shape), db(b.shape);
  Buffer accW = randomBuffer(w.shape, rng), accB = randomBuffer(b.shape, rng);
  const Buffer accW0 = accW, accB0 = accB;
  TensorView dxv = dx.view(), accBv = accB.view();
  // In place: the accumulators receive acc + d.
  RN_ASSERT_OK(linearBackward(g.view(), x.view(), w.view(), accW.view(), &accBv, &dxv,
                              accW.view(), &accBv));
  for (size_t i = 0; i < w.size(); ++i)
    dw[i] = accW[i] - accW0[i];
  for (size_t i = 0; i < b.size(); ++i)
    db[i] = accB[i] - accB0[i];
  expectGradient("linear dX", x, dx.data, loss, kExact);
  expectGradient("linear dW (acc + dW - acc)", w, dw.data, loss, kExact);
  expectGradient("linear dB (acc + dB - acc)", b, db.data, loss, kExact);

  // Without a bias and without dX (the first layer).
  Buffer zeroW(w.shape), dw2(w.shape);
  RN_ASSERT_OK(linearBackward(g.view(), x.view(), w.view(), zeroW.view(), nullptr, nullptr,
                              dw2.view(), nullptr));
  expectClose("linear dW", dw2.data, dw.data, 1e-5, 1e-5);
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

class BatchNormGrad : public ::testing::TestWithParam<Shape> {};

TEST_P(BatchNormGrad, MatchesFiniteDifferences) {
  Shape shape = GetParam();
  int64_t c = shape.back();
  std::mt19937 rng(107);
  Buffer x = randomBuffer(shape, rng, -1.0f, 2.0f);
  Buffer gamma = randomBuffer({c}, rng, 0.5f, 1.5f), beta = randomBuffer({c}, rng);
  Buffer g = randomBuffer(shape, rng);
  const double eps = 1e-5;
  Buffer mean({c}), invStd({c});
  auto loss = [&] {
    Buffer y(shape);
    EXPECT_TRUE(batchNormTrain(x.view(), gamma.view(), beta.view(), eps, y.view(),
                               mean.view(), invStd.view()).ok());
    return dot(g, y);
  };
  loss(); // the saved statistics of the unperturbed input
  Buffer accG = randomBuffer({c}, rng), accB = randomBuffer({c}, rng);
  Buffer dx(shape), dGamma({c}), dBeta({c});
  RN_ASSERT_OK(batchNormBackward(g.view(), x.view(), gamma.view(), mean.view(), invStd.view(),
                                 accG.view(), accB.view(), dx.view(), dGamma.view(),
                                 dBeta.view()));
  std::vector<float> dg(c), dbeta(c);
  for (int64_t k = 0; k < c; ++k) {
    dg[k] = dGamma[k] - accG[k];
    dbeta[k] = dBeta[k] - accB[k];
  }
  Buffer savedMean = mean, savedInv = invStd;
  expectGradient("batch_norm dX", x, dx.data, loss, kSmooth);
  expectGradient("batch_norm dgamma", gamma, dg, loss, kExact);
  expectGradient("batch_norm dbeta", beta, dbeta, loss, kExact);

  // In place on the accumulators.
  RN_ASSERT_OK(batchNormBackward(g.view(), x.view(), gamma.view(), savedMean.view(),
                                 savedInv.view(), accG.view(), accB.view(), dx.view(),
                                 accG.view(), accB.view()));
  EXPECT_EQ(accG.data, dGamma.data);
  EXPECT_EQ(accB.data, dBeta.data);
}

INSTANTIATE_TEST_SUITE_P(Layouts, BatchNormGrad,
                         ::testing::Values(Shape{2, 3, 3, 4}, Shape{7, 3}));

//===----------------------------------------------------------------------===//
// Layer normalization and the per-channel layer scale
//===----------------------------------------------------------------------===//

class LayerNormGrad : public ::testing::TestWithParam<Shape> {};

TEST_P(LayerNormGrad, MatchesFiniteDifferences) {
  Shape shape = GetParam();
  int64_t c = shape.back();
  std::mt19937 rng(151);
  Buffer x = randomBuffer(shape, rng, -1.0f, 2.0f);
  Buffer gamma = randomBuffer({c}, rng, 0.5f, 1.5f), beta = randomBuffer({c}, rng);
  Buffer g = randomBuffer(shape, rng);
  const double eps = 1e-6;
  auto loss = [&] {
    Buffer y(shape);
    EXPECT_TRUE(layerNorm(x.view(), gamma.view(), beta.view(), eps, y.view()).ok());
    return dot(g, y);
  };
  Buffer accG = randomBuffer({c}, rng), accB = randomBuffer({c}, rng);
  Buffer dx(shape), dGamma({c}), dBeta({c});
  RN_ASSERT_OK(layerNormBackward(g.view(), x.view(), gamma.view(), accG.view(), accB.view(),
                                 eps, dx.view(), dGamma.view(), dBeta.view()));
  std::vector<float> dg(c), dbeta(c);
  for (int64_t k = 0; k < c; ++k) {
    dg[k] = dGamma[k] - accG[k];
    dbeta[k] = dBeta[k] - accB[k];
  }
  expectGradient("layer_norm dX", x, dx.data, loss, kSmooth);
  expectGradient("layer_norm dgamma", gamma, dg, loss, kExact);
  expectGradient("layer_norm dbeta", beta, dbeta, loss, kExact);

  // In place on the accumulators.
  RN_ASSERT_OK(layerNormBackward(g.view(), x.view(), gamma.view(), accG.view(), accB.view(),
                                 eps, dx.view(), accG.view(), accB.view()));
  EXPECT_EQ(accG.data, dGamma.data);
  EXPECT_EQ(accB.data, dBeta.data);
}

INSTANTIATE_TEST_SUITE_P(Layouts, LayerNormGrad,
                         ::testing::Values(Shape{2, 3, 3, 8}, Shape{5, 6}));

TEST(ChannelScaleGrad, MatchesFiniteDifferences) {
  std::mt19937 rng(157);
  Shape shape{2, 3, 2, 5};
  Buffer x = randomBuffer(shape, rng), s = randomBuffer({5}, rng), g = randomBuffer(shape, rng);
  auto loss = [&] {
    Buffer y(shape);
    EXPECT_TRUE(channelScale(x.view(), s.view(), y.view()).ok());
    return dot(g, y);
  };
  Buffer acc = randomBuffer({5}, rng), dx(shape), ds({5});
  RN_ASSERT_OK(channelScaleBackward(g.view(), x.view(), s.view(), acc.view(), dx.view(),
                                    ds.view()));
  std::vector<float> dscale(5);
  for (int64_t k = 0; k < 5; ++k)
    dscale[k] = ds[k] - acc[k];
  expectGradient("channel_scale dX", x, dx.data, loss, kExact);
  expectGradient("channel_scale dscale", s, dscale, loss, kExact);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// Distinct values 0.05 apart in random order: a step of 0.01 never changes
/// which element of a window is the maximum.
Buffer distinctValues(Shape shape, std::mt19937 &rng) {
  Buffer b(std::move(shape));
  std::vector<int> order(b.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = 0.05f * float(order[i]) - 1.0f;
  return b;
}

struct PoolCase {
  Pool2dAttrs attrs;
};

void PrintTo(const PoolCase &c, std::ostream *os) {
  *os << "kernel " << testing::str(c.attrs.kernel) << " stride "
      << testing::str(c.attrs.strides) << " pad " << testing::str(c.attrs.padding)
      << (c.attrs.ceilMode ? " ceil_mode" : "") << (c.attrs.excludePad ? " exclude_pad" : "");
}

class PoolGrad : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolGrad, MaxAndAverageMatchFiniteDifferences) {
  Pool2dAttrs attrs = GetParam().attrs;
  std::mt19937 rng(109);
  Buffer x = distinctValues({2, 5, 6, 2}, rng);
  Shape outShape;
  RN_ASSERT_OK(pool2dOutputShape(x.shape, attrs, outShape));
  Buffer g = randomBuffer(outShape, rng);

  auto maxLoss = [&] {
    Buffer y(outShape);
    EXPECT_TRUE(maxPool2d(x.view(), attrs, y.view()).ok());
    return dot(g, y);
  };
  Buffer dx(x.shape);
  RN_ASSERT_OK(maxPool2dBackward(g.view(), x.view(), attrs, dx.view()));
  expectGradient("max_pool2d dX", x, dx.data, maxLoss, kLinear);

  auto avgLoss = [&] {
    Buffer y(outShape);
    EXPECT_TRUE(avgPool2d(x.view(), attrs, y.view()).ok());
    return dot(g, y);
  };
  RN_ASSERT_OK(avgPool2dBackward(g.view(), attrs, dx.view()));
  expectGradient("avg_pool2d dX", x, dx.data, avgLoss, kExact);
}

INSTANTIATE_TEST_SUITE_P(Windows, PoolGrad,
                         ::testing::Values(PoolCase{{{2, 2}, {2, 2}, {0, 0}}},
                                           PoolCase{{{3, 3}, {2, 2}, {1, 1}}},
                                           PoolCase{{{2, 3}, {1, 2}, {1, 1}}},
                                           // ceil_mode: partial last windows
                                           // (5x6 -> 3x3), both divisors.
                                           PoolCase{{{3, 3}, {2, 2}, {0, 0}, true}},
                                           PoolCase{{{2, 2}, {2, 2}, {1, 1}, true}},
                                           PoolCase{{{3, 2}, {2, 2}, {1, 1}, true, true}},
                                           PoolCase{{{3, 3}, {2, 2}, {1, 1}, false, true}}));

TEST(AdaptiveAvgPoolGrad, MatchesFiniteDifferences) {
  std::mt19937 rng(117);
  // Overlapping windows of varying size (7 -> 3, 5 -> 4) and an output
  // larger than the input (2 -> 3: rows in two windows).
  for (const auto &[in, out] : {std::pair{Shape{2, 7, 5, 3}, Shape{2, 3, 4, 3}},
                                std::pair{Shape{1, 2, 4, 2}, Shape{1, 3, 3, 2}}}) {
    Buffer x = randomBuffer(in, rng), g = randomBuffer(out, rng);
    auto loss = [&, out = out] {
      Buffer y(out);
      EXPECT_TRUE(adaptiveAvgPool2d(x.view(), y.view()).ok());
      return dot(g, y);
    };
    Buffer dx(x.shape);
    RN_ASSERT_OK(adaptiveAvgPool2dBackward(g.view(), dx.view()));
    expectGradient("adaptive_avg_pool2d dX", x, dx.data, loss, kExact);
  }
}

TEST(GlobalAvgPoolGrad, MatchesFiniteDifferences) {
  std::mt19937 rng(113);
  Buffer x = randomBuffer({2, 3, 4, 3}, rng), g = randomBuffer({2, 1, 1, 3}, rng);
  auto loss = [&] {
    Buffer y({2, 1, 1, 3});
    EXPECT_TRUE(globalAvgPool(x.view(), y.view()).ok());
    return dot(g, y);
  };
  Buffer dx(x.shape);
  RN_ASSERT_OK(globalAvgPoolBackward(g.view(), dx.view()));
  expectGradient("global_avg_pool dX", x, dx.data, loss, kExact);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

TEST(ElementwiseGrad, ReluTanhSilu) {
  std::mt19937 rng(127);
  // |x| in [0.1, 1]: a step of 0.005 never crosses ReLU's kink.
  Buffer x = randomBuffer({3, 4, 5}, rng, 0.1f, 1.0f);
  std::bernoulli_distribution sign(0.5);
  for (float &v : x.data)
    v = sign(rng) ? -v : v;
  Buffer g = randomBuffer(x.shape, rng), y(x.shape), dx(x.shape);

  auto reluLoss = [&] {
    EXPECT_TRUE(relu(x.view(), y.view()).ok());
    return dot(g, y);
  };
  reluLoss();
  RN_ASSERT_OK(reluBackward(g.view(), y.view(), dx.view()));
  expectGradient("relu dX", x, dx.data, reluLoss, kLinear);

  auto tanhLoss = [&] {
    EXPECT_TRUE(tanh(x.view(), y.view()).ok());
    return dot(g, y);
  };
  tanhLoss();
  RN_ASSERT_OK(tanhBackward(g.view(), y.view(), dx.view()));
  expectGradient("tanh dX", x, dx.data, tanhLoss, kSmooth);

  Buffer wide = randomBuffer(x.shape, rng, -4.0f, 4.0f);
  auto siluLoss = [&] {
    EXPECT_TRUE(silu(wide.view(), y.view()).ok());
    return dot(g, y);
  };
  RN_ASSERT_OK(siluBackward(g.view(), wide.view(), dx.view()));
  expectGradient("silu dX", wide, dx.data, siluLoss, kSmooth);
}

TEST(ElementwiseGrad, Gelu) {
  std::mt19937 rng(131);
  Buffer x = randomBuffer({3, 4, 5}, rng, -4.0f, 4.0f);
  Buffer g = randomBuffer(x.shape, rng), y(x.shape), dx(x.shape);
  for (bool tanhForm : {false, true}) {
    auto loss = [&] {
      EXPECT_TRUE(gelu(x.view(), tanhForm, y.view()).ok());
      return dot(g, y);
    };
    RN_ASSERT_OK(geluBackward(g.view(), x.view(), tanhForm, dx.view()));
    expectGradient(tanhForm ? "gelu (tanh) dX" : "gelu dX", x, dx.data, loss, kSmooth);
  }
}

TEST(ElementwiseGrad, MobileActivations) {
  std::mt19937 rng(137);
  // x in [-5, 8], at least 0.1 from every kink (-3, 3 of hardswish and
  // hardsigmoid, 0 and 6 of ReLU6, -1 and 1 of hardtanh(-1, 1)): no step
  // crosses one, and every piece has elements.
  Buffer x = randomBuffer({4, 3, 5}, rng, -5.0f, 8.0f);
  for (float &v : x.data)
    for (float kink : {-3.0f, -1.0f, 0.0f, 1.0f, 3.0f, 6.0f})
      if (std::fabs(v - kink) < 0.1f)
        v = kink + (v < kink ? -0.1f : 0.1f);
  Buffer g = randomBuffer(x.shape, rng), y(x.shape), dx(x.shape);

  for (auto [lo, hi] : {std::pair{0.0, 6.0}, std::pair{-1.0, 1.0}}) {
    auto hardtanhLoss = [&, lo = lo, hi = hi] {
      EXPECT_TRUE(hardtanh(x.view(), lo, hi, y.view()).ok());
      return dot(g, y);
    };
    hardtanhLoss(); // the backward reads the result
    RN_ASSERT_OK(hardtanhBackward(g.view(), y.view(), lo, hi, dx.view()));
    expectGradient(lo == 0.0 ? "relu6 dX" : "hardtanh dX", x, dx.data, hardtanhLoss, kLinear);
  }

  auto hardswishLoss = [&] {
    EXPECT_TRUE(hardswish(x.view(), y.view()).ok());
    return dot(g, y);
  };
  RN_ASSERT_OK(hardswishBackward(g.view(), x.view(), dx.view()));
  expectGradient("hardswish dX", x, dx.data, hardswishLoss, kSmooth);

  auto hardsigmoidLoss = [&] {
    EXPECT_TRUE(hardsigmoid(x.view(), y.view()).ok());
    return dot(g, y);
  };
  RN_ASSERT_OK(hardsigmoidBackward(g.view(), x.view(), dx.view()));
  expectGradient("hardsigmoid dX", x, dx.data, hardsigmoidLoss, kLinear);

  auto sigmoidLoss = [&] {
    EXPECT_TRUE(sigmoid(x.view(), y.view()).ok());
    return dot(g, y);
  };
  sigmoidLoss(); // the backward reads the result
  RN_ASSERT_OK(sigmoidBackward(g.view(), y.view(), dx.view()));
  expectGradient("sigmoid dX", x, dx.data, sigmoidLoss, kSmooth);
}

TEST(ElementwiseGrad, ChannelMul) {
  std::mt19937 rng(139);
  Buffer x = randomBuffer({2, 3, 4, 5}, rng), s = randomBuffer({2, 1, 1, 5}, rng);
  Buffer g = randomBuffer(x.shape, rng), y(x.shape), dx(x.shape), ds(s.shape);
  auto loss = [&] {
    EXPECT_TRUE(channelMul(x.view(), s.view(), y.view()).ok());
    return dot(g, y);
  };
  RN_ASSERT_OK(channelMulBackward(g.view(), x.view(), s.view(), dx.view(), ds.view()));
  // Linear in each operand.
  expectGradient("channel_mul dX", x, dx.data, loss, kExact);
  expectGradient("channel_mul dScale", s, ds.data, loss, kExact);
}

TEST(ElementwiseGrad, DropoutAndFlatten) {
  std::mt19937 rng(131);
  Buffer x = randomBuffer({4, 2, 2, 3}, rng), g = randomBuffer(x.shape, rng);
  Buffer y(x.shape), mask(x.shape), dx(x.shape);
  const RngKey key{99, 3};
  auto dropLoss = [&] {
    EXPECT_TRUE(dropoutTrain(x.view(), 0.4, key, y.view(), mask.view()).ok());
    return dot(g, y);
  };
  dropLoss();
  RN_ASSERT_OK(dropoutBackward(g.view(), mask.view(), dx.view()));
  expectGradient("dropout dX", x, dx.data, dropLoss, kExact);

  // rn.reshape is the backward of rn.flatten.
  Buffer gf = randomBuffer({4, 12}, rng);
  auto flatLoss = [&] {
    Buffer f({4, 12});
    EXPECT_TRUE(flatten(x.view(), f.view()).ok());
    return dot(gf, f);
  };
  RN_ASSERT_OK(reshape(gf.view(), dx.view()));
  expectGradient("flatten dX", x, dx.data, flatLoss, kExact);
}

TEST(ElementwiseGrad, StochasticDepth) {
  std::mt19937 rng(149);
  Buffer x = randomBuffer({8, 2, 2, 3}, rng), g = randomBuffer(x.shape, rng);
  Buffer y(x.shape), mask({8}), dx(x.shape);
  // One key: every evaluation of the loss redraws the same mask, so the
  // loss is linear in x.
  const RngKey key{99, 4};
  auto loss = [&] {
    EXPECT_TRUE(stochasticDepthTrain(x.view(), 0.5, key, y.view(), mask.view()).ok());
    return dot(g, y);
  };
  loss();
  const auto dropped = std::count(mask.data.begin(), mask.data.end(), 0.0f);
  ASSERT_GT(dropped, 0) << "the key should drop some samples and keep others";
  ASSERT_LT(dropped, 8) << "the key should drop some samples and keep others";
  RN_ASSERT_OK(stochasticDepthBackward(g.view(), mask.view(), dx.view()));
  expectGradient("stochastic_depth dX", x, dx.data, loss, kExact);
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

TEST(LossGrad, LabelSmoothingAndScale) {
  std::mt19937 rng(137);
  Buffer logits = randomBuffer({4, 5}, rng, -2.0f, 2.0f);
  std::vector<int32_t> labelData = {3, 0, 4, 3};
  LabelView labels{labelData.data(), {4}};
  for (double smoothing : {0.0, 0.1}) {
    for (float scale : {1.0f, 8.0f}) {
      auto loss = [&] {
        float l = 0;
        EXPECT_TRUE(softmaxCrossEntropy(logits.view(), labels, smoothing, l).ok());
        return double(l) * scale;
      };
      Buffer grad(logits.shape);
      RN_ASSERT_OK(softmaxCrossEntropyBackward(logits.view(), labels, scale, smoothing,
                                               grad.view()));
      expectGradient("softmax_cross_entropy dlogits", logits, grad.data, loss,
                     GradTolerance{1e-2, 2e-4 * scale, 2e-3});
    }
  }
}

//===----------------------------------------------------------------------===//
// Fused ops
//===----------------------------------------------------------------------===//

/// Smallest |v| over a buffer: how far the values are from ReLU's kink.
float margin(const Buffer &b) {
  float m = INFINITY;
  for (float v : b.data)
    m = std::min(m, std::fabs(v));
  return m;
}

struct CbrCase {
  Shape input, filter;
  Conv2dAttrs attrs;
  bool relu;
};

void PrintTo(const CbrCase &c, std::ostream *os) {
  *os << "input " << testing::str(c.input) << " filter " << testing::str(c.filter) << " "
      << testing::str(c.attrs) << (c.relu ? " relu" : "");
}

class CbrGrad : public ::testing::TestWithParam<CbrCase> {};

TEST_P(CbrGrad, MatchesFiniteDifferencesAndUnfusedOps) {
  const CbrCase &cc = GetParam();
  const double eps = 1e-5;
  int64_t o = cc.filter[0];
  Shape outShape;
  RN_ASSERT_OK(conv2dOutputShape(cc.input, cc.filter, cc.attrs, outShape));

  // Draw inputs until every pre-activation is 0.03 away from the kink (the
  // largest change a step of 0.005 makes is about 0.013).
  Buffer x, w, gamma, beta, y(outShape), conv(outShape), mean({o}), invStd({o});
  for (unsigned seed = 1;; ++seed) {
    ASSERT_LT(seed, 2000u) << "no sample far enough from the ReLU kink";
    std::mt19937 rng(seed);
    x = randomBuffer(cc.input, rng);
    w = randomBuffer(cc.filter, rng);
    gamma = randomBuffer({o}, rng, 0.5f, 1.5f);
    beta = randomBuffer({o}, rng, -0.5f, 0.5f);
    RN_ASSERT_OK(cbrForward(x.view(), w.view(), gamma.view(), beta.view(), cc.attrs, eps,
                            false, y.view(), conv.view(), mean.view(), invStd.view()));
    if (!cc.relu || margin(y) > 0.03f)
      break;
  }
  std::mt19937 rng(139);
  Buffer g = randomBuffer(outShape, rng);
  auto loss = [&] {
    Buffer r(outShape), c(outShape), m({o}), s({o});
    EXPECT_TRUE(cbrForward(x.view(), w.view(), gamma.view(), beta.view(), cc.attrs, eps,
                           cc.relu, r.view(), c.view(), m.view(), s.view()).ok());
    return dot(g, r);
  };
  RN_ASSERT_OK(cbrForward(x.view(), w.view(), gamma.view(), beta.view(), cc.attrs, eps,
                          cc.relu, y.view(), conv.view(), mean.view(), invStd.view()));

  Buffer zeroW(w.shape), zeroC({o});
  Buffer dconv(outShape), dx(x.shape), dw(w.shape), dgamma({o}), dbeta({o});
  TensorView yv = y.view(), dxv = dx.view();
  RN_ASSERT_OK(cbrBackward(g.view(), x.view(), w.view(), conv.view(), gamma.view(),
                           mean.view(), invStd.view(), zeroW.view(), zeroC.view(),
                           zeroC.view(), cc.relu ? &yv : nullptr, cc.attrs, dconv.view(), &dxv,
                           dw.view(), dgamma.view(), dbeta.view()));
  expectGradient("cbr dX", x, dx.data, loss, kKinked);
  expectGradient("cbr dW", w, dw.data, loss, kKinked);
  expectGradient("cbr dgamma", gamma, dgamma.data, loss, kKinked);
  expectGradient("cbr dbeta", beta, dbeta.data, loss, kKinked);

  // The unfused composition: relu_backward, batch_norm_backward,
  // conv2d_backward, with accumulators.
  Buffer accW = randomBuffer(w.shape, rng), accG = randomBuffer({o}, rng),
         accB = randomBuffer({o}, rng);
  Buffer d(outShape), uconv(outShape), ux(x.shape), uw(w.shape), ug({o}), ub({o});
  if (cc.relu)
    RN_ASSERT_OK(reluBackward(g.view(), y.view(), d.view()));
  else
    d = g;
  RN_ASSERT_OK(batchNormBackward(d.view(), conv.view(), gamma.view(), mean.view(),
                                 invStd.view(), accG.view(), accB.view(), uconv.view(),
                                 ug.view(), ub.view()));
  TensorView uxv = ux.view();
  RN_ASSERT_OK(conv2dBackward(uconv.view(), x.view(), w.view(), accW.view(), nullptr,
                              cc.attrs, &uxv, uw.view(), nullptr));
  Buffer fconv(outShape), fx(x.shape), fw(w.shape), fg({o}), fb({o});
  TensorView fxv = fx.view();
  RN_ASSERT_OK(cbrBackward(g.view(), x.view(), w.view(), conv.view(), gamma.view(),
                           mean.view(), invStd.view(), accW.view(), accG.view(),
                           accB.view(), cc.relu ? &yv : nullptr, cc.attrs, fconv.view(),
                           &fxv, fw.view(), fg.view(), fb.view()));
  expectClose("cbr conv_output_grad vs unfused", fconv.data, uconv.data, 1e-6, 1e-6);
  expectClose("cbr dX vs unfused", fx.data, ux.data, 1e-6, 1e-6);
  expectClose("cbr acc + dW vs unfused", fw.data, uw.data, 1e-6, 1e-6);
  expectClose("cbr acc + dgamma vs unfused", fg.data, ug.data, 1e-6, 1e-6);
  expectClose("cbr acc + dbeta vs unfused", fb.data, ub.data, 1e-6, 1e-6);

  // The first-layer variant (no dX) gives the same weight gradients.
  Buffer f2conv(outShape), f2w(w.shape), f2g({o}), f2b({o});
  RN_ASSERT_OK(cbrBackward(g.view(), x.view(), w.view(), conv.view(), gamma.view(),
                           mean.view(), invStd.view(), accW.view(), accG.view(),
                           accB.view(), cc.relu ? &yv : nullptr, cc.attrs, f2conv.view(),
                           nullptr, f2w.view(), f2g.view(), f2b.view()));
  EXPECT_EQ(f2w.data, fw.data);
  EXPECT_EQ(f2g.data, fg.data);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CbrGrad,
    ::testing::Values(CbrCase{{2, 4, 4, 2}, {3, 3, 3, 2}, {{1, 1}, {1, 1}, {1, 1}, 1}, true},
                      CbrCase{{2, 5, 5, 2}, {3, 3, 3, 2}, {{2, 2}, {1, 1}, {1, 1}, 1}, false},
                      CbrCase{{2, 5, 4, 4}, {4, 2, 2, 2}, {{1, 1}, {1, 0}, {2, 1}, 2}, true}));

TEST(CbrForward, EqualsUnfusedOpsAlsoInLowPrecision) {
  std::mt19937 rng(149);
  Conv2dAttrs attrs{{1, 1}, {1, 1}, {1, 1}, 1};
  for (DType type : {DType::f32, DType::f16, DType::bf16}) {
    Buffer x = randomBuffer({2, 4, 4, 3}, rng), w = randomBuffer({4, 3, 3, 3}, rng);
    for (Buffer *b : {&x, &w}) {
      for (float &v : b->data)
        v = roundTo(type, v);
      b->dtype = type;
    }
    Buffer gamma = randomBuffer({4}, rng, 0.5f, 1.5f), beta = randomBuffer({4}, rng);
    Shape os{2, 4, 4, 4};
    Buffer y(os, 0, type), c(os, 0, type), m({4}), s({4});
    RN_ASSERT_OK(cbrForward(x.view(), w.view(), gamma.view(), beta.view(), attrs, 1e-5, true,
                            y.view(), c.view(), m.view(), s.view()));
    // Unfused: the convolution output is stored (rounded) before the
    // statistics are taken.
    Buffer uc(os, 0, type), ubn(os, 0, type), uy(os, 0, type), um({4}), us({4});
    RN_ASSERT_OK(conv2d(x.view(), w.view(), nullptr, attrs, uc.view()));
    RN_ASSERT_OK(batchNormTrain(uc.view(), gamma.view(), beta.view(), 1e-5, ubn.view(),
                                um.view(), us.view()));
    RN_ASSERT_OK(relu(ubn.view(), uy.view()));
    EXPECT_EQ(c.data, uc.data) << dtypeName(type);
    EXPECT_EQ(y.data, uy.data) << dtypeName(type);
    EXPECT_EQ(m.data, um.data) << dtypeName(type);
    EXPECT_EQ(s.data, us.data) << dtypeName(type);
    for (float v : c.data)
      ASSERT_EQ(v, roundTo(type, v));

    // Inference: conv2d, batch_norm_inference, relu.
    Buffer rm = randomBuffer({4}, rng), rv = randomBuffer({4}, rng, 0.5f, 2.0f);
    Buffer yi(os, 0, type), ui(os, 0, type);
    RN_ASSERT_OK(cbrInference(x.view(), w.view(), gamma.view(), beta.view(), rm.view(),
                              rv.view(), attrs, 1e-5, true, yi.view()));
    RN_ASSERT_OK(batchNormInference(uc.view(), gamma.view(), beta.view(), rm.view(), rv.view(),
                                    1e-5, ui.view()));
    RN_ASSERT_OK(relu(ui.view(), ui.view()));
    EXPECT_EQ(yi.data, ui.data) << dtypeName(type);
  }
}

TEST(BnAddReluGrad, MatchesFiniteDifferencesAndUnfusedOps) {
  Shape shape{2, 3, 3, 4};
  const int64_t c = 4;
  const double eps = 1e-5;
  Buffer x, shortcut, gamma, beta, y(shape), mean({c}), invStd({c});
  for (unsigned seed = 1;; ++seed) {
    ASSERT_LT(seed, 2000u) << "no sample far enough from the ReLU kink";
    std::mt19937 rng(seed);
    x = randomBuffer(shape, rng, -1.0f, 2.0f);
    shortcut = randomBuffer(shape, rng);
    gamma = randomBuffer({c}, rng, 0.5f, 1.5f);
    beta = randomBuffer({c}, rng, -0.5f, 0.5f);
    // The pre-activation: batch norm + shortcut.
    Buffer bn(shape), sum(shape);
    RN_ASSERT_OK(batchNormTrain(x.view(), gamma.view(), beta.view(), eps, bn.view(),
                                mean.view(), invStd.view()));
    RN_ASSERT_OK(add(bn.view(), shortcut.view(), sum.view()));
    if (margin(sum) > 0.03f)
      break;
  }
  std::mt19937 rng(151);
  Buffer g = randomBuffer(shape, rng);
  auto loss = [&] {
    Buffer r(shape), m({c}), s({c});
    EXPECT_TRUE(bnAddRelu(x.view(), gamma.view(), beta.view(), shortcut.view(), eps,
                          r.view(), m.view(), s.view()).ok());
    return dot(g, r);
  };
  RN_ASSERT_OK(bnAddRelu(x.view(), gamma.view(), beta.view(), shortcut.view(), eps, y.view(),
                         mean.view(), invStd.view()));
  Buffer accG = randomBuffer({c}, rng), accB = randomBuffer({c}, rng);
  Buffer dx(shape), ds(shape), dg({c}), db({c});
  RN_ASSERT_OK(bnAddReluBackward(g.view(), y.view(), x.view(), gamma.view(), mean.view(),
                                 invStd.view(), accG.view(), accB.view(), dx.view(),
                                 ds.view(), dg.view(), db.view()));
  std::vector<float> dgamma(c), dbeta(c);
  for (int64_t k = 0; k < c; ++k) {
    dgamma[k] = dg[k] - accG[k];
    dbeta[k] = db[k] - accB[k];
  }
  expectGradient("bn_add_relu dX", x, dx.data, loss, kKinked);
  expectGradient("bn_add_relu dshortcut", shortcut, ds.data, loss, kKinked);
  expectGradient("bn_add_relu dgamma", gamma, dgamma, loss, kKinked);
  expectGradient("bn_add_relu dbeta", beta, dbeta, loss, kKinked);

  // Unfused: relu_backward, then batch_norm_backward; the shortcut gets d.
  Buffer d(shape), ux(shape), ug({c}), ub({c});
  RN_ASSERT_OK(reluBackward(g.view(), y.view(), d.view()));
  RN_ASSERT_OK(batchNormBackward(d.view(), x.view(), gamma.view(), mean.view(), invStd.view(),
                                 accG.view(), accB.view(), ux.view(), ug.view(), ub.view()));
  expectClose("bn_add_relu dX vs unfused", dx.data, ux.data, 1e-6, 1e-6);
  expectClose("bn_add_relu dshortcut vs unfused", ds.data, d.data, 0);
  expectClose("bn_add_relu dgamma vs unfused", dg.data, ug.data, 1e-6, 1e-6);
  expectClose("bn_add_relu dbeta vs unfused", db.data, ub.data, 1e-6, 1e-6);

  // Inference: batch_norm_inference + add + relu.
  Buffer rm = randomBuffer({c}, rng), rv = randomBuffer({c}, rng, 0.5f, 2.0f);
  Buffer yi(shape), ui(shape);
  RN_ASSERT_OK(bnAddReluInference(x.view(), gamma.view(), beta.view(), rm.view(), rv.view(),
                                  shortcut.view(), eps, yi.view()));
  RN_ASSERT_OK(batchNormInference(x.view(), gamma.view(), beta.view(), rm.view(), rv.view(),
                                  eps, ui.view()));
  RN_ASSERT_OK(add(ui.view(), shortcut.view(), ui.view()));
  RN_ASSERT_OK(relu(ui.view(), ui.view()));
  EXPECT_EQ(yi.data, ui.data);
}

} // namespace
} // namespace rn::cpu
