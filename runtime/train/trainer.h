//===- trainer.h - Training steps, evaluation and state over an executor -*- C++ -*-===//
//
// The trainer drives one rank's executor (rn::Executor: cpu, cuda-eager,
// cuda-graph) through training steps, evaluation and prediction, and reads
// and writes its state by name and role. It holds the per-rank state of the
// training loop (the step counter, steps queued and in flight, collected
// losses, the reused host input blocks), so one process may drive several
// trainers, one per thread.
//
// Steps stream. step() queues one batch with its learning rate and returns
// its step number (the program's `step` input, 1-based over the run), which
// names it in losses(); every `window` queued steps are submitted together
// and the losses of the steps that finished are collected (poll), so the
// device keeps up to the executor's output slots of steps in flight while
// the host prepares the next batches; drain() finishes everything. The
// newest submitted step is held by the executor until its successor arrives
// or the pipeline drains (its schedule prefetches the next batch).
// Evaluation, prediction and state access drain first.
//
// The learning rate is the caller's: any schedule (lr_schedule.h). The
// epoch loop over a data source with shuffling and a loader thread is
// fit.h's.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_TRAINER_H
#define RN_RUNTIME_TRAIN_TRAINER_H

#include "runtime/core/artifact.h"
#include "runtime/core/executor.h"
#include "runtime/core/input_block_pool.h"
#include "runtime/core/process_group.h"
#include "runtime/core/status.h"
#include "runtime/train/data_source.h"
#include "runtime/train/host_spans.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rn::train {

class RankGroup;

/// The loss of a finished training step; NaN when the program returned none.
struct StepLoss {
  int64_t step = 0; ///< the step number step() returned
  float loss = 0;
};

/// Loss and top-1 over a test set (summed over the ranks when
/// data-parallel).
struct Evaluation {
  double loss = 0;       ///< mean over the evaluated examples
  int64_t correct = 0;   ///< top-1 hits
  int64_t evaluated = 0; ///< examples scored (fewer than the set only when
                         ///< the program returns no logits for a padded batch)
};

/// One state entry of the program: parameters, buffers (BN running
/// statistics), gradients, optimizer moments, the loss scale, ...
struct StateInfo {
  std::string name;
  std::string role; ///< "parameter", "buffer", "gradient", ... (artifact.md)
  std::string of;   ///< the parameter of per-parameter state (a gradient's, an EMA's), else empty
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
};

/// A state entry's values by name (one float per element, in the entry's
/// shape, row-major).
using NamedValues = std::vector<std::pair<std::string, std::vector<float>>>;

class Trainer {
public:
  struct Options {
    /// Steps queued before they are submitted as one group (and the
    /// finished ones' losses collected).
    int64_t window = 8;
    /// The data-parallel rank's links (sums of reported numbers, averaged
    /// BN statistics); null: one rank. Not owned.
    RankGroup *ranks = nullptr;
    /// Where host spans go (a timeline), or null. Not owned.
    SpanRecorder *spans = nullptr;
  };

  /// A trainer of `executor` (initialized, idle; it must outlive the
  /// trainer). Fails unless train_step has inputs images [N, ...] and
  /// labels [N] and a softmax_cross_entropy loss (whose logits give the
  /// class count).
  static Result<std::unique_ptr<Trainer>> create(Executor &executor, Options options);
  static Result<std::unique_ptr<Trainer>> create(Executor &executor) {
    return create(executor, Options());
  }

  Executor &executor() { return executor_; }
  const Program &program() const { return executor_.program(); }
  /// The examples of one step (of this rank).
  int64_t batch() const { return imageShape_[0]; }
  /// train_step's images input, [N, ...] (NHWC for images).
  const std::vector<int64_t> &imageShape() const { return imageShape_; }
  /// Elements of one example's image.
  int64_t imageSize() const { return imageSize_; }
  /// The element type of train_step's images: f32 (or f16, bf16) for images
  /// the host normalized, u8 for pixels the device normalizes (a model
  /// compiled with a uint8 images input).
  DType imageDType() const { return imageDType_; }
  int64_t classes() const { return classes_; }
  /// The label smoothing of eval_step's loss (0 without one).
  double labelSmoothing() const { return labelSmoothing_; }
  int64_t window() const { return options_.window; }
  /// This rank and the number of ranks (rank 0 of 1 unless data-parallel).
  const ProcessGroup &group() const { return group_; }
  RankGroup *ranks() const { return options_.ranks; }
  SpanRecorder *spans() const { return options_.spans; }

  //===--------------------------------------------------------------------===//
  // Training steps
  //===--------------------------------------------------------------------===//

  /// The step number the next step() gets (1 at the start; a resumed run
  /// sets the one after its checkpoint's).
  int64_t nextStep() const { return nextStep_; }
  /// Fails while steps are queued or in flight.
  Status setNextStep(int64_t step);

  /// A block of host input memory for one batch's images (batch x
  /// imageSize elements of imageDType: floats, or bytes for a u8 model;
  /// page-locked on a GPU), reused once no step holds it. Thread-safe, so a
  /// loader thread may fill blocks.
  Result<std::shared_ptr<void>> imageBlock();
  /// The same in device memory (GPU executors), for a batch that is already
  /// on the GPU: the caller copies it in device to device.
  Result<std::shared_ptr<void>> deviceImageBlock();

  /// One step's batch: its images in a block from imageBlock() (or any
  /// memory of batch x imageSize elements of imageDType the step may hold
  /// until it finished), or from deviceImageBlock() with imagesOnDevice,
  /// and its labels.
  struct Batch {
    std::shared_ptr<const void> images;
    std::vector<int32_t> labels;
    bool imagesOnDevice = false;
  };
  /// Queues a training step with learning rate `lr` and returns its step
  /// number; submits the queue when it holds `window` steps.
  Result<int64_t> step(Batch batch, float lr);
  /// The same with images and labels copied from the caller's arrays
  /// (batch x imageSize floats, batch labels); an error for a u8 model.
  Result<int64_t> step(const float *images, const int32_t *labels, float lr);
  /// The same for a u8 model: batch x imageSize uint8 pixels (NHWC), which
  /// the device normalizes; an error for a float model.
  Result<int64_t> step(const uint8_t *pixels, const int32_t *labels, float lr);
  /// Submits the queued steps and collects the losses of finished ones.
  Status flush();
  /// Submits the queued steps and waits for every step: the executor is
  /// idle afterwards and every loss collected.
  Status drain();
  /// Steps queued or in flight whose losses are not collected yet.
  int64_t pending() const;
  /// Losses of finished steps not taken yet, oldest first.
  const std::vector<StepLoss> &losses() const { return losses_; }
  std::vector<StepLoss> takeLosses();

  /// Runs `batches` (with learning rates `lrs`) as one pipelined host
  /// program, submitted and drained in one (the CPU executor's interleaved
  /// mode then checks them as one concurrent execution); nothing may be
  /// queued or in flight. Their losses join losses().
  Status runSteps(const std::vector<HostBatch> &batches, const std::vector<float> &lrs);

  //===--------------------------------------------------------------------===//
  // Evaluation and prediction
  //===--------------------------------------------------------------------===//

  /// That eval_step takes images of train_step's shape.
  Status checkEvalInput() const;
  /// Loss and top-1 over every example of `test`, in order, in batches of
  /// the program's size; a last incomplete batch is padded with the first
  /// examples and scored from the logits of its real rows (with the loss
  /// op's kernel and smoothing), or skipped when the program returns no
  /// logits. Data-parallel: the ranks first average their BN statistics,
  /// rank r evaluates the batches b with b % ranks == r and the sums are
  /// added over the ranks.
  /// `options` says how the test batches are read (threads, skipping; its
  /// draw is evaluation's whatever it holds).
  Result<Evaluation> evaluate(const DataSource &test, const BatchOptions &options = {});
  /// The logits [count, classes] of `count` images (count x imageSize
  /// floats), in batches of the program's size (the last one padded); an
  /// error for a u8 model.
  Result<std::vector<float>> predict(const float *images, int64_t count);
  /// The same for a u8 model: count x imageSize uint8 pixels.
  Result<std::vector<float>> predict(const uint8_t *pixels, int64_t count);

  //===--------------------------------------------------------------------===//
  // Input normalization (u8 models)
  //===--------------------------------------------------------------------===//

  /// Sets the per-channel mean and std a u8 model normalizes its pixels
  /// with on the device, (x / 255 - mean) * (1 / std): the two buffers its
  /// normalization reads (the frontend's input.mean and input.std, whose
  /// compiled values are the defaults). Being state, they are checkpointed.
  /// An error for a float model, for another count than the images'
  /// channels, or for a std that is not positive and finite.
  Status setInputNormalization(const std::vector<float> &mean, const std::vector<float> &std);
  /// The mean and std a u8 model normalizes with now; an error for a float
  /// model.
  Result<ChannelNormalization> inputNormalization();

  //===--------------------------------------------------------------------===//
  // State
  //===--------------------------------------------------------------------===//

  /// The program's state entries in program order; with `role`, only those
  /// of that role.
  std::vector<StateInfo> state(std::string_view role = {}) const;
  Result<std::vector<float>> readState(std::string_view name);
  Status writeState(std::string_view name, const std::vector<float> &values);
  /// Every entry of `role` (all when empty) with its values.
  Result<NamedValues> stateDict(std::string_view role = {});
  /// Writes every entry of `values`; an unknown name, or a count that does
  /// not match the entry's shape, is an error naming the entry (nothing
  /// after it is written).
  Status loadStateDict(const NamedValues &values);

  /// Sums `values` over the data-parallel ranks (unchanged with one).
  Status sumOverRanks(std::vector<double> &values);

  Trainer(const Trainer &) = delete;
  Trainer &operator=(const Trainer &) = delete;

private:
  Trainer(Executor &executor, Options options, std::vector<int64_t> imageShape, DType imageDType,
          int64_t classes, double labelSmoothing);
  /// The names of the state a u8 model's normalization reads (mean, std),
  /// or an error naming why there is none.
  Result<std::pair<std::string, std::string>> normalizationState() const;
  /// Runs eval_step over `count` images of `rows` per batch, filling each
  /// batch with `fill(first, rows, hb)` (the last one padded).
  template <typename Fill>
  Result<std::vector<float>> predictBatches(int64_t count, Fill fill);
  /// Moves finished outputs to losses_.
  void collect(std::vector<StepOutputs> &finished);
  /// Submits queued_ (a span names the steps).
  Status submitQueued();

  Executor &executor_;
  Options options_;
  ProcessGroup group_;
  std::vector<int64_t> imageShape_;
  DType imageDType_ = DType::f32;
  int64_t imageSize_ = 0;
  int64_t classes_ = 0;
  double labelSmoothing_ = 0;
  InputBlockPool imagePool_;
  InputBlockPool deviceImagePool_;

  int64_t nextStep_ = 1;      ///< the number of the next queued step
  int64_t nextFinished_ = 1;  ///< the number of the next collected step
  std::vector<StepInputs> queued_;
  std::vector<StepLoss> losses_;
};

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_TRAINER_H
