//===- conv_kernels.cu - Small kernels around convolutions and GEMMs ------===//
//
// Plain, memory-bound kernels; the element types are runtime values (a
// uniform switch per element costs nothing next to the memory traffic).
// columnSums reduces in two passes: blocks of 32 columns x a chunk of rows
// write double partials to the workspace, then one thread per column adds
// the chunks in order, so the result never depends on scheduling.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/conv_kernels.h"

#include "runtime/cuda/check.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

namespace rn::cuda {
namespace {

__device__ __forceinline__ float load(const void *p, DType type, int64_t i) {
  switch (type) {
  case DType::f16:
    return __half2float(static_cast<const __half *>(p)[i]);
  case DType::bf16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  default:
    return static_cast<const float *>(p)[i];
  }
}

__device__ __forceinline__ void store(void *p, DType type, int64_t i, float v) {
  switch (type) {
  case DType::f16:
    static_cast<__half *>(p)[i] = __float2half_rn(v);
    break;
  case DType::bf16:
    static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
    break;
  default:
    static_cast<float *>(p)[i] = v;
    break;
  }
}

__global__ void addTensorsKernel(const void *acc, DType accType, const void *d, DType dType,
                                 void *out, DType outType, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store(out, outType, i, load(acc, accType, i) + load(d, dType, i));
}

__global__ void addFirstColumnsKernel(const void *acc, DType accType, const void *d, DType dType,
                                      int64_t dCols, void *out, DType outType, int64_t rows,
                                      int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store(out, outType, i, load(acc, accType, i) + load(d, dType, i / cols * dCols + i % cols));
}

__global__ void addBiasKernel(void *y, DType yType, const void *bias, DType biasType,
                              int64_t rows, int64_t cols) {
  int64_t n = rows * cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store(y, yType, i, load(y, yType, i) + load(bias, biasType, i % cols));
}

constexpr int kColumnsPerBlock = 32;
constexpr int kRowLanes = 8;

/// Rows per chunk of the first pass: at least 256, at most 512 chunks.
int64_t rowsPerChunk(int64_t rows) { return std::max<int64_t>(256, (rows + 511) / 512); }
int64_t chunksOf(int64_t rows) {
  int64_t per = rowsPerChunk(rows);
  return std::max<int64_t>(1, (rows + per - 1) / per);
}

__global__ void columnPartialsKernel(const void *x, DType xType, int64_t rows, int64_t cols,
                                     int64_t perChunk, bool squares, double *partialSum,
                                     double *partialSq) {
  __shared__ double s[kRowLanes][kColumnsPerBlock];
  __shared__ double q[kRowLanes][kColumnsPerBlock];
  int64_t c = int64_t(blockIdx.x) * kColumnsPerBlock + threadIdx.x;
  int64_t begin = int64_t(blockIdx.y) * perChunk;
  int64_t end = min(rows, begin + perChunk);
  double sum = 0, sq = 0;
  if (c < cols)
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) {
      double v = load(x, xType, r * cols + c);
      sum += v;
      sq += v * v;
    }
  s[threadIdx.y][threadIdx.x] = sum;
  q[threadIdx.y][threadIdx.x] = sq;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    for (int k = 1; k < kRowLanes; ++k) {
      sum += s[k][threadIdx.x];
      sq += q[k][threadIdx.x];
    }
    partialSum[int64_t(blockIdx.y) * cols + c] = sum;
    if (squares)
      partialSq[int64_t(blockIdx.y) * cols + c] = sq;
  }
}

__global__ void columnFinishKernel(const double *partialSum, const double *partialSq,
                                   int64_t chunks, int64_t cols, const void *acc, void *out,
                                   DType outType, float *sumSq) {
  int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols)
    return;
  double sum = 0, sq = 0;
  for (int64_t k = 0; k < chunks; ++k) {
    sum += partialSum[k * cols + c];
    if (sumSq)
      sq += partialSq[k * cols + c];
  }
  if (acc)
    sum += load(acc, outType, c);
  store(out, outType, c, float(sum));
  if (sumSq)
    sumSq[c] = float(sq);
}

unsigned gridFor(int64_t n, int threads) {
  return unsigned(std::min<int64_t>((n + threads - 1) / threads, 132 * 32));
}

} // namespace

Status addTensors(const void *acc, DType accType, const void *d, DType dType, void *out,
                  DType outType, int64_t n, cudaStream_t stream) {
  if (n <= 0)
    return Status::success();
  addTensorsKernel<<<gridFor(n, 256), 256, 0, stream>>>(acc, accType, d, dType, out, outType, n);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status addFirstColumns(const void *acc, DType accType, const void *d, DType dType, int64_t dCols,
                       void *out, DType outType, int64_t rows, int64_t cols,
                       cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return Status::success();
  if (cols > dCols)
    return Error("addFirstColumns: " + std::to_string(cols) + " columns of rows of " +
                 std::to_string(dCols));
  if (cols == dCols) // every column: one contiguous sum, no index arithmetic
    return addTensors(acc, accType, d, dType, out, outType, rows * cols, stream);
  addFirstColumnsKernel<<<gridFor(rows * cols, 256), 256, 0, stream>>>(
      acc, accType, d, dType, dCols, out, outType, rows, cols);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status addBias(void *y, DType yType, const void *bias, DType biasType, int64_t rows, int64_t cols,
               cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return Status::success();
  addBiasKernel<<<gridFor(rows * cols, 256), 256, 0, stream>>>(y, yType, bias, biasType, rows,
                                                               cols);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

size_t columnSumsWorkspaceBytes(int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0)
    return 0;
  return size_t(2 * chunksOf(rows) * cols) * sizeof(double);
}

Status columnSums(const void *x, DType xType, int64_t rows, int64_t cols, const void *acc,
                  void *sum, DType sumType, float *sumSq, void *workspace, size_t workspaceBytes,
                  cudaStream_t stream) {
  if (cols <= 0)
    return Status::success();
  if (workspaceBytes < columnSumsWorkspaceBytes(rows, cols))
    return Error("columnSums: " + std::to_string(columnSumsWorkspaceBytes(rows, cols)) +
                 " bytes of workspace needed, " + std::to_string(workspaceBytes) + " given");
  int64_t chunks = rows > 0 ? chunksOf(rows) : 0;
  double *partialSum = static_cast<double *>(workspace);
  double *partialSq = partialSum + chunks * cols;
  if (chunks > 0) {
    dim3 grid(unsigned((cols + kColumnsPerBlock - 1) / kColumnsPerBlock), unsigned(chunks));
    dim3 block(kColumnsPerBlock, kRowLanes);
    columnPartialsKernel<<<grid, block, 0, stream>>>(x, xType, rows, cols, rowsPerChunk(rows),
                                                     sumSq != nullptr, partialSum, partialSq);
    RN_CUDA_TRY_LAUNCH();
  }
  columnFinishKernel<<<unsigned((cols + 127) / 128), 128, 0, stream>>>(
      partialSum, partialSq, chunks, cols, acc, sum, sumType, sumSq);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

} // namespace rn::cuda
