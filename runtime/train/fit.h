//===- fit.h - Epochs over a data source: shuffle, train, evaluate, save -*- C++ -*-===//
//
// The epoch loop of rn-run --data, on a Trainer: each epoch visits the
// training set in a permutation that depends only on (seed, epoch),
// trains on its full global batches (the incomplete last one is dropped,
// like PyTorch's drop_last=True) with the learning rate of each global
// step from the schedule, evaluates the whole test set, and saves a
// checkpoint; a run resumes from a checkpoint with the epoch after it, so
// that its losses equal an uninterrupted run's.
//
// A loader thread prepares the next window of batches (gather, decode,
// augment, normalize, labels, learning rates) straight into the trainer's
// host input blocks, its examples spread over a LoaderPool's threads, while
// the main thread submits the current window and the device runs it. The
// time the main thread waits for a window is reported: a run whose steps
// wait is data-bound.
//
// Data-parallel, every rank walks the same order, one global batch (batch
// x ranks) per step, and trains its shard of it; the reported train loss is
// the ranks' mean and rank 0 alone writes checkpoints.
//
// What happens is told to a FitObserver (rn-run prints it); the loop
// itself prints nothing.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_FIT_H
#define RN_RUNTIME_TRAIN_FIT_H

#include "runtime/core/status.h"
#include "runtime/train/data_source.h"
#include "runtime/train/loader_pool.h"
#include "runtime/train/lr_schedule.h"
#include "runtime/train/run_options.h"
#include "runtime/train/trainer.h"

#include <cstdint>
#include <functional>
#include <string>

namespace rn::train {

/// Where an epoch stands, after each window of steps whose losses came
/// back.
struct EpochProgress {
  int64_t epoch = 0;          ///< 0-based
  int64_t stepsDone = 0;      ///< steps of this epoch whose loss came back
  int64_t stepsPerEpoch = 0;
  double lossSum = 0;         ///< this rank's, over stepsDone steps
  double lr = 0;              ///< of the newest submitted step
  double dataWaitSeconds = 0; ///< this epoch's, waiting for prepared batches
};

/// How trainEpoch reads its batches.
struct EpochReading {
  uint64_t seed = 0;          ///< shuffling and augmentation draws
  LoaderPool *pool = nullptr; ///< the loader's threads (none: the loader thread alone)
  /// Skip examples that cannot be read, appending their errors (see
  /// BatchOptions::skipped); null: such an example stops the epoch.
  std::vector<std::string> *skipped = nullptr;
};

struct EpochResult {
  double lossSum = 0; ///< this rank's step losses, summed
  int64_t steps = 0;
  double lastLr = 0;  ///< of the epoch's last step
  double dataWaitSeconds = 0;
};

/// Trains 0-based `epoch` of `train` on `trainer`: steps epoch *
/// stepsPerEpoch + 1, ... over the global batches of shuffledOrder(count,
/// reading.seed, epoch), examples drawn with (reading.seed, epoch), learning
/// rates from `schedule` by 0-based global step, and drains at the end.
/// `progress` (may be empty) is called after every window. A loss that is
/// not finite is an error naming the step.
Result<EpochResult> trainEpoch(Trainer &trainer, const DataSource &train,
                               const LrSchedule &schedule, int64_t epoch,
                               const EpochReading &reading,
                               const std::function<void(const EpochProgress &)> &progress = {});

/// Full global batches of `train` per epoch for `trainer` (its batch times
/// the ranks).
int64_t stepsPerEpoch(const Trainer &trainer, const DataSource &train);

/// The defaults are rn-run's (run_options.h).
struct FitConfig {
  int64_t epochs = runDefaults().epochs;
  double lr = runDefaults().lr;                     ///< the peak of the schedule
  double warmupEpochs = runDefaults().warmupEpochs; ///< linear warmup, then cosine decay to 0
  uint64_t seed = runDefaults().seed; ///< shuffling (and the checkpoint's metadata)
  std::string checkpoint;    ///< saved after each epoch when set
  std::string resume;        ///< a checkpoint to continue from
  int64_t stopAfterEpoch = 0; ///< stop after this epoch (1-based) when > 0
  std::string artifactPath;  ///< names the model in messages
  int loaderThreads = 1;     ///< threads that read, decode and augment examples
  bool skipBadImages = false; ///< skip (and count) images that do not decode
};

/// The run fit is about to train (after resuming).
struct FitPlan {
  std::string model;
  ProcessGroup group; ///< this rank
  int64_t batch = 0, globalBatch = 0, classes = 0;
  int64_t trainExamples = 0, testExamples = 0;
  int64_t stepsPerEpoch = 0;
  int64_t epochs = 0;
  int64_t firstEpoch = 0;  ///< 0-based; > 0 after a resume
  std::string resumedFrom; ///< the checkpoint, after a resume
  double lr = 0, warmupEpochs = 0;
  int loaderThreads = 1;
};

/// One epoch's numbers for the report.
struct EpochReport {
  int64_t epoch = 0;        ///< 0-based
  double trainLoss = 0;     ///< mean step loss, the ranks' mean
  int64_t steps = 0;
  double lastLr = 0;
  double trainSeconds = 0;
  double dataWaitSeconds = 0; ///< of trainSeconds, waiting for batches
  /// Images skipped (FitConfig::skipBadImages) this epoch, training and
  /// test, with the first one's error.
  int64_t skippedImages = 0;
  std::string firstSkipped;
  Evaluation test;
  int64_t testExamples = 0;
  double testSeconds = 0;
};

class FitObserver {
public:
  virtual ~FitObserver() = default;
  /// A resumed checkpoint's seed differs from the run's, and the like.
  virtual void warning(const std::string &message) { (void)message; }
  /// The checkpoint to resume from completed every epoch already.
  virtual void nothingLeft(const FitPlan &plan) { (void)plan; }
  virtual void planned(const FitPlan &plan) { (void)plan; }
  virtual void epochStarted(int64_t epoch) { (void)epoch; }
  virtual void progress(const EpochProgress &progress) { (void)progress; }
  /// The epoch's training is done (trainLoss, steps, lastLr, trainSeconds).
  virtual void trained(const EpochReport &report) { (void)report; }
  /// The test set is evaluated (all of `report`).
  virtual void evaluated(const EpochReport &report) { (void)report; }
  virtual void checkpointed(int64_t epoch, const std::string &path) { (void)epoch, (void)path; }
  /// FitConfig::stopAfterEpoch ended the run after `epoch` (0-based).
  virtual void stopped(int64_t epoch) { (void)epoch; }
  /// Every epoch is done: `epochs` trained in this run.
  virtual void finished(int64_t epochs, double seconds) { (void)epochs, (void)seconds; }
};

/// Trains `trainer` on `train` for config.epochs epochs with warmup +
/// cosine decay, evaluating on `test` after each and saving checkpoints;
/// resumes from config.resume when set. Checks first that the sources fit
/// the model (image shape, labels, at least one global batch). A model whose
/// images are uint8 (Trainer::imageDType) is fed the sources' pixels
/// (fillPixelBatch, which the sources must have) and normalizes them on the
/// device with train's normalization(), set before the first step.
Status fit(Trainer &trainer, const DataSource &train, const DataSource &test,
           const FitConfig &config, FitObserver &observer);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_FIT_H
