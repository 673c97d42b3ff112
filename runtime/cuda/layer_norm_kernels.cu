//===- layer_norm_kernels.cu - Layer normalization and channel scale ------===//
//
// rn.layer_norm and rn.channel_scale (ConvNeXt's blocks) and their
// backward on the GPU; declared in norm_kernels.h beside batch
// normalization's.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/norm_kernels.h"

#include "runtime/core/align.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/device_element.cuh"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/norm_check.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

namespace rn::cuda {
using norm_detail::ceilDiv;
using norm_detail::Checker;
using detail::loadFloat;
using detail::storeFloat;

//===----------------------------------------------------------------------===//
// Layer normalization and the per-channel layer scale (ConvNeXt)
//===----------------------------------------------------------------------===//
//
// A warp per row of C channels: lane l owns channels l, l + 32, ...; the row
// statistics are warp sums (the row is read from global memory once, its
// later reads hit L1). The weight gradients (dgamma, dbeta of layer_norm,
// dscale of channel_scale) are column sums over rows: each warp sums a fixed
// contiguous chunk of rows into its own slice of shared memory (a lane only
// touches its own channels, so no atomics) and writes it to the workspace;
// a finalize kernel adds the slices per channel in warp order and the
// accumulator. The chunking depends on the shape alone: deterministic, and
// the workspace size is known at prepare.

namespace {

constexpr unsigned kLnFullMask = 0xffffffffu;
constexpr int kLnWarpsPerBlock = 8;
/// Warps that share a backward's column sums (workspace slices).
constexpr int64_t kLnMaxWarps = 512;
/// Shared memory a backward block may take for its warps' slices.
constexpr size_t kLnSharedBytes = 48 * 1024;

__device__ __forceinline__ float lnWarpSum(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(kLnFullMask, v, offset);
  return v;
}

/// The row's mean and rstd = 1 / sqrt(biased var + eps), two passes over
/// the row (the second from L1).
template <typename T>
__device__ __forceinline__ void lnRowStats(const T *row, int64_t channels, float epsilon,
                                           float &mean, float &rstd) {
  const int lane = threadIdx.x % 32;
  float sum = 0.f;
  for (int64_t k = lane; k < channels; k += 32)
    sum += toFloat<T>(row[k]);
  mean = lnWarpSum(sum) / float(channels);
  float var = 0.f;
  for (int64_t k = lane; k < channels; k += 32) {
    float d = toFloat<T>(row[k]) - mean;
    var += d * d;
  }
  rstd = rsqrtf(lnWarpSum(var) / float(channels) + epsilon);
}

template <typename T>
__global__ void layerNormKernel(const T *__restrict__ x, const void *weight, DType weightType,
                                const void *bias, DType biasType, int64_t rows,
                                int64_t channels, float epsilon, T *__restrict__ y) {
  const int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows)
    return;
  const T *row = x + r * channels;
  float mean, rstd;
  lnRowStats(row, channels, epsilon, mean, rstd);
  for (int64_t k = threadIdx.x % 32; k < channels; k += 32)
    y[r * channels + k] = fromFloat<T>((toFloat<T>(row[k]) - mean) * rstd *
                                           loadFloat(weight, weightType, k) +
                                       loadFloat(bias, biasType, k));
}

/// Warp w of the grid takes rows [w * rowsPerWarp, (w + 1) * rowsPerWarp):
/// dx of each, and the column sums of dy * xhat and dy into its slice
/// (shared: [2C] per warp), then into workspace slice w.
template <typename T>
__global__ void layerNormBackwardKernel(const T *__restrict__ dy, const T *__restrict__ x,
                                        const void *weight, DType weightType, int64_t rows,
                                        int64_t channels, int64_t rowsPerWarp, float epsilon,
                                        T *__restrict__ dx, float *__restrict__ partials) {
  extern __shared__ float lnShared[];
  const int lane = threadIdx.x % 32;
  const int warpInBlock = threadIdx.x / 32;
  const int64_t warp = int64_t(blockIdx.x) * (blockDim.x / 32) + warpInBlock;
  float *sums = lnShared + size_t(warpInBlock) * 2 * channels;
  for (int64_t k = lane; k < 2 * channels; k += 32)
    sums[k] = 0.f;
  const float invC = 1.f / float(channels);
  const int64_t first = warp * rowsPerWarp;
  const int64_t last = min(rows, first + rowsPerWarp);
  for (int64_t r = first; r < last; ++r) {
    const T *row = x + r * channels;
    const T *g = dy + r * channels;
    float mean, rstd;
    lnRowStats(row, channels, epsilon, mean, rstd);
    float sumG = 0.f, sumGXhat = 0.f;
    for (int64_t k = lane; k < channels; k += 32) {
      float d = toFloat<T>(g[k]);
      float xhat = (toFloat<T>(row[k]) - mean) * rstd;
      float wg = d * loadFloat(weight, weightType, k);
      sumG += wg;
      sumGXhat += wg * xhat;
      sums[k] += d * xhat;
      sums[channels + k] += d;
    }
    const float meanG = lnWarpSum(sumG) * invC;
    const float meanGXhat = lnWarpSum(sumGXhat) * invC;
    for (int64_t k = lane; k < channels; k += 32) {
      float d = toFloat<T>(g[k]);
      float xhat = (toFloat<T>(row[k]) - mean) * rstd;
      float wg = d * loadFloat(weight, weightType, k);
      dx[r * channels + k] = fromFloat<T>(rstd * (wg - meanG - xhat * meanGXhat));
    }
  }
  float *out = partials + size_t(warp) * 2 * channels;
  for (int64_t k = lane; k < 2 * channels; k += 32)
    out[k] = sums[k];
}

/// dx = dy * scale[c]; the column sums of dy * x as layerNormBackwardKernel
/// makes them ([C] per warp).
template <typename T>
__global__ void channelScaleBackwardKernel(const T *__restrict__ dy, const T *__restrict__ x,
                                           const T *__restrict__ scale, int64_t rows,
                                           int64_t channels, int64_t rowsPerWarp,
                                           T *__restrict__ dx, float *__restrict__ partials) {
  extern __shared__ float lnShared[];
  const int lane = threadIdx.x % 32;
  const int warpInBlock = threadIdx.x / 32;
  const int64_t warp = int64_t(blockIdx.x) * (blockDim.x / 32) + warpInBlock;
  float *sums = lnShared + size_t(warpInBlock) * channels;
  for (int64_t k = lane; k < channels; k += 32)
    sums[k] = 0.f;
  const int64_t first = warp * rowsPerWarp;
  const int64_t last = min(rows, first + rowsPerWarp);
  for (int64_t r = first; r < last; ++r)
    for (int64_t k = lane; k < channels; k += 32) {
      const int64_t i = r * channels + k;
      float d = toFloat<T>(dy[i]);
      sums[k] += d * toFloat<T>(x[i]);
      dx[i] = fromFloat<T>(d * toFloat<T>(scale[k]));
    }
  float *out = partials + size_t(warp) * channels;
  for (int64_t k = lane; k < channels; k += 32)
    out[k] = sums[k];
}

template <typename T>
__global__ void channelScaleKernel(const T *__restrict__ x, const T *__restrict__ scale,
                                   int64_t numel, int64_t channels, T *__restrict__ y) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = fromFloat<T>(toFloat<T>(x[i]) * toFloat<T>(scale[i % channels]));
}

/// grad[v][c] = acc[v][c] + the sum over warps of partials[w][v * C + c], in
/// warp order, accumulated in double; `vectors` gradients of [C] each.
__global__ void columnSumsFinalizeKernel(const float *__restrict__ partials, int64_t warps,
                                         int64_t channels, int vectors, const void *acc0,
                                         DType acc0Type, void *grad0, const void *acc1,
                                         DType acc1Type, void *grad1) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels)
    return;
  for (int v = 0; v < vectors; ++v) {
    double sum = 0.0;
    for (int64_t w = 0; w < warps; ++w)
      sum += partials[(w * vectors + v) * channels + c];
    const void *acc = v == 0 ? acc0 : acc1;
    DType type = v == 0 ? acc0Type : acc1Type;
    void *grad = v == 0 ? grad0 : grad1;
    storeFloat(grad, type, c, float(double(loadFloat(acc, type, c)) + sum));
  }
}

template <typename Fn> void withFloatType(DType type, Fn &&fn) {
  switch (type) {
  case DType::f16:
    fn(static_cast<__half *>(nullptr));
    break;
  case DType::bf16:
    fn(static_cast<__nv_bfloat16 *>(nullptr));
    break;
  default:
    fn(static_cast<float *>(nullptr));
    break;
  }
}

/// The backward's split of rows over warps: how many warps, warps per
/// block and rows per warp (see the section's note). `floatsPerWarp`
/// floats of shared memory per warp.
struct ColumnSumPlan {
  int64_t rows = 0, channels = 0;
  int64_t warps = 0, rowsPerWarp = 0;
  int warpsPerBlock = 1;
  size_t sharedBytes = 0;
};

ColumnSumPlan columnSumPlan(const std::vector<int64_t> &shape, int vectors) {
  ColumnSumPlan plan;
  plan.channels = shape.empty() ? 0 : shape.back();
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  plan.rows = plan.channels > 0 ? numel / plan.channels : 0;
  if (plan.rows == 0)
    return plan;
  const size_t perWarp = size_t(vectors) * size_t(plan.channels) * sizeof(float);
  plan.warpsPerBlock =
      int(std::max<size_t>(1, std::min<size_t>(kLnWarpsPerBlock, kLnSharedBytes / perWarp)));
  int64_t warps = std::min<int64_t>(plan.rows, kLnMaxWarps);
  plan.rowsPerWarp = ceilDiv(plan.rows, warps);
  plan.warps = ceilDiv(plan.rows, plan.rowsPerWarp);
  plan.warps = ceilDiv(plan.warps, plan.warpsPerBlock) * plan.warpsPerBlock;
  plan.sharedBytes = size_t(plan.warpsPerBlock) * perWarp;
  return plan;
}

size_t columnSumWorkspace(const ColumnSumPlan &plan, int vectors) {
  return alignUp(size_t(plan.warps) * size_t(vectors) * size_t(plan.channels) * sizeof(float));
}

/// What a backward's column sums need: each warp's slices in shared
/// memory, and the workspace for every warp's.
void checkColumnSums(Checker &check, const ColumnSumPlan &plan, int vectors,
                     const void *workspace, size_t workspaceBytes) {
  const size_t needed = columnSumWorkspace(plan, vectors);
  check.that(plan.sharedBytes <= kLnSharedBytes,
             "channels beyond what a warp's column sums fit in shared memory: " +
                 std::to_string(plan.channels))
      .that(workspace != nullptr && workspaceBytes >= needed,
            "needs " + std::to_string(needed) + " workspace bytes, has " +
                std::to_string(workspaceBytes));
}

} // namespace

size_t layerNormBackwardWorkspaceBytes(const std::vector<int64_t> &xShape) {
  return columnSumWorkspace(columnSumPlan(xShape, 2), 2);
}

size_t channelScaleBackwardWorkspaceBytes(const std::vector<int64_t> &xShape) {
  return columnSumWorkspace(columnSumPlan(xShape, 1), 1);
}

Status layerNorm(const DeviceTensor &x, const DeviceTensor &weight, const DeviceTensor &bias,
                 double epsilon, const DeviceTensor &y, cudaStream_t stream) {
  Checker check("layerNorm");
  check.activation("input", x);
  const int64_t C = x.shape.empty() ? 0 : x.shape.back();
  check.vector("weight", weight, C).vector("bias", bias, C).sameAs("result", y, x);
  if (check.failed())
    return check.error();
  const int64_t rows = C > 0 ? x.numel() / C : 0;
  if (rows == 0)
    return Status::success();
  const unsigned blocks = unsigned(ceilDiv(rows, kLnWarpsPerBlock));
  withFloatType(x.dtype, [&](auto *typed) {
    using T = std::remove_pointer_t<decltype(typed)>;
    layerNormKernel<T><<<blocks, kLnWarpsPerBlock * 32, 0, stream>>>(
        static_cast<const T *>(x.data), weight.data, weight.dtype, bias.data, bias.dtype, rows, C,
        float(epsilon), static_cast<T *>(y.data));
  });
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status layerNormBackward(const DeviceTensor &dy, const DeviceTensor &x,
                         const DeviceTensor &weight, const DeviceTensor &weightGradAcc,
                         const DeviceTensor &biasGradAcc, double epsilon,
                         const DeviceTensor &dx, const DeviceTensor &weightGrad,
                         const DeviceTensor &biasGrad, cudaStream_t stream, void *workspace,
                         size_t workspaceBytes) {
  Checker check("layerNormBackward");
  check.activation("input", x).sameAs("output_grad", dy, x).sameAs("input_grad", dx, x);
  const int64_t C = x.shape.empty() ? 0 : x.shape.back();
  check.vector("weight", weight, C)
      .vector("weight_grad_acc", weightGradAcc, C)
      .vector("bias_grad_acc", biasGradAcc, C)
      .vector("weight_grad", weightGrad, C)
      .vector("bias_grad", biasGrad, C)
      .that(weightGrad.dtype == weightGradAcc.dtype && biasGrad.dtype == biasGradAcc.dtype,
            "the gradients must have their accumulators' dtypes");
  const ColumnSumPlan plan = columnSumPlan(x.shape, 2);
  checkColumnSums(check, plan, 2, workspace, workspaceBytes);
  if (check.failed())
    return check.error();
  if (C == 0)
    return Status::success();
  float *partials = static_cast<float *>(workspace);
  if (plan.rows > 0)
    withFloatType(x.dtype, [&](auto *typed) {
      using T = std::remove_pointer_t<decltype(typed)>;
      layerNormBackwardKernel<T><<<unsigned(plan.warps / plan.warpsPerBlock),
                                   plan.warpsPerBlock * 32, plan.sharedBytes, stream>>>(
          static_cast<const T *>(dy.data), static_cast<const T *>(x.data), weight.data,
          weight.dtype, plan.rows, C, plan.rowsPerWarp, float(epsilon), static_cast<T *>(dx.data),
          partials);
    });
  RN_CUDA_TRY_LAUNCH();
  columnSumsFinalizeKernel<<<unsigned(ceilDiv(C, 256)), 256, 0, stream>>>(
      partials, plan.warps, C, 2, weightGradAcc.data, weightGradAcc.dtype, weightGrad.data,
      biasGradAcc.data, biasGradAcc.dtype, biasGrad.data);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status channelScale(const DeviceTensor &x, const DeviceTensor &scale, const DeviceTensor &y,
                    cudaStream_t stream) {
  Checker check("channelScale");
  check.activation("input", x).sameAs("result", y, x);
  const int64_t C = x.shape.empty() ? 0 : x.shape.back();
  check.vector("scale", scale, C)
      .that(scale.dtype == x.dtype, "scale must have the input's dtype");
  if (check.failed())
    return check.error();
  const int64_t n = x.numel();
  if (n == 0 || C == 0)
    return Status::success();
  const unsigned blocks = unsigned(std::min<int64_t>(ceilDiv(n, 256), 65535));
  withFloatType(x.dtype, [&](auto *typed) {
    using T = std::remove_pointer_t<decltype(typed)>;
    channelScaleKernel<T><<<blocks, 256, 0, stream>>>(static_cast<const T *>(x.data),
                                                      static_cast<const T *>(scale.data), n, C,
                                                      static_cast<T *>(y.data));
  });
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status channelScaleBackward(const DeviceTensor &dy, const DeviceTensor &x,
                            const DeviceTensor &scale, const DeviceTensor &scaleGradAcc,
                            const DeviceTensor &dx, const DeviceTensor &scaleGrad,
                            cudaStream_t stream, void *workspace, size_t workspaceBytes) {
  Checker check("channelScaleBackward");
  check.activation("input", x).sameAs("output_grad", dy, x).sameAs("input_grad", dx, x);
  const int64_t C = x.shape.empty() ? 0 : x.shape.back();
  check.vector("scale", scale, C)
      .vector("scale_grad_acc", scaleGradAcc, C)
      .vector("scale_grad", scaleGrad, C)
      .that(scale.dtype == x.dtype && scaleGrad.dtype == x.dtype &&
                scaleGradAcc.dtype == x.dtype,
            "scale and its gradients must have the input's dtype");
  const ColumnSumPlan plan = columnSumPlan(x.shape, 1);
  checkColumnSums(check, plan, 1, workspace, workspaceBytes);
  if (check.failed())
    return check.error();
  if (C == 0)
    return Status::success();
  float *partials = static_cast<float *>(workspace);
  if (plan.rows > 0)
    withFloatType(x.dtype, [&](auto *typed) {
      using T = std::remove_pointer_t<decltype(typed)>;
      channelScaleBackwardKernel<T><<<unsigned(plan.warps / plan.warpsPerBlock),
                                      plan.warpsPerBlock * 32, plan.sharedBytes, stream>>>(
          static_cast<const T *>(dy.data), static_cast<const T *>(x.data),
          static_cast<const T *>(scale.data), plan.rows, C, plan.rowsPerWarp,
          static_cast<T *>(dx.data), partials);
    });
  RN_CUDA_TRY_LAUNCH();
  columnSumsFinalizeKernel<<<unsigned(ceilDiv(C, 256)), 256, 0, stream>>>(
      partials, plan.warps, C, 1, scaleGradAcc.data, scaleGradAcc.dtype, scaleGrad.data, nullptr,
      DType::f32, nullptr);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

} // namespace rn::cuda
