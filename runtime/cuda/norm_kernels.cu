//===- norm_kernels.cu - Batch-normalization kernels on the GPU -----------===//
//
// NHWC batch normalization as row/channel tiles: a block of 256 threads is
// tx channel vectors (V channels each, one 16-byte load where the channel
// count and the pointers allow) by ty rows, so that a warp reads whole
// consecutive rows; each block walks one fixed chunk of rows. Statistics
// are Welford per thread, merged over the block in a fixed tree and over
// the chunks (in double) by a second kernel; the backward reduction is the
// same with plain sums. Per-channel parameters are loaded once per thread.
//
// Each thread loads U rows of its vector per loop iteration (U loads in
// flight per tensor). U and V trade bytes in flight against registers,
// hence occupancy: NormKernelTuning holds the choice, measured on the H200
// by NormKernelsTest.ResNetSizeBandwidth. A thread visits its rows in the
// same order whatever U, but the compiler contracts the unrolled bodies
// into FMAs differently, so results may differ in the last bit across
// tunings (never across runs of one binary).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/norm_kernels.h"

#include "runtime/core/align.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/norm_check.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <type_traits>
#include "runtime/cuda/device_element.cuh"

namespace rn::cuda {
using norm_detail::ceilDiv;
using norm_detail::Checker;
using norm_detail::isFloatType;
namespace {

constexpr int kThreads = 256;
/// Upper bound of NormKernelTuning's target blocks (a grid's y extent is
/// at most 65535 chunks).
constexpr int kMaxTargetBlocks = 65535;
/// Upper bound of one partial array (chunks x channels floats).
constexpr int64_t kMaxPartialBytes = int64_t(4) << 20;
/// Finalize kernels: channels x chunk lanes per block. The finalizes are
/// latency-bound chains of loads over up to 1024 chunks on the step's
/// critical path (7.5 us a launch at 8 x 32 in ResNet-18's H200 timeline,
/// 6% of its step): 128 lanes per channel cut each lane's chain to 8 loads
/// at most, for sectors a quarter used (the partials are L2-resident).
constexpr int kFinalizeChannels = 2;
constexpr int kFinalizeLanes = 128;


/// The fixed decomposition of an [M, C] reduction into chunks of rows for
/// about `targetBlocks` blocks (a NormKernelTuning value). It depends on
/// the shape and that value alone (not on the dtype or the device), so
/// that the workspace size is known from the shape and results are
/// reproducible.
struct RowPlan {
  int64_t rows = 0;
  int64_t channels = 0;
  int64_t chunks = 0;
  int64_t rowsPerChunk = 0;
};

RowPlan rowPlanOf(const std::vector<int64_t> &shape, int64_t targetBlocks) {
  RowPlan plan;
  if (shape.empty())
    return plan;
  plan.channels = shape.back();
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  if (plan.channels <= 0 || total <= 0)
    return plan;
  plan.rows = total / plan.channels;
  // About 256 channels per block (16-bit data, 32 vectors of 8).
  int64_t channelTiles = ceilDiv(plan.channels, 256);
  int64_t chunks = ceilDiv(targetBlocks, channelTiles);
  chunks = std::min(chunks, ceilDiv(plan.rows, 32));
  chunks = std::min(chunks, std::max<int64_t>(1, kMaxPartialBytes / (8 * plan.channels)));
  chunks = std::max<int64_t>(chunks, 1);
  plan.rowsPerChunk = ceilDiv(plan.rows, chunks);
  plan.chunks = ceilDiv(plan.rows, plan.rowsPerChunk);
  return plan;
}

size_t partialBytes(const RowPlan &plan) {
  return alignUp(size_t(plan.chunks * plan.channels) * sizeof(float));
}

/// What a kernel needs of the plan.
struct Tile {
  int64_t rows;
  int64_t channels;
  int64_t rowsPerChunk;
};

Tile tileOf(const RowPlan &plan) { return Tile{plan.rows, plan.channels, plan.rowsPerChunk}; }

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//


/// V consecutive elements at `p` (aligned to V elements) as floats, in one load.
template <typename T, int V>
__device__ __forceinline__ void loadPack(const T *p, float (&out)[V]) {
  using Raw = typename RawVec<sizeof(T) * V>::type;
  Raw raw = *reinterpret_cast<const Raw *>(p);
  const T *e = reinterpret_cast<const T *>(&raw);
#pragma unroll
  for (int v = 0; v < V; ++v)
    out[v] = toFloat<T>(e[v]);
}

template <typename T, int V>
__device__ __forceinline__ void storePack(T *p, const float (&in)[V]) {
  using Raw = typename RawVec<sizeof(T) * V>::type;
  Raw raw;
  T *e = reinterpret_cast<T *>(&raw);
#pragma unroll
  for (int v = 0; v < V; ++v)
    e[v] = fromFloat<T>(in[v]);
  *reinterpret_cast<Raw *>(p) = raw;
}

/// Element `i` of a per-channel vector whose dtype is known at run time.
__device__ __forceinline__ float loadAny(const void *p, DType type, int64_t i) {
  switch (type) {
  case DType::f16:
    return __half2float(static_cast<const __half *>(p)[i]);
  case DType::bf16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  default:
    return static_cast<const float *>(p)[i];
  }
}

__device__ __forceinline__ void storeAny(void *p, DType type, int64_t i, double v) {
  float f = static_cast<float>(v);
  switch (type) {
  case DType::f16:
    static_cast<__half *>(p)[i] = __float2half_rn(f);
    break;
  case DType::bf16:
    static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(f);
    break;
  default:
    static_cast<float *>(p)[i] = f;
    break;
  }
}

/// ReLU keeping NaN (as cpu::relu does); -0 becomes +0.
__device__ __forceinline__ float reluKeepNan(float v) { return v <= 0.f ? 0.f : v; }

//===----------------------------------------------------------------------===//
// Block-level helpers
//===----------------------------------------------------------------------===//

/// Rows of chunk blockIdx.y that row lane `lane` of `lanes` visits.
__device__ __forceinline__ float laneRowCount(int64_t rowBegin, int64_t rowEnd, int lane,
                                              int lanes) {
  int64_t first = rowBegin + lane;
  return first < rowEnd ? float((rowEnd - first + lanes - 1) / lanes) : 0.f;
}

/// Chan's merge of (meanB, m2B, nB) into (mean, m2, n).
template <typename F>
__device__ __forceinline__ void welfordMerge(F &mean, F &m2, F &n, F meanB, F m2B, F nB) {
  if (nB == F(0))
    return;
  F total = n + nB;
  F delta = meanB - mean;
  F share = nB / total;
  mean += delta * share;
  m2 += m2B + delta * delta * n * share;
  n = total;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Per (chunk, channel): Welford mean and M2 of x over the chunk's rows.
template <typename T, int V, int U>
__global__ void __launch_bounds__(kThreads)
    statsPartialKernel(const T *__restrict__ x, Tile tile, float *__restrict__ partMean,
                       float *__restrict__ partM2) {
  __shared__ float sMean[kThreads * V];
  __shared__ float sM2[kThreads * V];
  __shared__ float sCount[kThreads];
  const int tx = threadIdx.x, ty = threadIdx.y, nx = blockDim.x, ny = blockDim.y;
  const int64_t c0 = (int64_t(blockIdx.x) * nx + tx) * V;
  const bool active = c0 < tile.channels;
  const int64_t rowBegin = int64_t(blockIdx.y) * tile.rowsPerChunk;
  const int64_t rowEnd = min(tile.rows, rowBegin + tile.rowsPerChunk);
  const int64_t C = tile.channels;

  float mean[V], m2[V];
#pragma unroll
  for (int v = 0; v < V; ++v)
    mean[v] = m2[v] = 0.f;
  float n = 0.f;
  if (active) {
    const T *base = x + c0;
    for (int64_t r = rowBegin + ty; r < rowEnd; r += U * int64_t(ny)) {
      float a[U][V];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (r + u * int64_t(ny) < rowEnd)
          loadPack<T, V>(base + (r + u * int64_t(ny)) * C, a[u]);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (r + u * int64_t(ny) < rowEnd) {
          n += 1.f;
          float inv = __frcp_rn(n);
#pragma unroll
          for (int v = 0; v < V; ++v) {
            float d = a[u][v] - mean[v];
            mean[v] += d * inv;
            m2[v] += d * (a[u][v] - mean[v]);
          }
        }
    }
  } else {
    n = laneRowCount(rowBegin, rowEnd, ty, ny);
  }

  // Fixed tree over the row lanes; at level s, lanes 0 mod 2s read lanes
  // s mod 2s and write their own slot (disjoint sets, one barrier a level).
  const int slot = (ty * nx + tx) * V;
#pragma unroll
  for (int v = 0; v < V; ++v) {
    sMean[slot + v] = mean[v];
    sM2[slot + v] = m2[v];
  }
  if (tx == 0)
    sCount[ty] = n;
  for (int s = 1; s < ny; s <<= 1) {
    __syncthreads();
    if (ty % (2 * s) == 0 && ty + s < ny) {
      const int other = ((ty + s) * nx + tx) * V;
      float nB = sCount[ty + s];
      float merged = n;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        float count = n;
        welfordMerge(mean[v], m2[v], count, sMean[other + v], sM2[other + v], nB);
        merged = count;
        sMean[slot + v] = mean[v];
        sM2[slot + v] = m2[v];
      }
      n = merged;
      if (tx == 0)
        sCount[ty] = n;
    }
  }
  if (ty == 0 && active) {
    float *outMean = partMean + int64_t(blockIdx.y) * C + c0;
    float *outM2 = partM2 + int64_t(blockIdx.y) * C + c0;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      outMean[v] = mean[v];
      outM2[v] = m2[v];
    }
  }
}

/// Fixed-order tree sum over the lanes of a finalize block (column tx).
__device__ __forceinline__ double laneSum(double value, double (*shared)[kFinalizeChannels]) {
  const int tx = threadIdx.x, lane = threadIdx.y;
  shared[lane][tx] = value;
  for (int s = kFinalizeLanes / 2; s > 0; s >>= 1) {
    __syncthreads();
    if (lane < s)
      shared[lane][tx] += shared[lane + s][tx];
  }
  __syncthreads();
  double total = shared[0][tx];
  __syncthreads();
  return total;
}

/// Merges the chunks' Welford partials per channel in double: the mean as
/// sum(n_j * mean_j) / M, then M2 = sum(M2_j + n_j * (mean_j - mean)^2)
/// (plain sums over independent loads, lanes then a fixed tree), giving
/// mean and inv_std.
__global__ void __launch_bounds__(kFinalizeChannels *kFinalizeLanes)
    statsFinalizeKernel(const float *__restrict__ partMean, const float *__restrict__ partM2,
                        Tile tile, int64_t chunks, double epsilon, float *mean, float *invStd) {
  __shared__ double shared[kFinalizeLanes][kFinalizeChannels];
  const int tx = threadIdx.x, lane = threadIdx.y;
  const int64_t c = int64_t(blockIdx.x) * kFinalizeChannels + tx;
  const bool active = c < tile.channels;
  double weighted = 0;
  if (active)
    for (int64_t j = lane; j < chunks; j += kFinalizeLanes) {
      double n = double(min(tile.rowsPerChunk, tile.rows - j * tile.rowsPerChunk));
      weighted += n * double(partMean[j * tile.channels + c]);
    }
  const double mu = laneSum(weighted, shared) / double(tile.rows);
  double m2 = 0;
  if (active)
    for (int64_t j = lane; j < chunks; j += kFinalizeLanes) {
      double n = double(min(tile.rowsPerChunk, tile.rows - j * tile.rowsPerChunk));
      double d = double(partMean[j * tile.channels + c]) - mu;
      m2 += double(partM2[j * tile.channels + c]) + n * d * d;
    }
  m2 = laneSum(m2, shared);
  if (lane == 0 && active) {
    double var = m2 / double(tile.rows);
    mean[c] = static_cast<float>(mu);
    invStd[c] = static_cast<float>(1.0 / sqrt(var + epsilon));
  }
}

/// mean = sum / count, var = max(0, sumSq / count - mean^2), per channel.
__global__ void finalizeFromSumsKernel(const float *sum, const float *sumSq, int64_t channels,
                                       int64_t count, double epsilon, float *mean,
                                       float *invStd) {
  int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels)
    return;
  double m = double(sum[c]) / double(count);
  double var = max(0.0, double(sumSq[c]) / double(count) - m * m);
  mean[c] = static_cast<float>(m);
  invStd[c] = static_cast<float>(1.0 / sqrt(var + epsilon));
}

/// Where the per-channel affine map y = (x - mean) * scale + bias comes from.
struct ChannelAffine {
  const void *mean;
  DType meanType;
  /// Training: inv_std (f32); inference: the running variance.
  const void *spread;
  DType spreadType;
  const void *weight;
  DType weightType;
  const void *bias;
  DType biasType;
  bool inference;
  double epsilon;
};

/// The training map's scale, inv_std * weight: the apply's (channelAffine)
/// and the recomputed ReLU mask's (recomputeConstants) must be the same.
__device__ __forceinline__ float trainingScale(float invStd, float weight) {
  return invStd * weight;
}

__device__ __forceinline__ void channelAffine(const ChannelAffine &p, int64_t c, float &mean,
                                              float &scale, float &bias) {
  mean = loadAny(p.mean, p.meanType, c);
  float w = loadAny(p.weight, p.weightType, c);
  float spread = loadAny(p.spread, p.spreadType, c);
  scale = p.inference ? static_cast<float>(double(w) / sqrt(double(spread) + p.epsilon))
                      : trainingScale(spread, w);
  bias = loadAny(p.bias, p.biasType, c);
}

/// The normalized value before rounding, as one fused multiply-add: the
/// apply stores it and the backward's recomputed ReLU mask (ReluRecompute)
/// takes its sign, so both must compute it here.
__device__ __forceinline__ float normalizedValue(float x, float mean, float scale, float bias) {
  return __fmaf_rn(x - mean, scale, bias);
}

/// y = [relu]((x - mean) * scale + bias), or with a shortcut
/// relu(round(round(bn) + shortcut)).
template <typename T, int V, int U>
__global__ void __launch_bounds__(kThreads)
    applyKernel(const T *__restrict__ x, const T *__restrict__ shortcut, T *y, Tile tile,
                ChannelAffine affine, bool relu) {
  const int tx = threadIdx.x, ty = threadIdx.y, nx = blockDim.x, ny = blockDim.y;
  const int64_t c0 = (int64_t(blockIdx.x) * nx + tx) * V;
  if (c0 >= tile.channels)
    return;
  const int64_t C = tile.channels;
  const int64_t rowBegin = int64_t(blockIdx.y) * tile.rowsPerChunk;
  const int64_t rowEnd = min(tile.rows, rowBegin + tile.rowsPerChunk);
  float mean[V], scale[V], bias[V];
#pragma unroll
  for (int v = 0; v < V; ++v)
    channelAffine(affine, c0 + v, mean[v], scale[v], bias[v]);

  for (int64_t r = rowBegin + ty; r < rowEnd; r += U * int64_t(ny)) {
    float a[U][V], s[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int64_t row = r + u * int64_t(ny);
      if (row < rowEnd) {
        loadPack<T, V>(x + row * C + c0, a[u]);
        if (shortcut)
          loadPack<T, V>(shortcut + row * C + c0, s[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int64_t row = r + u * int64_t(ny);
      if (row < rowEnd) {
        float out[V];
#pragma unroll
        for (int v = 0; v < V; ++v) {
          float t = normalizedValue(a[u][v], mean[v], scale[v], bias[v]);
          if (shortcut)
            t = roundAs<T>(t) + s[u][v];
          out[v] = relu ? reluKeepNan(t) : t;
        }
        storePack<T, V>(y + row * C + c0, out);
      }
    }
  }
}

/// bn_scale_bias's per-channel math (rn-fuse-bn-prologue): the BN apply
/// as the next convolution's prologue, scale = round_T(invStd * gamma) and
/// bias = round_T(fma(-mean, scale, beta)), each step one f32 operation
/// (the intrinsics keep nvcc from contracting them) rounded to T, as
/// cpu::bnScaleBias computes them. bnScaleBiasKernel and the backward's
/// prologue mask (ReluRecompute::prologue) both call it, so that the mask
/// sees the scale and bias that the prologue's convolution read.
template <typename T>
__device__ __forceinline__ void prologueScaleBias(float mean, float invStd, float gamma,
                                                  float beta, float &scale, float &bias) {
  scale = roundAs<T>(__fmul_rn(invStd, gamma));
  bias = roundAs<T>(__fmaf_rn(-mean, scale, beta));
}

/// The prologue's value before its ReLU: round_T(fma(x, scale, bias)),
/// one rounding, as the CPU (rn-fuse-bn-prologue's spec) and the two cuDNN
/// graphs the fusion runs compute it (genstats forward and prologue filter
/// gradient, Conv.ScaleBiasReluPrologueRoundsLikeTheCpu on the H200), so
/// the mask is the one of what the convolutions read.
template <typename T>
__device__ __forceinline__ float prologueValue(float x, float scale, float bias) {
  return roundAs<T>(__fmaf_rn(x, scale, bias));
}

/// One thread per channel: prologueScaleBias, stored as T.
template <typename T>
__global__ void bnScaleBiasKernel(const float *__restrict__ mean, const float *__restrict__ invStd,
                                  const void *gamma, DType gammaType, const void *beta,
                                  DType betaType, int64_t channels, T *scale, T *bias) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels)
    return;
  float s, b;
  prologueScaleBias<T>(mean[c], invStd[c], loadAny(gamma, gammaType, c),
                       loadAny(beta, betaType, c), s, b);
  scale[c] = fromFloat<T>(s);
  bias[c] = fromFloat<T>(b);
}

/// The ReLU mask recomputed from x (cbr_backward's `relu_recompute`): dy
/// passes where the forward's result is positive: normalizedValue of the
/// batch mean (which the backward kernels hold anyway), trainingScale and
/// beta, rounded to T, as applyKernel computed it. Off when beta is null.
/// With `prologue` (`prologue_mask`, rn-fuse-bn-prologue), the forward's
/// result is instead the next convolution's prologue: positive where
/// prologueValue of prologueScaleBias's scale and bias is. A flag read
/// from the kernel's parameters, not a template argument (no second set
/// of instantiations), at no register cost (KernelsKeepTheirOccupancy:
/// backwardApplyKernel stays at 56 for f16 at the default tuning; the
/// constants must keep this shape, a restructured loop of them cost it 3).
struct ReluRecompute {
  const void *weight;
  DType weightType;
  const void *beta;
  DType betaType;
  bool prologue;
};

/// Per-channel scale and bias of a recomputed mask (zeros when off). The
/// mean is the kernel's own batch mean: a second copy of it, or a generic
/// ChannelAffine load, cost backwardApplyKernel 10 registers and a block
/// per SM (56 -> 66, 30% slower on the H200 at ResNet sizes).
template <typename T, int V>
__device__ __forceinline__ void recomputeConstants(const ReluRecompute &r, int64_t c0,
                                                   const float (&mean)[V],
                                                   const float (&invStd)[V], float (&scale)[V],
                                                   float (&bias)[V]) {
#pragma unroll
  for (int v = 0; v < V; ++v) {
    if (r.beta && r.prologue) {
      prologueScaleBias<T>(mean[v], invStd[v], loadAny(r.weight, r.weightType, c0 + v),
                           loadAny(r.beta, r.betaType, c0 + v), scale[v], bias[v]);
    } else {
      scale[v] = r.beta ? trainingScale(invStd[v], loadAny(r.weight, r.weightType, c0 + v)) : 0.f;
      bias[v] = r.beta ? loadAny(r.beta, r.betaType, c0 + v) : 0.f;
    }
  }
}

/// Whether the recomputed mask passes dy: with `prologue`, in the
/// prologue's rounding (the mean is then unused).
template <typename T>
__device__ __forceinline__ bool recomputedPositive(float x, float mean, float scale, float bias,
                                                   bool prologue) {
  return (prologue ? prologueValue<T>(x, scale, bias)
                   : roundAs<T>(normalizedValue(x, mean, scale, bias))) > 0.f;
}

/// Per (chunk, channel): sum(dy) and sum(dy * xhat), dy masked by relu > 0
/// when `relu` is given, or by the recomputed mask when `recompute.beta`
/// is;
/// the masked dy is stored to `maskedOut` if given.
template <typename T, int V, int U>
__global__ void __launch_bounds__(kThreads)
    backwardPartialKernel(const T *__restrict__ dy, const T *__restrict__ relu,
                          const T *__restrict__ x, const float *__restrict__ batchMean,
                          const float *__restrict__ batchInvStd, ReluRecompute recompute,
                          T *__restrict__ maskedOut, Tile tile, float *__restrict__ partDy,
                          float *__restrict__ partDyXhat) {
  __shared__ float sDy[kThreads * V];
  __shared__ float sDyXhat[kThreads * V];
  const int tx = threadIdx.x, ty = threadIdx.y, nx = blockDim.x, ny = blockDim.y;
  const int64_t c0 = (int64_t(blockIdx.x) * nx + tx) * V;
  const bool active = c0 < tile.channels;
  const int64_t C = tile.channels;
  const int64_t rowBegin = int64_t(blockIdx.y) * tile.rowsPerChunk;
  const int64_t rowEnd = min(tile.rows, rowBegin + tile.rowsPerChunk);

  float sumDy[V], sumDyXhat[V], mean[V], invStd[V];
#pragma unroll
  for (int v = 0; v < V; ++v) {
    sumDy[v] = sumDyXhat[v] = 0.f;
    mean[v] = active ? batchMean[c0 + v] : 0.f;
    invStd[v] = active ? batchInvStd[c0 + v] : 0.f;
  }
  float maskScale[V] = {}, maskBias[V] = {};
  if (active) {
    recomputeConstants<T, V>(recompute, c0, mean, invStd, maskScale, maskBias);
    for (int64_t r = rowBegin + ty; r < rowEnd; r += U * int64_t(ny)) {
      float g[U][V], a[U][V], m[U][V];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        int64_t row = r + u * int64_t(ny);
        if (row < rowEnd) {
          loadPack<T, V>(dy + row * C + c0, g[u]);
          loadPack<T, V>(x + row * C + c0, a[u]);
          if (relu)
            loadPack<T, V>(relu + row * C + c0, m[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        int64_t row = r + u * int64_t(ny);
        if (row < rowEnd) {
#pragma unroll
          for (int v = 0; v < V; ++v) {
            if (relu)
              g[u][v] = m[u][v] > 0.f ? g[u][v] : 0.f;
            else if (recompute.beta)
              g[u][v] = recomputedPositive<T>(a[u][v], mean[v], maskScale[v], maskBias[v],
                                              recompute.prologue)
                            ? g[u][v]
                            : 0.f;
            float xhat = (a[u][v] - mean[v]) * invStd[v];
            sumDy[v] += g[u][v];
            sumDyXhat[v] += g[u][v] * xhat;
          }
          if (maskedOut)
            storePack<T, V>(maskedOut + row * C + c0, g[u]);
        }
      }
    }
  }

  const int slot = (ty * nx + tx) * V;
#pragma unroll
  for (int v = 0; v < V; ++v) {
    sDy[slot + v] = sumDy[v];
    sDyXhat[slot + v] = sumDyXhat[v];
  }
  for (int s = 1; s < ny; s <<= 1) {
    __syncthreads();
    if (ty % (2 * s) == 0 && ty + s < ny) {
      const int other = ((ty + s) * nx + tx) * V;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        sumDy[v] += sDy[other + v];
        sumDyXhat[v] += sDyXhat[other + v];
        sDy[slot + v] = sumDy[v];
        sDyXhat[slot + v] = sumDyXhat[v];
      }
    }
  }
  if (ty == 0 && active) {
#pragma unroll
    for (int v = 0; v < V; ++v) {
      partDy[int64_t(blockIdx.y) * C + c0 + v] = sumDy[v];
      partDyXhat[int64_t(blockIdx.y) * C + c0 + v] = sumDyXhat[v];
    }
  }
}

/// Per-channel gradient vectors, dtypes known at run time.
struct GradVectors {
  const void *weightAcc;
  DType weightAccType;
  const void *biasAcc;
  DType biasAccType;
  void *weightGrad;
  DType weightGradType;
  void *biasGrad;
  DType biasGradType;
};

/// Sums the chunks' partials per channel in double; keeps the sums for the
/// dx pass and writes weightGrad = acc + sum(dy * xhat), biasGrad = acc +
/// sum(dy) (each thread reads its accumulator before writing, so the
/// gradients may alias them).
__global__ void __launch_bounds__(kFinalizeChannels *kFinalizeLanes)
    backwardFinalizeKernel(const float *__restrict__ partDy,
                           const float *__restrict__ partDyXhat, Tile tile, int64_t chunks,
                           float *sumDyOut, float *sumDyXhatOut, GradVectors grads) {
  __shared__ double sDy[kFinalizeLanes][kFinalizeChannels];
  __shared__ double sDyXhat[kFinalizeLanes][kFinalizeChannels];
  const int tx = threadIdx.x, lane = threadIdx.y;
  const int64_t c = int64_t(blockIdx.x) * kFinalizeChannels + tx;
  const bool active = c < tile.channels;
  double a = 0, b = 0;
  if (active)
    for (int64_t j = lane; j < chunks; j += kFinalizeLanes) {
      a += double(partDy[j * tile.channels + c]);
      b += double(partDyXhat[j * tile.channels + c]);
    }
  sDy[lane][tx] = a;
  sDyXhat[lane][tx] = b;
  for (int s = 1; s < kFinalizeLanes; s <<= 1) {
    __syncthreads();
    if (lane % (2 * s) == 0 && lane + s < kFinalizeLanes) {
      a += sDy[lane + s][tx];
      b += sDyXhat[lane + s][tx];
      sDy[lane][tx] = a;
      sDyXhat[lane][tx] = b;
    }
  }
  if (lane == 0 && active) {
    sumDyOut[c] = static_cast<float>(a);
    sumDyXhatOut[c] = static_cast<float>(b);
    double weightAcc = loadAny(grads.weightAcc, grads.weightAccType, c);
    double biasAcc = loadAny(grads.biasAcc, grads.biasAccType, c);
    storeAny(grads.weightGrad, grads.weightGradType, c, weightAcc + b);
    storeAny(grads.biasGrad, grads.biasGradType, c, biasAcc + a);
  }
}

/// dx = weight * invStd * (dy - sum(dy) / M - xhat * sum(dy * xhat) / M).
template <typename T, int V, int U>
__global__ void __launch_bounds__(kThreads)
    backwardApplyKernel(const T *__restrict__ dy, const T *__restrict__ relu,
                        const T *__restrict__ x, const float *__restrict__ batchMean,
                        const float *__restrict__ batchInvStd, const void *weight,
                        DType weightType, ReluRecompute recompute, const float *__restrict__ sumDy,
                        const float *__restrict__ sumDyXhat, T *dx, Tile tile) {
  const int tx = threadIdx.x, ty = threadIdx.y, nx = blockDim.x, ny = blockDim.y;
  const int64_t c0 = (int64_t(blockIdx.x) * nx + tx) * V;
  if (c0 >= tile.channels)
    return;
  const int64_t C = tile.channels;
  const int64_t rowBegin = int64_t(blockIdx.y) * tile.rowsPerChunk;
  const int64_t rowEnd = min(tile.rows, rowBegin + tile.rowsPerChunk);
  const double m = double(tile.rows);
  float mean[V], invStd[V], factor[V], meanDy[V], meanDyXhat[V];
#pragma unroll
  for (int v = 0; v < V; ++v) {
    int64_t c = c0 + v;
    mean[v] = batchMean[c];
    invStd[v] = batchInvStd[c];
    factor[v] = static_cast<float>(double(loadAny(weight, weightType, c)) * invStd[v]);
    meanDy[v] = static_cast<float>(double(sumDy[c]) / m);
    meanDyXhat[v] = static_cast<float>(double(sumDyXhat[c]) / m);
  }
  float maskScale[V], maskBias[V];
  recomputeConstants<T, V>(recompute, c0, mean, invStd, maskScale, maskBias);
  for (int64_t r = rowBegin + ty; r < rowEnd; r += U * int64_t(ny)) {
    float g[U][V], a[U][V], mask[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int64_t row = r + u * int64_t(ny);
      if (row < rowEnd) {
        loadPack<T, V>(dy + row * C + c0, g[u]);
        loadPack<T, V>(x + row * C + c0, a[u]);
        if (relu)
          loadPack<T, V>(relu + row * C + c0, mask[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int64_t row = r + u * int64_t(ny);
      if (row < rowEnd) {
        float out[V];
#pragma unroll
        for (int v = 0; v < V; ++v) {
          float d = g[u][v];
          if (relu)
            d = mask[u][v] > 0.f ? d : 0.f;
          else if (recompute.beta)
            d = recomputedPositive<T>(a[u][v], mean[v], maskScale[v], maskBias[v],
                                      recompute.prologue)
                    ? d
                    : 0.f;
          float xhat = (a[u][v] - mean[v]) * invStd[v];
          out[v] = factor[v] * (d - meanDy[v] - xhat * meanDyXhat[v]);
        }
        storePack<T, V>(dx + row * C + c0, out);
      }
    }
  }
}

/// Per channel, in double: the PyTorch running-statistics update.
__global__ void runningStatsKernel(const void *runningMean, const void *runningVar, DType type,
                                   const float *batchMean, const float *batchInvStd,
                                   int64_t channels, double epsilon, double momentum,
                                   double unbias, void *newMean, void *newVar) {
  int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels)
    return;
  double oldMean = loadAny(runningMean, type, c);
  double oldVar = loadAny(runningVar, type, c);
  double invStd = batchInvStd[c];
  // Clamped: rounding can push 1 / inv_std^2 - eps a hair below zero.
  double var = max(0.0, 1.0 / (invStd * invStd) - epsilon);
  storeAny(newMean, type, c, (1.0 - momentum) * oldMean + momentum * double(batchMean[c]));
  storeAny(newVar, type, c, (1.0 - momentum) * oldVar + momentum * var * unbias);
}

//===----------------------------------------------------------------------===//
// Host side: checks, geometry, dispatch
//===----------------------------------------------------------------------===//


/// Channels per thread: the widest of `widest`, ..., 2 (at most 16 bytes)
/// that divides the channel count and to which every pointer is aligned,
/// else 1. Each pass family's `widest` comes from NormKernelTuning.
int pickVec(int64_t channels, size_t elementBytes, std::initializer_list<const void *> ptrs,
            int widest = 8) {
  for (int vec = std::min(widest, int(16 / elementBytes)); vec > 1; vec /= 2) {
    if (channels % vec != 0)
      continue;
    bool aligned = true;
    for (const void *p : ptrs)
      if (p && reinterpret_cast<uintptr_t>(p) % (size_t(vec) * elementBytes) != 0)
        aligned = false;
    if (aligned)
      return vec;
  }
  return 1;
}

struct Geometry {
  dim3 grid;
  dim3 block;
};

Geometry geometryOf(const RowPlan &plan, int vec) {
  int64_t vectors = plan.channels / vec;
  int tx = int(std::min<int64_t>(vectors, 32));
  int ty = kThreads / tx;
  return Geometry{dim3(unsigned(ceilDiv(vectors, tx)), unsigned(plan.chunks)), dim3(tx, ty)};
}

dim3 finalizeGrid(const RowPlan &plan) {
  return dim3(unsigned(ceilDiv(plan.channels, kFinalizeChannels)));
}

/// A kernel instantiation: storage type, channels per thread, rows per
/// iteration.
template <typename T, int V, int U> struct Variant {
  using Type = T;
  static constexpr int vec = V;
  static constexpr int rows = U;
};

/// Calls fn(Variant<T, V, U>{}) for U = `rows` (1, 2 or 4).
template <typename T, int V, typename Fn> void withRows(int rows, Fn &&fn) {
  switch (rows) {
  case 1:
    fn(Variant<T, V, 1>{});
    return;
  case 2:
    fn(Variant<T, V, 2>{});
    return;
  default:
    fn(Variant<T, V, 4>{});
    return;
  }
}

/// The same for the width `vec` (8 only for 16-bit types).
template <typename T, typename Fn> void withVec(int vec, int rows, Fn &&fn) {
  switch (vec) {
  case 8:
    if constexpr (sizeof(T) == 2)
      withRows<T, 8>(rows, fn);
    else
      withRows<T, 4>(rows, fn);
    return;
  case 4:
    withRows<T, 4>(rows, fn);
    return;
  case 2:
    withRows<T, 2>(rows, fn);
    return;
  default:
    withRows<T, 1>(rows, fn);
    return;
  }
}

/// Calls fn(Variant<T, V, U>{}) for the storage type `type`, width `vec`
/// and rows per iteration `rows`.
template <typename Fn> void withVariant(DType type, int vec, int rows, Fn &&fn) {
  switch (type) {
  case DType::f16:
    withVec<__half>(vec, rows, fn);
    return;
  case DType::bf16:
    withVec<__nv_bfloat16>(vec, rows, fn);
    return;
  default:
    withVec<float>(vec, rows, fn);
    return;
  }
}

/// The first value of `t` outside NormKernelTuning's sets, as an error.
Status checkTuning(const NormKernelTuning &t) {
  auto rowsOk = [](int rows) { return rows == 1 || rows == 2 || rows == 4; };
  auto bytesOk = [](int bytes) { return bytes == 4 || bytes == 8 || bytes == 16; };
  auto blocksOk = [](int blocks) { return blocks >= 1 && blocks <= kMaxTargetBlocks; };
  if (!rowsOk(t.statsRows) || !rowsOk(t.applyRows) || !rowsOk(t.backwardRows))
    return Error("rows per iteration must be 1, 2 or 4");
  if (!bytesOk(t.statsVecBytes) || !bytesOk(t.applyVecBytes) || !bytesOk(t.backwardVecBytes))
    return Error("vector widths must be 4, 8 or 16 bytes");
  if (!blocksOk(t.statsBlocks) || !blocksOk(t.applyBlocks) || !blocksOk(t.backwardBlocks))
    return Error("target blocks must be 1 to " + std::to_string(kMaxTargetBlocks));
  return Status::success();
}

/// RN_BN_TARGET_BLOCKS: "N" or "STATS,APPLY,BACKWARD", the blocks each
/// pass family aims for (an experiment knob for in-step A/B runs; the
/// defaults are NormKernelTuning's), reported on stderr once; a malformed
/// value is reported and ignored.
void applyTargetBlocksOverride(NormKernelTuning &t) {
  const char *text = std::getenv("RN_BN_TARGET_BLOCKS");
  if (!text || !*text)
    return;
  NormKernelTuning wanted = t;
  char extra = 0;
  const int three = std::sscanf(text, "%d,%d,%d%c", &wanted.statsBlocks, &wanted.applyBlocks,
                                &wanted.backwardBlocks, &extra);
  if (three != 3) {
    if (std::sscanf(text, "%d%c", &wanted.statsBlocks, &extra) != 1)
      wanted.statsBlocks = 0; // neither form: out of range below
    wanted.applyBlocks = wanted.backwardBlocks = wanted.statsBlocks;
  }
  if (Status s = checkTuning(wanted); !s.ok()) {
    std::fprintf(stderr, "rn: ignoring RN_BN_TARGET_BLOCKS=%s (want N or N,N,N: %s)\n", text,
                 s.error().message().c_str());
    return;
  }
  t = wanted;
  // Said once, so that an A/B's log shows the knob took effect.
  std::fprintf(stderr, "rn: BN passes aim for %d, %d, %d blocks (RN_BN_TARGET_BLOCKS)\n",
               t.statsBlocks, t.applyBlocks, t.backwardBlocks);
}

NormKernelTuning &tuning() {
  static NormKernelTuning t = [] {
    NormKernelTuning initial;
    applyTargetBlocksOverride(initial);
    return initial;
  }();
  return t;
}

/// Partial-statistics arrays in the workspace.
struct StatsWorkspace {
  float *partMean;
  float *partM2;
};

StatsWorkspace statsWorkspace(const RowPlan &plan, void *workspace) {
  char *base = static_cast<char *>(workspace);
  size_t part = partialBytes(plan);
  return StatsWorkspace{reinterpret_cast<float *>(base), reinterpret_cast<float *>(base + part)};
}

struct BackwardWorkspace {
  float *partDy;
  float *partDyXhat;
  float *sumDy;
  float *sumDyXhat;
};

size_t vectorBytes(const RowPlan &plan) { return alignUp(size_t(plan.channels) * sizeof(float)); }

BackwardWorkspace backwardWorkspace(const RowPlan &plan, void *workspace) {
  char *base = static_cast<char *>(workspace);
  size_t part = partialBytes(plan), vec = vectorBytes(plan);
  return BackwardWorkspace{reinterpret_cast<float *>(base),
                           reinterpret_cast<float *>(base + part),
                           reinterpret_cast<float *>(base + 2 * part),
                           reinterpret_cast<float *>(base + 2 * part + vec)};
}

Status applyChecked(const DeviceTensor &x, const DeviceTensor *shortcut,
                    const DeviceTensor &y, const ChannelAffine &affine, bool relu,
                    cudaStream_t stream) {
  RowPlan plan = rowPlanOf(x.shape, tuning().applyBlocks);
  if (plan.chunks == 0)
    return Status::success();
  const void *shortcutData = shortcut ? shortcut->data : nullptr;
  int vec = pickVec(plan.channels, elementSize(x.dtype), {x.data, y.data, shortcutData},
                    tuning().applyVecBytes / int(elementSize(x.dtype)));
  Geometry g = geometryOf(plan, vec);
  Tile tile = tileOf(plan);
  withVariant(x.dtype, vec, tuning().applyRows, [&](auto variant) {
    using T = typename decltype(variant)::Type;
    constexpr int V = decltype(variant)::vec, U = decltype(variant)::rows;
    applyKernel<T, V, U><<<g.grid, g.block, 0, stream>>>(
        static_cast<const T *>(x.data), static_cast<const T *>(shortcutData),
        static_cast<T *>(y.data), tile, affine, relu);
  });
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

ChannelAffine trainingAffine(const DeviceTensor &weight, const DeviceTensor &bias,
                             const DeviceTensor &mean, const DeviceTensor &invStd) {
  return ChannelAffine{mean.data,   DType::f32,  invStd.data, DType::f32, weight.data,
                       weight.dtype, bias.data, bias.dtype,  false,      0.0};
}

ChannelAffine inferenceAffine(const DeviceTensor &weight, const DeviceTensor &bias,
                              const DeviceTensor &runningMean, const DeviceTensor &runningVar,
                              double epsilon) {
  return ChannelAffine{runningMean.data, runningMean.dtype, runningVar.data, runningVar.dtype,
                       weight.data,      weight.dtype,      bias.data,       bias.dtype,
                       true,             epsilon};
}

/// The BN backward's dx pass from the sums in `ws` (dy masked by `relu`
/// when given, or as `recompute` says). It reduces nothing: its rows are
/// chunked like the apply's (its own grid, whole waves at its own
/// occupancy), not like the sums'.
Status launchBackwardDx(const void *dy, const void *relu, const DeviceTensor &x,
                        const DeviceTensor &weight, const DeviceTensor &mean,
                        const DeviceTensor &invStd, const ReluRecompute &recompute,
                        const BackwardWorkspace &ws, const DeviceTensor &dx, int vec,
                        cudaStream_t stream) {
  const RowPlan plan = rowPlanOf(x.shape, tuning().applyBlocks);
  const Geometry geometry = geometryOf(plan, vec);
  const Tile tile = tileOf(plan);
  withVariant(x.dtype, vec, tuning().backwardRows, [&](auto variant) {
    using T = typename decltype(variant)::Type;
    constexpr int V = decltype(variant)::vec, U = decltype(variant)::rows;
    backwardApplyKernel<T, V, U><<<geometry.grid, geometry.block, 0, stream>>>(
        static_cast<const T *>(dy), static_cast<const T *>(relu), static_cast<const T *>(x.data),
        static_cast<const float *>(mean.data), static_cast<const float *>(invStd.data),
        weight.data, weight.dtype, recompute, ws.sumDy, ws.sumDyXhat, static_cast<T *>(dx.data),
        tile);
  });
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

/// The [C] vectors every BN backward takes (the statistics, the affine
/// weight, the parameters' gradients and their accumulators) and its
/// workspace, checked into `check`.
void checkBackwardOperands(Checker &check, const DeviceTensor &x, const DeviceTensor &weight,
                           const DeviceTensor &mean, const DeviceTensor &invStd,
                           const DeviceTensor &weightGradAcc, const DeviceTensor &biasGradAcc,
                           const DeviceTensor &weightGrad, const DeviceTensor &biasGrad,
                           const void *workspace, size_t workspaceBytes) {
  const int64_t C = x.shape.back();
  check.vector("weight", weight, C)
      .f32Vector("batch_mean", mean, C)
      .f32Vector("batch_inv_std", invStd, C)
      .vector("weight_grad_acc", weightGradAcc, C)
      .vector("bias_grad_acc", biasGradAcc, C)
      .vector("weight_grad", weightGrad, C)
      .vector("bias_grad", biasGrad, C);
  const size_t needed = bnBackwardWorkspaceBytes(x.shape);
  check.that(workspaceBytes >= needed && (workspace != nullptr || needed == 0),
             "needs " + std::to_string(needed) + " workspace bytes, has " +
                 std::to_string(workspaceBytes));
}

Status backwardChecked(const char *fn, const DeviceTensor &dy, const DeviceTensor *reluResult,
                       const DeviceTensor *reluBeta, const DeviceTensor &x,
                       const DeviceTensor &weight,
                       const DeviceTensor &mean, const DeviceTensor &invStd,
                       const DeviceTensor &weightGradAcc, const DeviceTensor &biasGradAcc,
                       const DeviceTensor &dx, const DeviceTensor *maskedOut,
                       const DeviceTensor &weightGrad, const DeviceTensor &biasGrad,
                       cudaStream_t stream, void *workspace, size_t workspaceBytes,
                       bool prologueMask) {
  Checker check(fn);
  check.activation("input", x).sameAs("output_grad", dy, x).sameAs("input_grad", dx, x);
  if (reluResult)
    check.sameAs("relu_result", *reluResult, x);
  check.that(!reluResult || !reluBeta,
             "takes the ReLU mask from relu_result or relu_beta, not both")
      .that(!prologueMask || reluBeta,
            "the prologue's rounding of the mask (prologue_mask) needs relu_beta");
  if (maskedOut)
    check.sameAs("shortcut_grad", *maskedOut, x);
  if (check.failed())
    return check.error();
  checkBackwardOperands(check, x, weight, mean, invStd, weightGradAcc, biasGradAcc, weightGrad,
                        biasGrad, workspace, workspaceBytes);
  if (reluBeta)
    check.vector("relu_beta", *reluBeta, x.shape.back());
  if (check.failed())
    return check.error();

  RowPlan plan = rowPlanOf(x.shape, tuning().backwardBlocks);
  if (plan.chunks == 0)
    return Status::success();
  BackwardWorkspace ws = backwardWorkspace(plan, workspace);
  const void *reluData = reluResult ? reluResult->data : nullptr;
  void *maskedData = maskedOut ? maskedOut->data : nullptr;
  int vec = pickVec(plan.channels, elementSize(x.dtype),
                    {dy.data, x.data, dx.data, reluData, maskedData},
                    tuning().backwardVecBytes / int(elementSize(x.dtype)));
  Geometry g = geometryOf(plan, vec);
  Tile tile = tileOf(plan);
  const ReluRecompute recompute{weight.data, weight.dtype, reluBeta ? reluBeta->data : nullptr,
                                reluBeta ? reluBeta->dtype : DType::f32, prologueMask};
  withVariant(x.dtype, vec, tuning().backwardRows, [&](auto variant) {
    using T = typename decltype(variant)::Type;
    constexpr int V = decltype(variant)::vec, U = decltype(variant)::rows;
    backwardPartialKernel<T, V, U><<<g.grid, g.block, 0, stream>>>(
        static_cast<const T *>(dy.data), static_cast<const T *>(reluData),
        static_cast<const T *>(x.data), static_cast<const float *>(mean.data),
        static_cast<const float *>(invStd.data), recompute, static_cast<T *>(maskedData),
        tile, ws.partDy, ws.partDyXhat);
  });
  RN_CUDA_TRY_LAUNCH();
  GradVectors grads{weightGradAcc.data, weightGradAcc.dtype, biasGradAcc.data,
                    biasGradAcc.dtype,  weightGrad.data,     weightGrad.dtype,
                    biasGrad.data,      biasGrad.dtype};
  backwardFinalizeKernel<<<finalizeGrid(plan), dim3(kFinalizeChannels, kFinalizeLanes), 0,
                           stream>>>(ws.partDy, ws.partDyXhat, tile, plan.chunks, ws.sumDy,
                                     ws.sumDyXhat, grads);
  RN_CUDA_TRY_LAUNCH();
  // With the masked gradient stored, the dx pass reads it instead of
  // dy and the ReLU result.
  // (maskedOut comes only with reluResult, never with a recomputed mask.)
  const void *dxDy = maskedOut ? maskedData : dy.data;
  const void *dxRelu = maskedOut ? nullptr : reluData;
  return launchBackwardDx(dxDy, dxRelu, x, weight, mean, invStd, recompute, ws, dx, vec, stream);
}

} // namespace

//===----------------------------------------------------------------------===//
// Exported entry points
//===----------------------------------------------------------------------===//

NormKernelTuning normKernelTuning() { return tuning(); }

Status setNormKernelTuning(const NormKernelTuning &t) {
  if (Status s = checkTuning(t); !s.ok())
    return Error("setNormKernelTuning: " + s.error().message());
  tuning() = t;
  return Status::success();
}

Result<NormKernelOccupancy> normKernelOccupancy(DType dtype) {
  const int element = int(elementSize(dtype));
  const void *statsPartial = nullptr, *apply = nullptr, *backwardPartial = nullptr,
             *backwardApply = nullptr;
  withVariant(dtype, tuning().statsVecBytes / element, tuning().statsRows, [&](auto variant) {
    using T = typename decltype(variant)::Type;
    constexpr int V = decltype(variant)::vec, U = decltype(variant)::rows;
    statsPartial = reinterpret_cast<const void *>(&statsPartialKernel<T, V, U>);
  });
  withVariant(dtype, tuning().applyVecBytes / element, tuning().applyRows, [&](auto variant) {
    using T = typename decltype(variant)::Type;
    constexpr int V = decltype(variant)::vec, U = decltype(variant)::rows;
    apply = reinterpret_cast<const void *>(&applyKernel<T, V, U>);
  });
  withVariant(dtype, tuning().backwardVecBytes / element, tuning().backwardRows,
              [&](auto variant) {
                using T = typename decltype(variant)::Type;
                constexpr int V = decltype(variant)::vec, U = decltype(variant)::rows;
                backwardPartial = reinterpret_cast<const void *>(&backwardPartialKernel<T, V, U>);
                backwardApply = reinterpret_cast<const void *>(&backwardApplyKernel<T, V, U>);
              });
  // At kThreads threads and the kernels' static shared memory.
  NormKernelOccupancy o;
  RN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o.statsPartial, statsPartial,
                                                            kThreads, 0));
  RN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o.apply, apply, kThreads, 0));
  RN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o.backwardPartial, backwardPartial,
                                                            kThreads, 0));
  RN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o.backwardApply, backwardApply,
                                                            kThreads, 0));
  return o;
}

Status bnFinalizeStats(const float *sum, const float *sumSq, int64_t channels, int64_t count,
                       double epsilon, const DeviceTensor &batchMean,
                       const DeviceTensor &batchInvStd, cudaStream_t stream) {
  Checker check("bnFinalizeStats");
  check.that(count > 0, "count must be positive, got " + std::to_string(count))
      .that(epsilon >= 0, "epsilon must be non-negative")
      .f32Vector("batch_mean", batchMean, channels)
      .f32Vector("batch_inv_std", batchInvStd, channels);
  if (check.failed())
    return check.error();
  if (channels == 0)
    return Status::success();
  finalizeFromSumsKernel<<<unsigned(ceilDiv(channels, 256)), 256, 0, stream>>>(
      sum, sumSq, channels, count, epsilon, static_cast<float *>(batchMean.data),
      static_cast<float *>(batchInvStd.data));
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status bnScaleBias(const DeviceTensor &mean, const DeviceTensor &invStd, const DeviceTensor &gamma,
                   const DeviceTensor &beta, const DeviceTensor &scale, const DeviceTensor &bias,
                   cudaStream_t stream) {
  Checker check("bnScaleBias");
  const int64_t C = mean.numel();
  check.f32Vector("batch_mean", mean, C)
      .f32Vector("batch_inv_std", invStd, C)
      .vector("gamma", gamma, C)
      .vector("beta", beta, C)
      .vector("scale", scale, C)
      .vector("bias", bias, C)
      .that(mean.rank() == 1, "batch_mean must have rank 1, got " + std::to_string(mean.rank()))
      .that(scale.dtype == bias.dtype, "scale and bias must have one dtype, got " +
                                           std::string(dtypeName(scale.dtype)) + " and " +
                                           std::string(dtypeName(bias.dtype)));
  if (check.failed())
    return check.error();
  if (C == 0)
    return Status::success();
  const unsigned blocks = unsigned(ceilDiv(C, 256));
  auto launch = [&](auto *typed) {
    using T = std::remove_pointer_t<decltype(typed)>;
    bnScaleBiasKernel<T><<<blocks, 256, 0, stream>>>(
        static_cast<const float *>(mean.data), static_cast<const float *>(invStd.data),
        gamma.data, gamma.dtype, beta.data, beta.dtype, C, static_cast<T *>(scale.data),
        static_cast<T *>(bias.data));
  };
  switch (scale.dtype) {
  case DType::f16:
    launch(static_cast<__half *>(nullptr));
    break;
  case DType::bf16:
    launch(static_cast<__nv_bfloat16 *>(nullptr));
    break;
  default:
    launch(static_cast<float *>(nullptr));
    break;
  }
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

size_t bnStatsWorkspaceBytes(const std::vector<int64_t> &xShape) {
  RowPlan plan = rowPlanOf(xShape, tuning().statsBlocks);
  return plan.chunks == 0 ? 0 : 2 * partialBytes(plan);
}

Status bnBatchStats(const DeviceTensor &x, double epsilon, const DeviceTensor &batchMean,
                    const DeviceTensor &batchInvStd, cudaStream_t stream, void *workspace,
                    size_t workspaceBytes) {
  Checker check("bnBatchStats");
  check.activation("input", x).that(epsilon >= 0, "epsilon must be non-negative");
  if (check.failed())
    return check.error();
  const int64_t C = x.shape.back();
  size_t needed = bnStatsWorkspaceBytes(x.shape);
  check.f32Vector("batch_mean", batchMean, C)
      .f32Vector("batch_inv_std", batchInvStd, C)
      .that(workspaceBytes >= needed && (workspace != nullptr || needed == 0),
            "needs " + std::to_string(needed) + " workspace bytes, has " +
                std::to_string(workspaceBytes));
  if (check.failed())
    return check.error();
  RowPlan plan = rowPlanOf(x.shape, tuning().statsBlocks);
  if (plan.chunks == 0)
    return Status::success();
  StatsWorkspace ws = statsWorkspace(plan, workspace);
  int vec = pickVec(plan.channels, elementSize(x.dtype), {x.data},
                    tuning().statsVecBytes / int(elementSize(x.dtype)));
  Geometry g = geometryOf(plan, vec);
  Tile tile = tileOf(plan);
  withVariant(x.dtype, vec, tuning().statsRows, [&](auto variant) {
    using T = typename decltype(variant)::Type;
    constexpr int V = decltype(variant)::vec, U = decltype(variant)::rows;
    statsPartialKernel<T, V, U><<<g.grid, g.block, 0, stream>>>(
        static_cast<const T *>(x.data), tile, ws.partMean, ws.partM2);
  });
  RN_CUDA_TRY_LAUNCH();
  statsFinalizeKernel<<<finalizeGrid(plan), dim3(kFinalizeChannels, kFinalizeLanes), 0,
                        stream>>>(ws.partMean, ws.partM2, tile, plan.chunks, epsilon,
                                  static_cast<float *>(batchMean.data),
                                  static_cast<float *>(batchInvStd.data));
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status bnApply(const DeviceTensor &x, const DeviceTensor &weight, const DeviceTensor &bias,
               const DeviceTensor &mean, const DeviceTensor &invStd, bool relu,
               const DeviceTensor &y, cudaStream_t stream) {
  Checker check("bnApply");
  check.activation("input", x).sameAs("result", y, x);
  if (check.failed())
    return check.error();
  const int64_t C = x.shape.back();
  check.vector("weight", weight, C)
      .vector("bias", bias, C)
      .f32Vector("batch_mean", mean, C)
      .f32Vector("batch_inv_std", invStd, C);
  if (check.failed())
    return check.error();
  return applyChecked(x, nullptr, y, trainingAffine(weight, bias, mean, invStd), relu,
                      stream);
}

Status bnApplyAddRelu(const DeviceTensor &x, const DeviceTensor &weight, const DeviceTensor &bias,
                      const DeviceTensor &mean, const DeviceTensor &invStd,
                      const DeviceTensor &shortcut, const DeviceTensor &y, cudaStream_t stream) {
  Checker check("bnApplyAddRelu");
  check.activation("input", x).sameAs("shortcut", shortcut, x).sameAs("result", y, x);
  if (check.failed())
    return check.error();
  const int64_t C = x.shape.back();
  check.vector("gamma", weight, C)
      .vector("beta", bias, C)
      .f32Vector("batch_mean", mean, C)
      .f32Vector("batch_inv_std", invStd, C);
  if (check.failed())
    return check.error();
  return applyChecked(x, &shortcut, y,
                      trainingAffine(weight, bias, mean, invStd), true, stream);
}

size_t bnBackwardWorkspaceBytes(const std::vector<int64_t> &xShape) {
  RowPlan plan = rowPlanOf(xShape, tuning().backwardBlocks);
  return plan.chunks == 0 ? 0 : 2 * partialBytes(plan) + 2 * vectorBytes(plan);
}

Status bnBackward(const DeviceTensor &dy, const DeviceTensor *reluResult,
                  const DeviceTensor *reluBeta, const DeviceTensor &x, const DeviceTensor &weight,
                  const DeviceTensor &mean, const DeviceTensor &invStd,
                  const DeviceTensor &weightGradAcc, const DeviceTensor &biasGradAcc,
                  const DeviceTensor &dx, const DeviceTensor &weightGrad,
                  const DeviceTensor &biasGrad, cudaStream_t stream, void *workspace,
                  size_t workspaceBytes, bool prologueMask) {
  return backwardChecked("bnBackward", dy, reluResult, reluBeta, x, weight, mean, invStd,
                         weightGradAcc, biasGradAcc, dx, nullptr, weightGrad, biasGrad, stream,
                         workspace, workspaceBytes, prologueMask);
}

// The gradients' update and the dx pass of backwardChecked, with the sums
// given as partials: the finalize kernel adds their rows as it adds the
// partial pass's chunks, and keeps the sums in the workspace, where the dx
// pass reads them.
Status bnBackwardFromSums(const DeviceTensor &g, const DeviceTensor &x,
                          const DeviceTensor &weight, const DeviceTensor &mean,
                          const DeviceTensor &invStd, const DeviceTensor &sumG,
                          const DeviceTensor &sumGXhat, const DeviceTensor &weightGradAcc,
                          const DeviceTensor &biasGradAcc, const DeviceTensor &dx,
                          const DeviceTensor &weightGrad, const DeviceTensor &biasGrad,
                          cudaStream_t stream, void *workspace, size_t workspaceBytes) {
  Checker check("bnBackwardFromSums");
  check.activation("input", x).sameAs("output_grad", g, x).sameAs("input_grad", dx, x);
  if (check.failed())
    return check.error();
  checkBackwardOperands(check, x, weight, mean, invStd, weightGradAcc, biasGradAcc, weightGrad,
                        biasGrad, workspace, workspaceBytes);
  const int64_t C = x.shape.back();
  // [rows, C] partials, or [C]: the sums.
  auto partials = [&](const char *name, const DeviceTensor &t) {
    check.that(t.dtype == DType::f32 && t.rank() >= 1 && t.rank() <= 2 && t.shape.back() == C &&
                   t.data != nullptr,
               std::string(name) + " must be f32 [rows, " + std::to_string(C) + "] or [" +
                   std::to_string(C) + "]");
  };
  partials("sum_output_grad", sumG);
  partials("sum_output_grad_xhat", sumGXhat);
  check.that(sumG.shape == sumGXhat.shape,
             "sum_output_grad and sum_output_grad_xhat must have one shape");
  if (check.failed())
    return check.error();

  const RowPlan plan = rowPlanOf(x.shape, tuning().applyBlocks);
  if (plan.chunks == 0)
    return Status::success();
  BackwardWorkspace ws = backwardWorkspace(rowPlanOf(x.shape, tuning().backwardBlocks), workspace);
  const Tile tile = tileOf(plan);
  GradVectors grads{weightGradAcc.data, weightGradAcc.dtype, biasGradAcc.data,
                    biasGradAcc.dtype,  weightGrad.data,     weightGrad.dtype,
                    biasGrad.data,      biasGrad.dtype};
  backwardFinalizeKernel<<<finalizeGrid(plan), dim3(kFinalizeChannels, kFinalizeLanes), 0,
                           stream>>>(static_cast<const float *>(sumG.data),
                                     static_cast<const float *>(sumGXhat.data), tile,
                                     /*chunks=*/sumG.numel() / C, ws.sumDy, ws.sumDyXhat, grads);
  RN_CUDA_TRY_LAUNCH();
  const int vec = pickVec(plan.channels, elementSize(x.dtype), {g.data, x.data, dx.data},
                          tuning().backwardVecBytes / int(elementSize(x.dtype)));
  const ReluRecompute noMask{weight.data, weight.dtype, nullptr, DType::f32, false};
  return launchBackwardDx(g.data, nullptr, x, weight, mean, invStd, noMask, ws, dx, vec, stream);
}

Status bnAddReluBackward(const DeviceTensor &dy, const DeviceTensor &reluResult,
                         const DeviceTensor &x, const DeviceTensor &weight,
                         const DeviceTensor &mean, const DeviceTensor &invStd,
                         const DeviceTensor &weightGradAcc, const DeviceTensor &biasGradAcc,
                         const DeviceTensor &dx, const DeviceTensor &shortcutGrad,
                         const DeviceTensor &weightGrad, const DeviceTensor &biasGrad,
                         cudaStream_t stream, void *workspace, size_t workspaceBytes) {
  return backwardChecked("bnAddReluBackward", dy, &reluResult, nullptr, x, weight, mean, invStd,
                         weightGradAcc, biasGradAcc, dx, &shortcutGrad, weightGrad, biasGrad,
                         stream, workspace, workspaceBytes, false);
}

Status bnInference(const DeviceTensor &x, const DeviceTensor &weight, const DeviceTensor &bias,
                   const DeviceTensor &runningMean, const DeviceTensor &runningVar,
                   double epsilon, bool relu, const DeviceTensor &y, cudaStream_t stream) {
  Checker check("bnInference");
  check.activation("input", x).sameAs("result", y, x).that(epsilon >= 0,
                                                           "epsilon must be non-negative");
  if (check.failed())
    return check.error();
  const int64_t C = x.shape.back();
  check.vector("weight", weight, C)
      .vector("bias", bias, C)
      .vector("running_mean", runningMean, C)
      .vector("running_var", runningVar, C);
  if (check.failed())
    return check.error();
  return applyChecked(x, nullptr, y,
                      inferenceAffine(weight, bias, runningMean, runningVar, epsilon), relu,
                      stream);
}

Status bnInferenceAddRelu(const DeviceTensor &x, const DeviceTensor &weight,
                          const DeviceTensor &bias, const DeviceTensor &runningMean,
                          const DeviceTensor &runningVar, const DeviceTensor &shortcut,
                          double epsilon, const DeviceTensor &y, cudaStream_t stream) {
  Checker check("bnInferenceAddRelu");
  check.activation("input", x)
      .sameAs("shortcut", shortcut, x)
      .sameAs("result", y, x)
      .that(epsilon >= 0, "epsilon must be non-negative");
  if (check.failed())
    return check.error();
  const int64_t C = x.shape.back();
  check.vector("gamma", weight, C)
      .vector("beta", bias, C)
      .vector("running_mean", runningMean, C)
      .vector("running_var", runningVar, C);
  if (check.failed())
    return check.error();
  return applyChecked(x, &shortcut, y,
                      inferenceAffine(weight, bias, runningMean, runningVar, epsilon), true,
                      stream);
}

Status bnUpdateRunningStats(const DeviceTensor &runningMean, const DeviceTensor &runningVar,
                            const DeviceTensor &batchMean, const DeviceTensor &batchInvStd,
                            double epsilon, double momentum, int64_t count,
                            const DeviceTensor &newRunningMean,
                            const DeviceTensor &newRunningVar, cudaStream_t stream) {
  Checker check("bnUpdateRunningStats");
  const int64_t C = runningMean.numel();
  check.vector("running_mean", runningMean, C)
      .vector("running_var", runningVar, C)
      .f32Vector("batch_mean", batchMean, C)
      .f32Vector("batch_inv_std", batchInvStd, C)
      .vector("new_running_mean", newRunningMean, C)
      .vector("new_running_var", newRunningVar, C)
      .that(runningVar.dtype == runningMean.dtype && newRunningMean.dtype == runningMean.dtype &&
                newRunningVar.dtype == runningMean.dtype,
            "the running statistics and their results must share one dtype")
      .that(count >= 2, "count must be at least 2 (the unbiased variance divides by count - 1), "
                        "got " + std::to_string(count));
  if (check.failed())
    return check.error();
  if (C == 0)
    return Status::success();
  double unbias = double(count) / double(count - 1);
  runningStatsKernel<<<unsigned(ceilDiv(C, 256)), 256, 0, stream>>>(
      runningMean.data, runningVar.data, runningMean.dtype,
      static_cast<const float *>(batchMean.data), static_cast<const float *>(batchInvStd.data), C,
      epsilon, momentum, unbias, newRunningMean.data, newRunningVar.data);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

} // namespace rn::cuda
