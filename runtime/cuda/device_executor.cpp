//===- device_executor.cpp - What the GPU executors share -----------------===//
//
// See device_executor.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/device_executor.h"

#include "runtime/cuda/check.h"

#include <algorithm>
#include <functional>

namespace rn::cuda {

namespace {

/// The schedule walk's primitives: staging and host waits on the device
/// program, launches by the executor.
class DevicePrimitives final : public HostPrimitives {
public:
  DevicePrimitives(DeviceProgram &device, std::function<Status(const HostAction &)> launch)
      : device_(device), launch_(std::move(launch)) {}
  Status stage(const HostAction &a) override { return device_.stage(a); }
  Status launch(const HostAction &a) override { return launch_(a); }
  Status hostWait(const HostAction &a) override { return device_.hostWait(a); }
  // Outputs are decoded when a completed step is collected.
  Status read(const HostAction &) override { return Status::success(); }

private:
  DeviceProgram &device_;
  std::function<Status(const HostAction &)> launch_;
};

} // namespace

Status DeviceExecutor::initialize() { return device_->initialize(); }

Result<std::shared_ptr<void>> DeviceExecutor::allocateHostInput(size_t bytes) {
  void *p = nullptr;
  if (Status st = RN_CUDA_CHECK(cudaHostAlloc(&p, std::max<size_t>(bytes, 1), cudaHostAllocDefault));
      !st.ok())
    return st.error().withContext("host input block of " + std::to_string(bytes) + " bytes");
  // Teardown never throws or reports: a failed free leaks the block.
  return std::shared_ptr<void>(p, [](void *q) { (void)cudaFreeHost(q); });
}

Result<std::shared_ptr<void>> DeviceExecutor::allocateDeviceInput(size_t bytes) {
  void *p = nullptr;
  if (Status st = RN_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(bytes, 1))); !st.ok())
    return st.error().withContext("device input block of " + std::to_string(bytes) + " bytes");
  // Teardown never throws or reports: a failed free leaks the block.
  return std::shared_ptr<void>(p, [](void *q) { (void)cudaFree(q); });
}

Result<std::vector<float>> DeviceExecutor::readState(std::string_view name) const {
  return device_->readState(name);
}

Status DeviceExecutor::writeState(std::string_view name, const std::vector<float> &values) {
  return device_->writeState(name, values);
}

Status DeviceExecutor::issue(const HostProgram &program) {
  DevicePrimitives primitives(*device_, [this](const HostAction &a) { return launch(a); });
  if (Status st = runHostProgram(program, primitives); !st.ok())
    return st.error().withContext(std::string(name()));
  return Status::success();
}

Result<bool> DeviceExecutor::stepComplete(const PendingStep &step) {
  Result<bool> done = device_->stepComplete(step);
  if (!done.ok())
    return done.error().withContext(std::string(name()));
  return done;
}

Status DeviceExecutor::waitStep(const PendingStep &step) {
  if (Status st = device_->waitStep(step); !st.ok())
    return st.error().withContext(std::string(name()));
  return Status::success();
}

Status DeviceExecutor::collect(PendingStep &step) {
  if (step.launches.empty())
    return Status::success();
  return device_->decodeOutputs(step.fn, step.step, step.outputs);
}

Status DeviceExecutor::synchronize() {
  if (Status st = device_->synchronize(); !st.ok())
    return st.error().withContext(std::string(name()));
  return Status::success();
}

} // namespace rn::cuda
