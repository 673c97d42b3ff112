//===- lr_schedule.cpp - Constant and warmup + cosine schedules -----------===//

#include "runtime/train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace rn::train {

WarmupCosineLr::WarmupCosineLr(double peak, int64_t warmupSteps, int64_t totalSteps)
    : peak_(peak), warmupSteps_(warmupSteps), totalSteps_(totalSteps) {}

WarmupCosineLr WarmupCosineLr::fromEpochs(double peak, double warmupEpochs,
                                          int64_t stepsPerEpoch, int64_t epochs) {
  int64_t total = stepsPerEpoch * epochs;
  int64_t warmup = std::min<int64_t>(std::llround(warmupEpochs * double(stepsPerEpoch)), total);
  return WarmupCosineLr(peak, warmup, total);
}

double WarmupCosineLr::lr(int64_t step) const {
  if (step < warmupSteps_)
    return peak_ * double(step + 1) / double(warmupSteps_);
  int64_t decay = totalSteps_ - warmupSteps_;
  if (decay <= 0)
    return peak_;
  const double pi = 3.14159265358979323846;
  return peak_ * 0.5 * (1 + std::cos(pi * double(step - warmupSteps_) / double(decay)));
}

} // namespace rn::train
