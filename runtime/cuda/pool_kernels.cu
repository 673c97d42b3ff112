//===- pool_kernels.cu - Max, average and global average pooling -*- C++ -*-===//
//
// NHWC, one thread per output element (channels fastest, so a warp reads
// consecutive channels). The backward kernels gather instead of scatter:
// each input element sums, in double and in increasing output order, the
// contributions of the windows that hold it, which is the order in which
// the CPU's scatter adds them. No atomics, so results are deterministic, and
// with every sum in double in the CPU's order and the CPU's rounding
// (double -> f32 -> dtype) all six ops match the CPU bit for bit.
//
// max_pool2d_backward has no saved indices (the op takes the input), so
// each window's arg-max is recomputed by every input element it covers;
// the re-reads hit L1/L2.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels.h"

#include <string>

namespace rn::cuda {
namespace {

using detail::gridFor;
using detail::isFloat;
using detail::loadFloat;
using detail::shapeString;
using detail::storeDouble;
using detail::storeFloat;

constexpr int kThreads = 256;

struct PoolGeometry {
  int64_t n, h, w, c, oh, ow;
  int64_t kh, kw, sh, sw, ph, pw;
};

/// cpu_pool.cpp's checkPool, with its messages.
Status checkPool(const char *op, const std::vector<int64_t> &input, const PoolParams &params,
                 PoolGeometry &g) {
  auto fail = [&](const std::string &message) { return Error(std::string(op) + ": " + message); };
  if (input.size() != 4)
    return fail("input must be NHWC (rank 4), got shape " + shapeString(input));
  for (int i = 0; i < 2; ++i) {
    if (params.kernel[i] <= 0)
      return fail("kernel must be positive");
    if (params.strides[i] <= 0)
      return fail("strides must be positive");
    if (params.padding[i] < 0)
      return fail("padding must be non-negative");
    if (2 * params.padding[i] > params.kernel[i])
      return fail("padding " + std::to_string(params.padding[i]) +
                  " exceeds half the kernel size " + std::to_string(params.kernel[i]));
  }
  g = PoolGeometry{input[0],          input[1],          input[2],
                   input[3],          0,                 0,
                   params.kernel[0],  params.kernel[1],  params.strides[0],
                   params.strides[1], params.padding[0], params.padding[1]};
  if (!(g.h + 2 * g.ph >= g.kh && g.w + 2 * g.pw >= g.kw))
    return fail("the window does not fit in the padded input " + shapeString(input));
  g.oh = (g.h + 2 * g.ph - g.kh) / g.sh + 1;
  g.ow = (g.w + 2 * g.pw - g.kw) / g.sw + 1;
  return Status::success();
}

Status checkFloat(const char *op, const char *what, const DeviceTensor &t) {
  if (!isFloat(t.dtype))
    return Error(std::string(op) + ": " + what + " must be f32, f16 or bf16, got " +
                 std::string(dtypeName(t.dtype)));
  for (int64_t d : t.shape)
    if (d < 0)
      return Error(std::string(op) + ": " + what + " has a negative size in " +
                   shapeString(t.shape));
  if (!t.data && t.numel() != 0)
    return Error(std::string(op) + ": " + what + " has no data");
  return Status::success();
}

Status checkShape(const char *op, const char *what, const DeviceTensor &t,
                  const std::vector<int64_t> &expected) {
  Status s = checkFloat(op, what, t);
  if (!s.ok())
    return s;
  if (t.shape != expected)
    return Error(std::string(op) + ": " + what + " must have shape " + shapeString(expected) +
                 ", got " + shapeString(t.shape));
  return Status::success();
}

#define RN_RETURN_IF_ERROR(expr)                                                          \
  do {                                                                                     \
    ::rn::Status rn_status_ = (expr);                                                      \
    if (!rn_status_.ok())                                                                  \
      return rn_status_;                                                                   \
  } while (0)

std::vector<int64_t> outputShape(const PoolGeometry &g) { return {g.n, g.oh, g.ow, g.c}; }

/// The input element max pooling picks in window (n, oy, ox) of channel c:
/// the first maximum in row-major window order, a NaN over any number,
/// padding never (cpu_pool.cpp's forEachArgMax). -1 when the window holds
/// no input element.
__device__ __forceinline__ int64_t windowArgMax(const void *x, DType type, const PoolGeometry &g,
                                                int64_t n, int64_t oy, int64_t ox, int64_t c,
                                                float &best) {
  int64_t arg = -1;
  best = -INFINITY;
  for (int64_t ky = 0; ky < g.kh; ++ky) {
    int64_t iy = oy * g.sh - g.ph + ky;
    if (iy < 0 || iy >= g.h)
      continue;
    for (int64_t kx = 0; kx < g.kw; ++kx) {
      int64_t ix = ox * g.sw - g.pw + kx;
      if (ix < 0 || ix >= g.w)
        continue;
      int64_t index = ((n * g.h + iy) * g.w + ix) * g.c + c;
      float v = loadFloat(x, type, index);
      if (arg < 0 || v > best || (isnan(v) && !isnan(best))) {
        arg = index;
        best = v;
      }
    }
  }
  return arg;
}

/// The output rows (or columns) whose windows hold input row `i`:
/// o * s - p <= i <= o * s - p + k - 1, clamped to [0, outSize).
__device__ __forceinline__ void coveringRange(int64_t i, int64_t k, int64_t s, int64_t p,
                                              int64_t outSize, int64_t &lo, int64_t &hi) {
  int64_t top = i + p - k + 1; // o * s >= top
  lo = top <= 0 ? 0 : (top + s - 1) / s;
  hi = (i + p) / s; // i + p >= 0
  if (hi > outSize - 1)
    hi = outSize - 1;
}

struct PoolArgs {
  const void *x = nullptr;  ///< forward input (max pool backward: the input)
  const void *dy = nullptr; ///< backward: output gradient
  void *out = nullptr;
  DType xType = DType::f32, dyType = DType::f32, outType = DType::f32;
  PoolGeometry g{};
};

__global__ void maxPoolKernel(PoolArgs a) {
  const PoolGeometry &g = a.g;
  const int64_t count = g.n * g.oh * g.ow * g.c;
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < count;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = o % g.c, rest = o / g.c;
    int64_t ox = rest % g.ow;
    rest /= g.ow;
    int64_t oy = rest % g.oh, n = rest / g.oh;
    float best;
    windowArgMax(a.x, a.xType, g, n, oy, ox, c, best);
    storeFloat(a.out, a.outType, o, best); // -inf for an empty window, as on the CPU
  }
}

__global__ void maxPoolBackwardKernel(PoolArgs a) {
  const PoolGeometry &g = a.g;
  const int64_t count = g.n * g.h * g.w * g.c;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = i % g.c, rest = i / g.c;
    int64_t ix = rest % g.w;
    rest /= g.w;
    int64_t iy = rest % g.h, n = rest / g.h;
    int64_t oyLo, oyHi, oxLo, oxHi;
    coveringRange(iy, g.kh, g.sh, g.ph, g.oh, oyLo, oyHi);
    coveringRange(ix, g.kw, g.sw, g.pw, g.ow, oxLo, oxHi);
    double acc = 0;
    for (int64_t oy = oyLo; oy <= oyHi; ++oy)
      for (int64_t ox = oxLo; ox <= oxHi; ++ox) {
        float best;
        if (windowArgMax(a.x, a.xType, g, n, oy, ox, c, best) == i)
          acc += double(loadFloat(a.dy, a.dyType, ((n * g.oh + oy) * g.ow + ox) * g.c + c));
      }
    storeDouble(a.out, a.outType, i, acc);
  }
}

__global__ void avgPoolKernel(PoolArgs a) {
  const PoolGeometry &g = a.g;
  const int64_t count = g.n * g.oh * g.ow * g.c;
  const double divisor = double(g.kh * g.kw);
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < count;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = o % g.c, rest = o / g.c;
    int64_t ox = rest % g.ow;
    rest /= g.ow;
    int64_t oy = rest % g.oh, n = rest / g.oh;
    double acc = 0;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      int64_t iy = oy * g.sh - g.ph + ky;
      if (iy < 0 || iy >= g.h)
        continue;
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        int64_t ix = ox * g.sw - g.pw + kx;
        if (ix >= 0 && ix < g.w)
          acc += double(loadFloat(a.x, a.xType, ((n * g.h + iy) * g.w + ix) * g.c + c));
      }
    }
    storeDouble(a.out, a.outType, o, acc / divisor);
  }
}

__global__ void avgPoolBackwardKernel(PoolArgs a) {
  const PoolGeometry &g = a.g;
  const int64_t count = g.n * g.h * g.w * g.c;
  const double divisor = double(g.kh * g.kw);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = i % g.c, rest = i / g.c;
    int64_t ix = rest % g.w;
    rest /= g.w;
    int64_t iy = rest % g.h, n = rest / g.h;
    int64_t oyLo, oyHi, oxLo, oxHi;
    coveringRange(iy, g.kh, g.sh, g.ph, g.oh, oyLo, oyHi);
    coveringRange(ix, g.kw, g.sw, g.pw, g.ow, oxLo, oxHi);
    double acc = 0;
    for (int64_t oy = oyLo; oy <= oyHi; ++oy)
      for (int64_t ox = oxLo; ox <= oxHi; ++ox)
        acc += double(loadFloat(a.dy, a.dyType, ((n * g.oh + oy) * g.ow + ox) * g.c + c)) /
               divisor;
    storeDouble(a.out, a.outType, i, acc);
  }
}

/// One thread per (n, c), summing H * W positions in order (the CPU's).
__global__ void globalAvgPoolKernel(const void *x, DType xType, void *y, DType yType, int64_t n,
                                    int64_t hw, int64_t c) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < n * c;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t b = o / c, k = o % c;
    double acc = 0;
    for (int64_t p = 0; p < hw; ++p)
      acc += double(loadFloat(x, xType, (b * hw + p) * c + k));
    storeDouble(y, yType, o, acc / double(hw));
  }
}

__global__ void globalAvgPoolBackwardKernel(const void *dy, DType dyType, void *dx, DType dxType,
                                            int64_t n, int64_t hw, int64_t c) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n * hw * c;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t k = i % c, b = i / (hw * c);
    storeDouble(dx, dxType, i, double(loadFloat(dy, dyType, b * c + k)) / double(hw));
  }
}

template <typename Kernel, typename... Args>
Status launch(Kernel kernel, int64_t work, cudaStream_t stream, Args... args) {
  if (work == 0)
    return Status::success();
  kernel<<<gridFor(work, kThreads), kThreads, 0, stream>>>(args...);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

} // namespace

Status maxPool2d(const DeviceTensor &input, const PoolParams &params, const DeviceTensor &result,
                 cudaStream_t stream) {
  const char *op = "max_pool2d";
  PoolGeometry g;
  RN_RETURN_IF_ERROR(checkFloat(op, "input", input));
  RN_RETURN_IF_ERROR(checkPool(op, input.shape, params, g));
  RN_RETURN_IF_ERROR(checkShape(op, "result", result, outputShape(g)));
  PoolArgs a{input.data, nullptr, result.data, input.dtype, DType::f32, result.dtype, g};
  return launch(maxPoolKernel, result.numel(), stream, a);
}

Status maxPool2dBackward(const DeviceTensor &outputGrad, const DeviceTensor &input,
                         const PoolParams &params, const DeviceTensor &inputGrad,
                         cudaStream_t stream) {
  const char *op = "max_pool2d_backward";
  PoolGeometry g;
  RN_RETURN_IF_ERROR(checkFloat(op, "input", input));
  RN_RETURN_IF_ERROR(checkPool(op, input.shape, params, g));
  RN_RETURN_IF_ERROR(checkShape(op, "output_grad", outputGrad, outputShape(g)));
  RN_RETURN_IF_ERROR(checkShape(op, "input_grad", inputGrad, input.shape));
  PoolArgs a{input.data, outputGrad.data, inputGrad.data, input.dtype, outputGrad.dtype,
             inputGrad.dtype, g};
  return launch(maxPoolBackwardKernel, inputGrad.numel(), stream, a);
}

Status avgPool2d(const DeviceTensor &input, const PoolParams &params, const DeviceTensor &result,
                 cudaStream_t stream) {
  const char *op = "avg_pool2d";
  PoolGeometry g;
  RN_RETURN_IF_ERROR(checkFloat(op, "input", input));
  RN_RETURN_IF_ERROR(checkPool(op, input.shape, params, g));
  RN_RETURN_IF_ERROR(checkShape(op, "result", result, outputShape(g)));
  PoolArgs a{input.data, nullptr, result.data, input.dtype, DType::f32, result.dtype, g};
  return launch(avgPoolKernel, result.numel(), stream, a);
}

Status avgPool2dBackward(const DeviceTensor &outputGrad, const PoolParams &params,
                         const DeviceTensor &inputGrad, cudaStream_t stream) {
  const char *op = "avg_pool2d_backward";
  PoolGeometry g;
  RN_RETURN_IF_ERROR(checkFloat(op, "input_grad", inputGrad));
  RN_RETURN_IF_ERROR(checkPool(op, inputGrad.shape, params, g));
  RN_RETURN_IF_ERROR(checkShape(op, "output_grad", outputGrad, outputShape(g)));
  PoolArgs a{nullptr, outputGrad.data, inputGrad.data, DType::f32, outputGrad.dtype,
             inputGrad.dtype, g};
  return launch(avgPoolBackwardKernel, inputGrad.numel(), stream, a);
}

Status globalAvgPool(const DeviceTensor &input, const DeviceTensor &result, cudaStream_t stream) {
  const char *op = "global_avg_pool";
  RN_RETURN_IF_ERROR(checkFloat(op, "input", input));
  if (input.rank() != 4)
    return Error(std::string(op) + ": input must be NHWC (rank 4), got shape " +
                 shapeString(input.shape));
  int64_t n = input.dim(0), hw = input.dim(1) * input.dim(2), c = input.dim(3);
  RN_RETURN_IF_ERROR(checkShape(op, "result", result, {n, 1, 1, c}));
  if (hw <= 0)
    return Error(std::string(op) + ": input has no spatial positions");
  return launch(globalAvgPoolKernel, n * c, stream, static_cast<const void *>(input.data),
                input.dtype, result.data, result.dtype, n, hw, c);
}

Status globalAvgPoolBackward(const DeviceTensor &outputGrad, const DeviceTensor &inputGrad,
                             cudaStream_t stream) {
  const char *op = "global_avg_pool_backward";
  RN_RETURN_IF_ERROR(checkFloat(op, "input_grad", inputGrad));
  if (inputGrad.rank() != 4)
    return Error(std::string(op) + ": input_grad must be NHWC (rank 4), got shape " +
                 shapeString(inputGrad.shape));
  int64_t n = inputGrad.dim(0), hw = inputGrad.dim(1) * inputGrad.dim(2), c = inputGrad.dim(3);
  RN_RETURN_IF_ERROR(checkShape(op, "output_grad", outputGrad, {n, 1, 1, c}));
  if (hw <= 0)
    return Error(std::string(op) + ": input_grad has no spatial positions");
  return launch(globalAvgPoolBackwardKernel, inputGrad.numel(), stream,
                static_cast<const void *>(outputGrad.data), outputGrad.dtype, inputGrad.data,
                inputGrad.dtype, n, hw, c);
}

} // namespace rn::cuda
