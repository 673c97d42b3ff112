//===- device_context.h - Streams, handles, events and the arena of one GPU -*- C++ -*-===//
//
// Everything a GPU executor creates at load and keeps until teardown:
//   - five non-blocking streams (TRANS, COMP_1, COMP_2, COMP_3, UPDATE),
//     each with its own cuDNN and cuBLASLt handle and its workspace, which
//     is the program's workspace_<stream> region (TRANS has none). Nothing
//     is ever issued on the legacy default stream.
//   - one device allocation for the arena's regions up to its workspaces
//     (the memory plan puts them last); regions are views of it at the
//     offsets of the plan.
//   - the workspaces sized to need: the plan's workspace_<stream> bytes are
//     a cap. While the nodes are prepared (plans chosen, within the cap)
//     every stream's workspace is one shared scratch block of the largest
//     cap (preparing runs one node at a time and synchronizes); then
//     sizeWorkspaces() replaces it by one allocation holding each stream's
//     workspace at the size its nodes said they need.
//   - the CUDA events of the program's events: one per (event id, slot),
//     the mapping of host_program.h's EventBinder; and a pool of events
//     for the part orders of forking ops (one per part_waits pair, handed
//     out at load). All are created here, before anything is issued or
//     captured, with timing disabled.
// Teardown synchronizes the device and destroys everything, ignoring
// (never throwing on) errors: a context may be destroyed after a fault.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_DEVICE_CONTEXT_H
#define RN_RUNTIME_CUDA_DEVICE_CONTEXT_H

#include "runtime/core/artifact.h"
#include "runtime/core/host_program.h"
#include "runtime/core/status.h"
#include "runtime/cuda/stream_resources.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace rn::cuda {

inline constexpr size_t kStreamCount = 5;

/// Whether a CUDA driver answers and a device exists; the reason otherwise.
Status deviceAvailable();

/// The current device's memory in use by every process (total - free of
/// cudaMemGetInfo): how benchmarks compare the systems' peak memory, the way
/// PyTorch's torch.cuda.mem_get_info() sees it.
Result<size_t> deviceMemoryInUse();

class DeviceContext {
public:
  struct Options {
    int device = 0;
    /// Part-order events to create (one per part_waits pair of the program).
    size_t partEvents = 0;
  };

  static Result<std::unique_ptr<DeviceContext>> create(const Program &program,
                                                       const Options &options);
  ~DeviceContext();

  StreamResources &stream(Stream s) { return streams_[size_t(s)]; }
  const StreamResources &stream(Stream s) const { return streams_[size_t(s)]; }

  /// The device address of `offset` in region `kind`; inputs_a is moved to
  /// inputs_b for variant B.
  void *address(const Slot &slot, Variant variant) const;
  /// The device address of a region's start, or null when absent.
  void *region(std::string_view kind) const;

  cudaEvent_t event(EventSlot slot) const {
    return events_[size_t(slot.event) * 2 + size_t(slot.slot)];
  }
  cudaEvent_t partEvent(size_t index) const { return partEvents_[index]; }

  std::string deviceName() const { return deviceName_; }
  /// Device bytes allocated for the program: the arena's regions before the
  /// workspaces plus the workspaces as sized (their caps before
  /// sizeWorkspaces()).
  size_t arenaBytes() const { return arenaBytes_ + workspaceBlockBytes_; }
  /// What the memory plan reserved for the workspaces (the caps).
  size_t plannedWorkspaceBytes() const { return plannedWorkspaceBytes_; }
  /// The workspaces as allocated now.
  size_t workspaceBytes() const { return workspaceBlockBytes_; }

  /// The bytes region `r` has on the device: its plan's size, or the sized
  /// workspace of its stream.
  size_t allocatedBytes(const Region &r) const;
  /// "arena 120.5 MiB in 12 regions (workspaces 3.2 MiB of the plan's
  /// 193.0 MiB)", for the executors' load lines.
  std::string describeArena() const;

  /// Replaces the shared preparation scratch by each stream's workspace of
  /// `need[stream]` bytes (at most its cap), in one allocation. Called once,
  /// after every node is prepared and before anything is captured or run:
  /// nothing may keep a workspace address from before.
  Status sizeWorkspaces(const std::array<size_t, kStreamCount> &need);

  /// Blocks until every stream is idle; reports an asynchronous fault.
  Status synchronize();

  DeviceContext(const DeviceContext &) = delete;
  DeviceContext &operator=(const DeviceContext &) = delete;

private:
  DeviceContext() = default;
  /// The stream whose workspace region `kind` is (workspace_comp1 ...), or
  /// null for any other region.
  const StreamResources *workspaceOwner(std::string_view kind) const;
  const Program *program_ = nullptr;
  std::array<StreamResources, kStreamCount> streams_{};
  char *arena_ = nullptr;
  size_t arenaBytes_ = 0;
  /// The preparation scratch, then the sized workspaces (one block).
  char *workspaceBlock_ = nullptr;
  size_t workspaceBlockBytes_ = 0;
  size_t plannedWorkspaceBytes_ = 0;
  bool workspacesSized_ = false;
  std::vector<cudaEvent_t> events_;
  std::vector<cudaEvent_t> partEvents_;
  std::string deviceName_;
  int device_ = 0;
};

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_DEVICE_CONTEXT_H
