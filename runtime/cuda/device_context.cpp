//===- device_context.cpp - Streams, handles, events and the arena --------===//
//
// See device_context.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/device_context.h"

#include "runtime/cuda/check.h"

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

  ctx->arenaBytes_ = program.arena.bytes;
  cudaError_t alloc = cudaMalloc(reinterpret_cast<void **>(&ctx->arena_), ctx->arenaBytes_);
  if (alloc != cudaSuccess || injectedFailure()) {
    size_t free = 0, total = 0;
    (void)cudaGetLastError();
    (void)cudaMemGetInfo(&free, &total);
    ctx->arena_ = nullptr;
    return Error("cannot allocate the arena of " + std::to_string(ctx->arenaBytes_) +
                 " bytes on " + ctx->deviceName_ + " (" + std::to_string(free >> 20) +
                 " MiB free of " + std::to_string(total >> 20) + " MiB): " +
                 (alloc != cudaSuccess ? describe(alloc) : "injected failure (RN_CUDA_FAIL_CALL)"));
  }

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
      r.workspace = ctx->arena_ + region->offset;
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
  (void)cudaGetLastError();
}

void *DeviceContext::region(std::string_view kind) const {
  const Region *r = program_->arena.find(kind);
  return r ? arena_ + r->offset : nullptr;
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
