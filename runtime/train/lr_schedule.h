//===- lr_schedule.h - The learning rate of every training step -*- C++ -*-===//
//
// The learning rate is computed on the host and passed with every step (the
// program's `lr` input), so any schedule works without recompiling. A
// schedule maps the 0-based global step (over the whole run, not the epoch)
// to a rate; a resumed run asks for the same steps as an uninterrupted one
// and so gets the same rates.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_LR_SCHEDULE_H
#define RN_RUNTIME_TRAIN_LR_SCHEDULE_H

#include <cstdint>

namespace rn::train {

class LrSchedule {
public:
  virtual ~LrSchedule() = default;
  /// The learning rate of 0-based global step `step`.
  virtual double lr(int64_t step) const = 0;
};

class ConstantLr final : public LrSchedule {
public:
  explicit ConstantLr(double lr) : lr_(lr) {}
  double lr(int64_t) const override { return lr_; }

private:
  double lr_;
};

/// Linear warmup over `warmupSteps` steps to `peak` (step k of the warmup
/// runs at peak * (k + 1) / warmupSteps), then cosine decay to 0 at step
/// `totalSteps`.
class WarmupCosineLr final : public LrSchedule {
public:
  WarmupCosineLr(double peak, int64_t warmupSteps, int64_t totalSteps);
  /// The schedule of a run of `epochs` epochs of `stepsPerEpoch` steps with
  /// `warmupEpochs` (may be fractional) of warmup, rounded to the nearest
  /// step and at most the whole run.
  static WarmupCosineLr fromEpochs(double peak, double warmupEpochs, int64_t stepsPerEpoch,
                                   int64_t epochs);

  double lr(int64_t step) const override;
  double peak() const { return peak_; }
  int64_t warmupSteps() const { return warmupSteps_; }
  int64_t totalSteps() const { return totalSteps_; }

private:
  double peak_;
  int64_t warmupSteps_;
  int64_t totalSteps_;
};

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_LR_SCHEDULE_H
