//===- gemm.h - Matrix products through cuBLASLt ----------------*- C++ -*-===//
//
// The products of linear layers: D = alpha * op(A) op(B) + beta * C (+ bias
// as a cuBLASLt epilogue), row-major operands as the program stores them,
// f32 accumulation (IEEE f32 for f32 data unless Options::allowTf32). The
// matmul descriptors and the chosen algorithm are built once per GemmCall at
// load (prepare) and cached; run only executes. The algorithm must fit the
// stream's workspace.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_GEMM_H
#define RN_RUNTIME_CUDA_GEMM_H

#include "runtime/core/status.h"
#include "runtime/cuda/stream_resources.h"
#include "runtime/core/dtype.h"

#include <cstdint>
#include <memory>
#include <string>

namespace rn::cuda {

/// D[m, n] = op(A) op(B) (+ C when accumulate) (+ bias[n] broadcast over
/// rows when bias), all row major: A is [m, k] (or [k, m] with transA), B is
/// [k, n] (or [n, k] with transB), C and D [m, n]. C may alias D.
struct GemmCall {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  bool accumulate = false; ///< beta = 1 with C
  bool bias = false;       ///< add bias[n] (biasType) to every row
  DType aType = DType::f32, bType = DType::f32, cType = DType::f32, dType = DType::f32;
  DType biasType = DType::f32;
};

struct GemmBuffers {
  const void *a = nullptr, *b = nullptr, *c = nullptr, *bias = nullptr;
  void *d = nullptr;
};

class GemmRunner {
public:
  struct Options {
    bool allowTf32 = false;
    bool deterministic = false;
  };
  static Result<std::unique_ptr<GemmRunner>> create(const Options &options);
  ~GemmRunner();

  /// Builds the descriptors of `call` and picks an algorithm that fits
  /// `stream`'s workspace; returns the workspace bytes it needs.
  Result<size_t> prepare(const GemmCall &call, const StreamResources &stream);
  /// Runs a prepared `call` on `stream`.
  Status run(const GemmCall &call, const GemmBuffers &buffers, const StreamResources &stream);

  GemmRunner(const GemmRunner &) = delete;
  GemmRunner &operator=(const GemmRunner &) = delete;

private:
  GemmRunner() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string describe(const GemmCall &call);

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_GEMM_H
