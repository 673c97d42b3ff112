//===- update_kernels.cu - Loss scaling and optimizer kernels -------------===//
//
// Elementwise updates over packs of 16 bytes (4 f32 or 8 f16/bf16 values
// per load) when every pointer of the call is 16-byte aligned, single
// elements otherwise; the last pack of a tensor may be partial. All tensors
// of one optimizer call share one dtype (the dialect's verifiers require
// it). Kernels read their scalars and the skip flag from device memory
// first; a skipped in-place update returns before touching memory.
//
// The optimizer arithmetic is written with the rounding intrinsics
// (__fmaf_rn, __fmul_rn, __fsub_rn, ...), never as plain a * b + c:
// whether nvcc (-fmad=true) contracts a plain multiply and add into an FMA
// depends on the code around them (unrolling, where a conditional load
// lands). The same sgd source once rounded momentum * b + d as FMUL + FADD
// in multiSgdKernel's unrolled single-element loop and as one FFMA in
// sgdKernel. The intrinsics are never contracted or split, so every kernel
// and every path (16-byte packs, single elements, tails) rounds each
// element the same way. The CPU reference computes in double and rounds
// only what it stores: the GPU matches it within a tolerance, not bit for
// bit, and FMAs (one rounding) keep it closer than mul + add would.
//
// LARS's norms are a two-stage deterministic reduction: a fixed number of
// blocks (a function of the element count alone) write per-block sums of
// squares in double to the workspace; every block of the update kernel
// then sums those partials in the same fixed order, so all blocks agree on
// the trust ratio bit for bit. multi_lars_update cuts each tensor into the
// same blocks (one launch computes the partials of every tensor of the
// group, one the trust ratios and the update) and shares the per-block and
// per-element code, so its results are lars_update's bit for bit.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/update_kernels.h"

#include "runtime/cuda/check.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include "runtime/cuda/device_element.cuh"

namespace rn::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 8192;
constexpr int kLarsMaxBlocks = 512;
/// Elements one check_finite block covers (16 per thread).
constexpr int kFiniteElementsPerThread = 16;
constexpr int64_t kFiniteElementsPerBlock = int64_t(kThreads) * kFiniteElementsPerThread;
/// Tensors per check_finite launch (the batch travels as a kernel argument,
/// which must stay under 4 KiB).
constexpr int kFiniteBatch = 64;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//


/// Elements [i, i + V) of a tensor of n elements (those past n read as 0):
/// one load when the pack is whole.
template <typename T, int V>
__device__ __forceinline__ void loadSome(const T *p, int64_t i, int64_t n, float (&out)[V]) {
  if (i + V <= n) {
    using Raw = typename RawVec<sizeof(T) * V>::type;
    Raw raw = *reinterpret_cast<const Raw *>(p + i);
    const T *e = reinterpret_cast<const T *>(&raw);
#pragma unroll
    for (int v = 0; v < V; ++v)
      out[v] = toFloat<T>(e[v]);
  } else {
#pragma unroll
    for (int v = 0; v < V; ++v)
      out[v] = i + v < n ? toFloat<T>(p[i + v]) : 0.f;
  }
}

template <typename T, int V>
__device__ __forceinline__ void storeSome(T *p, int64_t i, int64_t n, const float (&in)[V]) {
  if (i + V <= n) {
    using Raw = typename RawVec<sizeof(T) * V>::type;
    Raw raw;
    T *e = reinterpret_cast<T *>(&raw);
#pragma unroll
    for (int v = 0; v < V; ++v)
      e[v] = fromFloat<T>(in[v]);
    *reinterpret_cast<Raw *>(p + i) = raw;
  } else {
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (i + v < n)
        p[i + v] = fromFloat<T>(in[v]);
  }
}

/// A flag tensor on the device; null: never set.
struct Flag {
  const void *data;
  DType type;
};

__device__ __forceinline__ bool flagSet(Flag flag) {
  if (!flag.data)
    return false;
  switch (flag.type) {
  case DType::i1:
    return *static_cast<const uint8_t *>(flag.data) != 0;
  case DType::i32:
    return *static_cast<const int32_t *>(flag.data) != 0;
  default:
    return *static_cast<const float *>(flag.data) != 0.f;
  }
}

/// Grid-stride loop over the packs of an n-element tensor.
#define RN_FOR_EACH_PACK(i, n, V)                                                            \
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * (V); i < (n);          \
       i += int64_t(gridDim.x) * blockDim.x * (V))

/// Copies `from` to `to` unless they are the same memory (a skipped update).
template <typename T, int V>
__device__ __forceinline__ void copyPack(const T *from, T *to, int64_t i, int64_t n) {
  if (from == to)
    return;
  float values[V];
  loadSome<T, V>(from, i, n, values);
  storeSome<T, V>(to, i, n, values);
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// The tensors of one check_finite launch and the first block of each.
struct FiniteBatch {
  const void *data[kFiniteBatch];
  int64_t numel[kFiniteBatch];
  int64_t firstBlock[kFiniteBatch + 1];
  DType type[kFiniteBatch];
  int count;
};

__device__ __forceinline__ bool nonFiniteAt(const void *data, DType type, int64_t i) {
  if (type == DType::f32)
    return (static_cast<const uint32_t *>(data)[i] & 0x7f800000u) == 0x7f800000u;
  uint16_t bits = static_cast<const uint16_t *>(data)[i];
  return type == DType::f16 ? (bits & 0x7c00u) == 0x7c00u : (bits & 0x7f80u) == 0x7f80u;
}

__global__ void __launch_bounds__(kThreads)
    checkFiniteKernel(const FiniteBatch batch, void *flag, DType flagType) {
  const int64_t b = blockIdx.x;
  int lo = 0, hi = batch.count - 1; // the tensor t with firstBlock[t] <= b < firstBlock[t + 1]
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (batch.firstBlock[mid] <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  const void *data = batch.data[lo];
  const DType type = batch.type[lo];
  const int64_t n = batch.numel[lo];
  const int64_t begin = (b - batch.firstBlock[lo]) * kFiniteElementsPerBlock + threadIdx.x;
  bool bad = false;
#pragma unroll
  for (int k = 0; k < kFiniteElementsPerThread; ++k) {
    int64_t i = begin + int64_t(k) * kThreads;
    if (i < n)
      bad |= nonFiniteAt(data, type, i);
  }
  // Every block that finds one writes the same value: no reduction needed.
  if (__syncthreads_or(bad) && threadIdx.x == 0) {
    switch (flagType) {
    case DType::i1:
      *static_cast<uint8_t *>(flag) = 1;
      break;
    case DType::i32:
      *static_cast<int32_t *>(flag) = 1;
      break;
    default:
      *static_cast<float *>(flag) = 1.f;
      break;
    }
  }
}

/// Elements [i, i + V) of an EMA (clipped to n), shared by the per-tensor
/// and the multi-tensor kernel: decay a + (1 - decay) p, with explicit
/// roundings (see the top).
template <typename T, int V>
__device__ __forceinline__ void emaPack(const T *average, const T *param, T *newAverage,
                                        int64_t i, int64_t n, float decay, float oneMinusDecay) {
  float a[V], p[V];
  loadSome<T, V>(average, i, n, a);
  loadSome<T, V>(param, i, n, p);
#pragma unroll
  for (int v = 0; v < V; ++v)
    a[v] = __fmaf_rn(decay, a[v], __fmul_rn(oneMinusDecay, p[v]));
  storeSome<T, V>(newAverage, i, n, a);
}

/// Elements [i, i + V) of an unscale (clipped to n): one formula for the
/// per-tensor and the multi-tensor kernel, so their bits agree.
template <typename T, int V>
__device__ __forceinline__ void unscalePack(const T *grad, T *result, int64_t i, int64_t n,
                                            float s) {
  float g[V];
  loadSome<T, V>(grad, i, n, g);
#pragma unroll
  for (int v = 0; v < V; ++v)
    g[v] = __fdiv_rn(g[v], s); // IEEE division
  storeSome<T, V>(result, i, n, g);
}

template <typename T, int V>
__global__ void __launch_bounds__(kThreads)
    unscaleKernel(const T *grad, const float *scale, T *result, int64_t n) {
  const float s = *scale;
  RN_FOR_EACH_PACK(i, n, V) { unscalePack<T, V>(grad, result, i, n, s); }
}

__global__ void lossScaleKernel(const float *scale, const int32_t *goodSteps, Flag found,
                                double growth, double backoff, int64_t growthInterval,
                                float *newScale, int32_t *newGoodSteps) {
  // Read everything before writing: the results may alias the operands.
  const float s = *scale;
  const int32_t good = *goodSteps;
  float nextScale = s;
  int32_t nextGood = 0;
  if (flagSet(found)) {
    nextScale = static_cast<float>(double(s) * backoff);
  } else {
    int64_t successful = int64_t(good) + 1;
    if (successful >= growthInterval) {
      float grown = static_cast<float>(double(s) * growth);
      if (isfinite(grown))
        nextScale = grown;
    } else {
      nextGood = static_cast<int32_t>(successful);
    }
  }
  *newScale = nextScale;
  *newGoodSteps = nextGood;
}

/// One element of SGD, shared by sgdKernel and multiSgdKernel so that both
/// compute the same bits: p and (with a buffer) b are updated; the buffer is
/// rounded to T before the step reads it, as the CPU reference stores it.
template <typename T>
__device__ __forceinline__ void sgdElement(float &p, float g, float &b, bool hasBuffer,
                                           float rate, float momentum, float weightDecay,
                                           bool nesterov) {
  // Explicit FMAs (one rounding each, nearest to the CPU's double): plain
  // a * b + c is contracted or not depending on the kernel (see the top).
  float d = __fmaf_rn(weightDecay, p, g); // g + weightDecay * p
  float step = d;
  if (hasBuffer) {
    b = roundAs<T>(__fmaf_rn(momentum, b, d));       // momentum * b + d
    step = nesterov ? __fmaf_rn(momentum, b, d) : b; // d + momentum * b
  }
  p = __fmaf_rn(-rate, step, p); // p - rate * step
}

template <typename T, int V>
__global__ void __launch_bounds__(kThreads)
    sgdKernel(const T *param, const T *grad, const T *buffer, const float *lr, Flag skip,
              T *newParam, T *newBuffer, int64_t n, float momentum, float weightDecay,
              bool nesterov) {
  if (flagSet(skip)) {
    if (param == newParam && buffer == newBuffer)
      return;
    RN_FOR_EACH_PACK(i, n, V) {
      copyPack<T, V>(param, newParam, i, n);
      if (buffer)
        copyPack<T, V>(buffer, newBuffer, i, n);
    }
    return;
  }
  const float rate = *lr;
  RN_FOR_EACH_PACK(i, n, V) {
    float p[V], g[V], b[V];
    loadSome<T, V>(param, i, n, p);
    loadSome<T, V>(grad, i, n, g);
    if (buffer)
      loadSome<T, V>(buffer, i, n, b);
#pragma unroll
    for (int v = 0; v < V; ++v)
      sgdElement<T>(p[v], g[v], b[v], buffer != nullptr, rate, momentum, weightDecay, nesterov);
    if (buffer)
      storeSome<T, V>(newBuffer, i, n, b);
    storeSome<T, V>(newParam, i, n, p);
  }
}

/// One tensor of a multi-tensor update group, as the device table holds
/// it: SGD reads param, grad, [buffer] and writes param, [buffer]; AdamW
/// reads param, grad, exp_avg, exp_avg_sq and writes the last three's
/// new values (in[0], in[2], in[3] -> out[0], out[1], out[2]); zero,
/// unscale and cast read in[0] (EMA also its param, in[1]) and write out[0].
struct MultiTensor {
  const void *in[4]; ///< null where the op has no such operand
  void *out[3];
  int64_t numel;
  int32_t packed;  ///< every pointer 16-byte aligned: 16-byte packs
  int32_t inPlace; ///< every result is the operand it updates
};

/// One block's work: elements [chunk * chunkSize, (chunk + 1) * chunkSize)
/// of tensor `tensor` (clipped to its size).
struct MultiTensorChunk {
  int32_t tensor;
  int32_t chunk;
};
static_assert(sizeof(MultiTensor) % alignof(MultiTensorChunk) == 0);

/// The work of block b of a multi-tensor kernel: chunk b of the table,
/// elements [begin, end) of its tensor.
struct BlockChunk {
  MultiTensor t;
  int64_t begin, end;
};

__device__ __forceinline__ BlockChunk blockChunk(const MultiTensor *tensors,
                                                 const MultiTensorChunk *chunks,
                                                 int64_t chunkSize) {
  const MultiTensorChunk c = chunks[blockIdx.x];
  const MultiTensor t = tensors[c.tensor];
  const int64_t begin = int64_t(c.chunk) * chunkSize;
  return BlockChunk{t, begin, min(begin + chunkSize, t.numel)};
}

/// Calls fn(width, i) for the packs of the block's chunk this thread
/// handles: packs of V elements where every pointer of the tensor is 16-byte
/// aligned, single elements (width 1) otherwise; `width` is a
/// std::integral_constant, so fn instantiates its loads for both.
template <int V, typename Fn>
__device__ __forceinline__ void forEachPackOfChunk(const BlockChunk &c, Fn &&fn) {
  if (c.t.packed)
    for (int64_t i = c.begin + int64_t(threadIdx.x) * V; i < c.end; i += int64_t(blockDim.x) * V)
      fn(std::integral_constant<int, V>{}, i);
  else
    for (int64_t i = c.begin + int64_t(threadIdx.x); i < c.end; i += int64_t(blockDim.x))
      fn(std::integral_constant<int, 1>{}, i);
}

/// A set skip flag: copies the state a tensor updates to its out-of-place
/// results, elements [begin, end) in packs of V.
template <typename T, int V>
__device__ __forceinline__ void multiCopyRange(const MultiTensor &t, int count, int64_t begin,
                                               int64_t end) {
  // The updated operand of result k: in[0] (param), then the state.
  const int from[3] = {0, 2, 3};
  for (int64_t i = begin + int64_t(threadIdx.x) * V; i < end; i += int64_t(blockDim.x) * V)
    for (int k = 0; k < count; ++k)
      if (t.out[k])
        copyPack<T, V>(static_cast<const T *>(t.in[from[k]]), static_cast<T *>(t.out[k]), i,
                       end);
}

/// Elements [begin, end) of one tensor, in packs of V from `begin` (a
/// multiple of V).
template <typename T, int V>
__device__ __forceinline__ void multiSgdRange(const MultiTensor &t, int64_t begin, int64_t end,
                                              float rate, float momentum, float weightDecay,
                                              bool nesterov) {
  const T *param = static_cast<const T *>(t.in[0]);
  const T *grad = static_cast<const T *>(t.in[1]);
  const T *buffer = static_cast<const T *>(t.in[2]);
  T *newParam = static_cast<T *>(t.out[0]);
  T *newBuffer = static_cast<T *>(t.out[1]);
  for (int64_t i = begin + int64_t(threadIdx.x) * V; i < end; i += int64_t(blockDim.x) * V) {
    float p[V], g[V], b[V];
    loadSome<T, V>(param, i, end, p);
    loadSome<T, V>(grad, i, end, g);
    if (buffer)
      loadSome<T, V>(buffer, i, end, b);
#pragma unroll
    for (int v = 0; v < V; ++v)
      sgdElement<T>(p[v], g[v], b[v], buffer != nullptr, rate, momentum, weightDecay, nesterov);
    if (buffer)
      storeSome<T, V>(newBuffer, i, end, b);
    storeSome<T, V>(newParam, i, end, p);
  }
}

/// multi_sgd_update: block b updates chunk b of the table. A set skip flag
/// leaves in-place tensors alone and copies the others.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    multiSgdKernel(const MultiTensor *tensors, const MultiTensorChunk *chunks, int64_t chunkSize,
                   const float *lr, Flag skip, float momentum, float weightDecay, bool nesterov) {
  constexpr int V = int(16 / sizeof(T));
  const auto [t, begin, end] = blockChunk(tensors, chunks, chunkSize);
  if (flagSet(skip)) {
    if (t.inPlace)
      return;
    if (t.packed)
      multiCopyRange<T, V>(t, 2, begin, end);
    else
      multiCopyRange<T, 1>(t, 2, begin, end);
    return;
  }
  const float rate = *lr;
  if (t.packed)
    multiSgdRange<T, V>(t, begin, end, rate, momentum, weightDecay, nesterov);
  else
    multiSgdRange<T, 1>(t, begin, end, rate, momentum, weightDecay, nesterov);
}

/// multi_zero: zeroes the table's results (out[0]).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    multiZeroKernel(const MultiTensor *tensors, const MultiTensorChunk *chunks, int64_t chunkSize) {
  const BlockChunk c = blockChunk(tensors, chunks, chunkSize);
  T *result = static_cast<T *>(c.t.out[0]);
  forEachPackOfChunk<int(16 / sizeof(T))>(c, [&](auto width, int64_t i) {
    const float zeros[decltype(width)::value] = {};
    storeSome<T, decltype(width)::value>(result, i, c.end, zeros);
  });
}

/// multi_ema_update: averages the table's params (in[1]) into their
/// averages (in[0] -> out[0]).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    multiEmaKernel(const MultiTensor *tensors, const MultiTensorChunk *chunks, int64_t chunkSize,
                   float decay, float oneMinusDecay) {
  const BlockChunk c = blockChunk(tensors, chunks, chunkSize);
  const T *average = static_cast<const T *>(c.t.in[0]);
  const T *param = static_cast<const T *>(c.t.in[1]);
  T *result = static_cast<T *>(c.t.out[0]);
  forEachPackOfChunk<int(16 / sizeof(T))>(c, [&](auto width, int64_t i) {
    emaPack<T, decltype(width)::value>(average, param, result, i, c.end, decay, oneMinusDecay);
  });
}

/// multi_cast: converts the table's inputs (in[0], type T) into their
/// results (out[0], type U), rounding as the per-tensor cast; packs of 16
/// bytes of the wider type.
template <typename T, typename U>
__global__ void __launch_bounds__(kThreads)
    multiCastKernel(const MultiTensor *tensors, const MultiTensorChunk *chunks, int64_t chunkSize) {
  constexpr int V = int(16 / (sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U)));
  const BlockChunk c = blockChunk(tensors, chunks, chunkSize);
  const T *input = static_cast<const T *>(c.t.in[0]);
  U *result = static_cast<U *>(c.t.out[0]);
  forEachPackOfChunk<V>(c, [&](auto width, int64_t i) {
    constexpr int W = decltype(width)::value;
    float x[W];
    loadSome<T, W>(input, i, c.end, x);
    storeSome<U, W>(result, i, c.end, x);
  });
}

/// multi_unscale: divides the table's gradients by the scale with
/// unscaleKernel's formula (in[0] -> out[0]).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    multiUnscaleKernel(const MultiTensor *tensors, const MultiTensorChunk *chunks,
                       int64_t chunkSize, const float *scale) {
  const BlockChunk c = blockChunk(tensors, chunks, chunkSize);
  const T *grad = static_cast<const T *>(c.t.in[0]);
  T *result = static_cast<T *>(c.t.out[0]);
  const float s = *scale;
  forEachPackOfChunk<int(16 / sizeof(T))>(c, [&](auto width, int64_t i) {
    unscalePack<T, decltype(width)::value>(grad, result, i, c.end, s);
  });
}

/// What every element of an AdamW step uses, from the step's lr and step
/// count (the same in every block and in both AdamW kernels).
struct AdamWScalars {
  float stepSize, invBiasCorrection2Sqrt, lrTimesDecay, b1, c1, b2, c2;
};

__device__ __forceinline__ AdamWScalars adamwScalars(float lr, int32_t t, double beta1,
                                                     double beta2, double weightDecay) {
  const double rate = lr;
  const double biasCorrection1 = 1.0 - pow(beta1, double(t));
  AdamWScalars s;
  s.invBiasCorrection2Sqrt = static_cast<float>(1.0 / sqrt(1.0 - pow(beta2, double(t))));
  s.stepSize = static_cast<float>(rate / biasCorrection1);
  s.lrTimesDecay = static_cast<float>(rate * weightDecay);
  s.b1 = static_cast<float>(beta1);
  s.c1 = static_cast<float>(1.0 - beta1);
  s.b2 = static_cast<float>(beta2);
  s.c2 = static_cast<float>(1.0 - beta2);
  return s;
}

/// One element of AdamW, shared by adamwKernel and multiAdamwKernel.
template <typename T>
__device__ __forceinline__ void adamwElement(float &p, float g, float &m, float &v,
                                             const AdamWScalars &s, float epsilon) {
  // Every rounding spelled out (the ones nvcc chose for adamwKernel so
  // far): with two products in a sum, which one a plain expression fuses
  // into the FMA is the compiler's choice, and may differ between kernels.
  m = roundAs<T>(__fmaf_rn(s.c1, g, __fmul_rn(s.b1, m)));               // b1 m + c1 g
  v = roundAs<T>(__fmaf_rn(__fmul_rn(s.c2, g), g, __fmul_rn(s.b2, v))); // b2 v + c2 g g
  const float denom = __fmaf_rn(__fsqrt_rn(v), s.invBiasCorrection2Sqrt, epsilon);
  // The decay and the step as one difference, the decay fused into it.
  p = __fsub_rn(p, __fmaf_rn(p, s.lrTimesDecay, __fdiv_rn(__fmul_rn(s.stepSize, m), denom)));
}

template <typename T, int V>
__global__ void __launch_bounds__(kThreads)
    adamwKernel(const T *param, const T *grad, const T *expAvg, const T *expAvgSq,
                const float *lr, const int32_t *step, Flag skip, T *newParam, T *newExpAvg,
                T *newExpAvgSq, int64_t n, double beta1, double beta2, float epsilon,
                double weightDecay) {
  if (flagSet(skip)) {
    if (param == newParam && expAvg == newExpAvg && expAvgSq == newExpAvgSq)
      return;
    RN_FOR_EACH_PACK(i, n, V) {
      copyPack<T, V>(param, newParam, i, n);
      copyPack<T, V>(expAvg, newExpAvg, i, n);
      copyPack<T, V>(expAvgSq, newExpAvgSq, i, n);
    }
    return;
  }
  const AdamWScalars scalars = adamwScalars(*lr, *step, beta1, beta2, weightDecay);
  RN_FOR_EACH_PACK(i, n, V) {
    float p[V], g[V], m[V], s[V];
    loadSome<T, V>(param, i, n, p);
    loadSome<T, V>(grad, i, n, g);
    loadSome<T, V>(expAvg, i, n, m);
    loadSome<T, V>(expAvgSq, i, n, s);
#pragma unroll
    for (int v = 0; v < V; ++v)
      adamwElement<T>(p[v], g[v], m[v], s[v], scalars, epsilon);
    storeSome<T, V>(newExpAvg, i, n, m);
    storeSome<T, V>(newExpAvgSq, i, n, s);
    storeSome<T, V>(newParam, i, n, p);
  }
}

template <typename T, int V>
__device__ __forceinline__ void multiAdamwRange(const MultiTensor &t, int64_t begin, int64_t end,
                                                const AdamWScalars &scalars, float epsilon) {
  const T *param = static_cast<const T *>(t.in[0]);
  const T *grad = static_cast<const T *>(t.in[1]);
  const T *expAvg = static_cast<const T *>(t.in[2]);
  const T *expAvgSq = static_cast<const T *>(t.in[3]);
  T *newParam = static_cast<T *>(t.out[0]);
  T *newExpAvg = static_cast<T *>(t.out[1]);
  T *newExpAvgSq = static_cast<T *>(t.out[2]);
  for (int64_t i = begin + int64_t(threadIdx.x) * V; i < end; i += int64_t(blockDim.x) * V) {
    float p[V], g[V], m[V], s[V];
    loadSome<T, V>(param, i, end, p);
    loadSome<T, V>(grad, i, end, g);
    loadSome<T, V>(expAvg, i, end, m);
    loadSome<T, V>(expAvgSq, i, end, s);
#pragma unroll
    for (int v = 0; v < V; ++v)
      adamwElement<T>(p[v], g[v], m[v], s[v], scalars, epsilon);
    storeSome<T, V>(newExpAvg, i, end, m);
    storeSome<T, V>(newExpAvgSq, i, end, s);
    storeSome<T, V>(newParam, i, end, p);
  }
}

/// multi_adamw_update: block b updates chunk b of the table.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    multiAdamwKernel(const MultiTensor *tensors, const MultiTensorChunk *chunks,
                     int64_t chunkSize, const float *lr, const int32_t *step, Flag skip,
                     double beta1, double beta2, float epsilon, double weightDecay) {
  constexpr int V = int(16 / sizeof(T));
  const auto [t, begin, end] = blockChunk(tensors, chunks, chunkSize);
  if (flagSet(skip)) {
    if (t.inPlace)
      return;
    if (t.packed)
      multiCopyRange<T, V>(t, 3, begin, end);
    else
      multiCopyRange<T, 1>(t, 3, begin, end);
    return;
  }
  const AdamWScalars scalars = adamwScalars(*lr, *step, beta1, beta2, weightDecay);
  if (t.packed)
    multiAdamwRange<T, V>(t, begin, end, scalars, epsilon);
  else
    multiAdamwRange<T, 1>(t, begin, end, scalars, epsilon);
}

/// Fixed-order tree sum of one double per thread; the block's sum in
/// thread 0 (and every thread, through `shared`).
__device__ __forceinline__ double blockSum(double value, double *shared) {
  shared[threadIdx.x] = value;
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    __syncthreads();
    if (threadIdx.x < s)
      shared[threadIdx.x] += shared[threadIdx.x + s];
  }
  __syncthreads();
  double total = shared[0];
  __syncthreads();
  return total;
}

/// Stage 1 of LARS for block `block` of the `blocks` a tensor's norms are
/// cut into: the sums of param^2 and grad^2 in double over the packs of the
/// grid-stride partition (pack i of the tensor goes to block i mod blocks),
/// written to partials[block] and partials[blocks + block]. The partition
/// is a function of the element count and the pack width alone, so the
/// per-tensor and the multi-tensor kernel compute the same sums. A float
/// squared is exact in double: contracting the sum into an FMA changes
/// nothing.
template <typename T, int V>
__device__ __forceinline__ void larsNormBlock(const T *param, const T *grad, int64_t n,
                                              int64_t block, int64_t blocks, double *partials,
                                              double *shared) {
  double paramSq = 0, gradSq = 0;
  for (int64_t i = (block * blockDim.x + threadIdx.x) * V; i < n;
       i += blocks * blockDim.x * V) {
    float p[V], g[V];
    loadSome<T, V>(param, i, n, p);
    loadSome<T, V>(grad, i, n, g);
#pragma unroll
    for (int v = 0; v < V; ++v) {
      paramSq += double(p[v]) * p[v];
      gradSq += double(g[v]) * g[v];
    }
  }
  paramSq = blockSum(paramSq, shared);
  gradSq = blockSum(gradSq, shared);
  if (threadIdx.x == 0) {
    partials[block] = paramSq;
    partials[blocks + block] = gradSq;
  }
}

/// Stage 2 of LARS, the trust ratio from a tensor's `blocks` partials:
/// every block of every kernel reads them in the same order and sums them
/// by the same tree, so all agree on it bit for bit. The double arithmetic
/// is rounded explicitly, like the float arithmetic (see the top).
__device__ __forceinline__ double larsLocalLr(const double *partials, int blocks,
                                              double weightDecay, double trust, double epsilon,
                                              double *shared) {
  double paramSq = 0, gradSq = 0;
  for (int j = threadIdx.x; j < blocks; j += kThreads) {
    paramSq += partials[j];
    gradSq += partials[blocks + j];
  }
  const double paramNorm = sqrt(blockSum(paramSq, shared));
  const double gradNorm = sqrt(blockSum(gradSq, shared));
  if (!(paramNorm > 0 && gradNorm > 0))
    return 1.0;
  // trust * |p| / (|g| + wd * |p| + eps)
  const double denominator =
      __dadd_rn(__dadd_rn(gradNorm, __dmul_rn(weightDecay, paramNorm)), epsilon);
  return __ddiv_rn(__dmul_rn(trust, paramNorm), denominator);
}

/// Elements [i, i + V) of a LARS update (clipped to n), shared by the
/// per-tensor and the multi-tensor kernel: buf = mom buf + local (g + wd p),
/// rounded to T before param -= rate buf reads it.
template <typename T, int V>
__device__ __forceinline__ void larsPack(const T *param, const T *grad, const T *buffer,
                                         T *newParam, T *newBuffer, int64_t i, int64_t n,
                                         float rate, float local, float mom, float wd) {
  float p[V], g[V], b[V];
  loadSome<T, V>(param, i, n, p);
  loadSome<T, V>(grad, i, n, g);
  loadSome<T, V>(buffer, i, n, b);
#pragma unroll
  for (int v = 0; v < V; ++v) {
    // Explicit roundings, the same in the packed and the unpacked path.
    const float d = __fmul_rn(local, __fmaf_rn(wd, p[v], g[v])); // local (g + wd p)
    b[v] = roundAs<T>(__fmaf_rn(mom, b[v], d));                  // mom b + d
    p[v] = __fmaf_rn(-rate, b[v], p[v]);                         // p - rate b
  }
  storeSome<T, V>(newBuffer, i, n, b);
  storeSome<T, V>(newParam, i, n, p);
}

/// Stage 1 of LARS: per block, sum(param^2) and sum(grad^2) in double.
template <typename T, int V>
__global__ void __launch_bounds__(kThreads)
    larsNormKernel(const T *param, const T *grad, int64_t n, double *partials) {
  __shared__ double shared[kThreads];
  larsNormBlock<T, V>(param, grad, n, blockIdx.x, gridDim.x, partials, shared);
}

/// Stage 2 of LARS: every block sums the partials (same order everywhere),
/// derives the trust ratio and updates its packs.
template <typename T, int V>
__global__ void __launch_bounds__(kThreads)
    larsUpdateKernel(const T *param, const T *grad, const T *buffer, const float *lr, Flag skip,
                     const double *partials, int partialBlocks, T *newParam, T *newBuffer,
                     int64_t n, double momentum, double weightDecay, double trust,
                     double epsilon) {
  __shared__ double shared[kThreads];
  if (flagSet(skip)) {
    if (param == newParam && buffer == newBuffer)
      return;
    RN_FOR_EACH_PACK(i, n, V) {
      copyPack<T, V>(param, newParam, i, n);
      copyPack<T, V>(buffer, newBuffer, i, n);
    }
    return;
  }
  const double localLr =
      larsLocalLr(partials, partialBlocks, weightDecay, trust, epsilon, shared);
  const float rate = *lr;
  const float local = static_cast<float>(localLr);
  const float mom = static_cast<float>(momentum), wd = static_cast<float>(weightDecay);
  RN_FOR_EACH_PACK(i, n, V) {
    larsPack<T, V>(param, grad, buffer, newParam, newBuffer, i, n, rate, local, mom, wd);
  }
}

/// Where a tensor of a multi_lars_update group keeps its stage-1 partials:
/// `blocks` sums of param^2 from double `offset` of the workspace, then
/// `blocks` sums of grad^2.
struct LarsNorm {
  int64_t offset;
  int32_t blocks;
  int32_t unused;
};

/// Stage 1 of multi_lars_update: block b computes norm block b of the
/// table (a MultiTensorChunk whose `chunk` is the block of its tensor), as
/// larsNormKernel's block of that index would. A set skip flag: stage 2
/// reads no partial, nothing to do.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    multiLarsNormKernel(const MultiTensor *tensors, const LarsNorm *norms,
                        const MultiTensorChunk *normBlocks, Flag skip, double *workspace) {
  __shared__ double shared[kThreads];
  if (flagSet(skip))
    return;
  const MultiTensorChunk b = normBlocks[blockIdx.x];
  const MultiTensor t = tensors[b.tensor];
  const LarsNorm norm = norms[b.tensor];
  const T *param = static_cast<const T *>(t.in[0]);
  const T *grad = static_cast<const T *>(t.in[1]);
  if (t.packed)
    larsNormBlock<T, int(16 / sizeof(T))>(param, grad, t.numel, b.chunk, norm.blocks,
                                          workspace + norm.offset, shared);
  else
    larsNormBlock<T, 1>(param, grad, t.numel, b.chunk, norm.blocks, workspace + norm.offset,
                        shared);
}

/// Stage 2 of multi_lars_update: block b reduces the partials of chunk b's
/// tensor to its trust ratio and updates the chunk. A set skip flag leaves
/// in-place tensors alone and copies the others.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    multiLarsUpdateKernel(const MultiTensor *tensors, const LarsNorm *norms,
                          const MultiTensorChunk *chunks, int64_t chunkSize, const float *lr,
                          Flag skip, const double *workspace, double momentum,
                          double weightDecay, double trust, double epsilon) {
  constexpr int V = int(16 / sizeof(T));
  __shared__ double shared[kThreads];
  const BlockChunk c = blockChunk(tensors, chunks, chunkSize);
  if (flagSet(skip)) {
    if (c.t.inPlace)
      return;
    if (c.t.packed)
      multiCopyRange<T, V>(c.t, 2, c.begin, c.end);
    else
      multiCopyRange<T, 1>(c.t, 2, c.begin, c.end);
    return;
  }
  const LarsNorm norm = norms[chunks[blockIdx.x].tensor];
  const double localLr =
      larsLocalLr(workspace + norm.offset, norm.blocks, weightDecay, trust, epsilon, shared);
  const float rate = *lr;
  const float local = static_cast<float>(localLr);
  const float mom = static_cast<float>(momentum), wd = static_cast<float>(weightDecay);
  const T *param = static_cast<const T *>(c.t.in[0]);
  const T *grad = static_cast<const T *>(c.t.in[1]);
  const T *buffer = static_cast<const T *>(c.t.in[2]);
  T *newParam = static_cast<T *>(c.t.out[0]);
  T *newBuffer = static_cast<T *>(c.t.out[1]);
  forEachPackOfChunk<V>(c, [&](auto width, int64_t i) {
    larsPack<T, decltype(width)::value>(param, grad, buffer, newParam, newBuffer, i, c.end, rate,
                                        local, mom, wd);
  });
}

template <typename T, int V>
__global__ void __launch_bounds__(kThreads)
    emaKernel(const T *average, const T *param, T *newAverage, int64_t n, float decay,
              float oneMinusDecay) {
  RN_FOR_EACH_PACK(i, n, V) {
    emaPack<T, V>(average, param, newAverage, i, n, decay, oneMinusDecay);
  }
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

bool isFloatType(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

class Checker {
public:
  explicit Checker(const char *op) : op_(op) {}
  Checker &that(bool condition, const std::string &what) {
    if (!condition && message_.empty())
      message_ = std::string(op_) + ": " + what;
    return *this;
  }
  Checker &floatTensor(const char *name, const DeviceTensor &t) {
    return that(t.data != nullptr || t.numel() == 0, std::string(name) + " has no data")
        .that(isFloatType(t.dtype), std::string(name) + " must be f32, f16 or bf16, got " +
                                        std::string(dtypeName(t.dtype)));
  }
  /// Same shape and dtype as `like`.
  Checker &sameAs(const char *name, const DeviceTensor &t, const DeviceTensor &like) {
    return that(t.data != nullptr || t.numel() == 0, std::string(name) + " has no data")
        .that(t.shape == like.shape, std::string(name) + " must have the param's shape")
        .that(t.dtype == like.dtype, std::string(name) + " must have the param's dtype");
  }
  Checker &scalar(const char *name, const DeviceTensor &t, DType type) {
    return that(t.data != nullptr, std::string(name) + " has no data")
        .that(t.numel() == 1, std::string(name) + " must be a scalar")
        .that(t.dtype == type, std::string(name) + " must be " + std::string(dtypeName(type)) +
                                   ", got " + std::string(dtypeName(t.dtype)));
  }
  /// A flag: one element of i1 (or f32/i32, non-zero meaning set).
  Checker &flag(const char *name, const DeviceTensor &t) {
    return that(t.data != nullptr, std::string(name) + " has no data")
        .that(t.numel() == 1, std::string(name) + " must be a scalar")
        .that(t.dtype == DType::i1 || t.dtype == DType::f32 || t.dtype == DType::i32,
              std::string(name) + " must be i1");
  }
  bool failed() const { return !message_.empty(); }
  Error error() const { return Error(message_); }

private:
  const char *op_;
  std::string message_;
};

Flag flagOf(const DeviceTensor *t) {
  return t ? Flag{t->data, t->dtype} : Flag{nullptr, DType::i1};
}

/// Elements per pack: 16 bytes when every pointer is 16-byte aligned.
int packWidth(DType type, std::initializer_list<const void *> ptrs) {
  for (const void *p : ptrs)
    if (p && reinterpret_cast<uintptr_t>(p) % 16 != 0)
      return 1;
  return int(16 / elementSize(type));
}

unsigned blocksFor(int64_t n, int vec) {
  return unsigned(std::clamp<int64_t>(ceilDiv(ceilDiv(n, vec), kThreads), 1, kMaxBlocks));
}

template <typename T, int V> struct Variant {
  using Type = T;
  static constexpr int vec = V;
};

/// Calls fn(Variant<T, V>{}) for storage type `type`, V = 16 bytes or 1.
template <typename Fn> void withType(DType type, int vec, Fn &&fn) {
  switch (type) {
  case DType::f16:
    if (vec > 1)
      fn(Variant<__half, 8>{});
    else
      fn(Variant<__half, 1>{});
    return;
  case DType::bf16:
    if (vec > 1)
      fn(Variant<__nv_bfloat16, 8>{});
    else
      fn(Variant<__nv_bfloat16, 1>{});
    return;
  default:
    if (vec > 1)
      fn(Variant<float, 4>{});
    else
      fn(Variant<float, 1>{});
    return;
  }
}

int larsBlocks(int64_t numel) {
  return int(std::clamp<int64_t>(ceilDiv(numel, int64_t(kThreads) * 16), 1, kLarsMaxBlocks));
}

} // namespace

Status checkFinite(const std::vector<DeviceTensor> &inputs, const DeviceTensor &foundNonFinite,
                   cudaStream_t stream) {
  Checker check("check_finite");
  check.flag("found_non_finite", foundNonFinite);
  for (const DeviceTensor &t : inputs)
    check.floatTensor("input", t);
  if (check.failed())
    return check.error();
  RN_CUDA_TRY(
      cudaMemsetAsync(foundNonFinite.data, 0, elementSize(foundNonFinite.dtype), stream));
  for (size_t first = 0; first < inputs.size(); first += kFiniteBatch) {
    FiniteBatch batch{};
    int64_t blocks = 0;
    for (size_t k = first; k < inputs.size() && batch.count < kFiniteBatch; ++k) {
      const DeviceTensor &t = inputs[k];
      if (t.numel() == 0)
        continue;
      batch.data[batch.count] = t.data;
      batch.numel[batch.count] = t.numel();
      batch.type[batch.count] = t.dtype;
      batch.firstBlock[batch.count] = blocks;
      blocks += ceilDiv(t.numel(), kFiniteElementsPerBlock);
      ++batch.count;
    }
    batch.firstBlock[batch.count] = blocks;
    if (blocks == 0)
      continue;
    checkFiniteKernel<<<unsigned(blocks), kThreads, 0, stream>>>(batch, foundNonFinite.data,
                                                                 foundNonFinite.dtype);
    RN_CUDA_TRY_LAUNCH();
  }
  return Status::success();
}

Status unscale(const DeviceTensor &grad, const DeviceTensor &scale, const DeviceTensor &result,
               cudaStream_t stream) {
  Checker check("unscale");
  check.floatTensor("grad", grad).scalar("scale", scale, DType::f32).sameAs("result", result,
                                                                            grad);
  if (check.failed())
    return check.error();
  const int64_t n = grad.numel();
  if (n == 0)
    return Status::success();
  int vec = packWidth(grad.dtype, {grad.data, result.data});
  withType(grad.dtype, vec, [&](auto variant) {
    using T = typename decltype(variant)::Type;
    constexpr int V = decltype(variant)::vec;
    unscaleKernel<T, V><<<blocksFor(n, V), kThreads, 0, stream>>>(
        static_cast<const T *>(grad.data), static_cast<const float *>(scale.data),
        static_cast<T *>(result.data), n);
  });
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status updateLossScale(const DeviceTensor &scale, const DeviceTensor &goodSteps,
                       const DeviceTensor &foundNonFinite, double growth, double backoff,
                       int64_t growthInterval, const DeviceTensor &newScale,
                       const DeviceTensor &newGoodSteps, cudaStream_t stream) {
  Checker check("update_loss_scale");
  check.scalar("scale", scale, DType::f32)
      .scalar("good_steps", goodSteps, DType::i32)
      .flag("found_non_finite", foundNonFinite)
      .scalar("new_scale", newScale, DType::f32)
      .scalar("new_good_steps", newGoodSteps, DType::i32)
      .that(growthInterval > 0,
            "growth interval must be positive, got " + std::to_string(growthInterval));
  if (check.failed())
    return check.error();
  lossScaleKernel<<<1, 1, 0, stream>>>(
      static_cast<const float *>(scale.data), static_cast<const int32_t *>(goodSteps.data),
      flagOf(&foundNonFinite), growth, backoff, growthInterval,
      static_cast<float *>(newScale.data), static_cast<int32_t *>(newGoodSteps.data));
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status sgdUpdate(const DeviceTensor &param, const DeviceTensor &grad,
                 const DeviceTensor *momentumBuffer, const DeviceTensor &lr,
                 const DeviceTensor *skip, const SgdOptions &options,
                 const DeviceTensor &newParam, const DeviceTensor *newMomentumBuffer,
                 cudaStream_t stream) {
  Checker check("sgd_update");
  const bool hasMomentum = options.momentum != 0;
  check.floatTensor("param", param)
      .sameAs("grad", grad, param)
      .sameAs("new_param", newParam, param)
      .scalar("lr", lr, DType::f32)
      .that((momentumBuffer != nullptr) == hasMomentum &&
                (newMomentumBuffer != nullptr) == hasMomentum,
            "the momentum buffer and its result are given exactly when momentum is non-zero")
      .that(!options.nesterov || options.momentum > 0, "nesterov needs a positive momentum");
  if (momentumBuffer)
    check.sameAs("momentum_buffer", *momentumBuffer, param);
  if (newMomentumBuffer)
    check.sameAs("new_momentum_buffer", *newMomentumBuffer, param);
  if (skip)
    check.flag("skip_if", *skip);
  if (check.failed())
    return check.error();
  const int64_t n = param.numel();
  if (n == 0)
    return Status::success();
  const void *buffer = momentumBuffer ? momentumBuffer->data : nullptr;
  void *newBuffer = newMomentumBuffer ? newMomentumBuffer->data : nullptr;
  int vec = packWidth(param.dtype, {param.data, grad.data, newParam.data, buffer, newBuffer});
  withType(param.dtype, vec, [&](auto variant) {
    using T = typename decltype(variant)::Type;
    constexpr int V = decltype(variant)::vec;
    sgdKernel<T, V><<<blocksFor(n, V), kThreads, 0, stream>>>(
        static_cast<const T *>(param.data), static_cast<const T *>(grad.data),
        static_cast<const T *>(buffer), static_cast<const float *>(lr.data), flagOf(skip),
        static_cast<T *>(newParam.data), static_cast<T *>(newBuffer), n,
        static_cast<float>(options.momentum), static_cast<float>(options.weightDecay),
        options.nesterov);
  });
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Result<std::unique_ptr<MultiTensorUpdate>> MultiTensorUpdate::sgd(
    const std::vector<DeviceTensor> &operands, const std::vector<DeviceTensor> &results,
    const SgdOptions &options, cudaStream_t stream) {
  const bool buffers = options.momentum != 0;
  const size_t perTensor = buffers ? 2 : 1;
  const size_t count = results.size() / perTensor;
  const size_t lr = count * (buffers ? 3 : 2);
  if (count == 0 || results.size() % perTensor != 0 ||
      (operands.size() != lr + 1 && operands.size() != lr + 2))
    return Error("multi_sgd_update: " + std::to_string(operands.size()) + " operands and " +
                 std::to_string(results.size()) + " results do not make a group (momentum " +
                 std::to_string(options.momentum) + ")");
  if (options.nesterov && options.momentum <= 0)
    return Error("multi_sgd_update: nesterov needs a positive momentum");
  std::unique_ptr<MultiTensorUpdate> update(new MultiTensorUpdate());
  update->kind_ = Kind::sgd;
  update->sgd_ = options;
  if (Status st = update->build(operands, results, count, buffers ? 3 : 2, perTensor, lr,
                                stream);
      !st.ok())
    return st.error();
  return Result<std::unique_ptr<MultiTensorUpdate>>(std::move(update));
}

Result<std::unique_ptr<MultiTensorUpdate>> MultiTensorUpdate::adamw(
    const std::vector<DeviceTensor> &operands, const std::vector<DeviceTensor> &results,
    const AdamWOptions &options, cudaStream_t stream) {
  const size_t count = results.size() / 3;
  const size_t lr = 4 * count;
  if (count == 0 || results.size() % 3 != 0 ||
      (operands.size() != lr + 2 && operands.size() != lr + 3))
    return Error("multi_adamw_update: " + std::to_string(operands.size()) + " operands and " +
                 std::to_string(results.size()) + " results do not make a group");
  std::unique_ptr<MultiTensorUpdate> update(new MultiTensorUpdate());
  update->kind_ = Kind::adamw;
  update->adamw_ = options;
  if (Status st = update->build(operands, results, count, 4, 3, lr, stream); !st.ok())
    return st.error();
  return Result<std::unique_ptr<MultiTensorUpdate>>(std::move(update));
}

Result<std::unique_ptr<MultiTensorUpdate>> MultiTensorUpdate::lars(
    const std::vector<DeviceTensor> &operands, const std::vector<DeviceTensor> &results,
    const LarsOptions &options, cudaStream_t stream) {
  const size_t count = results.size() / 2;
  const size_t lr = 3 * count;
  if (count == 0 || results.size() % 2 != 0 ||
      (operands.size() != lr + 1 && operands.size() != lr + 2))
    return Error("multi_lars_update: " + std::to_string(operands.size()) + " operands and " +
                 std::to_string(results.size()) + " results do not make a group");
  std::unique_ptr<MultiTensorUpdate> update(new MultiTensorUpdate());
  update->kind_ = Kind::lars;
  update->lars_ = options;
  if (Status st = update->build(operands, results, count, 3, 2, lr, stream); !st.ok())
    return st.error();
  return Result<std::unique_ptr<MultiTensorUpdate>>(std::move(update));
}

Result<std::unique_ptr<MultiTensorUpdate>>
MultiTensorUpdate::elementwise(Kind kind, const std::vector<DeviceTensor> &operands,
                               const std::vector<DeviceTensor> &results, size_t inputs,
                               size_t scalars, const char *layout, cudaStream_t stream) {
  std::unique_ptr<MultiTensorUpdate> update(new MultiTensorUpdate());
  update->kind_ = kind;
  const size_t count = results.size();
  if (count == 0 || operands.size() != inputs * count + scalars)
    return Error(std::string(update->opName()) + ": " + std::to_string(operands.size()) +
                 " operands and " + std::to_string(count) + " results do not make a group (" +
                 layout + ")");
  update->resultDtype_ = results[0].dtype;
  if (Status st = update->build(operands, results, count, inputs, 1, inputs * count, stream);
      !st.ok())
    return st.error();
  return Result<std::unique_ptr<MultiTensorUpdate>>(std::move(update));
}

Result<std::unique_ptr<MultiTensorUpdate>>
MultiTensorUpdate::unscale(const std::vector<DeviceTensor> &operands,
                           const std::vector<DeviceTensor> &results, cudaStream_t stream) {
  return elementwise(Kind::unscale, operands, results, 1, 1,
                     "grads, then the scale; one result per grad", stream);
}

Result<std::unique_ptr<MultiTensorUpdate>>
MultiTensorUpdate::zero(const std::vector<DeviceTensor> &operands,
                        const std::vector<DeviceTensor> &results, cudaStream_t stream) {
  return elementwise(Kind::zero, operands, results, 1, 0, "one result per operand", stream);
}

Result<std::unique_ptr<MultiTensorUpdate>>
MultiTensorUpdate::cast(const std::vector<DeviceTensor> &operands,
                        const std::vector<DeviceTensor> &results, cudaStream_t stream) {
  return elementwise(Kind::cast, operands, results, 1, 0, "one result per input", stream);
}

Result<std::unique_ptr<MultiTensorUpdate>>
MultiTensorUpdate::ema(const std::vector<DeviceTensor> &operands,
                       const std::vector<DeviceTensor> &results, double decay,
                       cudaStream_t stream) {
  if (!(decay >= 0 && decay < 1))
    return Error("multi_ema_update: decay must be in [0, 1), got " + std::to_string(decay));
  Result<std::unique_ptr<MultiTensorUpdate>> update = elementwise(
      Kind::ema, operands, results, 2, 0, "averages, then params; one result per average",
      stream);
  if (update.ok())
    (*update)->emaDecay_ = decay;
  return update;
}

const char *MultiTensorUpdate::opName() const {
  switch (kind_) {
  case Kind::sgd:
    return "multi_sgd_update";
  case Kind::adamw:
    return "multi_adamw_update";
  case Kind::lars:
    return "multi_lars_update";
  case Kind::unscale:
    return "multi_unscale";
  case Kind::zero:
    return "multi_zero";
  case Kind::cast:
    return "multi_cast";
  case Kind::ema:
    return "multi_ema_update";
  }
  return "?";
}

size_t MultiTensorUpdate::scalarCount() const {
  return kind_ == Kind::adamw                                             ? 2
         : (kind_ == Kind::zero || kind_ == Kind::cast || kind_ == Kind::ema) ? 0
                                                                               : 1;
}

Status MultiTensorUpdate::checkScalars(const std::vector<DeviceTensor> &operands) const {
  if (scalarCount() == 0)
    return Status::success();
  Checker check(opName());
  check.scalar(kind_ == Kind::unscale ? "scale" : "lr", operands[lr_], DType::f32);
  if (kind_ == Kind::adamw)
    check.scalar("step", operands[lr_ + 1], DType::i32);
  if (skip_)
    check.flag("skip_if", operands[lr_ + scalarCount()]);
  if (check.failed())
    return check.error();
  return Status::success();
}

Status MultiTensorUpdate::build(const std::vector<DeviceTensor> &operands,
                                const std::vector<DeviceTensor> &results, size_t count,
                                size_t inputs, size_t outputs, size_t lr, cudaStream_t stream) {
  static const char *const kSgdNames[] = {"params", "grads", "momentum_buffers"};
  static const char *const kSgdResults[] = {"new_params", "new_momentum_buffers"};
  static const char *const kAdamNames[] = {"params", "grads", "exp_avgs", "exp_avg_sqs"};
  static const char *const kAdamResults[] = {"new_params", "new_exp_avgs", "new_exp_avg_sqs"};
  static const char *const kUnscaleNames[] = {"grads"};
  static const char *const kInputNames[] = {"inputs"};
  static const char *const kEmaNames[] = {"averages", "params"};
  static const char *const kElementwiseResults[] = {"results"};
  const char *const *names = kind_ == Kind::sgd || kind_ == Kind::lars ? kSgdNames
                             : kind_ == Kind::adamw   ? kAdamNames
                             : kind_ == Kind::unscale ? kUnscaleNames
                             : kind_ == Kind::ema     ? kEmaNames
                                                      : kInputNames;
  const char *const *resultNames = kind_ == Kind::sgd || kind_ == Kind::lars ? kSgdResults
                                   : kind_ == Kind::adamw ? kAdamResults
                                                          : kElementwiseResults;
  // The operand result k updates: param, then the optimizer state.
  static const size_t kUpdated[3] = {0, 2, 3};
  tensors_ = count;
  lr_ = lr;
  skip_ = operands.size() == lr + scalarCount() + 1;
  dtype_ = operands[0].dtype;
  if (Status st = checkScalars(operands); !st.ok())
    return st;
  Checker check(opName());
  std::vector<MultiTensor> tensors(count);
  std::vector<MultiTensorChunk> chunks;
  for (size_t i = 0; i < count && !check.failed(); ++i) {
    const std::string index = " #" + std::to_string(i);
    const DeviceTensor &param = operands[i];
    check.floatTensor((names[0] + index).c_str(), param)
        .that(param.dtype == dtype_, names[0] + index + " must have the dtype of " + names[0] +
                                         " #0 (" + std::string(dtypeName(dtype_)) + ")");
    MultiTensor &t = tensors[i];
    t = MultiTensor{};
    for (size_t g = 0; g < inputs; ++g) {
      const DeviceTensor &v = operands[g * count + i];
      if (g > 0)
        check.sameAs((names[g] + index).c_str(), v, param);
      t.in[g] = v.data;
    }
    t.inPlace = 1;
    for (size_t k = 0; k < outputs; ++k) {
      const DeviceTensor &v = results[k * count + i];
      if (kind_ == Kind::cast)
        check.that(v.shape == param.shape && v.dtype == resultDtype_ && v.dtype != dtype_ &&
                       isFloatType(v.dtype),
                   resultNames[k] + index + " must have the shape of inputs" + index +
                       " and the dtype of results #0, another float type than the inputs'");
      else
        check.sameAs((resultNames[k] + index).c_str(), v, param);
      t.out[k] = v.data;
      t.inPlace &= int32_t(t.out[k] == t.in[kUpdated[k]]);
    }
    t.numel = param.numel();
    t.packed = packWidth(dtype_, {t.in[0], t.in[1], t.in[2], t.in[3], t.out[0], t.out[1],
                                  t.out[2]}) > 1;
    const int64_t tensorChunks = ceilDiv(t.numel, kChunk);
    check.that(tensorChunks <= std::numeric_limits<int32_t>::max(),
               names[0] + index + " has too many elements");
    for (int64_t k = 0; k < tensorChunks && !check.failed(); ++k)
      chunks.push_back(MultiTensorChunk{int32_t(i), int32_t(k)});
  }
  check.that(chunks.size() <= size_t(std::numeric_limits<int32_t>::max()),
             "too many chunks for one launch");
  if (check.failed())
    return check.error();

  // LARS: where each tensor's partials go in the workspace, and the norm
  // blocks of stage 1 (larsBlocks of each tensor, as lars_update cuts it).
  std::vector<LarsNorm> norms;
  std::vector<MultiTensorChunk> normBlocks;
  if (kind_ == Kind::lars) {
    int64_t offset = 0;
    for (size_t i = 0; i < count; ++i) {
      const int blocks = tensors[i].numel > 0 ? larsBlocks(tensors[i].numel) : 0;
      norms.push_back(LarsNorm{offset, blocks, 0});
      for (int b = 0; b < blocks; ++b)
        normBlocks.push_back(MultiTensorChunk{int32_t(i), int32_t(b)});
      offset += 2 * int64_t(blocks);
    }
    workspaceBytes_ = size_t(offset) * sizeof(double);
  }

  chunks_ = chunks.size();
  normBlocks_ = normBlocks.size();
  for (const DeviceTensor &t : operands)
    addresses_.push_back(t.data);
  for (const DeviceTensor &t : results)
    addresses_.push_back(t.data);
  // Tensors, then chunks, then (LARS) the norms and the norm blocks; every
  // entry is a multiple of 8 bytes, so each part stays aligned.
  static_assert(sizeof(LarsNorm) % alignof(MultiTensorChunk) == 0 &&
                sizeof(MultiTensorChunk) % alignof(LarsNorm) == 0);
  chunkOffset_ = tensors.size() * sizeof(MultiTensor);
  normOffset_ = chunkOffset_ + chunks.size() * sizeof(MultiTensorChunk);
  normBlockOffset_ = normOffset_ + norms.size() * sizeof(LarsNorm);
  const size_t bytes = normBlockOffset_ + normBlocks.size() * sizeof(MultiTensorChunk);
  std::vector<unsigned char> host(bytes);
  std::memcpy(host.data(), tensors.data(), chunkOffset_);
  if (!chunks.empty())
    std::memcpy(host.data() + chunkOffset_, chunks.data(),
                chunks.size() * sizeof(MultiTensorChunk));
  if (!norms.empty())
    std::memcpy(host.data() + normOffset_, norms.data(), norms.size() * sizeof(LarsNorm));
  if (!normBlocks.empty())
    std::memcpy(host.data() + normBlockOffset_, normBlocks.data(),
                normBlocks.size() * sizeof(MultiTensorChunk));
  RN_CUDA_TRY(cudaMalloc(&device_, bytes));
  RN_CUDA_TRY(cudaMemcpyAsync(device_, host.data(), bytes, cudaMemcpyHostToDevice, stream));
  // The host copy is a local: the copy must have landed before it goes.
  RN_CUDA_TRY(cudaStreamSynchronize(stream));
  return Status::success();
}

MultiTensorUpdate::~MultiTensorUpdate() {
  if (device_)
    (void)cudaFree(device_);
}

Status MultiTensorUpdate::launch(const std::vector<DeviceTensor> &operands,
                                 const std::vector<DeviceTensor> &results, cudaStream_t stream,
                                 void *workspace, size_t workspaceBytes) const {
  if (operands.size() != lr_ + scalarCount() + size_t(skip_) ||
      operands.size() + results.size() != addresses_.size())
    return Error(std::string(opName()) + ": " + std::to_string(operands.size()) +
                 " operands and " + std::to_string(results.size()) +
                 " results, but the table was prepared for " + std::to_string(tensors_) +
                 " tensors");
  // lr, step and skip_if may move with the variant; the rest is in the table.
  for (size_t k = 0; k < lr_; ++k)
    if (operands[k].data != addresses_[k])
      return Error(std::string(opName()) + ": operand " + std::to_string(k) +
                   " is not at the address its table was prepared for");
  for (size_t k = 0; k < results.size(); ++k)
    if (results[k].data != addresses_[operands.size() + k])
      return Error(std::string(opName()) + ": result " + std::to_string(k) +
                   " is not at the address its table was prepared for");
  if (Status st = checkScalars(operands); !st.ok())
    return st;
  if (workspaceBytes < workspaceBytes_ || (workspace == nullptr && workspaceBytes_ > 0))
    return Error(std::string(opName()) + ": needs " + std::to_string(workspaceBytes_) +
                 " workspace bytes, has " + std::to_string(workspace ? workspaceBytes : 0));
  if (chunks_ == 0)
    return Status::success();
  const auto *tensors = static_cast<const MultiTensor *>(device_);
  const auto *chunks = reinterpret_cast<const MultiTensorChunk *>(
      static_cast<const char *>(device_) + chunkOffset_);
  const float *lr =
      scalarCount() > 0 ? static_cast<const float *>(operands[lr_].data) : nullptr;
  const Flag skip = flagOf(skip_ ? &operands[lr_ + scalarCount()] : nullptr);
  withType(dtype_, 1, [&](auto variant) {
    using T = typename decltype(variant)::Type;
    if (kind_ == Kind::cast)
      withType(resultDtype_, 1, [&](auto resultVariant) {
        using U = typename decltype(resultVariant)::Type;
        multiCastKernel<T, U><<<unsigned(chunks_), kThreads, 0, stream>>>(tensors, chunks,
                                                                           kChunk);
      });
    else if (kind_ == Kind::zero)
      multiZeroKernel<T><<<unsigned(chunks_), kThreads, 0, stream>>>(tensors, chunks, kChunk);
    else if (kind_ == Kind::ema)
      multiEmaKernel<T><<<unsigned(chunks_), kThreads, 0, stream>>>(
          tensors, chunks, kChunk, static_cast<float>(emaDecay_),
          static_cast<float>(1.0 - emaDecay_));
    else if (kind_ == Kind::unscale)
      multiUnscaleKernel<T><<<unsigned(chunks_), kThreads, 0, stream>>>(tensors, chunks, kChunk,
                                                                         lr);
    else if (kind_ == Kind::lars) {
      // Two launches: every tensor's partial norms (a non-empty chunk means
      // a non-empty tensor, hence a norm block), then the trust ratios and
      // the update.
      const auto *norms = reinterpret_cast<const LarsNorm *>(
          static_cast<const char *>(device_) + normOffset_);
      const auto *normBlocks = reinterpret_cast<const MultiTensorChunk *>(
          static_cast<const char *>(device_) + normBlockOffset_);
      auto *partials = static_cast<double *>(workspace);
      multiLarsNormKernel<T><<<unsigned(normBlocks_), kThreads, 0, stream>>>(
          tensors, norms, normBlocks, skip, partials);
      multiLarsUpdateKernel<T><<<unsigned(chunks_), kThreads, 0, stream>>>(
          tensors, norms, chunks, kChunk, lr, skip, partials, lars_.momentum,
          lars_.weightDecay, lars_.trustCoefficient, lars_.epsilon);
    }
    else if (kind_ == Kind::sgd)
      multiSgdKernel<T><<<unsigned(chunks_), kThreads, 0, stream>>>(
          tensors, chunks, kChunk, lr, skip, static_cast<float>(sgd_.momentum),
          static_cast<float>(sgd_.weightDecay), sgd_.nesterov);
    else
      multiAdamwKernel<T><<<unsigned(chunks_), kThreads, 0, stream>>>(
          tensors, chunks, kChunk, lr, static_cast<const int32_t *>(operands[lr_ + 1].data),
          skip, adamw_.beta1, adamw_.beta2, static_cast<float>(adamw_.epsilon),
          adamw_.weightDecay);
  });
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status adamwUpdate(const DeviceTensor &param, const DeviceTensor &grad,
                   const DeviceTensor &expAvg, const DeviceTensor &expAvgSq,
                   const DeviceTensor &lr, const DeviceTensor &step, const DeviceTensor *skip,
                   const AdamWOptions &options, const DeviceTensor &newParam,
                   const DeviceTensor &newExpAvg, const DeviceTensor &newExpAvgSq,
                   cudaStream_t stream) {
  Checker check("adamw_update");
  check.floatTensor("param", param)
      .sameAs("grad", grad, param)
      .sameAs("exp_avg", expAvg, param)
      .sameAs("exp_avg_sq", expAvgSq, param)
      .sameAs("new_param", newParam, param)
      .sameAs("new_exp_avg", newExpAvg, param)
      .sameAs("new_exp_avg_sq", newExpAvgSq, param)
      .scalar("lr", lr, DType::f32)
      .scalar("step", step, DType::i32);
  if (skip)
    check.flag("skip_if", *skip);
  if (check.failed())
    return check.error();
  const int64_t n = param.numel();
  if (n == 0)
    return Status::success();
  int vec = packWidth(param.dtype, {param.data, grad.data, expAvg.data, expAvgSq.data,
                                    newParam.data, newExpAvg.data, newExpAvgSq.data});
  withType(param.dtype, vec, [&](auto variant) {
    using T = typename decltype(variant)::Type;
    constexpr int V = decltype(variant)::vec;
    adamwKernel<T, V><<<blocksFor(n, V), kThreads, 0, stream>>>(
        static_cast<const T *>(param.data), static_cast<const T *>(grad.data),
        static_cast<const T *>(expAvg.data), static_cast<const T *>(expAvgSq.data),
        static_cast<const float *>(lr.data), static_cast<const int32_t *>(step.data),
        flagOf(skip), static_cast<T *>(newParam.data), static_cast<T *>(newExpAvg.data),
        static_cast<T *>(newExpAvgSq.data), n, options.beta1, options.beta2,
        static_cast<float>(options.epsilon), options.weightDecay);
  });
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

size_t larsWorkspaceBytes(int64_t numel) {
  return numel <= 0 ? 0 : 2 * sizeof(double) * size_t(larsBlocks(numel));
}

Status larsUpdate(const DeviceTensor &param, const DeviceTensor &grad,
                  const DeviceTensor &momentumBuffer, const DeviceTensor &lr,
                  const DeviceTensor *skip, const LarsOptions &options,
                  const DeviceTensor &newParam, const DeviceTensor &newMomentumBuffer,
                  cudaStream_t stream, void *workspace, size_t workspaceBytes) {
  Checker check("lars_update");
  const int64_t n = param.numel();
  const size_t needed = larsWorkspaceBytes(n);
  check.floatTensor("param", param)
      .sameAs("grad", grad, param)
      .sameAs("momentum_buffer", momentumBuffer, param)
      .sameAs("new_param", newParam, param)
      .sameAs("new_momentum_buffer", newMomentumBuffer, param)
      .scalar("lr", lr, DType::f32)
      .that(workspaceBytes >= needed && (workspace != nullptr || needed == 0),
            "needs " + std::to_string(needed) + " workspace bytes, has " +
                std::to_string(workspaceBytes));
  if (skip)
    check.flag("skip_if", *skip);
  if (check.failed())
    return check.error();
  if (n == 0)
    return Status::success();
  const int partialBlocks = larsBlocks(n);
  double *partials = static_cast<double *>(workspace);
  int vec = packWidth(param.dtype, {param.data, grad.data, momentumBuffer.data, newParam.data,
                                    newMomentumBuffer.data});
  withType(param.dtype, vec, [&](auto variant) {
    using T = typename decltype(variant)::Type;
    constexpr int V = decltype(variant)::vec;
    larsNormKernel<T, V><<<unsigned(partialBlocks), kThreads, 0, stream>>>(
        static_cast<const T *>(param.data), static_cast<const T *>(grad.data), n, partials);
  });
  RN_CUDA_TRY_LAUNCH();
  withType(param.dtype, vec, [&](auto variant) {
    using T = typename decltype(variant)::Type;
    constexpr int V = decltype(variant)::vec;
    larsUpdateKernel<T, V><<<blocksFor(n, V), kThreads, 0, stream>>>(
        static_cast<const T *>(param.data), static_cast<const T *>(grad.data),
        static_cast<const T *>(momentumBuffer.data), static_cast<const float *>(lr.data),
        flagOf(skip), partials, partialBlocks, static_cast<T *>(newParam.data),
        static_cast<T *>(newMomentumBuffer.data), n, options.momentum, options.weightDecay,
        options.trustCoefficient, options.epsilon);
  });
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status emaUpdate(const DeviceTensor &average, const DeviceTensor &param, double decay,
                 const DeviceTensor &newAverage, cudaStream_t stream) {
  Checker check("ema_update");
  check.floatTensor("average", average)
      .sameAs("param", param, average)
      .sameAs("new_average", newAverage, average);
  if (check.failed())
    return check.error();
  const int64_t n = average.numel();
  if (n == 0)
    return Status::success();
  int vec = packWidth(average.dtype, {average.data, param.data, newAverage.data});
  withType(average.dtype, vec, [&](auto variant) {
    using T = typename decltype(variant)::Type;
    constexpr int V = decltype(variant)::vec;
    emaKernel<T, V><<<blocksFor(n, V), kThreads, 0, stream>>>(
        static_cast<const T *>(average.data), static_cast<const T *>(param.data),
        static_cast<T *>(newAverage.data), n, static_cast<float>(decay),
        static_cast<float>(1.0 - decay));
  });
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

} // namespace rn::cuda
