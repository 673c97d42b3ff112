//===- fit.cpp - Epochs over a data source: shuffle, train, evaluate, save ===//

#include "runtime/train/fit.h"

#include "runtime/core/safetensors.h"
#include "runtime/train/checkpoint.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <set>

namespace rn::train {
namespace {

double secondsSince(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

std::string epochName(int64_t epoch) { return "epoch " + std::to_string(epoch + 1); }

/// The model fits the data: train_step's images are [batch, source's image
/// shape], eval_step takes the same, and every label is a class.
Status checkSources(const Trainer &trainer, const DataSource &train, const DataSource &test,
                    const std::string &artifactPath) {
  std::vector<int64_t> want = {trainer.batch()};
  for (int64_t d : train.imageShape())
    want.push_back(d);
  if (trainer.imageShape() != want)
    return Error(artifactPath + ": the model's images input is " +
                 shapeString(trainer.imageShape()) + ", but the data in " + train.name() +
                 " needs " + shapeString(want) + " (" + train.layout() + ")");
  if (test.imageShape() != train.imageShape())
    return Error(test.name() + ": test images " + shapeString(test.imageShape()) +
                 " differ from the training images " + shapeString(train.imageShape()));
  if (trainer.imageDType() == DType::u8)
    for (const DataSource *source : {&train, &test})
      if (!source->hasPixels())
        return Error(artifactPath + ": the model takes uint8 images (normalized on the device), "
                     "and " + source->name() + " holds float images: give it data with "
                     "pixels (uint8 .npz, IDX, CIFAR or an image folder), or compile the model "
                     "with float images");
  if (Status st = trainer.checkEvalInput(); !st)
    return st.error().withContext(artifactPath);
  RN_RETURN_IF_ERROR(checkLabels(train, trainer.classes()));
  return checkLabels(test, trainer.classes());
}

} // namespace

int64_t stepsPerEpoch(const Trainer &trainer, const DataSource &train) {
  return train.count() / (trainer.batch() * trainer.group().worldSize);
}

Result<EpochResult> trainEpoch(Trainer &trainer, const DataSource &train,
                               const LrSchedule &schedule, int64_t epoch,
                               const EpochReading &reading,
                               const std::function<void(const EpochProgress &)> &progress) {
  const int64_t batch = trainer.batch();
  const int64_t globalBatch = batch * trainer.group().worldSize;
  const BatchShard shard = shardOfGlobalBatch(trainer.group(), batch);
  const int64_t steps = stepsPerEpoch(trainer, train);
  const int64_t window = trainer.window();
  if (steps < 1)
    return Error("the training set has " + std::to_string(train.count()) +
                 " examples, fewer than one batch of " + std::to_string(globalBatch));
  RN_RETURN_IF_ERROR(trainer.setNextStep(epoch * steps + 1));
  const std::vector<int64_t> order = shuffledOrder(train.count(), reading.seed, epoch);
  BatchOptions batchOptions;
  batchOptions.draw = BatchDraw{true, reading.seed, epoch};
  batchOptions.pool = reading.pool;

  // A window of steps prepared by the loader thread: each batch normalized
  // straight into a host input block (or its pixels, for a model that
  // normalizes on the device), which its step copies to the device from
  // (no host copy of a batch after it is prepared).
  struct Window {
    std::vector<Trainer::Batch> batches;
    std::vector<float> lrs;
    double lastLr = 0;
    std::string error;
    std::vector<std::string> skipped;
  };
  auto prepare = [&](int64_t s0) {
    int64_t count = std::min(window, steps - s0);
    int64_t global0 = epoch * steps + s0;
    ScopedSpan span(trainer.spans(), "prepare " + std::to_string(count) + " batches", "loader");
    Window w;
    BatchOptions options = batchOptions;
    if (reading.skipped)
      options.skipped = &w.skipped;
    for (int64_t i = 0; i < count; ++i) {
      w.lastLr = schedule.lr(global0 + i);
      Result<std::shared_ptr<void>> block = trainer.imageBlock();
      if (!block) {
        w.error = block.error().message();
        return w;
      }
      std::vector<int32_t> labels(static_cast<size_t>(batch));
      const int64_t *indices = order.data() + (s0 + i) * globalBatch + shard.begin;
      Status filled = train.fillInputBatch(trainer.imageDType(), indices, batch, block->get(),
                                           labels.data(), options);
      if (!filled) {
        w.error = filled.error().message();
        return w;
      }
      w.batches.push_back({*block, std::move(labels)});
      w.lrs.push_back(float(w.lastLr));
    }
    return w;
  };

  EpochResult result;
  EpochProgress state;
  state.epoch = epoch;
  state.stepsPerEpoch = steps;
  std::future<Window> next = std::async(std::launch::async, prepare, int64_t(0));
  for (int64_t s0 = 0; s0 < steps; s0 += window) {
    int64_t count = std::min(window, steps - s0);
    const auto waitStart = std::chrono::steady_clock::now();
    Window w = next.get();
    state.dataWaitSeconds += secondsSince(waitStart);
    if (!w.error.empty())
      return Error(epochName(epoch) + ": " + w.error);
    if (reading.skipped)
      reading.skipped->insert(reading.skipped->end(), w.skipped.begin(), w.skipped.end());
    if (s0 + window < steps)
      next = std::async(std::launch::async, prepare, s0 + window);
    state.lr = result.lastLr = w.lastLr;
    Status st;
    for (size_t i = 0; st.ok() && i < w.batches.size(); ++i) {
      Result<int64_t> queued = trainer.step(std::move(w.batches[i]), w.lrs[i]);
      if (!queued)
        st = queued.error();
    }
    // A full window was submitted by its last step() and the finished
    // steps collected; the epoch ends with a drain.
    if (st.ok() && s0 + count == steps)
      st = trainer.drain();
    if (!st)
      return Error(epochName(epoch) + ", steps " + std::to_string(s0 + 1) + "-" +
                   std::to_string(s0 + count) + ": " + st.error().message());
    for (const StepLoss &loss : trainer.takeLosses()) {
      if (!std::isfinite(loss.loss))
        return Error(epochName(epoch) + ", step " + std::to_string(state.stepsDone + 1) +
                     ": the loss is " + std::to_string(loss.loss) + " (try a lower --lr)");
      state.lossSum += loss.loss;
      ++state.stepsDone;
    }
    if (progress && state.stepsDone > 0)
      progress(state);
  }
  result.lossSum = state.lossSum;
  result.steps = state.stepsDone;
  result.dataWaitSeconds = state.dataWaitSeconds;
  return result;
}

Status fit(Trainer &trainer, const DataSource &train, const DataSource &test,
           const FitConfig &config, FitObserver &observer) {
  RN_RETURN_IF_ERROR(checkSources(trainer, train, test, config.artifactPath));
  const ProcessGroup &group = trainer.group();
  FitPlan plan;
  plan.model = trainer.program().model;
  plan.batch = trainer.batch();
  plan.globalBatch = plan.batch * group.worldSize;
  plan.classes = trainer.classes();
  plan.trainExamples = train.count();
  plan.testExamples = test.count();
  plan.stepsPerEpoch = stepsPerEpoch(trainer, train);
  plan.group = group;
  plan.epochs = config.epochs;
  plan.lr = config.lr;
  plan.warmupEpochs = config.warmupEpochs;
  plan.loaderThreads = std::max(1, config.loaderThreads);
  if (plan.stepsPerEpoch < 1)
    return Error("the training set has " + std::to_string(train.count()) +
                 " examples, fewer than one batch of " + std::to_string(plan.globalBatch));
  const WarmupCosineLr schedule =
      WarmupCosineLr::fromEpochs(config.lr, config.warmupEpochs, plan.stepsPerEpoch,
                                 config.epochs);

  if (!config.resume.empty()) {
    Result<Checkpoint> checkpoint = readCheckpoint(config.resume);
    if (!checkpoint)
      return checkpoint.error();
    std::string warning;
    Result<int64_t> epoch = resumableEpoch(*checkpoint, plan.model, plan.batch,
                                           plan.stepsPerEpoch, config.seed, &warning);
    if (!warning.empty())
      observer.warning(warning);
    if (!epoch)
      return epoch.error();
    RN_RETURN_IF_ERROR(restoreCheckpoint(trainer, *checkpoint));
    plan.firstEpoch = *epoch;
    plan.resumedFrom = config.resume;
    if (plan.firstEpoch >= config.epochs) {
      observer.nothingLeft(plan);
      return Status::success();
    }
  }
  // A model that normalizes on the device does it with the data's
  // normalization, as the host would for a float model (after a resume
  // too: the data's, not the checkpoint's, is the run's).
  if (trainer.imageDType() == DType::u8) {
    const ChannelNormalization normalization = train.normalization();
    if (Status st = trainer.setInputNormalization(normalization.mean, normalization.std); !st)
      return st.error().withContext(train.name());
  }
  observer.planned(plan);

  LoaderPool pool(plan.loaderThreads);
  const auto runStart = std::chrono::steady_clock::now();
  for (int64_t epoch = plan.firstEpoch; epoch < config.epochs; ++epoch) {
    observer.epochStarted(epoch);
    const auto epochStart = std::chrono::steady_clock::now();
    std::vector<std::string> skipped;
    EpochReading reading;
    reading.seed = config.seed;
    reading.pool = &pool;
    reading.skipped = config.skipBadImages ? &skipped : nullptr;
    Result<EpochResult> trained =
        trainEpoch(trainer, train, schedule, epoch, reading,
                   [&](const EpochProgress &p) { observer.progress(p); });
    if (!trained)
      return trained.error();
    EpochReport report;
    report.epoch = epoch;
    report.trainSeconds = secondsSince(epochStart);
    report.steps = trained->steps;
    report.lastLr = trained->lastLr;
    report.dataWaitSeconds = trained->dataWaitSeconds;
    // The ranks' mean loss (each rank's loss is over its own shard).
    std::vector<double> sums = {trained->lossSum};
    if (Status st = trainer.sumOverRanks(sums); !st)
      return st.error().withContext(epochName(epoch));
    report.trainLoss = sums[0] / double(group.worldSize) / double(plan.stepsPerEpoch);
    observer.trained(report);

    const auto testStart = std::chrono::steady_clock::now();
    BatchOptions testReading;
    testReading.pool = &pool;
    testReading.skipped = reading.skipped;
    Result<Evaluation> evaluation = trainer.evaluate(test, testReading);
    if (!evaluation)
      return Error(epochName(epoch) + ", " + evaluation.error().message());
    report.test = *evaluation;
    report.testExamples = test.count();
    report.testSeconds = secondsSince(testStart);
    // An example read twice (a padded last test batch) counts once.
    report.skippedImages = int64_t(std::set<std::string>(skipped.begin(), skipped.end()).size());
    if (!skipped.empty())
      report.firstSkipped = skipped.front();
    observer.evaluated(report);

    // Every rank holds the same state: rank 0 writes the checkpoint.
    if (!config.checkpoint.empty() && group.rank == 0) {
      CheckpointInfo info;
      info.model = plan.model;
      info.epoch = epoch + 1;
      info.step = (epoch + 1) * plan.stepsPerEpoch;
      info.stepsPerEpoch = plan.stepsPerEpoch;
      info.batch = plan.batch;
      info.seed = config.seed;
      info.lr = config.lr;
      info.epochs = config.epochs;
      if (Status st = saveCheckpoint(trainer, config.checkpoint, info.metadata()); !st)
        return st.error().withContext("saving the checkpoint");
      observer.checkpointed(epoch, config.checkpoint);
    }
    if (config.stopAfterEpoch > 0 && epoch + 1 == config.stopAfterEpoch &&
        epoch + 1 < config.epochs) {
      observer.stopped(epoch);
      return Status::success();
    }
  }
  observer.finished(config.epochs - plan.firstEpoch, secondsSince(runStart));
  return Status::success();
}

} // namespace rn::train
