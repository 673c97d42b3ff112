//===- conv_test_util.h - What the convolution and GEMM tests share -*- C++ -*-===//
//
// The helpers of conv_test.cpp (ConvRunner), gemm_test.cpp (GemmRunner),
// conv_launchers_test.cpp (the launchers of ops_conv_linear.cpp, with and
// without the BN prologue), conv_fusion_test.cpp (the fused cuDNN kinds)
// and conv_bench_test.cpp (the timing benches): host tensors rounded to
// their dtype, a stream with its handles and device memory, the runners,
// the norm-wise error and its bounds, convolution parameters and the
// shapes the fused kinds are checked at, and the benches' formatting.
//
// Errors are norm-wise, ||gpu - cpu|| / ||cpu||: at most 5e-5 for f32
// (IEEE f32: TF32 would give ~1e-3), 4e-3 for f16 storage (an output
// rounding is 2^-11 relative), and for the CBR ops, whose batch norm
// divides by the batch deviation, 2e-4 and 1e-2.
//
//===----------------------------------------------------------------------===//

#ifndef RN_TEST_RUNTIME_CUDA_CONV_TEST_UTIL_H
#define RN_TEST_RUNTIME_CUDA_CONV_TEST_UTIL_H

#include "runtime/cpu/cpu_kernels.h"
#include "runtime/cuda/conv.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/stream_resources.h"
#include "cuda_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace rn::cuda::conv_test {

using cpu::Shape;
using json = nlohmann::json;
using cpu::TensorView;
using testing::numel;

inline double tolerance(DType type, bool normalized = false) {
  if (type == DType::f32)
    return normalized ? 2e-4 : 5e-5;
  return normalized ? 1e-2 : 4e-3;
}

/// A tensor on the host (floats holding values of `dtype`).
struct Host {
  Shape shape;
  DType dtype = DType::f32;
  std::vector<float> values;

  Host() = default;
  Host(Shape s, DType t, float fill = 0) : shape(std::move(s)), dtype(t) {
    values.assign(size_t(numel(shape)), fill);
  }
  TensorView view() { return TensorView{values.data(), shape, dtype}; }
};

inline Host randomHost(Shape shape, DType dtype, std::mt19937 &rng, float lo = -1,
                       float hi = 1) {
  Host h(std::move(shape), dtype);
  std::uniform_real_distribution<float> u(lo, hi);
  for (float &v : h.values)
    v = roundTo(dtype, u(rng));
  return h;
}

/// Norm-wise relative error of `got` against `want`.
inline double relativeError(const std::vector<float> &got, const std::vector<float> &want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    double d = double(got[i]) - double(want[i]);
    diff += d * d;
    norm += double(want[i]) * double(want[i]);
    if (!std::isfinite(got[i]))
      return INFINITY;
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

/// One stream with its handles and workspace, and the device memory of a
/// test (freed at the end).
class Gpu {
public:
  explicit Gpu(size_t workspaceBytes = size_t(64) << 20) {
    EXPECT_EQ(cudaStreamCreateWithFlags(&resources.stream, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(cudnnCreate(&resources.cudnn), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnSetStream(resources.cudnn, resources.stream), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtCreate(&resources.cublasLt), CUBLAS_STATUS_SUCCESS);
    resources.name = "comp1";
    resources.workspaceBytes = workspaceBytes;
    resources.workspace = allocate(workspaceBytes);
  }
  ~Gpu() {
    cudaStreamSynchronize(resources.stream);
    for (void *p : memory)
      cudaFree(p);
    cublasLtDestroy(resources.cublasLt);
    cudnnDestroy(resources.cudnn);
    cudaStreamDestroy(resources.stream);
  }

  void *allocate(size_t bytes) {
    void *p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(bytes, 256)), cudaSuccess);
    memory.push_back(p);
    return p;
  }

  DeviceTensor upload(const Host &h) {
    DeviceTensor t;
    t.dtype = h.dtype;
    t.shape = h.shape;
    size_t n = h.values.size();
    t.data = allocate(n * elementSize(h.dtype));
    std::vector<uint8_t> bytes = testing::encode(h.values, h.dtype);
    EXPECT_EQ(cudaMemcpy(t.data, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
    // A pageable copy may return before its DMA lands, and the kernels run on
    // non-blocking streams, which do not wait for the legacy stream.
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return t;
  }

  DeviceTensor empty(const Shape &shape, DType dtype) { return upload(Host(shape, dtype, NAN)); }

  std::vector<float> download(const DeviceTensor &t) {
    EXPECT_EQ(cudaStreamSynchronize(resources.stream), cudaSuccess);
    size_t n = size_t(t.numel());
    std::vector<uint8_t> bytes(n * elementSize(t.dtype));
    EXPECT_EQ(cudaMemcpy(bytes.data(), t.data, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return testing::decode(bytes, t.dtype);
  }

  StreamResources resources;

private:
  std::vector<void *> memory;
};

inline std::unique_ptr<ConvRunner> makeConv(bool autotune = false, bool deterministic = false,
                                            std::string cacheFile = {},
                                            int autotuneCandidates = 16) {
  ConvRunner::Options o;
  o.autotune = autotune;
  o.deterministic = deterministic;
  o.cacheFile = std::move(cacheFile);
  o.autotuneCandidates = autotuneCandidates;
  Result<std::unique_ptr<ConvRunner>> r = ConvRunner::create(o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? std::move(r).value() : nullptr;
}

inline std::unique_ptr<GemmRunner> makeGemm() {
  Result<std::unique_ptr<GemmRunner>> r = GemmRunner::create({});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? std::move(r).value() : nullptr;
}

#define ASSERT_OK(expr)                                                                        \
  do {                                                                                         \
    auto rn_test_status_ = (expr);                                                             \
    ASSERT_TRUE(rn_test_status_.ok()) << rn_test_status_.error().message();                    \
  } while (0)

inline cpu::Conv2dAttrs attrsOf(const ConvParams &p) {
  cpu::Conv2dAttrs a;
  a.strides = p.strides;
  a.padding = p.padding;
  a.dilation = p.dilation;
  a.groups = p.groups;
  return a;
}

inline std::array<int64_t, 4> arr(const Shape &s) { return {s[0], s[1], s[2], s[3]}; }

/// forward_stats' per-channel sums against those of the output it stored,
/// each within `relative` of the sum of |y| (sum) or of y^2 (sum of
/// squares: sums of random data can be near zero) plus `absolute`.
inline void expectSumsOfOutput(const std::vector<float> &y, const std::vector<float> &sum,
                               const std::vector<float> &sumSq, int64_t channels,
                               double relative, double absolute) {
  const int64_t rows = int64_t(y.size()) / channels;
  for (int64_t ch = 0; ch < channels; ++ch) {
    double s = 0, q = 0, a = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double v = y[size_t(r * channels + ch)];
      s += v;
      q += v * v;
      a += std::fabs(v);
    }
    EXPECT_LE(std::fabs(sum[size_t(ch)] - s), relative * a + absolute) << "channel " << ch;
    EXPECT_LE(std::fabs(sumSq[size_t(ch)] - q), relative * q + absolute) << "channel " << ch;
  }
}

inline ConvParams params(int64_t stride, int64_t pad, int64_t dilation = 1,
                         int64_t groups = 1) {
  ConvParams p;
  p.strides = {stride, stride};
  p.padding = {pad, pad};
  p.dilation = {dilation, dilation};
  p.groups = groups;
  return p;
}

/// The autotuned time of `call`'s chosen plan (ConvRunner::preparedPlanMs
/// grows by it), or -1 with cuDNN's message printed when no plan runs: the
/// timing benches below report every shape rather than stop at one.
inline double autotunedMs(ConvRunner &conv, const ConvCall &call, Gpu &gpu) {
  double before = conv.preparedPlanMs();
  Result<size_t> prepared = conv.prepare(call, gpu.resources);
  if (!prepared.ok()) {
    std::printf("  %s\n", prepared.error().message().c_str());
    return -1;
  }
  return conv.preparedPlanMs() - before;
}

/// Milliseconds per call of `body` on `stream` (CUDA events around 20
/// calls after 3 untimed ones), or -1 when a call fails.
inline double streamMs(cudaStream_t stream, const std::function<Status()> &body) {
  for (int i = 0; i < 3; ++i)
    if (!body().ok())
      return -1;
  cudaEvent_t start, stop;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess)
    return -1;
  constexpr int kCalls = 20;
  bool ok = cudaEventRecord(start, stream) == cudaSuccess;
  for (int i = 0; ok && i < kCalls; ++i)
    ok = body().ok();
  float ms = -1;
  ok = ok && cudaEventRecord(stop, stream) == cudaSuccess &&
       cudaEventSynchronize(stop) == cudaSuccess &&
       cudaEventElapsedTime(&ms, start, stop) == cudaSuccess;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ok ? double(ms) / kCalls : -1;
}

/// An autotunedMs result for the benches' lines: "0.123 ms", or "no plan".
inline std::string timeText(double ms) {
  if (ms < 0)
    return "no plan";
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", ms);
  return text;
}

/// "(x1.23)", the fused time over the plain one, or "" when either has no
/// plan.
inline std::string ratioText(double plainMs, double fusedMs) {
  if (plainMs <= 0 || fusedMs < 0)
    return "";
  char text[32];
  std::snprintf(text, sizeof text, " (x%.2f)", fusedMs / plainMs);
  return text;
}

/// The shapes the fused kinds are checked at against the CPU: a 3x3 and a
/// 1x1 stride-2 convolution, channels multiples of 8 (which cuDNN's
/// runtime-fusion engines may require).
struct FusionShape {
  Shape x, w;
  ConvParams params;
};
inline const FusionShape kFusionShapes[] = {
    {Shape{4, 12, 12, 16}, Shape{32, 3, 3, 16}, params(1, 1)},
    {Shape{4, 12, 12, 32}, Shape{64, 1, 1, 32}, params(2, 0)},
};

/// An all-f16 call of `kind` with x, w and y of these shapes.
inline ConvCall f16Call(ConvKind kind, const ConvParams &p, const Shape &xShape,
                        const Shape &wShape, const Shape &yShape) {
  ConvCall call;
  call.kind = kind;
  call.params = p;
  call.x = arr(xShape);
  call.w = arr(wShape);
  call.y = arr(yShape);
  call.xType = call.wType = call.yType = DType::f16;
  return call;
}

/// The launcher tests' fixture, one type for the files that add tests to it
/// (conv_launchers_test.cpp instantiates it for f32 and f16).
class Launchers : public ::testing::TestWithParam<DType> {};

} // namespace rn::cuda::conv_test

#endif // RN_TEST_RUNTIME_CUDA_CONV_TEST_UTIL_H
