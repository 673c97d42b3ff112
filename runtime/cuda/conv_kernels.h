//===- conv_kernels.h - Small kernels around convolutions and GEMMs -*- C++ -*-===//
//
// What cuDNN and cuBLASLt leave to us for conv2d, linear and the CBR ops:
// the bias add of conv2d, the accumulation dw = dwAcc + wgrad (cuDNN's
// wgrad overwrites its output), and deterministic per-column sums over a
// row-major [rows, cols] matrix (bias gradients over N, H, W; the BN
// statistics of a convolution output when cuDNN cannot fuse them). Sums
// accumulate in double in a fixed order, so they give the same bits every
// run. Every function only enqueues work on `stream` (capturable).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_CONV_KERNELS_H
#define RN_RUNTIME_CUDA_CONV_KERNELS_H

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace rn::cuda {

/// out[i] = acc[i] + d[i] for i < n, computed in f32 and rounded once to
/// outType; out may alias acc (or d).
Status addTensors(const void *acc, DType accType, const void *d, DType dType, void *out,
                  DType outType, int64_t n, cudaStream_t stream);

/// out[r, c] = acc[r, c] + d[r, c] for the first `cols` of d's `dCols`
/// columns: out and acc are [rows, cols], d is [rows, dCols] (the filter
/// gradient of a zero-padded filter into its parameter's accumulator; with
/// cols == dCols, addTensors over all of it).
Status addFirstColumns(const void *acc, DType accType, const void *d, DType dType, int64_t dCols,
                       void *out, DType outType, int64_t rows, int64_t cols,
                       cudaStream_t stream);

/// y[r, c] += bias[c] in place for a row-major [rows, cols] y.
Status addBias(void *y, DType yType, const void *bias, DType biasType, int64_t rows, int64_t cols,
               cudaStream_t stream);

/// Workspace bytes columnSums needs for a [rows, cols] matrix.
size_t columnSumsWorkspaceBytes(int64_t rows, int64_t cols);

/// Per-column sums of a row-major [rows, cols] x: sum[c] = acc[c] + sum_r
/// x[r, c] in sumType (`acc`, of sumType, may be null or alias `sum`) and,
/// when sumSq is not null, sumSq[c] = sum_r x[r, c]^2 in f32.
/// Deterministic; needs columnSumsWorkspaceBytes(rows, cols) of workspace.
Status columnSums(const void *x, DType xType, int64_t rows, int64_t cols, const void *acc,
                  void *sum, DType sumType, float *sumSq, void *workspace, size_t workspaceBytes,
                  cudaStream_t stream);

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_CONV_KERNELS_H
