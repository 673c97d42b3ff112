//===- conv_bench_test.cpp - Timing benches of the convolution kinds =========//
//
// The benches behind the convolution choices (docs/benchmarks.md): the
// residual-add epilogue, the scale-bias-ReLU prologue, the stem's channel
// padding, genstats against the statistics pass, cuDNN's norm-conv and the
// dReLU-dBN backward, autotuned at batch 256 in f16 (RN_CUDA_BENCH=1 runs
// them; no timing is asserted); and the accuracy of the image stem's
// reduced-precision plans. Every test skips when no CUDA device answers.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/norm_kernels.h"
#include "conv_test_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace rn::cuda {
namespace {

using namespace conv_test;

/// ResNet-50's block inputs at batch 256, f16, where the residual
/// junction's gradient is summed: the autotuned time of the first
/// convolution's data gradient alone and with the sum as its epilogue
/// (ConvKind::backward_data_add), printed (set RN_CUDA_BENCH=1; no timing
/// asserted). The separate sum reads two gradients and writes one.
TEST(Conv, ResidualAddEpilogueTimes) {
  RN_SKIP_WITHOUT_CUDA();
  if (!std::getenv("RN_CUDA_BENCH"))
    GTEST_SKIP() << "set RN_CUDA_BENCH=1 to measure";
  Gpu gpu;
  auto conv = makeConv(/*autotune=*/true);
  ASSERT_TRUE(conv);
  struct Shape2 {
    int64_t hw, cin, cout;
  };
  // The 1x1 reduce convolution of a bottleneck: block input cin -> cout.
  const Shape2 shapes[] = {{56, 256, 64}, {28, 512, 128}, {14, 1024, 256}, {7, 2048, 512}};
  for (const Shape2 &shape : shapes) {
    double ms[2] = {0, 0};
    int k = 0;
    for (ConvKind kind : {ConvKind::backward_data, ConvKind::backward_data_add}) {
      ConvCall call;
      call.kind = kind;
      call.params = params(1, 0);
      call.x = {256, shape.hw, shape.hw, shape.cin};
      call.w = {shape.cout, 1, 1, shape.cin};
      call.y = {256, shape.hw, shape.hw, shape.cout};
      call.xType = call.wType = call.yType = DType::f16;
      ms[k++] = autotunedMs(*conv, call, gpu);
    }
    std::printf("dx[256,%lld,%lld,%lld] 1x1 from %lld: data gradient %s, with the residual "
                "sum as its epilogue %s%s\n",
                (long long)shape.hw, (long long)shape.hw, (long long)shape.cin,
                (long long)shape.cout, timeText(ms[0]).c_str(), timeText(ms[1]).c_str(),
                ratioText(ms[0], ms[1]).c_str());
  }
}

/// A batch-256 f16 convolution of the benches: x [256, hw, hw, cin], a
/// kernel x kernel filter to cout channels at `stride`, padding kernel / 2.
struct BenchConv {
  int64_t hw, cin, cout, kernel, stride;
};
/// ResNet-50's bottleneck convolutions whose input is a BN + ReLU output.
const std::vector<BenchConv> kBottleneckConvs = {
    {56, 64, 64, 3, 1},   {56, 64, 256, 1, 1},  {56, 128, 128, 3, 2}, {28, 128, 512, 1, 1},
    {28, 256, 256, 3, 2}, {14, 256, 1024, 1, 1}, {14, 512, 512, 3, 2}, {7, 512, 2048, 1, 1}};
/// ResNet-18 / VGG-11's CIFAR 3x3 convolutions, and both lists together.
const std::vector<BenchConv> kCifarConvs = {
    {32, 64, 64, 3, 1}, {16, 128, 128, 3, 1}, {8, 256, 256, 3, 1}, {4, 512, 512, 3, 1}};
std::vector<BenchConv> bottleneckAndCifarConvs() {
  std::vector<BenchConv> all = kBottleneckConvs;
  all.insert(all.end(), kCifarConvs.begin(), kCifarConvs.end());
  return all;
}

/// The all-f16 call of `kind` at `c` (dw of `gradType`).
ConvCall benchCall(const BenchConv &c, ConvKind kind, DType gradType = DType::f32) {
  const int64_t pad = c.kernel / 2, out = (c.hw + 2 * pad - c.kernel) / c.stride + 1;
  ConvCall call;
  call.kind = kind;
  call.params = params(c.stride, pad);
  call.x = {256, c.hw, c.hw, c.cin};
  call.w = {c.cout, c.kernel, c.kernel, c.cin};
  call.y = {256, out, out, c.cout};
  call.xType = call.wType = call.yType = DType::f16;
  call.gradType = gradType;
  return call;
}

/// "x[256,56,56,64] 3x3/1 -> 64", how the bench lines name `c`.
std::string benchName(const BenchConv &c) {
  char text[96];
  std::snprintf(text, sizeof text, "x[256,%lld,%lld,%lld] %lldx%lld/%lld -> %lld",
                (long long)c.hw, (long long)c.hw, (long long)c.cin, (long long)c.kernel,
                (long long)c.kernel, (long long)c.stride, (long long)c.cout);
  return text;
}

/// Times `plain` against `fused` (a prologue kind of the same call) at
/// ResNet-50's bottleneck convolutions, batch 256, f16 (dw of `gradType`),
/// printing one line per shape with `what` naming the plain kind.
void timeBottleneckPrologue(ConvKind plain, ConvKind fused, const char *what, DType gradType) {
  Gpu gpu;
  auto conv = makeConv(/*autotune=*/true);
  ASSERT_TRUE(conv);
  for (const BenchConv &shape : kBottleneckConvs) {
    const double plainMs = autotunedMs(*conv, benchCall(shape, plain, gradType), gpu);
    const double fusedMs = autotunedMs(*conv, benchCall(shape, fused, gradType), gpu);
    std::printf("%s: %s %s, with the scale-bias-ReLU prologue %s%s\n", benchName(shape).c_str(),
                what, timeText(plainMs).c_str(), timeText(fusedMs).c_str(),
                ratioText(plainMs, fusedMs).c_str());
  }
}

/// ResNet-50's bottleneck convolutions at batch 256, f16, whose input is a
/// BN + ReLU output: the autotuned time of the plain forward and of the
/// forward with the BN apply and ReLU as its prologue
/// (ConvKind::forward_scale_bias_relu), printed with their ratio (set
/// RN_CUDA_BENCH=1 to run; no timing asserted). Saving the prologue's
/// separate pass (read and write of the activation) pays where the ratio
/// stays below 1 + that pass's share; this decides per shape.
TEST(Conv, ScaleBiasReluPrologueTimes) {
  RN_SKIP_WITHOUT_CUDA();
  if (!std::getenv("RN_CUDA_BENCH"))
    GTEST_SKIP() << "set RN_CUDA_BENCH=1 to measure";
  timeBottleneckPrologue(ConvKind::forward, ConvKind::forward_scale_bias_relu, "forward",
                         DType::f32);
}

/// The same ResNet-50 bottleneck convolutions' filter gradients (f32 dw):
/// the autotuned time of the plain filter gradient and of the one with the
/// BN apply and ReLU as its prologue (ConvKind::backward_filter_scale_bias_relu),
/// printed with their ratio (set RN_CUDA_BENCH=1 to run; no timing
/// asserted). The fused one reads x instead of the activation, so a
/// forward with the prologue need not write the activation for the
/// backward either; the accumulation into dw is the same for both and not
/// timed.
TEST(Conv, ScaleBiasReluWgradTimes) {
  RN_SKIP_WITHOUT_CUDA();
  if (!std::getenv("RN_CUDA_BENCH"))
    GTEST_SKIP() << "set RN_CUDA_BENCH=1 to measure";
  timeBottleneckPrologue(ConvKind::backward_filter, ConvKind::backward_filter_scale_bias_relu,
                         "filter gradient", DType::f32);
}

/// ResNet-50's stem (7x7 stride 2, 3 input channels at 224x224, batch 256)
/// with the input channels zero-padded to 4 and 8: the autotuned cuDNN time
/// of its forward and filter gradient at each width, with the plan's
/// workspace, printed (set RN_CUDA_BENCH=1 to run; no timing asserted), for
/// the default candidate count and for every candidate, within 64 MiB of
/// workspace (the plan's default per stream) and within 2 GiB. cuDNN's
/// image-first-layer kernels take exactly 4 channels of a 7x7/2 filter
/// (PyTorch, which pads 3 to 4 itself, runs them: docs/benchmarks.md);
/// this says whether our candidates and workspace reach them (they
/// do not: those kernels are engine 63, whose REDUCED_PRECISION_REDUCTION
/// note the plan filter bars by default; RN_CONV_ENGINE_SEARCH=1 adds
/// every engine with its default knobs).
TEST(Conv, StemChannelPaddingTimes) {
  RN_SKIP_WITHOUT_CUDA();
  if (!std::getenv("RN_CUDA_BENCH"))
    GTEST_SKIP() << "set RN_CUDA_BENCH=1 to measure";
  for (size_t workspaceMiB : {size_t(64), size_t(2048)}) {
    Gpu gpu(workspaceMiB << 20);
    for (int candidates : {16, 0}) {
      auto conv = makeConv(/*autotune=*/true, /*deterministic=*/false, {}, candidates);
      ASSERT_TRUE(conv);
      for (int64_t channels : {3, 4, 8}) {
        double ms[2] = {0, 0};
        size_t workspace[2] = {0, 0};
        int k = 0;
        for (ConvKind kind : {ConvKind::forward, ConvKind::backward_filter}) {
          ConvCall call;
          call.kind = kind;
          call.params = params(2, 3);
          call.x = {256, 224, 224, channels};
          call.w = {64, 7, 7, channels};
          call.y = {256, 112, 112, 64};
          call.xType = call.wType = call.yType = DType::f16;
          call.gradType = DType::f16;
          double before = conv->preparedPlanMs();
          Result<size_t> prepared = conv->prepare(call, gpu.resources);
          ASSERT_TRUE(prepared.ok()) << prepared.error().message();
          workspace[k] = *prepared;
          ms[k++] = conv->preparedPlanMs() - before;
        }
        std::printf("stem 7x7/2 x[256,224,224,%lld] f16, %s candidates, workspace cap %zu MiB: "
                    "forward %.3f ms (workspace %.1f MiB), filter gradient %.3f ms (%.1f MiB)\n",
                    (long long)channels, candidates ? "16" : "all", workspaceMiB, ms[0],
                    double(workspace[0]) / (1 << 20), ms[1], double(workspace[1]) / (1 << 20));
      }
    }
  }
}

/// ResNet-50's stem as rn-pad-conv-channels leaves it (7x7/2 over 3 image
/// channels and a zero fourth, f16): the forward and the filter gradient
/// of a runner whose stem may take reduced-precision-reduction plans
/// (Options::reducedPrecisionStem, the default: cuDNN's image first-layer
/// kernels) against the CPU at batch 16 (a CPU reference of batch 256
/// takes minutes) and against a runner that bars them at batch 256, the
/// stem's shape in the benchmark, whose filter gradient sums 3.2 million
/// products per weight. Measured on the H100 (run E2): forward 1.8e-5
/// against the CPU (barred plans 1.3e-5); filter gradient 8.2e-4 against
/// the CPU at batch 16 (barred 2.1e-4) and 1.4e-3 against the barred plans
/// at batch 256, where the reduced-precision partial sums grow with the
/// batch. The bounds: the f16 forward tolerance, and 2e-3 norm-wise for
/// the filter gradient, half of bf16's unit roundoff (3.9e-3, what a bf16
/// step such as JAX's puts on every gradient) and the error PyTorch's f16
/// ResNet-50 trains with (cuDNN's heuristics pick these kernels there).
/// Prints the errors and the autotuned times of both runners.
TEST(Conv, ImageStemReducedPrecisionError) {
  RN_SKIP_WITHOUT_CUDA();
  const DType f16 = DType::f16;
  ConvRunner::Options barredOptions;
  barredOptions.autotune = true;
  barredOptions.reducedPrecisionStem = false;
  Result<std::unique_ptr<ConvRunner>> barred = ConvRunner::create(barredOptions);
  ASSERT_TRUE(barred.ok()) << barred.error().message();
  auto stem = makeConv(/*autotune=*/true);
  ASSERT_TRUE(stem);
  std::mt19937 rng(61);
  // Normalized images in [-2, 2] and a filter of the stem's scale, the
  // padded fourth channel zero in both.
  auto withZeroFourthChannel = [](Host h) {
    for (size_t i = 3; i < h.values.size(); i += 4)
      h.values[i] = 0.f;
    return h;
  };
  const Shape ws{64, 7, 7, 4};
  Host w = withZeroFourthChannel(randomHost(ws, f16, rng, -0.1f, 0.1f));
  const cpu::Conv2dAttrs attrs = attrsOf(params(2, 3));
  for (int64_t batch : {int64_t(16), int64_t(256)}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const Shape xs{batch, 224, 224, 4}, ys{batch, 112, 112, 64};
    Host x = withZeroFourthChannel(randomHost(xs, f16, rng, -2.f, 2.f));
    Host dy = randomHost(ys, f16, rng, -0.01f, 0.01f);
    Gpu gpu;
    DeviceTensor dX = gpu.upload(x), dW = gpu.upload(w), dDy = gpu.upload(dy);
    ConvCall call;
    call.params = params(2, 3);
    call.x = arr(xs);
    call.w = arr(ws);
    call.y = arr(ys);
    call.xType = call.wType = call.yType = f16;
    call.gradType = DType::f32;
    ASSERT_TRUE(isImageStem(call));
    // Forward output and filter gradient of one runner, and its plans' ms.
    struct Outputs {
      std::vector<float> y, dw;
      double ms[2] = {0, 0};
    };
    auto runBoth = [&](ConvRunner &conv, Outputs &out) {
      int k = 0;
      for (ConvKind kind : {ConvKind::forward, ConvKind::backward_filter}) {
        call.kind = kind;
        const double before = conv.preparedPlanMs();
        Result<size_t> prepared = conv.prepare(call, gpu.resources);
        ASSERT_TRUE(prepared.ok()) << prepared.error().message();
        out.ms[k++] = conv.preparedPlanMs() - before;
        ConvBuffers b;
        b.x = dX.data;
        b.w = dW.data;
        if (kind == ConvKind::forward) {
          DeviceTensor y = gpu.empty(ys, f16);
          b.y = y.data;
          ASSERT_OK(conv.run(call, b, gpu.resources));
          out.y = gpu.download(y);
        } else {
          DeviceTensor zero = gpu.upload(Host(ws, DType::f32)), dw = gpu.empty(ws, DType::f32);
          b.dy = dDy.data;
          b.dwAcc = zero.data;
          b.dw = dw.data;
          ASSERT_OK(conv.run(call, b, gpu.resources));
          out.dw = gpu.download(dw);
        }
      }
    };
    Outputs fast, exact;
    runBoth(*stem, fast);
    runBoth(**barred, exact);
    double forwardError = 0, gradError = 0;
    if (batch == 16) {
      Host y(ys, f16), dw(ws, DType::f32), zero(ws, DType::f32);
      ASSERT_TRUE(cpu::conv2d(x.view(), w.view(), nullptr, attrs, y.view()).ok());
      ASSERT_TRUE(
          cpu::conv2dBackwardFilter(dy.view(), x.view(), zero.view(), attrs, dw.view()).ok());
      forwardError = relativeError(fast.y, y.values);
      gradError = relativeError(fast.dw, dw.values);
      std::printf("stem batch 16 against the CPU: forward %.3g (barred plans %.3g), filter "
                  "gradient %.3g (barred plans %.3g)\n",
                  forwardError, relativeError(exact.y, y.values), gradError,
                  relativeError(exact.dw, dw.values));
    } else {
      forwardError = relativeError(fast.y, exact.y);
      gradError = relativeError(fast.dw, exact.dw);
      std::printf("stem batch 256 against the barred plans: forward %.3g, filter gradient "
                  "%.3g\n",
                  forwardError, gradError);
    }
    std::printf("stem batch %lld plans: forward %.3f ms (barred %.3f), filter gradient %.3f ms "
                "(barred %.3f)\n",
                (long long)batch, fast.ms[0], exact.ms[0], fast.ms[1], exact.ms[1]);
    EXPECT_LE(forwardError, tolerance(f16));
    EXPECT_LE(gradError, 2e-3);
  }
}

/// cbr_forward's two ways to its batch statistics, end to end per shape
/// (set RN_CUDA_BENCH=1 to run; no timing asserted): the plain forward then
/// the Welford pass (bnBatchStats), against the forward with cuDNN's
/// genstats fused (its sums zeroed first) then bnFinalizeStats, both
/// autotuned, f16 at batch 256, on ResNet-50's bottleneck shapes and
/// ResNet-18 / VGG-11's CIFAR ones. Genstats paid on ResNet-50's step and
/// cost on the CIFAR models' (docs/benchmarks.md); this says which shapes,
/// the input of a choice per shape.
TEST(Conv, GenstatsTimes) {
  RN_SKIP_WITHOUT_CUDA();
  if (!std::getenv("RN_CUDA_BENCH"))
    GTEST_SKIP() << "set RN_CUDA_BENCH=1 to measure";
  auto plain = makeConv(/*autotune=*/true);
  ASSERT_TRUE(plain);
  ConvRunner::Options fusedOptions;
  fusedOptions.autotune = true;
  fusedOptions.genstats = ConvRunner::Options::Genstats::always;
  Result<std::unique_ptr<ConvRunner>> fused = ConvRunner::create(fusedOptions);
  ASSERT_TRUE(fused.ok()) << fused.error().message();
  std::vector<BenchConv> shapes = bottleneckAndCifarConvs();
  shapes.push_back({32, 8, 64, 3, 1}); // the padded CIFAR stem
  for (const BenchConv &shape : shapes) {
    Gpu gpu;
    const ConvCall call = benchCall(shape, ConvKind::forward);
    const ConvCall statsCall = benchCall(shape, ConvKind::forward_stats);
    const Shape ys(call.y.begin(), call.y.end());
    DeviceTensor x = gpu.upload(Host(Shape(call.x.begin(), call.x.end()), DType::f16, 0.5f));
    DeviceTensor w = gpu.upload(Host(Shape(call.w.begin(), call.w.end()), DType::f16, 0.01f));
    DeviceTensor y = gpu.empty(ys, DType::f16);
    DeviceTensor mean = gpu.empty({shape.cout}, DType::f32);
    DeviceTensor invStd = gpu.empty({shape.cout}, DType::f32);
    const size_t statsBytes = bnStatsWorkspaceBytes(y.shape);
    void *statsWorkspace = gpu.allocate(statsBytes);
    float *sums = static_cast<float *>(gpu.allocate(2 * size_t(shape.cout) * sizeof(float)));
    ConvBuffers b;
    b.x = x.data;
    b.w = w.data;
    b.y = y.data;
    b.sum = sums;
    b.sumSq = sums + shape.cout;
    cudaStream_t stream = gpu.resources.stream;
    double welfordMs = -1, genstatsMs = -1;
    if (plain->prepare(call, gpu.resources).ok())
      welfordMs = streamMs(stream, [&]() -> Status {
        if (Status s = plain->run(call, b, gpu.resources); !s.ok())
          return s;
        return bnBatchStats(y, 1e-5, mean, invStd, stream, statsWorkspace, statsBytes);
      });
    if ((*fused)->prepare(statsCall, gpu.resources).ok() &&
        (*fused)->statsFused(statsCall, gpu.resources))
      genstatsMs = streamMs(stream, [&]() -> Status {
        if (Status s = (*fused)->run(statsCall, b, gpu.resources); !s.ok())
          return s;
        return bnFinalizeStats(b.sum, b.sumSq, shape.cout, numel(ys) / shape.cout, 1e-5, mean,
                               invStd, stream);
      });
    std::printf("%s: conv + Welford %s, conv + genstats %s%s\n", benchName(shape).c_str(),
                timeText(welfordMs).c_str(), timeText(genstatsMs).c_str(),
                ratioText(welfordMs, genstatsMs).c_str());
  }
}

/// The MLPerf pattern against what it would replace, end to end per shape
/// (set RN_CUDA_BENCH=1 to run; no timing asserted): the BN apply + ReLU
/// pass over the convolution's input (bnApply), the plain forward and the
/// Welford pass over its output (bnBatchStats), against
/// forward_scale_bias_relu_stats then bnFinalizeStats, both autotuned, f16
/// at batch 256, on ResNet-50's bottleneck shapes and ResNet-18 / VGG-11's
/// CIFAR ones; also each convolution alone, and the filter gradients the
/// backward would take (plain on the stored activation, against
/// backward_filter_scale_bias_relu on x when the activation is not
/// stored), so that the forward's saving is weighed against the backward's
/// cost per shape (docs/benchmarks.md has what it measured).
TEST(Conv, NormConvTimes) {
  RN_SKIP_WITHOUT_CUDA();
  if (!std::getenv("RN_CUDA_BENCH"))
    GTEST_SKIP() << "set RN_CUDA_BENCH=1 to measure";
  auto conv = makeConv(/*autotune=*/true);
  ASSERT_TRUE(conv);
  for (const BenchConv &shape : bottleneckAndCifarConvs()) {
    Gpu gpu;
    const ConvCall call = benchCall(shape, ConvKind::forward);
    const ConvCall fusedCall = benchCall(shape, ConvKind::forward_scale_bias_relu_stats);
    const double plainConvMs = autotunedMs(*conv, call, gpu);
    const double fusedConvMs = autotunedMs(*conv, fusedCall, gpu);

    const Shape xs(call.x.begin(), call.x.end()), ys(call.y.begin(), call.y.end());
    const DType t = DType::f16;
    DeviceTensor x = gpu.upload(Host(xs, t, 0.5f));
    DeviceTensor w = gpu.upload(Host(Shape(call.w.begin(), call.w.end()), t, 0.01f));
    DeviceTensor activated = gpu.empty(xs, t), y = gpu.empty(ys, t);
    DeviceTensor inMean = gpu.upload(Host({shape.cin}, DType::f32, 0.25f));
    DeviceTensor inInvStd = gpu.upload(Host({shape.cin}, DType::f32, 2.f));
    DeviceTensor weight = gpu.upload(Host({shape.cin}, DType::f32, 1.f));
    DeviceTensor bias = gpu.upload(Host({shape.cin}, DType::f32, 0.1f));
    DeviceTensor scale16 = gpu.upload(Host({shape.cin}, t, 2.f));
    DeviceTensor bias16 = gpu.upload(Host({shape.cin}, t, -0.4f));
    DeviceTensor mean = gpu.empty({shape.cout}, DType::f32);
    DeviceTensor invStd = gpu.empty({shape.cout}, DType::f32);
    const size_t statsBytes = bnStatsWorkspaceBytes(y.shape);
    void *statsWorkspace = gpu.allocate(statsBytes);
    float *sums = static_cast<float *>(gpu.allocate(2 * size_t(shape.cout) * sizeof(float)));
    cudaStream_t stream = gpu.resources.stream;
    double unfusedMs = -1, fusedMs = -1;
    if (plainConvMs >= 0)
      unfusedMs = streamMs(stream, [&]() -> Status {
        if (Status s = bnApply(x, weight, bias, inMean, inInvStd, /*relu=*/true, activated,
                               stream);
            !s.ok())
          return s;
        ConvBuffers b;
        b.x = activated.data;
        b.w = w.data;
        b.y = y.data;
        if (Status s = conv->run(call, b, gpu.resources); !s.ok())
          return s;
        return bnBatchStats(y, 1e-5, mean, invStd, stream, statsWorkspace, statsBytes);
      });
    if (fusedConvMs >= 0)
      fusedMs = streamMs(stream, [&]() -> Status {
        ConvBuffers b;
        b.x = x.data;
        b.w = w.data;
        b.y = y.data;
        b.scale = scale16.data;
        b.bias = bias16.data;
        b.sum = sums;
        b.sumSq = sums + shape.cout;
        if (Status s = conv->run(fusedCall, b, gpu.resources); !s.ok())
          return s;
        return bnFinalizeStats(b.sum, b.sumSq, shape.cout, numel(ys) / shape.cout, 1e-5, mean,
                               invStd, stream);
      });
    // The backward's side of the trade: without the stored activation the
    // filter gradient takes the same prologue on x.
    const double wgradMs = autotunedMs(*conv, benchCall(shape, ConvKind::backward_filter), gpu);
    const double wgradPrologueMs = autotunedMs(
        *conv, benchCall(shape, ConvKind::backward_filter_scale_bias_relu), gpu);
    const bool all = unfusedMs >= 0 && fusedMs >= 0 && wgradMs >= 0 && wgradPrologueMs >= 0;
    std::printf("%s: apply + conv + Welford %s, prologue-conv-genstats + finalize %s%s; the "
                "convolutions alone %s and %s%s; filter gradient %s, with the prologue %s; "
                "forward + filter gradient %s against %s%s\n",
                benchName(shape).c_str(), timeText(unfusedMs).c_str(), timeText(fusedMs).c_str(),
                ratioText(unfusedMs, fusedMs).c_str(), timeText(plainConvMs).c_str(),
                timeText(fusedConvMs).c_str(), ratioText(plainConvMs, fusedConvMs).c_str(),
                timeText(wgradMs).c_str(), timeText(wgradPrologueMs).c_str(),
                timeText(all ? unfusedMs + wgradMs : -1).c_str(),
                timeText(all ? fusedMs + wgradPrologueMs : -1).c_str(),
                ratioText(all ? unfusedMs + wgradMs : -1, all ? fusedMs + wgradPrologueMs : -1)
                    .c_str());
  }
}

/// The MLPerf backward pattern against what it would shorten (set
/// RN_CUDA_BENCH=1 to run; no timing asserted): per ResNet-50 bottleneck
/// and CIFAR convolution whose input is a BN + ReLU output, batch 256, f16,
/// the autotuned plain data gradient, the data gradient with the dReLU and
/// cuDNN's dBN-weight reductions (backward_data_drelu_dbn_weight), and
/// the BN backward at its input's shape with the recomputed mask
/// (bnBackward: statistics pass over g and x, finalize, dx pass over g and
/// x). The fusion replaces the statistics pass, two of the BN backward's
/// five tensor passes, at the cost of the dgrad reading x.
TEST(Conv, DgradDreluDbnTimes) {
  RN_SKIP_WITHOUT_CUDA();
  if (!std::getenv("RN_CUDA_BENCH"))
    GTEST_SKIP() << "set RN_CUDA_BENCH=1 to measure";
  auto conv = makeConv(/*autotune=*/true);
  ASSERT_TRUE(conv);
  for (const BenchConv &shape : bottleneckAndCifarConvs()) {
    Gpu gpu;
    const double plainMs = autotunedMs(*conv, benchCall(shape, ConvKind::backward_data), gpu);
    const double fusedMs =
        autotunedMs(*conv, benchCall(shape, ConvKind::backward_data_drelu_dbn_weight), gpu);
    const ConvCall call = benchCall(shape, ConvKind::backward_data);
    const Shape xs(call.x.begin(), call.x.end());
    const int64_t C = shape.cin;
    const DType t = DType::f16;
    DeviceTensor x = gpu.upload(Host(xs, t, 0.5f)), g = gpu.upload(Host(xs, t, 0.01f));
    DeviceTensor dx = gpu.empty(xs, t);
    DeviceTensor mean = gpu.upload(Host({C}, DType::f32, 0.25f));
    DeviceTensor invStd = gpu.upload(Host({C}, DType::f32, 2.f));
    DeviceTensor weight = gpu.upload(Host({C}, DType::f32, 1.f));
    DeviceTensor beta = gpu.upload(Host({C}, DType::f32, 0.1f));
    DeviceTensor weightGrad = gpu.empty({C}, DType::f32), biasGrad = gpu.empty({C}, DType::f32);
    const size_t backwardBytes = bnBackwardWorkspaceBytes(x.shape);
    void *workspace = gpu.allocate(backwardBytes);
    const double bnMs = streamMs(gpu.resources.stream, [&] {
      return bnBackward(g, nullptr, &beta, x, weight, mean, invStd, weightGrad, biasGrad, dx,
                        weightGrad, biasGrad, gpu.resources.stream, workspace, backwardBytes);
    });
    std::printf("%s: data gradient %s, with dReLU + dBN weight %s%s; BN backward at x %s\n",
                benchName(shape).c_str(), timeText(plainMs).c_str(), timeText(fusedMs).c_str(),
                ratioText(plainMs, fusedMs).c_str(), timeText(bnMs).c_str());
  }
}

} // namespace
} // namespace rn::cuda
