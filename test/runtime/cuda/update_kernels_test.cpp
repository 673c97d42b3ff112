//===- update_kernels_test.cpp - GPU optimizers against the CPU kernels ----===//
//
// The ops of updateLaunchers() on random data (sizes 1, 3, 17, 1000, an
// NHWC-shaped filter and one just over 2^20 elements; f32, f16, bf16),
// compared with the rn::cpu reference. Optimizer results are compared as
// updates, (new - old), by the norm-wise relative error, since the new
// values themselves are dominated by the old ones: 1e-5 for f32, 5e-3 for
// f16, 3e-2 for bf16 (a one-ulp difference of a stored bf16 value is a
// large part of its update). In place and out of place, with skip_if set
// and clear, scalars on the device. Skips without a CUDA device.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/op_registry.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/cuda/op_launch.h"
#include "runtime/cuda/update_kernels.h"
#include "cuda_test_util.h"
#include "host_tensor_util.h"
#include "node_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
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
using testing::randomTensor;
using testing::relativeError;
using testing::updateError;
using testing::updateTolerance;
using testing::upload;
using testing::uploadBytes;

GpuTensor scalarF32(float v) { return uploadBytes(&v, 4, DType::f32, {}); }
GpuTensor scalarI32(int32_t v) { return uploadBytes(&v, 4, DType::i32, {}); }
GpuTensor flagI1(bool v) {
  uint8_t b = v ? 1 : 0;
  return uploadBytes(&b, 1, DType::i1, {});
}

/// The tensor's values as floats. Unlike testing::download, the copy's
/// status is checked.
std::vector<float> download(const DeviceTensor &t) {
  std::vector<uint8_t> bytes(size_t(t.numel()) * elementSize(t.dtype));
  EXPECT_EQ(cudaMemcpy(bytes.data(), t.data, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  return testing::decode(bytes, t.dtype);
}

/// A non-blocking stream with the UPDATE stream's 1 MiB workspace.
class TestStream {
public:
  TestStream() : workspace_(kBytes) {
    EXPECT_EQ(cudaStreamCreateWithFlags(&resources_.stream, cudaStreamNonBlocking), cudaSuccess);
    resources_.name = "update";
    resources_.workspace = workspace_.data();
    resources_.workspaceBytes = kBytes;
  }
  ~TestStream() { cudaStreamDestroy(resources_.stream); }
  const StreamResources &resources() const { return resources_; }
  void sync() { EXPECT_EQ(cudaStreamSynchronize(resources_.stream), cudaSuccess); }

private:
  static constexpr size_t kBytes = size_t(1) << 20;
  DeviceBuffer workspace_;
  StreamResources resources_;
};

Status runOp(const std::string &op, const nlohmann::json &attributes,
             const std::vector<DeviceTensor> &operands, const std::vector<DeviceTensor> &results,
             TestStream &stream) {
  const OpLauncher *launcher = nullptr;
  for (const OpLauncher &l : updateLaunchers())
    if (opName(l.op) == op)
      launcher = &l;
  if (!launcher)
    return Error("no launcher for " + op);
  Node node;
  node.op = op;
  node.attributes = attributes;
  if (!test::layOut(node, operands.size(), results.size()))
    return Error(op + ": the operand and result counts do not fit its op table entry");
  // The update launchers use neither runner; they are never dereferenced.
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
      return Error(op + ": prepare asks for more than the UPDATE stream's 1 MiB");
  }
  Status status = launcher->launch(launch);
  stream.sync();
  return status;
}

const std::vector<Shape> &shapes() {
  static const std::vector<Shape> s = {{1}, {3}, {17}, {1000}, {64, 3, 3, 17}, {(1 << 20) + 3}};
  return s;
}

std::string name(const Shape &shape, DType t) {
  std::string s(dtypeName(t));
  for (int64_t d : shape)
    s += "_" + std::to_string(d);
  return s;
}

/// Out-of-place result tensors, or the operands themselves when in place.
GpuTensor resultFor(const GpuTensor &operand, bool inPlace, const Shape &shape, DType t) {
  if (inPlace)
    return GpuTensor{nullptr, operand.view};
  return deviceTensor(shape, t);
}

TEST(UpdateKernelsTest, SgdMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(11);
  struct Config {
    double momentum, weightDecay;
    bool nesterov;
  };
  for (const Shape &shape : shapes())
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      for (Config cfg : {Config{0, 0, false}, Config{0.9, 1e-4, false}, Config{0.9, 5e-2, true},
                         Config{0, 1e-2, false}})
        for (bool inPlace : {false, true})
          for (int skipMode : {0, 1, 2}) { // no operand, flag clear, flag set
            SCOPED_TRACE(name(shape, t) + " momentum " + std::to_string(cfg.momentum) +
                         (cfg.nesterov ? " nesterov" : "") + (inPlace ? " in place" : "") +
                         " skip mode " + std::to_string(skipMode));
            const bool buffer = cfg.momentum != 0;
            HostTensor p = randomTensor(shape, t, rng, -1, 1), g = randomTensor(shape, t, rng, -1, 1);
            HostTensor b = randomTensor(shape, t, rng, -1, 1);
            HostTensor np = p, nb = b;
            const float lr = 0.1f;
            cpu::SgdAttrs attrs{cfg.momentum, cfg.weightDecay, cfg.nesterov};
            cpu::TensorView bView = b.view(), nbView = nb.view();
            ASSERT_TRUE(cpu::sgdUpdate(p.view(), g.view(), buffer ? &bView : nullptr, lr,
                                       skipMode == 2, attrs, np.view(),
                                       buffer ? &nbView : nullptr)
                            .ok());
            GpuTensor gp = upload(p), gg = upload(g), gb = upload(b), glr = scalarF32(lr),
                      gskip = flagI1(skipMode == 2);
            GpuTensor rp = resultFor(gp, inPlace, shape, t), rb = resultFor(gb, inPlace, shape, t);
            std::vector<DeviceTensor> operands = {gp.view, gg.view};
            std::vector<DeviceTensor> results = {rp.view};
            if (buffer) {
              operands.push_back(gb.view);
              results.push_back(rb.view);
            }
            operands.push_back(glr.view);
            if (skipMode)
              operands.push_back(gskip.view);
            Status s = runOp("sgd_update",
                             {{"momentum", cfg.momentum},
                              {"weight_decay", cfg.weightDecay},
                              {"nesterov", cfg.nesterov}},
                             operands, results, stream);
            ASSERT_TRUE(s.ok()) << s.error().message();
            if (skipMode == 2) {
              EXPECT_EQ(relativeError(download(rp.view), p.values), 0.0);
              if (buffer) {
                EXPECT_EQ(relativeError(download(rb.view), b.values), 0.0);
              }
              continue;
            }
            EXPECT_LE(updateError(download(rp.view), np.values, p.values), updateTolerance(t));
            if (buffer) {
              EXPECT_LE(relativeError(download(rb.view), nb.values), updateTolerance(t));
            }
          }
}

TEST(UpdateKernelsTest, AdamWMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(12);
  for (const Shape &shape : shapes())
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      for (int32_t step : {1, 7})
        for (bool inPlace : {false, true})
          for (int skipMode : {0, 1, 2}) {
            SCOPED_TRACE(name(shape, t) + " step " + std::to_string(step) +
                         (inPlace ? " in place" : "") + " skip mode " + std::to_string(skipMode));
            HostTensor p = randomTensor(shape, t, rng, -1, 1), g = randomTensor(shape, t, rng, -1, 1);
            HostTensor m = randomTensor(shape, t, rng, -0.1f, 0.1f);
            HostTensor v = randomTensor(shape, t, rng, 0.001f, 0.01f);
            HostTensor np = p, nm = m, nv = v;
            const float lr = 0.01f;
            cpu::AdamWAttrs attrs{0.9, 0.999, 1e-8, 0.01};
            ASSERT_TRUE(cpu::adamwUpdate(p.view(), g.view(), m.view(), v.view(), lr, step,
                                         skipMode == 2, attrs, np.view(), nm.view(), nv.view())
                            .ok());
            GpuTensor gp = upload(p), gg = upload(g), gm = upload(m), gv = upload(v);
            GpuTensor glr = scalarF32(lr), gstep = scalarI32(step), gskip = flagI1(skipMode == 2);
            GpuTensor rp = resultFor(gp, inPlace, shape, t), rm = resultFor(gm, inPlace, shape, t),
                      rv = resultFor(gv, inPlace, shape, t);
            std::vector<DeviceTensor> operands = {gp.view, gg.view,  gm.view,
                                                  gv.view, glr.view, gstep.view};
            if (skipMode)
              operands.push_back(gskip.view);
            Status s = runOp("adamw_update",
                             {{"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 1e-8},
                              {"weight_decay", 0.01}},
                             operands, {rp.view, rm.view, rv.view}, stream);
            ASSERT_TRUE(s.ok()) << s.error().message();
            if (skipMode == 2) {
              EXPECT_EQ(relativeError(download(rp.view), p.values), 0.0);
              EXPECT_EQ(relativeError(download(rm.view), m.values), 0.0);
              EXPECT_EQ(relativeError(download(rv.view), v.values), 0.0);
              continue;
            }
            EXPECT_LE(updateError(download(rp.view), np.values, p.values), updateTolerance(t));
            EXPECT_LE(relativeError(download(rm.view), nm.values), updateTolerance(t));
            EXPECT_LE(relativeError(download(rv.view), nv.values), updateTolerance(t));
          }
}

TEST(UpdateKernelsTest, LarsMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(13);
  for (const Shape &shape : shapes())
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      for (bool zeroGrad : {false, true})
        for (bool inPlace : {false, true})
          for (int skipMode : {0, 1, 2}) {
            SCOPED_TRACE(name(shape, t) + (zeroGrad ? " zero grad" : "") +
                         (inPlace ? " in place" : "") + " skip mode " + std::to_string(skipMode));
            HostTensor p = randomTensor(shape, t, rng, -1, 1), g = randomTensor(shape, t, rng, -1, 1);
            if (zeroGrad)
              std::fill(g.values.begin(), g.values.end(), 0.f);
            HostTensor b = randomTensor(shape, t, rng, -1, 1);
            HostTensor np = p, nb = b;
            const float lr = 0.5f;
            cpu::LarsAttrs attrs{0.9, 1e-4, 0.02, 1e-9};
            ASSERT_TRUE(cpu::larsUpdate(p.view(), g.view(), b.view(), lr, skipMode == 2, attrs,
                                        np.view(), nb.view())
                            .ok());
            GpuTensor gp = upload(p), gg = upload(g), gb = upload(b), glr = scalarF32(lr),
                      gskip = flagI1(skipMode == 2);
            GpuTensor rp = resultFor(gp, inPlace, shape, t), rb = resultFor(gb, inPlace, shape, t);
            std::vector<DeviceTensor> operands = {gp.view, gg.view, gb.view, glr.view};
            if (skipMode)
              operands.push_back(gskip.view);
            Status s = runOp("lars_update",
                             {{"momentum", 0.9}, {"weight_decay", 1e-4},
                              {"trust_coefficient", 0.02}, {"epsilon", 1e-9}},
                             operands, {rp.view, rb.view}, stream);
            ASSERT_TRUE(s.ok()) << s.error().message();
            if (skipMode == 2) {
              EXPECT_EQ(relativeError(download(rp.view), p.values), 0.0);
              EXPECT_EQ(relativeError(download(rb.view), b.values), 0.0);
              continue;
            }
            EXPECT_LE(updateError(download(rp.view), np.values, p.values), updateTolerance(t));
            EXPECT_LE(relativeError(download(rb.view), nb.values), updateTolerance(t));
          }
}

TEST(UpdateKernelsTest, EmaAndUnscaleMatchCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(14);
  for (const Shape &shape : shapes())
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      for (bool inPlace : {false, true}) {
        SCOPED_TRACE(name(shape, t) + (inPlace ? " in place" : ""));
        HostTensor a = randomTensor(shape, t, rng, -1, 1), p = randomTensor(shape, t, rng, -1, 1);
        HostTensor na = a;
        ASSERT_TRUE(cpu::emaUpdate(a.view(), p.view(), 0.99, na.view()).ok());
        GpuTensor ga = upload(a), gp = upload(p);
        GpuTensor ra = resultFor(ga, inPlace, shape, t);
        Status s = runOp("ema_update", {{"decay", 0.99}}, {ga.view, gp.view}, {ra.view}, stream);
        ASSERT_TRUE(s.ok()) << s.error().message();
        EXPECT_LE(updateError(download(ra.view), na.values, a.values), updateTolerance(t));

        HostTensor g = randomTensor(shape, t, rng, -1000, 1000), u = g;
        ASSERT_TRUE(cpu::unscale(g.view(), 1024.f * 3, u.view()).ok());
        GpuTensor gg = upload(g), gscale = scalarF32(1024.f * 3);
        GpuTensor ru = resultFor(gg, inPlace, shape, t);
        s = runOp("unscale", nlohmann::json::object(), {gg.view, gscale.view}, {ru.view}, stream);
        ASSERT_TRUE(s.ok()) << s.error().message();
        // One correctly rounded division in both: bit-identical.
        EXPECT_EQ(relativeError(download(ru.view), u.values), 0.0);
      }
}

TEST(UpdateKernelsTest, CheckFiniteFindsInfAndNaN) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(15);
  // 70 tensors: more than one launch's batch.
  for (int poisoned : {-1, 0, 5, 66, 69})
    for (float bad : {INFINITY, -INFINITY, NAN}) {
      SCOPED_TRACE("poisoned " + std::to_string(poisoned) + " with " + std::to_string(bad));
      std::vector<HostTensor> host;
      std::vector<GpuTensor> gpu;
      std::vector<DeviceTensor> views;
      for (int k = 0; k < 70; ++k) {
        const DType types[] = {DType::f32, DType::f16, DType::bf16};
        const Shape shape = shapes()[size_t(k) % shapes().size()];
        HostTensor h = randomTensor(shape, types[k % 3], rng, -60000, 60000);
        if (k == poisoned)
          h.values[size_t(rng() % h.values.size())] = bad;
        host.push_back(h);
      }
      std::vector<cpu::TensorView> cpuViews;
      for (HostTensor &h : host) {
        cpuViews.push_back(h.view());
        gpu.push_back(upload(h));
        views.push_back(gpu.back().view);
      }
      const bool expected = cpu::checkFinite(cpuViews);
      ASSERT_EQ(expected, poisoned >= 0);
      GpuTensor flag = flagI1(!expected); // stale value: must be overwritten
      Status s = runOp("check_finite", nlohmann::json::object(), views, {flag.view}, stream);
      ASSERT_TRUE(s.ok()) << s.error().message();
      EXPECT_EQ(download(flag.view)[0], expected ? 1.f : 0.f);
    }
}

TEST(UpdateKernelsTest, UpdateLossScaleMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  struct Case {
    float scale;
    int32_t good;
    bool found;
  };
  for (Case c : {Case{65536.f, 3, true}, Case{65536.f, 3, false}, Case{65536.f, 1999, false},
                 Case{3e38f, 1999, false}, Case{1.f, 0, true}})
    for (bool inPlace : {false, true}) {
      SCOPED_TRACE(std::to_string(c.scale) + " " + std::to_string(c.good) +
                   (c.found ? " found" : "") + (inPlace ? " in place" : ""));
      float scale = 0;
      int32_t good = 0;
      ASSERT_TRUE(
          cpu::updateLossScale(c.scale, c.good, c.found, 2.0, 0.5, 2000, scale, good).ok());
      GpuTensor gs = scalarF32(c.scale), gg = scalarI32(c.good), gf = flagI1(c.found);
      GpuTensor rs = inPlace ? GpuTensor{nullptr, gs.view} : scalarF32(-1);
      GpuTensor rg = inPlace ? GpuTensor{nullptr, gg.view} : scalarI32(-1);
      Status s = runOp("update_loss_scale",
                       {{"growth", 2.0}, {"backoff", 0.5}, {"growth_interval", 2000}},
                       {gs.view, gg.view, gf.view}, {rs.view, rg.view}, stream);
      ASSERT_TRUE(s.ok()) << s.error().message();
      EXPECT_EQ(download(rs.view)[0], scale);
      EXPECT_EQ(download(rg.view)[0], float(good));
    }
}

TEST(UpdateKernelsTest, RejectsBadOperands) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  GpuTensor p = deviceTensor({8}, DType::f32), g = deviceTensor({7}, DType::f32);
  GpuTensor lr = scalarF32(0.1f);
  Status s = runOp("sgd_update", {{"momentum", 0.0}}, {p.view, g.view, lr.view}, {p.view}, stream);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("sgd_update"), std::string::npos) << s.error().message();
}

} // namespace
} // namespace rn::cuda

namespace rn::cuda {
namespace {

// Tests that every op an artifact may hold (the op table, generated from
// the ODS) has a GPU launcher, so that a program the loader accepts never
// fails to load on the GPU for a missing kernel (a host-only check: it runs
// in CI), and that the check names an op whose launcher is missing.
TEST(OpLaunchers, CoverEveryOpOfTheOpTable) {
  EXPECT_THAT(opsWithout([](std::string_view op) { return findOpLauncher(op) != nullptr; }),
              ::testing::IsEmpty())
      << "add a launcher to runtime/cuda/ops_*.cpp for these ops";
  auto withoutLinear = [](std::string_view op) {
    return op != "linear" && findOpLauncher(op) != nullptr;
  };
  EXPECT_THAT(opsWithout(withoutLinear), ::testing::ElementsAre("linear"));
}

} // namespace
} // namespace rn::cuda
