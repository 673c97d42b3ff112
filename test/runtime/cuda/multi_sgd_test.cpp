//===- multi_sgd_test.cpp - The multi-tensor update kernels on the GPU ----===//
//
// multi_sgd_update (and multi_adamw_update, the same way, with lr 0.1,
// step 1 and 7) through its launcher (prepare builds the device table,
// launch issues one kernel) against
//   - the CPU reference (cpu::multiSgdUpdate; adamwUpdate per tensor), as
//     update_kernels_test.cpp compares sgd_update (updates by the norm-wise
//     relative error: 1e-5 f32, 5e-3 f16, 3e-2 bf16; a skipped step
//     exactly);
//   - the per-parameter GPU kernel (sgd_update, adamw_update on each
//     tensor), bit for bit: both run the same per-element code.
// Groups: odd sizes and sizes that are no multiple of 4 or 8, sizes around
// the 16384-element chunk, one over 2^20, views off the 16-byte alignment
// (the unpacked path) next to aligned ones, and 300 small tensors; f32, f16
// and bf16; with and without momentum, Nesterov and weight decay; skip_if
// absent, clear and set; in place and out of place; two steps in a row.
// Also: the launch is a single kernel node when captured, and a launch
// without its table or with other addresses fails; multi_unscale,
// multi_zero, multi_cast and multi_ema_update against the per-tensor ops;
// multi_lars_update against cpu::multiLarsUpdate and lars_update per
// tensor (bit for bit), two kernel nodes when captured.
// Skips without a GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_kernels.h"
#include "runtime/cuda/op_launch.h"
#include "runtime/cuda/update_kernels.h"
#include "cuda_test_util.h"
#include "host_tensor_util.h"
#include "node_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace rn::cuda {
namespace {

using namespace rn::cuda::testing;
using Shape = std::vector<int64_t>;

/// A host tensor (values representable in its dtype) and its device copy.
struct Pair {
  std::vector<float> host;
  Shape shape;
  DType dtype = DType::f32;
  DeviceArray device;
  cpu::TensorView view() { return cpu::TensorView{host.data(), shape, dtype}; }
};

Pair randomPair(const Shape &shape, DType dtype, std::mt19937 &rng, int64_t offset) {
  Pair p;
  p.shape = shape;
  p.dtype = dtype;
  p.host.resize(size_t(numel(shape)));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float &v : p.host)
    v = roundTo(dtype, u(rng));
  p.device = upload(p.host, shape, dtype, offset);
  return p;
}

bool allFinite(const std::vector<float> &values) {
  for (float v : values)
    if (!std::isfinite(v))
      return false;
  return true;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// The UPDATE stream with a workspace (multi_sgd_update needs none,
/// lars_update and multi_lars_update their partial norms).
struct UpdateStream {
  TestStream stream;
  DeviceBuffer workspace{size_t(1) << 20};
  StreamResources resources() const {
    StreamResources r;
    r.name = "update";
    r.stream = stream.get();
    r.workspace = workspace.data();
    r.workspaceBytes = workspace.bytes();
    return r;
  }
};

/// A node of `op` run through its launcher, with the state prepare keeps.
class LaunchedNode {
public:
  LaunchedNode(const std::string &op, nlohmann::json attributes) {
    node_.op = op;
    node_.attributes = std::move(attributes);
    launcher_ = findOpLauncher(op);
  }
  /// Without `workspaceBytes` the node must ask for no workspace.
  Status prepare(const std::vector<DeviceTensor> &operands,
                 const std::vector<DeviceTensor> &results, const StreamResources &stream,
                 size_t *workspaceBytes = nullptr) {
    if (!launcher_)
      return Error("no launcher for " + node_.op);
    if (!launcher_->prepare)
      return Status::success();
    Result<size_t> bytes = launcher_->prepare(makeLaunch(operands, results, stream));
    if (!bytes.ok())
      return bytes.error();
    if (workspaceBytes)
      *workspaceBytes = *bytes;
    else if (*bytes != 0)
      return Error(node_.op + ": asks for workspace");
    return Status::success();
  }
  Status launch(const std::vector<DeviceTensor> &operands,
                const std::vector<DeviceTensor> &results, const StreamResources &stream,
                bool withState = true) {
    if (!launcher_)
      return Error("no launcher for " + node_.op);
    OpLaunch l = makeLaunch(operands, results, stream);
    if (!withState)
      l.prepared = nullptr;
    return launcher_->launch(l);
  }

private:
  OpLaunch makeLaunch(const std::vector<DeviceTensor> &operands,
                      const std::vector<DeviceTensor> &results, const StreamResources &stream) {
    // Laid out for these counts, as the loader would for such a node.
    test::layOut(node_, operands.size(), results.size());
    // The update launchers use neither runner; they are never dereferenced.
    alignas(16) static char unused[16];
    return OpLaunch{node_,
                    -1,
                    operands,
                    results,
                    stream,
                    *reinterpret_cast<ConvRunner *>(unused),
                    *reinterpret_cast<GemmRunner *>(unused),
                    0,
                    &state_};
  }
  Node node_;
  const OpLauncher *launcher_ = nullptr;
  std::unique_ptr<PreparedState> state_;
};

struct Config {
  double momentum, weightDecay;
  bool nesterov;
};

nlohmann::json attributesOf(const Config &c) {
  return {{"momentum", c.momentum}, {"weight_decay", c.weightDecay}, {"nesterov", c.nesterov}};
}

/// The groups: sizes around the pack widths and the chunk (0), and 300
/// small tensors (1).
std::vector<Shape> groupShapes(int which) {
  if (which == 0)
    return {{1}, {3}, {5}, {17}, {1000}, {4099}, {16383}, {16384}, {16385}, {64, 3, 3, 17},
            {(1 << 20) + 3}};
  std::vector<Shape> many;
  std::mt19937 rng(77);
  for (int k = 0; k < 300; ++k)
    many.push_back({int64_t(1 + rng() % 300)});
  return many;
}

TEST(MultiSgdKernel, MatchesCpuAndPerParameterKernel) {
  RN_SKIP_WITHOUT_CUDA();
  UpdateStream update;
  const StreamResources stream = update.resources();
  std::mt19937 rng(41);
  Sweep sweep;
  for (int group = 0; group < 2; ++group)
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      for (Config cfg : {Config{0, 0, false}, Config{0.9, 5e-4, true}, Config{0.9, 0, false},
                         Config{0, 1e-2, false}})
        for (bool inPlace : {false, true})
          for (int skipMode : {0, 1, 2}) { // no operand, flag clear, flag set
            if (sweep.skipNext())
              continue;
            SCOPED_TRACE("group " + std::to_string(group) + " " + std::string(dtypeName(t)) +
                         " momentum " + std::to_string(cfg.momentum) +
                         (cfg.nesterov ? " nesterov" : "") + (inPlace ? " in place" : "") +
                         " skip mode " + std::to_string(skipMode));
            const std::vector<Shape> shapes = groupShapes(group);
            const size_t n = shapes.size();
            const bool buffer = cfg.momentum != 0;
            const float lr = 0.1f;
            // In place, two steps (the second reads what the first wrote);
            // out of place a second step would only repeat the first.
            const int steps = inPlace ? 2 : 1;
            auto offsetOf = [](size_t i) { return int64_t(i % 3 == 2 ? 1 : 0); };
            std::vector<Pair> p, g, b;
            for (size_t i = 0; i < n; ++i) {
              // Every third tensor off the alignment (the unpacked path).
              p.push_back(randomPair(shapes[i], t, rng, offsetOf(i)));
              g.push_back(randomPair(shapes[i], t, rng, offsetOf(i)));
              b.push_back(randomPair(shapes[i], t, rng, offsetOf(i)));
            }

            // The CPU reference.
            std::vector<std::vector<float>> refP(n), refB(n);
            std::vector<cpu::TensorView> cp, cg, cb;
            for (size_t i = 0; i < n; ++i) {
              refP[i] = p[i].host;
              refB[i] = b[i].host;
            }
            for (size_t i = 0; i < n; ++i) {
              cp.push_back(cpu::TensorView{refP[i].data(), shapes[i], t});
              cg.push_back(g[i].view());
              if (buffer)
                cb.push_back(cpu::TensorView{refB[i].data(), shapes[i], t});
            }
            const cpu::SgdAttrs attrs{cfg.momentum, cfg.weightDecay, cfg.nesterov};
            for (int step = 0; step < steps; ++step)
              ASSERT_TRUE(cpu::multiSgdUpdate(cp, cg, cb, lr, skipMode == 2, attrs, cp, cb).ok());

            // The GPU group, through its launcher.
            DeviceArray glr = upload({lr}, {}, DType::f32);
            DeviceArray gskip = upload({skipMode == 2 ? 1.0f : 0.0f}, {}, DType::i1);
            std::vector<DeviceArray> outP, outB;
            std::vector<DeviceTensor> operands, results;
            for (size_t i = 0; i < n; ++i)
              operands.push_back(p[i].device.view);
            for (size_t i = 0; i < n; ++i)
              operands.push_back(g[i].device.view);
            if (buffer)
              for (size_t i = 0; i < n; ++i)
                operands.push_back(b[i].device.view);
            operands.push_back(glr.view);
            if (skipMode)
              operands.push_back(gskip.view);
            auto fresh = [&](size_t i) {
              return upload(std::vector<float>(p[i].host.size(), NAN), shapes[i], t, offsetOf(i));
            };
            for (size_t i = 0; i < n; ++i) {
              if (inPlace) {
                results.push_back(p[i].device.view);
              } else {
                outP.push_back(fresh(i));
                results.push_back(outP.back().view);
              }
            }
            if (buffer)
              for (size_t i = 0; i < n; ++i) {
                if (inPlace) {
                  results.push_back(b[i].device.view);
                } else {
                  outB.push_back(fresh(i));
                  results.push_back(outB.back().view);
                }
              }
            LaunchedNode node("multi_sgd_update", attributesOf(cfg));
            RN_ASSERT_STATUS_OK(node.prepare(operands, results, stream));
            for (int step = 0; step < steps; ++step)
              RN_ASSERT_STATUS_OK(node.launch(operands, results, stream));
            RN_ASSERT_CUDA(update.stream.sync());

            for (size_t i = 0; i < n; ++i) {
              SCOPED_TRACE("tensor " + std::to_string(i) + " of " + std::to_string(n));
              const std::vector<float> gotP = download(results[i]);
              std::vector<float> gotB;
              if (buffer)
                gotB = download(results[n + i]);
              if (skipMode == 2) {
                // Skipped: the state as it was (copied when out of place).
                ASSERT_TRUE(sameBits(gotP, p[i].host));
                if (buffer) {
                  ASSERT_TRUE(sameBits(gotB, b[i].host));
                }
                continue;
              }
              EXPECT_LE(updateError(gotP, refP[i], p[i].host), updateTolerance(t));
              if (buffer) {
                EXPECT_LE(relativeError(gotB, refB[i]), updateTolerance(t));
              }

              // The per-parameter GPU kernel on copies of the same inputs,
              // as many steps: bit for bit.
              DeviceArray sp = upload(p[i].host, shapes[i], t, offsetOf(i));
              DeviceArray sb = upload(b[i].host, shapes[i], t, offsetOf(i));
              std::vector<DeviceTensor> single = {sp.view, g[i].device.view};
              std::vector<DeviceTensor> singleResults = {sp.view};
              if (buffer) {
                single.push_back(sb.view);
                singleResults.push_back(sb.view);
              }
              single.push_back(glr.view);
              if (skipMode)
                single.push_back(gskip.view);
              LaunchedNode sgd("sgd_update", attributesOf(cfg));
              for (int step = 0; step < steps; ++step)
                RN_ASSERT_STATUS_OK(sgd.launch(single, singleResults, stream));
              RN_ASSERT_CUDA(update.stream.sync());
              EXPECT_TRUE(sameBits(gotP, download(sp.view)));
              if (buffer) {
                EXPECT_TRUE(sameBits(gotB, download(sb.view)));
              }
            }
          }
}

TEST(MultiAdamWKernel, MatchesCpuAndPerParameterKernel) {
  RN_SKIP_WITHOUT_CUDA();
  UpdateStream update;
  const StreamResources stream = update.resources();
  std::mt19937 rng(44);
  const nlohmann::json attributes = {
      {"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 1e-8}, {"weight_decay", 1e-2}};
  const cpu::AdamWAttrs attrs{0.9, 0.999, 1e-8, 1e-2};
  Sweep sweep;
  for (int group = 0; group < 2; ++group)
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      for (int32_t stepCount : {1, 7})
        for (bool inPlace : {false, true})
          for (int skipMode : {0, 1, 2}) {
            if (sweep.skipNext())
              continue;
            SCOPED_TRACE("group " + std::to_string(group) + " " + std::string(dtypeName(t)) +
                         " step " + std::to_string(stepCount) + (inPlace ? " in place" : "") +
                         " skip mode " + std::to_string(skipMode));
            const std::vector<Shape> shapes = groupShapes(group);
            const size_t n = shapes.size();
            // Adam's step is about lr per element whatever the gradients'
            // scale: with lr 0.01 it is only a few f16 (one or two bf16)
            // ulps of a parameter in [-1, 1], and one rounding where the
            // CPU's double and the GPU's f32 fall on either side of a
            // half-ulp (legitimate) took a small tensor's update error past
            // the tolerance (1.09 times it, group 1 f16 step 7, in a host
            // replay of this data). lr 0.1, as the SGD test uses.
            const float lr = 0.1f;
            auto offsetOf = [](size_t i) { return int64_t(i % 3 == 2 ? 1 : 0); };
            // params, grads, first moments in [-1, 1], second moments in
            // [1e-4, 1.01e-2]. Without the 1e-4 floor an f16 second moment
            // could be 0 (x * x * 0.01 under f16's smallest subnormal for
            // |x| < 1.7e-3) and stay 0 after the step (0.001 g^2 too,
            // |g| < 5.5e-3): the denominator was epsilon (1e-8), the step
            // 1e7 m, and the new parameter overflowed f16 to the same
            // infinity on the GPU and the CPU, whose difference made the
            // update error NaN (about 10 elements of the 2^20 + 3 tensor).
            std::vector<Pair> in[4];
            for (size_t i = 0; i < n; ++i)
              for (int k = 0; k < 4; ++k) {
                in[k].push_back(randomPair(shapes[i], t, rng, offsetOf(i)));
                if (k == 3) {
                  for (float &x : in[k].back().host)
                    x = roundTo(t, x * x * 0.01f + 1e-4f);
                  in[k].back().device = upload(in[k].back().host, shapes[i], t, offsetOf(i));
                }
              }
            // The CPU reference, one step.
            std::vector<std::vector<float>> ref[3];
            for (size_t i = 0; i < n; ++i) {
              ref[0].push_back(in[0][i].host);
              ref[1].push_back(in[2][i].host);
              ref[2].push_back(in[3][i].host);
              ASSERT_TRUE(cpu::adamwUpdate(in[0][i].view(), in[1][i].view(), in[2][i].view(),
                                           in[3][i].view(), lr, stepCount, skipMode == 2, attrs,
                                           cpu::TensorView{ref[0][i].data(), shapes[i], t},
                                           cpu::TensorView{ref[1][i].data(), shapes[i], t},
                                           cpu::TensorView{ref[2][i].data(), shapes[i], t})
                              .ok());
            }
            DeviceArray glr = upload({lr}, {}, DType::f32);
            DeviceArray gstep = upload({float(stepCount)}, {}, DType::i32);
            DeviceArray gskip = upload({skipMode == 2 ? 1.0f : 0.0f}, {}, DType::i1);
            std::vector<DeviceTensor> operands, results;
            std::vector<DeviceArray> outs;
            for (int k = 0; k < 4; ++k)
              for (size_t i = 0; i < n; ++i)
                operands.push_back(in[k][i].device.view);
            operands.push_back(glr.view);
            operands.push_back(gstep.view);
            if (skipMode)
              operands.push_back(gskip.view);
            const int updated[3] = {0, 2, 3};
            outs.reserve(3 * n);
            for (int k = 0; k < 3; ++k)
              for (size_t i = 0; i < n; ++i) {
                if (inPlace) {
                  results.push_back(in[updated[k]][i].device.view);
                } else {
                  outs.push_back(upload(std::vector<float>(in[0][i].host.size(), NAN), shapes[i],
                                        t, offsetOf(i)));
                  results.push_back(outs.back().view);
                }
              }
            LaunchedNode node("multi_adamw_update", attributes);
            RN_ASSERT_STATUS_OK(node.prepare(operands, results, stream));
            RN_ASSERT_STATUS_OK(node.launch(operands, results, stream));
            RN_ASSERT_CUDA(update.stream.sync());
            for (size_t i = 0; i < n; ++i) {
              SCOPED_TRACE("tensor " + std::to_string(i) + " of " + std::to_string(n));
              std::vector<float> got[3];
              for (int k = 0; k < 3; ++k)
                got[k] = download(results[k * n + i]);
              if (skipMode == 2) {
                for (int k = 0; k < 3; ++k) {
                  ASSERT_TRUE(sameBits(got[k], in[updated[k]][i].host));
                }
                continue;
              }
              // An infinite reference makes the errors NaN (inf - inf): the
              // data, not the kernel, would be at fault.
              ASSERT_TRUE(allFinite(ref[0][i]) && allFinite(ref[1][i]) && allFinite(ref[2][i]))
                  << "the CPU reference is not finite: the test data overflows";
              EXPECT_LE(updateError(got[0], ref[0][i], in[0][i].host), updateTolerance(t));
              EXPECT_LE(relativeError(got[1], ref[1][i]), updateTolerance(t));
              EXPECT_LE(relativeError(got[2], ref[2][i]), updateTolerance(t));
              // The per-parameter kernel on copies: bit for bit.
              DeviceArray sp = upload(in[0][i].host, shapes[i], t, offsetOf(i));
              DeviceArray sm = upload(in[2][i].host, shapes[i], t, offsetOf(i));
              DeviceArray sv = upload(in[3][i].host, shapes[i], t, offsetOf(i));
              std::vector<DeviceTensor> single = {sp.view, in[1][i].device.view, sm.view, sv.view,
                                                  glr.view, gstep.view};
              if (skipMode)
                single.push_back(gskip.view);
              LaunchedNode adamw("adamw_update", attributes);
              RN_ASSERT_STATUS_OK(adamw.launch(single, {sp.view, sm.view, sv.view}, stream));
              RN_ASSERT_CUDA(update.stream.sync());
              EXPECT_TRUE(sameBits(got[0], download(sp.view)));
              EXPECT_TRUE(sameBits(got[1], download(sm.view)));
              EXPECT_TRUE(sameBits(got[2], download(sv.view)));
            }
          }
}

// Tests multi_unscale and multi_zero through their launchers: every
// unscaled gradient bit for bit the per-tensor unscale kernel's (and within
// the norm-wise bound of cpu::unscale), every zeroed tensor all zeros; in
// place, over both groups, f32, f16 and bf16, every third tensor off the
// 16-byte alignment; and each one kernel node when captured.
TEST(MultiElementwiseKernels, UnscaleAndZeroMatchPerTensorOps) {
  RN_SKIP_WITHOUT_CUDA();
  UpdateStream update;
  const StreamResources stream = update.resources();
  std::mt19937 rng(43);
  for (int group = 0; group < 2; ++group)
    for (DType t : {DType::f32, DType::f16, DType::bf16}) {
      SCOPED_TRACE("group " + std::to_string(group) + " " + std::string(dtypeName(t)));
      const std::vector<Shape> shapes = groupShapes(group);
      const size_t n = shapes.size();
      auto offsetOf = [](size_t i) { return int64_t(i % 3 == 2 ? 1 : 0); };
      const float scale = 1024.0f * 3.0f; // not a power of two: the division rounds
      DeviceArray gscale = upload({scale}, {}, DType::f32);
      std::vector<Pair> g, z;
      for (size_t i = 0; i < n; ++i) {
        g.push_back(randomPair(shapes[i], t, rng, offsetOf(i)));
        z.push_back(randomPair(shapes[i], t, rng, offsetOf(i)));
      }
      std::vector<DeviceTensor> unscaleOperands, unscaleResults, zeroTensors;
      for (size_t i = 0; i < n; ++i) {
        unscaleOperands.push_back(g[i].device.view);
        unscaleResults.push_back(g[i].device.view);
        zeroTensors.push_back(z[i].device.view);
      }
      unscaleOperands.push_back(gscale.view);
      LaunchedNode unscale("multi_unscale", nlohmann::json::object());
      LaunchedNode zero("multi_zero", nlohmann::json::object());
      RN_ASSERT_STATUS_OK(unscale.prepare(unscaleOperands, unscaleResults, stream));
      RN_ASSERT_STATUS_OK(zero.prepare(zeroTensors, zeroTensors, stream));
      for (LaunchedNode *node : {&unscale, &zero}) {
        const bool isZero = node == &zero;
        const auto &operands = isZero ? zeroTensors : unscaleOperands;
        const auto &results = isZero ? zeroTensors : unscaleResults;
        RN_ASSERT_CUDA(cudaStreamBeginCapture(stream.stream, cudaStreamCaptureModeThreadLocal));
        Status launched = node->launch(operands, results, stream);
        cudaGraph_t graph = nullptr;
        RN_ASSERT_CUDA(cudaStreamEndCapture(stream.stream, &graph));
        RN_ASSERT_STATUS_OK(launched);
        size_t nodes = 0;
        RN_ASSERT_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
        EXPECT_EQ(nodes, 1u) << (isZero ? "multi_zero" : "multi_unscale");
        cudaGraphExec_t exec = nullptr;
        RN_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
        RN_ASSERT_CUDA(cudaGraphLaunch(exec, stream.stream));
        RN_ASSERT_CUDA(cudaGraphExecDestroy(exec));
        RN_ASSERT_CUDA(cudaGraphDestroy(graph));
      }
      RN_ASSERT_CUDA(update.stream.sync());
      LaunchedNode single("unscale", nlohmann::json::object());
      for (size_t i = 0; i < n; ++i) {
        SCOPED_TRACE("tensor " + std::to_string(i));
        const std::vector<float> got = download(unscaleResults[i]);
        std::vector<float> want = g[i].host;
        cpu::TensorView view{want.data(), shapes[i], t};
        ASSERT_TRUE(cpu::unscale(view, scale, view).ok());
        EXPECT_LE(relativeError(got, want), updateTolerance(t));
        DeviceArray copy = upload(g[i].host, shapes[i], t, offsetOf(i));
        RN_ASSERT_STATUS_OK(
            single.launch({copy.view, gscale.view}, {copy.view}, stream, /*withState=*/false));
        RN_ASSERT_CUDA(update.stream.sync());
        EXPECT_TRUE(sameBits(got, download(copy.view)));
        const std::vector<float> zeroed = download(zeroTensors[i]);
        EXPECT_TRUE(sameBits(zeroed, std::vector<float>(zeroed.size(), 0.0f)));
      }
    }
}

// Tests multi_cast through its launcher against the per-tensor cast, bit
// for bit, for each conversion AMP uses (f32 -> f16 / bf16 weights, f16 /
// bf16 -> f32 gradients), over both groups, every third tensor off the
// 16-byte alignment.
TEST(MultiElementwiseKernels, CastMatchesPerTensorCast) {
  RN_SKIP_WITHOUT_CUDA();
  UpdateStream update;
  const StreamResources stream = update.resources();
  std::mt19937 rng(44);
  const std::pair<DType, DType> conversions[] = {{DType::f32, DType::f16},
                                                 {DType::f32, DType::bf16},
                                                 {DType::f16, DType::f32},
                                                 {DType::bf16, DType::f32}};
  for (int group = 0; group < 2; ++group)
    for (auto [from, to] : conversions) {
      SCOPED_TRACE("group " + std::to_string(group) + " " + std::string(dtypeName(from)) +
                   " -> " + std::string(dtypeName(to)));
      const std::vector<Shape> shapes = groupShapes(group);
      auto offsetOf = [](size_t i) { return int64_t(i % 3 == 2 ? 1 : 0); };
      std::vector<Pair> inputs;
      std::vector<DeviceArray> outputs;
      std::vector<DeviceTensor> operands, results;
      for (size_t i = 0; i < shapes.size(); ++i) {
        inputs.push_back(randomPair(shapes[i], from, rng, offsetOf(i)));
        outputs.push_back(upload(std::vector<float>(size_t(numel(shapes[i])), NAN), shapes[i],
                                 to, offsetOf(i)));
        operands.push_back(inputs.back().device.view);
        results.push_back(outputs.back().view);
      }
      LaunchedNode multi("multi_cast", nlohmann::json::object());
      RN_ASSERT_STATUS_OK(multi.prepare(operands, results, stream));
      RN_ASSERT_STATUS_OK(multi.launch(operands, results, stream));
      LaunchedNode single("cast", nlohmann::json::object());
      for (size_t i = 0; i < shapes.size(); ++i) {
        DeviceArray want = upload(std::vector<float>(size_t(numel(shapes[i])), NAN), shapes[i],
                                  to, offsetOf(i));
        RN_ASSERT_STATUS_OK(single.launch({operands[i]}, {want.view}, stream, false));
        RN_ASSERT_CUDA(update.stream.sync());
        EXPECT_TRUE(sameBits(download(results[i]), download(want.view))) << "tensor " << i;
      }
    }
}

// Tests multi_ema_update through its launcher against the per-tensor
// ema_update, bit for bit, in place, over both groups, f32, f16 and bf16,
// every third tensor off the 16-byte alignment.
TEST(MultiElementwiseKernels, EmaMatchesPerTensorEma) {
  RN_SKIP_WITHOUT_CUDA();
  UpdateStream update;
  const StreamResources stream = update.resources();
  std::mt19937 rng(45);
  const nlohmann::json decay = {{"decay", 0.999}};
  for (int group = 0; group < 2; ++group)
    for (DType t : {DType::f32, DType::f16, DType::bf16}) {
      SCOPED_TRACE("group " + std::to_string(group) + " " + std::string(dtypeName(t)));
      const std::vector<Shape> shapes = groupShapes(group);
      const size_t n = shapes.size();
      auto offsetOf = [](size_t i) { return int64_t(i % 3 == 2 ? 1 : 0); };
      std::vector<Pair> averages, params;
      std::vector<DeviceTensor> operands, results;
      for (size_t i = 0; i < n; ++i)
        averages.push_back(randomPair(shapes[i], t, rng, offsetOf(i)));
      for (size_t i = 0; i < n; ++i)
        params.push_back(randomPair(shapes[i], t, rng, offsetOf(i)));
      for (size_t i = 0; i < n; ++i) {
        operands.push_back(averages[i].device.view);
        results.push_back(averages[i].device.view);
      }
      for (size_t i = 0; i < n; ++i)
        operands.push_back(params[i].device.view);
      LaunchedNode multi("multi_ema_update", decay);
      RN_ASSERT_STATUS_OK(multi.prepare(operands, results, stream));
      RN_ASSERT_STATUS_OK(multi.launch(operands, results, stream));
      LaunchedNode single("ema_update", decay);
      for (size_t i = 0; i < n; ++i) {
        DeviceArray want = upload(averages[i].host, shapes[i], t, offsetOf(i));
        RN_ASSERT_STATUS_OK(
            single.launch({want.view, params[i].device.view}, {want.view}, stream, false));
        RN_ASSERT_CUDA(update.stream.sync());
        EXPECT_TRUE(sameBits(download(results[i]), download(want.view))) << "tensor " << i;
      }
    }
}

nlohmann::json larsAttributes() {
  return {{"momentum", 0.9}, {"weight_decay", 1e-4}, {"trust_coefficient", 0.02},
          {"epsilon", 1e-9}};
}

/// The LARS groups: group 0 of the SGD test and one tensor over 512 norm
/// blocks of 4096 elements (lars_update's cap: its blocks loop), then the
/// 300 small tensors.
std::vector<Shape> larsShapes(int which) {
  std::vector<Shape> shapes = groupShapes(which);
  if (which == 0)
    shapes.push_back({(1 << 21) + 5});
  return shapes;
}

// Tests multi_lars_update through its launcher (prepare builds the tables
// and returns the workspace of the partial norms; launch is two kernels)
// against the CPU reference (cpu::multiLarsUpdate, within the tolerance of
// the lars_update test: the GPU sums the norms in another order and
// computes the update in f32) and against lars_update on each tensor, bit
// for bit: both cut a tensor into the same norm blocks and share the
// per-block and per-element code. Odd sizes, tensors far smaller than one
// 16384-element chunk, around it and over 2^21 elements; every third tensor
// off the 16-byte alignment; one tensor with a zero gradient (trust ratio
// 1); f32, f16, bf16; skip_if absent, clear and set; in place (two steps)
// and out of place.
TEST(MultiLarsKernel, MatchesCpuAndPerParameterKernel) {
  RN_SKIP_WITHOUT_CUDA();
  UpdateStream update;
  const StreamResources stream = update.resources();
  std::mt19937 rng(45);
  const cpu::LarsAttrs attrs{0.9, 1e-4, 0.02, 1e-9};
  const float lr = 0.5f;
  Sweep sweep;
  for (int group = 0; group < 2; ++group)
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      for (bool inPlace : {false, true})
        for (int skipMode : {0, 1, 2}) { // no operand, flag clear, flag set
          if (sweep.skipNext())
            continue;
          SCOPED_TRACE("group " + std::to_string(group) + " " + std::string(dtypeName(t)) +
                       (inPlace ? " in place" : "") + " skip mode " + std::to_string(skipMode));
          const std::vector<Shape> shapes = larsShapes(group);
          const size_t n = shapes.size();
          const int steps = inPlace ? 2 : 1;
          auto offsetOf = [](size_t i) { return int64_t(i % 3 == 2 ? 1 : 0); };
          std::vector<Pair> p, g, b;
          for (size_t i = 0; i < n; ++i) {
            p.push_back(randomPair(shapes[i], t, rng, offsetOf(i)));
            g.push_back(randomPair(shapes[i], t, rng, offsetOf(i)));
            b.push_back(randomPair(shapes[i], t, rng, offsetOf(i)));
          }
          std::fill(g[3].host.begin(), g[3].host.end(), 0.0f);
          g[3].device = upload(g[3].host, shapes[3], t, offsetOf(3));

          // The CPU reference.
          std::vector<std::vector<float>> refP(n), refB(n);
          std::vector<cpu::TensorView> cp, cg, cb;
          for (size_t i = 0; i < n; ++i) {
            refP[i] = p[i].host;
            refB[i] = b[i].host;
          }
          for (size_t i = 0; i < n; ++i) {
            cp.push_back(cpu::TensorView{refP[i].data(), shapes[i], t});
            cg.push_back(g[i].view());
            cb.push_back(cpu::TensorView{refB[i].data(), shapes[i], t});
          }
          for (int step = 0; step < steps; ++step)
            ASSERT_TRUE(cpu::multiLarsUpdate(cp, cg, cb, lr, skipMode == 2, attrs, cp, cb).ok());

          // The GPU group, through its launcher.
          DeviceArray glr = upload({lr}, {}, DType::f32);
          DeviceArray gskip = upload({skipMode == 2 ? 1.0f : 0.0f}, {}, DType::i1);
          std::vector<DeviceArray> outs;
          std::vector<DeviceTensor> operands, results;
          for (std::vector<Pair> *list : {&p, &g, &b})
            for (Pair &x : *list)
              operands.push_back(x.device.view);
          operands.push_back(glr.view);
          if (skipMode)
            operands.push_back(gskip.view);
          outs.reserve(2 * n);
          for (std::vector<Pair> *list : {&p, &b})
            for (size_t i = 0; i < n; ++i) {
              if (inPlace) {
                results.push_back((*list)[i].device.view);
              } else {
                outs.push_back(upload(std::vector<float>(p[i].host.size(), NAN), shapes[i], t,
                                      offsetOf(i)));
                results.push_back(outs.back().view);
              }
            }
          LaunchedNode node("multi_lars_update", larsAttributes());
          size_t workspace = 0;
          RN_ASSERT_STATUS_OK(node.prepare(operands, results, stream, &workspace));
          // The partial norms: 16 bytes per block of lars_update's cut.
          size_t expected = 0;
          for (const Shape &s : shapes)
            expected += larsWorkspaceBytes(numel(s));
          EXPECT_EQ(workspace, expected);
          ASSERT_LE(workspace, stream.workspaceBytes);
          for (int step = 0; step < steps; ++step)
            RN_ASSERT_STATUS_OK(node.launch(operands, results, stream));
          RN_ASSERT_CUDA(update.stream.sync());

          for (size_t i = 0; i < n; ++i) {
            SCOPED_TRACE("tensor " + std::to_string(i) + " of " + std::to_string(n));
            const std::vector<float> gotP = download(results[i]);
            const std::vector<float> gotB = download(results[n + i]);
            if (skipMode == 2) {
              ASSERT_TRUE(sameBits(gotP, p[i].host));
              ASSERT_TRUE(sameBits(gotB, b[i].host));
              continue;
            }
            EXPECT_LE(updateError(gotP, refP[i], p[i].host), updateTolerance(t));
            EXPECT_LE(relativeError(gotB, refB[i]), updateTolerance(t));

            // lars_update on copies of the same inputs, as many steps.
            DeviceArray sp = upload(p[i].host, shapes[i], t, offsetOf(i));
            DeviceArray sb = upload(b[i].host, shapes[i], t, offsetOf(i));
            std::vector<DeviceTensor> single = {sp.view, g[i].device.view, sb.view, glr.view};
            if (skipMode)
              single.push_back(gskip.view);
            LaunchedNode lars("lars_update", larsAttributes());
            for (int step = 0; step < steps; ++step)
              RN_ASSERT_STATUS_OK(lars.launch(single, {sp.view, sb.view}, stream));
            RN_ASSERT_CUDA(update.stream.sync());
            EXPECT_TRUE(sameBits(gotP, download(sp.view)));
            EXPECT_TRUE(sameBits(gotB, download(sb.view)));
          }
        }
}

// Tests that a captured multi_lars_update of 300 tensors is two kernel
// nodes (the partial norms, then the update) and nothing else, and that a
// launch fails without the workspace its prepare asked for.
TEST(MultiLarsKernel, IsTwoKernelLaunches) {
  RN_SKIP_WITHOUT_CUDA();
  UpdateStream update;
  const StreamResources stream = update.resources();
  std::mt19937 rng(46);
  const std::vector<Shape> shapes = larsShapes(1);
  std::vector<Pair> p, g, b;
  for (const Shape &s : shapes) {
    p.push_back(randomPair(s, DType::f32, rng, 0));
    g.push_back(randomPair(s, DType::f32, rng, 0));
    b.push_back(randomPair(s, DType::f32, rng, 0));
  }
  DeviceArray glr = upload({0.1f}, {}, DType::f32);
  std::vector<DeviceTensor> operands, results;
  for (auto *list : {&p, &g, &b})
    for (Pair &x : *list)
      operands.push_back(x.device.view);
  operands.push_back(glr.view);
  for (auto *list : {&p, &b})
    for (Pair &x : *list)
      results.push_back(x.device.view);
  LaunchedNode node("multi_lars_update", larsAttributes());
  size_t workspace = 0;
  RN_ASSERT_STATUS_OK(node.prepare(operands, results, stream, &workspace));
  EXPECT_EQ(workspace, shapes.size() * 2 * sizeof(double)); // one norm block each
  RN_ASSERT_CUDA(cudaStreamBeginCapture(stream.stream, cudaStreamCaptureModeThreadLocal));
  Status launched = node.launch(operands, results, stream);
  cudaGraph_t graph = nullptr;
  RN_ASSERT_CUDA(cudaStreamEndCapture(stream.stream, &graph));
  RN_ASSERT_STATUS_OK(launched);
  size_t nodes = 0;
  RN_ASSERT_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
  ASSERT_EQ(nodes, 2u);
  cudaGraphNode_t kernels[2] = {};
  RN_ASSERT_CUDA(cudaGraphGetNodes(graph, kernels, &nodes));
  for (cudaGraphNode_t kernel : kernels) {
    cudaGraphNodeType type;
    RN_ASSERT_CUDA(cudaGraphNodeGetType(kernel, &type));
    EXPECT_EQ(type, cudaGraphNodeTypeKernel);
  }
  RN_ASSERT_CUDA(cudaGraphDestroy(graph));

  StreamResources small = stream;
  small.workspaceBytes = workspace - 1;
  Status s = node.launch(operands, results, small);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("needs " + std::to_string(workspace) + " workspace bytes"),
            std::string::npos)
      << s.error().message();
}

TEST(MultiSgdKernel, IsOneKernelLaunch) {
  RN_SKIP_WITHOUT_CUDA();
  UpdateStream update;
  const StreamResources stream = update.resources();
  std::mt19937 rng(42);
  const std::vector<Shape> shapes = groupShapes(1);
  std::vector<Pair> p, g, b;
  for (const Shape &s : shapes) {
    p.push_back(randomPair(s, DType::f32, rng, 0));
    g.push_back(randomPair(s, DType::f32, rng, 0));
    b.push_back(randomPair(s, DType::f32, rng, 0));
  }
  DeviceArray glr = upload({0.1f}, {}, DType::f32);
  std::vector<DeviceTensor> operands, results;
  for (auto *list : {&p, &g, &b})
    for (Pair &x : *list)
      operands.push_back(x.device.view);
  operands.push_back(glr.view);
  for (auto *list : {&p, &b})
    for (Pair &x : *list)
      results.push_back(x.device.view);
  LaunchedNode node("multi_sgd_update", attributesOf({0.9, 5e-4, true}));
  RN_ASSERT_STATUS_OK(node.prepare(operands, results, stream));
  // Captured, the launch of 300 tensors is one kernel node: nothing else
  // (no copy of the table, no allocation) happens per step.
  RN_ASSERT_CUDA(cudaStreamBeginCapture(stream.stream, cudaStreamCaptureModeThreadLocal));
  Status launched = node.launch(operands, results, stream);
  cudaGraph_t graph = nullptr;
  RN_ASSERT_CUDA(cudaStreamEndCapture(stream.stream, &graph));
  RN_ASSERT_STATUS_OK(launched);
  size_t nodes = 0;
  RN_ASSERT_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
  ASSERT_EQ(nodes, 1u);
  cudaGraphNode_t kernel = nullptr;
  RN_ASSERT_CUDA(cudaGraphGetNodes(graph, &kernel, &nodes));
  cudaGraphNodeType type;
  RN_ASSERT_CUDA(cudaGraphNodeGetType(kernel, &type));
  EXPECT_EQ(type, cudaGraphNodeTypeKernel);
  RN_ASSERT_CUDA(cudaGraphDestroy(graph));
}

TEST(MultiSgdKernel, RejectsLaunchesItWasNotPreparedFor) {
  RN_SKIP_WITHOUT_CUDA();
  UpdateStream update;
  const StreamResources stream = update.resources();
  std::mt19937 rng(43);
  Pair p = randomPair({8}, DType::f32, rng, 0), q = randomPair({8}, DType::f32, rng, 0);
  Pair h = randomPair({8}, DType::f16, rng, 0);
  DeviceArray glr = upload({0.1f}, {}, DType::f32);
  nlohmann::json plain = {{"momentum", 0.0}, {"weight_decay", 0.0}};
  std::vector<DeviceTensor> operands = {p.device.view, q.device.view, glr.view};
  std::vector<DeviceTensor> results = {p.device.view};
  {
    LaunchedNode node("multi_sgd_update", plain);
    Status s = node.launch(operands, results, stream);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message().find("without the device table"), std::string::npos)
        << s.error().message();
  }
  {
    LaunchedNode node("multi_sgd_update", plain);
    RN_ASSERT_STATUS_OK(node.prepare(operands, results, stream));
    Status s = node.launch({q.device.view, q.device.view, glr.view}, results, stream);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message().find("operand 0 is not at the address"), std::string::npos)
        << s.error().message();
    s = node.launch(operands, results, stream, /*withState=*/false);
    ASSERT_FALSE(s.ok());
  }
  {
    // One dtype per group.
    LaunchedNode node("multi_sgd_update", plain);
    Status s = node.prepare({p.device.view, h.device.view, q.device.view, h.device.view, glr.view},
                            {p.device.view, h.device.view}, stream);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message().find("params #1 must have the dtype of params #0"),
              std::string::npos)
        << s.error().message();
  }
}

} // namespace
} // namespace rn::cuda
