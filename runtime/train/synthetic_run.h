//===- synthetic_run.h - Training on the fixed synthetic dataset -*- C++ -*-===//
//
// rn-run --synthetic: 8 global batches of uniform random images labelled by
// a random linear teacher (syntheticTeacherData), cycled, the learning
// rate constant. The steps run in groups of up to 8, each one pipelined
// host program (prologue, even/odd, last), with the executor idle in
// between, so that the CPU executor's interleaved mode checks those
// schedules and the state can be read between groups (state digests after
// every K steps). Data-parallel, every rank draws the same global batches
// (batch x ranks examples) and trains its shard; with one rank of batch 2B
// and two of batch B the global batches are the same examples.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_SYNTHETIC_RUN_H
#define RN_RUNTIME_TRAIN_SYNTHETIC_RUN_H

#include "runtime/core/status.h"
#include "runtime/train/run_options.h"
#include "runtime/train/trainer.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>

namespace rn::train {

/// The defaults are rn-run's (run_options.h).
struct SyntheticRunConfig {
  int64_t steps = runDefaults().steps;
  double lr = runDefaults().lr;
  uint64_t seed = runDefaults().seed; ///< the dataset's
  int64_t digestEvery = 0;  ///< > 0: a state digest after every K steps and the last
};

struct SyntheticRunResult {
  float firstLoss = 0, lastLoss = 0;
  double seconds = 0; ///< of the training steps
  /// With digestEvery: [{"step": N, "state": stateDigest}, ...].
  nlohmann::json digests = nlohmann::json::array();
};

/// Trains `trainer` config.steps steps; `onLoss(step, loss)` is told every
/// step's loss (the ranks' mean: the global batch's) in order.
Result<SyntheticRunResult> trainSynthetic(Trainer &trainer, const SyntheticRunConfig &config,
                                          const std::function<void(int64_t, float)> &onLoss);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_SYNTHETIC_RUN_H
