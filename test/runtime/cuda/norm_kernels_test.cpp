//===- norm_kernels_test.cpp - GPU batch norm against the CPU kernels ------===//
//
// Every batch-norm op of normLaunchers() and the exported kernels the CBR
// ops use, on random data of several shapes (odd channel counts, [N, C]
// and NHWC) and dtypes, compared with the rn::cpu reference kernels by the
// norm-wise relative error ||gpu - cpu|| / ||cpu||: 1e-5 for f32 outputs
// (the saved statistics are always f32), 2e-3 for f16, 1e-2 for bf16.
// Also: in-place gradient accumulation and running statistics, and
// determinism (two runs give the same bits). Skips without a CUDA device.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_kernels.h"
#include "runtime/cuda/norm_kernels.h"
#include "runtime/cuda/op_launch.h"
#include "cuda_test_util.h"
#include "host_tensor_util.h"
#include "node_layout.h"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace rn::cuda {
namespace {

using Shape = std::vector<int64_t>;

using testing::DeviceBuffer;
using testing::deviceTensor;
using testing::GpuTensor;
using testing::HostTensor;
using testing::numel;
using testing::randomTensor;
using testing::relativeError;
using testing::upload;

/// Activations with a per-channel offset, so that means are not all ~0.
HostTensor activations(const Shape &shape, DType dtype, std::mt19937 &rng) {
  HostTensor t = randomTensor(shape, dtype, rng, -1.5f, 1.5f);
  int64_t channels = shape.back();
  std::uniform_real_distribution<float> offset(-2.f, 2.f);
  std::vector<float> offsets(static_cast<size_t>(channels));
  for (float &o : offsets)
    o = offset(rng);
  for (size_t i = 0; i < t.values.size(); ++i)
    t.values[i] = roundTo(dtype, t.values[i] + offsets[i % size_t(channels)]);
  return t;
}

/// The tensor's values as floats. Unlike testing::download, the copy's
/// status is checked.
std::vector<float> download(const DeviceTensor &t) {
  std::vector<uint8_t> bytes(size_t(t.numel()) * elementSize(t.dtype));
  EXPECT_EQ(cudaMemcpy(bytes.data(), t.data, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  return testing::decode(bytes, t.dtype);
}

double tolerance(DType dtype) {
  switch (dtype) {
  case DType::f16:
    return 2e-3;
  case DType::bf16:
    return 1e-2;
  default:
    return 1e-5;
  }
}

#define EXPECT_CLOSE(gpuTensor, cpuTensor, what)                                             \
  do {                                                                                       \
    double err_ = relativeError(download((gpuTensor)), (cpuTensor).values);                  \
    EXPECT_LE(err_, tolerance((cpuTensor).dtype)) << (what);                                 \
  } while (0)

/// A non-blocking stream with a workspace, as the device context gives one.
class TestStream {
public:
  explicit TestStream(size_t workspaceBytes) : workspace_(workspaceBytes) {
    EXPECT_EQ(cudaStreamCreateWithFlags(&resources_.stream, cudaStreamNonBlocking), cudaSuccess);
    resources_.name = "comp1";
    resources_.workspace = workspace_.data();
    resources_.workspaceBytes = workspaceBytes;
  }
  ~TestStream() { cudaStreamDestroy(resources_.stream); }
  const StreamResources &resources() const { return resources_; }
  cudaStream_t stream() const { return resources_.stream; }
  void sync() { EXPECT_EQ(cudaStreamSynchronize(resources_.stream), cudaSuccess); }

private:
  DeviceBuffer workspace_;
  StreamResources resources_;
};

const OpLauncher *normLauncher(const std::string &op) {
  for (const OpLauncher &l : normLaunchers())
    if (opName(l.op) == op)
      return &l;
  return nullptr;
}

/// Runs `op` through its launcher (prepare, then launch) and waits.
Status runOp(const std::string &op, const nlohmann::json &attributes,
             const std::vector<DeviceTensor> &operands, const std::vector<DeviceTensor> &results,
             TestStream &stream) {
  const OpLauncher *launcher = normLauncher(op);
  if (!launcher)
    return Error("no launcher for " + op);
  Node node;
  node.op = op;
  node.attributes = attributes;
  if (!test::layOut(node, operands.size(), results.size()))
    return Error(op + ": the operand and result counts do not fit its op table entry");
  // The norm launchers use neither runner; they are never dereferenced.
  alignas(16) static char unused[16];
  OpLaunch launch{node,
                  -1,
                  operands,
                  results,
                  stream.resources(),
                  *reinterpret_cast<ConvRunner *>(unused),
                  *reinterpret_cast<GemmRunner *>(unused)};
  if (launcher->prepare) {
    Result<size_t> bytes = launcher->prepare(launch);
    if (!bytes.ok())
      return bytes.error();
    if (*bytes > stream.resources().workspaceBytes)
      return Error(op + ": prepare asks for more workspace than the test gives");
  }
  Status status = launcher->launch(launch);
  stream.sync();
  return status;
}

constexpr size_t kWorkspaceBytes = size_t(64) << 20;

struct Case {
  Shape shape;
  DType dtype;
  bool f32Vectors; ///< weight/bias f32 (else the input's dtype)
};

std::string caseName(const Case &c) {
  std::string s(dtypeName(c.dtype));
  for (int64_t d : c.shape)
    s += "_" + std::to_string(d);
  return s + (c.f32Vectors ? "_f32vec" : "");
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const std::vector<Shape> shapes = {{64, 3},          {7, 17},        {2, 5, 7, 17},
                                     {4, 6, 6, 64},    {32, 1000},     {3, 9, 9, 1000},
                                     {8, 28, 28, 256}, {2, 3, 3, 2048}, {1, 1, 2, 5}};
  for (const Shape &s : shapes)
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      out.push_back({s, t, t != DType::f32});
  out.push_back({{4, 6, 6, 64}, DType::f16, false});
  out.push_back({{7, 17}, DType::bf16, false});
  return out;
}

DType vectorType(const Case &c) { return c.f32Vectors ? DType::f32 : c.dtype; }

/// batch_norm_train and batch_norm of case `c` against the CPU.
void expectTrainMatchesCpu(const Case &c, TestStream &stream, std::mt19937 &rng) {
  SCOPED_TRACE(caseName(c));
  const int64_t C = c.shape.back();
  HostTensor x = activations(c.shape, c.dtype, rng);
  HostTensor w = randomTensor({C}, vectorType(c), rng, 0.5f, 1.5f);
  HostTensor b = randomTensor({C}, vectorType(c), rng, -0.5f, 0.5f);
  HostTensor y{std::vector<float>(x.values.size()), c.shape, c.dtype};
  HostTensor mean{std::vector<float>(size_t(C)), {C}, DType::f32};
  HostTensor invStd = mean;
  ASSERT_TRUE(cpu::batchNormTrain(x.view(), w.view(), b.view(), 1e-5, y.view(), mean.view(),
                                  invStd.view())
                  .ok());
  GpuTensor gx = upload(x), gw = upload(w), gb = upload(b);
  GpuTensor gy = deviceTensor(c.shape, c.dtype), gm = deviceTensor({C}, DType::f32),
            gs = deviceTensor({C}, DType::f32);
  Status s = runOp("batch_norm_train", {{"epsilon", 1e-5}}, {gx.view, gw.view, gb.view},
                   {gy.view, gm.view, gs.view}, stream);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_CLOSE(gy.view, y, "result");
  EXPECT_CLOSE(gm.view, mean, "batch_mean");
  EXPECT_CLOSE(gs.view, invStd, "batch_inv_std");

  // batch_norm (model level): the same result, statistics kept internally.
  GpuTensor gy2 = deviceTensor(c.shape, c.dtype);
  GpuTensor grm = upload(randomTensor({C}, vectorType(c), rng, -1, 1));
  GpuTensor grv = upload(randomTensor({C}, vectorType(c), rng, 0.5, 2));
  s = runOp("batch_norm", {{"epsilon", 1e-5}, {"momentum", 0.1}},
            {gx.view, gw.view, gb.view, grm.view, grv.view}, {gy2.view}, stream);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_CLOSE(gy2.view, y, "batch_norm result");
}

TEST(NormKernelsTest, BatchNormTrainMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream(kWorkspaceBytes);
  std::mt19937 rng(1);
  for (const Case &c : cases())
    expectTrainMatchesCpu(c, stream, rng);
}

TEST(NormKernelsTest, StatisticsAreDeterministic) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream(kWorkspaceBytes);
  std::mt19937 rng(2);
  const Shape shape = {16, 28, 28, 64};
  HostTensor x = activations(shape, DType::f16, rng);
  GpuTensor gx = upload(x);
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    GpuTensor gm = deviceTensor({64}, DType::f32), gs = deviceTensor({64}, DType::f32);
    Status s = bnBatchStats(gx.view, 1e-5, gm.view, gs.view, stream.stream(),
                            stream.resources().workspace, stream.resources().workspaceBytes);
    ASSERT_TRUE(s.ok()) << s.error().message();
    stream.sync();
    std::vector<float> both = download(gm.view), inv = download(gs.view);
    both.insert(both.end(), inv.begin(), inv.end());
    if (run == 0)
      first = both;
    else
      EXPECT_EQ(std::memcmp(first.data(), both.data(), first.size() * 4), 0);
  }
}

TEST(NormKernelsTest, BatchNormInferenceMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream(kWorkspaceBytes);
  std::mt19937 rng(3);
  for (const Case &c : cases()) {
    SCOPED_TRACE(caseName(c));
    const int64_t C = c.shape.back();
    HostTensor x = activations(c.shape, c.dtype, rng);
    HostTensor w = randomTensor({C}, vectorType(c), rng, 0.5f, 1.5f);
    HostTensor b = randomTensor({C}, vectorType(c), rng, -0.5f, 0.5f);
    HostTensor rm = randomTensor({C}, vectorType(c), rng, -2.f, 2.f);
    HostTensor rv = randomTensor({C}, vectorType(c), rng, 0.5f, 2.f);
    HostTensor y{std::vector<float>(x.values.size()), c.shape, c.dtype};
    ASSERT_TRUE(cpu::batchNormInference(x.view(), w.view(), b.view(), rm.view(), rv.view(), 1e-3,
                                        y.view())
                    .ok());
    GpuTensor gx = upload(x), gw = upload(w), gb = upload(b), grm = upload(rm), grv = upload(rv);
    GpuTensor gy = deviceTensor(c.shape, c.dtype);
    Status s = runOp("batch_norm_inference", {{"epsilon", 1e-3}},
                     {gx.view, gw.view, gb.view, grm.view, grv.view}, {gy.view}, stream);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_CLOSE(gy.view, y, "result");

    // bn_add_relu_inference.
    HostTensor sc = activations(c.shape, c.dtype, rng);
    HostTensor y2{std::vector<float>(x.values.size()), c.shape, c.dtype};
    ASSERT_TRUE(cpu::bnAddReluInference(x.view(), w.view(), b.view(), rm.view(), rv.view(),
                                        sc.view(), 1e-3, y2.view())
                    .ok());
    GpuTensor gsc = upload(sc), gy2 = deviceTensor(c.shape, c.dtype);
    s = runOp("bn_add_relu_inference", {{"epsilon", 1e-3}},
              {gx.view, gw.view, gb.view, grm.view, grv.view, gsc.view}, {gy2.view}, stream);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_CLOSE(gy2.view, y2, "bn_add_relu_inference result");

    // The CBR path: bnInference with relu.
    HostTensor y3 = y;
    ASSERT_TRUE(cpu::relu(y3.view(), y3.view()).ok());
    GpuTensor gy3 = deviceTensor(c.shape, c.dtype);
    s = bnInference(gx.view, gw.view, gb.view, grm.view, grv.view, 1e-3, true, gy3.view,
                    stream.stream());
    ASSERT_TRUE(s.ok()) << s.error().message();
    stream.sync();
    EXPECT_CLOSE(gy3.view, y3, "bnInference relu");
  }
}

/// A BN backward's inputs for case `c` (x with its batch statistics from
/// the CPU's forward) and the CPU's results.
struct BackwardReference {
  HostTensor x, dy, w, mean, invStd, wAcc, bAcc; ///< inputs
  HostTensor dx, wGrad, bGrad;                   ///< the CPU's results
};
BackwardReference backwardReference(const Case &c, std::mt19937 &rng) {
  const int64_t C = c.shape.back();
  BackwardReference r;
  r.x = activations(c.shape, c.dtype, rng);
  r.dy = randomTensor(c.shape, c.dtype, rng, -1.f, 1.f);
  r.w = randomTensor({C}, vectorType(c), rng, 0.5f, 1.5f);
  HostTensor b = randomTensor({C}, vectorType(c), rng, -0.5f, 0.5f);
  HostTensor y{std::vector<float>(r.x.values.size()), c.shape, c.dtype};
  r.mean = HostTensor{std::vector<float>(size_t(C)), {C}, DType::f32};
  r.invStd = r.mean;
  EXPECT_TRUE(cpu::batchNormTrain(r.x.view(), r.w.view(), b.view(), 1e-5, y.view(),
                                  r.mean.view(), r.invStd.view())
                  .ok());
  r.wAcc = randomTensor({C}, vectorType(c), rng, -1.f, 1.f);
  r.bAcc = randomTensor({C}, vectorType(c), rng, -1.f, 1.f);
  r.dx = HostTensor{std::vector<float>(r.x.values.size()), c.shape, c.dtype};
  r.wGrad = r.wAcc;
  r.bGrad = r.bAcc;
  EXPECT_TRUE(cpu::batchNormBackward(r.dy.view(), r.x.view(), r.w.view(), r.mean.view(),
                                     r.invStd.view(), r.wAcc.view(), r.bAcc.view(), r.dx.view(),
                                     r.wGrad.view(), r.bGrad.view())
                  .ok());
  return r;
}

/// batch_norm_backward of case `c` against the CPU, in place (the
/// gradients are their accumulators).
void expectBackwardMatchesCpuInPlace(const Case &c, TestStream &stream, std::mt19937 &rng) {
  SCOPED_TRACE(caseName(c));
  BackwardReference r = backwardReference(c, rng);
  HostTensor &x = r.x, &dy = r.dy, &w = r.w, &mean = r.mean, &invStd = r.invStd, &wAcc = r.wAcc,
             &bAcc = r.bAcc, &dx = r.dx, &wGrad = r.wGrad, &bGrad = r.bGrad;
  GpuTensor gdy = upload(dy), gx = upload(x), gw = upload(w), gm = upload(mean),
            gs = upload(invStd), gwAcc = upload(wAcc), gbAcc = upload(bAcc);
  GpuTensor gdx = deviceTensor(c.shape, c.dtype);
  // In place: the gradients are their accumulators.
  Status s = runOp("batch_norm_backward", nlohmann::json::object(),
                   {gdy.view, gx.view, gw.view, gm.view, gs.view, gwAcc.view, gbAcc.view},
                   {gdx.view, gwAcc.view, gbAcc.view}, stream);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_CLOSE(gdx.view, dx, "input_grad");
  EXPECT_CLOSE(gwAcc.view, wGrad, "weight_grad");
  EXPECT_CLOSE(gbAcc.view, bGrad, "bias_grad");
}

TEST(NormKernelsTest, BatchNormBackwardMatchesCpuInPlace) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream(kWorkspaceBytes);
  std::mt19937 rng(4);
  for (const Case &c : cases())
    expectBackwardMatchesCpuInPlace(c, stream, rng);
}

// Tests bnBackwardFromSums (the BN backward's second half, its sums given
// as two partial rows, as the dgrad's epilogue leaves them) against the
// CPU's whole backward: the partials come from the host, in double, over
// the same dy, x and statistics; the gradients are their accumulators.
TEST(NormKernelsTest, BackwardFromSumsMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream(kWorkspaceBytes);
  std::mt19937 rng(46);
  for (const Case &c : cases()) {
    if (c.shape.size() != 4)
      continue; // the dgrad's epilogue gives sums of NHWC activations only
    SCOPED_TRACE(caseName(c));
    const int64_t C = c.shape.back();
    BackwardReference r = backwardReference(c, rng);
    const HostTensor &x = r.x, &dy = r.dy, &mean = r.mean, &invStd = r.invStd;
    // The sums as two partial rows (the first pixels' and the rest's), as
    // the dgrad's epilogue leaves them per CTA.
    const size_t channels = static_cast<size_t>(C), half = x.values.size() / channels / 2;
    std::vector<double> sumDy(2 * channels), sumDyXhat(2 * channels);
    for (size_t i = 0; i < x.values.size(); ++i) {
      const size_t ch = i % channels, row = i / channels < half ? 0 : 1;
      sumDy[row * channels + ch] += dy.values[i];
      sumDyXhat[row * channels + ch] +=
          double(dy.values[i]) * ((double(x.values[i]) - mean.values[ch]) * invStd.values[ch]);
    }
    HostTensor sums{std::vector<float>(sumDy.begin(), sumDy.end()), {2, C}, DType::f32};
    HostTensor sumsXhat{std::vector<float>(sumDyXhat.begin(), sumDyXhat.end()), {2, C},
                        DType::f32};
    GpuTensor gdy = upload(dy), gx = upload(x), gw = upload(r.w), gm = upload(mean),
              gs = upload(invStd), gsum = upload(sums), gsumXhat = upload(sumsXhat),
              gwAcc = upload(r.wAcc), gbAcc = upload(r.bAcc);
    GpuTensor gdx = deviceTensor(c.shape, c.dtype);
    Status status = bnBackwardFromSums(gdy.view, gx.view, gw.view, gm.view, gs.view, gsum.view,
                                       gsumXhat.view, gwAcc.view, gbAcc.view, gdx.view,
                                       gwAcc.view, gbAcc.view, stream.stream(),
                                       stream.resources().workspace, kWorkspaceBytes);
    ASSERT_TRUE(status.ok()) << status.error().message();
    stream.sync();
    EXPECT_CLOSE(gdx.view, r.dx, "input_grad");
    EXPECT_CLOSE(gwAcc.view, r.wGrad, "weight_grad");
    EXPECT_CLOSE(gbAcc.view, r.bGrad, "bias_grad");
  }
}

// Tests that other chunkings of the rows (NormKernelTuning's target
// blocks: one chunk, an odd count, many) give the CPU's results too, as
// RN_BN_TARGET_BLOCKS may set them, and that out-of-range targets are
// rejected.
TEST(NormKernelsTest, TargetBlocksKeepTheResults) {
  RN_SKIP_WITHOUT_CUDA();
  const NormKernelTuning defaults = normKernelTuning();
  NormKernelTuning bad = defaults;
  bad.applyBlocks = 0;
  EXPECT_FALSE(setNormKernelTuning(bad).ok());
  bad.applyBlocks = 65536;
  EXPECT_FALSE(setNormKernelTuning(bad).ok());
  TestStream stream(kWorkspaceBytes);
  std::mt19937 rng(5);
  for (int blocks : {1, 37, 4096}) {
    SCOPED_TRACE("target blocks " + std::to_string(blocks));
    NormKernelTuning k = defaults;
    k.statsBlocks = k.applyBlocks = k.backwardBlocks = blocks;
    ASSERT_TRUE(setNormKernelTuning(k).ok());
    for (const Case &c : {Case{{8, 28, 28, 256}, DType::f16, true},
                          Case{{3, 9, 9, 1000}, DType::f32, false}}) {
      expectTrainMatchesCpu(c, stream, rng);
      expectBackwardMatchesCpuInPlace(c, stream, rng);
    }
  }
  ASSERT_TRUE(setNormKernelTuning(defaults).ok());
}

TEST(NormKernelsTest, CbrMaskedBackwardMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream(kWorkspaceBytes);
  std::mt19937 rng(5);
  for (const Case &c : cases()) {
    SCOPED_TRACE(caseName(c));
    const int64_t C = c.shape.back();
    HostTensor x = activations(c.shape, c.dtype, rng);
    HostTensor dy = randomTensor(c.shape, c.dtype, rng, -1.f, 1.f);
    HostTensor relu = randomTensor(c.shape, c.dtype, rng, -1.f, 1.f);
    HostTensor w = randomTensor({C}, vectorType(c), rng, 0.5f, 1.5f);
    HostTensor mean = randomTensor({C}, DType::f32, rng, -2.f, 2.f);
    HostTensor invStd = randomTensor({C}, DType::f32, rng, 0.5f, 2.f);
    HostTensor wAcc = randomTensor({C}, vectorType(c), rng, -1.f, 1.f);
    HostTensor bAcc = randomTensor({C}, vectorType(c), rng, -1.f, 1.f);
    HostTensor masked{std::vector<float>(x.values.size()), c.shape, c.dtype};
    ASSERT_TRUE(cpu::reluBackward(dy.view(), relu.view(), masked.view()).ok());
    HostTensor dx{std::vector<float>(x.values.size()), c.shape, c.dtype};
    HostTensor wGrad = wAcc, bGrad = bAcc;
    ASSERT_TRUE(cpu::batchNormBackward(masked.view(), x.view(), w.view(), mean.view(),
                                       invStd.view(), wAcc.view(), bAcc.view(), dx.view(),
                                       wGrad.view(), bGrad.view())
                    .ok());
    GpuTensor gdy = upload(dy), grelu = upload(relu), gx = upload(x), gw = upload(w),
              gm = upload(mean), gs = upload(invStd), gwAcc = upload(wAcc), gbAcc = upload(bAcc);
    GpuTensor gdx = deviceTensor(c.shape, c.dtype), gwGrad = deviceTensor({C}, vectorType(c)),
              gbGrad = deviceTensor({C}, vectorType(c));
    ASSERT_LE(bnBackwardWorkspaceBytes(c.shape), kWorkspaceBytes);
    Status s =
        bnBackward(gdy.view, &grelu.view, nullptr, gx.view, gw.view, gm.view, gs.view, gwAcc.view,
                   gbAcc.view, gdx.view, gwGrad.view, gbGrad.view, stream.stream(),
                   stream.resources().workspace, stream.resources().workspaceBytes);
    ASSERT_TRUE(s.ok()) << s.error().message();
    stream.sync();
    EXPECT_CLOSE(gdx.view, dx, "input_grad");
    EXPECT_CLOSE(gwGrad.view, wGrad, "weight_grad");
    EXPECT_CLOSE(gbGrad.view, bGrad, "bias_grad");
    // dy itself is left alone.
    EXPECT_EQ(relativeError(download(gdy.view), dy.values), 0.0);
  }
}

// cbr_backward's relu_recompute: the mask recomputed from x equals the one
// of the result bnApply stored, bit for bit (so the backward's results do
// too), and the CPU reference's recomputation gives the same mask.
TEST(NormKernelsTest, CbrRecomputedMaskEqualsStoredMask) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream(kWorkspaceBytes);
  std::mt19937 rng(15);
  for (const Case &c : cases()) {
    SCOPED_TRACE(caseName(c));
    const int64_t C = c.shape.back();
    HostTensor x = activations(c.shape, c.dtype, rng);
    HostTensor dy = randomTensor(c.shape, c.dtype, rng, -1.f, 1.f);
    // Negative gammas flip the mask's side; small betas put many
    // normalized values near zero, where a different rounding would show.
    HostTensor w = randomTensor({C}, vectorType(c), rng, -1.5f, 1.5f);
    HostTensor b = randomTensor({C}, vectorType(c), rng, -0.05f, 0.05f);
    HostTensor wAcc = randomTensor({C}, vectorType(c), rng, -1.f, 1.f);
    HostTensor bAcc = randomTensor({C}, vectorType(c), rng, -1.f, 1.f);
    GpuTensor gdy = upload(dy), gx = upload(x), gw = upload(w), gb = upload(b),
              gwAcc = upload(wAcc), gbAcc = upload(bAcc);
    GpuTensor gy = deviceTensor(c.shape, c.dtype), gm = deviceTensor({C}, DType::f32),
              gs = deviceTensor({C}, DType::f32);
    ASSERT_LE(bnStatsWorkspaceBytes(c.shape), kWorkspaceBytes);
    Status s = bnBatchStats(gx.view, 1e-5, gm.view, gs.view, stream.stream(),
                            stream.resources().workspace, stream.resources().workspaceBytes);
    ASSERT_TRUE(s.ok()) << s.error().message();
    s = bnApply(gx.view, gw.view, gb.view, gm.view, gs.view, /*relu=*/true, gy.view,
                stream.stream());
    ASSERT_TRUE(s.ok()) << s.error().message();

    struct Grads {
      GpuTensor dx, wGrad, bGrad;
    };
    auto backward = [&](const DeviceTensor *reluResult, const DeviceTensor *reluBeta) {
      Grads g{deviceTensor(c.shape, c.dtype), deviceTensor({C}, vectorType(c)),
              deviceTensor({C}, vectorType(c))};
      Status t = bnBackward(gdy.view, reluResult, reluBeta, gx.view, gw.view, gm.view, gs.view,
                            gwAcc.view, gbAcc.view, g.dx.view, g.wGrad.view, g.bGrad.view,
                            stream.stream(), stream.resources().workspace,
                            stream.resources().workspaceBytes);
      EXPECT_TRUE(t.ok()) << t.error().message();
      stream.sync();
      return g;
    };
    // Elements that differ (printing whole tensors would drown the log).
    auto mismatches = [](const std::vector<float> &a, const std::vector<float> &b) {
      size_t n = a.size() == b.size() ? 0 : std::max(a.size(), b.size());
      for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
      return n;
    };
    Grads stored = backward(&gy.view, nullptr);
    Grads recomputed = backward(nullptr, &gb.view);
    EXPECT_EQ(mismatches(download(recomputed.dx.view), download(stored.dx.view)), 0u);
    EXPECT_EQ(mismatches(download(recomputed.wGrad.view), download(stored.wGrad.view)), 0u);
    EXPECT_EQ(mismatches(download(recomputed.bGrad.view), download(stored.bGrad.view)), 0u);

    // The CPU's recomputed mask, from the GPU's statistics, is the stored
    // result's mask.
    HostTensor y{download(gy.view), c.shape, c.dtype};
    HostTensor mean{download(gm.view), {C}, DType::f32};
    HostTensor invStd{download(gs.view), {C}, DType::f32};
    HostTensor fromResult{std::vector<float>(x.values.size()), c.shape, c.dtype};
    HostTensor fromBeta = fromResult;
    ASSERT_TRUE(cpu::reluBackward(dy.view(), y.view(), fromResult.view()).ok());
    ASSERT_TRUE(cpu::reluBackwardRecomputed(dy.view(), x.view(), w.view(), b.view(), mean.view(),
                                            invStd.view(), fromBeta.view())
                    .ok());
    EXPECT_EQ(mismatches(fromBeta.values, fromResult.values), 0u);
  }
}

/// Elements whose bits differ (NaNs equal to NaNs): counts, since printing
/// whole tensors would drown the log.
size_t bitMismatches(const std::vector<float> &a, const std::vector<float> &b) {
  size_t n = a.size() == b.size() ? 0 : std::max(a.size(), b.size());
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (!(std::isnan(a[i]) && std::isnan(b[i])))
      n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

// Tests that bn_scale_bias (rn-fuse-bn-prologue) gives cpu::bnScaleBias's
// scale and bias bit for bit, through its launcher: per result dtype
// (f32, f16, bf16), with gamma and beta f32 or of the result's dtype, at
// odd and ResNet channel counts; the values span overflow to inf in f16
// (huge inv_std * gamma), subnormal products and exact zeros, where a
// contracted or differently rounded step would show.
TEST(NormKernelsTest, BnScaleBiasMatchesCpuBitForBit) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream(kWorkspaceBytes);
  std::mt19937 rng(21);
  size_t checked = 0, mismatched = 0;
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (bool f32Params : {true, false})
      for (int64_t C : {1, 3, 17, 64, 1000, 2048}) {
        const DType p = f32Params ? DType::f32 : t;
        SCOPED_TRACE(std::string(dtypeName(t)) + (f32Params ? " f32 params" : "") +
                     " C=" + std::to_string(C));
        HostTensor mean = randomTensor({C}, DType::f32, rng, -3.f, 3.f);
        HostTensor invStd = randomTensor({C}, DType::f32, rng, 0.05f, 20.f);
        HostTensor gamma = randomTensor({C}, p, rng, -2.f, 2.f);
        HostTensor beta = randomTensor({C}, p, rng, -1.f, 1.f);
        // A few channels at the edges of T's range.
        for (int64_t c = 0; c + 4 < C; c += 5) {
          invStd.values[size_t(c)] = 1e5f;                     // f16: scale overflows
          gamma.values[size_t(c + 1)] = roundTo(p, 1e-6f);     // subnormal in f16
          mean.values[size_t(c + 2)] = 0.f;                    // bias = beta exactly
          gamma.values[size_t(c + 3)] = 0.f;                   // scale 0
          beta.values[size_t(c + 4)] = roundTo(p, 1e-7f);      // tiny bias
        }
        HostTensor scale{std::vector<float>(size_t(C)), {C}, t}, bias = scale;
        ASSERT_TRUE(cpu::bnScaleBias(mean.view(), invStd.view(), gamma.view(), beta.view(),
                                     scale.view(), bias.view())
                        .ok());
        GpuTensor gm = upload(mean), gs = upload(invStd), gg = upload(gamma), gb = upload(beta);
        GpuTensor gScale = deviceTensor({C}, t), gBias = deviceTensor({C}, t);
        Status s = runOp("bn_scale_bias", nlohmann::json::object(),
                         {gm.view, gs.view, gg.view, gb.view}, {gScale.view, gBias.view}, stream);
        ASSERT_TRUE(s.ok()) << s.error().message();
        const size_t scaleBad = bitMismatches(download(gScale.view), scale.values);
        const size_t biasBad = bitMismatches(download(gBias.view), bias.values);
        EXPECT_EQ(scaleBad, 0u) << "scale";
        EXPECT_EQ(biasBad, 0u) << "bias";
        checked += 2 * size_t(C);
        mismatched += scaleBad + biasBad;
      }
  std::printf("bn_scale_bias: %zu values against the CPU, %zu differ in a bit\n", checked,
              mismatched);
  // Results of two dtypes, or a vector of the wrong length, are errors
  // naming the op.
  GpuTensor v = deviceTensor({8}, DType::f32), h = deviceTensor({8}, DType::f16);
  GpuTensor shortVector = deviceTensor({7}, DType::f32);
  Status s = runOp("bn_scale_bias", nlohmann::json::object(), {v.view, v.view, v.view, v.view},
                   {h.view, v.view}, stream);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("bn_scale_bias"), std::string::npos) << s.error().message();
  s = runOp("bn_scale_bias", nlohmann::json::object(),
            {v.view, v.view, shortVector.view, v.view}, {h.view, h.view}, stream);
  EXPECT_FALSE(s.ok());
}

// cbr_backward's `relu_recompute ... prologue_mask` on the BN backward
// kernels: the mask recomputed in the prologue's rounding (scale and bias
// from bnScaleBias's device function, round(fma(x, s, b)) > 0) is the
// CPU's (cpu::reluBackwardPrologueMask) bit for bit: the backward with it
// equals, bit for bit, the backward that reads the mask from the CPU's
// prologue activation as a stored ReLU result, and matches the CPU's
// backward of the CPU's masked gradient within the usual bounds (the input
// gradient from 8 rows up). Statistics from the GPU, small betas and
// gammas of both signs put many values near zero, where the prologue's
// rounded scale and bias and the apply's f32 ones disagree; the test
// prints how often they do.
TEST(NormKernelsTest, CbrPrologueMaskMatchesCpuMask) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream(kWorkspaceBytes);
  std::mt19937 rng(22);
  size_t elements = 0, formsDiffer = 0;
  for (const Case &c : cases()) {
    SCOPED_TRACE(caseName(c));
    const int64_t C = c.shape.back();
    HostTensor x = activations(c.shape, c.dtype, rng);
    HostTensor dy = randomTensor(c.shape, c.dtype, rng, -1.f, 1.f);
    HostTensor w = randomTensor({C}, vectorType(c), rng, -1.5f, 1.5f);
    HostTensor b = randomTensor({C}, vectorType(c), rng, -0.05f, 0.05f);
    HostTensor wAcc = randomTensor({C}, vectorType(c), rng, -1.f, 1.f);
    HostTensor bAcc = randomTensor({C}, vectorType(c), rng, -1.f, 1.f);
    GpuTensor gdy = upload(dy), gx = upload(x), gw = upload(w), gb = upload(b),
              gwAcc = upload(wAcc), gbAcc = upload(bAcc);
    GpuTensor gm = deviceTensor({C}, DType::f32), gs = deviceTensor({C}, DType::f32);
    Status s = bnBatchStats(gx.view, 1e-5, gm.view, gs.view, stream.stream(),
                            stream.resources().workspace, stream.resources().workspaceBytes);
    ASSERT_TRUE(s.ok()) << s.error().message();
    stream.sync();
    HostTensor mean{download(gm.view), {C}, DType::f32};
    HostTensor invStd{download(gs.view), {C}, DType::f32};

    // The CPU: the prologue's scale and bias, its activation, the masked
    // gradient, and the batch-norm backward of it.
    HostTensor scale{std::vector<float>(size_t(C)), {C}, c.dtype}, bias = scale;
    ASSERT_TRUE(cpu::bnScaleBias(mean.view(), invStd.view(), w.view(), b.view(), scale.view(),
                                 bias.view())
                    .ok());
    HostTensor activation{std::vector<float>(x.values.size()), c.shape, c.dtype};
    ASSERT_TRUE(cpu::scaleBiasRelu(x.view(), scale.view(), bias.view(), activation.view()).ok());
    HostTensor masked{std::vector<float>(x.values.size()), c.shape, c.dtype};
    ASSERT_TRUE(cpu::reluBackwardPrologueMask(dy.view(), x.view(), w.view(), b.view(),
                                              mean.view(), invStd.view(), masked.view())
                    .ok());
    HostTensor applyMasked = masked;
    ASSERT_TRUE(cpu::reluBackwardRecomputed(dy.view(), x.view(), w.view(), b.view(), mean.view(),
                                            invStd.view(), applyMasked.view())
                    .ok());
    elements += masked.values.size();
    formsDiffer += bitMismatches(masked.values, applyMasked.values);
    HostTensor dx{std::vector<float>(x.values.size()), c.shape, c.dtype};
    HostTensor wGrad = wAcc, bGrad = bAcc;
    ASSERT_TRUE(cpu::batchNormBackward(masked.view(), x.view(), w.view(), mean.view(),
                                       invStd.view(), wAcc.view(), bAcc.view(), dx.view(),
                                       wGrad.view(), bGrad.view())
                    .ok());

    struct Grads {
      GpuTensor dx, wGrad, bGrad;
    };
    auto backward = [&](const DeviceTensor *reluResult, const DeviceTensor *reluBeta,
                        bool prologueMask) {
      Grads g{deviceTensor(c.shape, c.dtype), deviceTensor({C}, vectorType(c)),
              deviceTensor({C}, vectorType(c))};
      Status t = bnBackward(gdy.view, reluResult, reluBeta, gx.view, gw.view, gm.view, gs.view,
                            gwAcc.view, gbAcc.view, g.dx.view, g.wGrad.view, g.bGrad.view,
                            stream.stream(), stream.resources().workspace,
                            stream.resources().workspaceBytes, prologueMask);
      EXPECT_TRUE(t.ok()) << t.error().message();
      stream.sync();
      return g;
    };
    GpuTensor gActivation = upload(activation);
    Grads recomputed = backward(nullptr, &gb.view, /*prologueMask=*/true);
    Grads stored = backward(&gActivation.view, nullptr, false);
    EXPECT_EQ(bitMismatches(download(recomputed.dx.view), download(stored.dx.view)), 0u);
    EXPECT_EQ(bitMismatches(download(recomputed.wGrad.view), download(stored.wGrad.view)), 0u);
    EXPECT_EQ(bitMismatches(download(recomputed.bGrad.view), download(stored.bGrad.view)), 0u);
    // With the batch's own statistics and a handful of rows, the input
    // gradient is a difference of nearly equal terms (two rows: a factor
    // eps / (var + eps)), which f32 and the CPU's double do not resolve
    // alike; the bitwise checks above hold there too.
    if (numel(c.shape) / C >= 8)
      EXPECT_CLOSE(recomputed.dx.view, dx, "input_grad");
    EXPECT_CLOSE(recomputed.wGrad.view, wGrad, "weight_grad");
    EXPECT_CLOSE(recomputed.bGrad.view, bGrad, "bias_grad");
  }
  std::printf("prologue mask vs the apply's recomputed mask: %zu of %zu masked gradients "
              "differ\n",
              formsDiffer, elements);
  // The prologue's rounding needs the beta to recompute with.
  GpuTensor t = deviceTensor({4, 8}, DType::f16), v = deviceTensor({8}, DType::f32);
  Status s = bnBackward(t.view, nullptr, nullptr, t.view, v.view, v.view, v.view, v.view, v.view,
                        t.view, v.view, v.view, stream.stream(), stream.resources().workspace,
                        stream.resources().workspaceBytes, /*prologueMask=*/true);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("relu_beta"), std::string::npos) << s.error().message();
}

TEST(NormKernelsTest, BnAddReluMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream(kWorkspaceBytes);
  std::mt19937 rng(6);
  for (const Case &c : cases()) {
    SCOPED_TRACE(caseName(c));
    const int64_t C = c.shape.back();
    HostTensor x = activations(c.shape, c.dtype, rng);
    HostTensor sc = randomTensor(c.shape, c.dtype, rng, -1.f, 1.f);
    HostTensor g = randomTensor({C}, vectorType(c), rng, 0.5f, 1.5f);
    HostTensor b = randomTensor({C}, vectorType(c), rng, -0.5f, 0.5f);
    HostTensor y{std::vector<float>(x.values.size()), c.shape, c.dtype};
    HostTensor mean{std::vector<float>(size_t(C)), {C}, DType::f32};
    HostTensor invStd = mean;
    ASSERT_TRUE(cpu::bnAddRelu(x.view(), g.view(), b.view(), sc.view(), 1e-5, y.view(),
                               mean.view(), invStd.view())
                    .ok());
    GpuTensor gx = upload(x), gsc = upload(sc), gg = upload(g), gb = upload(b);
    GpuTensor gy = deviceTensor(c.shape, c.dtype), gm = deviceTensor({C}, DType::f32),
              gs = deviceTensor({C}, DType::f32);
    Status s = runOp("bn_add_relu", {{"epsilon", 1e-5}}, {gx.view, gg.view, gb.view, gsc.view},
                     {gy.view, gm.view, gs.view}, stream);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_CLOSE(gy.view, y, "result");
    EXPECT_CLOSE(gm.view, mean, "batch_mean");
    EXPECT_CLOSE(gs.view, invStd, "batch_inv_std");

    // Its backward, out of place, from the forward's own result.
    HostTensor dy = randomTensor(c.shape, c.dtype, rng, -1.f, 1.f);
    HostTensor gAcc = randomTensor({C}, vectorType(c), rng, -1.f, 1.f);
    HostTensor bAcc = randomTensor({C}, vectorType(c), rng, -1.f, 1.f);
    HostTensor dx{std::vector<float>(x.values.size()), c.shape, c.dtype};
    HostTensor dsc = dx, gGrad = gAcc, bGrad = bAcc;
    ASSERT_TRUE(cpu::bnAddReluBackward(dy.view(), y.view(), x.view(), g.view(), mean.view(),
                                       invStd.view(), gAcc.view(), bAcc.view(), dx.view(),
                                       dsc.view(), gGrad.view(), bGrad.view())
                    .ok());
    GpuTensor gdy = upload(dy), gyCpu = upload(y), gmCpu = upload(mean), gsCpu = upload(invStd),
              ggAcc = upload(gAcc), gbAcc = upload(bAcc);
    GpuTensor gdx = deviceTensor(c.shape, c.dtype), gdsc = deviceTensor(c.shape, c.dtype),
              ggGrad = deviceTensor({C}, vectorType(c)), gbGrad = deviceTensor({C}, vectorType(c));
    s = runOp("bn_add_relu_backward", nlohmann::json::object(),
              {gdy.view, gyCpu.view, gx.view, gg.view, gmCpu.view, gsCpu.view, ggAcc.view,
               gbAcc.view},
              {gdx.view, gdsc.view, ggGrad.view, gbGrad.view}, stream);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_CLOSE(gdx.view, dx, "input_grad");
    EXPECT_EQ(relativeError(download(gdsc.view), dsc.values), 0.0) << "shortcut_grad";
    EXPECT_CLOSE(ggGrad.view, gGrad, "gamma_grad");
    EXPECT_CLOSE(gbGrad.view, bGrad, "beta_grad");
  }
}

TEST(NormKernelsTest, CbrForwardPiecesMatchCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream(kWorkspaceBytes);
  std::mt19937 rng(7);
  for (const Case &c : cases()) {
    SCOPED_TRACE(caseName(c));
    const int64_t C = c.shape.back();
    const int64_t M = numel(c.shape) / C;
    HostTensor x = activations(c.shape, c.dtype, rng);
    HostTensor w = randomTensor({C}, vectorType(c), rng, 0.5f, 1.5f);
    HostTensor b = randomTensor({C}, vectorType(c), rng, -0.5f, 0.5f);
    HostTensor y{std::vector<float>(x.values.size()), c.shape, c.dtype};
    HostTensor mean{std::vector<float>(size_t(C)), {C}, DType::f32};
    HostTensor invStd = mean;
    ASSERT_TRUE(cpu::batchNormTrain(x.view(), w.view(), b.view(), 1e-5, y.view(), mean.view(),
                                    invStd.view())
                    .ok());
    ASSERT_TRUE(cpu::relu(y.view(), y.view()).ok());

    // Statistics from genstats-like sums (f32, as cuDNN gives them).
    HostTensor sum{std::vector<float>(size_t(C)), {C}, DType::f32}, sumSq = sum;
    for (int64_t k = 0; k < C; ++k) {
      double s = 0, s2 = 0;
      for (int64_t r = 0; r < M; ++r) {
        double v = x.values[size_t(r * C + k)];
        s += v;
        s2 += v * v;
      }
      sum.values[size_t(k)] = float(s);
      sumSq.values[size_t(k)] = float(s2);
    }
    GpuTensor gsum = upload(sum), gsumSq = upload(sumSq);
    GpuTensor gm = deviceTensor({C}, DType::f32), gs = deviceTensor({C}, DType::f32);
    Status s = bnFinalizeStats(static_cast<const float *>(gsum.view.data),
                               static_cast<const float *>(gsumSq.view.data), C, M, 1e-5, gm.view,
                               gs.view, stream.stream());
    ASSERT_TRUE(s.ok()) << s.error().message();
    stream.sync();
    // E[x^2] - mean^2 in f32 sums: cancellation costs a few digits.
    EXPECT_LE(relativeError(download(gm.view), mean.values), 1e-5);
    EXPECT_LE(relativeError(download(gs.view), invStd.values), 1e-4);

    // bnApply with relu from the exact statistics.
    GpuTensor gx = upload(x), gw = upload(w), gb = upload(b), gmCpu = upload(mean),
              gsCpu = upload(invStd);
    GpuTensor gy = deviceTensor(c.shape, c.dtype);
    s = bnApply(gx.view, gw.view, gb.view, gmCpu.view, gsCpu.view, true, gy.view,
                stream.stream());
    ASSERT_TRUE(s.ok()) << s.error().message();
    stream.sync();
    EXPECT_CLOSE(gy.view, y, "cbr result");
  }
}

TEST(NormKernelsTest, UpdateRunningStatsInPlace) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream(kWorkspaceBytes);
  std::mt19937 rng(8);
  for (int64_t C : {3, 17, 64, 1000})
    for (DType t : {DType::f32, DType::f16, DType::bf16}) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " C=" + std::to_string(C));
      HostTensor rm = randomTensor({C}, t, rng, -1, 1), rv = randomTensor({C}, t, rng, 0.5, 2);
      HostTensor bm = randomTensor({C}, DType::f32, rng, -1, 1);
      HostTensor bs = randomTensor({C}, DType::f32, rng, 0.5, 3);
      HostTensor nm = rm, nv = rv;
      ASSERT_TRUE(cpu::updateRunningStats(rm.view(), rv.view(), bm.view(), bs.view(), 1e-5, 0.1,
                                          50, nm.view(), nv.view())
                      .ok());
      GpuTensor grm = upload(rm), grv = upload(rv), gbm = upload(bm), gbs = upload(bs);
      Status s = runOp("update_running_stats",
                       {{"epsilon", 1e-5}, {"momentum", 0.1}, {"count", 50}},
                       {grm.view, grv.view, gbm.view, gbs.view}, {grm.view, grv.view}, stream);
      ASSERT_TRUE(s.ok()) << s.error().message();
      EXPECT_CLOSE(grm.view, nm, "new_running_mean");
      EXPECT_CLOSE(grv.view, nv, "new_running_var");
    }
}

/// A NormKernelTuning to time, and how the bench lines name it.
struct TimedTuning {
  std::string label;
  NormKernelTuning tuning;
};

/// Effective bandwidth of each BN pass at the ResNet-18 (CIFAR) and
/// ResNet-50 shapes of batch 256 (f16) under each of `tunings`: one line
/// per (shape, pass, tuning), "bn-bench shape=... pass=... <label>: us,
/// GB/s" (GB/s of the tensors the pass must move). Restores the tuning
/// it found.
void benchBnPasses(const std::vector<TimedTuning> &tunings) {
  const NormKernelTuning defaults = normKernelTuning();
  const std::vector<Shape> shapes = {{256, 32, 32, 64},   {256, 16, 16, 128}, {256, 8, 8, 256},
                                     {256, 4, 4, 512},    {256, 112, 112, 64}, {256, 56, 56, 64},
                                     {256, 56, 56, 256},  {256, 28, 28, 512}, {256, 14, 14, 1024},
                                     {256, 7, 7, 2048}};
  const DType t = DType::f16;
  std::mt19937 rng(9);
  cudaEvent_t start, stop;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  for (const Shape &shape : shapes) {
    const int64_t n = numel(shape), C = shape.back();
    const size_t bytes = size_t(n) * elementSize(t);
    TestStream stream(kWorkspaceBytes);
    DeviceBuffer x(bytes), y(bytes), dy(bytes), dx(bytes), masked(bytes);
    // Random values (a block of them tiled), so that the ReLU masks and
    // the sums are realistic.
    std::uniform_real_distribution<float> uniform(-2.f, 2.f);
    std::vector<float> block(size_t(1) << 20);
    for (float &v : block)
      v = uniform(rng);
    std::vector<uint8_t> blockBytes = testing::encode(block, t);
    for (size_t at = 0; at < bytes; at += blockBytes.size()) {
      size_t count = std::min(blockBytes.size(), bytes - at);
      ASSERT_EQ(cudaMemcpy(static_cast<uint8_t *>(x.data()) + at, blockBytes.data(), count,
                           cudaMemcpyHostToDevice),
                cudaSuccess);
      ASSERT_EQ(cudaMemcpy(static_cast<uint8_t *>(dy.data()) + at,
                           blockBytes.data() + (blockBytes.size() - count), count,
                           cudaMemcpyHostToDevice),
                cudaSuccess);
    }
    GpuTensor w = upload(randomTensor({C}, DType::f32, rng, 0.5f, 1.5f));
    GpuTensor m = deviceTensor({C}, DType::f32), s = deviceTensor({C}, DType::f32);
    GpuTensor wg = deviceTensor({C}, DType::f32), bg = deviceTensor({C}, DType::f32);
    DeviceTensor xv{x.data(), t, shape}, yv{y.data(), t, shape}, dyv{dy.data(), t, shape},
        dxv{dx.data(), t, shape}, maskedv{masked.data(), t, shape};
    const auto &r = stream.resources();
    ASSERT_TRUE(bnBatchStats(xv, 1e-5, m.view, s.view, r.stream, r.workspace, r.workspaceBytes).ok());
    std::string name = std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + "x" +
                       std::to_string(shape[2]) + "x" + std::to_string(shape[3]);
    for (const TimedTuning &timed : tunings) {
      ASSERT_TRUE(setNormKernelTuning(timed.tuning).ok()) << timed.label;
      auto time = [&](const char *pass, double traffic, auto &&body) {
        for (int i = 0; i < 2; ++i)
          ASSERT_TRUE(body().ok());
        const int reps = 10;
        cudaEventRecord(start, r.stream);
        for (int i = 0; i < reps; ++i)
          ASSERT_TRUE(body().ok());
        cudaEventRecord(stop, r.stream);
        ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        double seconds = ms / 1e3 / reps;
        std::printf("bn-bench shape=%s pass=%s %s: %.1f us, %.0f GB/s\n", name.c_str(), pass,
                    timed.label.c_str(), seconds * 1e6, traffic / seconds / 1e9);
      };
      time("stats", double(bytes), [&] {
        return bnBatchStats(xv, 1e-5, m.view, s.view, r.stream, r.workspace, r.workspaceBytes);
      });
      time("apply+relu", 2.0 * bytes,
           [&] { return bnApply(xv, w.view, w.view, m.view, s.view, true, yv, r.stream); });
      time("apply+add+relu", 3.0 * bytes, [&] {
        return bnApplyAddRelu(xv, w.view, w.view, m.view, s.view, dyv, yv, r.stream);
      });
      // Reads dy, the ReLU result and x twice; writes dx.
      time("backward+relu", 7.0 * bytes, [&] {
        return bnBackward(dyv, &yv, nullptr, xv, w.view, m.view, s.view, wg.view, bg.view, dxv,
                          wg.view, bg.view, r.stream, r.workspace, r.workspaceBytes);
      });
      // The mask recomputed from x (relu_recompute): reads dy and x
      // twice; writes dx.
      time("backward+relu recomputed", 5.0 * bytes, [&] {
        return bnBackward(dyv, nullptr, &w.view, xv, w.view, m.view, s.view, wg.view, bg.view,
                          dxv, wg.view, bg.view, r.stream, r.workspace, r.workspaceBytes);
      });
      // Reads dy, the ReLU result and x, writes the masked dy, reads it
      // and x again, writes dx.
      time("add+relu backward", 7.0 * bytes, [&] {
        return bnAddReluBackward(dyv, yv, xv, w.view, m.view, s.view, wg.view, bg.view, dxv,
                                 maskedv, wg.view, bg.view, r.stream, r.workspace,
                                 r.workspaceBytes);
      });
    }
  }
  ASSERT_TRUE(setNormKernelTuning(defaults).ok());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

/// Every rows-per-iteration and vector-width choice of NormKernelTuning
/// (applied to all three pass families), so that the defaults can be
/// picked by measurement (set RN_CUDA_BENCH=1 to run; no timing asserted).
TEST(NormKernelsTest, ResNetSizeBandwidth) {
  RN_SKIP_WITHOUT_CUDA();
  if (!std::getenv("RN_CUDA_BENCH"))
    GTEST_SKIP() << "set RN_CUDA_BENCH=1 to measure";
  std::vector<TimedTuning> tunings;
  for (int rows : {1, 2, 4})
    for (int vecBytes : {8, 16}) {
      NormKernelTuning k = normKernelTuning();
      k.statsRows = k.applyRows = k.backwardRows = rows;
      k.statsVecBytes = k.applyVecBytes = k.backwardVecBytes = vecBytes;
      tunings.push_back({"rows=" + std::to_string(rows) + " vec=" + std::to_string(vecBytes), k});
    }
  benchBnPasses(tunings);
}

/// The blocks each pass family's grid aims for (NormKernelTuning's
/// targets, all three families alike): the default 1024 is about two
/// waves at 4 resident blocks per SM on a 132-SM card but 1.55 at the
/// backward statistics pass's 5, so the sweep takes whole waves at 4, 5
/// and 8 blocks on 132 SMs too (set RN_CUDA_BENCH=1 to run; no timing asserted).
TEST(NormKernelsTest, TargetBlocksBandwidth) {
  RN_SKIP_WITHOUT_CUDA();
  if (!std::getenv("RN_CUDA_BENCH"))
    GTEST_SKIP() << "set RN_CUDA_BENCH=1 to measure";
  std::vector<TimedTuning> tunings;
  for (int blocks : {528, 660, 1024, 1056, 1320, 2112, 2640, 4224}) {
    NormKernelTuning k = normKernelTuning();
    k.statsBlocks = k.applyBlocks = k.backwardBlocks = blocks;
    tunings.push_back({"blocks=" + std::to_string(blocks), k});
  }
  benchBnPasses(tunings);
}

// Tests that the f16 passes keep the blocks per SM of the measured build
// (docs/benchmarks.md, "The BN kernels"): the floors follow from the
// registers ptxas gave them (statsPartial 32, apply 58, backwardPartial 48,
// backwardApply 56 at 256 threads). At 66 registers backwardApplyKernel
// drops to 3 blocks, which slows ResNet-50's step measurably.
TEST(NormKernelsTest, KernelsKeepTheirOccupancy) {
  RN_SKIP_WITHOUT_CUDA();
  Result<NormKernelOccupancy> o = normKernelOccupancy(DType::f16);
  ASSERT_TRUE(o.ok()) << o.error().message();
  std::printf("f16 blocks per SM: statsPartial %d, apply %d, backwardPartial %d, "
              "backwardApply %d\n",
              o->statsPartial, o->apply, o->backwardPartial, o->backwardApply);
  EXPECT_GE(o->statsPartial, 8);
  EXPECT_GE(o->apply, 4);
  EXPECT_GE(o->backwardPartial, 5);
  EXPECT_GE(o->backwardApply, 4);
}

TEST(NormKernelsTest, RejectsBadOperands) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream(kWorkspaceBytes);
  GpuTensor x = deviceTensor({4, 8}, DType::f32), w = deviceTensor({7}, DType::f32);
  GpuTensor y = deviceTensor({4, 8}, DType::f32), m = deviceTensor({8}, DType::f32);
  Status s = runOp("batch_norm_train", {{"epsilon", 1e-5}}, {x.view, w.view, w.view},
                   {y.view, m.view, m.view}, stream);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("batch_norm_train"), std::string::npos)
      << s.error().message();
  // Too little workspace is an error, not an overrun.
  Status t = bnBackward(y.view, nullptr, nullptr, x.view, m.view, m.view, m.view, m.view, m.view,
                        y.view, m.view, m.view, stream.stream(), stream.resources().workspace, 16);
  EXPECT_FALSE(t.ok());
}

} // namespace
} // namespace rn::cuda
