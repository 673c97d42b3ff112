//===- benchmark.h - Milliseconds per training step on random data -*- C++ -*-===//
//
// The method of the PyTorch reference (bench/README.md): `warmup` steps,
// then three repetitions of `steps` steps, each one pipelined call (the
// next batch's copy overlaps the current step) timed on the host around
// the call, which returns when the last step's outputs are on the host; the
// median is reported. Every step copies the same batch from one block of
// host input memory (page-locked on a GPU), as the peers' benchmarks copy
// one pinned batch per step: the host prepares nothing per step.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_BENCHMARK_H
#define RN_RUNTIME_TRAIN_BENCHMARK_H

#include "runtime/core/status.h"
#include "runtime/train/run_options.h"
#include "runtime/train/trainer.h"

#include <chrono>
#include <cstdint>
#include <string>

namespace rn::train {

/// The defaults are rn-run's (run_options.h).
struct BenchmarkConfig {
  /// Steps before the timed ones (the first runs alone).
  int64_t warmup = runDefaults().warmup;
  int64_t steps = runDefaults().steps; ///< steps per timed repetition
  double lr = runDefaults().lr;
  uint64_t seed = runDefaults().seed; ///< the random batch's
  /// For the time to the first step: when the process started, and the
  /// seconds its load took (artifact, executor with autotuning and capture,
  /// initialization).
  std::chrono::steady_clock::time_point processStart = std::chrono::steady_clock::now();
  double loadSeconds = 0;
};

struct BenchmarkResult {
  double msPerStep = 0;     ///< the median repetition's
  double hostMsPerStep = 0; ///< host time of a step, time blocked on the device taken out
  double loadSeconds = 0;
  double firstStepSeconds = 0; ///< process start to the end of the first step
  /// The device's memory in use after the first step and after each timed
  /// repetition, the largest (0 on the CPU).
  size_t peakMemoryBytes = 0;
  double convFloorMs = -1;  ///< the step's autotuned convolution times; -1: unknown
  float loss = 0;           ///< the last step's
};

/// Runs the benchmark on `trainer`'s executor (idle; its state trains on).
Result<BenchmarkResult> benchmark(Trainer &trainer, const BenchmarkConfig &config);

/// rn-run --benchmark's JSON line (no newline): model, executor, batch (one
/// rank's), gpus (the ranks), ms_per_step, images_per_s (all ranks'),
/// host_ms_per_step, load_s, first_step_s, peak_memory_inproc_bytes,
/// arena_bytes, conv_floor_ms, loss.
std::string benchmarkJson(Trainer &trainer, const BenchmarkResult &result);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_BENCHMARK_H
