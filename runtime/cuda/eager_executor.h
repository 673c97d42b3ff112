//===- eager_executor.h - The cuda-eager executor ---------------*- C++ -*-===//
//
// Runs a program on one GPU by issuing every node directly on its stream,
// as the program says: event records and waits where the nodes are (CUDA
// events mapped by host_program.h's EventBinder), forking ops part by part
// on the parts' streams in part order with an event for each part_waits
// pair, host waits as event synchronization on a completion event recorded
// at the end of each launch on its primary stream. The host side (which
// schedules, staging, reading outputs) is the shared host-program walk.
//
// Host staging: one pinned buffer per host input, as in the program; the
// host writes it only after the schedule's host waits say the previous copy
// from it completed (the CPU executor's interleaved mode checks that order).
// Outputs: the executor copies each output device-to-host on the stream of
// the node that writes it, right after that node, into the step's pinned
// slot (a ring of Options::maxStepsInFlight); the launch's streams join its
// primary after that, so once a step's launches completed (their
// completion events) its slot is decoded. Nothing is allocated, built or planned inside a step.
//
// Sync-debug mode synchronizes after every node, so an asynchronous fault
// is reported with the node that caused it.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_EAGER_EXECUTOR_H
#define RN_RUNTIME_CUDA_EAGER_EXECUTOR_H

#include "runtime/cuda/device_executor.h"

#include <memory>
#include <optional>
#include <string>

namespace rn::cuda {

class EagerExecutor final : public DeviceExecutor {
public:
  /// Shared with cuda-graph (device_program.h).
  using Options = DeviceProgram::Options;

  /// Validates that every op has a GPU launcher, creates the device
  /// context, stages and prepares every node (graphs, plans, workspaces).
  /// `artifact` must outlive the executor (a temporary does not compile).
  static Result<std::unique_ptr<EagerExecutor>> create(const Artifact &artifact,
                                                       const Options &options);
  static Result<std::unique_ptr<EagerExecutor>> create(Artifact &&, const Options &) = delete;
  ~EagerExecutor() override;

  std::string_view name() const override { return "cuda-eager"; }

  /// What load did: device, arena, plans and the seconds spent.
  std::string loadSummary() const;
  /// With Options::profile: the GPU time of the last train step by op.
  Result<std::string> profileReport();

  EagerExecutor(const EagerExecutor &) = delete;
  EagerExecutor &operator=(const EagerExecutor &) = delete;

private:
  EagerExecutor() = default;
  Status launch(const HostAction &action) override;
  std::optional<EventBinder> binder_;
};

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_EAGER_EXECUTOR_H
