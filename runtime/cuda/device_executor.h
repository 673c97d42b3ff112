//===- device_executor.h - What the GPU executors share ---------*- C++ -*-===//
//
// cuda-eager and cuda-graph run a DeviceProgram (device_program.h) and
// differ only in how one launch of a subgraph reaches the GPU: node by node,
// or as a replayed graph. Everything else an Executor does is the same and
// lives here: state, the host primitives of the schedule walk (staging into
// the pinned buffers, host waits as event synchronization), step completion
// by completion events, outputs decoded from their pinned slots.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_DEVICE_EXECUTOR_H
#define RN_RUNTIME_CUDA_DEVICE_EXECUTOR_H

#include "runtime/core/executor.h"
#include "runtime/cuda/device_program.h"

#include <memory>

namespace rn::cuda {

class DeviceExecutor : public Executor {
public:
  const Program &program() const override { return device_->program(); }
  Status initialize() override;
  Result<std::vector<float>> readState(std::string_view name) const override;
  Status writeState(std::string_view name, const std::vector<float> &values) override;
  double hostBlockedSeconds() const override { return device_->blockedSeconds(); }
  /// Page-locked (cudaHostAlloc), freed when the last reference goes.
  Result<std::shared_ptr<void>> allocateHostInput(size_t bytes) override;
  /// cudaMalloc on the executor's device, freed when the last reference goes.
  Result<std::shared_ptr<void>> allocateDeviceInput(size_t bytes) override;
  /// DeviceProgram::convFloorMs.
  double convFloorMs() const { return device_->convFloorMs(); }
  /// The prepared program (its device context: streams, workspaces).
  const DeviceProgram &deviceProgram() const { return *device_; }

protected:
  DeviceExecutor() = default;
  /// Issues one launch of a subgraph (HostAction::Kind::launch).
  virtual Status launch(const HostAction &action) = 0;

  Status issue(const HostProgram &program) override;
  Result<bool> stepComplete(const PendingStep &step) override;
  Status waitStep(const PendingStep &step) override;
  Status collect(PendingStep &step) override;
  Status synchronize() override;
  size_t maxStepsInFlight() const override { return device_->options().maxStepsInFlight; }

  /// Set by the executor's create; destroyed after the executor's own
  /// members (its graphs and events).
  std::unique_ptr<DeviceProgram> device_;
};

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_DEVICE_EXECUTOR_H
