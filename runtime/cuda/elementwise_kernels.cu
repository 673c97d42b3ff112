//===- elementwise_kernels.cu - Activations, channel scaling, casts, random masks -*- C++ -*-===//
//
// Memory-bound maps over contiguous tensors. Every kernel is a grid-stride
// loop over packs of 8 elements (two 16-byte loads of f32, one of f16/bf16)
// when every pointer is aligned for them, then a scalar loop over the tail;
// a scalar loop only otherwise. Dtypes are run-time arguments (warp-uniform
// branches) rather than template parameters, so that any mix of f32, f16
// and bf16 operands is one kernel per op.
//
// Exactness against the CPU kernels (which compute in double and round to
// f32, then to the dtype): relu, add, the backward of relu and dropout,
// casts and dropout give identical bits (one f32 operation rounds as the
// double one does, the double rounding being innocuous); so do hardtanh
// and its backward, and the hardsigmoid backward (one f32 division). tanh,
// silu, sigmoid, hardswish, hardsigmoid and the tanh/silu/sigmoid/hardswish
// backward use f32 arithmetic or libm and differ by a few f32 ulps. Dropout
// draws Philox4x32-10 exactly as cpu::dropoutRandomWord does, and so does
// stochastic depth, one word per sample. channel_mul, stochastic depth and
// their backward are exact too: one f32 product per element, and the
// scale gradient's double sum in the CPU's order. normalize_images and the
// normalizing pad_channels are exact too: f32 operations with the CPU's
// rounding, none contracted.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace rn::cuda {
namespace {

using detail::alignedFor;
using detail::gridFor;
using detail::isFloat;
using detail::loadFloat;
using detail::checkFloatView;
using detail::checkShape;
using detail::shapeString;
using detail::storeDouble;
using detail::storeFloat;

constexpr int kThreads = 256;
constexpr int kPack = 8; ///< elements per vector access

/// Eight consecutive elements starting at 8 * pack, widened to f32.
__device__ __forceinline__ void loadPack(const void *data, DType type, int64_t pack,
                                         float (&v)[kPack]) {
  if (type == DType::f32) {
    const float4 *p = static_cast<const float4 *>(data) + 2 * pack;
    float4 a = p[0], b = p[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
    v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    return;
  }
  uint4 raw = static_cast<const uint4 *>(data)[pack];
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
  for (int k = 0; k < 4; ++k) {
    uint16_t lo = uint16_t(words[k]), hi = uint16_t(words[k] >> 16);
    if (type == DType::f16) {
      v[2 * k] = __half2float(__ushort_as_half(lo));
      v[2 * k + 1] = __half2float(__ushort_as_half(hi));
    } else {
      v[2 * k] = __bfloat162float(__ushort_as_bfloat16(lo));
      v[2 * k + 1] = __bfloat162float(__ushort_as_bfloat16(hi));
    }
  }
}

/// Stores eight elements at 8 * pack, each rounded to nearest even.
__device__ __forceinline__ void storePack(void *data, DType type, int64_t pack,
                                          const float (&v)[kPack]) {
  if (type == DType::f32) {
    float4 *p = static_cast<float4 *>(data) + 2 * pack;
    p[0] = make_float4(v[0], v[1], v[2], v[3]);
    p[1] = make_float4(v[4], v[5], v[6], v[7]);
    return;
  }
  uint32_t words[4];
  for (int k = 0; k < 4; ++k) {
    uint16_t lo, hi;
    if (type == DType::f16) {
      lo = __half_as_ushort(__float2half_rn(v[2 * k]));
      hi = __half_as_ushort(__float2half_rn(v[2 * k + 1]));
    } else {
      lo = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * k]));
      hi = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * k + 1]));
    }
    words[k] = uint32_t(lo) | (uint32_t(hi) << 16);
  }
  static_cast<uint4 *>(data)[pack] = make_uint4(words[0], words[1], words[2], words[3]);
}

//===----------------------------------------------------------------------===//
// The element functions (f32 in, f32 out)
//===----------------------------------------------------------------------===//

struct Identity {
  __device__ float operator()(float x, float) const { return x; }
};
struct Relu {
  __device__ float operator()(float x, float) const { return x > 0.0f || isnan(x) ? x : 0.0f; }
};
struct Tanh {
  __device__ float operator()(float x, float) const { return tanhf(x); }
};
struct Silu {
  __device__ float operator()(float x, float) const { return x / (1.0f + expf(-x)); }
};
struct Sigmoid {
  __device__ float operator()(float x, float) const { return 1.0f / (1.0f + expf(-x)); }
};
// GELU in f32 as PyTorch's CUDA kernels compute it (erff, tanhf).
constexpr float kSqrtHalf = 0.70710678118654752440f;
constexpr float kSqrtTwoOverPi = 0.79788456080286535588f;
constexpr float kInvSqrtTwoPi = 0.39894228040143267794f;
constexpr float kGeluCubic = 0.044715f;
struct Gelu {
  __device__ float operator()(float x, float) const {
    return 0.5f * x * (1.0f + erff(x * kSqrtHalf));
  }
};
struct GeluTanh {
  __device__ float operator()(float x, float) const {
    return 0.5f * x * (1.0f + tanhf(kSqrtTwoOverPi * (x + kGeluCubic * x * x * x)));
  }
};
struct GeluBackward {
  __device__ float operator()(float dy, float x) const {
    float cdf = 0.5f * (1.0f + erff(x * kSqrtHalf));
    float pdf = kInvSqrtTwoPi * expf(-0.5f * x * x);
    return dy * (cdf + x * pdf);
  }
};
struct GeluTanhBackward {
  __device__ float operator()(float dy, float x) const {
    float t = tanhf(kSqrtTwoOverPi * (x + kGeluCubic * x * x * x));
    float du = kSqrtTwoOverPi * (1.0f + 3.0f * kGeluCubic * x * x);
    return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
  }
};
// The piecewise ops compare rather than clamp with fminf/fmaxf, which would
// drop a NaN (the CPU's comparisons propagate it).
struct Hardswish {
  __device__ float operator()(float x, float) const {
    return x < -3.0f ? 0.0f : x > 3.0f ? x : x * (x + 3.0f) / 6.0f;
  }
};
struct Hardsigmoid {
  __device__ float operator()(float x, float) const {
    return x < -3.0f ? 0.0f : x > 3.0f ? 1.0f : (x + 3.0f) / 6.0f;
  }
};
struct Hardtanh {
  float lo, hi; ///< the bounds as f32
  __device__ float operator()(float x, float) const { return x < lo ? lo : x > hi ? hi : x; }
};
struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct ReluBackward {
  __device__ float operator()(float dy, float y) const { return y > 0.0f ? dy : 0.0f; }
};
struct TanhBackward {
  // 1 - y^2 with one rounding: y near +-1 would otherwise cancel.
  __device__ float operator()(float dy, float y) const { return dy * fmaf(-y, y, 1.0f); }
};
struct SiluBackward {
  __device__ float operator()(float dy, float x) const {
    float s = 1.0f / (1.0f + expf(-x));
    return dy * s * fmaf(x, 1.0f - s, 1.0f);
  }
};
struct SigmoidBackward {
  __device__ float operator()(float dy, float y) const { return dy * y * (1.0f - y); }
};
struct HardtanhBackward {
  float lo, hi; ///< the bounds as the result's dtype stores them
  __device__ float operator()(float dy, float y) const { return y > lo && y < hi ? dy : 0.0f; }
};
struct HardswishBackward {
  // PyTorch's pieces: the middle one is closed, and NaN takes it.
  __device__ float operator()(float dy, float x) const {
    return x < -3.0f ? 0.0f : x > 3.0f ? dy : dy * fmaf(2.0f, x, 3.0f) / 6.0f;
  }
};
struct HardsigmoidBackward {
  __device__ float operator()(float dy, float x) const {
    return x > -3.0f && x < 3.0f ? dy / 6.0f : 0.0f;
  }
};
struct Multiply {
  __device__ float operator()(float dy, float mask) const { return dy * mask; }
};

struct MapArgs {
  const void *a = nullptr;
  const void *b = nullptr; ///< null for unary maps
  void *out = nullptr;
  DType aType = DType::f32, bType = DType::f32, outType = DType::f32;
  int64_t count = 0;
};

/// out[i] = f(a[i], b[i]) (b[i] = 0 for unary maps).
template <typename F, bool Vector> __global__ void mapKernel(MapArgs args, F f) {
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t tail = 0;
  if constexpr (Vector) {
    const int64_t packs = args.count / kPack;
    for (int64_t p = first; p < packs; p += stride) {
      float a[kPack], b[kPack] = {}, r[kPack];
      loadPack(args.a, args.aType, p, a);
      if (args.b)
        loadPack(args.b, args.bType, p, b);
#pragma unroll
      for (int k = 0; k < kPack; ++k)
        r[k] = f(a[k], b[k]);
      storePack(args.out, args.outType, p, r);
    }
    tail = packs * kPack;
  }
  for (int64_t i = tail + first; i < args.count; i += stride) {
    float b = args.b ? loadFloat(args.b, args.bType, i) : 0.0f;
    storeFloat(args.out, args.outType, i, f(loadFloat(args.a, args.aType, i), b));
  }
}

template <typename F> Status launchMap(const MapArgs &args, F f, cudaStream_t stream) {
  if (args.count == 0)
    return Status::success();
  bool vector = alignedFor(args.a, args.aType, kPack) && alignedFor(args.out, args.outType, kPack) &&
                (!args.b || alignedFor(args.b, args.bType, kPack));
  int64_t work = vector ? std::max<int64_t>(args.count / kPack, 1) : args.count;
  unsigned blocks = gridFor(work, kThreads);
  if (vector)
    mapKernel<F, true><<<blocks, kThreads, 0, stream>>>(args, f);
  else
    mapKernel<F, false><<<blocks, kThreads, 0, stream>>>(args, f);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}


//===----------------------------------------------------------------------===//
// Channel scaling (the squeeze-and-excitation gate)
//===----------------------------------------------------------------------===//

struct ChannelScaleArgs {
  const void *x = nullptr;     ///< [N, H, W, C]
  const void *scale = nullptr; ///< [N, 1, 1, C]
  void *out = nullptr;         ///< [N, H, W, C]
  DType xType = DType::f32, scaleType = DType::f32, outType = DType::f32;
  int64_t hw = 0, c = 0, count = 0;
};

/// out[i] = x[i] * scale[n, c], one f32 product (the CPU's double product
/// rounds to the same f32). With Vector, C is a multiple of 8 and every
/// pointer aligned for packs: a pack of 8 lies in one pixel, its 8 scales
/// are consecutive too.
template <bool Vector> __global__ void channelMulKernel(ChannelScaleArgs a) {
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  if constexpr (Vector) {
    for (int64_t p = first; p < a.count / kPack; p += stride) {
      const int64_t i = p * kPack, image = i / (a.hw * a.c), k = i % a.c;
      float x[kPack], s[kPack], r[kPack];
      loadPack(a.x, a.xType, p, x);
      loadPack(a.scale, a.scaleType, (image * a.c + k) / kPack, s);
#pragma unroll
      for (int j = 0; j < kPack; ++j)
        r[j] = x[j] * s[j];
      storePack(a.out, a.outType, p, r);
    }
  } else {
    for (int64_t i = first; i < a.count; i += stride) {
      const int64_t image = i / (a.hw * a.c), k = i % a.c;
      storeFloat(a.out, a.outType, i,
                 loadFloat(a.x, a.xType, i) * loadFloat(a.scale, a.scaleType, image * a.c + k));
    }
  }
}

/// scale_grad[n, c] = the sum over the H * W positions, in order, of
/// dy * x in double (exact products): the CPU's sum, one thread per (n, c)
/// as global_avg_pool's.
__global__ void channelScaleGradKernel(const void *dy, DType dyType, const void *x, DType xType,
                                       void *grad, DType gradType, int64_t n, int64_t hw,
                                       int64_t c) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < n * c;
       o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t image = o / c, k = o % c;
    double acc = 0;
    for (int64_t p = 0; p < hw; ++p) {
      const int64_t i = (image * hw + p) * c + k;
      acc += double(loadFloat(dy, dyType, i)) * double(loadFloat(x, xType, i));
    }
    storeDouble(grad, gradType, o, acc);
  }
}

//===----------------------------------------------------------------------===//
// Channel padding
//===----------------------------------------------------------------------===//

/// One output row of `padded` channels per thread: the input row's
/// `channels` values converted, zeros after. Rows of eight channels are one
/// 16-byte store when the output is aligned for it (the padded image stem:
/// 8 f16 channels per pixel).
template <bool PackedRows>
__global__ void padChannelsKernel(const void *in, DType inType, int64_t channels, void *out,
                                  DType outType, int64_t padded, int64_t rows) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t row = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; row < rows; row += stride) {
    if constexpr (PackedRows) {
      float v[kPack];
#pragma unroll
      for (int c = 0; c < kPack; ++c)
        v[c] = c < channels ? loadFloat(in, inType, row * channels + c) : 0.0f;
      storePack(out, outType, row, v);
    } else {
      for (int64_t c = 0; c < padded; ++c)
        storeFloat(out, outType, row * padded + c,
                   c < channels ? loadFloat(in, inType, row * channels + c) : 0.0f);
    }
  }
}

//===----------------------------------------------------------------------===//
// Input normalization (uint8 images on the wire)
//===----------------------------------------------------------------------===//

constexpr int kBytePack = 16; ///< bytes of one 16-byte load

/// (x / 255 - mean) * (1 / std) with each operation rounded in f32 and none
/// contracted: cpu::normalizeImages and the host's data sources, bit for bit.
__device__ __forceinline__ float normalizedPixel(uint32_t x, float mean, float inverseStd) {
  return __fmul_rn(__fsub_rn(__fdiv_rn(float(x), 255.0f), mean), inverseStd);
}

/// Fills the block's table of `channels` means, then inverse stds (dynamic
/// shared memory of 2 * channels floats).
__device__ __forceinline__ void loadNormalization(float *table, const float *mean,
                                                  const float *std, int64_t channels) {
  for (int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    table[c] = mean[c];
    table[channels + c] = __fdiv_rn(1.0f, std[c]);
  }
  __syncthreads();
}

/// The 16 bytes of one 16-byte load.
__device__ __forceinline__ void unpackBytes(uint4 raw, uint8_t (&bytes)[kBytePack]) {
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int k = 0; k < kBytePack; ++k)
    bytes[k] = uint8_t(words[k / 4] >> (8 * (k % 4)));
}

/// out[i] = normalized in[i] over `count` NHWC bytes of `channels`
/// channels. Vector: 16 bytes per load, 16 values per two pack stores.
template <bool Vector>
__global__ void normalizeImagesKernel(const uint8_t *in, int64_t count, int64_t channels,
                                      const float *mean, const float *std, void *out,
                                      DType outType) {
  extern __shared__ float table[];
  loadNormalization(table, mean, std, channels);
  const float *inverseStd = table + channels;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t tail = 0;
  if constexpr (Vector) {
    const int64_t packs = count / kBytePack;
    for (int64_t p = first; p < packs; p += stride) {
      uint8_t bytes[kBytePack];
      unpackBytes(reinterpret_cast<const uint4 *>(in)[p], bytes);
      float lo[kPack], hi[kPack];
      int64_t c = (p * kBytePack) % channels;
#pragma unroll
      for (int k = 0; k < kPack; ++k) {
        lo[k] = normalizedPixel(bytes[k], table[c], inverseStd[c]);
        c = c + 1 == channels ? 0 : c + 1;
      }
#pragma unroll
      for (int k = 0; k < kPack; ++k) {
        hi[k] = normalizedPixel(bytes[kPack + k], table[c], inverseStd[c]);
        c = c + 1 == channels ? 0 : c + 1;
      }
      storePack(out, outType, 2 * p, lo);
      storePack(out, outType, 2 * p + 1, hi);
    }
    tail = packs * kBytePack;
  }
  for (int64_t i = tail + first; i < count; i += stride) {
    const int64_t c = i % channels;
    storeFloat(out, outType, i, normalizedPixel(in[i], table[c], inverseStd[c]));
  }
}

/// The stem's padded input from uint8 images: per pixel (row) the
/// `channels` bytes normalized, zeros up to `padded`. Packed: 8 padded
/// channels, one pack store per pixel, and 16 pixels' bytes read as
/// `channels` 16-byte loads.
template <bool Packed>
__global__ void padNormalizedKernel(const uint8_t *in, int64_t rows, int64_t channels,
                                    const float *mean, const float *std, void *out,
                                    DType outType, int64_t padded) {
  extern __shared__ float table[];
  loadNormalization(table, mean, std, channels);
  const float *inverseStd = table + channels;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t tail = 0;
  if constexpr (Packed) {
    // channels < padded == kPack: a group's bytes fit kPack loads.
    const int64_t groups = rows / kBytePack;
    for (int64_t g = first; g < groups; g += stride) {
      uint8_t bytes[kPack * kBytePack];
      const uint4 *group = reinterpret_cast<const uint4 *>(in) + g * channels;
      for (int64_t q = 0; q < channels; ++q) {
        uint8_t part[kBytePack];
        unpackBytes(group[q], part);
#pragma unroll
        for (int k = 0; k < kBytePack; ++k)
          bytes[q * kBytePack + k] = part[k];
      }
      for (int k = 0; k < kBytePack; ++k) {
        float v[kPack];
#pragma unroll
        for (int c = 0; c < kPack; ++c)
          v[c] = c < channels
                     ? normalizedPixel(bytes[k * channels + c], table[c], inverseStd[c])
                     : 0.0f;
        storePack(out, outType, g * kBytePack + k, v);
      }
    }
    tail = groups * kBytePack;
  }
  for (int64_t row = tail + first; row < rows; row += stride)
    for (int64_t c = 0; c < padded; ++c)
      storeFloat(out, outType, row * padded + c,
                 c < channels ? normalizedPixel(in[row * channels + c], table[c], inverseStd[c])
                              : 0.0f);
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

/// Philox4x32-10 (Random123), as cpu::philox4x32.
__device__ __forceinline__ uint4 philox4x32(uint4 ctr, uint2 key) {
  constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;
  constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key.x += kWeyl0;
      key.y += kWeyl1;
    }
    uint32_t hi0 = __umulhi(kMul0, ctr.x), lo0 = kMul0 * ctr.x;
    uint32_t hi1 = __umulhi(kMul1, ctr.z), lo1 = kMul1 * ctr.z;
    ctr = make_uint4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
  }
  return ctr;
}

struct DropoutArgs {
  const void *input = nullptr;
  void *result = nullptr;
  void *mask = nullptr; ///< null: rn.dropout
  DType inputType = DType::f32, resultType = DType::f32, maskType = DType::f32;
  int64_t count = 0;
  uint32_t threshold = 0; ///< drops when (word >> 8) < threshold
  float keep = 0;         ///< the mask value of kept elements, in mask's dtype
  uint2 key{};
  /// See Note [Random streams] in runtime/cpu/cpu_kernels.h.
  const int32_t *step = nullptr;
  uint64_t dropouts = 0, index = 0; ///< of the node: its function's count, its index
};

/// One thread per Philox block: elements 4 * block .. 4 * block + 3.
template <bool Vector> __global__ void dropoutKernel(DropoutArgs a) {
  // See Note [Random streams] in runtime/cpu/cpu_kernels.h.
  const uint64_t stream = uint64_t(int64_t(*a.step)) * a.dropouts + a.index;
  const uint32_t streamLo = uint32_t(stream), streamHi = uint32_t(stream >> 32);
  const int64_t blocks = (a.count + 3) / 4;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t block = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; block < blocks;
       block += stride) {
    uint4 w = philox4x32(make_uint4(uint32_t(block), uint32_t(uint64_t(block) >> 32),
                                    streamLo, streamHi),
                         a.key);
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
    float m[4], x[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      m[j] = (words[j] >> 8) < a.threshold ? 0.0f : a.keep;
    const int64_t base = 4 * block;
    if (Vector && base + 4 <= a.count) {
      // 16-byte (f32) or 8-byte (f16, bf16) accesses.
      if (a.inputType == DType::f32) {
        float4 v = static_cast<const float4 *>(a.input)[block];
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
      } else {
        uint2 v = static_cast<const uint2 *>(a.input)[block];
        const uint32_t in[2] = {v.x, v.y};
        for (int k = 0; k < 2; ++k) {
          uint16_t lo = uint16_t(in[k]), hi = uint16_t(in[k] >> 16);
          x[2 * k] = a.inputType == DType::f16 ? __half2float(__ushort_as_half(lo))
                                               : __bfloat162float(__ushort_as_bfloat16(lo));
          x[2 * k + 1] = a.inputType == DType::f16 ? __half2float(__ushort_as_half(hi))
                                                   : __bfloat162float(__ushort_as_bfloat16(hi));
        }
      }
    } else {
      for (int j = 0; j < 4; ++j)
        x[j] = base + j < a.count ? loadFloat(a.input, a.inputType, base + j) : 0.0f;
    }
    for (int j = 0; j < 4 && base + j < a.count; ++j) {
      // x * m is exact in double, so its f32 rounding is the CPU's.
      storeFloat(a.result, a.resultType, base + j, x[j] * m[j]);
      if (a.mask)
        storeFloat(a.mask, a.maskType, base + j, m[j]);
    }
  }
}

//===----------------------------------------------------------------------===//
// Stochastic depth
//===----------------------------------------------------------------------===//

struct SampleMaskArgs {
  void *mask = nullptr; ///< [N]
  DType maskType = DType::f32;
  int64_t samples = 0;
  uint32_t threshold = 0; ///< drops when (word >> 8) < threshold
  float keep = 0;         ///< the mask value of kept samples, in mask's dtype
  uint2 key{};
  /// See Note [Random streams] in runtime/cpu/cpu_kernels.h.
  const int32_t *step = nullptr;
  uint64_t count = 0, index = 0;
};

/// One thread per Philox block: samples 4 * block .. 4 * block + 3 take the
/// words dropout's elements of those indices would.
__global__ void sampleMaskKernel(SampleMaskArgs a) {
  const uint64_t stream = uint64_t(int64_t(*a.step)) * a.count + a.index;
  const uint32_t streamLo = uint32_t(stream), streamHi = uint32_t(stream >> 32);
  const int64_t blocks = (a.samples + 3) / 4;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t block = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; block < blocks;
       block += stride) {
    uint4 w = philox4x32(make_uint4(uint32_t(block), uint32_t(uint64_t(block) >> 32),
                                    streamLo, streamHi),
                         a.key);
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
    for (int j = 0; j < 4 && 4 * block + j < a.samples; ++j)
      storeFloat(a.mask, a.maskType, 4 * block + j, (words[j] >> 8) < a.threshold ? 0.0f : a.keep);
  }
}

struct SampleScaleArgs {
  const void *x = nullptr;    ///< [N, ...]
  const void *mask = nullptr; ///< [N]
  void *out = nullptr;        ///< [N, ...]
  DType xType = DType::f32, maskType = DType::f32, outType = DType::f32;
  int64_t perSample = 0, count = 0;
};

/// out[i] = x[i] * mask[i / perSample], one f32 product (the CPU's double
/// product rounds to the same f32). With Vector, perSample is a multiple of
/// 8 and x and out are aligned for packs: a pack lies in one sample.
template <bool Vector> __global__ void sampleScaleKernel(SampleScaleArgs a) {
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  if constexpr (Vector) {
    for (int64_t p = first; p < a.count / kPack; p += stride) {
      const float m = loadFloat(a.mask, a.maskType, p * kPack / a.perSample);
      float x[kPack], r[kPack];
      loadPack(a.x, a.xType, p, x);
#pragma unroll
      for (int j = 0; j < kPack; ++j)
        r[j] = x[j] * m;
      storePack(a.out, a.outType, p, r);
    }
  } else {
    for (int64_t i = first; i < a.count; i += stride)
      storeFloat(a.out, a.outType, i,
                 loadFloat(a.x, a.xType, i) * loadFloat(a.mask, a.maskType, i / a.perSample));
  }
}

} // namespace

const char *unaryOpName(UnaryOp op) {
  switch (op) {
  case UnaryOp::relu:
    return "relu";
  case UnaryOp::tanh:
    return "tanh";
  case UnaryOp::silu:
    return "silu";
  case UnaryOp::sigmoid:
    return "sigmoid";
  case UnaryOp::hardswish:
    return "hardswish";
  case UnaryOp::hardsigmoid:
    return "hardsigmoid";
  case UnaryOp::gelu:
  case UnaryOp::gelu_tanh:
    return "gelu";
  }
  return "?";
}

const char *binaryOpName(BinaryOp op) {
  switch (op) {
  case BinaryOp::add:
    return "add";
  case BinaryOp::relu_backward:
    return "relu_backward";
  case BinaryOp::tanh_backward:
    return "tanh_backward";
  case BinaryOp::silu_backward:
    return "silu_backward";
  case BinaryOp::dropout_backward:
    return "dropout_backward";
  case BinaryOp::sigmoid_backward:
    return "sigmoid_backward";
  case BinaryOp::hardswish_backward:
    return "hardswish_backward";
  case BinaryOp::hardsigmoid_backward:
    return "hardsigmoid_backward";
  case BinaryOp::gelu_backward:
  case BinaryOp::gelu_tanh_backward:
    return "gelu_backward";
  }
  return "?";
}

namespace {
/// The name of a binary op's second operand in the CPU kernels' messages.
const char *rhsNameOf(BinaryOp op) {
  switch (op) {
  case BinaryOp::add:
    return "rhs";
  case BinaryOp::relu_backward:
  case BinaryOp::tanh_backward:
  case BinaryOp::sigmoid_backward:
    return "result";
  case BinaryOp::silu_backward:
  case BinaryOp::hardswish_backward:
  case BinaryOp::hardsigmoid_backward:
  case BinaryOp::gelu_backward:
  case BinaryOp::gelu_tanh_backward:
    return "input";
  case BinaryOp::dropout_backward:
    return "mask";
  }
  return "?";
}

/// The checks of cpu::binaryMap, then the arguments of a map over the three.
Result<MapArgs> binaryArgs(const char *name, const char *lhsName, const DeviceTensor &lhs,
                           const char *rhsName, const DeviceTensor &rhs,
                           const char *resultName, const DeviceTensor &result) {
  RN_RETURN_IF_ERROR(checkFloatView(name, lhsName, lhs));
  RN_RETURN_IF_ERROR(checkShape(name, rhsName, rhs, lhs.shape));
  RN_RETURN_IF_ERROR(checkShape(name, resultName, result, lhs.shape));
  MapArgs args{lhs.data, rhs.data, result.data, lhs.dtype, rhs.dtype, result.dtype, lhs.numel()};
  if (args.count > 0 && !args.b)
    return Error(std::string(name) + ": " + rhsName + " has no data");
  return args;
}
} // namespace

Status unary(UnaryOp op, const DeviceTensor &input, const DeviceTensor &result,
             cudaStream_t stream) {
  const char *name = unaryOpName(op);
  RN_RETURN_IF_ERROR(checkFloatView(name, "input", input));
  RN_RETURN_IF_ERROR(checkShape(name, "result", result, input.shape));
  MapArgs args{input.data, nullptr, result.data, input.dtype, DType::f32, result.dtype,
               input.numel()};
  switch (op) {
  case UnaryOp::relu:
    return launchMap(args, Relu{}, stream);
  case UnaryOp::tanh:
    return launchMap(args, Tanh{}, stream);
  case UnaryOp::silu:
    return launchMap(args, Silu{}, stream);
  case UnaryOp::sigmoid:
    return launchMap(args, Sigmoid{}, stream);
  case UnaryOp::hardswish:
    return launchMap(args, Hardswish{}, stream);
  case UnaryOp::hardsigmoid:
    return launchMap(args, Hardsigmoid{}, stream);
  case UnaryOp::gelu:
    return launchMap(args, Gelu{}, stream);
  case UnaryOp::gelu_tanh:
    return launchMap(args, GeluTanh{}, stream);
  }
  return Error(std::string("unary: unknown op"));
}

Status binary(BinaryOp op, const DeviceTensor &lhs, const DeviceTensor &rhs,
              const DeviceTensor &result, cudaStream_t stream) {
  const bool isAdd = op == BinaryOp::add;
  Result<MapArgs> checked =
      binaryArgs(binaryOpName(op), isAdd ? "lhs" : "output_grad", lhs, rhsNameOf(op), rhs,
                 isAdd ? "result" : "input_grad", result);
  if (!checked.ok())
    return checked.error();
  const MapArgs &args = *checked;
  switch (op) {
  case BinaryOp::add:
    return launchMap(args, Add{}, stream);
  case BinaryOp::relu_backward:
    return launchMap(args, ReluBackward{}, stream);
  case BinaryOp::tanh_backward:
    return launchMap(args, TanhBackward{}, stream);
  case BinaryOp::silu_backward:
    return launchMap(args, SiluBackward{}, stream);
  case BinaryOp::dropout_backward:
    return launchMap(args, Multiply{}, stream);
  case BinaryOp::sigmoid_backward:
    return launchMap(args, SigmoidBackward{}, stream);
  case BinaryOp::hardswish_backward:
    return launchMap(args, HardswishBackward{}, stream);
  case BinaryOp::hardsigmoid_backward:
    return launchMap(args, HardsigmoidBackward{}, stream);
  case BinaryOp::gelu_backward:
    return launchMap(args, GeluBackward{}, stream);
  case BinaryOp::gelu_tanh_backward:
    return launchMap(args, GeluTanhBackward{}, stream);
  }
  return Error(std::string("binary: unknown op"));
}

Status hardtanh(const DeviceTensor &input, double minVal, double maxVal,
                const DeviceTensor &result, cudaStream_t stream) {
  RN_RETURN_IF_ERROR(checkFloatView("hardtanh", "input", input));
  RN_RETURN_IF_ERROR(checkShape("hardtanh", "result", result, input.shape));
  MapArgs args{input.data, nullptr, result.data, input.dtype, DType::f32, result.dtype,
               input.numel()};
  return launchMap(args, Hardtanh{float(minVal), float(maxVal)}, stream);
}

Status hardtanhBackward(const DeviceTensor &outputGrad, const DeviceTensor &result,
                        double minVal, double maxVal, const DeviceTensor &inputGrad,
                        cudaStream_t stream) {
  Result<MapArgs> args = binaryArgs("hardtanh_backward", "output_grad", outputGrad, "result",
                                    result, "input_grad", inputGrad);
  if (!args.ok())
    return args.error();
  // A clipped element holds its bound as its dtype stores it.
  return launchMap(*args,
                   HardtanhBackward{roundTo(result.dtype, float(minVal)),
                                    roundTo(result.dtype, float(maxVal))},
                   stream);
}

Status convert(const char *op, const DeviceTensor &input, const DeviceTensor &result,
               bool requireSameShape, cudaStream_t stream) {
  RN_RETURN_IF_ERROR(checkFloatView(op, "input", input));
  if (requireSameShape) {
    RN_RETURN_IF_ERROR(checkShape(op, "result", result, input.shape));
  } else {
    RN_RETURN_IF_ERROR(checkFloatView(op, "result", result));
    if (input.numel() != result.numel())
      return Error(std::string(op) + ": result shape " + shapeString(result.shape) +
                   " has another element count than " + shapeString(input.shape));
  }
  const int64_t count = input.numel();
  if (count == 0 || (input.data == result.data && input.dtype == result.dtype))
    return Status::success();
  if (input.dtype == result.dtype) {
    RN_CUDA_TRY(cudaMemcpyAsync(result.data, input.data, size_t(count) * elementSize(input.dtype),
                                cudaMemcpyDeviceToDevice, stream));
    return Status::success();
  }
  return launchMap(MapArgs{input.data, nullptr, result.data, input.dtype, DType::f32,
                           result.dtype, count},
                   Identity{}, stream);
}

namespace {
/// cpu::channelMul's checks: `input` NHWC, `scale` [N, 1, 1, C].
Status checkChannelScale(const char *op, const DeviceTensor &input, const DeviceTensor &scale) {
  RN_RETURN_IF_ERROR(checkFloatView(op, "input", input));
  if (input.rank() != 4)
    return Error(std::string(op) + ": input must be NHWC (rank 4), got shape " +
                 shapeString(input.shape));
  return checkShape(op, "scale", scale, {input.dim(0), 1, 1, input.dim(3)});
}

/// out = x * scale[n, c] over x's [N, H, W, C].
Status launchChannelMul(const DeviceTensor &x, const DeviceTensor &scale, const DeviceTensor &out,
                        cudaStream_t stream) {
  ChannelScaleArgs a;
  a.x = x.data, a.scale = scale.data, a.out = out.data;
  a.xType = x.dtype, a.scaleType = scale.dtype, a.outType = out.dtype;
  a.hw = x.dim(1) * x.dim(2), a.c = x.dim(3), a.count = x.numel();
  if (a.count == 0)
    return Status::success();
  const bool vector = a.c % kPack == 0 && alignedFor(a.x, a.xType, kPack) &&
                      alignedFor(a.scale, a.scaleType, kPack) &&
                      alignedFor(a.out, a.outType, kPack);
  const unsigned blocks = gridFor(vector ? a.count / kPack : a.count, kThreads);
  if (vector)
    channelMulKernel<true><<<blocks, kThreads, 0, stream>>>(a);
  else
    channelMulKernel<false><<<blocks, kThreads, 0, stream>>>(a);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}
} // namespace

Status channelMul(const DeviceTensor &input, const DeviceTensor &scale, const DeviceTensor &result,
                  cudaStream_t stream) {
  RN_RETURN_IF_ERROR(checkChannelScale("channel_mul", input, scale));
  RN_RETURN_IF_ERROR(checkShape("channel_mul", "result", result, input.shape));
  return launchChannelMul(input, scale, result, stream);
}

Status channelMulBackward(const DeviceTensor &outputGrad, const DeviceTensor &input,
                          const DeviceTensor &scale, const DeviceTensor &inputGrad,
                          const DeviceTensor &scaleGrad, cudaStream_t stream) {
  const char *op = "channel_mul_backward";
  RN_RETURN_IF_ERROR(checkChannelScale(op, input, scale));
  RN_RETURN_IF_ERROR(checkShape(op, "output_grad", outputGrad, input.shape));
  RN_RETURN_IF_ERROR(checkShape(op, "input_grad", inputGrad, input.shape));
  RN_RETURN_IF_ERROR(checkShape(op, "scale_grad", scaleGrad, scale.shape));
  // Both read dy; neither writes what the other reads (a result overlaps no
  // operand), so they run back to back on the stream.
  RN_RETURN_IF_ERROR(launchChannelMul(outputGrad, scale, inputGrad, stream));
  const int64_t n = input.dim(0), hw = input.dim(1) * input.dim(2), c = input.dim(3);
  if (n * c == 0)
    return Status::success();
  // Few sums (N * C) of many terms: small blocks spread them over more SMs.
  constexpr int kSumThreads = 64;
  channelScaleGradKernel<<<gridFor(n * c, kSumThreads), kSumThreads, 0, stream>>>(
      outputGrad.data, outputGrad.dtype, input.data, input.dtype, scaleGrad.data, scaleGrad.dtype,
      n, hw, c);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status padChannels(const DeviceTensor &input, const DeviceTensor &result, cudaStream_t stream) {
  RN_RETURN_IF_ERROR(checkFloatView("pad_channels", "input", input));
  RN_RETURN_IF_ERROR(checkFloatView("pad_channels", "result", result));
  if (input.shape.empty() || input.shape.size() != result.shape.size())
    return Error("pad_channels: input " + shapeString(input.shape) + " and result " +
                 shapeString(result.shape) + " must have one rank of at least 1");
  std::vector<int64_t> widened = input.shape;
  const int64_t channels = input.shape.back(), padded = result.shape.back();
  widened.back() = padded;
  if (padded <= channels)
    return Error("pad_channels: result " + shapeString(result.shape) +
                 " must have more channels than input " + shapeString(input.shape));
  RN_RETURN_IF_ERROR(checkShape("pad_channels", "result", result, widened));
  const int64_t rows = channels ? input.numel() / channels : 0;
  if (rows == 0)
    return Status::success();
  const unsigned blocks = gridFor(rows, kThreads);
  if (padded == kPack && result.dtype != DType::f32 && alignedFor(result.data, result.dtype, kPack))
    padChannelsKernel<true><<<blocks, kThreads, 0, stream>>>(input.data, input.dtype, channels,
                                                             result.data, result.dtype, padded,
                                                             rows);
  else
    padChannelsKernel<false><<<blocks, kThreads, 0, stream>>>(input.data, input.dtype, channels,
                                                              result.data, result.dtype, padded,
                                                              rows);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

namespace {

/// `input` uint8 NHWC images with data, `mean` and `std` [C] f32 (C its
/// channels); errors name `op`.
Status checkImageNormalization(const char *op, const DeviceTensor &input, const DeviceTensor &mean,
                               const DeviceTensor &std) {
  if (input.dtype != DType::u8 || input.rank() != 4)
    return Error(std::string(op) + ": input must be ui8 NHWC images, got " +
                 std::string(dtypeName(input.dtype)) + " " + shapeString(input.shape));
  for (int64_t d : input.shape)
    if (d < 0)
      return Error(std::string(op) + ": input has a negative size in " + shapeString(input.shape));
  if (input.dim(3) < 1)
    return Error(std::string(op) + ": input " + shapeString(input.shape) + " has no channels");
  if (!input.data && input.numel() != 0)
    return Error(std::string(op) + ": input has no data");
  const char *names[] = {"mean", "std"};
  const DeviceTensor *vectors[] = {&mean, &std};
  for (int k = 0; k < 2; ++k) {
    RN_RETURN_IF_ERROR(checkShape(op, names[k], *vectors[k], {input.dim(3)}));
    if (vectors[k]->dtype != DType::f32)
      return Error(std::string(op) + ": " + names[k] + " must be f32, got " +
                   std::string(dtypeName(vectors[k]->dtype)));
  }
  return Status::success();
}

} // namespace

Status normalizeImages(const DeviceTensor &input, const DeviceTensor &mean,
                       const DeviceTensor &std, const DeviceTensor &result, cudaStream_t stream) {
  const char *op = "normalize_images";
  RN_RETURN_IF_ERROR(checkImageNormalization(op, input, mean, std));
  RN_RETURN_IF_ERROR(checkShape(op, "result", result, input.shape));
  const int64_t count = input.numel(), channels = input.dim(3);
  if (count == 0)
    return Status::success();
  const auto *in = static_cast<const uint8_t *>(input.data);
  const size_t table = 2 * size_t(channels) * sizeof(float);
  const bool vector =
      alignedFor(in, DType::u8, kBytePack) && alignedFor(result.data, result.dtype, kPack);
  const unsigned blocks = gridFor(vector ? count / kBytePack + 1 : count, kThreads);
  if (vector)
    normalizeImagesKernel<true><<<blocks, kThreads, table, stream>>>(
        in, count, channels, static_cast<const float *>(mean.data),
        static_cast<const float *>(std.data), result.data, result.dtype);
  else
    normalizeImagesKernel<false><<<blocks, kThreads, table, stream>>>(
        in, count, channels, static_cast<const float *>(mean.data),
        static_cast<const float *>(std.data), result.data, result.dtype);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status padNormalizedChannels(const DeviceTensor &input, const DeviceTensor &mean,
                             const DeviceTensor &std, const DeviceTensor &result,
                             cudaStream_t stream) {
  const char *op = "pad_channels";
  RN_RETURN_IF_ERROR(checkImageNormalization(op, input, mean, std));
  RN_RETURN_IF_ERROR(checkFloatView(op, "result", result));
  const int64_t channels = input.dim(3), padded = result.rank() == 4 ? result.dim(3) : 0;
  if (padded <= channels)
    return Error("pad_channels: result " + shapeString(result.shape) +
                 " must have more channels than input " + shapeString(input.shape));
  RN_RETURN_IF_ERROR(checkShape(op, "result", result,
                                {input.dim(0), input.dim(1), input.dim(2), padded}));
  const int64_t rows = input.numel() / channels;
  if (rows == 0)
    return Status::success();
  const auto *in = static_cast<const uint8_t *>(input.data);
  const size_t table = 2 * size_t(channels) * sizeof(float);
  const bool packed = padded == kPack && alignedFor(in, DType::u8, kBytePack) &&
                      alignedFor(result.data, result.dtype, kPack);
  const unsigned blocks = gridFor(packed ? rows / kBytePack + 1 : rows, kThreads);
  if (packed)
    padNormalizedKernel<true><<<blocks, kThreads, table, stream>>>(
        in, rows, channels, static_cast<const float *>(mean.data),
        static_cast<const float *>(std.data), result.data, result.dtype, padded);
  else
    padNormalizedKernel<false><<<blocks, kThreads, table, stream>>>(
        in, rows, channels, static_cast<const float *>(mean.data),
        static_cast<const float *>(std.data), result.data, result.dtype, padded);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

Status copyTensor(const char *op, const DeviceTensor &from, const DeviceTensor &to,
                  cudaStream_t stream) {
  const int64_t count = to.numel();
  if (from.numel() != count)
    return Error(std::string(op) + ": copy from " + shapeString(from.shape) + " to " +
                 shapeString(to.shape) + ": element counts differ");
  if (from.data == to.data || count == 0)
    return Status::success();
  if (!from.data || !to.data)
    return Error(std::string(op) + ": copy of a tensor without data");
  if (from.dtype == to.dtype) {
    RN_CUDA_TRY(cudaMemcpyAsync(to.data, from.data, size_t(count) * elementSize(to.dtype),
                                cudaMemcpyDeviceToDevice, stream));
    return Status::success();
  }
  if (isFloat(from.dtype) && isFloat(to.dtype))
    return launchMap(MapArgs{from.data, nullptr, to.data, from.dtype, DType::f32, to.dtype, count},
                     Identity{}, stream);
  return Error(std::string(op) + ": cannot copy " + std::string(dtypeName(from.dtype)) + " to " +
               std::string(dtypeName(to.dtype)) + " (only float dtypes convert)");
}

Status zero(const DeviceTensor &result, cudaStream_t stream) {
  for (int64_t d : result.shape)
    if (d < 0)
      return Error("zero: result has a negative size in " + shapeString(result.shape));
  const int64_t count = result.numel();
  if (count == 0)
    return Status::success();
  if (!result.data)
    return Error("zero: result has no data");
  RN_CUDA_TRY(cudaMemsetAsync(result.data, 0, size_t(count) * elementSize(result.dtype), stream));
  return Status::success();
}

Status dropout(const DeviceTensor &input, double p, uint64_t seed, const DeviceTensor &step,
               uint64_t dropouts, uint64_t index, const DeviceTensor &result,
               const DeviceTensor *mask, cudaStream_t cudaStream) {
  const char *name = mask ? "dropout_train" : "dropout";
  RN_RETURN_IF_ERROR(checkFloatView(name, "input", input));
  if (!step.data || step.numel() != 1 || step.dtype != DType::i32)
    return Error(std::string(name) + ": step must be an i32 scalar with data, got " +
                 std::string(dtypeName(step.dtype)) + " " + shapeString(step.shape));
  if (index >= dropouts)
    return Error(std::string(name) + ": index " + std::to_string(index) +
                 " must be below the dropout count " + std::to_string(dropouts));
  RN_RETURN_IF_ERROR(checkShape(name, "result", result, input.shape));
  if (mask)
    RN_RETURN_IF_ERROR(checkShape(name, "mask", *mask, input.shape));
  if (!(p >= 0 && p <= 1))
    return Error(std::string(name) + ": p must be in [0, 1], got " + std::to_string(p));
  const int64_t count = input.numel();
  if (count == 0)
    return Status::success();

  DropoutArgs a;
  a.input = input.data;
  a.result = result.data;
  a.mask = mask ? mask->data : nullptr;
  a.inputType = input.dtype;
  a.resultType = result.dtype;
  a.maskType = mask ? mask->dtype : result.dtype;
  a.count = count;
  // cpu_elementwise.cpp's dropThreshold and keep value, to the bit.
  a.threshold = uint32_t(std::ceil(std::min(std::max(p, 0.0), 1.0) * 16777216.0));
  a.keep = p < 1 ? roundTo(a.maskType, float(1.0 / (1.0 - p))) : 0.0f;
  a.key = make_uint2(uint32_t(seed), uint32_t(seed >> 32));
  a.step = static_cast<const int32_t *>(step.data);
  a.dropouts = dropouts;
  a.index = index;

  // Vector loads of the input only: the stores of 4 mixed-dtype elements
  // are 8 or 16 bytes per thread either way and stay coalesced.
  bool vector = alignedFor(input.data, input.dtype, 4);
  unsigned blocks = gridFor((count + 3) / 4, kThreads);
  if (vector)
    dropoutKernel<true><<<blocks, kThreads, 0, cudaStream>>>(a);
  else
    dropoutKernel<false><<<blocks, kThreads, 0, cudaStream>>>(a);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

namespace {
/// cpu::stochasticDepthTrain's checks of `input` (a batch dimension),
/// `result` (input's shape) and `mask` ([N]).
Status checkSampleMask(const char *op, const char *inName, const DeviceTensor &input,
                       const char *resultName, const DeviceTensor &result,
                       const DeviceTensor &mask) {
  RN_RETURN_IF_ERROR(checkFloatView(op, inName, input));
  if (input.rank() < 1)
    return Error(std::string(op) + ": " + inName + " must have a batch dimension, got shape " +
                 shapeString(input.shape));
  RN_RETURN_IF_ERROR(checkShape(op, resultName, result, input.shape));
  return checkShape(op, "mask", mask, {input.dim(0)});
}

/// out[n, ...] = x[n, ...] * mask[n] over x's shape.
Status launchSampleScale(const DeviceTensor &x, const DeviceTensor &mask, const DeviceTensor &out,
                         cudaStream_t stream) {
  SampleScaleArgs a;
  a.x = x.data, a.mask = mask.data, a.out = out.data;
  a.xType = x.dtype, a.maskType = mask.dtype, a.outType = out.dtype;
  a.count = x.numel();
  if (a.count == 0)
    return Status::success();
  a.perSample = a.count / x.dim(0);
  const bool vector = a.perSample % kPack == 0 && alignedFor(a.x, a.xType, kPack) &&
                      alignedFor(a.out, a.outType, kPack);
  const unsigned blocks = gridFor(vector ? a.count / kPack : a.count, kThreads);
  if (vector)
    sampleScaleKernel<true><<<blocks, kThreads, 0, stream>>>(a);
  else
    sampleScaleKernel<false><<<blocks, kThreads, 0, stream>>>(a);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}
} // namespace

Status stochasticDepth(const DeviceTensor &input, double p, uint64_t seed, const DeviceTensor &step,
                       uint64_t count, uint64_t index, const DeviceTensor &result,
                       const DeviceTensor &mask, cudaStream_t cudaStream) {
  const char *name = "stochastic_depth_train";
  if (!step.data || step.numel() != 1 || step.dtype != DType::i32)
    return Error(std::string(name) + ": step must be an i32 scalar with data, got " +
                 std::string(dtypeName(step.dtype)) + " " + shapeString(step.shape));
  if (index >= count)
    return Error(std::string(name) + ": index " + std::to_string(index) +
                 " must be below the random op count " + std::to_string(count));
  RN_RETURN_IF_ERROR(checkSampleMask(name, "input", input, "result", result, mask));
  if (!(p >= 0 && p <= 1))
    return Error(std::string(name) + ": p must be in [0, 1], got " + std::to_string(p));
  const int64_t samples = input.dim(0);
  if (samples == 0)
    return Status::success();

  SampleMaskArgs a;
  a.mask = mask.data;
  a.maskType = mask.dtype;
  a.samples = samples;
  // cpu_elementwise.cpp's dropThreshold and keep value, to the bit.
  a.threshold = uint32_t(std::ceil(std::min(std::max(p, 0.0), 1.0) * 16777216.0));
  a.keep = p < 1 ? roundTo(a.maskType, float(1.0 / (1.0 - p))) : 0.0f;
  a.key = make_uint2(uint32_t(seed), uint32_t(seed >> 32));
  a.step = static_cast<const int32_t *>(step.data);
  a.count = count;
  a.index = index;
  sampleMaskKernel<<<gridFor((samples + 3) / 4, kThreads), kThreads, 0, cudaStream>>>(a);
  RN_CUDA_TRY_LAUNCH();
  // Stream order makes the mask visible to the scaling.
  return launchSampleScale(input, mask, result, cudaStream);
}

Status stochasticDepthBackward(const DeviceTensor &outputGrad, const DeviceTensor &mask,
                               const DeviceTensor &inputGrad, cudaStream_t stream) {
  RN_RETURN_IF_ERROR(checkSampleMask("stochastic_depth_backward", "output_grad", outputGrad,
                                     "input_grad", inputGrad, mask));
  return launchSampleScale(outputGrad, mask, inputGrad, stream);
}

} // namespace rn::cuda
