//===- session.h - One rank's training objects, built and torn down in order -*- C++ -*-===//
//
// What a rank trains with: its links to the other ranks (RankGroup), an
// optional GPU timeline, the executor (created, initialized), and the
// trainer over it. They depend on each other's lifetimes: the communicator
// must exist before the executor, whose steps use it, and outlive it; a
// failed rank must abort its communicator before the executor's teardown
// waits for its streams; the timeline follows graph nodes from their
// capture. A Session builds them in that order and tears them down in
// reverse, so that rn-run and the Python binding cannot get it wrong.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_SESSION_H
#define RN_RUNTIME_TRAIN_SESSION_H

#include "runtime/core/artifact.h"
#include "runtime/core/process_group.h"
#include "runtime/core/status.h"
#include "runtime/train/data_parallel.h"
#include "runtime/train/executor_factory.h"
#include "runtime/train/trainer.h"

#include <functional>
#include <memory>
#include <string>

namespace rn::train {

class Session {
public:
  struct Config {
    /// The executor's settings; `ranks` and `trace` are the session's.
    ExecutorConfig executor;
    /// The artifact's file: the ranks compare its digest at start-up, and
    /// messages name it.
    std::string artifactPath;
    /// This rank; `dataParallel` when it was launched as a rank of a
    /// data-parallel run (WORLD_SIZE set, even to 1, or threads of
    /// `shared`), which then averages its gradients with its peers'.
    ProcessGroup group;
    bool dataParallel = false;
    const InProcessRanks *shared = nullptr;
    /// Record a GPU timeline (written by the caller with trace()->write).
    bool trace = false;
    /// Trainer::Options::window.
    int64_t window = 8;
    /// perturbParameters after initialization, when eps > 0.
    double perturbEps = 0;
    uint64_t perturbSeed = 0;
  };
  /// Told as the session is built, for a report in order (each may be
  /// empty).
  struct Events {
    /// The data-parallel checks passed; nothing is created yet.
    std::function<void()> started;
    /// A GPU rank's communicator is ready (its summary line).
    std::function<void(const std::string &)> connected;
    /// The executor is created (a GPU executor's load summary; empty on
    /// the CPU).
    std::function<void(const std::string &)> loaded;
    /// The parameters were perturbed.
    std::function<void()> perturbed;
  };

  /// Builds the rank's objects for `artifact` (which the session keeps) and
  /// initializes the state. Errors say which step failed.
  static Result<std::unique_ptr<Session>> open(std::shared_ptr<const Artifact> artifact,
                                               const Config &config,
                                               const Events &events = {});
  /// Tears down in reverse order; a session not marked succeeded() first
  /// aborts its rank's collectives. Never throws.
  ~Session();

  Trainer &trainer() { return *trainer_; }
  Executor &executor() { return *executor_; }
  RankGroup &ranks() { return *ranks_; }
  /// The timeline when Config::trace, else null.
  GpuTrace *trace() { return trace_.get(); }
  const Artifact &artifact() const { return *artifact_; }
  /// The run succeeded: teardown leaves the communicator to close cleanly.
  void succeeded() { abortOnFailure_->succeeded(); }

  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

private:
  Session() = default;
  // Destroyed bottom to top: the trainer, the timeline, the abort guard
  // (before the executor's teardown), the executor, the rank links, the
  // artifact.
  std::shared_ptr<const Artifact> artifact_;
  std::unique_ptr<RankGroup> ranks_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<AbortUnlessSucceeded> abortOnFailure_;
  std::unique_ptr<GpuTrace> trace_;
  std::unique_ptr<Trainer> trainer_;
};

/// The artifact at `path`: checkArtifactFile's verdict on a file that is
/// not one (MLIR text, another format), else loadArtifact's.
Result<std::shared_ptr<const Artifact>> loadArtifactFile(const std::string &path);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_SESSION_H
