//===- layer_norm_kernels_test.cpp - Layer norm and layer scale on the GPU -===//
//
// The GPU's layer_norm, layer_norm_backward, channel_scale and
// channel_scale_backward (norm_kernels.h) against the CPU reference kernels
// at f32, f16 and bf16, with f32 parameters of low-precision activations
// (mixed precision's), channel counts below, at and above a warp and a
// ragged one, and the gradients written in place over their accumulators.
// Skipped where no CUDA device answers.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/dtype.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/cuda/norm_kernels.h"
#include "cuda_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace rn::cuda {
namespace {

using Shape = std::vector<int64_t>;
using testing::allocate;
using testing::DeviceArray;
using testing::DeviceBuffer;
using testing::download;
using testing::numel;
using testing::roundAll;
using testing::TestStream;
using testing::upload;

std::vector<float> randomValues(int64_t n, std::mt19937 &rng, float lo, float hi, DType type) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(rng);
  return roundAll(std::move(v), type);
}

cpu::TensorView view(std::vector<float> &v, Shape shape, DType type = DType::f32) {
  return cpu::TensorView{v.data(), std::move(shape), type};
}

/// |gpu - cpu| within a few units of the dtype's precision of the values' scale.
void expectClose(const std::vector<float> &gpu, const std::vector<float> &cpu, DType type,
                 const char *what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  double scale = 1e-3;
  for (float v : cpu)
    scale = std::max(scale, double(std::fabs(v)));
  const double tol = (type == DType::f32 ? 2e-5 : type == DType::f16 ? 4e-3 : 3e-2) * scale;
  for (size_t i = 0; i < gpu.size(); ++i)
    ASSERT_NEAR(gpu[i], cpu[i], tol) << what << " at " << i;
}

struct Case {
  Shape shape;
  DType type;
  DType paramType;
};

const Case kCases[] = {
    {{2, 3, 5, 8}, DType::f32, DType::f32},    {{2, 4, 4, 96}, DType::f32, DType::f32},
    {{3, 7, 7, 40}, DType::f16, DType::f32},   {{4, 2, 2, 768}, DType::bf16, DType::f32},
    {{1000, 33}, DType::f32, DType::f32},      {{5, 3, 3, 24}, DType::f16, DType::f16},
};

TEST(LayerNormKernelsTest, ForwardAndBackwardMatchCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(41);
  for (const Case &c : kCases) {
    SCOPED_TRACE(std::to_string(c.shape.back()) + " channels, " + std::string(dtypeName(c.type)));
    const int64_t n = numel(c.shape), C = c.shape.back();
    const double eps = 1e-6;
    std::vector<float> x = randomValues(n, rng, -2.0f, 3.0f, c.type);
    std::vector<float> dy = randomValues(n, rng, -1.0f, 1.0f, c.type);
    std::vector<float> w = randomValues(C, rng, 0.5f, 1.5f, c.paramType);
    std::vector<float> b = randomValues(C, rng, -0.5f, 0.5f, c.paramType);
    std::vector<float> gAcc = randomValues(C, rng, -1.0f, 1.0f, c.paramType);
    std::vector<float> bAcc = randomValues(C, rng, -1.0f, 1.0f, c.paramType);

    std::vector<float> y(n), dx(n), dw(C), db(C);
    ASSERT_TRUE(cpu::layerNorm(view(x, c.shape, c.type), view(w, {C}, c.paramType),
                               view(b, {C}, c.paramType), eps, view(y, c.shape, c.type))
                    .ok());
    ASSERT_TRUE(cpu::layerNormBackward(view(dy, c.shape, c.type), view(x, c.shape, c.type),
                                       view(w, {C}, c.paramType), view(gAcc, {C}, c.paramType),
                                       view(bAcc, {C}, c.paramType), eps,
                                       view(dx, c.shape, c.type), view(dw, {C}, c.paramType),
                                       view(db, {C}, c.paramType))
                    .ok());

    DeviceArray gx = upload(x, c.shape, c.type), gdy = upload(dy, c.shape, c.type);
    DeviceArray gw = upload(w, {C}, c.paramType), gb = upload(b, {C}, c.paramType);
    DeviceArray gAccW = upload(gAcc, {C}, c.paramType), gAccB = upload(bAcc, {C}, c.paramType);
    DeviceArray gy = allocate(c.shape, c.type), gdx = allocate(c.shape, c.type);
    RN_ASSERT_STATUS_OK(layerNorm(gx.view, gw.view, gb.view, eps, gy.view, stream.get()));
    DeviceBuffer workspace(layerNormBackwardWorkspaceBytes(c.shape));
    // In place: the gradients over their accumulators.
    RN_ASSERT_STATUS_OK(layerNormBackward(gdy.view, gx.view, gw.view, gAccW.view, gAccB.view, eps,
                                          gdx.view, gAccW.view, gAccB.view, stream.get(),
                                          workspace.data(), workspace.bytes()));
    RN_ASSERT_CUDA(stream.sync());
    expectClose(download(gy.view), y, c.type, "y");
    expectClose(download(gdx.view), dx, c.type, "dx");
    expectClose(download(gAccW.view), dw, c.paramType, "dweight");
    expectClose(download(gAccB.view), db, c.paramType, "dbias");
  }
}

TEST(LayerNormKernelsTest, BackwardIsDeterministic) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(43);
  Shape shape{8, 14, 14, 96};
  const int64_t n = numel(shape), C = shape.back();
  std::vector<float> x = randomValues(n, rng, -2.0f, 2.0f, DType::f32);
  std::vector<float> dy = randomValues(n, rng, -1.0f, 1.0f, DType::f32);
  std::vector<float> w = randomValues(C, rng, 0.5f, 1.5f, DType::f32), zero(C, 0.0f);
  DeviceArray gx = upload(x, shape, DType::f32), gdy = upload(dy, shape, DType::f32);
  DeviceArray gw = upload(w, {C}, DType::f32), acc = upload(zero, {C}, DType::f32);
  DeviceArray dx = allocate(shape, DType::f32), dw1 = allocate({C}, DType::f32),
              db1 = allocate({C}, DType::f32), dw2 = allocate({C}, DType::f32),
              db2 = allocate({C}, DType::f32);
  DeviceBuffer workspace(layerNormBackwardWorkspaceBytes(shape));
  for (DeviceArray *out : {&dw1, &dw2}) {
    DeviceArray &db = out == &dw1 ? db1 : db2;
    RN_ASSERT_STATUS_OK(layerNormBackward(gdy.view, gx.view, gw.view, acc.view, acc.view, 1e-6,
                                          dx.view, out->view, db.view, stream.get(),
                                          workspace.data(), workspace.bytes()));
  }
  RN_ASSERT_CUDA(stream.sync());
  EXPECT_EQ(download(dw1.view), download(dw2.view));
  EXPECT_EQ(download(db1.view), download(db2.view));
}

TEST(LayerNormKernelsTest, ChannelScaleMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(47);
  for (const Case &c : kCases) {
    SCOPED_TRACE(std::to_string(c.shape.back()) + " channels, " + std::string(dtypeName(c.type)));
    const int64_t n = numel(c.shape), C = c.shape.back();
    std::vector<float> x = randomValues(n, rng, -2.0f, 2.0f, c.type);
    std::vector<float> dy = randomValues(n, rng, -1.0f, 1.0f, c.type);
    std::vector<float> s = randomValues(C, rng, -1.0f, 1.0f, c.type);
    std::vector<float> acc = randomValues(C, rng, -1.0f, 1.0f, c.type);
    std::vector<float> y(n), dx(n), ds(C);
    ASSERT_TRUE(cpu::channelScale(view(x, c.shape, c.type), view(s, {C}, c.type),
                                  view(y, c.shape, c.type))
                    .ok());
    ASSERT_TRUE(cpu::channelScaleBackward(view(dy, c.shape, c.type), view(x, c.shape, c.type),
                                          view(s, {C}, c.type), view(acc, {C}, c.type),
                                          view(dx, c.shape, c.type), view(ds, {C}, c.type))
                    .ok());
    DeviceArray gx = upload(x, c.shape, c.type), gdy = upload(dy, c.shape, c.type);
    DeviceArray gs = upload(s, {C}, c.type), gacc = upload(acc, {C}, c.type);
    DeviceArray gy = allocate(c.shape, c.type), gdx = allocate(c.shape, c.type);
    RN_ASSERT_STATUS_OK(channelScale(gx.view, gs.view, gy.view, stream.get()));
    DeviceBuffer workspace(channelScaleBackwardWorkspaceBytes(c.shape));
    RN_ASSERT_STATUS_OK(channelScaleBackward(gdy.view, gx.view, gs.view, gacc.view, gdx.view,
                                             gacc.view, stream.get(), workspace.data(),
                                             workspace.bytes()));
    RN_ASSERT_CUDA(stream.sync());
    EXPECT_EQ(download(gy.view), y);  // one product, rounded once on both sides
    EXPECT_EQ(download(gdx.view), dx);
    expectClose(download(gacc.view), ds, c.type, "dscale");
  }
}

} // namespace
} // namespace rn::cuda
