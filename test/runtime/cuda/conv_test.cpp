//===- conv_test.cpp - ConvRunner against the CPU convolutions ===============//
//
// ConvRunner's cuDNN frontend graphs against the rn::cpu convolutions on
// random data rounded to the storage dtype, at the shapes that take other
// paths (3 and odd channel counts, stride 2, 1x1, padding 0, dilation,
// groups) in f32 and f16: forward, both gradients and the bias gradient,
// genstats' sums, errors that name the call, deterministic plans, the
// autotuner (its plan cache, its candidate cap, its scratch) and capture
// into a CUDA graph. Bounds in conv_test_util.h. Every test skips when no
// CUDA device answers.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/check.h"
#include "runtime/cuda/conv_kernels.h"
#include "conv_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

namespace rn::cuda {
namespace {

using namespace conv_test;

struct ConvCase {
  const char *name;
  Shape x, w; // NHWC, OHWI
  ConvParams params;
};

void PrintTo(const ConvCase &c, std::ostream *os) { *os << c.name; }

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

} // namespace
} // namespace rn::cuda
