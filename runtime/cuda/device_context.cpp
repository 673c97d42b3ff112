//===- device_context.cpp - Streams, handles, events and the arena --------===//
//
// See device_context.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/device_context.h"

#include "runtime/core/align.h"
#include "runtime/cuda/check.h"

#include <algorithm>
#include <cstdio>

namespace rn::cuda {

Status deviceAvailable() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return Error("no usable CUDA device: cudaGetDeviceCount failed: " + describe(e));
  if (count == 0)
    return Error("no usable CUDA device: the driver reports none");
  return Status::success();
}

Result<size_t> deviceMemoryInUse() {
  size_t free = 0, total = 0;
  RN_CUDA_TRY(cudaMemGetInfo(&free, &total));
  return total - free;
}

namespace {

bool isWorkspaceRegion(std::string_view kind) { return kind.rfind("workspace_", 0) == 0; }

/// cudaMalloc of `bytes` (none for 0), with the device's free memory in the
/// message when it fails.
Status allocateDevice(char *&pointer, size_t bytes, const std::string &what,
                      const std::string &deviceName) {
  pointer = nullptr;
  if (bytes == 0)
    return Status::success();
  cudaError_t alloc = cudaMalloc(reinterpret_cast<void **>(&pointer), bytes);
  if (alloc == cudaSuccess && !injectedFailure())
    return Status::success();
  if (alloc == cudaSuccess)
    (void)cudaFree(pointer);
  pointer = nullptr;
  size_t free = 0, total = 0;
  (void)cudaGetLastError();
  (void)cudaMemGetInfo(&free, &total);
  return Error("cannot allocate " + what + " of " + std::to_string(bytes) + " bytes on " +
               deviceName + " (" + std::to_string(free >> 20) + " MiB free of " +
               std::to_string(total >> 20) + " MiB): " +
               (alloc != cudaSuccess ? describe(alloc) : "injected failure (RN_CUDA_FAIL_CALL)"));
}

} // namespace

Result<std::unique_ptr<DeviceContext>> DeviceContext::create(const Program &program,
                                                             const Options &options) {
  if (Status st = deviceAvailable(); !st.ok())
    return st.error();
  std::unique_ptr<DeviceContext> ctx(new DeviceContext());
  ctx->program_ = &program;
  ctx->device_ = options.device;
  RN_CUDA_TRY(cudaSetDevice(options.device));
  cudaDeviceProp prop{};
  RN_CUDA_TRY(cudaGetDeviceProperties(&prop, options.device));
  ctx->deviceName_ = prop.name;
  if (prop.major < 9)
    return Error(std::string("device ") + prop.name + " has compute capability " +
                 std::to_string(prop.major) + "." + std::to_string(prop.minor) +
                 "; this build targets sm_90 (Hopper) only");

  // The workspaces are the arena's tail (plan-memory places regions in
  // enum order, workspaces last); they get their own block, sized later.
  size_t workspaceBase = program.arena.bytes, largestCap = 0;
  for (const Region &r : program.arena.regions)
    if (isWorkspaceRegion(r.kind)) {
      workspaceBase = std::min<size_t>(workspaceBase, r.offset);
      largestCap = std::max<size_t>(largestCap, r.bytes);
      ctx->plannedWorkspaceBytes_ += r.bytes;
    }
  for (const Region &r : program.arena.regions)
    if (!isWorkspaceRegion(r.kind) && r.offset + r.bytes > workspaceBase)
      return Error("the memory plan puts region " + r.kind +
                   " after a workspace: the runtime needs the workspaces last");

  ctx->arenaBytes_ = workspaceBase;
  if (Status st = allocateDevice(ctx->arena_, ctx->arenaBytes_, "the arena", ctx->deviceName_);
      !st.ok())
    return st.error();
  ctx->workspaceBlockBytes_ = largestCap;
  if (Status st = allocateDevice(ctx->workspaceBlock_, largestCap,
                                 "the workspace scratch for preparing nodes", ctx->deviceName_);
      !st.ok())
    return st.error();

  static constexpr Stream kAll[kStreamCount] = {Stream::trans, Stream::comp1, Stream::comp2,
                                                Stream::comp3, Stream::update};
  for (Stream s : kAll) {
    StreamResources &r = ctx->streams_[size_t(s)];
    r.name = streamName(s);
    RN_CUDA_TRY(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
    RN_CUDA_TRY(cudnnCreate(&r.cudnn));
    RN_CUDA_TRY(cudnnSetStream(r.cudnn, r.stream));
    RN_CUDA_TRY(cublasLtCreate(&r.cublasLt));
    std::string ws = "workspace_" + std::string(streamName(s));
    if (const Region *region = program.arena.find(ws)) {
      r.workspace = ctx->workspaceBlock_;
      r.workspaceBytes = region->bytes;
    }
  }

  ctx->events_.assign(size_t(program.numEvents) * 2, nullptr);
  for (cudaEvent_t &e : ctx->events_)
    RN_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  ctx->partEvents_.assign(options.partEvents, nullptr);
  for (cudaEvent_t &e : ctx->partEvents_)
    RN_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return ctx;
}

DeviceContext::~DeviceContext() {
  // Teardown never throws and reports nothing: the context may be torn
  // down after a fault, when every call fails.
  (void)cudaSetDevice(device_);
  for (StreamResources &r : streams_)
    if (r.stream)
      (void)cudaStreamSynchronize(r.stream);
  for (cudaEvent_t e : events_)
    if (e)
      (void)cudaEventDestroy(e);
  for (cudaEvent_t e : partEvents_)
    if (e)
      (void)cudaEventDestroy(e);
  for (StreamResources &r : streams_) {
    if (r.cublasLt)
      (void)cublasLtDestroy(r.cublasLt);
    if (r.cudnn)
      (void)cudnnDestroy(r.cudnn);
    if (r.stream)
      (void)cudaStreamDestroy(r.stream);
  }
  if (arena_)
    (void)cudaFree(arena_);
  if (workspaceBlock_)
    (void)cudaFree(workspaceBlock_);
  (void)cudaGetLastError();
}

const StreamResources *DeviceContext::workspaceOwner(std::string_view kind) const {
  if (!isWorkspaceRegion(kind))
    return nullptr;
  for (const StreamResources &s : streams_)
    if (kind.substr(std::string_view("workspace_").size()) == s.name)
      return &s;
  return nullptr;
}

void *DeviceContext::region(std::string_view kind) const {
  const Region *r = program_->arena.find(kind);
  if (!r)
    return nullptr;
  if (isWorkspaceRegion(kind)) {
    const StreamResources *owner = workspaceOwner(kind);
    return owner ? owner->workspace : nullptr;
  }
  return arena_ + r->offset;
}

size_t DeviceContext::allocatedBytes(const Region &r) const {
  if (!isWorkspaceRegion(r.kind))
    return r.bytes;
  const StreamResources *owner = workspaceOwner(r.kind);
  return owner ? owner->workspaceBytes : 0;
}

std::string DeviceContext::describeArena() const {
  char line[160];
  std::snprintf(line, sizeof line, "arena %.1f MiB in %zu regions (workspaces %.1f MiB of the plan's %.1f MiB)",
                double(arenaBytes()) / (1 << 20), program_->arena.regions.size(),
                double(workspaceBlockBytes_) / (1 << 20), double(plannedWorkspaceBytes_) / (1 << 20));
  return line;
}

Status DeviceContext::sizeWorkspaces(const std::array<size_t, kStreamCount> &need) {
  if (workspacesSized_)
    return Error("the workspaces are sized once, at load");
  // The scratch may still be in use by a node's preparation (autotuning).
  if (Status st = synchronize(); !st.ok())
    return st.error().withContext("before sizing the workspaces");
  std::array<size_t, kStreamCount> offset{};
  size_t total = 0;
  for (size_t s = 0; s < kStreamCount; ++s) {
    const StreamResources &r = streams_[s];
    if (need[s] > r.workspaceBytes)
      return Error("stream " + std::string(r.name) + " needs " + std::to_string(need[s]) +
                   " bytes of workspace, over the plan's workspace_" + std::string(r.name) +
                   " of " + std::to_string(r.workspaceBytes));
    offset[s] = total;
    total += alignUp(need[s]);
  }
  if (workspaceBlock_)
    RN_CUDA_TRY(cudaFree(workspaceBlock_));
  workspaceBlock_ = nullptr;
  workspaceBlockBytes_ = 0;
  if (Status st = allocateDevice(workspaceBlock_, total, "the stream workspaces", deviceName_);
      !st.ok())
    return st.error();
  workspaceBlockBytes_ = total;
  for (size_t s = 0; s < kStreamCount; ++s) {
    StreamResources &r = streams_[s];
    r.workspace = need[s] ? workspaceBlock_ + offset[s] : nullptr;
    r.workspaceBytes = need[s];
  }
  workspacesSized_ = true;
  return Status::success();
}

void *DeviceContext::address(const Slot &slot, Variant variant) const {
  std::string_view kind = slot.region;
  if (variant == Variant::b && kind == "inputs_a" && program_->arena.find("inputs_b"))
    kind = "inputs_b";
  return static_cast<char *>(region(kind)) + slot.offset;
}

Status DeviceContext::synchronize() {
  for (const StreamResources &r : streams_)
    if (r.stream) {
      Status st = RN_CUDA_CHECK(cudaStreamSynchronize(r.stream));
      if (!st.ok())
        return st.error().withContext("stream " + std::string(r.name));
    }
  return Status::success();
}

} // namespace rn::cuda
