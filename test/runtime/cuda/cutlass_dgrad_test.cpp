//===- cutlass_dgrad_test.cpp - CUTLASS's dgrad, plain and with BN sums ---===//
//
// cutlass_dgrad.h's kernels against the CPU's conv2dBackwardInput (f16
// data, f32 reference rounded as the kernel stores), the BN sums against
// double sums of the same g, and (RN_CUDA_BENCH=1) issue 46's comparison
// at ResNet-50's shapes: cuDNN's autotuned dgrad and RN's two-pass BN
// backward, against CUTLASS's plain dgrad and its dgrad with the sums in
// the epilogue. The shape checks run without a GPU.
//
//===----------------------------------------------------------------------===//

#include "conv_test_util.h"
#include "runtime/cuda/cutlass/cutlass_dgrad.h"
#include "runtime/cuda/norm_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace rn::cuda {
namespace {

using namespace conv_test;

DgradShape dgradShape(int64_t n, int64_t hw, int64_t c, int64_t k, int64_t r, int64_t stride,
                      int64_t pad) {
  DgradShape s;
  s.n = n;
  s.h = s.w = hw;
  s.c = c;
  s.k = k;
  s.r = s.s = r;
  s.strideH = s.strideW = stride;
  s.padH = s.padW = pad;
  return s;
}

Shape dxShape(const DgradShape &s) { return {s.n, s.h, s.w, s.c}; }
Shape dyShape(const DgradShape &s) { return {s.n, s.p(), s.q(), s.k}; }
Shape filterShape(const DgradShape &s) { return {s.k, s.r, s.s, s.c}; }
ConvParams paramsOf(const DgradShape &s) { return params(s.strideH, s.padH); }

TEST(CutlassDgrad, RefusesWhatItCannotRun) {
  // Host-side checks: no GPU needed.
  Status narrow = cutlassDgradSupports(dgradShape(4, 8, 3, 16, 3, 1, 1),
                                       /*withBnSums=*/false);
  ASSERT_FALSE(narrow.ok());
  EXPECT_NE(narrow.error().message().find("multiples of 8"), std::string::npos)
      << narrow.error().message();
  Status empty = cutlassDgradSupports(dgradShape(4, 2, 16, 16, 5, 1, 0), true);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message().find("empty"), std::string::npos) << empty.error().message();
  Status strided = cutlassDgradSupports(dgradShape(4, 12, 64, 64, 3, 2, 1), false);
  ASSERT_FALSE(strided.ok());
  EXPECT_NE(strided.error().message().find("unit strides"), std::string::npos)
      << strided.error().message();
  EXPECT_TRUE(cutlassDgradSupports(dgradShape(4, 12, 16, 32, 3, 1, 1), false).ok());
  // The sums' partial rows need whole tiles of channels.
  Status partTile = cutlassDgradSupports(dgradShape(4, 12, 16, 32, 3, 1, 1), true);
  ASSERT_FALSE(partTile.ok());
  EXPECT_NE(partTile.error().message().find("tile's width"), std::string::npos)
      << partTile.error().message();
  EXPECT_FALSE(
      cutlassDgradSupports(dgradShape(4, 12, 64, 32, 3, 1, 1), true, DgradTile::n128).ok());
  EXPECT_TRUE(cutlassDgradSupports(dgradShape(4, 12, 64, 32, 3, 1, 1), true).ok());
  EXPECT_EQ(cutlassDgradPartialRows(dgradShape(4, 12, 64, 32, 3, 1, 1)), (4 * 12 * 12 + 127) / 128);
  BnSumsEpilogue missing;
  Status noPointers = cutlassDgradBnSums(dgradShape(4, 12, 64, 32, 3, 1, 1), nullptr, nullptr,
                                         nullptr, missing, nullptr, 0, nullptr);
  ASSERT_FALSE(noPointers.ok());
  EXPECT_NE(noPointers.error().message().find("pointers"), std::string::npos);
}

/// 3x3 and 1x1 convolutions, stride 1 and 2, as ResNet's.
/// 3x3 and 1x1 convolutions at unit stride; pixel counts that are not
/// multiples of the tile's 128 rows; 16 channels (the plain dgrad only),
/// 64, 128 and 256 (the BN sums at the widths they fill).
const DgradShape kShapes[] = {dgradShape(4, 12, 16, 32, 3, 1, 1), dgradShape(4, 8, 64, 32, 1, 1, 0),
                              dgradShape(2, 10, 128, 64, 1, 1, 0),
                              dgradShape(2, 9, 256, 136, 3, 1, 1),
                              dgradShape(3, 20, 64, 136, 3, 1, 1)};

/// dx = conv2dBackwardInput(dy, w) in f32 on the CPU.
Host dgradOnTheCpu(Host dy, Host w, const DgradShape &s) {
  Host dx(dxShape(s), DType::f32);
  EXPECT_TRUE(cpu::conv2dBackwardInput(dy.view(), w.view(), attrsOf(paramsOf(s)), dx.view()).ok());
  return dx;
}

/// The epilogue's operands from the tests' device tensors.
BnSumsEpilogue bnSums(const DeviceTensor &reluResult, const DeviceTensor &x,
                      const DeviceTensor &mean, const DeviceTensor &invStd,
                      const DeviceTensor &partialG, const DeviceTensor &partialGXhat) {
  BnSumsEpilogue bn;
  bn.reluResult = reluResult.data;
  bn.x = x.data;
  bn.mean = static_cast<const float *>(mean.data);
  bn.invStd = static_cast<const float *>(invStd.data);
  bn.partialG = static_cast<float *>(partialG.data);
  bn.partialGXhat = static_cast<float *>(partialGXhat.data);
  return bn;
}

/// Both tile widths are checked at every shape.
const DgradTile kTiles[] = {DgradTile::n64, DgradTile::n128};

std::string traceOf(const DgradShape &s, DgradTile tile) {
  return ::testing::PrintToString(dxShape(s)) + " r" + std::to_string(s.r) + " stride " +
         std::to_string(s.strideH) + " tile " + dgradTileName(tile);
}

TEST(CutlassDgrad, PlainMatchesTheCpu) {
  RN_SKIP_WITHOUT_CUDA();
  std::mt19937 rng(46);
  for (const DgradShape &s : kShapes)
    for (DgradTile tile : kTiles) {
      SCOPED_TRACE(traceOf(s, tile));
      Gpu gpu;
      Host dy = randomHost(dyShape(s), DType::f16, rng),
           w = randomHost(filterShape(s), DType::f16, rng);
      DeviceTensor dyDev = gpu.upload(dy), wDev = gpu.upload(w);
      DeviceTensor dx = gpu.empty(dxShape(s), DType::f16);
      const size_t bytes = cutlassDgradWorkspaceBytes(s, false, tile);
      void *workspace = gpu.allocate(bytes);
      ASSERT_OK(cutlassDgrad(s, dyDev.data, wDev.data, dx.data, workspace, bytes,
                             gpu.resources.stream, tile));
      Host want = dgradOnTheCpu(dy, w, s);
      for (float &v : want.values)
        v = roundTo(DType::f16, v);
      EXPECT_LE(relativeError(gpu.download(dx), want.values), 4e-3);
    }
}

TEST(CutlassDgrad, BnSumsMatchTheCpu) {
  RN_SKIP_WITHOUT_CUDA();
  std::mt19937 rng(4646);
  for (const DgradShape &s : kShapes)
    for (DgradTile tile : kTiles) {
      if (!cutlassDgradSupports(s, true, tile).ok())
        continue; // partial tiles of channels (RefusesWhatItCannotRun)
      SCOPED_TRACE(traceOf(s, tile));
      Gpu gpu;
      const int64_t c = s.c, rows = cutlassDgradPartialRows(s);
      Host dy = randomHost(dyShape(s), DType::f16, rng),
           w = randomHost(filterShape(s), DType::f16, rng);
      Host x = randomHost(dxShape(s), DType::f16, rng, -2, 3);
      // A ReLU's result: about half of it zero.
      Host relu = randomHost(dxShape(s), DType::f16, rng);
      for (float &v : relu.values)
        v = std::max(v, 0.f);
      Host mean = randomHost({c}, DType::f32, rng, -0.5f, 1.f);
      Host invStd = randomHost({c}, DType::f32, rng, 0.5f, 2.f);
      DeviceTensor dyDev = gpu.upload(dy), wDev = gpu.upload(w), xDev = gpu.upload(x);
      DeviceTensor reluDev = gpu.upload(relu), meanDev = gpu.upload(mean);
      DeviceTensor invStdDev = gpu.upload(invStd);
      DeviceTensor g = gpu.empty(dxShape(s), DType::f16);
      DeviceTensor partialG = gpu.empty({rows, c}, DType::f32);
      DeviceTensor partialGXhat = gpu.empty({rows, c}, DType::f32);
      const BnSumsEpilogue bn = bnSums(reluDev, xDev, meanDev, invStdDev, partialG, partialGXhat);
      const size_t bytes = cutlassDgradWorkspaceBytes(s, true, tile);
      void *workspace = gpu.allocate(bytes);
      ASSERT_OK(cutlassDgradBnSums(s, dyDev.data, wDev.data, g.data, bn, workspace, bytes,
                                   gpu.resources.stream, tile));

      Host dgrad = dgradOnTheCpu(dy, w, s);
      std::vector<float> wantG(dgrad.values.size());
      const size_t channels = static_cast<size_t>(c);
      std::vector<double> wantSum(channels), wantSumXhat(channels), scale(channels),
          scaleXhat(channels);
      for (size_t i = 0; i < dgrad.values.size(); ++i) {
        const size_t ch = i % size_t(c);
        const double gi = relu.values[i] > 0.f ? dgrad.values[i] : 0.;
        const double xhat = (double(x.values[i]) - mean.values[ch]) * invStd.values[ch];
        wantG[i] = roundTo(DType::f16, float(gi));
        wantSum[ch] += gi;
        wantSumXhat[ch] += gi * xhat;
        scale[ch] += std::fabs(gi);
        scaleXhat[ch] += std::fabs(gi * xhat);
      }
      EXPECT_LE(relativeError(gpu.download(g), wantG), 4e-3);
      // The partial rows' column sums.
      const std::vector<float> gotRows = gpu.download(partialG);
      const std::vector<float> gotRowsXhat = gpu.download(partialGXhat);
      std::vector<double> gotSum(channels), gotSumXhat(channels);
      for (size_t i = 0; i < gotRows.size(); ++i) {
        gotSum[i % channels] += gotRows[i];
        gotSumXhat[i % channels] += gotRowsXhat[i];
      }
      for (int64_t ch = 0; ch < c; ++ch) {
        // f32 sums of f32 terms whose dgrad the tensor cores accumulated in
        // f32: well within 1e-3 of the terms' magnitude.
        EXPECT_NEAR(gotSum[size_t(ch)], wantSum[size_t(ch)], 1e-3 * scale[size_t(ch)] + 1e-4)
            << "channel " << ch;
        EXPECT_NEAR(gotSumXhat[size_t(ch)], wantSumXhat[size_t(ch)],
                    1e-3 * scaleXhat[size_t(ch)] + 1e-4)
            << "channel " << ch;
      }
      // A second call overwrites the partials (no accumulation across
      // calls), with the same bits.
      ASSERT_OK(cutlassDgradBnSums(s, dyDev.data, wDev.data, g.data, bn, workspace, bytes,
                                   gpu.resources.stream, tile));
      EXPECT_EQ(gpu.download(partialG), gotRows);
      EXPECT_EQ(gpu.download(partialGXhat), gotRowsXhat);
    }
}

/// The whole backward both ways on the GPU: CUTLASS's plain dgrad, then
/// bnBackward masking by the ReLU result (two passes), against the fused
/// dgrad, then bnBackwardFromSums (one pass). They differ only in where
/// the gradient is rounded to f16 before the sums.
TEST(CutlassDgrad, FusedBackwardMatchesTwoPasses) {
  RN_SKIP_WITHOUT_CUDA();
  std::mt19937 rng(464646);
  for (const DgradShape &s : {kShapes[1], kShapes[3]}) {
    SCOPED_TRACE(traceOf(s, DgradTile::automatic));
    Gpu gpu;
    const int64_t c = s.c, rows = cutlassDgradPartialRows(s);
    const Shape xs = dxShape(s);
    Host relu = randomHost(xs, DType::f16, rng);
    for (float &v : relu.values)
      v = std::max(v, 0.f);
    DeviceTensor dy = gpu.upload(randomHost(dyShape(s), DType::f16, rng));
    DeviceTensor w = gpu.upload(randomHost(filterShape(s), DType::f16, rng));
    DeviceTensor x = gpu.upload(randomHost(xs, DType::f16, rng, -2, 3));
    DeviceTensor reluDev = gpu.upload(relu);
    DeviceTensor mean = gpu.upload(randomHost({c}, DType::f32, rng, -0.5f, 1.f));
    DeviceTensor invStd = gpu.upload(randomHost({c}, DType::f32, rng, 0.5f, 2.f));
    DeviceTensor weight = gpu.upload(randomHost({c}, DType::f32, rng, 0.5f, 1.5f));
    const Host accumulator = randomHost({c}, DType::f32, rng);
    DeviceTensor weightGrad[2] = {gpu.upload(accumulator), gpu.upload(accumulator)};
    DeviceTensor biasGrad[2] = {gpu.upload(accumulator), gpu.upload(accumulator)};
    DeviceTensor dgrad = gpu.empty(xs, DType::f16), g = gpu.empty(xs, DType::f16);
    DeviceTensor bnDx[2] = {gpu.empty(xs, DType::f16), gpu.empty(xs, DType::f16)};
    DeviceTensor partialG = gpu.empty({rows, c}, DType::f32);
    DeviceTensor partialGXhat = gpu.empty({rows, c}, DType::f32);
    cudaStream_t stream = gpu.resources.stream;
    const size_t bnBytes = bnBackwardWorkspaceBytes(xs);
    void *bnWorkspace = gpu.allocate(bnBytes);
    const size_t bytes =
        std::max(cutlassDgradWorkspaceBytes(s, false), cutlassDgradWorkspaceBytes(s, true));
    void *workspace = gpu.allocate(bytes);

    ASSERT_OK(cutlassDgrad(s, dy.data, w.data, dgrad.data, workspace, bytes, stream));
    ASSERT_OK(bnBackward(dgrad, &reluDev, nullptr, x, weight, mean, invStd, weightGrad[0],
                         biasGrad[0], bnDx[0], weightGrad[0], biasGrad[0], stream, bnWorkspace,
                         bnBytes));
    const BnSumsEpilogue bn = bnSums(reluDev, x, mean, invStd, partialG, partialGXhat);
    ASSERT_OK(cutlassDgradBnSums(s, dy.data, w.data, g.data, bn, workspace, bytes, stream));
    ASSERT_OK(bnBackwardFromSums(g, x, weight, mean, invStd, partialG, partialGXhat, weightGrad[1],
                                 biasGrad[1], bnDx[1], weightGrad[1], biasGrad[1], stream,
                                 bnWorkspace, bnBytes));
    EXPECT_LE(relativeError(gpu.download(bnDx[1]), gpu.download(bnDx[0])), 4e-3);
    EXPECT_LE(relativeError(gpu.download(weightGrad[1]), gpu.download(weightGrad[0])), 1e-3);
    EXPECT_LE(relativeError(gpu.download(biasGrad[1]), gpu.download(biasGrad[0])), 1e-3);
  }
}

/// ResNet-50's unit-stride data gradients at batch 256 whose input is a BN
/// + ReLU result: the bottlenecks' 1x1 reduce, 3x3 and 1x1 expand
/// convolutions per stage (the stride-2 3x3s and projections stay cuDNN's:
/// cutlassDgradSupports).
std::vector<DgradShape> resnet50Dgrads() {
  std::vector<DgradShape> shapes;
  const int64_t widths[] = {64, 128, 256, 512}, sizes[] = {56, 28, 14, 7};
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = widths[stage], hw = sizes[stage];
    shapes.push_back(dgradShape(256, hw, 4 * width, width, 1, 1, 0)); // reduce: dx has 4w
    shapes.push_back(dgradShape(256, hw, width, width, 3, 1, 1));     // 3x3
    shapes.push_back(dgradShape(256, hw, width, 4 * width, 1, 1, 0)); // expand: dx has w
  }
  return shapes;
}

TEST(CutlassDgrad, Resnet50Times) {
  RN_SKIP_WITHOUT_CUDA();
  if (!std::getenv("RN_CUDA_BENCH"))
    GTEST_SKIP() << "set RN_CUDA_BENCH=1 to measure";
  std::unique_ptr<ConvRunner> conv = makeConv(/*autotune=*/true);
  ASSERT_TRUE(conv);
  double totals[5] = {};
  for (const DgradShape &s : resnet50Dgrads()) {
    Gpu gpu(size_t(256) << 20);
    const Shape xs = dxShape(s);
    DeviceTensor dy = gpu.upload(Host(dyShape(s), DType::f16, 0.01f));
    DeviceTensor w = gpu.upload(Host(filterShape(s), DType::f16, 0.02f));
    DeviceTensor dx = gpu.upload(Host(xs, DType::f16, 0.01f));
    DeviceTensor x = gpu.upload(Host(xs, DType::f16, 0.5f));
    DeviceTensor relu = gpu.upload(Host(xs, DType::f16, 0.75f));
    DeviceTensor mean = gpu.upload(Host({s.c}, DType::f32, 0.25f));
    DeviceTensor invStd = gpu.upload(Host({s.c}, DType::f32, 2.f));
    DeviceTensor weight = gpu.upload(Host({s.c}, DType::f32, 1.f));
    DeviceTensor weightGrad = gpu.upload(Host({s.c}, DType::f32, 0.f));
    DeviceTensor biasGrad = gpu.upload(Host({s.c}, DType::f32, 0.f));
    const int64_t rows = cutlassDgradPartialRows(s);
    DeviceTensor partialG = gpu.empty({rows, s.c}, DType::f32);
    DeviceTensor partialGXhat = gpu.empty({rows, s.c}, DType::f32);
    DeviceTensor bnDx = gpu.empty(xs, DType::f16);
    cudaStream_t stream = gpu.resources.stream;

    ConvCall call = f16Call(ConvKind::backward_data, paramsOf(s), xs, filterShape(s), dyShape(s));
    const double cudnnMs = autotunedMs(*conv, call, gpu);
    const size_t bnBytes = bnBackwardWorkspaceBytes(xs);
    void *bnWorkspace = gpu.allocate(bnBytes);
    const double bnMs = streamMs(stream, [&] {
      return bnBackward(dx, &relu, nullptr, x, weight, mean, invStd, weightGrad, biasGrad, bnDx,
                        weightGrad, biasGrad, stream, bnWorkspace, bnBytes);
    });
    const BnSumsEpilogue bn = bnSums(relu, x, mean, invStd, partialG, partialGXhat);
    const double fromSumsMs = streamMs(stream, [&] {
      return bnBackwardFromSums(dx, x, weight, mean, invStd, partialG, partialGXhat, weightGrad,
                                biasGrad, bnDx, weightGrad, biasGrad, stream, bnWorkspace, bnBytes);
    });
    // Each tile width, plain and fused; the faster width's pair counts.
    double plainMs = -1, fusedMs = -1;
    std::string line;
    for (DgradTile tile : kTiles) {
      const size_t plainBytes = cutlassDgradWorkspaceBytes(s, false, tile);
      const size_t sumsBytes = cutlassDgradWorkspaceBytes(s, true, tile);
      void *workspace = gpu.allocate(std::max(plainBytes, sumsBytes));
      const double plain = streamMs(stream, [&] {
        return cutlassDgrad(s, dy.data, w.data, dx.data, workspace, plainBytes, stream, tile);
      });
      const double fused = streamMs(stream, [&] {
        return cutlassDgradBnSums(s, dy.data, w.data, dx.data, bn, workspace, sumsBytes, stream,
                                  tile);
      });
      line += std::string("; ") + dgradTileName(tile) + ": dgrad " + timeText(plain) +
              ratioText(cudnnMs, plain) + ", with the BN sums " + timeText(fused) +
              ratioText(cudnnMs, fused);
      if (fused >= 0 && (fusedMs < 0 || fused < fusedMs)) {
        fusedMs = fused;
        plainMs = plain;
      }
    }
    const double todayMs = cudnnMs + bnMs, fusedPathMs = fusedMs + fromSumsMs;
    std::printf("%s r%lld s%lld: cuDNN dgrad %s + RN BN backward %s = %.3f ms; fused dgrad + BN "
                "from sums %s = %.3f ms (x%.2f)%s\n",
                ::testing::PrintToString(xs).c_str(), (long long)s.r, (long long)s.strideH,
                timeText(cudnnMs).c_str(), timeText(bnMs).c_str(), todayMs,
                timeText(fromSumsMs).c_str(), fusedPathMs, fusedPathMs / todayMs, line.c_str());
    const double times[5] = {cudnnMs, bnMs, plainMs, fusedMs, fromSumsMs};
    for (int i = 0; i < 5; ++i)
      totals[i] += times[i] > 0 ? times[i] : NAN;
  }
  // The fusion pays where the fused dgrad plus the one-pass BN backward
  // beats cuDNN's dgrad plus RN's two passes.
  std::printf("every shape once: cuDNN dgrad %.3f ms + RN BN backward %.3f ms = %.3f ms; CUTLASS "
              "dgrad %.3f ms; with the BN sums %.3f ms (the faster tile's) + BN from sums %.3f "
              "ms = %.3f ms\n",
              totals[0], totals[1], totals[0] + totals[1], totals[2], totals[3], totals[4],
              totals[3] + totals[4]);
}

/// Host-side: CUTLASS's can_implement takes every shape the tests use, the
/// plain dgrad at both widths, the fused one at the automatic width.
TEST(CutlassDgrad, TakesResnetShapes) {
  std::vector<DgradShape> shapes = resnet50Dgrads();
  shapes.insert(shapes.end(), std::begin(kShapes), std::end(kShapes));
  for (const DgradShape &s : shapes) {
    for (DgradTile tile : kTiles) {
      Status supported = cutlassDgradSupports(s, false, tile);
      EXPECT_TRUE(supported.ok()) << supported.error().message();
    }
    if (s.c % 64 == 0) {
      Status fused = cutlassDgradSupports(s, true);
      EXPECT_TRUE(fused.ok()) << fused.error().message();
    }
  }
}

} // namespace
} // namespace rn::cuda
