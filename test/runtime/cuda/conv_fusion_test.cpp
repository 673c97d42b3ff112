//===- conv_fusion_test.cpp - The fused cuDNN convolution kinds vs the CPU ===//
//
// The ConvKinds that fuse work into a convolution (docs/benchmarks.md,
// "Convolution-level fusion experiments") against the CPU at the shapes of
// kFusionShapes: the scale-bias-ReLU prologue (forward, with genstats, on the
// filter gradient) and how it rounds, the dgrad + dReLU + dBN weight pattern
// and the residual-add epilogue of the data gradient. Every test skips when
// no CUDA device answers, and where cuDNN has no engine for a kind.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/check.h"
#include "conv_test_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace rn::cuda {
namespace {

using namespace conv_test;

/// relu(x * scale + bias) per channel (x's last dimension), the CPU
/// reference's prologue (cpu::scaleBiasRelu: one rounding to x's dtype).
Host scaleBiasReluOnTheCpu(Host x, Host scale, Host bias) {
  Host activated = x;
  EXPECT_TRUE(cpu::scaleBiasRelu(x.view(), scale.view(), bias.view(), activated.view()).ok());
  return activated;
}

/// A forward prologue kind's case at one of kFusionShapes: random f16 x, w
/// and per-channel scale and bias on the device, an output y, and the CPU's
/// convolution of the prologue rounded as the graph declares it.
struct ForwardPrologueCase {
  ConvCall call;
  Host want;
  DeviceTensor x, w, scale, bias, y;
  /// The call's buffers but the sums.
  ConvBuffers buffers() const {
    ConvBuffers b;
    b.x = x.data;
    b.w = w.data;
    b.y = y.data;
    b.scale = scale.data;
    b.bias = bias.data;
    return b;
  }
};

ForwardPrologueCase forwardPrologueCase(Gpu &gpu, ConvKind kind, const FusionShape &f,
                                        std::mt19937 &rng) {
  const cpu::Conv2dAttrs attrs = attrsOf(f.params);
  Shape yShape;
  EXPECT_TRUE(cpu::conv2dOutputShape(f.x, f.w, attrs, yShape).ok());
  Host x = randomHost(f.x, DType::f16, rng), w = randomHost(f.w, DType::f16, rng);
  Host scale = randomHost({f.x[3]}, DType::f16, rng, 0.5f, 1.5f);
  Host bias = randomHost({f.x[3]}, DType::f16, rng, -0.5f, 0.5f);
  Host want(yShape, DType::f16);
  EXPECT_TRUE(cpu::conv2d(scaleBiasReluOnTheCpu(x, scale, bias).view(), w.view(), nullptr, attrs,
                          want.view())
                  .ok());
  return ForwardPrologueCase{f16Call(kind, f.params, f.x, f.w, yShape),
                             std::move(want),
                             gpu.upload(x),
                             gpu.upload(w),
                             gpu.upload(scale),
                             gpu.upload(bias),
                             gpu.empty(yShape, DType::f16)};
}

// The prologue kind computes conv(relu(x * scale + bias), w): against the
// CPU's convolution of the prologue rounded to f16 after each step, as the
// graph declares it, at kFusionShapes.
TEST(Conv, ScaleBiasReluPrologueMatchesTheCpu) {
  RN_SKIP_WITHOUT_CUDA();
  Gpu gpu;
  auto conv = makeConv();
  ASSERT_TRUE(conv);
  std::mt19937 rng(21);
  for (const FusionShape &f : kFusionShapes) {
    ForwardPrologueCase c = forwardPrologueCase(gpu, ConvKind::forward_scale_bias_relu, f, rng);
    Result<size_t> prepared = conv->prepare(c.call, gpu.resources);
    ASSERT_TRUE(prepared.ok()) << describe(c.call) << ": " << prepared.error().message();
    ASSERT_OK(conv->run(c.call, c.buffers(), gpu.resources));
    // f16 bound: y's own rounding (2^-11); a skipped prologue rounding is 1 ulp of one input.
    EXPECT_LE(relativeError(gpu.download(c.y), c.want.values), tolerance(DType::f16))
        << describe(c.call);
  }
}

// The MLPerf pattern whole: conv(relu(x * scale + bias), w) with
// genstats' sums of y, against the CPU's convolution of the rounded
// prologue and the sums of the y it wrote, twice (the sums start from
// zero on every run), at kFusionShapes. cuDNN may have no engine for it
// on a GPU: that is the kind's documented error, a skip here.
TEST(Conv, ScaleBiasReluGenstatsMatchesTheCpu) {
  RN_SKIP_WITHOUT_CUDA();
  Gpu gpu;
  auto conv = makeConv();
  ASSERT_TRUE(conv);
  std::mt19937 rng(29);
  for (const FusionShape &f : kFusionShapes) {
    ForwardPrologueCase c =
        forwardPrologueCase(gpu, ConvKind::forward_scale_bias_relu_stats, f, rng);
    Result<size_t> prepared = conv->prepare(c.call, gpu.resources);
    if (!prepared.ok())
      GTEST_SKIP() << "no plan: " << prepared.error().message();
    EXPECT_TRUE(conv->statsFused(c.call, gpu.resources));
    const int64_t channels = c.call.y[3];
    DeviceTensor sum = gpu.upload(Host({channels}, DType::f32, 1000.f));
    DeviceTensor sumSq = gpu.upload(Host({channels}, DType::f32, 1000.f));
    ConvBuffers b = c.buffers();
    b.sum = static_cast<float *>(sum.data);
    b.sumSq = static_cast<float *>(sumSq.data);
    for (int run = 0; run < 2; ++run) {
      SCOPED_TRACE(describe(c.call) + ", run " + std::to_string(run));
      ASSERT_OK(conv->run(c.call, b, gpu.resources));
      std::vector<float> got = gpu.download(c.y);
      EXPECT_LE(relativeError(got, c.want.values), tolerance(DType::f16));
      expectSumsOfOutput(got, gpu.download(sum), gpu.download(sumSq), channels, 2e-3, 1e-3);
    }
  }
}

// Tests that cuDNN's scale-bias-ReLU prologue rounds as the CPU's
// scaleBiasRelu does (the spec of rn-fuse-bn-prologue: relu(round(fma(x,
// scale, bias))), one rounding) in the two kinds the fusion runs
// (conv_bn_stats' forward with genstats, cbr_backward's filter gradient
// with input_prologue), that they read the same activation, and reports
// how the plain forward_scale_bias_relu kind rounds (not used by the
// fusion). Through a 1x1
// identity filter the forward's output is the prologue's activation itself
// (one product with 1 per output, exact in the f32 accumulator and in f16);
// the filter gradient of a 1x1 convolution whose dy is 1 at pixel o of
// output channel o and 0 elsewhere is the activation at those pixels.
// cbr_backward's prologue_mask recomputes the mask in the spec's rounding,
// so it is the mask of what the convolutions read only if they round so.
// Every fourth x is the f16 nearest to -bias / scale, where the rounding of
// the product decides the sign; mismatches are classified against the
// two-rounding reading relu(round(round(x * scale) + bias)) that the graph's
// f16 virtual tensors declare, and the counts printed per kind. With cuDNN
// 9.19's heuristic plans forward_scale_bias_relu rounds twice, the genstats
// forward and the filter gradient once (docs/fuse-cbr.md).
TEST(Conv, ScaleBiasReluPrologueRoundsLikeTheCpu) {
  RN_SKIP_WITHOUT_CUDA();
  Gpu gpu;
  auto conv = makeConv();
  ASSERT_TRUE(conv);
  std::mt19937 rng(31);
  const int64_t C = 32;
  const Shape xs{8, 16, 16, C}, ws{C, 1, 1, C};
  Host x = randomHost(xs, DType::f16, rng, -3.f, 3.f);
  Host scale = randomHost({C}, DType::f16, rng, -1.5f, 1.5f);
  Host bias = randomHost({C}, DType::f16, rng, -1.f, 1.f);
  for (size_t i = 0; i < x.values.size(); i += 4) {
    const size_t c = i % size_t(C);
    if (scale.values[c] != 0.f)
      x.values[i] = roundTo(DType::f16, -bias.values[c] / scale.values[c]);
  }
  Host want(xs, DType::f16);
  TensorView sv = scale.view(), bv = bias.view(), wantView = want.view();
  ASSERT_TRUE(cpu::scaleBiasRelu(x.view(), sv, bv, wantView).ok());
  // The two-rounding reading, to classify mismatches.
  std::vector<float> twice(x.values.size());
  for (size_t i = 0; i < x.values.size(); ++i) {
    const size_t c = i % size_t(C);
    const float v = roundTo(DType::f16, roundTo(DType::f16, x.values[i] * scale.values[c]) +
                                            bias.values[c]);
    twice[i] = v <= 0.f ? 0.f : v;
  }
  /// Compares `got` with the CPU's activation at elements `at`; `fused`:
  /// a kind the fusion runs, which must match bit for bit.
  auto compare = [&](const std::string &what, const std::vector<float> &got,
                     const std::vector<size_t> &at, bool fused) {
    size_t differ = 0, twiceMatches = 0, maskDiffers = 0, maskTwice = 0, positive = 0;
    for (size_t k = 0; k < at.size(); ++k) {
      const size_t i = at[k];
      const bool same = std::memcmp(&got[k], &want.values[i], sizeof(float)) == 0;
      differ += !same;
      twiceMatches += !same && std::memcmp(&got[k], &twice[i], sizeof(float)) == 0;
      maskDiffers += (got[k] > 0.f) != (want.values[i] > 0.f);
      maskTwice +=
          (got[k] > 0.f) != (want.values[i] > 0.f) && (got[k] > 0.f) == (twice[i] > 0.f);
      positive += want.values[i] > 0.f;
    }
    std::printf("%s: the prologue's activation differs from the CPU's in %zu of %zu elements "
                "(%zu of them are the two-rounding reading's), its ReLU mask in %zu (%zu of "
                "them the two-rounding reading's; %zu positive)\n",
                what.c_str(), differ, at.size(), twiceMatches, maskDiffers, maskTwice, positive);
    if (!fused)
      return;
    EXPECT_EQ(maskDiffers, 0u) << what << ": prologue_mask is not the mask of what it read";
    EXPECT_EQ(differ, 0u) << what << ": the CPU reference's prologue is not bit for bit";
  };
  DeviceTensor dX = gpu.upload(x), dScale = gpu.upload(scale), dBias = gpu.upload(bias);
  Host identity(ws, DType::f16, 0.f);
  for (int64_t c = 0; c < C; ++c)
    identity.values[size_t(c * C + c)] = 1.f;
  DeviceTensor dW = gpu.upload(identity), y = gpu.empty(xs, DType::f16);
  DeviceTensor sums = gpu.empty({2 * C}, DType::f32);
  std::vector<float> statsActivation; // conv_bn_stats' forward's, to compare the wgrad's with
  std::vector<size_t> all(x.values.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  for (ConvKind kind :
       {ConvKind::forward_scale_bias_relu, ConvKind::forward_scale_bias_relu_stats}) {
    const ConvCall call = f16Call(kind, params(1, 0), xs, ws, xs);
    SCOPED_TRACE(describe(call));
    Result<size_t> prepared = conv->prepare(call, gpu.resources);
    if (!prepared.ok()) {
      std::printf("%s: no plan (%s)\n", describe(call).c_str(),
                  prepared.error().message().c_str());
      continue;
    }
    ConvBuffers b;
    b.x = dX.data;
    b.w = dW.data;
    b.y = y.data;
    b.scale = dScale.data;
    b.bias = dBias.data;
    b.sum = static_cast<float *>(sums.data);
    b.sumSq = static_cast<float *>(sums.data) + C;
    ASSERT_OK(conv->run(call, b, gpu.resources));
    compare(describe(call), gpu.download(y), all,
            kind == ConvKind::forward_scale_bias_relu_stats);
    if (kind == ConvKind::forward_scale_bias_relu_stats)
      statsActivation = gpu.download(y);
  }
  // The filter gradient's prologue: dy one-hot per output channel at the
  // first C pixels of image 0.
  Host dy(xs, DType::f16, 0.f);
  std::vector<size_t> probed;
  for (int64_t o = 0; o < C; ++o) {
    dy.values[size_t(o * C + o)] = 1.f;
    for (int64_t c = 0; c < C; ++c)
      probed.push_back(size_t(o * C + c)); // dw[o, 0, 0, c] = P(x)[pixel o, c]
  }
  ConvCall call = f16Call(ConvKind::backward_filter_scale_bias_relu, params(1, 0), xs, ws, xs);
  call.gradType = DType::f32;
  Result<size_t> prepared = conv->prepare(call, gpu.resources);
  ASSERT_TRUE(prepared.ok()) << describe(call) << ": " << prepared.error().message();
  DeviceTensor dDy = gpu.upload(dy), acc = gpu.upload(Host(ws, DType::f32, 0.f)),
               dw = gpu.empty(ws, DType::f32);
  ConvBuffers b;
  b.x = dX.data;
  b.dy = dDy.data;
  b.scale = dScale.data;
  b.bias = dBias.data;
  b.dwAcc = acc.data;
  b.dw = dw.data;
  ASSERT_OK(conv->run(call, b, gpu.resources));
  const std::vector<float> wgradActivation = gpu.download(dw);
  compare(describe(call), wgradActivation, probed, true);
  // What the filter gradient differentiates is what the forward read.
  if (!statsActivation.empty()) {
    size_t differ = 0;
    for (size_t k = 0; k < probed.size(); ++k)
      differ += std::memcmp(&wgradActivation[k], &statsActivation[probed[k]], sizeof(float)) != 0;
    std::printf("the filter gradient's prologue and the genstats forward's differ in %zu of %zu "
                "probed elements\n",
                differ, probed.size());
    EXPECT_EQ(differ, 0u);
  }
}

/// The masked data gradient of backward_data_drelu_dbn_weight on the CPU:
/// dgrad(dy, w) where ((x + mean) * invStd) * scale + bias > 0 (f32 math,
/// as the graph's intermediates), else 0, rounded to x's dtype; and its
/// per-channel sum (dbias).
struct DreluDbnReference {
  Host masked;
  std::vector<double> sum;
};
DreluDbnReference dreluDbnOnTheCpu(Host dy, Host w, const Host &x,
                                   const cpu::Conv2dAttrs &attrs, const Host &mean,
                                   const Host &invStd, const Host &scale, const Host &bias) {
  DreluDbnReference ref{Host(x.shape, x.dtype), std::vector<double>(size_t(x.shape.back()))};
  Host dgradF32(x.shape, DType::f32);
  EXPECT_TRUE(cpu::conv2dBackwardInput(dy.view(), w.view(), attrs, dgradF32.view()).ok());
  const size_t channels = size_t(x.shape.back());
  for (size_t i = 0; i < x.values.size(); ++i) {
    size_t c = i % channels;
    float bn = ((x.values[i] + mean.values[c]) * invStd.values[c]) * scale.values[c] +
               bias.values[c];
    float g = bn > 0.f ? dgradF32.values[i] : 0.f;
    ref.masked.values[i] = roundTo(x.dtype, g);
    ref.sum[c] += g;
  }
  return ref;
}

/// ConvBuffers::DbnWeight over five f32 [C] result vectors and the given
/// inputs.
ConvBuffers::DbnWeight dbnBuffers(const DeviceTensor &mean, const DeviceTensor &invStd,
                                  const DeviceTensor &scale, const DeviceTensor &bias,
                                  std::vector<DeviceTensor> &results) {
  auto in = [](const DeviceTensor &t) { return static_cast<const float *>(t.data); };
  auto out = [&](int i) { return static_cast<float *>(results[size_t(i)].data); };
  return {in(mean), in(invStd), in(scale), in(bias), out(0), out(1), out(2), out(3), out(4)};
}

// The MLPerf backward pattern: dgrad masked by the dReLU of a BN output
// recomputed from the BN's input, against the CPU, with cuDNN's dbias (the
// masked gradient's per-channel sum), at kFusionShapes. dscale and the
// eq_* coefficients are cuDNN's definitions, which no op relies on yet
// (printed: how dscale compares with both readings of the mean). cuDNN
// may have no engine for it on a GPU: a skip, with its message.
TEST(Conv, DgradDreluDbnMatchesTheCpu) {
  RN_SKIP_WITHOUT_CUDA();
  Gpu gpu;
  auto conv = makeConv();
  ASSERT_TRUE(conv);
  std::mt19937 rng(31);
  for (const auto &[xShape, wShape, p] : kFusionShapes) {
    cpu::Conv2dAttrs attrs = attrsOf(p);
    Shape yShape;
    ASSERT_TRUE(cpu::conv2dOutputShape(xShape, wShape, attrs, yShape).ok());
    const int64_t channels = xShape[3];
    Host dy = randomHost(yShape, DType::f16, rng), w = randomHost(wShape, DType::f16, rng);
    Host x = randomHost(xShape, DType::f16, rng);
    Host mean = randomHost({channels}, DType::f32, rng, -0.2f, 0.2f);
    Host invStd = randomHost({channels}, DType::f32, rng, 0.5f, 2.f);
    Host scale = randomHost({channels}, DType::f32, rng, 0.5f, 1.5f);
    Host bias = randomHost({channels}, DType::f32, rng, -0.5f, 0.5f);
    ConvCall call = f16Call(ConvKind::backward_data_drelu_dbn_weight, p, xShape, wShape, yShape);
    Result<size_t> prepared = conv->prepare(call, gpu.resources);
    if (!prepared.ok())
      GTEST_SKIP() << "no plan: " << prepared.error().message();
    DeviceTensor dDy = gpu.upload(dy), dW = gpu.upload(w), dX = gpu.upload(x),
                 dMean = gpu.upload(mean), dInvStd = gpu.upload(invStd),
                 dScale = gpu.upload(scale), dBias = gpu.upload(bias),
                 g = gpu.empty(xShape, DType::f16);
    std::vector<DeviceTensor> outs;
    for (int i = 0; i < 5; ++i)
      outs.push_back(gpu.empty({channels}, DType::f32));
    ConvBuffers b;
    b.dy = dDy.data;
    b.w = dW.data;
    b.x = dX.data;
    b.dx = g.data;
    b.dbn = dbnBuffers(dMean, dInvStd, dScale, dBias, outs);
    ASSERT_OK(conv->run(call, b, gpu.resources));
    DreluDbnReference want = dreluDbnOnTheCpu(dy, w, x, attrs, mean, invStd, scale, bias);
    SCOPED_TRACE(describe(call));
    EXPECT_LE(relativeError(gpu.download(g), want.masked.values), tolerance(DType::f16));
    std::vector<float> dbias = gpu.download(outs[1]);
    double magnitude = 0;
    for (float v : want.masked.values)
      magnitude += std::fabs(v);
    for (int64_t c = 0; c < channels; ++c)
      EXPECT_NEAR(dbias[size_t(c)], want.sum[size_t(c)],
                  2e-3 * magnitude / double(channels) + 1e-3)
          << "channel " << c;
    // Information for a future op, not asserted: which xhat cuDNN's dscale
    // sums g against.
    std::vector<float> masked = gpu.download(g), dscale = gpu.download(outs[0]);
    double worstMinus = 0, worstPlus = 0;
    for (int64_t c = 0; c < channels; ++c) {
      double minus = 0, plus = 0;
      for (size_t i = size_t(c); i < masked.size(); i += size_t(channels)) {
        minus += masked[i] * (x.values[i] - mean.values[size_t(c)]) * invStd.values[size_t(c)];
        plus += masked[i] * (x.values[i] + mean.values[size_t(c)]) * invStd.values[size_t(c)];
      }
      worstMinus = std::max(worstMinus, std::fabs(dscale[size_t(c)] - minus));
      worstPlus = std::max(worstPlus, std::fabs(dscale[size_t(c)] - plus));
    }
    std::printf("%s: dscale against sum(g * (x - mean) * invStd): max |error| %.3g; against "
                "sum(g * (x + mean) * invStd): %.3g\n",
                describe(call).c_str(), worstMinus, worstPlus);
  }
}

// The prologue on the filter gradient: dwAcc + wgrad(relu(x * scale +
// bias), dy) against the CPU's filter gradient of the prologue rounded as
// above, into another buffer and in place, at a 3x3 and a 1x1 stride-2
// shape.
TEST(Conv, ScaleBiasReluWgradMatchesTheCpu) {
  RN_SKIP_WITHOUT_CUDA();
  Gpu gpu;
  auto conv = makeConv();
  ASSERT_TRUE(conv);
  std::mt19937 rng(23);
  for (const auto &[xShape, wShape, p] : kFusionShapes) {
    cpu::Conv2dAttrs attrs = attrsOf(p);
    Shape yShape;
    ASSERT_TRUE(cpu::conv2dOutputShape(xShape, wShape, attrs, yShape).ok());
    Host x = randomHost(xShape, DType::f16, rng), dy = randomHost(yShape, DType::f16, rng);
    Host scale = randomHost({xShape[3]}, DType::f16, rng, 0.5f, 1.5f);
    Host bias = randomHost({xShape[3]}, DType::f16, rng, -0.5f, 0.5f);
    Host dwAcc = randomHost(wShape, DType::f32, rng);
    Host activated = scaleBiasReluOnTheCpu(x, scale, bias);
    Host want(wShape, DType::f32);
    ASSERT_TRUE(
        cpu::conv2dBackwardFilter(dy.view(), activated.view(), dwAcc.view(), attrs, want.view())
            .ok());
    ConvCall call = f16Call(ConvKind::backward_filter_scale_bias_relu, p, xShape, wShape, yShape);
    call.gradType = DType::f32;
    Result<size_t> prepared = conv->prepare(call, gpu.resources);
    ASSERT_TRUE(prepared.ok()) << describe(call) << ": " << prepared.error().message();
    DeviceTensor dX = gpu.upload(x), dDy = gpu.upload(dy), dScale = gpu.upload(scale),
                 dBias = gpu.upload(bias), acc = gpu.upload(dwAcc),
                 dw = gpu.empty(wShape, DType::f32);
    for (bool inPlace : {false, true}) {
      ConvBuffers b;
      b.x = dX.data;
      b.dy = dDy.data;
      b.scale = dScale.data;
      b.bias = dBias.data;
      b.dwAcc = acc.data;
      b.dw = inPlace ? acc.data : dw.data;
      ASSERT_OK(conv->run(call, b, gpu.resources));
      // f16 bound: cuDNN's wgrad result may be f16 (prepare), one 2^-11 rounding before the sum.
      EXPECT_LE(relativeError(gpu.download(inPlace ? acc : dw), want.values),
                tolerance(DType::f16))
          << describe(call) << (inPlace ? " in place" : "");
    }
  }
}

// The epilogue kind computes dgrad(dy, w) + residual, into another buffer
// and in place (dx aliasing residual, as a junction's gradient would).
TEST(Conv, ResidualAddEpilogueMatchesTheCpu) {
  RN_SKIP_WITHOUT_CUDA();
  Gpu gpu;
  auto conv = makeConv();
  ASSERT_TRUE(conv);
  std::mt19937 rng(22);
  for (const auto &[xShape, wShape, p] : kFusionShapes) {
    cpu::Conv2dAttrs attrs = attrsOf(p);
    Shape yShape;
    ASSERT_TRUE(cpu::conv2dOutputShape(xShape, wShape, attrs, yShape).ok());
    Host w = randomHost(wShape, DType::f16, rng), dy = randomHost(yShape, DType::f16, rng);
    Host residual = randomHost(xShape, DType::f16, rng);
    Host want(xShape, DType::f16);
    ASSERT_TRUE(cpu::conv2dBackwardInput(dy.view(), w.view(), attrs, want.view()).ok());
    for (size_t i = 0; i < want.values.size(); ++i)
      want.values[i] += residual.values[i];
    ConvCall call = f16Call(ConvKind::backward_data_add, p, xShape, wShape, yShape);
    ASSERT_OK(conv->prepare(call, gpu.resources));
    DeviceTensor dW = gpu.upload(w), dDy = gpu.upload(dy), dResidual = gpu.upload(residual),
                 dx = gpu.empty(xShape, DType::f16);
    for (bool inPlace : {false, true}) {
      ConvBuffers b;
      b.w = dW.data;
      b.dy = dDy.data;
      b.residual = dResidual.data;
      b.dx = inPlace ? dResidual.data : dx.data;
      ASSERT_OK(conv->run(call, b, gpu.resources));
      EXPECT_LE(relativeError(gpu.download(inPlace ? dResidual : dx), want.values),
                tolerance(DType::f16))
          << describe(call) << (inPlace ? " in place" : "");
    }
  }
}

} // namespace
} // namespace rn::cuda
