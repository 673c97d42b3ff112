//===- cpu_executor_test.cpp - The CPU executor on checked-in artifacts ---===//
//
// Inputs/mlp.rnx (MLP 4 -> 8 -> 3, batch 4, f32, SGD momentum 0.9) and
// Inputs/cbr.rnx (two conv-bn-relu layers, f16, dynamic loss scaling);
// Inputs/README.md has the models and the rn-compile commands.
//
//===----------------------------------------------------------------------===//

#include "runtime/artifact.h"
#include "runtime/cpu_executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace rn {
namespace {

std::string inputPath(const char *name) {
  return std::string(RN_TEST_INPUTS_DIR) + "/" + name;
}

Artifact load(const char *name) {
  Result<Artifact> a = loadArtifact(inputPath(name));
  if (!a.ok())
    ADD_FAILURE() << a.error().message();
  return a.ok() ? std::move(a).value() : Artifact{};
}

std::unique_ptr<CpuExecutor> makeExecutor(const Artifact &artifact,
                                          CpuExecutor::Options options = {}) {
  auto ex = CpuExecutor::create(artifact, options);
  if (!ex.ok()) {
    ADD_FAILURE() << ex.error().message();
    return nullptr;
  }
  Status s = (*ex)->initialize();
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
  return std::move(ex).value();
}

/// Batches of uniform images with labels from a fixed linear teacher.
std::vector<HostBatch> syntheticData(const CpuExecutor &ex, int64_t classes,
                                     int batches, uint64_t seed = 7) {
  std::vector<int64_t> shape = *ex.inputShape("train_step", "images");
  int64_t n = shape[0], features = 1;
  for (size_t d = 1; d < shape.size(); ++d)
    features *= shape[d];
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> teacher(size_t(classes * features));
  for (float &w : teacher)
    w = uniform(rng);
  std::vector<HostBatch> data(static_cast<size_t>(batches));
  for (HostBatch &b : data) {
    b.images.resize(size_t(n * features));
    for (float &x : b.images)
      x = uniform(rng);
    for (int64_t i = 0; i < n; ++i) {
      int32_t best = 0;
      double bestScore = -1e300;
      for (int64_t c = 0; c < classes; ++c) {
        double s = 0;
        for (int64_t f = 0; f < features; ++f)
          s += double(teacher[size_t(c * features + f)]) * b.images[size_t(i * features + f)];
        if (s > bestScore) {
          bestScore = s;
          best = int32_t(c);
        }
      }
      b.labels.push_back(best);
    }
  }
  return data;
}

struct RunResult {
  std::vector<float> losses;
  std::vector<std::vector<float>> state; ///< every state entry, in order
  std::string error;
};

RunResult train(const Artifact &artifact, CpuExecutor::Options options, int steps,
                float lr) {
  RunResult r;
  auto ex = makeExecutor(artifact, options);
  if (!ex) {
    r.error = "no executor";
    return r;
  }
  std::vector<HostBatch> data = syntheticData(*ex, 3, 4);
  for (int s = 0; s < steps; ++s) {
    TrainOutputs out;
    Status st = ex->trainStep(data[size_t(s) % data.size()], lr, s + 1, out);
    if (!st.ok()) {
      r.error = st.error().message();
      return r;
    }
    r.losses.push_back(out.loss);
  }
  for (const StateEntry &e : artifact.program.state)
    r.state.push_back(*ex->readState(e.name));
  return r;
}

bool bitIdentical(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

double mean(const std::vector<float> &v, size_t from, size_t to) {
  double s = 0;
  for (size_t i = from; i < to; ++i)
    s += v[i];
  return s / double(to - from);
}

TEST(CpuExecutor, MlpLossDecreases) {
  Artifact a = load("mlp.rnx");
  RunResult r = train(a, {}, 40, 0.1f);
  ASSERT_EQ(r.error, "");
  EXPECT_LT(mean(r.losses, 36, 40), 0.7 * mean(r.losses, 0, 4));
}

TEST(CpuExecutor, CbrF16LossDecreases) {
  Artifact a = load("cbr.rnx");
  ASSERT_EQ(a.program.training.value("precision", ""), "f16");
  RunResult r = train(a, {}, 60, 0.2f);
  ASSERT_EQ(r.error, "");
  EXPECT_LT(mean(r.losses, 56, 60), mean(r.losses, 0, 4));
  // The loss scale stayed finite and positive, the f16 weight copies are
  // the rounded f32 masters after the last CAST_WEIGHTS.
  for (size_t i = 0; i < a.program.state.size(); ++i) {
    const StateEntry &e = a.program.state[i];
    if (e.role == "loss_scale") {
      EXPECT_GT(r.state[i][0], 0.0f);
      EXPECT_TRUE(std::isfinite(r.state[i][0]));
    }
    if (e.role == "low_precision_weight") {
      const StateEntry *of = a.program.findState(e.of);
      ASSERT_NE(of, nullptr);
      size_t j = size_t(of - a.program.state.data());
      for (size_t k = 0; k < r.state[i].size(); ++k)
        EXPECT_EQ(r.state[i][k], roundTo(DType::f16, r.state[j][k])) << e.name;
    }
  }
}

TEST(CpuExecutor, InterleavedIsBitIdentical) {
  for (const char *name : {"mlp.rnx", "cbr.rnx"}) {
    Artifact a = load(name);
    RunResult seq = train(a, {}, 6, 0.1f);
    ASSERT_EQ(seq.error, "") << name;
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      CpuExecutor::Options o;
      o.seed = seed;
      o.interleave = true;
      RunResult r = train(a, o, 6, 0.1f);
      ASSERT_EQ(r.error, "") << name << " seed " << seed;
      EXPECT_TRUE(bitIdentical(r.losses, seq.losses)) << name << " seed " << seed;
      ASSERT_EQ(r.state.size(), seq.state.size());
      for (size_t i = 0; i < r.state.size(); ++i)
        EXPECT_TRUE(bitIdentical(r.state[i], seq.state[i]))
            << name << " seed " << seed << " state " << a.program.state[i].name;
    }
  }
}

TEST(CpuExecutor, RemovedWaitIsAHazard) {
  Artifact a = load("mlp.rnx");
  Function &fn = a.program.functions[0];
  ASSERT_EQ(fn.name, "train_step");
  Subgraph *deep = nullptr;
  for (Subgraph &sg : fn.subgraphs)
    if (sg.name == "DEEP_FWD_BWD")
      deep = &sg;
  ASSERT_NE(deep, nullptr);
  // The first internal wait (comp1 waiting for comp3's relu).
  auto it = std::find_if(deep->nodes.begin(), deep->nodes.end(), [](const Node &n) {
    return n.kind == Node::Kind::event_wait && n.eventKind == EventKind::internal;
  });
  ASSERT_NE(it, deep->nodes.end());
  deep->nodes.erase(it);
  // Sequential execution does not notice; every interleaving does.
  EXPECT_EQ(train(a, {}, 2, 0.1f).error, "");
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    CpuExecutor::Options o;
    o.seed = seed;
    o.interleave = true;
    RunResult r = train(a, o, 2, 0.1f);
    EXPECT_NE(r.error.find("hazard"), std::string::npos) << "seed " << seed << ": " << r.error;
    EXPECT_NE(r.error.find("DEEP_FWD_BWD"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("relu"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("linear"), std::string::npos) << r.error;
  }
}

TEST(CpuExecutor, RemovedForkOrJoinIsACaptureError) {
  for (EventKind kind : {EventKind::fork, EventKind::join}) {
    Artifact a = load("mlp.rnx");
    Subgraph *deep = nullptr;
    for (Subgraph &sg : a.program.functions[0].subgraphs)
      if (sg.name == "DEEP_FWD_BWD")
        deep = &sg;
    ASSERT_NE(deep, nullptr);
    auto it = std::find_if(deep->nodes.begin(), deep->nodes.end(), [&](const Node &n) {
      return n.kind == Node::Kind::event_wait && n.eventKind == kind;
    });
    ASSERT_NE(it, deep->nodes.end());
    deep->nodes.erase(it);
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      CpuExecutor::Options o;
      o.seed = seed;
      o.interleave = true;
      RunResult r = train(a, o, 1, 0.1f);
      EXPECT_NE(r.error.find("capture error"), std::string::npos) << r.error;
      EXPECT_NE(r.error.find(kind == EventKind::fork ? "forked" : "joined"), std::string::npos)
          << r.error;
    }
  }
}

TEST(CpuExecutor, MlpFirstStepMatchesReference) {
  Artifact a = load("mlp.rnx");
  auto ex = makeExecutor(a);
  ASSERT_TRUE(ex);
  std::vector<HostBatch> data = syntheticData(*ex, 3, 1);
  const HostBatch &b = data[0];
  auto get = [&](const char *name) {
    std::vector<float> f = *ex->readState(name);
    return std::vector<double>(f.begin(), f.end());
  };
  std::vector<double> w1 = get("fc1.weight"), b1 = get("fc1.bias"), w2 = get("fc2.weight"),
                      b2 = get("fc2.bias");
  const int N = 4, I = 4, H = 8, C = 3;
  ASSERT_EQ(w1.size(), size_t(H * I));
  ASSERT_EQ(w2.size(), size_t(C * H));
  // Forward.
  std::vector<double> h(N * H), z(N * H), logits(N * C), dlogits(N * C);
  double loss = 0;
  for (int n = 0; n < N; ++n) {
    for (int j = 0; j < H; ++j) {
      double s = b1[j];
      for (int i = 0; i < I; ++i)
        s += w1[j * I + i] * b.images[n * I + i];
      z[n * H + j] = s;
      h[n * H + j] = s > 0 ? s : 0;
    }
    double mx = -1e300;
    for (int c = 0; c < C; ++c) {
      double s = b2[c];
      for (int j = 0; j < H; ++j)
        s += w2[c * H + j] * h[n * H + j];
      logits[n * C + c] = s;
      mx = std::max(mx, s);
    }
    double sum = 0;
    for (int c = 0; c < C; ++c)
      sum += std::exp(logits[n * C + c] - mx);
    double lse = mx + std::log(sum);
    loss += (lse - logits[n * C + b.labels[n]]) / N;
    for (int c = 0; c < C; ++c)
      dlogits[n * C + c] =
          (std::exp(logits[n * C + c] - lse) - (c == b.labels[n] ? 1.0 : 0.0)) / N;
  }
  // Backward.
  std::vector<double> gw1(H * I, 0), gb1(H, 0), gw2(C * H, 0), gb2(C, 0);
  for (int n = 0; n < N; ++n) {
    std::vector<double> dh(H, 0);
    for (int c = 0; c < C; ++c) {
      double d = dlogits[n * C + c];
      gb2[c] += d;
      for (int j = 0; j < H; ++j) {
        gw2[c * H + j] += d * h[n * H + j];
        dh[j] += d * w2[c * H + j];
      }
    }
    for (int j = 0; j < H; ++j) {
      double dz = z[n * H + j] > 0 ? dh[j] : 0;
      gb1[j] += dz;
      for (int i = 0; i < I; ++i)
        gw1[j * I + i] += dz * b.images[n * I + i];
    }
  }
  // SGD with momentum, first step: buf = g, param -= lr * g.
  const float lr = 0.1f;
  TrainOutputs out;
  Status st = ex->trainStep(b, lr, 1, out);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_NEAR(out.loss, loss, 1e-5 * std::max(1.0, std::abs(loss)));
  auto expectUpdated = [&](const char *name, const std::vector<double> &before,
                           const std::vector<double> &grad) {
    std::vector<float> after = *ex->readState(name);
    ASSERT_EQ(after.size(), before.size());
    for (size_t k = 0; k < after.size(); ++k)
      EXPECT_NEAR(after[k], before[k] - double(lr) * grad[k], 1e-6) << name << "[" << k << "]";
    std::vector<float> momentum = *ex->readState(std::string("momentum.") + name);
    for (size_t k = 0; k < momentum.size(); ++k)
      EXPECT_NEAR(momentum[k], grad[k], 1e-6) << "momentum." << name << "[" << k << "]";
  };
  expectUpdated("fc1.weight", w1, gw1);
  expectUpdated("fc1.bias", b1, gb1);
  expectUpdated("fc2.weight", w2, gw2);
  expectUpdated("fc2.bias", b2, gb2);
}

TEST(CpuExecutor, EvalAfterTraining) {
  Artifact a = load("mlp.rnx");
  auto ex = makeExecutor(a);
  ASSERT_TRUE(ex);
  std::vector<HostBatch> data = syntheticData(*ex, 3, 2);
  EvalOutputs before;
  ASSERT_TRUE(ex->evalStep(data[0], before).ok());
  EXPECT_EQ(before.logits.size(), 12u);
  for (int s = 0; s < 30; ++s) {
    TrainOutputs out;
    ASSERT_TRUE(ex->trainStep(data[size_t(s % 2)], 0.1f, s + 1, out).ok());
  }
  EvalOutputs after;
  ASSERT_TRUE(ex->evalStep(data[0], after).ok());
  EXPECT_LT(after.loss, before.loss);
  EXPECT_GE(after.correct, 0);
  EXPECT_LE(after.correct, 4);
}

TEST(CpuExecutor, Errors) {
  Artifact a = load("mlp.rnx");
  auto ex = makeExecutor(a);
  ASSERT_TRUE(ex);
  HostBatch wrong;
  wrong.images.assign(3, 0.0f);
  wrong.labels.assign(4, 0);
  TrainOutputs out;
  Status s = ex->trainStep(wrong, 0.1f, 1, out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("images"), std::string::npos) << s.error().message();
  EXPECT_FALSE(ex->readState("nope").ok());
  // An out-of-range label is reported with its place.
  HostBatch bad;
  bad.images.assign(16, 0.5f);
  bad.labels = {0, 1, 2, 7};
  s = ex->trainStep(bad, 0.1f, 1, out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("softmax_cross_entropy"), std::string::npos)
      << s.error().message();
}

} // namespace
} // namespace rn
