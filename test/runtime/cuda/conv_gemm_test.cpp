//===- conv_gemm_test.cpp - cuDNN convolutions and cuBLASLt GEMMs vs the CPU ===//
//
// ConvRunner, GemmRunner, the kernels of conv_kernels.cu and the launchers
// of ops_conv_linear.cpp against the rn::cpu reference kernels, on random
// data rounded to the storage dtype. Errors are norm-wise, ||gpu - cpu|| /
// ||cpu||: at most 5e-5 for f32 (IEEE f32: TF32 would give ~1e-3), 4e-3
// for f16 storage (an output rounding is 2^-11 relative), and for the CBR
// ops, whose batch norm divides by the batch deviation, 2e-4 and 1e-2.
// Every test skips when no CUDA device answers.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/artifact.h"
#include "runtime/core/op_registry.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/conv.h"
#include "runtime/cuda/conv_kernels.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/norm_kernels.h"
#include "runtime/cuda/op_launch.h"
#include "cuda_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace rn::cuda {
namespace {

using cpu::Shape;
using json = nlohmann::json;
using cpu::TensorView;
using testing::numel;

double tolerance(DType type, bool normalized = false) {
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

Host randomHost(Shape shape, DType dtype, std::mt19937 &rng, float lo = -1, float hi = 1) {
  Host h(std::move(shape), dtype);
  std::uniform_real_distribution<float> u(lo, hi);
  for (float &v : h.values)
    v = roundTo(dtype, u(rng));
  return h;
}

/// Norm-wise relative error of `got` against `want`.
double relativeError(const std::vector<float> &got, const std::vector<float> &want) {
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

std::unique_ptr<ConvRunner> makeConv(bool autotune = false, bool deterministic = false,
                                     std::string cacheFile = {}, int autotuneCandidates = 16) {
  ConvRunner::Options o;
  o.autotune = autotune;
  o.deterministic = deterministic;
  o.cacheFile = std::move(cacheFile);
  o.autotuneCandidates = autotuneCandidates;
  Result<std::unique_ptr<ConvRunner>> r = ConvRunner::create(o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? std::move(r).value() : nullptr;
}

std::unique_ptr<GemmRunner> makeGemm() {
  Result<std::unique_ptr<GemmRunner>> r = GemmRunner::create({});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? std::move(r).value() : nullptr;
}

#define ASSERT_OK(expr)                                                                        \
  do {                                                                                         \
    auto rn_test_status_ = (expr);                                                             \
    ASSERT_TRUE(rn_test_status_.ok()) << rn_test_status_.error().message();                    \
  } while (0)

//===----------------------------------------------------------------------===//
// ConvRunner
//===----------------------------------------------------------------------===//

struct ConvCase {
  const char *name;
  Shape x, w; // NHWC, OHWI
  ConvParams params;
};

void PrintTo(const ConvCase &c, std::ostream *os) { *os << c.name; }

cpu::Conv2dAttrs attrsOf(const ConvParams &p) {
  cpu::Conv2dAttrs a;
  a.strides = p.strides;
  a.padding = p.padding;
  a.dilation = p.dilation;
  a.groups = p.groups;
  return a;
}

std::array<int64_t, 4> arr(const Shape &s) { return {s[0], s[1], s[2], s[3]}; }

/// forward_stats' per-channel sums against those of the output it stored,
/// each within `relative` of the sum of |y| (sum) or of y^2 (sum of
/// squares: sums of random data can be near zero) plus `absolute`.
void expectSumsOfOutput(const std::vector<float> &y, const std::vector<float> &sum,
                        const std::vector<float> &sumSq, int64_t channels, double relative,
                        double absolute) {
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

class ConvShapes : public ::testing::TestWithParam<std::tuple<ConvCase, DType>> {};

TEST_P(ConvShapes, MatchesTheCpu) {
  RN_SKIP_WITHOUT_CUDA();
  const auto &[c, dtype] = GetParam();
  double tol = tolerance(dtype);
  std::mt19937 rng(7);
  Gpu gpu;
  auto conv = makeConv();
  ASSERT_TRUE(conv);
  cpu::Conv2dAttrs attrs = attrsOf(c.params);
  Shape yShape;
  ASSERT_TRUE(cpu::conv2dOutputShape(c.x, c.w, attrs, yShape).ok());

  Host x = randomHost(c.x, dtype, rng), w = randomHost(c.w, dtype, rng);
  Host dy = randomHost(yShape, dtype, rng);
  Host dwAcc = randomHost(c.w, DType::f32, rng), dbAcc = randomHost({yShape[3]}, DType::f32, rng);
  DeviceTensor dX = gpu.upload(x), dW = gpu.upload(w), dDy = gpu.upload(dy);

  ConvCall call;
  call.params = c.params;
  call.x = arr(c.x);
  call.w = arr(c.w);
  call.y = arr(yShape);
  call.xType = call.wType = call.yType = dtype;

  { // forward
    call.kind = ConvKind::forward;
    Result<size_t> ws = conv->prepare(call, gpu.resources);
    ASSERT_TRUE(ws.ok()) << ws.error().message();
    EXPECT_LE(*ws, gpu.resources.workspaceBytes);
    DeviceTensor y = gpu.empty(yShape, dtype);
    ConvBuffers b;
    b.x = dX.data;
    b.w = dW.data;
    b.y = y.data;
    ASSERT_OK(conv->run(call, b, gpu.resources));
    Host want(yShape, dtype);
    ASSERT_TRUE(cpu::conv2d(x.view(), w.view(), nullptr, attrs, want.view()).ok());
    EXPECT_LE(relativeError(gpu.download(y), want.values), tol) << describe(call);
  }
  { // forward_stats: the output and its per-channel sums
    call.kind = ConvKind::forward_stats;
    ASSERT_OK(conv->prepare(call, gpu.resources));
    DeviceTensor y = gpu.empty(yShape, dtype);
    DeviceTensor sum = gpu.empty({yShape[3]}, DType::f32), sumSq = gpu.empty({yShape[3]}, DType::f32);
    ConvBuffers b;
    b.x = dX.data;
    b.w = dW.data;
    b.y = y.data;
    b.sum = static_cast<float *>(sum.data);
    b.sumSq = static_cast<float *>(sumSq.data);
    ASSERT_OK(conv->run(call, b, gpu.resources));
    std::vector<float> got = gpu.download(y), gotSum = gpu.download(sum),
                       gotSq = gpu.download(sumSq);
    Host want(yShape, dtype);
    ASSERT_TRUE(cpu::conv2d(x.view(), w.view(), nullptr, attrs, want.view()).ok());
    EXPECT_LE(relativeError(got, want.values), tol) << describe(call);
    // In f16 the sums may come from cuDNN's conv + genstats graph, which
    // sums the f32 accumulator before the output is rounded: each term is
    // then within f16's half ulp (2^-11 relative) of the stored one, so the
    // bounds are the genstats tests'. The statistics pass sums the stored
    // output itself, and f32 has no genstats graph: summation order only.
    const bool sixteenBit = dtype != DType::f32;
    expectSumsOfOutput(got, gotSum, gotSq, yShape[3], sixteenBit ? 2e-3 : 1e-5,
                       sixteenBit ? 1e-3 : 1e-6);
  }
  { // backward_data
    call.kind = ConvKind::backward_data;
    ASSERT_OK(conv->prepare(call, gpu.resources));
    DeviceTensor dx = gpu.empty(c.x, dtype);
    ConvBuffers b;
    b.w = dW.data;
    b.dy = dDy.data;
    b.dx = dx.data;
    ASSERT_OK(conv->run(call, b, gpu.resources));
    Host want(c.x, dtype);
    ASSERT_TRUE(cpu::conv2dBackwardInput(dy.view(), w.view(), attrs, want.view()).ok());
    EXPECT_LE(relativeError(gpu.download(dx), want.values), tol) << describe(call);
  }
  { // backward_filter with accumulation, into another buffer and in place
    call.kind = ConvKind::backward_filter;
    call.gradType = DType::f32;
    ASSERT_OK(conv->prepare(call, gpu.resources));
    Host want(c.w, DType::f32);
    ASSERT_TRUE(
        cpu::conv2dBackwardFilter(dy.view(), x.view(), dwAcc.view(), attrs, want.view()).ok());
    // The f32 result of f16 products: the inputs' rounding is the same on
    // both sides, only the summation order differs.
    double wtol = dtype == DType::f32 ? tol : 1e-3;
    DeviceTensor acc = gpu.upload(dwAcc), dw = gpu.empty(c.w, DType::f32);
    ConvBuffers b;
    b.x = dX.data;
    b.dy = dDy.data;
    b.dwAcc = acc.data;
    b.dw = dw.data;
    ASSERT_OK(conv->run(call, b, gpu.resources));
    EXPECT_LE(relativeError(gpu.download(dw), want.values), wtol) << describe(call);
    b.dw = acc.data; // dw aliasing dwAcc
    ASSERT_OK(conv->run(call, b, gpu.resources));
    EXPECT_LE(relativeError(gpu.download(acc), want.values), wtol) << describe(call);
  }
  { // the bias gradient: dbAcc + sum over N, H, W of dy
    int64_t channels = yShape[3], rows = numel(yShape) / channels;
    DeviceTensor acc = gpu.upload(dbAcc), db = gpu.empty({channels}, DType::f32);
    size_t bytes = columnSumsWorkspaceBytes(rows, channels);
    ASSERT_LE(bytes, gpu.resources.workspaceBytes);
    ASSERT_OK(columnSums(dDy.data, dtype, rows, channels, acc.data, db.data, DType::f32, nullptr,
                         gpu.resources.workspace, gpu.resources.workspaceBytes,
                         gpu.resources.stream));
    Host want({channels}, DType::f32);
    ASSERT_TRUE(cpu::conv2dBackwardBias(dy.view(), dbAcc.view(), want.view()).ok());
    EXPECT_LE(relativeError(gpu.download(db), want.values), 1e-6);
  }
  EXPECT_GE(conv->graphs(), 4u);
}

ConvParams params(int64_t stride, int64_t pad, int64_t dilation = 1, int64_t groups = 1) {
  ConvParams p;
  p.strides = {stride, stride};
  p.padding = {pad, pad};
  p.dilation = {dilation, dilation};
  p.groups = groups;
  return p;
}

const ConvCase kConvCases[] = {
    {"stem_3_channels", {2, 16, 16, 3}, {16, 3, 3, 3}, params(1, 1)},
    {"odd_channels", {2, 9, 11, 5}, {7, 3, 3, 5}, params(1, 1)},
    {"stride2_3x3", {2, 16, 16, 16}, {32, 3, 3, 16}, params(2, 1)},
    {"downsample_1x1_stride2", {4, 14, 14, 32}, {64, 1, 1, 32}, params(2, 0)},
    {"padding0_5x5", {2, 12, 12, 8}, {8, 5, 5, 8}, params(1, 0)},
    {"dilation2", {2, 15, 15, 8}, {8, 3, 3, 8}, params(1, 2, 2)},
    {"groups2", {2, 10, 10, 16}, {16, 3, 3, 8}, params(1, 1, 1, 2)},
    {"resnet_3x3_64", {8, 28, 28, 64}, {64, 3, 3, 64}, params(1, 1)},
};

INSTANTIATE_TEST_SUITE_P(, ConvShapes,
                         ::testing::Combine(::testing::ValuesIn(kConvCases),
                                            ::testing::Values(DType::f32, DType::f16)),
                         [](const auto &info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::string(dtypeName(std::get<1>(info.param)));
                         });

// Genstats::always: forward_stats with cuDNN's genstats in the
// convolution's graph. The sums must be those of the output it stored
// (within f16 rounding: genstats may sum the values before they are
// rounded), twice in a row, starting from buffers that hold other values
// (the zeroing that run() does; without it the sums of squares came out up
// to 2x off). Skips where cuDNN builds no such graph.
TEST(Conv, GenstatsSumsMatchTheOutput) {
  RN_SKIP_WITHOUT_CUDA();
  ConvRunner::Options options;
  options.genstats = ConvRunner::Options::Genstats::always;
  Result<std::unique_ptr<ConvRunner>> created = ConvRunner::create(options);
  ASSERT_TRUE(created.ok()) << created.error().message();
  ConvRunner &conv = **created;
  Gpu gpu;
  std::mt19937 rng(23);
  const DType dtype = DType::f16;
  Shape xs{8, 16, 16, 32}, ws{64, 3, 3, 32}, ys{8, 16, 16, 64};
  Host x = randomHost(xs, dtype, rng), w = randomHost(ws, dtype, rng);
  ConvCall call;
  call.kind = ConvKind::forward_stats;
  call.params.padding = {1, 1};
  call.x = arr(xs);
  call.w = arr(ws);
  call.y = arr(ys);
  call.xType = call.wType = call.yType = dtype;
  ASSERT_OK(conv.prepare(call, gpu.resources));
  if (conv.genstatsGraphs() == 0)
    GTEST_SKIP() << "cuDNN built no conv + genstats graph for " << describe(call);
  DeviceTensor dX = gpu.upload(x), dW = gpu.upload(w), y = gpu.empty(ys, dtype);
  const int64_t channels = ys[3];
  DeviceTensor sum = gpu.upload(Host({channels}, DType::f32, 1000.f));
  DeviceTensor sumSq = gpu.upload(Host({channels}, DType::f32, 1000.f));
  ConvBuffers b;
  b.x = dX.data;
  b.w = dW.data;
  b.y = y.data;
  b.sum = static_cast<float *>(sum.data);
  b.sumSq = static_cast<float *>(sumSq.data);
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    ASSERT_OK(conv.run(call, b, gpu.resources));
    std::vector<float> got = gpu.download(y), gotSum = gpu.download(sum),
                       gotSq = gpu.download(sumSq);
    expectSumsOfOutput(got, gotSum, gotSq, channels, 2e-3, 1e-3);
  }
}

TEST(Conv, CallCuDnnCannotRunNamesTheCall) {
  RN_SKIP_WITHOUT_CUDA();
  Gpu gpu;
  auto conv = makeConv();
  ASSERT_TRUE(conv);
  ConvCall call;
  call.x = {1, 8, 8, 4};
  call.w = {4, 3, 3, 4};
  call.y = {1, 6, 6, 4};
  call.xType = call.wType = call.yType = DType::i32; // no cuDNN engine convolves int32 data
  Result<size_t> r = conv->prepare(call, gpu.resources);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find(describe(call)), std::string::npos) << r.error().message();
  // Running it unprepared is an error too, not a crash.
  ConvBuffers b;
  EXPECT_FALSE(conv->run(call, b, gpu.resources).ok());
}

TEST(Conv, ShapesThatDoNotAgreeAreRejected) {
  RN_SKIP_WITHOUT_CUDA();
  Gpu gpu;
  auto conv = makeConv();
  ASSERT_TRUE(conv);
  ConvCall call;
  call.x = {1, 8, 8, 4};
  call.w = {4, 3, 3, 4};
  call.y = {1, 7, 7, 4}; // should be 6x6
  Result<size_t> r = conv->prepare(call, gpu.resources);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find(describe(call)), std::string::npos);
}

TEST(Conv, DeterministicWgradGivesTheSameBits) {
  RN_SKIP_WITHOUT_CUDA();
  Gpu gpu;
  auto conv = makeConv(/*autotune=*/true, /*deterministic=*/true);
  ASSERT_TRUE(conv);
  std::mt19937 rng(3);
  Host x = randomHost({16, 14, 14, 64}, DType::f16, rng), dy = randomHost({16, 14, 14, 64}, DType::f16, rng);
  ConvCall call;
  call.kind = ConvKind::backward_filter;
  call.params = params(1, 1);
  call.x = arr(x.shape);
  call.w = {64, 3, 3, 64};
  call.y = arr(dy.shape);
  call.xType = call.wType = call.yType = DType::f16;
  ASSERT_OK(conv->prepare(call, gpu.resources));
  DeviceTensor dX = gpu.upload(x), dDy = gpu.upload(dy);
  Host zero({64, 3, 3, 64}, DType::f32, 0);
  DeviceTensor acc = gpu.upload(zero), first = gpu.empty(zero.shape, DType::f32),
               second = gpu.empty(zero.shape, DType::f32);
  ConvBuffers b;
  b.x = dX.data;
  b.dy = dDy.data;
  b.dwAcc = acc.data;
  b.dw = first.data;
  ASSERT_OK(conv->run(call, b, gpu.resources));
  b.dw = second.data;
  ASSERT_OK(conv->run(call, b, gpu.resources));
  std::vector<float> a = gpu.download(first), c = gpu.download(second);
  EXPECT_EQ(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)), 0);
}

TEST(Conv, AutotuneKeepsItsChoiceInTheCacheFile) {
  RN_SKIP_WITHOUT_CUDA();
  Gpu gpu;
  std::string file = (std::filesystem::temp_directory_path() /
                      ("rn_conv_cache_" + std::to_string(::getpid()) + ".json"))
                         .string();
  std::filesystem::remove(file);
  ConvCall call;
  call.params = params(2, 0);
  call.x = {32, 28, 28, 64};
  call.w = {128, 1, 1, 64};
  call.y = {32, 14, 14, 128};
  call.xType = call.wType = call.yType = DType::f16;
  {
    auto conv = makeConv(/*autotune=*/true, false, file);
    ASSERT_TRUE(conv);
    ASSERT_OK(conv->prepare(call, gpu.resources));
    EXPECT_GT(conv->prepareSeconds(), 0.0);
  }
  std::ifstream in(file);
  ASSERT_TRUE(in.good()) << "no cache file written (a single candidate plan?)";
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(describe(call)), std::string::npos) << text;
  {
    auto conv = makeConv(/*autotune=*/true, false, file);
    ASSERT_TRUE(conv);
    ASSERT_OK(conv->prepare(call, gpu.resources));
    // The forward result is right with the cached plan.
    std::mt19937 rng(5);
    Host x = randomHost({32, 28, 28, 64}, DType::f16, rng), w = randomHost({128, 1, 1, 64}, DType::f16, rng);
    DeviceTensor dX = gpu.upload(x), dW = gpu.upload(w), y = gpu.empty({32, 14, 14, 128}, DType::f16);
    ConvBuffers b;
    b.x = dX.data;
    b.w = dW.data;
    b.y = y.data;
    ASSERT_OK(conv->run(call, b, gpu.resources));
    Host want({32, 14, 14, 128}, DType::f16);
    ASSERT_TRUE(cpu::conv2d(x.view(), w.view(), nullptr, attrsOf(call.params), want.view()).ok());
    EXPECT_LE(relativeError(gpu.download(y), want.values), tolerance(DType::f16));
  }
  std::filesystem::remove(file);
}

TEST(Conv, AutotuneTimesAtMostItsCandidateCap) {
  RN_SKIP_WITHOUT_CUDA();
  if (ConvRunner::autotuneForbiddenByEnvironment())
    GTEST_SKIP() << "RN_CONV_AUTOTUNE=0: no plan is timed";
  Gpu gpu;
  // A 3x3 f16 forward: cuDNN proposes dozens of plans for it.
  ConvCall call;
  call.params = params(1, 1);
  call.x = {32, 28, 28, 64};
  call.w = {64, 3, 3, 64};
  call.y = {32, 28, 28, 64};
  call.xType = call.wType = call.yType = DType::f16;
  auto capped = makeConv(/*autotune=*/true, false, {}, /*autotuneCandidates=*/2);
  ASSERT_TRUE(capped);
  ASSERT_OK(capped->prepare(call, gpu.resources));
  EXPECT_GE(capped->plansTimed(), 1u);
  EXPECT_LE(capped->plansTimed(), 2u);
  auto all = makeConv(/*autotune=*/true, false, {}, /*autotuneCandidates=*/0);
  ASSERT_TRUE(all);
  ASSERT_OK(all->prepare(call, gpu.resources));
  EXPECT_GT(all->plansTimed(), 2u) << "expected more than two candidates for a 3x3 forward";
  auto untimed = makeConv(/*autotune=*/false);
  ASSERT_TRUE(untimed);
  ASSERT_OK(untimed->prepare(call, gpu.resources));
  EXPECT_EQ(untimed->plansTimed(), 0u);
}

TEST(Conv, RunIsCapturableIntoACudaGraph) {
  RN_SKIP_WITHOUT_CUDA();
  Gpu gpu;
  auto conv = makeConv();
  ASSERT_TRUE(conv);
  std::mt19937 rng(11);
  Host x = randomHost({4, 16, 16, 32}, DType::f16, rng), dy = randomHost({4, 16, 16, 32}, DType::f16, rng);
  ConvCall call;
  call.kind = ConvKind::backward_filter;
  call.params = params(1, 1);
  call.x = arr(x.shape);
  call.w = {32, 3, 3, 32};
  call.y = arr(dy.shape);
  call.xType = call.wType = call.yType = DType::f16;
  ASSERT_OK(conv->prepare(call, gpu.resources));
  DeviceTensor dX = gpu.upload(x), dDy = gpu.upload(dy);
  Host zero({32, 3, 3, 32}, DType::f32, 0);
  DeviceTensor dw = gpu.upload(zero);
  ConvBuffers b;
  b.x = dX.data;
  b.dy = dDy.data;
  b.dwAcc = dw.data;
  b.dw = dw.data;
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(gpu.resources.stream, cudaStreamCaptureModeThreadLocal),
            cudaSuccess);
  Status s = conv->run(call, b, gpu.resources);
  ASSERT_EQ(cudaStreamEndCapture(gpu.resources.stream, &graph), cudaSuccess);
  ASSERT_OK(s);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, gpu.resources.stream), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, gpu.resources.stream), cudaSuccess); // accumulates twice
  Host once({32, 3, 3, 32}, DType::f32), twice({32, 3, 3, 32}, DType::f32);
  cpu::Conv2dAttrs attrs = attrsOf(call.params);
  ASSERT_TRUE(cpu::conv2dBackwardFilter(dy.view(), x.view(), zero.view(), attrs, once.view()).ok());
  ASSERT_TRUE(cpu::conv2dBackwardFilter(dy.view(), x.view(), once.view(), attrs, twice.view()).ok());
  EXPECT_LE(relativeError(gpu.download(dw), twice.values), 1e-3);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

//===----------------------------------------------------------------------===//
// GemmRunner
//===----------------------------------------------------------------------===//

class Gemm : public ::testing::TestWithParam<std::tuple<DType, bool, bool, bool, bool>> {};

// D[m,n] = op(A) op(B) (+ C) (+ bias) against a double loop.
TEST_P(Gemm, MatchesALoop) {
  RN_SKIP_WITHOUT_CUDA();
  auto [dtype, transA, transB, accumulate, bias] = GetParam();
  Gpu gpu;
  auto gemm = makeGemm();
  ASSERT_TRUE(gemm);
  std::mt19937 rng(17);
  int64_t m = 37, n = 53, k = 71;
  Host a = randomHost(transA ? Shape{k, m} : Shape{m, k}, dtype, rng);
  Host b = randomHost(transB ? Shape{n, k} : Shape{k, n}, dtype, rng);
  DType outType = accumulate ? DType::f32 : dtype;
  // cuBLASLt's bias has the output's dtype (an f16 bias with f32 output is
  // CUBLAS_STATUS_INVALID_VALUE).
  Host c = randomHost({m, n}, outType, rng), bv = randomHost({n}, outType, rng);
  GemmCall call;
  call.m = m;
  call.n = n;
  call.k = k;
  call.transA = transA;
  call.transB = transB;
  call.accumulate = accumulate;
  call.bias = bias;
  call.aType = call.bType = dtype;
  call.cType = call.dType = outType;
  call.biasType = outType;
  Result<size_t> ws = gemm->prepare(call, gpu.resources);
  ASSERT_TRUE(ws.ok()) << ws.error().message();
  DeviceTensor dA = gpu.upload(a), dB = gpu.upload(b), dC = gpu.upload(c), dBias = gpu.upload(bv);
  GemmBuffers buf;
  buf.a = dA.data;
  buf.b = dB.data;
  buf.c = dC.data;
  buf.bias = dBias.data;
  buf.d = dC.data; // D aliases C
  ASSERT_OK(gemm->run(call, buf, gpu.resources));
  std::vector<float> want(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = accumulate ? c.values[size_t(i * n + j)] : 0;
      if (bias)
        s += bv.values[size_t(j)];
      for (int64_t p = 0; p < k; ++p)
        s += double(a.values[size_t(transA ? p * m + i : i * k + p)]) *
             b.values[size_t(transB ? j * k + p : p * n + j)];
      want[size_t(i * n + j)] = roundTo(outType, float(s));
    }
  EXPECT_LE(relativeError(gpu.download(dC), want), tolerance(outType)) << describe(call);
}

INSTANTIATE_TEST_SUITE_P(, Gemm,
                         ::testing::Combine(::testing::Values(DType::f32, DType::f16),
                                            ::testing::Bool(), ::testing::Bool(),
                                            ::testing::Bool(), ::testing::Bool()));

//===----------------------------------------------------------------------===//
// Launchers (ops_conv_linear.cpp) against the CPU kernels
//===----------------------------------------------------------------------===//

/// A node with its device tensors, launched through its OpLauncher.
struct NodeRun {
  Node node;
  std::vector<DeviceTensor> operands, results;

  /// Makes the node an `op` node whose operands and results are the ODS
  /// operands and results `operandNames` and `resultNames` (single or
  /// optional ones), in the op table's order as `operands` and `results`
  /// hold them: node.info and node.layout as the loader sets them.
  Status named(const char *op, const std::vector<const char *> &operandNames,
               const std::vector<const char *> &resultNames) {
    node.op = op;
    node.info = findOp(op);
    if (!node.info || !node.info->table)
      return Error(std::string("no op ") + op);
    auto read = [&](bool isResults, const std::vector<const char *> &names,
                    ValueLayout &layout) -> Status {
      json object = json::object();
      for (size_t i = 0; i < names.size(); ++i)
        object[names[i]] = i;
      std::vector<uint64_t> ids;
      Result<ValueLayout> read = readNamedValues(*node.info->table, isResults, object,
                                                 isResults ? "result" : "operand", ids);
      if (!read.ok())
        return Error(std::string(op) + ": " + read.error().message());
      bool inOrder = ids.size() == names.size();
      for (size_t i = 0; i < ids.size() && inOrder; ++i)
        inOrder = ids[i] == i;
      if (!inOrder)
        return Error(std::string(op) + ": the " + (isResults ? "results" : "operands") +
                     " are not named once each in the op table's order");
      layout = std::move(*read);
      return Status::success();
    };
    if (Status s = read(false, operandNames, node.layout.operands); !s.ok())
      return s;
    return read(true, resultNames, node.layout.results);
  }

  /// Without `prepare`, launches only (what a captured step replays; the
  /// node must have been prepared by an earlier run).
  Status run(Gpu &gpu, ConvRunner &conv, GemmRunner &gemm, bool prepare = true) {
    const OpLauncher *launcher = findOpLauncher(node.op);
    if (!launcher)
      return Error("no launcher for " + node.op);
    if (node.layout.operands.total() != operands.size() ||
        node.layout.results.total() != results.size())
      return Error(node.op + ": the layout names " +
                   std::to_string(node.layout.operands.total()) + " operands and " +
                   std::to_string(node.layout.results.total()) + " results, the run has " +
                   std::to_string(operands.size()) + " and " + std::to_string(results.size()));
    // As the executor does: prepare, then launch, each part on its stream
    // (one launch of part -1 when the node has no parts).
    int parts = int(node.parts.size());
    for (int part = parts ? 0 : -1; part < std::max(parts, 0) || part == -1; ++part) {
      OpLaunch l{node, part, operands, results, gpu.resources, conv, gemm, 0};
      if (prepare && launcher->prepare) {
        Result<size_t> bytes = launcher->prepare(l);
        if (!bytes.ok())
          return bytes.error();
        if (*bytes > gpu.resources.workspaceBytes)
          return Error("needs more workspace than the stream has");
      }
      if (Status s = launcher->launch(l); !s.ok())
        return s;
      if (part == -1)
        break;
    }
    return Status::success();
  }
};

/// cbr_backward's ten required operands, then `more`.
std::vector<const char *> cbrBackwardOperands(std::initializer_list<const char *> more = {}) {
  std::vector<const char *> names = {"output_grad",   "input",           "filter",
                                     "conv_output",   "gamma",           "batch_mean",
                                     "batch_inv_std", "filter_grad_acc", "gamma_grad_acc",
                                     "beta_grad_acc"};
  names.insert(names.end(), more.begin(), more.end());
  return names;
}
const std::vector<const char *> kCbrBackwardResults = {
    "conv_output_grad", "input_grad", "filter_grad", "gamma_grad", "beta_grad"};
const std::vector<const char *> kCbrForwardResults = {"result", "conv_output", "batch_mean",
                                                      "batch_inv_std"};

class Launchers : public ::testing::TestWithParam<DType> {};

TEST_P(Launchers, Conv2dWithBias) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(23);
  Host x = randomHost({2, 12, 12, 6}, dtype, rng), w = randomHost({10, 3, 3, 6}, dtype, rng),
       b = randomHost({10}, dtype, rng);
  NodeRun r;
  ASSERT_OK(r.named("conv2d", {"input", "filter", "bias"}, {"result"}));
  r.node.attributes = {{"strides", {2, 2}}, {"padding", {1, 1}}};
  r.operands = {gpu.upload(x), gpu.upload(w), gpu.upload(b)};
  r.results = {gpu.empty({2, 6, 6, 10}, dtype)};
  ASSERT_OK(r.run(gpu, *conv, *gemm));
  cpu::Conv2dAttrs attrs;
  attrs.strides = {2, 2};
  attrs.padding = {1, 1};
  Host want({2, 6, 6, 10}, dtype);
  TensorView bias = b.view();
  ASSERT_TRUE(cpu::conv2d(x.view(), w.view(), &bias, attrs, want.view()).ok());
  EXPECT_LE(relativeError(gpu.download(r.results[0]), want.values), tolerance(dtype));
}

TEST_P(Launchers, Conv2dBackwardParts) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(29);
  Shape xs{2, 10, 10, 8}, ws{12, 3, 3, 8}, ys{2, 10, 10, 12};
  Host dy = randomHost(ys, dtype, rng), x = randomHost(xs, dtype, rng), w = randomHost(ws, dtype, rng);
  Host dwAcc = randomHost(ws, DType::f32, rng), dbAcc = randomHost({12}, DType::f32, rng);
  NodeRun r;
  ASSERT_OK(r.named("conv2d_backward",
                    {"output_grad", "input", "filter", "filter_grad_acc", "bias_grad_acc"},
                    {"input_grad", "filter_grad", "bias_grad"}));
  r.node.attributes = {{"strides", {1, 1}}, {"padding", {1, 1}}};
  r.node.parts = {{"weight_grad", Stream::comp1}, {"bias_grad", Stream::comp1},
                  {"input_grad", Stream::comp1}};
  r.operands = {gpu.upload(dy), gpu.upload(x), gpu.upload(w), gpu.upload(dwAcc), gpu.upload(dbAcc)};
  r.results = {gpu.empty(xs, dtype), gpu.empty(ws, DType::f32), gpu.empty({12}, DType::f32)};
  ASSERT_OK(r.run(gpu, *conv, *gemm));
  cpu::Conv2dAttrs attrs;
  attrs.padding = {1, 1};
  Host dx(xs, dtype), dw(ws, DType::f32), db({12}, DType::f32);
  TensorView dbAccView = dbAcc.view(), dxView = dx.view(), dbView = db.view();
  ASSERT_TRUE(cpu::conv2dBackward(dy.view(), x.view(), w.view(), dwAcc.view(), &dbAccView, attrs,
                                  &dxView, dw.view(), &dbView)
                  .ok());
  EXPECT_LE(relativeError(gpu.download(r.results[0]), dx.values), tolerance(dtype));
  EXPECT_LE(relativeError(gpu.download(r.results[1]), dw.values), dtype == DType::f32 ? 5e-5 : 1e-3);
  EXPECT_LE(relativeError(gpu.download(r.results[2]), db.values), 1e-6);
}

// A stem padded by rn-pad-conv-channels: x and w have 8 channels, the
// filter gradient and its accumulator the parameter's 3 (the first ones).
// The same as the CPU's, which drops the padding's part likewise.
TEST_P(Launchers, Conv2dBackwardIntoTheFirstChannels) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(37);
  Shape xs{2, 9, 9, 8}, ws{16, 7, 7, 8}, accs{16, 7, 7, 3}, ys{2, 5, 5, 16};
  Host dy = randomHost(ys, dtype, rng), x = randomHost(xs, dtype, rng), w = randomHost(ws, dtype, rng);
  Host dwAcc = randomHost(accs, dtype, rng);
  NodeRun r;
  ASSERT_OK(r.named("conv2d_backward", {"output_grad", "input", "filter", "filter_grad_acc"},
                    {"filter_grad"}));
  r.node.attributes = {{"strides", {2, 2}}, {"padding", {3, 3}}};
  r.node.parts = {{"weight_grad", Stream::comp1}};
  r.operands = {gpu.upload(dy), gpu.upload(x), gpu.upload(w), gpu.upload(dwAcc)};
  r.results = {gpu.empty(accs, dtype)};
  ASSERT_OK(r.run(gpu, *conv, *gemm));
  cpu::Conv2dAttrs attrs;
  attrs.strides = {2, 2};
  attrs.padding = {3, 3};
  Host dw(accs, dtype);
  ASSERT_TRUE(cpu::conv2dBackwardFilter(dy.view(), x.view(), dwAcc.view(), attrs, dw.view()).ok());
  EXPECT_LE(relativeError(gpu.download(r.results[0]), dw.values), dtype == DType::f32 ? 5e-5 : 2e-3);
  // An accumulator with more channels than the filter is an error naming
  // the shapes.
  NodeRun wide = r;
  wide.operands[3] = gpu.upload(randomHost({16, 7, 7, 9}, dtype, rng));
  wide.results = {gpu.empty({16, 7, 7, 9}, dtype)};
  Status s = wide.run(gpu, *conv, *gemm);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("fewer input channels"), std::string::npos)
      << s.error().message();
}

// A residual junction folded into the data gradient (rn-fold-gradient-adds):
// conv2d_backward's input_grad part with an addend (its operand
// input_grad_addend, beside the absent bias accumulator) runs cuDNN's dgrad
// with the add as its epilogue; the same as the CPU's dX + addend.
TEST_P(Launchers, Conv2dBackwardInputGradAddend) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(41);
  Shape xs{2, 10, 10, 16}, ws{32, 1, 1, 16}, ys{2, 10, 10, 32};
  Host dy = randomHost(ys, dtype, rng), x = randomHost(xs, dtype, rng), w = randomHost(ws, dtype, rng);
  Host dwAcc = randomHost(ws, DType::f32, rng), addend = randomHost(xs, dtype, rng);
  NodeRun r;
  ASSERT_OK(r.named("conv2d_backward",
                    {"output_grad", "input", "filter", "filter_grad_acc", "input_grad_addend"},
                    {"input_grad", "filter_grad"}));
  r.node.attributes = {{"strides", {1, 1}}, {"padding", {0, 0}}};
  r.node.parts = {{"weight_grad", Stream::comp1}, {"input_grad", Stream::comp1}};
  r.operands = {gpu.upload(dy), gpu.upload(x), gpu.upload(w), gpu.upload(dwAcc),
                gpu.upload(addend)};
  r.results = {gpu.empty(xs, dtype), gpu.empty(ws, DType::f32)};
  ASSERT_OK(r.run(gpu, *conv, *gemm));
  cpu::Conv2dAttrs attrs;
  Host dx(xs, dtype);
  TensorView addendView = addend.view();
  ASSERT_TRUE(cpu::conv2dBackwardInput(dy.view(), w.view(), attrs, dx.view(), &addendView).ok());
  EXPECT_LE(relativeError(gpu.download(r.results[0]), dx.values), tolerance(dtype));
}

TEST_P(Launchers, LinearWithAndWithoutBias) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(31);
  Host x = randomHost({24, 40}, dtype, rng), w = randomHost({10, 40}, dtype, rng),
       b = randomHost({10}, dtype, rng);
  for (bool withBias : {false, true}) {
    NodeRun r;
    std::vector<const char *> names = {"input", "weight"};
    if (withBias)
      names.push_back("bias");
    ASSERT_OK(r.named("linear", names, {"result"}));
    r.operands = {gpu.upload(x), gpu.upload(w)};
    if (withBias)
      r.operands.push_back(gpu.upload(b));
    r.results = {gpu.empty({24, 10}, dtype)};
    ASSERT_OK(r.run(gpu, *conv, *gemm));
    Host want({24, 10}, dtype);
    TensorView bias = b.view();
    ASSERT_TRUE(cpu::linear(x.view(), w.view(), withBias ? &bias : nullptr, want.view()).ok());
    EXPECT_LE(relativeError(gpu.download(r.results[0]), want.values), tolerance(dtype))
        << (withBias ? "with bias" : "without bias");
  }
}

TEST_P(Launchers, LinearBackwardParts) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(37);
  Host dy = randomHost({24, 10}, dtype, rng), x = randomHost({24, 40}, dtype, rng),
       w = randomHost({10, 40}, dtype, rng);
  Host dwAcc = randomHost({10, 40}, DType::f32, rng), dbAcc = randomHost({10}, DType::f32, rng);
  for (bool withBias : {false, true}) {
    NodeRun r;
    if (withBias)
      ASSERT_OK(r.named("linear_backward",
                        {"output_grad", "input", "weight", "weight_grad_acc", "bias_grad_acc"},
                        {"input_grad", "weight_grad", "bias_grad"}));
    else
      ASSERT_OK(r.named("linear_backward", {"output_grad", "input", "weight", "weight_grad_acc"},
                        {"input_grad", "weight_grad"}));
    r.node.parts = {{"weight_grad", Stream::comp1}, {"input_grad", Stream::comp1}};
    if (withBias)
      r.node.parts.insert(r.node.parts.begin() + 1, Part{"bias_grad", Stream::comp1});
    r.operands = {gpu.upload(dy), gpu.upload(x), gpu.upload(w), gpu.upload(dwAcc)};
    r.results = {gpu.empty({24, 40}, dtype), gpu.empty({10, 40}, DType::f32)};
    if (withBias) {
      r.operands.push_back(gpu.upload(dbAcc));
      r.results.push_back(gpu.empty({10}, DType::f32));
    }
    ASSERT_OK(r.run(gpu, *conv, *gemm));
    Host dx({24, 40}, dtype), dw({10, 40}, DType::f32), db({10}, DType::f32);
    TensorView dbAccView = dbAcc.view(), dxView = dx.view(), dbView = db.view();
    ASSERT_TRUE(cpu::linearBackward(dy.view(), x.view(), w.view(), dwAcc.view(),
                                    withBias ? &dbAccView : nullptr, &dxView, dw.view(),
                                    withBias ? &dbView : nullptr)
                    .ok());
    EXPECT_LE(relativeError(gpu.download(r.results[0]), dx.values), tolerance(dtype));
    EXPECT_LE(relativeError(gpu.download(r.results[1]), dw.values),
              dtype == DType::f32 ? 5e-5 : 1e-3);
    if (withBias) {
      EXPECT_LE(relativeError(gpu.download(r.results[2]), db.values), 1e-6);
    }
  }
}

TEST_P(Launchers, CbrForwardBackwardInference) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  double tol = tolerance(dtype, /*normalized=*/true);
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(41);
  Shape xs{4, 12, 12, 16}, ws{32, 3, 3, 16}, ys{4, 6, 6, 32};
  Host x = randomHost(xs, dtype, rng), w = randomHost(ws, dtype, rng);
  Host gamma = randomHost({32}, DType::f32, rng, 0.5f, 1.5f), beta = randomHost({32}, DType::f32, rng);
  json attrs = {{"strides", {2, 2}}, {"padding", {1, 1}}, {"epsilon", 1e-5}, {"relu", true}};
  cpu::Conv2dAttrs cattrs;
  cattrs.strides = {2, 2};
  cattrs.padding = {1, 1};

  // Forward.
  Host y(ys, dtype), convOut(ys, dtype), mean({32}, DType::f32), invStd({32}, DType::f32);
  ASSERT_TRUE(cpu::cbrForward(x.view(), w.view(), gamma.view(), beta.view(), cattrs, 1e-5, true,
                              y.view(), convOut.view(), mean.view(), invStd.view())
                  .ok());
  NodeRun f;
  ASSERT_OK(f.named("cbr_forward", {"input", "filter", "gamma", "beta"}, kCbrForwardResults));
  f.node.attributes = attrs;
  f.operands = {gpu.upload(x), gpu.upload(w), gpu.upload(gamma), gpu.upload(beta)};
  f.results = {gpu.empty(ys, dtype), gpu.empty(ys, dtype), gpu.empty({32}, DType::f32),
               gpu.empty({32}, DType::f32)};
  ASSERT_OK(f.run(gpu, *conv, *gemm));
  EXPECT_LE(relativeError(gpu.download(f.results[1]), convOut.values), tolerance(dtype));
  EXPECT_LE(relativeError(gpu.download(f.results[2]), mean.values), tol);
  EXPECT_LE(relativeError(gpu.download(f.results[3]), invStd.values), tol);
  EXPECT_LE(relativeError(gpu.download(f.results[0]), y.values), tol);

  // The same forward with the statistics from a conv + genstats graph
  // (ConvRunner::Options::Genstats::always) where cuDNN builds one, else by the
  // default path: the same results within the tolerance either way.
  {
    ConvRunner::Options genstatsOptions;
    genstatsOptions.genstats = ConvRunner::Options::Genstats::always;
    Result<std::unique_ptr<ConvRunner>> genstatsConv = ConvRunner::create(genstatsOptions);
    ASSERT_TRUE(genstatsConv.ok()) << genstatsConv.error().message();
    NodeRun g;
    g.node = f.node;
    g.operands = f.operands;
    g.results = {gpu.empty(ys, dtype), gpu.empty(ys, dtype), gpu.empty({32}, DType::f32),
                 gpu.empty({32}, DType::f32)};
    ASSERT_OK(g.run(gpu, **genstatsConv, *gemm));
    std::printf("cbr_forward with Genstats::always: %zu genstats graphs built\n",
                (*genstatsConv)->genstatsGraphs());
    EXPECT_LE(relativeError(gpu.download(g.results[1]), convOut.values), tolerance(dtype));
    EXPECT_LE(relativeError(gpu.download(g.results[2]), mean.values), tol);
    EXPECT_LE(relativeError(gpu.download(g.results[3]), invStd.values), tol);
    EXPECT_LE(relativeError(gpu.download(g.results[0]), y.values), tol);
  }

  // Genstats::faster (the default) with autotuning: the statistics path
  // is measured at load and chosen for the call (one choice), the results
  // are the CPU's either way, and a second runner on the same cache file
  // takes the same path without measuring again. With autotuning off by
  // the environment nothing is measured or written, so there is no choice
  // to check.
  if (ConvRunner::autotuneForbiddenByEnvironment()) {
    std::printf("cbr_forward %s with Genstats::faster: not measured (RN_CONV_AUTOTUNE=0)\n",
                dtypeName(dtype).data());
  } else {
    const std::string cache = (std::filesystem::temp_directory_path() /
                               ("rn-genstats-choice-" + std::to_string(::getpid()) + "-" +
                                std::string(dtypeName(dtype)) + ".json"))
                                  .string();
    std::remove(cache.c_str());
    bool chosen[2] = {false, false};
    for (int load = 0; load < 2; ++load) {
      auto measured = makeConv(/*autotune=*/true, /*deterministic=*/false, cache);
      ASSERT_TRUE(measured);
      NodeRun g;
      g.node = f.node;
      g.operands = f.operands;
      g.results = {gpu.empty(ys, dtype), gpu.empty(ys, dtype), gpu.empty({32}, DType::f32),
                   gpu.empty({32}, DType::f32)};
      ASSERT_OK(g.run(gpu, *measured, *gemm));
      // One choice where cuDNN built the genstats graph (f16), none where it
      // did not (f32: the statistics pass, nothing to choose).
      EXPECT_EQ(measured->statsChoices(), measured->genstatsGraphs() > 0 ? 1u : 0u);
      chosen[load] = measured->genstatsChoices() == 1;
      EXPECT_LE(relativeError(gpu.download(g.results[2]), mean.values), tol);
      EXPECT_LE(relativeError(gpu.download(g.results[3]), invStd.values), tol);
      EXPECT_LE(relativeError(gpu.download(g.results[0]), y.values), tol);
    }
    EXPECT_EQ(chosen[0], chosen[1]);
    std::ifstream in(cache);
    const json cached = json::parse(in);
    size_t choices = 0;
    for (const auto &[key, value] : cached.items())
      if (key.find(" | statistics") != std::string::npos) {
        ++choices;
        EXPECT_EQ(value.at("genstats").get<bool>(), chosen[0]) << key;
        EXPECT_GT(value.at("plain_ms").get<double>(), 0.0) << key;
      }
    // f32 has no genstats graph: nothing to choose, nothing remembered.
    EXPECT_LE(choices, 1u);
    std::printf("cbr_forward %s with Genstats::faster: %s\n", dtypeName(dtype).data(),
                choices ? (chosen[0] ? "genstats chosen" : "statistics pass chosen")
                        : "no genstats graph");
    std::remove(cache.c_str());
  }

  // Backward, from the CPU's forward values, with the ReLU result.
  Host dy = randomHost(ys, dtype, rng), dwAcc = randomHost(ws, DType::f32, rng);
  Host dgAcc = randomHost({32}, DType::f32, rng), dbAcc = randomHost({32}, DType::f32, rng);
  Host convGrad(ys, dtype), dx(xs, dtype), dw(ws, DType::f32), dg({32}, DType::f32),
      db({32}, DType::f32);
  TensorView relu = y.view(), dxView = dx.view();
  ASSERT_TRUE(cpu::cbrBackward(dy.view(), x.view(), w.view(), convOut.view(), gamma.view(),
                               mean.view(), invStd.view(), dwAcc.view(), dgAcc.view(),
                               dbAcc.view(), &relu, cattrs, convGrad.view(), &dxView, dw.view(),
                               dg.view(), db.view())
                  .ok());
  NodeRun b;
  ASSERT_OK(b.named("cbr_backward", cbrBackwardOperands({"relu_output"}), kCbrBackwardResults));
  b.node.attributes = attrs;
  b.node.parts = {{"bn_grad", Stream::comp1}, {"weight_grad", Stream::comp1},
                  {"input_grad", Stream::comp1}};
  b.operands = {gpu.upload(dy),     gpu.upload(x),     gpu.upload(w),     gpu.upload(convOut),
                gpu.upload(gamma),  gpu.upload(mean),  gpu.upload(invStd), gpu.upload(dwAcc),
                gpu.upload(dgAcc),  gpu.upload(dbAcc), gpu.upload(y)};
  // The backward's results, empty, and their check against the CPU's.
  auto backwardResults = [&] {
    return std::vector<DeviceTensor>{gpu.empty(ys, dtype), gpu.empty(xs, dtype),
                                     gpu.empty(ws, DType::f32), gpu.empty({32}, DType::f32),
                                     gpu.empty({32}, DType::f32)};
  };
  auto expectBackward = [&](const std::vector<DeviceTensor> &results) {
    EXPECT_LE(relativeError(gpu.download(results[0]), convGrad.values), tol);
    EXPECT_LE(relativeError(gpu.download(results[1]), dx.values), tol);
    EXPECT_LE(relativeError(gpu.download(results[2]), dw.values), tol);
    EXPECT_LE(relativeError(gpu.download(results[3]), dg.values), tol);
    EXPECT_LE(relativeError(gpu.download(results[4]), db.values), tol);
  };
  b.results = backwardResults();
  ASSERT_OK(b.run(gpu, *conv, *gemm));
  expectBackward(b.results);

  // The same with the mask recomputed from the convolution output and beta
  // (relu_recompute): the CPU forward normalized in double, so only values
  // within rounding of zero may be masked differently.
  NodeRun recomputed;
  recomputed.node = b.node;
  ASSERT_OK(
      recomputed.named("cbr_backward", cbrBackwardOperands({"relu_beta"}), kCbrBackwardResults));
  recomputed.operands = b.operands;
  recomputed.operands[10] = gpu.upload(beta);
  recomputed.results = backwardResults();
  ASSERT_OK(recomputed.run(gpu, *conv, *gemm));
  expectBackward(recomputed.results);

  // Inference, with running statistics.
  Host rm = randomHost({32}, DType::f32, rng), rv = randomHost({32}, DType::f32, rng, 0.5f, 2.0f);
  Host yi(ys, dtype);
  ASSERT_TRUE(cpu::cbrInference(x.view(), w.view(), gamma.view(), beta.view(), rm.view(),
                                rv.view(), cattrs, 1e-5, true, yi.view())
                  .ok());
  NodeRun inf;
  ASSERT_OK(inf.named("cbr_inference",
                      {"input", "filter", "gamma", "beta", "running_mean", "running_var"},
                      {"result"}));
  inf.node.attributes = attrs;
  inf.operands = {gpu.upload(x),    gpu.upload(w),  gpu.upload(gamma),
                  gpu.upload(beta), gpu.upload(rm), gpu.upload(rv)};
  inf.results = {gpu.empty(ys, dtype)};
  ASSERT_OK(inf.run(gpu, *conv, *gemm));
  EXPECT_LE(relativeError(gpu.download(inf.results[0]), yi.values), tol);
}

INSTANTIATE_TEST_SUITE_P(, Launchers, ::testing::Values(DType::f32, DType::f16),
                         [](const auto &info) { return std::string(dtypeName(info.param)); });

/// The autotuned time of `call`'s chosen plan (ConvRunner::preparedPlanMs
/// grows by it), or -1 with cuDNN's message printed when no plan runs: the
/// timing benches below report every shape rather than stop at one.
double autotunedMs(ConvRunner &conv, const ConvCall &call, Gpu &gpu) {
  double before = conv.preparedPlanMs();
  Result<size_t> prepared = conv.prepare(call, gpu.resources);
  if (!prepared.ok()) {
    std::printf("  %s\n", prepared.error().message().c_str());
    return -1;
  }
  return conv.preparedPlanMs() - before;
}

/// An autotunedMs result for the benches' lines: "0.123 ms", or "no plan".
std::string timeText(double ms) {
  if (ms < 0)
    return "no plan";
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", ms);
  return text;
}

/// "(x1.23)", the fused time over the plain one, or "" when either has no
/// plan.
std::string ratioText(double plainMs, double fusedMs) {
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
const FusionShape kFusionShapes[] = {
    {Shape{4, 12, 12, 16}, Shape{32, 3, 3, 16}, params(1, 1)},
    {Shape{4, 12, 12, 32}, Shape{64, 1, 1, 32}, params(2, 0)},
};

/// An all-f16 call of `kind` with x, w and y of these shapes.
ConvCall f16Call(ConvKind kind, const ConvParams &p, const Shape &xShape, const Shape &wShape,
                 const Shape &yShape) {
  ConvCall call;
  call.kind = kind;
  call.params = p;
  call.x = arr(xShape);
  call.w = arr(wShape);
  call.y = arr(yShape);
  call.xType = call.wType = call.yType = DType::f16;
  return call;
}

// Tests that autotuning times its candidates in the scratch it is given
// (a program's activations before the first step) and allocates nothing,
// that a call whose buffers do not fit allocates them as without one, and
// that the plan chosen in the scratch runs on the call's own buffers.
TEST(Conv, AutotuningTimesInTheScratchItIsGiven) {
  RN_SKIP_WITHOUT_CUDA();
  if (ConvRunner::autotuneForbiddenByEnvironment())
    GTEST_SKIP() << "RN_CONV_AUTOTUNE=0: no plan is timed";
  Gpu gpu;
  std::mt19937 rng(41);
  const Shape xs{8, 16, 16, 32}, ws{32, 3, 3, 32};
  const ConvCall call = f16Call(ConvKind::forward, params(1, 1), xs, ws, xs);
  const size_t scratchBytes = size_t(4) << 20;
  void *scratch = gpu.allocate(scratchBytes);
  ASSERT_EQ(cudaMemset(scratch, 0, scratchBytes), cudaSuccess);

  auto without = makeConv(/*autotune=*/true);
  ASSERT_TRUE(without);
  ASSERT_OK(without->prepare(call, gpu.resources));
  EXPECT_GT(without->autotuneAllocatedBytes(), 0u);

  auto tooSmall = makeConv(/*autotune=*/true);
  ASSERT_TRUE(tooSmall);
  tooSmall->setAutotuneScratch(scratch, 4096);
  ASSERT_OK(tooSmall->prepare(call, gpu.resources));
  EXPECT_GT(tooSmall->autotuneAllocatedBytes(), 0u);

  auto within = makeConv(/*autotune=*/true);
  ASSERT_TRUE(within);
  within->setAutotuneScratch(scratch, scratchBytes);
  ASSERT_OK(within->prepare(call, gpu.resources));
  within->setAutotuneScratch(nullptr, 0);
  EXPECT_EQ(within->autotuneAllocatedBytes(), 0u);
  EXPECT_GE(within->plansTimed(), 1u);
  uint8_t first = 0;
  ASSERT_EQ(cudaMemcpy(&first, scratch, 1, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(first, 0x3c) << "the timing buffers were not carved from the scratch";

  Host x = randomHost(xs, DType::f16, rng), w = randomHost(ws, DType::f16, rng);
  Host want(xs, DType::f16);
  ASSERT_TRUE(cpu::conv2d(x.view(), w.view(), nullptr, attrsOf(call.params), want.view()).ok());
  DeviceTensor dX = gpu.upload(x), dW = gpu.upload(w), y = gpu.empty(xs, DType::f16);
  ConvBuffers b;
  b.x = dX.data;
  b.w = dW.data;
  b.y = y.data;
  ASSERT_OK(within->run(call, b, gpu.resources));
  EXPECT_LE(relativeError(gpu.download(y), want.values), tolerance(DType::f16));
}

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

//===----------------------------------------------------------------------===//
// The launchers of rn-fuse-bn-prologue: conv_bn_stats and the prologue
// forms of cbr_forward and cbr_backward, against the CPU's compositions
// (cpu_fused.cpp), with the CBR launcher test's bounds. The genstats sums
// are float atomics (not bitwise); the masks are bit for bit the CPU's
// (NormKernelsTest.CbrPrologueMaskMatchesCpuMask).
//===----------------------------------------------------------------------===//

/// A convolution node's attributes for `p`, with the BN's epsilon.
json convNodeAttrs(const ConvParams &p) {
  return {{"strides", {p.strides[0], p.strides[1]}},
          {"padding", {p.padding[0], p.padding[1]}},
          {"dilation", {p.dilation[0], p.dilation[1]}},
          {"groups", p.groups},
          {"epsilon", 1e-5}};
}

bool mentions(const Status &s, const char *text) {
  return !s.ok() && s.error().message().find(text) != std::string::npos;
}

/// Captures the launches of `r` (prepared by an earlier run) into a CUDA
/// graph, as the cuda-graph executor captures a step, and replays it
/// twice, after filling the results with NaN so that stale values cannot
/// pass.
Status replayedInAGraph(NodeRun &r, Gpu &gpu, ConvRunner &conv, GemmRunner &gemm) {
  cudaStream_t stream = gpu.resources.stream;
  for (const DeviceTensor &t : r.results)
    if (cudaMemsetAsync(t.data, 0xff, size_t(t.numel()) * elementSize(t.dtype), stream) !=
        cudaSuccess)
      return Error("cudaMemsetAsync failed");
  cudaGraph_t graph = nullptr;
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
    return Error("cudaStreamBeginCapture failed");
  Status launched = r.run(gpu, conv, gemm, /*prepare=*/false);
  cudaError_t e = cudaStreamEndCapture(stream, &graph);
  if (!launched.ok() || e != cudaSuccess) {
    if (graph)
      cudaGraphDestroy(graph);
    return launched.ok() ? Error(std::string("capture: ") + cudaGetErrorString(e)) : launched;
  }
  cudaGraphExec_t exec = nullptr;
  e = cudaGraphInstantiate(&exec, graph, 0);
  for (int replay = 0; replay < 2 && e == cudaSuccess; ++replay)
    e = cudaGraphLaunch(exec, stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(stream);
  if (exec)
    cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess)
    return Error(std::string("replay: ") + cudaGetErrorString(e));
  return Status::success();
}

/// The prologue's per-channel scale and bias (what rn.bn_scale_bias would
/// give the next convolution), random in the ranges of a BN's.
struct PrologueParams {
  Host scale, bias;
};
PrologueParams randomPrologue(int64_t channels, DType dtype, std::mt19937 &rng) {
  return {randomHost({channels}, dtype, rng, 0.5f, 1.5f),
          randomHost({channels}, dtype, rng, -0.5f, 0.5f)};
}

// conv_bn_stats through its launcher against cpu::convBnStats at
// kFusionShapes: without a prologue (conv + the Welford pass, and conv +
// genstats with a runner that tries it) and with one
// (forward_scale_bias_relu_stats, bnFinalizeStats of its sums), the latter
// also captured into a CUDA graph and replayed twice (its sums start from
// zero on every replay). The prologue takes f16 only: with f32 operands it
// is the launcher's "needs f16 prologue" error. A prologue graph cuDNN
// cannot plan (here an f32 filter) fails prepare with an error that names
// the op and says to compile without fuse-bn-prologue.
TEST_P(Launchers, ConvBnStatsWithAndWithoutPrologue) {
  RN_SKIP_WITHOUT_CUDA();
  const DType dtype = GetParam();
  const double tol = tolerance(dtype, /*normalized=*/true);
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  ConvRunner::Options genstatsOptions;
  genstatsOptions.genstats = ConvRunner::Options::Genstats::always;
  Result<std::unique_ptr<ConvRunner>> genstats = ConvRunner::create(genstatsOptions);
  ASSERT_TRUE(genstats.ok()) << genstats.error().message();
  std::mt19937 rng(43);
  for (const FusionShape &f : kFusionShapes) {
    const cpu::Conv2dAttrs attrs = attrsOf(f.params);
    Shape ys;
    ASSERT_TRUE(cpu::conv2dOutputShape(f.x, f.w, attrs, ys).ok());
    const int64_t channels = f.w[0];
    Host x = randomHost(f.x, dtype, rng), w = randomHost(f.w, dtype, rng);
    PrologueParams p = randomPrologue(f.x[3], dtype, rng);
    const char *variants[] = {"conv + Welford", "conv + genstats runner", "prologue"};
    for (int variant = 0; variant < 3; ++variant) {
      const bool prologue = variant == 2;
      ConvRunner &runner = variant == 1 ? **genstats : *conv;
      const std::string what = std::string(variants[variant]) + " x" +
                               detail::shapeString(f.x) + " w" + detail::shapeString(f.w);
      SCOPED_TRACE(what);
      NodeRun r;
      std::vector<const char *> names = {"input", "filter"};
      if (prologue)
        names.insert(names.end(), {"prologue_scale", "prologue_bias"});
      ASSERT_OK(r.named("conv_bn_stats", names, {"conv_output", "batch_mean", "batch_inv_std"}));
      r.node.attributes = convNodeAttrs(f.params);
      r.operands = {gpu.upload(x), gpu.upload(w)};
      if (prologue) {
        r.operands.push_back(gpu.upload(p.scale));
        r.operands.push_back(gpu.upload(p.bias));
      }
      r.results = {gpu.empty(ys, dtype), gpu.empty({channels}, DType::f32),
                   gpu.empty({channels}, DType::f32)};
      Status s = r.run(gpu, runner, *gemm);
      if (prologue && dtype != DType::f16) {
        EXPECT_TRUE(mentions(s, "conv_bn_stats: needs f16 prologue"))
            << (s.ok() ? "ran" : s.error().message());
        continue;
      }
      if (prologue && mentions(s, "without fuse-bn-prologue"))
        GTEST_SKIP() << "no plan for the prologue graph: " << s.error().message();
      ASSERT_OK(s);
      Host convOut(ys, dtype), mean({channels}, DType::f32), invStd({channels}, DType::f32);
      TensorView scale = p.scale.view(), bias = p.bias.view();
      ASSERT_TRUE(cpu::convBnStats(x.view(), w.view(), prologue ? &scale : nullptr,
                                   prologue ? &bias : nullptr, attrs, 1e-5, convOut.view(),
                                   mean.view(), invStd.view())
                      .ok());
      auto expectTheCpus = [&](const char *how) {
        const double eConv = relativeError(gpu.download(r.results[0]), convOut.values);
        const double eMean = relativeError(gpu.download(r.results[1]), mean.values);
        const double eInvStd = relativeError(gpu.download(r.results[2]), invStd.values);
        std::printf("conv_bn_stats %s %s %s: conv_output %.1e, batch_mean %.1e, "
                    "batch_inv_std %.1e\n",
                    what.c_str(), std::string(dtypeName(dtype)).c_str(), how, eConv, eMean,
                    eInvStd);
        EXPECT_LE(eConv, tolerance(dtype)) << how;
        EXPECT_LE(eMean, tol) << how;
        EXPECT_LE(eInvStd, tol) << how;
      };
      expectTheCpus("launched");
      if (prologue) {
        ASSERT_OK(replayedInAGraph(r, gpu, runner, *gemm));
        expectTheCpus("replayed in a graph");
      }
    }
    if (dtype != DType::f16)
      continue;
    NodeRun unplanned;
    ASSERT_OK(unplanned.named("conv_bn_stats", {"input", "filter", "prologue_scale", "prologue_bias"},
                              {"conv_output", "batch_mean", "batch_inv_std"}));
    unplanned.node.attributes = convNodeAttrs(f.params);
    unplanned.operands = {gpu.upload(x), gpu.upload(randomHost(f.w, DType::f32, rng)),
                          gpu.upload(p.scale), gpu.upload(p.bias)};
    unplanned.results = {gpu.empty(ys, dtype), gpu.empty({channels}, DType::f32),
                         gpu.empty({channels}, DType::f32)};
    Status s = unplanned.run(gpu, *conv, *gemm);
    if (s.ok())
      std::printf("conv_bn_stats: cuDNN planned the prologue graph with an f32 filter too\n");
    else
      EXPECT_TRUE(mentions(s, "conv_bn_stats") &&
                  mentions(s, "compile the artifact without fuse-bn-prologue"))
          << s.error().message();
  }
}

// cbr_forward with a prologue (6 operands) through its launcher against
// cpu::cbrForward's prologue form at kFusionShapes: the convolution of the
// previous layer's BN apply + ReLU (forward_scale_bias_relu_stats), the
// statistics from its genstats sums, then the apply with the ReLU; also
// replayed in a CUDA graph. f32 operands are the "needs f16 prologue"
// error; half a prologue (prologue_scale without prologue_bias) never
// reaches a launcher: the loader's registry refuses it.
TEST_P(Launchers, CbrForwardWithPrologue) {
  RN_SKIP_WITHOUT_CUDA();
  const DType dtype = GetParam();
  const double tol = tolerance(dtype, /*normalized=*/true);
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(47);
  for (const FusionShape &f : kFusionShapes) {
    SCOPED_TRACE("x" + detail::shapeString(f.x) + " w" + detail::shapeString(f.w));
    const cpu::Conv2dAttrs attrs = attrsOf(f.params);
    Shape ys;
    ASSERT_TRUE(cpu::conv2dOutputShape(f.x, f.w, attrs, ys).ok());
    const int64_t channels = f.w[0];
    Host x = randomHost(f.x, dtype, rng), w = randomHost(f.w, dtype, rng);
    Host gamma = randomHost({channels}, DType::f32, rng, 0.5f, 1.5f);
    Host beta = randomHost({channels}, DType::f32, rng);
    PrologueParams p = randomPrologue(f.x[3], dtype, rng);
    NodeRun r;
    ASSERT_OK(r.named("cbr_forward",
                      {"input", "filter", "gamma", "beta", "prologue_scale", "prologue_bias"},
                      kCbrForwardResults));
    r.node.attributes = convNodeAttrs(f.params);
    r.node.attributes["relu"] = true;
    r.operands = {gpu.upload(x),    gpu.upload(w),       gpu.upload(gamma),
                  gpu.upload(beta), gpu.upload(p.scale), gpu.upload(p.bias)};
    r.results = {gpu.empty(ys, dtype), gpu.empty(ys, dtype), gpu.empty({channels}, DType::f32),
                 gpu.empty({channels}, DType::f32)};
    NodeRun half = r;
    half.operands.pop_back();
    ASSERT_OK(half.named("cbr_forward", {"input", "filter", "gamma", "beta", "prologue_scale"},
                         kCbrForwardResults));
    Status h = half.node.info->verify({half.node.layout, half.node.attributes});
    EXPECT_TRUE(
        mentions(h, "operand \"prologue_scale\" is present without operand \"prologue_bias\""))
        << (h.ok() ? "verified" : h.error().message());
    Status s = r.run(gpu, *conv, *gemm);
    if (dtype != DType::f16) {
      EXPECT_TRUE(mentions(s, "cbr_forward: needs f16 prologue"))
          << (s.ok() ? "ran" : s.error().message());
      continue;
    }
    if (mentions(s, "without fuse-bn-prologue"))
      GTEST_SKIP() << "no plan for the prologue graph: " << s.error().message();
    ASSERT_OK(s);
    Host y(ys, dtype), convOut(ys, dtype), mean({channels}, DType::f32),
        invStd({channels}, DType::f32);
    TensorView scale = p.scale.view(), bias = p.bias.view();
    ASSERT_TRUE(cpu::cbrForward(x.view(), w.view(), gamma.view(), beta.view(), &scale, &bias,
                                attrs, 1e-5, true, y.view(), convOut.view(), mean.view(),
                                invStd.view())
                    .ok());
    for (const char *how : {"launched", "replayed in a graph"}) {
      if (std::string(how) != "launched")
        ASSERT_OK(replayedInAGraph(r, gpu, *conv, *gemm));
      const double eConv = relativeError(gpu.download(r.results[1]), convOut.values);
      const double eMean = relativeError(gpu.download(r.results[2]), mean.values);
      const double eInvStd = relativeError(gpu.download(r.results[3]), invStd.values);
      const double eY = relativeError(gpu.download(r.results[0]), y.values);
      std::printf("cbr_forward with a prologue x%s w%s %s: result %.1e, conv_output %.1e, "
                  "batch_mean %.1e, batch_inv_std %.1e\n",
                  detail::shapeString(f.x).c_str(), detail::shapeString(f.w).c_str(), how, eY,
                  eConv, eMean, eInvStd);
      EXPECT_LE(eConv, tolerance(dtype)) << how;
      EXPECT_LE(eMean, tol) << how;
      EXPECT_LE(eInvStd, tol) << how;
      EXPECT_LE(eY, tol) << how;
    }
  }
}

// cbr_backward's rn-fuse-bn-prologue forms through its launcher, part by
// part, against cpu::cbrBackward with the same options, at kFusionShapes,
// from the CPU forward's values (of a prologue-carrying cbr_forward):
// prologue_mask (relu_recompute's mask in the prologue's rounding: the
// activation it masks was never stored), input_prologue (the filter
// gradient at the prologue's activation of x, backward_filter_scale_bias_relu,
// with the ReLU result as the mask), and both with an input gradient
// addend (a middle layer of a fused chain: 14 operands, the addend last).
// input_prologue takes f16 only (f32: the "needs f16 prologue" error of
// the weight_grad part); prologue_mask runs for either dtype.
TEST_P(Launchers, CbrBackwardPrologueForms) {
  RN_SKIP_WITHOUT_CUDA();
  const DType dtype = GetParam();
  const double tol = tolerance(dtype, /*normalized=*/true);
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(53);
  for (const FusionShape &f : kFusionShapes) {
    const cpu::Conv2dAttrs attrs = attrsOf(f.params);
    Shape ys;
    ASSERT_TRUE(cpu::conv2dOutputShape(f.x, f.w, attrs, ys).ok());
    const int64_t channels = f.w[0];
    const Shape cs{channels};
    Host x = randomHost(f.x, dtype, rng), w = randomHost(f.w, dtype, rng);
    Host gamma = randomHost(cs, DType::f32, rng, -1.5f, 1.5f);
    Host beta = randomHost(cs, DType::f32, rng, -0.1f, 0.1f);
    PrologueParams p = randomPrologue(f.x[3], dtype, rng);
    TensorView scale = p.scale.view(), bias = p.bias.view();
    Host y(ys, dtype), convOut(ys, dtype), mean(cs, DType::f32), invStd(cs, DType::f32);
    ASSERT_TRUE(cpu::cbrForward(x.view(), w.view(), gamma.view(), beta.view(), &scale, &bias,
                                attrs, 1e-5, true, y.view(), convOut.view(), mean.view(),
                                invStd.view())
                    .ok());
    Host dy = randomHost(ys, dtype, rng), dwAcc = randomHost(f.w, DType::f32, rng);
    Host dgAcc = randomHost(cs, DType::f32, rng), dbAcc = randomHost(cs, DType::f32, rng);
    Host addend = randomHost(f.x, dtype, rng);
    struct Form {
      const char *name;
      bool prologueMask, inputPrologue, addend;
    };
    for (const Form &form : {Form{"prologue_mask", true, false, false},
                             Form{"input_prologue", false, true, false},
                             Form{"prologue_mask + input_prologue + addend", true, true, true}}) {
      const std::string what = std::string(form.name) + " x" + detail::shapeString(f.x) + " w" +
                               detail::shapeString(f.w);
      SCOPED_TRACE(what);
      NodeRun b;
      // relu_output (without prologue_mask) or relu_beta, the input
      // prologue's pair, the addend.
      std::vector<const char *> operandNames =
          cbrBackwardOperands({form.prologueMask ? "relu_beta" : "relu_output"});
      if (form.inputPrologue)
        operandNames.insert(operandNames.end(), {"input_scale", "input_bias"});
      if (form.addend)
        operandNames.push_back("input_grad_addend");
      ASSERT_OK(b.named("cbr_backward", operandNames, kCbrBackwardResults));
      b.node.attributes = convNodeAttrs(f.params);
      if (form.prologueMask)
        b.node.attributes["prologue_mask"] = true;
      b.node.parts = {{"bn_grad", Stream::comp1}, {"weight_grad", Stream::comp1},
                      {"input_grad", Stream::comp1}};
      b.operands = {gpu.upload(dy),    gpu.upload(x),      gpu.upload(w),
                    gpu.upload(convOut), gpu.upload(gamma), gpu.upload(mean),
                    gpu.upload(invStd), gpu.upload(dwAcc), gpu.upload(dgAcc),
                    gpu.upload(dbAcc), gpu.upload(form.prologueMask ? beta : y)};
      if (form.inputPrologue) {
        b.operands.push_back(gpu.upload(p.scale));
        b.operands.push_back(gpu.upload(p.bias));
      }
      if (form.addend)
        b.operands.push_back(gpu.upload(addend));
      b.results = {gpu.empty(ys, dtype), gpu.empty(f.x, dtype), gpu.empty(f.w, DType::f32),
                   gpu.empty(cs, DType::f32), gpu.empty(cs, DType::f32)};
      Status s = b.run(gpu, *conv, *gemm);
      if (form.inputPrologue && dtype != DType::f16) {
        EXPECT_TRUE(mentions(s, "cbr_backward: needs f16 prologue"))
            << (s.ok() ? "ran" : s.error().message());
        continue;
      }
      ASSERT_OK(s);
      cpu::CbrBackwardOptions options;
      TensorView relu = y.view(), reluBeta = beta.view(), addendView = addend.view();
      options.reluOutput = form.prologueMask ? nullptr : &relu;
      options.reluBeta = form.prologueMask ? &reluBeta : nullptr;
      options.prologueMask = form.prologueMask;
      options.inputScale = form.inputPrologue ? &scale : nullptr;
      options.inputBias = form.inputPrologue ? &bias : nullptr;
      options.inputGradAddend = form.addend ? &addendView : nullptr;
      Host convGrad(ys, dtype), dx(f.x, dtype), dw(f.w, DType::f32), dg(cs, DType::f32),
          db(cs, DType::f32);
      TensorView dxView = dx.view();
      ASSERT_TRUE(cpu::cbrBackward(dy.view(), x.view(), w.view(), convOut.view(), gamma.view(),
                                   mean.view(), invStd.view(), dwAcc.view(), dgAcc.view(),
                                   dbAcc.view(), options, attrs, convGrad.view(), &dxView,
                                   dw.view(), dg.view(), db.view())
                      .ok());
      const Host *want[] = {&convGrad, &dx, &dw, &dg, &db};
      const char *names[] = {"conv_output_grad", "input_grad", "filter_grad", "gamma_grad",
                             "beta_grad"};
      std::string line;
      for (size_t i = 0; i < 5; ++i) {
        const double e = relativeError(gpu.download(b.results[i]), want[i]->values);
        EXPECT_LE(e, tol) << names[i];
        char text[64];
        std::snprintf(text, sizeof text, "%s%s %.1e", i ? ", " : "", names[i], e);
        line += text;
      }
      std::printf("cbr_backward %s %s: %s\n", what.c_str(), std::string(dtypeName(dtype)).c_str(),
                  line.c_str());
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

/// Milliseconds per call of `body` on `stream` (CUDA events around 20
/// calls after 3 untimed ones), or -1 when a call fails.
double streamMs(cudaStream_t stream, const std::function<Status()> &body) {
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
