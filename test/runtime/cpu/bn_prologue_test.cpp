//===- bn_prologue_test.cpp - rn-fuse-bn-prologue's CPU kernels -----------===//
//
// bn_scale_bias against hand-computed f16 values (the rounded scale, the
// single rounding of the fused multiply-add), the scale-bias-ReLU prologue
// against its single rounding, and the ops that carry it against their
// compositions: conv_bn_stats (conv2d of the materialized prologue and
// batch_norm_train's statistics), cbr_forward with a prologue, and
// cbr_backward's input_prologue (the filter gradient at the prologue's
// activation) and prologue_mask (the mask of round(fma(x, s, b)) with
// s, b from bn_scale_bias). Bit for bit: the CPU is the GPU's oracle.
//
//===----------------------------------------------------------------------===//

#include "cpu_test_util.h"

#include <gmock/gmock.h>

#include <cmath>
#include <limits>

namespace rn::cpu {
namespace {

using testing::Buffer;
using testing::randomBuffer;
using ::testing::HasSubstr;

/// `b` with its values rounded to `type`, and that dtype.
Buffer rounded(Buffer b, DType type) {
  for (float &v : b.data)
    v = roundTo(type, v);
  b.dtype = type;
  return b;
}

/// The prologue as the spec writes it, one element at a time, per channel
/// (the last dimension): relu(round(x * s + b)), x * s + b computed in
/// double (exact for these operands), rounded to f32 as a fused
/// multiply-add would, then to x's dtype.
Buffer prologueByHand(const Buffer &x, const Buffer &scale, const Buffer &bias) {
  Buffer p = x;
  const size_t channels = size_t(x.shape.back());
  for (size_t i = 0; i < p.size(); ++i) {
    const size_t c = i % channels;
    const double exact = double(x[i]) * double(scale[c]) + double(bias[c]);
    const float shifted = roundTo(x.dtype, static_cast<float>(exact));
    p[i] = shifted <= 0 ? 0.0f : shifted;
  }
  return p;
}

struct PrologueCase {
  Buffer x, w, scale, bias;
};

/// Random x [2, 5, 5, 3] and w [4, 3, 3, 3] in `type`, and a prologue's
/// scale (some negative) and bias (ReLU zeroes about half the activation).
PrologueCase prologueCase(DType type, std::mt19937 &rng) {
  PrologueCase c;
  c.x = rounded(randomBuffer({2, 5, 5, 3}, rng, -2.0f, 2.0f), type);
  c.w = rounded(randomBuffer({4, 3, 3, 3}, rng), type);
  c.scale = rounded(randomBuffer({3}, rng, 0.5f, 1.5f), type);
  c.scale[1] = -c.scale[1];
  c.bias = rounded(randomBuffer({3}, rng, -0.5f, 0.5f), type);
  return c;
}

const Conv2dAttrs kConv{{1, 1}, {1, 1}, {1, 1}, 1};
const DType kTypes[] = {DType::f32, DType::f16, DType::bf16};

//===----------------------------------------------------------------------===//
// bn_scale_bias
//===----------------------------------------------------------------------===//

// Channel 0 is exact. Channel 1: inv_std * gamma = 1/3 rounds to the f16
// 1365/4096, and the bias from that rounded scale is 1 - 3 * 1365/4096 =
// 2^-12 (from the f32 scale it would be -3e-8, an f16 -0). Channel 2: the
// single rounding of the fused multiply-add: beta - mean * scale is
// 1.5 * 2^-24 - 2^-37, an f16 2^-24; with the product rounded to f32 first
// it is 1.5 * 2^-24 exactly, a tie that rounds to the even 2^-23.
TEST(BnScaleBias, HandComputedF16Values) {
  const float s2 = std::ldexp(1.0f + std::ldexp(1.0f, -10), -4); // an f16
  const float mean2 = 1.0f + std::ldexp(1.0f, -23);
  const float beta2 = std::ldexp(1.0f, -4) + std::ldexp(1.0f, -14) + std::ldexp(1.0f, -27) +
                      std::ldexp(3.0f, -25);
  ASSERT_EQ(roundTo(DType::f16, s2), s2);
  const float product = mean2 * s2; // rounded to f32 on its own
  ASSERT_EQ(roundTo(DType::f16, beta2 - product), std::ldexp(1.0f, -23));

  Buffer mean({3}), invStd({3}), gamma({3}), beta({3});
  mean.data = {0.5f, 3.0f, mean2};
  invStd.data = {2.0f, 1.0f / 3.0f, s2};
  gamma.data = {1.5f, 1.0f, 1.0f};
  beta.data = {0.25f, 1.0f, beta2};
  Buffer scale({3}, 0, DType::f16), bias({3}, 0, DType::f16);
  RN_ASSERT_OK(bnScaleBias(mean.view(), invStd.view(), gamma.view(), beta.view(), scale.view(),
                           bias.view()));
  EXPECT_EQ(scale.data, (std::vector<float>{3.0f, 1365.0f / 4096.0f, s2}));
  EXPECT_EQ(bias.data,
            (std::vector<float>{-1.25f, std::ldexp(1.0f, -12), std::ldexp(1.0f, -24)}));

  // gamma and beta of another float dtype are read as stored.
  Buffer gamma16 = rounded(gamma, DType::f16), scale2({3}, 0, DType::f16),
         bias2({3}, 0, DType::f16);
  beta.dtype = DType::bf16;
  beta.data = {0.25f, 1.0f, 0.5f};
  RN_ASSERT_OK(bnScaleBias(mean.view(), invStd.view(), gamma16.view(), beta.view(),
                           scale2.view(), bias2.view()));
  EXPECT_EQ(scale2.data, scale.data);
  EXPECT_EQ(bias2[0], -1.25f);
}

// In f32 the roundings are the identity: scale = inv_std * gamma, bias =
// fmaf(-mean, scale, beta). bf16 rounds both.
TEST(BnScaleBias, F32AndBf16) {
  std::mt19937 rng(5);
  Buffer mean = randomBuffer({16}, rng), invStd = randomBuffer({16}, rng, 0.5f, 4.0f),
         gamma = randomBuffer({16}, rng, 0.5f, 1.5f), beta = randomBuffer({16}, rng);
  for (DType type : {DType::f32, DType::bf16}) {
    Buffer scale({16}, 0, type), bias({16}, 0, type);
    RN_ASSERT_OK(bnScaleBias(mean.view(), invStd.view(), gamma.view(), beta.view(),
                             scale.view(), bias.view()));
    for (size_t c = 0; c < 16; ++c) {
      const float s = roundTo(type, invStd[c] * gamma[c]);
      EXPECT_EQ(scale[c], s) << dtypeName(type) << " channel " << c;
      EXPECT_EQ(bias[c], roundTo(type, std::fmaf(-mean[c], s, beta[c])))
          << dtypeName(type) << " channel " << c;
    }
  }
}

TEST(BnScaleBias, Errors) {
  Buffer mean({2}), invStd({2}), gamma({2}), beta({2}), scale({2}, 0, DType::f16),
      bias({2});
  EXPECT_THAT(bnScaleBias(mean.view(), invStd.view(), gamma.view(), beta.view(), scale.view(),
                          bias.view())
                  .error,
              HasSubstr("bn_scale_bias: bias must have scale's dtype f16, got f32"));
  Buffer invStd16({2}, 0, DType::f16), bias16({2}, 0, DType::f16), short1({1});
  EXPECT_THAT(bnScaleBias(mean.view(), invStd16.view(), gamma.view(), beta.view(),
                          scale.view(), bias16.view())
                  .error,
              HasSubstr("bn_scale_bias: batch_inv_std must be f32, got f16"));
  EXPECT_THAT(bnScaleBias(mean.view(), invStd.view(), short1.view(), beta.view(), scale.view(),
                          bias16.view())
                  .error,
              HasSubstr("bn_scale_bias: gamma must have shape [2], got [1]"));
}

//===----------------------------------------------------------------------===//
// The prologue
//===----------------------------------------------------------------------===//

// One element per channel, f16: product and sum rounded once (2^-8 +
// 2^-18, where a rounded product gives 2^-8; 65504, where a rounded product
// overflows to infinity), ReLU's zeros (a negative value, +0 for -0), NaN
// kept.
TEST(ScaleBiasRelu, RoundsOnceToTheInputDtype) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float e10 = std::ldexp(1.0f, -10);
  Buffer x({1, 6}, 0, DType::f16), scale({6}, 0, DType::f16), bias({6}, 0, DType::f16);
  x.data = {1 + 3 * e10, 65504.0f, -1.0f, -0.0f, nan, 0.5f};
  scale.data = {1 + e10, 2.0f, 1.0f, 1.0f, 1.0f, -1.0f};
  bias.data = {-1.0f, -65504.0f, 0.5f, -0.0f, 0.0f, 0.5f};
  Buffer result({1, 6}, 0, DType::f16);
  RN_ASSERT_OK(scaleBiasRelu(x.view(), scale.view(), bias.view(), result.view()));
  EXPECT_EQ(result[0], std::ldexp(1.0f, -8) + std::ldexp(1.0f, -18));
  EXPECT_EQ(result[1], 65504.0f);
  EXPECT_EQ(result[2], 0.0f);
  EXPECT_EQ(result[3], 0.0f);
  EXPECT_FALSE(std::signbit(result[3]));
  EXPECT_TRUE(std::isnan(result[4]));
  EXPECT_EQ(result[5], 0.0f);
  EXPECT_FALSE(std::signbit(result[5]));

  // In f32 the same element is exact.
  Buffer x32({1, 1}), scale32({1}), bias32({1}), result32({1, 1});
  x32[0] = 1 + 3 * e10;
  scale32[0] = 1 + e10;
  bias32[0] = -1.0f;
  RN_ASSERT_OK(scaleBiasRelu(x32.view(), scale32.view(), bias32.view(), result32.view()));
  EXPECT_EQ(result32[0], std::ldexp(1.0f, -8) + 3 * std::ldexp(1.0f, -20));
}

TEST(ScaleBiasRelu, MatchesTheFormulaInEveryDtype) {
  std::mt19937 rng(7);
  for (DType type : kTypes) {
    PrologueCase c = prologueCase(type, rng);
    Buffer result(c.x.shape, 0, type);
    RN_ASSERT_OK(scaleBiasRelu(c.x.view(), c.scale.view(), c.bias.view(), result.view()));
    EXPECT_EQ(result.data, prologueByHand(c.x, c.scale, c.bias).data) << dtypeName(type);
  }
}

TEST(ScaleBiasRelu, Errors) {
  Buffer x({1, 2, 2, 3}, 0, DType::f16), scale({3}, 0, DType::f16), bias({3}, 0, DType::f16);
  Buffer result({1, 2, 2, 3}, 0, DType::f16), shortScale({2}, 0, DType::f16), scale32({3});
  Buffer result32({1, 2, 2, 3});
  EXPECT_THAT(scaleBiasRelu(x.view(), shortScale.view(), bias.view(), result.view()).error,
              HasSubstr("scale_bias_relu: scale must have shape [3], got [2]"));
  EXPECT_THAT(scaleBiasRelu(x.view(), scale32.view(), bias.view(), result.view()).error,
              HasSubstr("scale_bias_relu: scale must have the input's dtype f16, got f32"));
  EXPECT_THAT(scaleBiasRelu(x.view(), scale.view(), bias.view(), result32.view()).error,
              HasSubstr("scale_bias_relu: result must have the input's dtype f16, got f32"));
}

//===----------------------------------------------------------------------===//
// conv_bn_stats and cbr_forward with a prologue
//===----------------------------------------------------------------------===//

// conv_bn_stats = conv2d of the materialized prologue (or of the input),
// then the statistics batch_norm_train takes of the stored output; without
// a prologue it is cbr_forward without the apply.
TEST(ConvBnStats, IsTheConvolutionOfThePrologueAndItsStatistics) {
  std::mt19937 rng(11);
  for (DType type : kTypes) {
    PrologueCase c = prologueCase(type, rng);
    Shape os{2, 5, 5, 4};
    Buffer p = prologueByHand(c.x, c.scale, c.bias);
    Buffer uc(os, 0, type), ones({4}, 1.0f), zeros({4}), ubn(os, 0, type), um({4}), us({4});
    RN_ASSERT_OK(conv2d(p.view(), c.w.view(), nullptr, kConv, uc.view()));
    RN_ASSERT_OK(batchNormTrain(uc.view(), ones.view(), zeros.view(), 1e-5, ubn.view(),
                                um.view(), us.view()));
    TensorView scale = c.scale.view(), bias = c.bias.view();
    Buffer conv(os, 0, type), mean({4}), invStd({4});
    RN_ASSERT_OK(convBnStats(c.x.view(), c.w.view(), &scale, &bias, kConv, 1e-5, conv.view(),
                             mean.view(), invStd.view()));
    EXPECT_EQ(conv.data, uc.data) << dtypeName(type);
    EXPECT_EQ(mean.data, um.data) << dtypeName(type);
    EXPECT_EQ(invStd.data, us.data) << dtypeName(type);

    // batchNormStatistics is batch_norm_train's statistics alone.
    Buffer sm({4}), ss({4});
    RN_ASSERT_OK(batchNormStatistics(uc.view(), 1e-5, sm.view(), ss.view()));
    EXPECT_EQ(sm.data, um.data) << dtypeName(type);
    EXPECT_EQ(ss.data, us.data) << dtypeName(type);

    // Without a prologue: cbr_forward's convolution output and statistics.
    Buffer gamma = randomBuffer({4}, rng, 0.5f, 1.5f), beta = randomBuffer({4}, rng);
    Buffer y(os, 0, type), fc(os, 0, type), fm({4}), fs({4});
    RN_ASSERT_OK(cbrForward(c.x.view(), c.w.view(), gamma.view(), beta.view(), kConv, 1e-5,
                            true, y.view(), fc.view(), fm.view(), fs.view()));
    Buffer plain(os, 0, type), pm({4}), ps({4});
    RN_ASSERT_OK(convBnStats(c.x.view(), c.w.view(), nullptr, nullptr, kConv, 1e-5,
                             plain.view(), pm.view(), ps.view()));
    EXPECT_EQ(plain.data, fc.data) << dtypeName(type);
    EXPECT_EQ(pm.data, fm.data) << dtypeName(type);
    EXPECT_EQ(ps.data, fs.data) << dtypeName(type);
  }
}

// cbr_forward with a prologue is cbr_forward of the materialized
// prologue, with and without its own ReLU, strided too.
TEST(CbrForward, PrologueIsTheCompositionWithTheMaterializedActivation) {
  std::mt19937 rng(13);
  const Conv2dAttrs strided{{2, 2}, {1, 1}, {1, 1}, 1};
  for (DType type : kTypes)
    for (bool relu : {true, false}) {
      PrologueCase c = prologueCase(type, rng);
      Shape os{2, 3, 3, 4};
      Buffer gamma = randomBuffer({4}, rng, 0.5f, 1.5f), beta = randomBuffer({4}, rng);
      Buffer p = prologueByHand(c.x, c.scale, c.bias);
      Buffer uy(os, 0, type), uc(os, 0, type), um({4}), us({4});
      RN_ASSERT_OK(cbrForward(p.view(), c.w.view(), gamma.view(), beta.view(), strided, 1e-5,
                              relu, uy.view(), uc.view(), um.view(), us.view()));
      TensorView scale = c.scale.view(), bias = c.bias.view();
      Buffer y(os, 0, type), conv(os, 0, type), mean({4}), invStd({4});
      RN_ASSERT_OK(cbrForward(c.x.view(), c.w.view(), gamma.view(), beta.view(), &scale, &bias,
                              strided, 1e-5, relu, y.view(), conv.view(), mean.view(),
                              invStd.view()));
      EXPECT_EQ(y.data, uy.data) << dtypeName(type) << " relu " << relu;
      EXPECT_EQ(conv.data, uc.data) << dtypeName(type) << " relu " << relu;
      EXPECT_EQ(mean.data, um.data) << dtypeName(type) << " relu " << relu;
      EXPECT_EQ(invStd.data, us.data) << dtypeName(type) << " relu " << relu;
    }
}

TEST(ConvBnStats, Errors) {
  std::mt19937 rng(17);
  PrologueCase c = prologueCase(DType::f16, rng);
  Shape os{2, 5, 5, 4};
  Buffer conv(os, 0, DType::f16), mean({4}), invStd({4}), gamma({4}, 1.0f), beta({4});
  Buffer y(os, 0, DType::f16), scale32({3});
  TensorView scale = c.scale.view(), bias = c.bias.view(), wide = scale32.view();
  EXPECT_THAT(convBnStats(c.x.view(), c.w.view(), &wide, &bias, kConv, 1e-5, conv.view(),
                          mean.view(), invStd.view())
                  .error,
              HasSubstr("conv_bn_stats: scale_bias_relu: scale must have the input's dtype "
                        "f16, got f32"));
  EXPECT_THAT(convBnStats(c.x.view(), c.w.view(), nullptr, &bias, kConv, 1e-5, conv.view(),
                          mean.view(), invStd.view())
                  .error,
              HasSubstr("conv_bn_stats: has half a prologue: prologue_scale is missing"));
  EXPECT_THAT(cbrForward(c.x.view(), c.w.view(), gamma.view(), beta.view(), &scale, nullptr,
                         kConv, 1e-5, true, y.view(), conv.view(), mean.view(), invStd.view())
                  .error,
              HasSubstr("cbr_forward: has half a prologue: prologue_bias is missing"));
  Buffer mean16({4}, 0, DType::f16);
  EXPECT_THAT(convBnStats(c.x.view(), c.w.view(), &scale, &bias, kConv, 1e-5, conv.view(),
                          mean16.view(), invStd.view())
                  .error,
              HasSubstr("conv_bn_stats: batch_norm_statistics: batch_mean must be f32"));
}

//===----------------------------------------------------------------------===//
// cbr_backward: prologue_mask and input_prologue
//===----------------------------------------------------------------------===//

/// A producer's backward inputs: its conv_output (f16), gamma, beta and
/// statistics, and an output gradient.
struct MaskCase {
  Buffer conv, gamma, beta, mean, invStd, dy;
};

MaskCase maskCase(std::mt19937 &rng) {
  MaskCase m;
  m.conv = rounded(randomBuffer({2, 4, 4, 3}, rng, -2.0f, 2.0f), DType::f16);
  m.gamma = randomBuffer({3}, rng, 0.5f, 1.5f);
  m.beta = randomBuffer({3}, rng, -0.5f, 0.5f);
  m.mean = Buffer({3});
  m.invStd = Buffer({3});
  EXPECT_TRUE(batchNormStatistics(m.conv.view(), 1e-5, m.mean.view(), m.invStd.view()).ok());
  m.dy = rounded(randomBuffer(m.conv.shape, rng), DType::f16);
  return m;
}

// prologue_mask: output_grad passes where round(fma(x, s, b)) > 0 with
// (s, b) = bn_scale_bias(mean, inv_std, gamma, beta) in conv_output's
// dtype: the ReLU mask of the activation the readers' prologues compute.
TEST(CbrBackward, PrologueMaskIsTheMaskOfThePrologue) {
  std::mt19937 rng(19);
  MaskCase m = maskCase(rng);
  Buffer s({3}, 0, DType::f16), b({3}, 0, DType::f16);
  RN_ASSERT_OK(bnScaleBias(m.mean.view(), m.invStd.view(), m.gamma.view(), m.beta.view(),
                           s.view(), b.view()));
  Buffer activation = prologueByHand(m.conv, s, b);
  Buffer want(m.conv.shape, 0, DType::f16);
  RN_ASSERT_OK(reluBackward(m.dy.view(), activation.view(), want.view()));
  Buffer got(m.conv.shape, 0, DType::f16);
  RN_ASSERT_OK(reluBackwardPrologueMask(m.dy.view(), m.conv.view(), m.gamma.view(),
                                        m.beta.view(), m.mean.view(), m.invStd.view(),
                                        got.view()));
  EXPECT_EQ(got.data, want.data);
  size_t passed = 0;
  for (size_t i = 0; i < got.size(); ++i)
    passed += activation[i] > 0;
  EXPECT_GT(passed, 0u);
  EXPECT_LT(passed, got.size());
}

// prologue_mask and relu_recompute's round(fma(x - mean, inv_std * gamma,
// beta)) > 0 disagree where the prologue's f16-rounded scale cancels the
// bias exactly: inv_std * gamma = 1 + 2^-12 rounds to the f16 scale 1
// (its ulp is 2^-10), so with b = -3 the activation at x = 3 is 0 and the
// gradient is masked, while the f32 scale gives a positive 3 * 2^-12 and
// passes it. 3.5 passes and 2 is masked in both.
TEST(CbrBackward, PrologueMaskDiffersFromTheFmaMask) {
  Buffer gamma({1}, 1.0f), beta({1}, -3.0f), mean({1}, 0.0f), invStd({1});
  invStd[0] = 1.0f + std::ldexp(1.0f, -12);
  Buffer x({3, 1}, 0, DType::f16), dy({3, 1}, 0.5f, DType::f16);
  x.data = {3.0f, 3.5f, 2.0f};
  Buffer prologue({3, 1}, 0, DType::f16), fma({3, 1}, 0, DType::f16);
  RN_ASSERT_OK(reluBackwardPrologueMask(dy.view(), x.view(), gamma.view(), beta.view(),
                                        mean.view(), invStd.view(), prologue.view()));
  RN_ASSERT_OK(reluBackwardRecomputed(dy.view(), x.view(), gamma.view(), beta.view(),
                                      mean.view(), invStd.view(), fma.view()));
  EXPECT_EQ(prologue.data, (std::vector<float>{0.0f, 0.5f, 0.0f}));
  EXPECT_EQ(fma.data, (std::vector<float>{0.5f, 0.5f, 0.0f}));
}

// input_prologue: the filter gradient at P(input) (conv2d_backward_filter
// of the materialized activation); the input gradient is the gradient at
// P(input), the prologue's ReLU being the producer's to mask. The whole op
// with every optional form is its parts' composition.
TEST(CbrBackward, InputPrologueTakesTheFilterGradientAtTheActivation) {
  std::mt19937 rng(23);
  for (DType type : kTypes) {
    PrologueCase c = prologueCase(type, rng);
    Shape os{2, 5, 5, 4};
    Buffer dconv = rounded(randomBuffer(os, rng), type);
    Buffer acc = randomBuffer(c.w.shape, rng);
    Buffer p = prologueByHand(c.x, c.scale, c.bias);
    Buffer want(c.w.shape);
    RN_ASSERT_OK(conv2dBackwardFilter(dconv.view(), p.view(), acc.view(), kConv, want.view()));
    TensorView scale = c.scale.view(), bias = c.bias.view();
    Buffer got(c.w.shape);
    RN_ASSERT_OK(cbrBackwardFilter(dconv.view(), c.x.view(), &scale, &bias, acc.view(), kConv,
                                   got.view()));
    EXPECT_EQ(got.data, want.data) << dtypeName(type);
    Buffer plain(c.w.shape), plainWant(c.w.shape);
    RN_ASSERT_OK(cbrBackwardFilter(dconv.view(), c.x.view(), nullptr, nullptr, acc.view(),
                                   kConv, plain.view()));
    RN_ASSERT_OK(conv2dBackwardFilter(dconv.view(), c.x.view(), acc.view(), kConv,
                                      plainWant.view()));
    EXPECT_EQ(plain.data, plainWant.data) << dtypeName(type);
  }

  // The whole op: prologue_mask, input_prologue and an input gradient
  // addend at once, against the composition of the unfused kernels.
  MaskCase m = maskCase(rng);
  const Shape xs{2, 4, 4, 2};
  Buffer x = rounded(randomBuffer(xs, rng, -2.0f, 2.0f), DType::f16);
  Buffer w = rounded(randomBuffer({3, 3, 3, 2}, rng), DType::f16);
  Buffer inScale = rounded(randomBuffer({2}, rng, 0.5f, 1.5f), DType::f16);
  Buffer inBias = rounded(randomBuffer({2}, rng, -0.5f, 0.5f), DType::f16);
  Buffer accW = randomBuffer(w.shape, rng), accG = randomBuffer({3}, rng),
         accB = randomBuffer({3}, rng);
  Buffer addend = rounded(randomBuffer(xs, rng), DType::f16);

  Buffer masked(m.conv.shape, 0, DType::f16), uconv(m.conv.shape, 0, DType::f16);
  Buffer ug({3}), ub({3}), uw(w.shape), ux(xs, 0, DType::f16);
  RN_ASSERT_OK(reluBackwardPrologueMask(m.dy.view(), m.conv.view(), m.gamma.view(),
                                        m.beta.view(), m.mean.view(), m.invStd.view(),
                                        masked.view()));
  RN_ASSERT_OK(batchNormBackward(masked.view(), m.conv.view(), m.gamma.view(), m.mean.view(),
                                 m.invStd.view(), accG.view(), accB.view(), uconv.view(),
                                 ug.view(), ub.view()));
  Buffer p = prologueByHand(x, inScale, inBias);
  RN_ASSERT_OK(conv2dBackwardFilter(uconv.view(), p.view(), accW.view(), kConv, uw.view()));
  TensorView addendView = addend.view();
  RN_ASSERT_OK(conv2dBackwardInput(uconv.view(), w.view(), kConv, ux.view(), &addendView));

  TensorView beta = m.beta.view(), sv = inScale.view(), bv = inBias.view();
  CbrBackwardOptions options;
  options.reluBeta = &beta;
  options.prologueMask = true;
  options.inputScale = &sv;
  options.inputBias = &bv;
  options.inputGradAddend = &addendView;
  Buffer fconv(m.conv.shape, 0, DType::f16), fx(xs, 0, DType::f16), fw(w.shape), fg({3}),
      fb({3});
  TensorView fxv = fx.view();
  RN_ASSERT_OK(cbrBackward(m.dy.view(), x.view(), w.view(), m.conv.view(), m.gamma.view(),
                           m.mean.view(), m.invStd.view(), accW.view(), accG.view(),
                           accB.view(), options, kConv, fconv.view(), &fxv, fw.view(),
                           fg.view(), fb.view()));
  EXPECT_EQ(fconv.data, uconv.data);
  EXPECT_EQ(fx.data, ux.data);
  EXPECT_EQ(fw.data, uw.data);
  EXPECT_EQ(fg.data, ug.data);
  EXPECT_EQ(fb.data, ub.data);

  // Without the optional forms the overload is the old cbr_backward.
  Buffer oconv(m.conv.shape, 0, DType::f16), ox(xs, 0, DType::f16), ow(w.shape), og({3}),
      ob({3});
  Buffer nconv(m.conv.shape, 0, DType::f16), nx(xs, 0, DType::f16), nw(w.shape), ng({3}),
      nb({3});
  TensorView oxv = ox.view(), nxv = nx.view();
  RN_ASSERT_OK(cbrBackward(m.dy.view(), x.view(), w.view(), m.conv.view(), m.gamma.view(),
                           m.mean.view(), m.invStd.view(), accW.view(), accG.view(),
                           accB.view(), nullptr, kConv, oconv.view(), &oxv, ow.view(),
                           og.view(), ob.view()));
  RN_ASSERT_OK(cbrBackward(m.dy.view(), x.view(), w.view(), m.conv.view(), m.gamma.view(),
                           m.mean.view(), m.invStd.view(), accW.view(), accG.view(),
                           accB.view(), CbrBackwardOptions{}, kConv, nconv.view(), &nxv,
                           nw.view(), ng.view(), nb.view()));
  EXPECT_EQ(nconv.data, oconv.data);
  EXPECT_EQ(nx.data, ox.data);
  EXPECT_EQ(nw.data, ow.data);
  EXPECT_EQ(ng.data, og.data);
  EXPECT_EQ(nb.data, ob.data);
}

TEST(CbrBackward, PrologueErrors) {
  std::mt19937 rng(29);
  MaskCase m = maskCase(rng);
  Buffer out(m.conv.shape, 0, DType::f16), g({3}), b({3});
  TensorView beta = m.beta.view();
  CbrBackwardOptions options;
  options.prologueMask = true;
  EXPECT_THAT(cbrBackwardBatchNorm(m.dy.view(), m.conv.view(), m.gamma.view(), m.mean.view(),
                                   m.invStd.view(), g.view(), b.view(), options, out.view(),
                                   g.view(), b.view())
                  .error,
              HasSubstr("cbr_backward: has prologue_mask without relu_recompute"));
  options.reluBeta = &beta;
  options.reluOutput = &beta;
  EXPECT_THAT(cbrBackwardBatchNorm(m.dy.view(), m.conv.view(), m.gamma.view(), m.mean.view(),
                                   m.invStd.view(), g.view(), b.view(), options, out.view(),
                                   g.view(), b.view())
                  .error,
              HasSubstr("cbr_backward: has two ReLU masks"));
  PrologueCase c = prologueCase(DType::f16, rng);
  Buffer dconv({2, 5, 5, 4}, 0, DType::f16), acc(c.w.shape), dw(c.w.shape);
  TensorView bias = c.bias.view();
  EXPECT_THAT(cbrBackwardFilter(dconv.view(), c.x.view(), nullptr, &bias, acc.view(), kConv,
                                dw.view())
                  .error,
              HasSubstr("cbr_backward: has half a prologue: input_scale is missing"));
}

} // namespace
} // namespace rn::cpu
