//===- trainer_test.cpp - The training loop library on the CPU executor ---===//
//
// runtime/train/ is rn-run's engine and the Python Trainer's: its schedule,
// its window of steps in flight, evaluation and prediction, state by name
// and role, and checkpoints, on the checked-in artifacts (Inputs/cnn.rnx: a
// small CNN with batch norm, batch 4, 8x8x1 images, 3 classes).
//
//===----------------------------------------------------------------------===//

#include "runtime/train/checkpoint.h"
#include "runtime/train/data_source.h"
#include "runtime/train/lr_schedule.h"
#include "runtime/train/trainer.h"
#include "../cpu/executor_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

namespace rn::train {
namespace {

using test_inputs::load;
using test_inputs::makeExecutor;

// Tests the warmup + cosine schedule's numbers: linear warmup to the peak
// over the warmup steps (the first step already above 0), then a cosine to
// 0 over the rest; fractional warmup epochs round to the nearest step.
TEST(LrSchedule, WarmupThenCosine) {
  WarmupCosineLr s = WarmupCosineLr::fromEpochs(0.4, 0.5, 8, 3); // 4 warmup of 24
  EXPECT_EQ(s.warmupSteps(), 4);
  EXPECT_EQ(s.totalSteps(), 24);
  EXPECT_DOUBLE_EQ(s.lr(0), 0.1);
  EXPECT_DOUBLE_EQ(s.lr(3), 0.4);
  EXPECT_DOUBLE_EQ(s.lr(4), 0.4);                                      // cosine starts at the peak
  EXPECT_NEAR(s.lr(14), 0.2, 1e-12);                                   // half way down
  EXPECT_NEAR(s.lr(23), 0.4 * 0.5 * (1 + std::cos(M_PI * 19 / 20)), 1e-15);
  EXPECT_DOUBLE_EQ(WarmupCosineLr::fromEpochs(0.4, 10, 8, 3).warmupSteps(), 24);
  EXPECT_DOUBLE_EQ(ConstantLr(0.05).lr(1000), 0.05);
}

/// A trainer over a fresh CPU executor of Inputs/`name`.
struct Fixture {
  explicit Fixture(const char *name, int64_t window = 8) : artifact(load(name)) {
    executor = makeExecutor(artifact);
    if (!executor)
      return;
    Trainer::Options options;
    options.window = window;
    auto made = Trainer::create(*executor, options);
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error().message());
    if (made.ok())
      trainer = std::move(made).value();
  }
  Artifact artifact;
  std::unique_ptr<CpuExecutor> executor;
  std::unique_ptr<Trainer> trainer;
};

/// `steps` batches of deterministic random images and labels.
struct Batches {
  Batches(const Trainer &t, int steps) {
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> pixel(-1, 1);
    std::uniform_int_distribution<int32_t> label(0, int32_t(t.classes()) - 1);
    for (int s = 0; s < steps; ++s) {
      images.emplace_back(size_t(t.batch() * t.imageSize()));
      for (float &v : images.back())
        v = pixel(gen);
      labels.emplace_back(size_t(t.batch()));
      for (int32_t &l : labels.back())
        l = label(gen);
    }
  }
  std::vector<std::vector<float>> images;
  std::vector<std::vector<int32_t>> labels;
};

std::vector<float> trainLosses(Trainer &t, const Batches &b) {
  const int64_t first = t.nextStep();
  for (size_t s = 0; s < b.images.size(); ++s) {
    Result<int64_t> step = t.step(b.images[s].data(), b.labels[s].data(), 0.05f);
    EXPECT_TRUE(step.ok()) << (step.ok() ? "" : step.error().message());
    if (step.ok()) {
      EXPECT_EQ(*step, first + int64_t(s));
    }
  }
  EXPECT_TRUE(t.drain().ok());
  std::vector<float> losses;
  for (const StepLoss &l : t.takeLosses())
    losses.push_back(l.loss);
  return losses;
}

// Tests that steps queued in a window of 4 in flight give the losses of
// steps run one at a time, bit for bit, and that training lowers the loss
// on a repeated batch.
TEST(Trainer, WindowedStepsMatchOneAtATime) {
  Fixture windowed("cnn.rnx", 4), single("cnn.rnx", 1);
  ASSERT_TRUE(windowed.trainer && single.trainer);
  EXPECT_EQ(windowed.trainer->batch(), 4);
  EXPECT_EQ(windowed.trainer->classes(), 3);
  EXPECT_EQ(windowed.trainer->imageSize(), 64);
  Batches batches(*windowed.trainer, 10);
  std::vector<float> a = trainLosses(*windowed.trainer, batches);
  std::vector<float> b = trainLosses(*single.trainer, batches);
  ASSERT_EQ(a.size(), 10u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(windowed.trainer->nextStep(), 11) << "steps are numbered from 1";

  Batches same(*windowed.trainer, 1);
  same.images.resize(12, same.images[0]);
  same.labels.resize(12, same.labels[0]);
  std::vector<float> repeated = trainLosses(*windowed.trainer, same);
  EXPECT_LT(repeated.back(), repeated.front());
}

// Tests evaluate's counts over a set that is not a whole number of batches
// and predict's shape, and that they agree: the top-1 of predict's logits
// is evaluate's hit count.
TEST(Trainer, EvaluateAndPredictAgree) {
  Fixture f("cnn.rnx");
  ASSERT_TRUE(f.trainer);
  const int64_t n = 10; // two batches and a half
  Batches batches(*f.trainer, 3);
  std::vector<float> images, flat;
  std::vector<int32_t> labels;
  for (int s = 0; s < 3; ++s) {
    images.insert(images.end(), batches.images[s].begin(), batches.images[s].end());
    labels.insert(labels.end(), batches.labels[s].begin(), batches.labels[s].end());
  }
  images.resize(size_t(n * f.trainer->imageSize()));
  labels.resize(size_t(n));
  auto source = MemoryDataSource::create("test", {8, 8, 1}, images, labels);
  ASSERT_TRUE(source.ok()) << source.error().message();
  Result<Evaluation> eval = f.trainer->evaluate(*source);
  ASSERT_TRUE(eval.ok()) << eval.error().message();
  EXPECT_EQ(eval->evaluated, n);
  EXPECT_TRUE(std::isfinite(eval->loss));
  Result<std::vector<float>> logits = f.trainer->predict(images.data(), n);
  ASSERT_TRUE(logits.ok()) << logits.error().message();
  ASSERT_EQ(logits->size(), size_t(n * 3));
  int64_t hits = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float *row = logits->data() + i * 3;
    hits += int64_t(std::max_element(row, row + 3) - row) == labels[size_t(i)];
  }
  EXPECT_EQ(hits, eval->correct);
}

// Tests state by name and role: parameters and buffers are listed with
// their shapes, a written entry reads back, and unknown names and wrong
// sizes are errors naming the entry.
TEST(Trainer, StateByNameAndRole) {
  Fixture f("cnn.rnx");
  ASSERT_TRUE(f.trainer);
  std::vector<StateInfo> buffers = f.trainer->state("buffer");
  ASSERT_FALSE(buffers.empty());
  for (const StateInfo &b : buffers)
    EXPECT_EQ(b.role, "buffer") << b.name;
  EXPECT_GT(f.trainer->state().size(), f.trainer->state("parameter").size() + buffers.size());
  Result<std::vector<float>> mean = f.trainer->readState("bn1.running_mean");
  ASSERT_TRUE(mean.ok()) << mean.error().message();
  ASSERT_EQ(mean->size(), 4u);
  EXPECT_EQ((*mean)[0], 0.0f);
  ASSERT_TRUE(f.trainer->writeState("bn1.running_mean", {1, 2, 3, 4}).ok());
  EXPECT_EQ(*f.trainer->readState("bn1.running_mean"), (std::vector<float>{1, 2, 3, 4}));
  Status unknown = f.trainer->writeState("no.such.entry", {1});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("no.such.entry"), std::string::npos);
  Status wrongSize = f.trainer->loadStateDict({{"bn1.running_mean", {1, 2}}});
  ASSERT_FALSE(wrongSize.ok());
  EXPECT_NE(wrongSize.error().message().find("bn1.running_mean"), std::string::npos);
}

// Tests that a checkpoint restores every state entry bit for bit into a
// fresh trainer, which then trains on exactly as the original does, that
// it records every entry's role (and a gradient's parameter), and that the
// write leaves no temporary file behind.
TEST(Checkpoint, RoundTripRestoresTheRun) {
  Fixture f("cnn.rnx");
  ASSERT_TRUE(f.trainer);
  Batches batches(*f.trainer, 6);
  Batches first = batches, rest = batches;
  first.images.resize(3), first.labels.resize(3);
  rest.images.erase(rest.images.begin(), rest.images.begin() + 3);
  rest.labels.erase(rest.labels.begin(), rest.labels.begin() + 3);
  trainLosses(*f.trainer, first);

  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("rn-trainer-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "run.safetensors").string();
  CheckpointInfo info;
  info.model = "cnn";
  info.step = 3;
  Status saved = saveCheckpoint(*f.trainer, path, info.metadata());
  ASSERT_TRUE(saved.ok()) << saved.error().message();
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1) << "only the checkpoint: the temporary was renamed over it";

  Fixture g("cnn.rnx");
  ASSERT_TRUE(g.trainer);
  Result<Checkpoint> read = readCheckpoint(path);
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->meta("step"), "3");
  nlohmann::json roles = nlohmann::json::parse(read->meta(kCheckpointStateKey));
  const std::vector<StateInfo> entries = f.trainer->state();
  ASSERT_EQ(roles.size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(roles[i]["name"], entries[i].name);
    EXPECT_EQ(roles[i]["role"], entries[i].role);
    EXPECT_EQ(roles[i].value("of", ""), entries[i].of);
  }
  EXPECT_TRUE(std::any_of(entries.begin(), entries.end(), [](const StateInfo &e) {
    return e.role == "gradient" && !e.of.empty();
  })) << "the test needs per-parameter state";
  ASSERT_TRUE(restoreCheckpoint(*g.trainer, *read).ok());
  ASSERT_TRUE(g.trainer->setNextStep(f.trainer->nextStep()).ok());
  auto before = f.trainer->stateDict(), restored = g.trainer->stateDict();
  ASSERT_TRUE(before.ok() && restored.ok());
  EXPECT_EQ(*before, *restored);
  EXPECT_EQ(trainLosses(*f.trainer, rest), trainLosses(*g.trainer, rest));
  std::filesystem::remove_all(dir);
}

// Tests a model with uint8 images (Inputs/cbr-u8.rnx: 6x6x1, compiled mean
// 0.4 and std 0.3): byte image blocks, pixel steps, evaluation and
// prediction of pixels, the normalization set and read back (checkpointed
// with the buffers), and the errors of images of the wrong kind.
TEST(Trainer, Uint8ImagesNormalizedOnTheDevice) {
  Fixture f("cbr-u8.rnx");
  ASSERT_TRUE(f.trainer);
  Trainer &t = *f.trainer;
  EXPECT_EQ(t.imageDType(), DType::u8);
  const size_t pixelsPerBatch = size_t(t.batch() * t.imageSize());
  std::vector<uint8_t> pixels(pixelsPerBatch);
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = uint8_t(i * 29 % 256);
  std::vector<int32_t> labels = {0, 1, 2, 1};

  Result<ChannelNormalization> compiled = t.inputNormalization();
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  EXPECT_EQ(compiled->mean, std::vector<float>{0.4f});
  EXPECT_EQ(compiled->std, std::vector<float>{0.3f});
  Status st = t.setInputNormalization({0.5f}, {0.25f});
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(t.inputNormalization()->mean, std::vector<float>{0.5f});
  EXPECT_EQ(*t.readState("input.std"), std::vector<float>{0.25f});
  const std::vector<StateInfo> buffers = t.state("buffer");
  EXPECT_TRUE(std::any_of(buffers.begin(), buffers.end(),
                          [](const StateInfo &e) { return e.name == "input.mean"; }));
  EXPECT_EQ(t.setInputNormalization({0.5f, 0.5f}, {0.25f}).error().message(),
            "setting the input normalization: the model's images have 1 channels; got 2 means "
            "and 1 stds");
  EXPECT_NE(t.setInputNormalization({0.5f}, {0.0f}).error().message().find("std positive"),
            std::string::npos);

  Result<int64_t> step = t.step(pixels.data(), labels.data(), 0.1f);
  ASSERT_TRUE(step.ok()) << step.error().message();
  Result<std::shared_ptr<void>> block = t.imageBlock();
  ASSERT_TRUE(block.ok());
  std::memcpy(block->get(), pixels.data(), pixels.size());
  ASSERT_TRUE(t.step(Trainer::Batch{*block, labels}, 0.1f).ok());
  ASSERT_TRUE(t.drain().ok());
  for (const StepLoss &loss : t.takeLosses())
    EXPECT_TRUE(std::isfinite(loss.loss));
  const std::vector<float> floats(pixelsPerBatch, 0.0f);
  EXPECT_EQ(t.step(floats.data(), labels.data(), 0.1f).error().message(),
            "a step of floats: the model takes uint8 pixels (its images input is ui8, normalized "
            "on the device), not floats");

  // Evaluation of pixels agrees with prediction (5 examples: a padded batch).
  std::vector<uint8_t> five(pixels.begin(), pixels.end());
  five.insert(five.end(), pixels.begin(), pixels.begin() + t.imageSize());
  Result<MemoryPixelSource> source =
      MemoryPixelSource::create("five", {6, 6, 1}, five, {0, 1, 2, 1, 0});
  ASSERT_TRUE(source.ok()) << source.error().message();
  Result<Evaluation> evaluation = t.evaluate(*source);
  ASSERT_TRUE(evaluation.ok()) << evaluation.error().message();
  EXPECT_EQ(evaluation->evaluated, 5);
  Result<std::vector<float>> logits = t.predict(five.data(), 5);
  ASSERT_TRUE(logits.ok()) << logits.error().message();
  int64_t correct = 0;
  for (int64_t i = 0; i < 5; ++i) {
    const float *row = logits->data() + i * t.classes();
    correct += std::max_element(row, row + t.classes()) - row == source->label(i);
  }
  EXPECT_EQ(evaluation->correct, correct);
  Result<MemoryDataSource> floatSource =
      MemoryDataSource::create("floats", {6, 6, 1}, std::vector<float>(144, 0.0f), {0, 1, 2, 1});
  ASSERT_TRUE(floatSource.ok());
  EXPECT_EQ(t.evaluate(*floatSource).error().message(),
            "floats: holds float images, and the model takes uint8 pixels (its images input is "
            "ui8, normalized on the device)");

  // A float model has no normalization to set, and takes no pixels.
  Fixture g("cnn.rnx");
  ASSERT_TRUE(g.trainer);
  EXPECT_EQ(g.trainer->imageDType(), DType::f32);
  EXPECT_NE(g.trainer->setInputNormalization({0.5f}, {0.25f})
                .error()
                .message()
                .find("the model's images input is f32: the host normalizes its images"),
            std::string::npos);
  std::vector<uint8_t> bytes(size_t(g.trainer->batch() * g.trainer->imageSize()));
  EXPECT_NE(g.trainer->step(bytes.data(), labels.data(), 0.1f).error().message().find(
                "the model takes f32 images, normalized on the host, not uint8 pixels"),
            std::string::npos);
}

} // namespace
} // namespace rn::train
