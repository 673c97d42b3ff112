//===- cpu_executor_test.cpp - The CPU executor on checked-in artifacts ---===//
//
// Inputs/mlp.rnx (MLP 4 -> 8 -> 3, batch 4, f32, SGD momentum 0.9),
// Inputs/cbr.rnx (two conv-bn-relu layers, f16, dynamic loss scaling) and
// Inputs/dropout.rnx (an MLP with two dropouts, for the masks' key),
// Inputs/stochastic_depth.rnx (an MLP with a stochastic-depth residual
// branch and a dropout, for the per-sample masks' key);
// Inputs/README.md has the models and the rn-compile commands.
//
// The interleaving tests delete barriers from the loaded program and check
// that the interleaved mode reports them: inside one launch (trainStep),
// and between launches and steps, which only the prefetching schedules of
// trainSteps/runPipelined expose (the events between TRANSFER and the
// compute subgraphs, the waits with a distance between double-buffered
// subgraphs, OPTIMIZER against the next step's forward pass, the host's
// wait before it restages the inputs, and a wait that only orders the use
// of a stream's workspace by graphs on different primary streams). Sequential runs of the same broken
// programs succeed, so the reports come from the hazard detection.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/artifact.h"
#include "runtime/core/input_block_pool.h"
#include "runtime/core/op_registry.h"
#include "runtime/core/op_table.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/cpu/cpu_kernels.h"
#include "executor_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace rn {
namespace {

using test_inputs::inputPath;
using test_inputs::load;
using test_inputs::makeExecutor;


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

/// The same steps as `train` through the prefetching schedules: trainSteps
/// over all steps at once, or in calls of `chunk` steps.
RunResult trainPipelined(const Artifact &artifact, CpuExecutor::Options options, int steps,
                         float lr, int chunk = 0) {
  RunResult r;
  auto ex = makeExecutor(artifact, options);
  if (!ex) {
    r.error = "no executor";
    return r;
  }
  std::vector<HostBatch> data = syntheticData(*ex, 3, 4);
  if (chunk <= 0)
    chunk = steps;
  for (int first = 0; first < steps; first += chunk) {
    int n = std::min(chunk, steps - first);
    std::vector<HostBatch> batches;
    for (int s = first; s < first + n; ++s)
      batches.push_back(data[size_t(s) % data.size()]);
    std::vector<TrainOutputs> out;
    Status st = ex->trainSteps(batches, std::vector<float>(size_t(n), lr), first + 1, out);
    if (!st.ok()) {
      r.error = st.error().message();
      return r;
    }
    EXPECT_EQ(out.size(), size_t(n));
    for (const TrainOutputs &o : out)
      r.losses.push_back(o.loss);
  }
  for (const StateEntry &e : artifact.program.state)
    r.state.push_back(*ex->readState(e.name));
  return r;
}

CpuExecutor::Options interleaved(uint64_t seed) {
  CpuExecutor::Options o;
  o.seed = seed;
  o.interleave = true;
  return o;
}

Subgraph *findSubgraph(Artifact &a, const char *function, const char *name) {
  for (Function &fn : a.program.functions)
    if (fn.name == function)
      for (Subgraph &sg : fn.subgraphs)
        if (sg.name == name)
          return &sg;
  return nullptr;
}

/// The subgraph of `function` that records `event`, or "".
std::string recorderOf(const Artifact &a, const char *function, uint32_t event) {
  for (const Function &fn : a.program.functions)
    if (fn.name == function)
      for (const Subgraph &sg : fn.subgraphs)
        for (const Node &n : sg.nodes)
          if (n.kind == Node::Kind::event_record && n.event == event)
            return sg.name;
  return "";
}

/// Deletes the last wait of subgraph `waiter` (train_step) on an event
/// recorded in `recorder` with `distance`; returns the event or -1.
int64_t deleteWait(Artifact &a, const char *waiter, const char *recorder, uint32_t distance) {
  Subgraph *sg = findSubgraph(a, "train_step", waiter);
  if (!sg)
    return -1;
  for (size_t k = sg->nodes.size(); k-- > 0;) {
    const Node &n = sg->nodes[k];
    if (n.kind == Node::Kind::event_wait && n.distance == distance &&
        recorderOf(a, "train_step", n.event) == recorder) {
      int64_t event = n.event;
      sg->nodes.erase(sg->nodes.begin() + std::ptrdiff_t(k));
      return event;
    }
  }
  return -1;
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
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

/// `r` succeeded with the losses and final state of `reference`, bit for bit.
void expectSameRun(const Artifact &a, const RunResult &r, const RunResult &reference,
                   const std::string &what) {
  ASSERT_EQ(r.error, "") << what;
  EXPECT_TRUE(bitIdentical(r.losses, reference.losses)) << what;
  ASSERT_EQ(r.state.size(), reference.state.size()) << what;
  for (size_t i = 0; i < r.state.size(); ++i)
    EXPECT_TRUE(bitIdentical(r.state[i], reference.state[i]))
        << what << " state " << a.program.state[i].name;
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
      expectSameRun(a, train(a, o, 6, 0.1f), seq,
                    std::string(name) + " seed " + std::to_string(seed));
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
  // Sequential execution does not notice; every interleaving does, one step
  // at a time and through the prefetching schedules.
  EXPECT_EQ(train(a, {}, 2, 0.1f).error, "");
  EXPECT_EQ(trainPipelined(a, {}, 6, 0.1f).error, "");
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    for (const RunResult &r :
         {train(a, interleaved(seed), 2, 0.1f), trainPipelined(a, interleaved(seed), 6, 0.1f)}) {
      EXPECT_NE(r.error.find("hazard"), std::string::npos) << "seed " << seed << ": " << r.error;
      EXPECT_NE(r.error.find("subgraph DEEP_FWD_BWD"), std::string::npos) << r.error;
      EXPECT_NE(r.error.find("(relu)"), std::string::npos) << r.error;
      EXPECT_NE(r.error.find("(linear)"), std::string::npos) << r.error;
    }
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

// The prefetching schedules give the results of trainStep bit for bit,
// sequentially and on every interleaving, in one call or several.
TEST(CpuExecutor, PipelinedIsBitIdentical) {
  for (const char *name : {"mlp.rnx", "cbr.rnx"}) {
    Artifact a = load(name);
    RunResult seq = train(a, {}, 6, 0.1f);
    ASSERT_EQ(seq.error, "") << name;
    std::vector<std::pair<std::string, RunResult>> runs;
    runs.emplace_back("sequential", trainPipelined(a, {}, 6, 0.1f));
    runs.emplace_back("sequential, 3 + 3", trainPipelined(a, {}, 6, 0.1f, 3));
    for (uint64_t seed = 1; seed <= 6; ++seed)
      runs.emplace_back("seed " + std::to_string(seed),
                        trainPipelined(a, interleaved(seed), 6, 0.1f));
    for (uint64_t seed = 7; seed <= 8; ++seed)
      runs.emplace_back("seed " + std::to_string(seed) + ", 4 + 2",
                        trainPipelined(a, interleaved(seed), 6, 0.1f, 4));
    runs.emplace_back("seed 9, 1 + 1 + ...", trainPipelined(a, interleaved(9), 6, 0.1f, 1));
    for (const auto &[what, r] : runs)
      expectSameRun(a, r, seq, std::string(name) + " " + what);
  }
}

TEST(CpuExecutor, PipelinedEvalIsBitIdentical) {
  for (const char *name : {"mlp.rnx", "cbr.rnx"}) {
    Artifact a = load(name);
    std::vector<EvalOutputs> reference;
    std::vector<StepInputs> steps;
    {
      auto ex = makeExecutor(a);
      ASSERT_TRUE(ex);
      std::vector<HostBatch> data = syntheticData(*ex, 3, 5);
      for (const HostBatch &b : data) {
        EvalOutputs out;
        ASSERT_TRUE(ex->evalStep(b, out).ok());
        reference.push_back(out);
        StepInputs in;
        in.values["images"].floats = b.images;
        in.values["labels"].ints = b.labels;
        steps.push_back(in);
      }
    }
    for (uint64_t seed = 0; seed <= 6; ++seed) {
      auto ex = makeExecutor(a, seed == 0 ? CpuExecutor::Options{} : interleaved(seed));
      ASSERT_TRUE(ex);
      std::vector<StepOutputs> out;
      Status st = ex->runPipelined("eval", steps, out);
      ASSERT_TRUE(st.ok()) << name << " seed " << seed << ": " << st.error().message();
      ASSERT_EQ(out.size(), reference.size());
      for (size_t i = 0; i < out.size(); ++i) {
        EXPECT_TRUE(bitIdentical(out[i]["loss"].floats, {reference[i].loss}))
            << name << " seed " << seed << " step " << i;
        EXPECT_EQ(out[i]["correct"].ints, std::vector<int32_t>{reference[i].correct});
        EXPECT_TRUE(bitIdentical(out[i]["logits"].floats, reference[i].logits));
      }
    }
  }
}

/// Runs the broken program `a` through the prefetching schedules (6 steps)
/// with seeds 1..seeds and counts the errors whose message contains every
/// string of one of `expected`; the first other message goes to `other`.
int countDetected(const Artifact &a, int seeds,
                  const std::vector<std::vector<std::string>> &expected, std::string &other) {
  int detected = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    std::string error = trainPipelined(a, interleaved(uint64_t(seed)), 6, 0.1f).error;
    bool match = false;
    for (const auto &parts : expected) {
      bool all = contains(error, "hazard");
      for (const std::string &part : parts)
        all = all && contains(error, part);
      match = match || all;
    }
    if (match)
      ++detected;
    else if (other.empty())
      other = "seed " + std::to_string(seed) + ": '" + error + "'";
  }
  return detected;
}

constexpr int kSeeds = 20;

/// The broken program `a` still trains when run sequentially, and the
/// prefetching schedules run interleaved report one of `expected` (see
/// countDetected) on each of `seeds` seeds.
void expectHazardOnEverySeed(const Artifact &a,
                             const std::vector<std::vector<std::string>> &expected,
                             int seeds = kSeeds) {
  EXPECT_EQ(trainPipelined(a, {}, 6, 0.1f).error, "");
  std::string other;
  EXPECT_EQ(countDetected(a, seeds, expected, other), seeds) << other;
}

// FIRST_LAYER_FWD reads the batch that TRANSFER copied in. In train_even
// and train_odd the host waits for that copy before it launches the
// compute (the host wait alone orders it); the last step, and trainStep,
// rely on the event.
TEST(CpuExecutor, RemovedTransferWaitIsAHazard) {
  Artifact a = load("mlp.rnx");
  ASSERT_GE(deleteWait(a, "FIRST_LAYER_FWD", "TRANSFER", 0), 0);
  // Reported on 200 of 200 seeds in a longer run.
  expectHazardOnEverySeed(a,
                          {{"subgraph FIRST_LAYER_FWD", "(linear)", "subgraph TRANSFER", "(host_to_device)"},
                           {"subgraph FIRST_LAYER_BWD", "(linear_backward", "subgraph TRANSFER", "(host_to_device)"}});
  // The non-prefetching path sees it too.
  EXPECT_TRUE(contains(train(a, interleaved(1), 2, 0.1f).error, "subgraph TRANSFER"));
}

// TRANSFER of step k overwrites the input buffer that step k - 2 read; it
// waits (distance 2) for FIRST_LAYER_BWD of step k - 2, the last reader.
// Only the prefetching schedules run step k's copy while step k - 2 may
// still be computing.
TEST(CpuExecutor, RemovedDistanceWaitIsAHazard) {
  Artifact a = load("mlp.rnx");
  ASSERT_GE(deleteWait(a, "TRANSFER", "FIRST_LAYER_BWD", 2), 0);
  // Reported on 200 of 200 seeds in a longer run.
  expectHazardOnEverySeed(a,
                          {{"subgraph TRANSFER", "(host_to_device)", "subgraph FIRST_LAYER_BWD", "(linear_backward"},
                           {"subgraph TRANSFER", "(host_to_device)", "subgraph DEEP_FWD_BWD", "(softmax_cross_entropy"}});
  // One step per call (each call starts from an idle device) cannot see it.
  EXPECT_EQ(train(a, interleaved(1), 6, 0.1f).error, "");
}

// The forward pass of step k reads the weights OPTIMIZER of step k - 1
// writes (mlp: a distance-1 wait on OPTIMIZER's record; cbr: the f16 copies
// CAST_WEIGHTS writes, a wait on its latest record).
TEST(CpuExecutor, RemovedOptimizerWaitIsAHazard) {
  {
    Artifact a = load("mlp.rnx");
    ASSERT_GE(deleteWait(a, "FIRST_LAYER_FWD", "OPTIMIZER", 1), 0);
    // Reported on 200 of 200 seeds in a longer run.
    expectHazardOnEverySeed(a,
                            {{"subgraph FIRST_LAYER_FWD", "(linear)", "subgraph OPTIMIZER", "(multi_sgd_update)"}});
    EXPECT_EQ(train(a, interleaved(1), 6, 0.1f).error, "");
  }
  {
    // One multi_cast writes every f16 weight copy; FIRST_LAYER_FWD's wait
    // on CAST_WEIGHTS orders the forward after the whole update stream of
    // the previous step (unscaling, optimizer, casts), and DEEP_FWD_BWD,
    // which follows on comp1, through it. Without it a forward node is
    // reported unordered after some update-stream node.
    Artifact a = load("cbr.rnx");
    ASSERT_GE(deleteWait(a, "FIRST_LAYER_FWD", "CAST_WEIGHTS", 0), 0);
    expectHazardOnEverySeed(a,
                            {{"subgraph FIRST_LAYER_FWD", "is not ordered after", "on stream update"},
                             {"subgraph DEEP_FWD_BWD", "is not ordered after", "on stream update"}},
                            5);
  }
}

// Tests that images in host input blocks (HostValue::pinned) train exactly
// as the same images in vectors, run interleaved (the copies from blocks
// are checked as the staging buffer's are), and that an InputBlockPool
// hands a block out again once the steps that held it are collected.
TEST(CpuExecutor, PinnedInputsTrainAsVectors) {
  Artifact a = load("mlp.rnx");
  RunResult want = trainPipelined(a, interleaved(3), 6, 0.1f);
  ASSERT_EQ(want.error, "");
  auto ex = makeExecutor(a, interleaved(3));
  ASSERT_TRUE(ex);
  std::vector<HostBatch> data = syntheticData(*ex, 3, 4);
  InputBlockPool pool(*ex, data[0].images.size() * sizeof(float));
  std::vector<StepInputs> steps;
  for (int s = 0; s < 6; ++s) {
    const HostBatch &b = data[size_t(s) % data.size()];
    Result<std::shared_ptr<void>> block = pool.acquire();
    ASSERT_TRUE(block.ok()) << block.error().message();
    std::memcpy(block->get(), b.images.data(), b.images.size() * sizeof(float));
    steps.push_back(Executor::trainInputs(*block, b.images.size(), b.labels, 0.1f, s + 1));
  }
  EXPECT_EQ(pool.blocks(), 6u); // each step still holds its block
  std::vector<StepOutputs> out;
  Status st = ex->runPipelined("train", std::move(steps), out);
  ASSERT_TRUE(st.ok()) << st.error().message();
  ASSERT_EQ(out.size(), want.losses.size());
  for (size_t s = 0; s < out.size(); ++s)
    EXPECT_EQ(out[s].at("loss").floats.at(0), want.losses[s]) << "step " << s + 1;
  for (size_t k = 0; k < a.program.state.size(); ++k)
    EXPECT_TRUE(bitIdentical(*ex->readState(a.program.state[k].name), want.state[k]))
        << a.program.state[k].name;
  ASSERT_TRUE(pool.acquire().ok());
  EXPECT_EQ(pool.blocks(), 6u); // the steps were collected: a block is free again

  // A block of the wrong size is refused by name.
  StepInputs wrong = Executor::trainInputs(pool.acquire().value(), 7, data[0].labels, 0.1f, 1);
  std::vector<StepInputs> one;
  one.push_back(std::move(wrong));
  st = ex->runPipelined("train", std::move(one), out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("input images needs"), std::string::npos)
      << st.error().message();
}

// Tests uint8 images normalized on the device: cbr-u8.rnx (cbr's model and
// parameters with uint8 images, the normalization fused into the stem's
// pad_channels) fed pixels trains as cbr.rnx fed the host's normalization
// of the same pixels, bit for bit: in order, interleaved (its byte slots
// take a word each, with the hazard checks) and from pinned byte blocks.
// The normalization buffers are state no step changes.
TEST(CpuExecutor, Uint8ImagesTrainAsTheHostsNormalization) {
  Artifact floats = load("cbr.rnx"), bytes = load("cbr-u8.rnx");
  const float mean = 0.4f, inverseStd = 1.0f / 0.3f; // cbr-u8.mlir's input.mean, input.std
  std::mt19937_64 rng(11);
  std::vector<HostBatch> pixelBatches(5), floatBatches(5);
  for (size_t b = 0; b < 5; ++b) {
    for (int i = 0; i < 4 * 6 * 6; ++i) {
      const uint8_t p = uint8_t(rng());
      pixelBatches[b].pixels.push_back(p);
      floatBatches[b].images.push_back((float(p) / 255.0f - mean) * inverseStd);
    }
    for (int i = 0; i < 4; ++i)
      pixelBatches[b].labels.push_back(int32_t(rng() % 3));
    floatBatches[b].labels = pixelBatches[b].labels;
  }
  const std::vector<float> lrs(5, 0.2f);
  auto want = makeExecutor(floats);
  ASSERT_TRUE(want);
  std::vector<TrainOutputs> wantOut;
  Status st = want->trainSteps(floatBatches, lrs, 1, wantOut);
  ASSERT_TRUE(st.ok()) << st.error().message();

  auto expectSameState = [&](const CpuExecutor &got, const std::string &what) {
    for (const StateEntry &e : floats.program.state)
      EXPECT_TRUE(bitIdentical(*got.readState(e.name), *want->readState(e.name)))
          << what << " state " << e.name;
    EXPECT_EQ(*got.readState("input.mean"), std::vector<float>{0.4f}) << what;
    EXPECT_EQ(*got.readState("input.std"), std::vector<float>{0.3f}) << what;
  };
  for (CpuExecutor::Options options : {CpuExecutor::Options{}, interleaved(1), interleaved(2)}) {
    const std::string what = options.interleave ? "interleaved" : "in order";
    auto ex = makeExecutor(bytes, options);
    ASSERT_TRUE(ex);
    std::vector<TrainOutputs> out;
    st = ex->trainSteps(pixelBatches, lrs, 1, out);
    ASSERT_TRUE(st.ok()) << what << ": " << st.error().message();
    for (size_t i = 0; i < out.size(); ++i)
      EXPECT_EQ(out[i].loss, wantOut[i].loss) << what << " step " << i + 1;
    expectSameState(*ex, what);
  }

  auto ex = makeExecutor(bytes);
  ASSERT_TRUE(ex);
  InputBlockPool pool(*ex, 4 * 6 * 6);
  std::vector<StepInputs> steps;
  for (size_t b = 0; b < 5; ++b) {
    Result<std::shared_ptr<void>> block = pool.acquire();
    ASSERT_TRUE(block.ok()) << block.error().message();
    std::memcpy(block->get(), pixelBatches[b].pixels.data(), pixelBatches[b].pixels.size());
    steps.push_back(Executor::trainInputs(*block, pixelBatches[b].pixels.size(),
                                          pixelBatches[b].labels, lrs[b], int32_t(b + 1)));
  }
  std::vector<StepOutputs> out;
  st = ex->runPipelined("train", std::move(steps), out);
  ASSERT_TRUE(st.ok()) << st.error().message();
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_EQ(out[i].at("loss").floats.at(0), wantOut[i].loss) << "pinned step " << i + 1;
  expectSameState(*ex, "pinned");

  // Evaluation normalizes the same way.
  EvalOutputs wantEval, gotEval;
  ASSERT_TRUE(want->evalStep(floatBatches[0], wantEval).ok());
  st = ex->evalStep(pixelBatches[0], gotEval);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(gotEval.loss, wantEval.loss);
  EXPECT_EQ(gotEval.logits, wantEval.logits);
}

// Tests that the cpu executor has no device blocks (an InputBlockPool of
// device memory says which executor and pool), and that a step whose images
// claim to be in device memory is refused by name, not read.
TEST(CpuExecutor, DeviceInputsAreRefused) {
  Artifact a = load("mlp.rnx");
  auto ex = makeExecutor(a, {});
  ASSERT_TRUE(ex);
  InputBlockPool pool(*ex, 64, InputBlockPool::Memory::device);
  Result<std::shared_ptr<void>> block = pool.acquire();
  ASSERT_FALSE(block.ok());
  EXPECT_NE(block.error().message().find("the cpu executor has no device memory for inputs"),
            std::string::npos)
      << block.error().message();
  EXPECT_NE(block.error().message().find("device input pool"), std::string::npos)
      << block.error().message();

  std::vector<HostBatch> data = syntheticData(*ex, 1, 4);
  auto host = std::make_shared<std::vector<float>>(data[0].images);
  std::vector<StepInputs> one;
  one.push_back(Executor::trainInputs(std::shared_ptr<const void>(host, host->data()),
                                      host->size(), data[0].labels, 0.1f, 1,
                                      /*imagesOnDevice=*/true));
  std::vector<StepOutputs> out;
  Status st = ex->runPipelined("train", std::move(one), out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("input images is in device memory"), std::string::npos)
      << st.error().message();
}

// train_even/train_odd start with a host wait for the previous copy: the
// host then restages the (single) staging buffers.
TEST(CpuExecutor, RemovedHostWaitIsAHazard) {
  Artifact a = load("mlp.rnx");
  for (Schedule &s : a.program.schedules)
    if (s.name == "train_even" || s.name == "train_odd") {
      ASSERT_EQ(s.steps.front().kind, Step::Kind::host_wait);
      s.steps.erase(s.steps.begin());
    }
  // Reported on 200 of 200 seeds in a longer run.
  expectHazardOnEverySeed(a,
                          {{"the host's write of the staging buffer", "subgraph TRANSFER", "(host_to_device)"}});
}

Node eventNode(Node::Kind kind, uint32_t event, EventKind eventKind, Stream stream) {
  Node n;
  n.kind = kind;
  n.event = event;
  n.eventKind = eventKind;
  n.stream = stream;
  return n;
}

/// mlp.rnx as rn-assign-streams="policy=zero=comp3" and rn-insert-barriers
/// make it: ZERO_GRAD (primary update) runs its zeros on comp3, forked from
/// and joined back to update; the zeros' records stay after them, and
/// DEEP_FWD_BWD's relu, its first op on comp3, waits for the record after
/// the last zero. Nothing else orders the two graphs (different primary
/// streams, no data in common), but both use workspace_comp3. Returns
/// that wait's event, or -1 when the program has another shape.
int64_t zerosOnComp3(Artifact &a) {
  Subgraph *zero = findSubgraph(a, "train_step", "ZERO_GRAD");
  Subgraph *deep = findSubgraph(a, "train_step", "DEEP_FWD_BWD");
  if (!zero || !deep || zero->primary != Stream::update || zero->nodes.empty() ||
      zero->nodes.back().kind != Node::Kind::event_record)
    return -1;
  uint32_t lastZero = zero->nodes.back().event;
  for (Node &n : zero->nodes)
    if (n.stream == Stream::update)
      n.stream = Stream::comp3;
    else
      return -1;
  uint32_t fork = a.program.numEvents++, join = a.program.numEvents++;
  zero->nodes.insert(zero->nodes.begin(),
                     {eventNode(Node::Kind::event_record, fork, EventKind::fork, Stream::update),
                      eventNode(Node::Kind::event_wait, fork, EventKind::fork, Stream::comp3)});
  zero->nodes.push_back(eventNode(Node::Kind::event_record, join, EventKind::join, Stream::comp3));
  zero->nodes.push_back(eventNode(Node::Kind::event_wait, join, EventKind::join, Stream::update));
  auto relu = std::find_if(deep->nodes.begin(), deep->nodes.end(), [](const Node &n) {
    return n.kind == Node::Kind::op && n.op == "relu";
  });
  if (relu == deep->nodes.end() || relu->stream != Stream::comp3)
    return -1;
  deep->nodes.insert(relu,
                     eventNode(Node::Kind::event_wait, lastZero, EventKind::external, Stream::comp3));
  return lastZero;
}

// Every op on a stream uses that stream's workspace: two ops on one stream
// in graphs of different primary streams need an event even when they share
// no data. With the event the zeros-on-comp3 program runs as the original
// on every interleaving; without it, the relu and the zeros race on
// workspace_comp3.
TEST(CpuExecutor, RemovedWorkspaceWaitIsAHazard) {
  Artifact a = load("mlp.rnx");
  ASSERT_NE(a.program.arena.find("workspace_comp3"), nullptr);
  RunResult pipelined = trainPipelined(a, {}, 6, 0.1f);
  RunResult stepwise = train(a, {}, 2, 0.1f);
  int64_t event = zerosOnComp3(a);
  ASSERT_GE(event, 0);
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    expectSameRun(a, trainPipelined(a, interleaved(seed), 6, 0.1f), pipelined,
                  "seed " + std::to_string(seed));
    expectSameRun(a, train(a, interleaved(seed), 2, 0.1f), stepwise,
                  "trainStep, seed " + std::to_string(seed));
  }
  // Delete the relu's wait (the other waits of DEEP_FWD_BWD on ZERO_GRAD
  // order the gradients on comp1 and comp2).
  std::vector<Node> &deep = findSubgraph(a, "train_step", "DEEP_FWD_BWD")->nodes;
  auto wait = std::find_if(deep.begin(), deep.end(), [&](const Node &n) {
    return n.kind == Node::Kind::event_wait && n.event == uint32_t(event) &&
           n.stream == Stream::comp3;
  });
  ASSERT_NE(wait, deep.end());
  deep.erase(wait);
  expectHazardOnEverySeed(a, {{"on workspace_comp3", "subgraph DEEP_FWD_BWD", "(relu)",
                               "subgraph ZERO_GRAD", "(multi_zero)"},
                              {"on workspace_comp3", "subgraph ZERO_GRAD", "(multi_zero)",
                               "subgraph DEEP_FWD_BWD", "(relu)"}});
  EXPECT_TRUE(contains(train(a, interleaved(1), 1, 0.1f).error, "on workspace_comp3"));
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

/// The loss of Inputs/dropout.rnx (fc1 -> dropout 0.5 -> relu -> dropout
/// 0.25 -> fc2, batch 4) on the host with the executor's parameters and
/// the keys the program gives step `step`: {seed, step * 2 + index}, index
/// 0 and 1 in forward order.
float dropoutMlpLoss(const CpuExecutor &ex, const HostBatch &b, uint64_t seed, int32_t step) {
  auto state = [&](const char *name) { return *ex.readState(name); };
  std::vector<float> x = b.images, w1 = state("fc1.weight"), b1 = state("fc1.bias"),
                     w2 = state("fc2.weight"), b2 = state("fc2.bias");
  std::vector<float> h(64), d1(64), m1(64), r(64), d2(64), m2(64), logits(12);
  auto view = [](std::vector<float> &v, cpu::Shape shape) {
    return cpu::TensorView{v.data(), std::move(shape), DType::f32};
  };
  uint64_t stream = uint64_t(int64_t(step)) * 2;
  cpu::TensorView bias1 = view(b1, {16}), bias2 = view(b2, {3});
  EXPECT_TRUE(cpu::linear(view(x, {4, 4}), view(w1, {16, 4}), &bias1, view(h, {4, 16})).ok());
  EXPECT_TRUE(
      cpu::dropoutTrain(view(h, {4, 16}), 0.5, {seed, stream}, view(d1, {4, 16}), view(m1, {4, 16}))
          .ok());
  EXPECT_TRUE(cpu::relu(view(d1, {4, 16}), view(r, {4, 16})).ok());
  EXPECT_TRUE(cpu::dropoutTrain(view(r, {4, 16}), 0.25, {seed, stream + 1}, view(d2, {4, 16}),
                                view(m2, {4, 16}))
                  .ok());
  EXPECT_TRUE(cpu::linear(view(d2, {4, 16}), view(w2, {3, 16}), &bias2, view(logits, {4, 3})).ok());
  float loss = 0;
  EXPECT_TRUE(cpu::softmaxCrossEntropy(view(logits, {4, 3}), cpu::LabelView{b.labels.data(), {4}},
                                       0.0, loss)
                  .ok());
  return loss;
}

/// The loss of Inputs/stochastic_depth.rnx (h = relu(fc1(x)); h + stochastic
/// depth 0.5 of block(h) -> dropout 0.25 -> fc2, batch 8) on the host with
/// the executor's parameters and the keys the program gives step `step`: the
/// random ops are numbered together, {seed, step * 2} for the stochastic
/// depth and {seed, step * 2 + 1} for the dropout after it.
float stochasticDepthMlpLoss(const CpuExecutor &ex, const HostBatch &b, uint64_t seed,
                             int32_t step) {
  auto state = [&](const char *name) { return *ex.readState(name); };
  std::vector<float> x = b.images, w1 = state("fc1.weight"), b1 = state("fc1.bias"),
                     wb = state("block.weight"), bb = state("block.bias"),
                     w2 = state("fc2.weight"), b2 = state("fc2.bias");
  std::vector<float> h(128), r(128), branch(128), s(128), mask(8), sum(128), d(128), dm(128),
      logits(24);
  auto view = [](std::vector<float> &v, cpu::Shape shape) {
    return cpu::TensorView{v.data(), std::move(shape), DType::f32};
  };
  const uint64_t stream = uint64_t(int64_t(step)) * 2;
  cpu::TensorView bias1 = view(b1, {16}), biasB = view(bb, {16}), bias2 = view(b2, {3});
  EXPECT_TRUE(cpu::linear(view(x, {8, 4}), view(w1, {16, 4}), &bias1, view(h, {8, 16})).ok());
  EXPECT_TRUE(cpu::relu(view(h, {8, 16}), view(r, {8, 16})).ok());
  EXPECT_TRUE(
      cpu::linear(view(r, {8, 16}), view(wb, {16, 16}), &biasB, view(branch, {8, 16})).ok());
  EXPECT_TRUE(cpu::stochasticDepthTrain(view(branch, {8, 16}), 0.5, {seed, stream},
                                        view(s, {8, 16}), view(mask, {8}))
                  .ok());
  EXPECT_TRUE(cpu::add(view(r, {8, 16}), view(s, {8, 16}), view(sum, {8, 16})).ok());
  EXPECT_TRUE(cpu::dropoutTrain(view(sum, {8, 16}), 0.25, {seed, stream + 1}, view(d, {8, 16}),
                                view(dm, {8, 16}))
                  .ok());
  EXPECT_TRUE(cpu::linear(view(d, {8, 16}), view(w2, {3, 16}), &bias2, view(logits, {8, 3})).ok());
  float loss = 0;
  EXPECT_TRUE(cpu::softmaxCrossEntropy(view(logits, {8, 3}), cpu::LabelView{b.labels.data(), {8}},
                                       0.0, loss)
                  .ok());
  return loss;
}

/// Runs `artifact` at lr 0 for steps 5, 5, 6 and -3 (the host's step
/// counter runs 0..3), in order and interleaved: the random ops' masks must
/// follow the program's step input (the device copy the GPU's captured
/// graphs read), not the host's counter, so steps 5 and 5 give the same
/// loss, the others other losses, and each loss is `hostLoss` (the host's
/// forward pass with the keys of that step); the interleaved run checks
/// that the reads of the step are ordered after its copy.
void expectMasksFollowTheStepInput(
    const char *artifact, uint64_t seed,
    float (*hostLoss)(const CpuExecutor &, const HostBatch &, uint64_t, int32_t)) {
  Artifact a = load(artifact);
  const int32_t steps[] = {5, 5, 6, -3};
  for (bool interleave : {false, true}) {
    CpuExecutor::Options options;
    options.seed = seed;
    options.interleave = interleave;
    auto ex = makeExecutor(a, options);
    ASSERT_TRUE(ex);
    std::vector<HostBatch> data = syntheticData(*ex, 3, 1);
    std::vector<StepInputs> inputs;
    for (size_t i = 0; i < std::size(steps); ++i)
      inputs.push_back(Executor::trainInputs(data[0], 0.0f, steps[i]));
    std::vector<StepOutputs> outputs;
    Status st = ex->runPipelined("train", inputs, outputs);
    ASSERT_TRUE(st.ok()) << st.error().message();
    ASSERT_EQ(outputs.size(), std::size(steps));
    std::vector<float> losses;
    for (StepOutputs &out : outputs)
      losses.push_back(out["loss"].floats.at(0));
    EXPECT_EQ(losses[0], losses[1]) << artifact << ", interleave " << interleave;
    EXPECT_NE(losses[2], losses[0]) << artifact << ", interleave " << interleave;
    EXPECT_NE(losses[3], losses[0]) << artifact << ", interleave " << interleave;
    EXPECT_NE(losses[3], losses[2]) << artifact << ", interleave " << interleave;
    for (size_t i = 0; i < std::size(steps); ++i)
      EXPECT_EQ(losses[i], hostLoss(*ex, data[0], seed, steps[i]))
          << artifact << ", step " << steps[i] << ", interleave " << interleave;
  }
}

/// Dropout masks follow the step input: each loss is the host forward pass
/// with the keys {seed, step * 2 + index}.
TEST(CpuExecutor, DropoutMasksFollowTheStepInput) {
  expectMasksFollowTheStepInput("dropout.rnx", 11, dropoutMlpLoss);
}

/// Stochastic depth's per-sample masks follow the step input as dropout's
/// do, with the keys of one numbering of the random ops.
TEST(CpuExecutor, StochasticDepthMasksFollowTheStepInput) {
  expectMasksFollowTheStepInput("stochastic_depth.rnx", 13, stochasticDepthMlpLoss);
}

//===----------------------------------------------------------------------===//
// rn-fuse-bn-prologue
//===----------------------------------------------------------------------===//

/// cbr.mlir compiled with fuse-bn-prologue=true (Inputs/README.md): the
/// first layer's CBR is conv_bn_stats + bn_scale_bias, the second's
/// forward and backward read its convolution output through the prologue,
/// and the first's backward recomputes its mask with prologue_mask.
Artifact loadBnPrologueCbr() { return load("cbr-bnprologue.rnx"); }

size_t countOps(const Artifact &a, std::string_view op, size_t operands) {
  size_t count = 0;
  for (const Function &fn : a.program.functions)
    for (const Subgraph &sg : fn.subgraphs)
      for (const Node &n : sg.nodes)
        count += n.kind == Node::Kind::op && n.op == op && n.operands.size() == operands;
  return count;
}

// cbr-bnprologue.rnx (cbr.rnx with its first layer fused into the
// second's prologue) trains:
// the losses follow the unfused program's (the activation is rounded as
// the prologue computes it, not as the BN apply does, so not bit for bit),
// and sequential, interleaved and pipelined runs agree bit for bit, which
// the interleaved runs' hazard checks of the new ops' accesses take part
// in.
TEST(CpuExecutor, BnPrologueProgramTrains) {
  Artifact fused = loadBnPrologueCbr();
  ASSERT_FALSE(fused.program.functions.empty());
  EXPECT_EQ(countOps(fused, "conv_bn_stats", 2), 1u);
  EXPECT_EQ(countOps(fused, "bn_scale_bias", 4), 1u);
  EXPECT_EQ(countOps(fused, "cbr_forward", 6), 1u);
  EXPECT_EQ(countOps(fused, "cbr_backward", 13), 1u);
  Artifact plain = load("cbr.rnx");
  RunResult f = train(fused, {}, 8, 0.1f), u = train(plain, {}, 8, 0.1f);
  ASSERT_EQ(f.error, "");
  ASSERT_EQ(u.error, "");
  for (size_t i = 0; i < f.losses.size(); ++i)
    EXPECT_NEAR(f.losses[i], u.losses[i], 2e-3 * std::fabs(u.losses[i])) << "step " << i + 1;
  EXPECT_FALSE(bitIdentical(f.losses, u.losses));
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    expectSameRun(fused, train(fused, interleaved(seed), 8, 0.1f), f,
                  "seed " + std::to_string(seed));
    expectSameRun(fused, trainPipelined(fused, interleaved(seed + 10), 8, 0.1f, 3), f,
                  "pipelined, seed " + std::to_string(seed + 10));
  }
}

// The weight_grad part of cbr_backward reads input_scale and input_bias:
// with input_scale moved onto the words of the input gradient, which the
// concurrent input_grad part writes, every interleaved run reports the
// hazard between the two parts (a sequential run does not look).
TEST(CpuExecutor, BnPrologueOperandsAreInTheAccessSets) {
  Artifact fused = loadBnPrologueCbr();
  ASSERT_FALSE(fused.program.functions.empty());
  Function &fn = fused.program.functions[0];
  ASSERT_EQ(fn.name, "train_step");
  const Node *backward = nullptr;
  for (const Subgraph &sg : fn.subgraphs)
    for (const Node &n : sg.nodes)
      if (n.kind == Node::Kind::op && n.op == "cbr_backward" &&
          n.layout.operands.has(op_table::cbr_backward::operand::input_scale))
        backward = &n;
  ASSERT_NE(backward, nullptr);
  const uint32_t scale = backward->operand(op_table::cbr_backward::operand::input_scale);
  const uint32_t inputGrad = backward->result(op_table::cbr_backward::result::input_grad);
  ASSERT_TRUE(fn.tensors[inputGrad].slot && fn.tensors[scale].slot);
  fn.tensors[scale].slot->offset = fn.tensors[inputGrad].slot->offset;
  EXPECT_EQ(train(fused, {}, 1, 0.1f).error, "");
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    RunResult r = train(fused, interleaved(seed), 1, 0.1f);
    EXPECT_TRUE(contains(r.error, "hazard")) << "seed " << seed << ": " << r.error;
    EXPECT_TRUE(contains(r.error, "(cbr_backward, part weight_grad)")) << r.error;
    EXPECT_TRUE(contains(r.error, "(cbr_backward, part input_grad)")) << r.error;
  }
}

} // namespace
} // namespace rn
