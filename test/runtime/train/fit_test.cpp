//===- fit_test.cpp - Epochs, resume, data sources and artifact files -----===//
//
// fit's epoch loop on the checked-in Inputs/cnn.rnx (batch 4, 8x8x1 images,
// 3 classes) over in-memory data: a run stopped after an epoch and resumed
// from its checkpoint reports the numbers of an uninterrupted run; the
// shuffled order, the data sources' checks, a checkpoint write that fails
// halfway, and what checkArtifactFile says about files that are not
// artifacts.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/artifact_file.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/data_source.h"
#include "runtime/train/fit.h"
#include "runtime/train/trainer.h"
#include "../cpu/executor_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <unistd.h>

namespace rn::train {
namespace {

using test_inputs::inputPath;
using test_inputs::load;
using test_inputs::makeExecutor;

/// A scratch folder removed at the end of the test.
struct ScratchDir {
  ScratchDir()
      : path(std::filesystem::temp_directory_path() /
             ("rn-fit-test-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string file(const char *name) const { return (path / name).string(); }
  std::filesystem::path path;
};

/// `count` random 8x8x1 images with labels in [0, 3).
MemoryDataSource randomImages(const char *name, int64_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> pixel(-1, 1);
  std::vector<float> images(size_t(count * 64));
  for (float &v : images)
    v = pixel(gen);
  std::vector<int32_t> labels(static_cast<size_t>(count));
  for (int32_t &l : labels)
    l = int32_t(gen() % 3);
  Result<MemoryDataSource> source = MemoryDataSource::create(name, {8, 8, 1}, images, labels);
  EXPECT_TRUE(source.ok());
  return std::move(source).value();
}

/// Keeps the reports of a fit.
struct Recorder : FitObserver {
  void planned(const FitPlan &p) override { plan = p; }
  void evaluated(const EpochReport &r) override { epochs.push_back(r); }
  void checkpointed(int64_t epoch, const std::string &) override { saved.push_back(epoch); }
  void stopped(int64_t epoch) override { stoppedAfter = epoch; }
  FitPlan plan;
  std::vector<EpochReport> epochs;
  std::vector<int64_t> saved;
  int64_t stoppedAfter = -1;
};

/// fit on a fresh CPU executor of Inputs/cnn.rnx.
Status fitCnn(const FitConfig &config, Recorder &recorder) {
  Artifact artifact = load("cnn.rnx");
  std::unique_ptr<CpuExecutor> executor = makeExecutor(artifact);
  if (!executor)
    return Error("no executor");
  Result<std::unique_ptr<Trainer>> trainer = Trainer::create(*executor);
  if (!trainer)
    return trainer.error();
  MemoryDataSource train = randomImages("train", 42, 1), test = randomImages("test", 10, 2);
  return fit(**trainer, train, test, config, recorder);
}

// Tests that a run stopped after epoch 1 with a checkpoint and resumed from
// it reports epochs 2 and 3 exactly as an uninterrupted run does (the
// schedule and the shuffling continue), and the plan's numbers: 42 examples
// are 10 steps of 4 (the rest dropped), a partial test batch is scored.
TEST(Fit, ResumedRunEqualsUninterrupted) {
  ScratchDir dir;
  FitConfig config;
  config.epochs = 3;
  config.lr = 0.05;
  config.warmupEpochs = 0.5;
  config.seed = 11;
  config.artifactPath = "cnn.rnx";
  Recorder whole;
  Status st = fitCnn(config, whole);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(whole.plan.stepsPerEpoch, 10);
  ASSERT_EQ(whole.epochs.size(), 3u);
  EXPECT_EQ(whole.epochs[0].test.evaluated, 10);
  EXPECT_LT(whole.epochs[2].trainLoss, whole.epochs[0].trainLoss);

  FitConfig first = config;
  first.checkpoint = dir.file("run.ck");
  first.stopAfterEpoch = 1;
  Recorder stopped;
  st = fitCnn(first, stopped);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(stopped.stoppedAfter, 0);
  EXPECT_EQ(stopped.saved, std::vector<int64_t>{0});

  FitConfig second = config;
  second.resume = dir.file("run.ck");
  Recorder resumed;
  st = fitCnn(second, resumed);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(resumed.plan.firstEpoch, 1);
  ASSERT_EQ(resumed.epochs.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(resumed.epochs[e].trainLoss, whole.epochs[e + 1].trainLoss) << "epoch " << e + 2;
    EXPECT_EQ(resumed.epochs[e].lastLr, whole.epochs[e + 1].lastLr);
    EXPECT_EQ(resumed.epochs[e].test.loss, whole.epochs[e + 1].test.loss);
    EXPECT_EQ(resumed.epochs[e].test.correct, whole.epochs[e + 1].test.correct);
  }
}

// Tests that fit names what does not fit the model: images of another
// shape (with the artifact's path) and a label beyond the classes.
TEST(Fit, RejectsDataThatDoesNotFit) {
  Artifact artifact = load("cnn.rnx");
  std::unique_ptr<CpuExecutor> executor = makeExecutor(artifact);
  ASSERT_TRUE(executor);
  auto trainer = Trainer::create(*executor);
  ASSERT_TRUE(trainer.ok());
  FitConfig config;
  config.artifactPath = "cnn.rnx";
  Recorder recorder;
  auto wide = MemoryDataSource::create("wide", {8, 9, 1}, std::vector<float>(72 * 4, 0.0f),
                                       std::vector<int32_t>(4, 0));
  ASSERT_TRUE(wide.ok());
  Status shape = fit(**trainer, *wide, *wide, config, recorder);
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.error().message().find("cnn.rnx: the model's images input is [4, 8, 8, 1]"),
            std::string::npos)
      << shape.error().message();
  auto badLabel = MemoryDataSource::create("labels", {8, 8, 1}, std::vector<float>(64 * 4, 0.0f),
                                           {0, 1, 3, 2});
  ASSERT_TRUE(badLabel.ok());
  Status label = fit(**trainer, *badLabel, *badLabel, config, recorder);
  ASSERT_FALSE(label.ok());
  EXPECT_EQ(label.error().message(), "labels: label 3 of example 2 is out of range for 3 classes");
}

// Tests the epoch order: a permutation, the same for the same (seed,
// epoch), another for another epoch or seed.
TEST(DataSource, ShuffledOrderIsAPermutationOfSeedAndEpoch) {
  std::vector<int64_t> order = shuffledOrder(100, 3, 0);
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(100);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(order, identity);
  EXPECT_EQ(order, shuffledOrder(100, 3, 0));
  EXPECT_NE(order, shuffledOrder(100, 3, 1));
  EXPECT_NE(order, shuffledOrder(100, 4, 0));
}

// Tests the in-memory source: sizes are checked, fillBatch gathers the
// indexed examples and rejects an index out of range.
TEST(DataSource, MemorySourceGathersByIndex) {
  EXPECT_FALSE(MemoryDataSource::create("short", {2}, {1, 2, 3}, {0, 1}).ok());
  auto source = MemoryDataSource::create("m", {2}, {10, 11, 20, 21, 30, 31}, {0, 1, 2});
  ASSERT_TRUE(source.ok());
  EXPECT_EQ(source->count(), 3);
  EXPECT_EQ(source->imageSize(), 2);
  const int64_t indices[] = {2, 0};
  float images[4];
  int32_t labels[2];
  ASSERT_TRUE(source->fillBatch(indices, 2, images, labels).ok());
  EXPECT_EQ(std::vector<float>(images, images + 4), (std::vector<float>{30, 31, 10, 11}));
  EXPECT_EQ(std::vector<int32_t>(labels, labels + 2), (std::vector<int32_t>{2, 0}));
  const int64_t outside[] = {3};
  EXPECT_FALSE(source->fillBatch(outside, 1, images, labels).ok());
}

// Tests that a checkpoint write that fails (its temporary cannot be
// created) leaves the previous checkpoint intact and readable: the file is
// only ever replaced by a rename.
TEST(Checkpoint, FailedWriteKeepsThePreviousFile) {
  ScratchDir dir;
  Artifact artifact = load("mlp.rnx");
  std::unique_ptr<CpuExecutor> executor = makeExecutor(artifact);
  ASSERT_TRUE(executor);
  auto trainer = Trainer::create(*executor);
  ASSERT_TRUE(trainer.ok());
  const std::string path = dir.file("mlp.ck");
  CheckpointInfo info;
  info.model = "first";
  ASSERT_TRUE(saveCheckpoint(**trainer, path, info.metadata()).ok());
  const auto bytes = std::filesystem::file_size(path);
  // The writer's temporary is PATH.tmp.<pid>; a folder there makes it fail.
  std::filesystem::create_directory(path + ".tmp." + std::to_string(::getpid()));
  info.model = "second";
  EXPECT_FALSE(saveCheckpoint(**trainer, path, info.metadata()).ok());
  EXPECT_EQ(std::filesystem::file_size(path), bytes);
  Result<Checkpoint> read = readCheckpoint(path);
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->meta("model"), "first");
  EXPECT_TRUE(checkWritable(dir.file("other.ck")).ok());
  EXPECT_FALSE(checkWritable(dir.path.string()).ok()) << "a folder is no checkpoint path";
}

// Tests that resumableEpoch answers metadata whose epoch times steps per
// epoch is past 2^63 with an error naming the file, where it multiplied
// them as signed integers (undefined behavior; docs/reliability.md).
TEST(Checkpoint, AnEpochPastTheLargestStepCountIsAnError) {
  Checkpoint checkpoint;
  checkpoint.path = "run.ck";
  CheckpointInfo info;
  info.model = "m";
  info.epoch = 2;
  info.step = 6;
  info.stepsPerEpoch = 3;
  info.batch = 4;
  info.seed = 7;
  checkpoint.file.metadata = info.metadata();
  std::string warning;
  Result<int64_t> epoch = resumableEpoch(checkpoint, "m", 4, 3, 7, &warning);
  ASSERT_TRUE(epoch.ok()) << epoch.error().message();
  EXPECT_EQ(*epoch, 2);
  checkpoint.file.metadata["epoch"] = "3074457345618258603";
  epoch = resumableEpoch(checkpoint, "m", 4, 3, 7, &warning);
  ASSERT_FALSE(epoch.ok());
  EXPECT_NE(epoch.error().message().find("run.ck: damaged metadata: epoch 3074457345618258603 "
                                         "times steps_per_epoch 3 is past the largest step count"),
            std::string::npos)
      << epoch.error().message();
}

// Tests what checkArtifactFile says: MLIR text is a model to compile, other
// bytes are not an artifact (shown), an artifact and a missing file are left
// to the loader.
TEST(ArtifactFile, SaysWhatAFileIs) {
  EXPECT_TRUE(looksLikeMlirText("  module attributes {rn.model = \"m\"} {"));
  EXPECT_TRUE(looksLikeMlirText("// a comment\nfunc.func @f()"));
  EXPECT_TRUE(looksLikeMlirText("\xEF\xBB\xBFrn.parameter @w"));
  EXPECT_FALSE(looksLikeMlirText("#!/bin/sh\n"));
  ScratchDir dir;
  auto write = [&](const char *name, const std::string &text) {
    std::ofstream(dir.file(name), std::ios::binary) << text;
    return dir.file(name);
  };
  Status model = checkArtifactFile(inputPath("mlp.mlir"));
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.error().message().find("mlp.mlir: this is a model (MLIR text), not a compiled "
                                         "artifact; compile it with rn-compile first"),
            std::string::npos);
  Status elf = checkArtifactFile(write("a.out", std::string("\x7f" "ELF\x02\x01\x01\x00", 8)));
  ASSERT_FALSE(elf.ok());
  EXPECT_NE(elf.error().message().find("not an RN artifact (it starts with the bytes 7f 45 4c 46 "
                                       "02 01 01 00)"),
            std::string::npos)
      << elf.error().message();
  EXPECT_NE(elf.error().message().find("\"rn.format\": \"rn-program\""), std::string::npos);
  EXPECT_FALSE(checkArtifactFile(write("empty", "")).ok());
  EXPECT_TRUE(checkArtifactFile(inputPath("mlp.rnx")).ok());
  EXPECT_TRUE(checkArtifactFile(dir.file("missing.rnx")).ok());
}

} // namespace
} // namespace rn::train
