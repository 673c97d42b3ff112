//===- stream_resources.h - What a kernel launch gets from its stream -*- C++ -*-===//
//
// The device context (device_context.h) owns five non-blocking streams, and
// each stream owns its cuDNN handle, cuBLASLt handle and workspace: handles
// and workspaces are never shared between streams, so ops on different
// streams never race on them. Ops on one stream may use its workspace
// freely while they run; ops of different subgraphs that share a stream are
// ordered by the schedule (the hazard model treats workspace_<stream> as
// written by every op on that stream).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_STREAM_RESOURCES_H
#define RN_RUNTIME_CUDA_STREAM_RESOURCES_H

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <string_view>

namespace rn::cuda {

struct StreamResources {
  std::string_view name;           ///< the program's stream name (comp1, ...)
  cudaStream_t stream = nullptr;   ///< non-blocking, never the legacy stream
  cudnnHandle_t cudnn = nullptr;   ///< bound to `stream`
  cublasLtHandle_t cublasLt = nullptr;
  void *workspace = nullptr;       ///< device memory for this stream's ops
  size_t workspaceBytes = 0;
};

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_STREAM_RESOURCES_H
