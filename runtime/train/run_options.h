//===- run_options.h - rn-run's flags: the run-time defaults -----*- C++ -*-===//
//
// rn-run's command line as one table (runFlags): each flag once, with its
// --help group, its value, its default and its help. The table drives the
// parser (parseRunOptions), rn-run --help (runUsage) and the defaults of
// the library's configurations: FitConfig, SyntheticRunConfig,
// BenchmarkConfig, ExecutorConfig and DataDirOptions take theirs from
// runDefaults(), the table's defaults parsed, so that each default is
// written once, as a string in run_options.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_RUN_OPTIONS_H
#define RN_RUNTIME_TRAIN_RUN_OPTIONS_H

#include "runtime/train/command_line.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rn::train {

/// What rn-run's flags set. Members start empty (zero, false, ""): a
/// default is the table's, applied by parseRunOptions and runDefaults.
struct RunOptions {
  std::string path; ///< the artifact, the one positional argument
  // training
  int64_t epochs{}, stopAfterEpoch{};
  double lr{}, warmupEpochs{};
  uint64_t seed{};
  std::string checkpoint, resume;
  bool noProgress{};
  // data
  std::string data, mean, std, label, augment;
  int64_t loaderThreads{}, limitTrain{}, limitTest{}, steps{};
  bool skipBadImages{}, synthetic{};
  // GPU
  std::string executor, planCache;
  bool deterministic{}, allowTf32{}, allowReducedPrecisionReduction{};
  int64_t autotuneCandidates{};
  // diagnostics
  bool benchmark{}, interleave{}, syncDebug{}, profile{};
  int64_t warmup{}, stateDigestEvery{};
  std::string stateDigest, dumpGraphs, trace;
  double perturbEps{};
  uint64_t perturbSeed{};
  // data-parallel
  int64_t gpus{}, cpuReplicas{};
  bool help{}, version{};
};

/// The table, its setters bound to `options`'s members, in --help order.
std::vector<Flag> runFlags(RunOptions &options);

/// Every flag at its default (and no artifact).
const RunOptions &runDefaults();

/// rn-run --help.
std::string runUsage();

/// `options` at the defaults, then the command line's flags and artifact
/// (--autotune-candidates capped at 2^20). `parsed` tells a missing value
/// from a wrong one.
Status parseRunOptions(int argc, const char *const *argv, RunOptions &options,
                       ParsedFlags &parsed);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_RUN_OPTIONS_H
