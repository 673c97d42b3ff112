//===- group_updates_test.cpp - Multi-tensor SGD against per-parameter SGD -===//
//
// rn-group-updates replaces per-parameter rn.sgd_update (rn.adamw_update,
// rn.lars_update) ops with rn.multi_sgd_update (rn.multi_adamw_update,
// rn.multi_lars_update) ops that must leave bit for bit the same state.
// Checked here twice:
//   - the kernels: cpu::multiSgdUpdate against cpu::sgdUpdate per tensor
//     on random data (f32, f16, bf16; with and without momentum, Nesterov,
//     weight decay; skip set and clear; in place and out of place), and
//     cpu::multiAdamwUpdate against cpu::adamwUpdate and
//     cpu::multiLarsUpdate against cpu::larsUpdate (one tensor with a zero
//     gradient, whose trust ratio is 1) the same way;
//   - whole training steps: each checked-in artifact compiled with the
//     default pipeline (grouped) against its twin compiled with
//     group-updates=false (Inputs/README.md): mlp (f32, momentum 0.9),
//     cbr (f16, dynamic loss scaling: the groups share skip_if; one step is
//     forced to overflow, so the skip path runs too), cnn-sgd (the
//     benchmark recipe: momentum 0.9, Nesterov, weight decay 5e-4 but not on
//     BatchNorm and biases, which gives groups per weight decay and one
//     single update), mlp-adamw (AdamW, f16, dynamic loss scaling, a
//     forced skipped step too) and mlp-lars (LARS, weight decay 1e-4, f16,
//     dynamic loss scaling, a forced skipped step). Every state entry
//     (parameters, gradients, momentum, low-precision copies, loss scale,
//     BatchNorm statistics) and every loss
//     must be equal as bits after every step, sequentially and with the
//     interleaving simulator (which checks the grouped op's accesses for
//     hazards).
//
//===----------------------------------------------------------------------===//

#include "runtime/core/artifact.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/cpu/cpu_kernels.h"
#include "executor_test_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace rn {
namespace {

using cpu::Shape;
using cpu::TensorView;
using test_inputs::load;
using test_inputs::makeExecutor;

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

struct Tensor {
  std::vector<float> values;
  Shape shape;
  DType dtype = DType::f32;
  TensorView view() { return TensorView{values.data(), shape, dtype}; }
};

Tensor randomTensor(const Shape &shape, DType dtype, std::mt19937 &rng) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  Tensor t{std::vector<float>(size_t(n)), shape, dtype};
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float &v : t.values)
    v = roundTo(dtype, u(rng));
  return t;
}

/// Bitwise equality of two float vectors; names the first difference.
::testing::AssertionResult sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes " << a.size() << " and " << b.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " and " << b[i] << " (of " << a.size() << ")";
  return ::testing::AssertionSuccess();
}

TEST(GroupUpdates, MultiSgdKernelMatchesPerTensorSgd) {
  std::mt19937 rng(31);
  const std::vector<Shape> shapes = {{1}, {3}, {17}, {1000}, {4, 3, 3, 5}, {6}};
  struct Config {
    double momentum, weightDecay;
    bool nesterov;
  };
  for (DType dtype : {DType::f32, DType::f16, DType::bf16})
    for (Config cfg : {Config{0, 0, false}, Config{0, 1e-2, false}, Config{0.9, 0, false},
                       Config{0.9, 5e-4, true}})
      for (bool skip : {false, true})
        for (bool inPlace : {false, true}) {
          SCOPED_TRACE(std::string(dtypeName(dtype)) + " momentum " +
                       std::to_string(cfg.momentum) + " weight decay " +
                       std::to_string(cfg.weightDecay) + (cfg.nesterov ? " nesterov" : "") +
                       (skip ? " skip" : "") + (inPlace ? " in place" : ""));
          const bool buffer = cfg.momentum != 0;
          const cpu::SgdAttrs attrs{cfg.momentum, cfg.weightDecay, cfg.nesterov};
          const float lr = 0.1f;
          std::vector<Tensor> p, g, b;
          for (const Shape &s : shapes) {
            p.push_back(randomTensor(s, dtype, rng));
            g.push_back(randomTensor(s, dtype, rng));
            b.push_back(randomTensor(s, dtype, rng));
          }
          // The reference: one sgdUpdate per tensor.
          std::vector<Tensor> refP = p, refB = b;
          for (size_t i = 0; i < shapes.size(); ++i) {
            TensorView bv = b[i].view(), nbv = refB[i].view();
            ASSERT_TRUE(cpu::sgdUpdate(p[i].view(), g[i].view(), buffer ? &bv : nullptr, lr,
                                       skip, attrs, refP[i].view(), buffer ? &nbv : nullptr)
                            .ok());
          }
          // The group, in place (results are the operands) or into copies.
          std::vector<Tensor> outP = p, outB = b;
          std::vector<TensorView> params, grads, buffers, newParams, newBuffers;
          for (size_t i = 0; i < shapes.size(); ++i) {
            params.push_back(inPlace ? outP[i].view() : p[i].view());
            grads.push_back(g[i].view());
            newParams.push_back(outP[i].view());
            if (!inPlace)
              std::fill(outP[i].values.begin(), outP[i].values.end(), -7.0f);
            if (buffer) {
              buffers.push_back(inPlace ? outB[i].view() : b[i].view());
              newBuffers.push_back(outB[i].view());
              if (!inPlace)
                std::fill(outB[i].values.begin(), outB[i].values.end(), -7.0f);
            }
          }
          cpu::KernelStatus s =
              cpu::multiSgdUpdate(params, grads, buffers, lr, skip, attrs, newParams, newBuffers);
          ASSERT_TRUE(s.ok()) << s.error;
          for (size_t i = 0; i < shapes.size(); ++i) {
            SCOPED_TRACE("tensor " + std::to_string(i));
            EXPECT_TRUE(sameBits(outP[i].values, refP[i].values));
            if (buffer) {
              EXPECT_TRUE(sameBits(outB[i].values, refB[i].values));
            }
          }
        }
}

TEST(GroupUpdates, MultiAdamwKernelMatchesPerTensorAdamw) {
  std::mt19937 rng(33);
  const std::vector<Shape> shapes = {{1}, {3}, {17}, {1000}, {4, 3, 3, 5}};
  const cpu::AdamWAttrs attrs{0.9, 0.999, 1e-8, 1e-2};
  for (DType dtype : {DType::f32, DType::f16, DType::bf16})
    for (int32_t step : {1, 7})
      for (bool skip : {false, true})
        for (bool inPlace : {false, true}) {
          SCOPED_TRACE(std::string(dtypeName(dtype)) + " step " + std::to_string(step) +
                       (skip ? " skip" : "") + (inPlace ? " in place" : ""));
          std::vector<Tensor> p, g, m, v;
          for (const Shape &s : shapes) {
            p.push_back(randomTensor(s, dtype, rng));
            g.push_back(randomTensor(s, dtype, rng));
            m.push_back(randomTensor(s, dtype, rng));
            v.push_back(randomTensor(s, dtype, rng));
            for (float &x : v.back().values)
              x = roundTo(dtype, x * x); // second moments are non-negative
          }
          std::vector<Tensor> refP = p, refM = m, refV = v;
          for (size_t i = 0; i < shapes.size(); ++i)
            ASSERT_TRUE(cpu::adamwUpdate(p[i].view(), g[i].view(), m[i].view(), v[i].view(), 0.01f,
                                         step, skip, attrs, refP[i].view(), refM[i].view(),
                                         refV[i].view())
                            .ok());
          std::vector<Tensor> outP = p, outM = m, outV = v;
          std::vector<TensorView> in[4], out[3];
          for (size_t i = 0; i < shapes.size(); ++i) {
            if (!inPlace)
              for (std::vector<Tensor> *o : {&outP, &outM, &outV})
                std::fill((*o)[i].values.begin(), (*o)[i].values.end(), -7.0f);
            in[0].push_back(inPlace ? outP[i].view() : p[i].view());
            in[1].push_back(g[i].view());
            in[2].push_back(inPlace ? outM[i].view() : m[i].view());
            in[3].push_back(inPlace ? outV[i].view() : v[i].view());
            out[0].push_back(outP[i].view());
            out[1].push_back(outM[i].view());
            out[2].push_back(outV[i].view());
          }
          cpu::KernelStatus s = cpu::multiAdamwUpdate(in[0], in[1], in[2], in[3], 0.01f, step,
                                                      skip, attrs, out[0], out[1], out[2]);
          ASSERT_TRUE(s.ok()) << s.error;
          for (size_t i = 0; i < shapes.size(); ++i) {
            SCOPED_TRACE("tensor " + std::to_string(i));
            EXPECT_TRUE(sameBits(outP[i].values, refP[i].values));
            EXPECT_TRUE(sameBits(outM[i].values, refM[i].values));
            EXPECT_TRUE(sameBits(outV[i].values, refV[i].values));
          }
        }
}

TEST(GroupUpdates, MultiLarsKernelMatchesPerTensorLars) {
  std::mt19937 rng(34);
  const std::vector<Shape> shapes = {{1}, {3}, {17}, {1000}, {4, 3, 3, 5}, {6}};
  const cpu::LarsAttrs attrs{0.9, 1e-4, 0.02, 1e-9};
  for (DType dtype : {DType::f32, DType::f16, DType::bf16})
    for (bool skip : {false, true})
      for (bool inPlace : {false, true}) {
        SCOPED_TRACE(std::string(dtypeName(dtype)) + (skip ? " skip" : "") +
                     (inPlace ? " in place" : ""));
        std::vector<Tensor> p, g, b;
        for (const Shape &s : shapes) {
          p.push_back(randomTensor(s, dtype, rng));
          g.push_back(randomTensor(s, dtype, rng));
          b.push_back(randomTensor(s, dtype, rng));
        }
        // A zero gradient: that tensor's trust ratio is 1, the others' not.
        std::fill(g[2].values.begin(), g[2].values.end(), 0.0f);
        // The reference: one larsUpdate per tensor.
        std::vector<Tensor> refP = p, refB = b;
        for (size_t i = 0; i < shapes.size(); ++i)
          ASSERT_TRUE(cpu::larsUpdate(p[i].view(), g[i].view(), b[i].view(), 0.5f, skip, attrs,
                                      refP[i].view(), refB[i].view())
                          .ok());
        std::vector<Tensor> outP = p, outB = b;
        std::vector<TensorView> params, grads, buffers, newParams, newBuffers;
        for (size_t i = 0; i < shapes.size(); ++i) {
          if (!inPlace)
            for (std::vector<Tensor> *o : {&outP, &outB})
              std::fill((*o)[i].values.begin(), (*o)[i].values.end(), -7.0f);
          params.push_back(inPlace ? outP[i].view() : p[i].view());
          grads.push_back(g[i].view());
          buffers.push_back(inPlace ? outB[i].view() : b[i].view());
          newParams.push_back(outP[i].view());
          newBuffers.push_back(outB[i].view());
        }
        cpu::KernelStatus s = cpu::multiLarsUpdate(params, grads, buffers, 0.5f, skip, attrs,
                                                   newParams, newBuffers);
        ASSERT_TRUE(s.ok()) << s.error;
        for (size_t i = 0; i < shapes.size(); ++i) {
          SCOPED_TRACE("tensor " + std::to_string(i));
          EXPECT_TRUE(sameBits(outP[i].values, refP[i].values));
          EXPECT_TRUE(sameBits(outB[i].values, refB[i].values));
        }
      }
  // A bad group is named by its tensor.
  Tensor q = randomTensor({4}, DType::f32, rng), r = randomTensor({5}, DType::f32, rng);
  std::vector<TensorView> two = {q.view(), r.view()}, one = {q.view()};
  EXPECT_NE(cpu::multiLarsUpdate(two, one, two, 0.5f, false, attrs, two, two)
                .error.find("one grad, momentum buffer and their results per param"),
            std::string::npos);
  const std::vector<TensorView> twice = {q.view(), q.view()};
  std::string error = cpu::multiLarsUpdate(two, twice, two, 0.5f, false, attrs, two, two).error;
  EXPECT_NE(error.find("multi_lars_update: tensor 1: lars_update"), std::string::npos) << error;
}

TEST(GroupUpdates, MultiSgdKernelRejectsBadGroups) {
  std::mt19937 rng(32);
  Tensor p = randomTensor({4}, DType::f32, rng), q = randomTensor({5}, DType::f32, rng);
  const cpu::SgdAttrs plain{0, 0, false}, momentum{0.9, 0, false};
  auto run = [&](std::vector<TensorView> params, std::vector<TensorView> grads,
                 std::vector<TensorView> buffers, const cpu::SgdAttrs &attrs) {
    std::vector<TensorView> newBuffers = buffers;
    return cpu::multiSgdUpdate(params, grads, buffers, 0.1f, false, attrs, params, newBuffers)
        .error;
  };
  EXPECT_NE(run({}, {}, {}, plain).find("needs at least one tensor"), std::string::npos);
  EXPECT_NE(run({p.view(), q.view()}, {p.view()}, {}, plain).find("one grad and one new param"),
            std::string::npos);
  EXPECT_NE(run({p.view()}, {p.view()}, {}, momentum).find("momentum buffer"), std::string::npos);
  EXPECT_NE(run({p.view()}, {p.view()}, {p.view()}, plain).find("momentum buffer"),
            std::string::npos);
  // A tensor whose grad has another shape is named by its index.
  std::string error = run({p.view(), q.view()}, {p.view(), p.view()}, {}, plain);
  EXPECT_NE(error.find("multi_sgd_update: tensor 1: sgd_update"), std::string::npos) << error;
}

//===----------------------------------------------------------------------===//
// Training steps: grouped artifacts against their per-parameter twins
//===----------------------------------------------------------------------===//

/// The update ops of a twin pair: the grouped one and the per-parameter
/// one.
struct Ops {
  const char *grouped, *perParam;
};

/// How many train_step nodes run `op`.
int countOps(const Program &program, const std::string &op) {
  int count = 0;
  for (const Function &f : program.functions)
    if (f.name == "train_step")
      for (const Subgraph &sg : f.subgraphs)
        for (const Node &n : sg.nodes)
          count += n.kind == Node::Kind::op && n.op == op;
  return count;
}

std::vector<HostBatch> batches(const CpuExecutor &ex, int count, int classes) {
  Result<std::vector<int64_t>> shape = ex.inputShape("train_step", "images");
  EXPECT_TRUE(shape.ok());
  int64_t n = 1;
  for (int64_t d : *shape)
    n *= d;
  std::mt19937 rng(20241201);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<HostBatch> out(static_cast<size_t>(count));
  for (HostBatch &b : out) {
    for (int64_t k = 0; k < n; ++k)
      b.images.push_back(u(rng));
    for (int64_t k = 0; k < (*shape)[0]; ++k)
      b.labels.push_back(int32_t(rng() % uint32_t(classes)));
  }
  return out;
}

/// Every state entry of both executors, bit for bit.
void expectSameState(const CpuExecutor &grouped, const CpuExecutor &perParam) {
  ASSERT_EQ(grouped.program().state.size(), perParam.program().state.size());
  for (const StateEntry &e : perParam.program().state) {
    SCOPED_TRACE("state " + e.name + " (" + e.role + ")");
    Result<std::vector<float>> a = grouped.readState(e.name), b = perParam.readState(e.name);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(sameBits(*a, *b));
  }
}

std::string firstParameter(const Program &program) {
  for (const StateEntry &e : program.state)
    if (e.role == "parameter")
      return e.name;
  ADD_FAILURE() << "no parameter";
  return "";
}

struct Twin {
  const char *grouped, *perParam;
  Ops ops;
  int classes;
  /// The loss scale to force an overflow with on step 2 (0: none).
  float overflowScale;
  int minGroups; ///< multi_sgd_update nodes the grouped artifact has at least
};

void trainTwins(const Twin &twin, bool interleave) {
  Artifact grouped = load(twin.grouped), perParam = load(twin.perParam);
  ASSERT_GE(countOps(grouped.program, twin.ops.grouped), twin.minGroups);
  ASSERT_EQ(countOps(perParam.program, twin.ops.grouped), 0);
  ASSERT_GT(countOps(perParam.program, twin.ops.perParam),
            countOps(grouped.program, twin.ops.perParam));
  CpuExecutor::Options options;
  options.interleave = interleave;
  options.seed = 5;
  auto a = makeExecutor(grouped, options), b = makeExecutor(perParam, options);
  ASSERT_TRUE(a && b);
  expectSameState(*a, *b);
  const std::vector<HostBatch> data = batches(*a, 4, twin.classes);
  // Steps 1 and 2 one by one (step 2 overflowing where asked), then steps
  // 3 and 4 pipelined (the prefetching schedules).
  std::vector<float> before;
  for (int step = 1; step <= 2; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    if (step == 2 && twin.overflowScale > 0) {
      for (CpuExecutor *ex : {a.get(), b.get()})
        ASSERT_TRUE(ex->writeState("loss_scale", {twin.overflowScale}).ok());
      before = *a->readState(firstParameter(grouped.program));
    }
    TrainOutputs oa, ob;
    Status sa = a->trainStep(data[size_t(step - 1)], 0.1f, step, oa);
    Status sb = b->trainStep(data[size_t(step - 1)], 0.1f, step, ob);
    ASSERT_TRUE(sa.ok()) << sa.error().message();
    ASSERT_TRUE(sb.ok()) << sb.error().message();
    EXPECT_TRUE(sameBits({oa.loss}, {ob.loss}));
    expectSameState(*a, *b);
    if (step == 2 && twin.overflowScale > 0) {
      // The step was skipped: the first parameter did not move.
      EXPECT_TRUE(sameBits(*a->readState(firstParameter(grouped.program)), before));
      for (CpuExecutor *ex : {a.get(), b.get()})
        ASSERT_TRUE(ex->writeState("loss_scale", {1024.0f}).ok());
    }
  }
  std::vector<TrainOutputs> oa, ob;
  Status sa = a->trainSteps({data[2], data[3]}, {0.05f, 0.02f}, 3, oa);
  Status sb = b->trainSteps({data[2], data[3]}, {0.05f, 0.02f}, 3, ob);
  ASSERT_TRUE(sa.ok()) << sa.error().message();
  ASSERT_TRUE(sb.ok()) << sb.error().message();
  ASSERT_EQ(oa.size(), 2u);
  ASSERT_EQ(ob.size(), 2u);
  for (size_t k = 0; k < 2; ++k)
    EXPECT_TRUE(sameBits({oa[k].loss}, {ob[k].loss}));
  expectSameState(*a, *b);
  EXPECT_EQ(a->hazards(), 0u);
}

const Ops kSgd{"multi_sgd_update", "sgd_update"}, kAdamw{"multi_adamw_update", "adamw_update"},
    kLars{"multi_lars_update", "lars_update"};
const Twin kTwins[] = {
    {"mlp.rnx", "mlp-per-param.rnx", kSgd, 3, 0, 2},
    {"cbr.rnx", "cbr-per-param.rnx", kSgd, 3, 3e30f, 2},
    {"cnn-sgd.rnx", "cnn-sgd-per-param.rnx", kSgd, 3, 0, 2},
    {"mlp-adamw.rnx", "mlp-adamw-per-param.rnx", kAdamw, 3, 3e30f, 2},
    {"mlp-lars.rnx", "mlp-lars-per-param.rnx", kLars, 3, 3e30f, 2},
};

TEST(GroupUpdates, GroupedStepsLeaveTheStateOfPerParameterSteps) {
  for (const Twin &twin : kTwins) {
    SCOPED_TRACE(twin.grouped);
    trainTwins(twin, /*interleave=*/false);
  }
}

TEST(GroupUpdates, GroupedStepsInterleavedHaveNoHazard) {
  for (const Twin &twin : kTwins) {
    SCOPED_TRACE(twin.grouped);
    trainTwins(twin, /*interleave=*/true);
  }
}

} // namespace
} // namespace rn
