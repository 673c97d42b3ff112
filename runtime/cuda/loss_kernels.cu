//===- loss_kernels.cu - Softmax cross-entropy and top-1 hits -----*- C++ -*-===//
//
// One warp per row of the logits [N, C]: the row maximum, then the sum of
// exp(x - max) in double (the CPU's log-sum-exp), reduced across the warp
// by a fixed butterfly, so every run sums in the same order. The mean loss
// takes two kernels: the rows' losses (double) go to the stream's
// workspace, then one block adds them up in a fixed tree and writes the
// scalar; no float atomics anywhere. count_correct adds integer hits with
// atomicAdd, which is exact in any order.
//
// Labels are device data: a label outside [0, C) gives a NaN loss (and NaN
// gradients in its row) and sets the sign bit of the count, so a bad label
// shows rather than being read out of bounds.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels.h"

#include <climits>
#include <string>

namespace rn::cuda {
namespace {

using detail::gridFor;
using detail::isFloat;
using detail::loadFloat;
using detail::shapeString;
using detail::storeDouble;

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ double warpSum(double v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

/// log(sum_k exp(row[k])) in double, shifted by the row maximum; every lane
/// of the warp gets the value.
__device__ __forceinline__ double rowLogSumExp(const void *logits, DType type, int64_t base,
                                               int64_t c, int lane) {
  float m = -INFINITY;
  for (int64_t k = lane; k < c; k += 32)
    m = fmaxf(m, loadFloat(logits, type, base + k));
  m = warpMax(m);
  double sum = 0;
  for (int64_t k = lane; k < c; k += 32)
    sum += exp(double(loadFloat(logits, type, base + k)) - double(m));
  return double(m) + log(warpSum(sum));
}

struct LossArgs {
  const void *logits = nullptr;
  DType type = DType::f32;
  const int32_t *labels = nullptr;
  int64_t n = 0, c = 0;
  double smoothing = 0;
};

/// rowLoss[b] = (1 - s)(lse - x[label]) + s / C * sum_k (lse - x[k]).
__global__ void crossEntropyRowsKernel(LossArgs a, double *rowLoss) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; row < a.n;
       row += warps) {
    const int64_t base = row * a.c;
    const double lse = rowLogSumExp(a.logits, a.type, base, a.c, lane);
    double smooth = 0;
    if (a.smoothing != 0) {
      for (int64_t k = lane; k < a.c; k += 32)
        smooth += lse - double(loadFloat(a.logits, a.type, base + k));
      smooth = warpSum(smooth);
    }
    if (lane == 0) {
      const int32_t label = a.labels[row];
      rowLoss[row] =
          label < 0 || label >= a.c
              ? __longlong_as_double(0x7ff8000000000000ll) // NaN: the label is out of range
              : (1.0 - a.smoothing) * (lse - double(loadFloat(a.logits, a.type, base + label))) +
                    a.smoothing / double(a.c) * smooth;
    }
  }
}

/// loss = sum(rowLoss) / n, one block, a fixed tree.
__global__ void meanKernel(const double *rowLoss, int64_t n, void *loss, DType lossType) {
  __shared__ double partial[kThreads];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads)
    sum += rowLoss[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (int(threadIdx.x) < width)
      partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    storeDouble(loss, lossType, 0, partial[0] / double(n));
}

/// grad = (softmax(x) - t) * scale / n.
__global__ void crossEntropyBackwardKernel(LossArgs a, const void *scale, DType scaleType,
                                           void *grad, DType gradType) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  const double factor = double(scale ? loadFloat(scale, scaleType, 0) : 1.0f) / double(a.n);
  const double uniform = a.smoothing / double(a.c);
  for (int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; row < a.n;
       row += warps) {
    const int64_t base = row * a.c;
    const double lse = rowLogSumExp(a.logits, a.type, base, a.c, lane);
    const int32_t label = a.labels[row];
    const bool valid = label >= 0 && label < a.c;
    for (int64_t k = lane; k < a.c; k += 32) {
      double target = uniform + (k == label ? 1.0 - a.smoothing : 0.0);
      double g = valid ? (exp(double(loadFloat(a.logits, a.type, base + k)) - lse) - target) * factor
                       : __longlong_as_double(0x7ff8000000000000ll);
      storeDouble(grad, gradType, base + k, g);
    }
  }
}

/// correct += rows whose first maximum is the label (a NaN in column 0
/// wins, other NaNs never do: the CPU's `row[k] > row[best]` scan).
__global__ void countCorrectKernel(LossArgs a, int32_t *correct) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; row < a.n;
       row += warps) {
    const int64_t base = row * a.c;
    // The first maximum of the lane's columns among the non-NaN values.
    float best = 0;
    int64_t arg = -1;
    for (int64_t k = lane; k < a.c; k += 32) {
      float v = loadFloat(a.logits, a.type, base + k);
      if (!isnan(v) && (arg < 0 || v > best)) {
        best = v;
        arg = k;
      }
    }
    // Across lanes: the larger value, on ties the smaller column.
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      float otherBest = __shfl_xor_sync(kFullMask, best, offset);
      int64_t otherArg = __shfl_xor_sync(kFullMask, arg, offset);
      bool take = otherArg >= 0 &&
                  (arg < 0 || otherBest > best || (otherBest == best && otherArg < arg));
      if (take) {
        best = otherBest;
        arg = otherArg;
      }
    }
    if (lane == 0) {
      if (isnan(loadFloat(a.logits, a.type, base)) || arg < 0)
        arg = 0;
      const int32_t label = a.labels[row];
      if (label < 0 || label >= a.c)
        atomicOr(correct, INT_MIN); // a negative count: a label is out of range
      else if (arg == label)
        atomicAdd(correct, 1);
    }
  }
}

Status fail(const char *op, const std::string &message) {
  return Error(std::string(op) + ": " + message);
}

/// cpu_loss.cpp's checkLogits (less the label values, which are on the
/// device) and the label smoothing range.
Status checkLogits(const char *op, const DeviceTensor &logits, const DeviceTensor &labels,
                   LossArgs &a) {
  if (!isFloat(logits.dtype))
    return fail(op, "logits must be f32, f16 or bf16, got " + std::string(dtypeName(logits.dtype)));
  if (logits.rank() != 2)
    return fail(op, "logits must be [N, classes] (rank 2), got shape " + shapeString(logits.shape));
  a.logits = logits.data;
  a.type = logits.dtype;
  a.n = logits.dim(0);
  a.c = logits.dim(1);
  if (a.n < 0 || a.c < 0)
    return fail(op, "logits has a negative size in " + shapeString(logits.shape));
  if (labels.dtype != DType::i32)
    return fail(op, "labels must be i32, got " + std::string(dtypeName(labels.dtype)));
  if (labels.shape != std::vector<int64_t>{a.n})
    return fail(op, "labels must have shape " + shapeString({a.n}) + ", got " +
                        shapeString(labels.shape));
  if (a.c <= 0)
    return fail(op, "logits has no classes");
  if (a.n > 0 && (!logits.data || !labels.data))
    return fail(op, "logits or labels has no data");
  a.labels = static_cast<const int32_t *>(labels.data);
  return Status::success();
}

Status checkSmoothing(const char *op, double smoothing) {
  if (!(smoothing >= 0 && smoothing <= 1))
    return fail(op, "label_smoothing must be in [0, 1], got " + std::to_string(smoothing));
  return Status::success();
}

Status checkScalar(const char *op, const char *what, const DeviceTensor &t) {
  if (t.numel() != 1 || !t.data)
    return fail(op, std::string(what) + " must be a scalar with data, got shape " +
                        shapeString(t.shape));
  return Status::success();
}

unsigned rowBlocks(int64_t rows) { return gridFor(rows, kWarpsPerBlock); }

} // namespace

size_t softmaxCrossEntropyWorkspaceBytes(int64_t rows) {
  return size_t(rows > 0 ? rows : 0) * sizeof(double);
}

Status softmaxCrossEntropy(const DeviceTensor &logits, const DeviceTensor &labels,
                           double labelSmoothing, const DeviceTensor &loss, void *workspace,
                           size_t workspaceBytes, cudaStream_t stream) {
  const char *op = "softmax_cross_entropy";
  LossArgs a;
  RN_RETURN_IF_ERROR(checkLogits(op, logits, labels, a));
  RN_RETURN_IF_ERROR(checkSmoothing(op, labelSmoothing));
  a.smoothing = labelSmoothing;
  if (a.n <= 0)
    return fail(op, "empty batch");
  if (!isFloat(loss.dtype))
    return fail(op, "loss must be f32, f16 or bf16, got " + std::string(dtypeName(loss.dtype)));
  RN_RETURN_IF_ERROR(checkScalar(op, "loss", loss));
  size_t needed = softmaxCrossEntropyWorkspaceBytes(a.n);
  if (!workspace || workspaceBytes < needed ||
      reinterpret_cast<uintptr_t>(workspace) % alignof(double) != 0)
    return fail(op, "needs " + std::to_string(needed) +
                        " bytes of 8-byte aligned stream workspace, has " +
                        std::to_string(workspace ? workspaceBytes : 0));
  double *rowLoss = static_cast<double *>(workspace);
  crossEntropyRowsKernel<<<rowBlocks(a.n), kThreads, 0, stream>>>(a, rowLoss);
  RN_CUDA_TRY_LAUNCH();
  meanKernel<<<1, kThreads, 0, stream>>>(rowLoss, a.n, loss.data, loss.dtype);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status softmaxCrossEntropyBackward(const DeviceTensor &logits, const DeviceTensor &labels,
                                   const DeviceTensor *scale, double labelSmoothing,
                                   const DeviceTensor &logitsGrad, cudaStream_t stream) {
  const char *op = "softmax_cross_entropy_backward";
  LossArgs a;
  RN_RETURN_IF_ERROR(checkLogits(op, logits, labels, a));
  RN_RETURN_IF_ERROR(checkSmoothing(op, labelSmoothing));
  a.smoothing = labelSmoothing;
  if (a.n <= 0)
    return fail(op, "empty batch");
  if (!isFloat(logitsGrad.dtype))
    return fail(op, "logits_grad must be f32, f16 or bf16, got " +
                        std::string(dtypeName(logitsGrad.dtype)));
  if (logitsGrad.shape != logits.shape || !logitsGrad.data)
    return fail(op, "logits_grad must have shape " + shapeString(logits.shape) + ", got " +
                        shapeString(logitsGrad.shape));
  if (scale) {
    if (!isFloat(scale->dtype))
      return fail(op, "scale must be f32, f16 or bf16, got " + std::string(dtypeName(scale->dtype)));
    RN_RETURN_IF_ERROR(checkScalar(op, "scale", *scale));
  }
  crossEntropyBackwardKernel<<<rowBlocks(a.n), kThreads, 0, stream>>>(
      a, scale ? scale->data : nullptr, scale ? scale->dtype : DType::f32, logitsGrad.data,
      logitsGrad.dtype);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status countCorrect(const DeviceTensor &logits, const DeviceTensor &labels,
                    const DeviceTensor &correct, cudaStream_t stream) {
  const char *op = "count_correct";
  LossArgs a;
  RN_RETURN_IF_ERROR(checkLogits(op, logits, labels, a));
  if (correct.dtype != DType::i32)
    return fail(op, "the count must be i32, got " + std::string(dtypeName(correct.dtype)));
  RN_RETURN_IF_ERROR(checkScalar(op, "the count", correct));
  RN_CUDA_TRY(cudaMemsetAsync(correct.data, 0, sizeof(int32_t), stream));
  if (a.n == 0)
    return Status::success();
  countCorrectKernel<<<rowBlocks(a.n), kThreads, 0, stream>>>(a,
                                                               static_cast<int32_t *>(correct.data));
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

} // namespace rn::cuda
