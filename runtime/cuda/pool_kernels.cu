//===- pool_kernels.cu - Max, average, adaptive and global average pooling -*- C++ -*-===//
//
// NHWC. The four windowed kernels are templates on the storage type (f32,
// f16, bf16; `AnyFloat`, a run-time dtype switch, only for a call whose
// tensors have different dtypes, which compiled programs never emit) and
// on V, the channels one thread handles: V consecutive channels of one
// pixel in one aligned vector access of up to 16 bytes, so that a warp
// runs along C. V is the widest of 8 (2-byte types) or 4 (f32), 4, 2, 1
// that divides C and that every pointer's alignment allows. Index math is
// 32-bit: one launch covers whole images and at most 2^31 - 1 input
// elements, and a bigger batch becomes several launches.
//
// Exactness against cpu_pool.cpp, bit for bit:
// - max_pool2d compares the exactly widened values in f32 with the CPU's
//   rule (first maximum in row-major window order, NaN wins, padding never)
//   and copies the winner.
// - avg_pool2d and avg_pool2d_backward do the CPU's double operations in
//   the CPU's order: the window sum, then / (KH * KW); the backward sums
//   dy / (KH * KW) over the covering windows in output order, gathered per
//   input element (no atomics). A power-of-two divisor multiplies by its
//   reciprocal instead, which is the same double result. With ceil_mode or
//   exclude_pad each window computes its own divisor (the CPU's
//   PoolGeometry::divisor).
// - max_pool2d_backward has no saved indices (the op takes the input).
//   Pass 1, one thread per output element, writes its window's arg-max as
//   an offset within the window (one byte; two for windows of more than
//   256 positions) into the stream workspace, as many whole images at a
//   time as the workspace holds. Pass 2, one thread per input element,
//   sums dy over the covering windows whose arg-max is that element, in
//   output order. Up to two terms the sum is f32 (0 + a + b rounds as the
//   CPU's double sum does: double rounding of one addition is innocuous);
//   from three on it is the CPU's double sum, because f32 partial sums
//   would round where the double ones are exact (1 + 2^-24 + 2^-24 is
//   1 + 2^-23 on the CPU, 1 in f32). When windows do not overlap (stride
//   >= kernel, VGG's 2x2/2) one pass suffices and needs no workspace: a
//   thread owns a window and the input cell around it, finds the arg-max
//   and writes 0 + dy there and zeros everywhere else in the cell.
// - global average pooling sums in double in the CPU's order (one thread
//   per (n, c)).
// - adaptive_avg_pool2d: one thread per output element sums its window in
//   double in row-major order and divides by the window's count; the
//   backward, one thread per input element, gathers dy / count over the
//   windows that cover it in output order, the order in which the CPU
//   scatters them.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include "runtime/cuda/device_element.cuh"

namespace rn::cuda {
namespace {

using detail::gridFor;
using detail::isFloat;
using detail::loadFloat;
using detail::checkFloatView;
using detail::checkShape;
using detail::shapeString;
using detail::storeDouble;
using detail::storeFloat;

constexpr int kThreads = 256;
/// Elements one launch may index with 32-bit math (grid-stride loops then
/// stay below 2^32 as well: the stride is at most 4096 * 256).
constexpr int64_t kMaxLaunchElements = (int64_t(1) << 31) - 1;
/// Window positions a one-byte arg-max offset can name.
constexpr int64_t kMaxByteOffsetWindow = 256;
constexpr int64_t kMaxWindow = 65536; ///< two-byte offsets

struct PoolGeometry {
  int64_t n, h, w, c, oh, ow;
  int64_t kh, kw, sh, sw, ph, pw;
};

/// One output size of a pooling (cpu_pool.cpp's pooledSize, PyTorch's
/// pooling_output_shape).
int64_t pooledSize(int64_t size, int64_t kernel, int64_t stride, int64_t pad, bool ceilMode) {
  int64_t span = size + 2 * pad - kernel;
  if (!ceilMode)
    return span / stride + 1;
  int64_t out = (span + stride - 1) / stride + 1;
  return (out - 1) * stride >= size + pad ? out - 1 : out;
}

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
  g.oh = pooledSize(g.h, g.kh, g.sh, g.ph, params.ceilMode);
  g.ow = pooledSize(g.w, g.kw, g.sw, g.pw, params.ceilMode);
  return Status::success();
}


std::vector<int64_t> outputShape(const PoolGeometry &g) { return {g.n, g.oh, g.ow, g.c}; }

/// Windows overlap unless the stride reaches the kernel size in both
/// directions; disjoint windows take the single-pass backward.
bool windowsDisjoint(const PoolGeometry &g) { return g.sh >= g.kh && g.sw >= g.kw; }

/// Bytes of one arg-max offset: one while a byte can name every window
/// position (kernels up to 16x16), else two.
int64_t offsetBytes(const PoolGeometry &g) {
  return g.kh * g.kw <= kMaxByteOffsetWindow ? 1 : 2;
}

/// Images one launch may cover under the 32-bit index limit.
Result<int64_t> imagesPerLaunch(const char *op, const PoolGeometry &g) {
  int64_t image = g.h * g.w * g.c;
  if (image > kMaxLaunchElements)
    return Error(std::string(op) + ": one image of " + shapeString({g.h, g.w, g.c}) + " has " +
                 std::to_string(image) + " elements, more than the " +
                 std::to_string(kMaxLaunchElements) + " a pool kernel indexes");
  return image == 0 ? g.n : std::max<int64_t>(1, std::min(g.n, kMaxLaunchElements / image));
}

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//

/// Storage whose dtype is a run-time argument (calls that mix dtypes).
struct AnyFloat {};


/// Elements index .. index + V - 1 of a float tensor, widened to f32 (exact),
/// in one load (`index` is a multiple of V, the pointer aligned for V).
template <typename S, int V>
__device__ __forceinline__ void loadPack(const void *data, DType type, uint32_t index,
                                         float (&out)[V]) {
  if constexpr (std::is_same_v<S, AnyFloat>) {
    static_assert(V == 1, "run-time dtypes are read one element at a time");
    out[0] = loadFloat(data, type, index);
  } else {
    using Raw = typename RawVec<sizeof(S) * V>::type;
    Raw raw = *reinterpret_cast<const Raw *>(static_cast<const S *>(data) + index);
    const S *e = reinterpret_cast<const S *>(&raw);
#pragma unroll
    for (int v = 0; v < V; ++v)
      out[v] = toFloat<S>(e[v]);
  }
}

/// Stores V values rounded to nearest even into elements index .. index + V - 1.
template <typename S, int V>
__device__ __forceinline__ void storePack(void *data, DType type, uint32_t index,
                                          const float (&in)[V]) {
  if constexpr (std::is_same_v<S, AnyFloat>) {
    static_assert(V == 1, "run-time dtypes are written one element at a time");
    storeFloat(data, type, index, in[0]);
  } else {
    using Raw = typename RawVec<sizeof(S) * V>::type;
    Raw raw;
    S *e = reinterpret_cast<S *>(&raw);
#pragma unroll
    for (int v = 0; v < V; ++v)
      e[v] = fromFloat<S>(in[v]);
    *reinterpret_cast<Raw *>(static_cast<S *>(data) + index) = raw;
  }
}

template <typename Offset, int V>
__device__ __forceinline__ void loadOffsets(const void *data, uint32_t index, Offset (&out)[V]) {
  using Raw = typename RawVec<sizeof(Offset) * V>::type;
  Raw raw = *reinterpret_cast<const Raw *>(static_cast<const Offset *>(data) + index);
  const Offset *e = reinterpret_cast<const Offset *>(&raw);
#pragma unroll
  for (int v = 0; v < V; ++v)
    out[v] = e[v];
}

template <typename Offset, int V>
__device__ __forceinline__ void storeOffsets(void *data, uint32_t index, const Offset (&in)[V]) {
  using Raw = typename RawVec<sizeof(Offset) * V>::type;
  Raw raw;
  Offset *e = reinterpret_cast<Offset *>(&raw);
#pragma unroll
  for (int v = 0; v < V; ++v)
    e[v] = in[v];
  *reinterpret_cast<Raw *>(static_cast<Offset *>(data) + index) = raw;
}

//===----------------------------------------------------------------------===//
// Geometry on the device (32-bit)
//===----------------------------------------------------------------------===//

/// One launch's geometry: `images` whole images of the batch.
struct Window {
  int images, h, w, c, oh, ow;
  int kh, kw, sh, sw, ph, pw;
};

struct PoolArgs {
  const void *x = nullptr;  ///< forward input (max pool backward: the input)
  const void *dy = nullptr; ///< backward: output gradient
  void *out = nullptr;
  void *offsets = nullptr; ///< max pool backward: the window arg-max offsets
  DType xType = DType::f32, dyType = DType::f32, outType = DType::f32;
  Window g{};
  double divisor = 1;     ///< avg pool: KH * KW
  double reciprocal = 1;  ///< 1 / divisor, used when exact (a power of two)
  bool divideByReciprocal = false;
  bool windowDivisor = false; ///< avg pool: each window's own divisor
  bool excludePad = false;    ///< avg pool: the divisor counts no padding
};

/// Thread `t` of a grid over pixels x channel groups: the group's first
/// channel, the pixel's column, row and image in a [images, rows, cols, C]
/// tensor. The element index of the group is t * V.
template <int V> struct PixelGroup {
  int c0, x, y, image;
  __device__ __forceinline__ PixelGroup(uint32_t t, const Window &g, int rows, int cols) {
    const uint32_t groups = uint32_t(g.c / V);
    uint32_t pixel = t / groups;
    c0 = int(t - pixel * groups) * V;
    uint32_t rest = pixel / uint32_t(cols);
    x = int(pixel - rest * uint32_t(cols));
    image = int(rest / uint32_t(rows));
    y = int(rest - uint32_t(image) * uint32_t(rows));
  }
};

/// The part of window (oy, ox) inside the input: rows y0 + [kyLo, kyHi),
/// columns x0 + [kxLo, kxHi). Never empty (padding <= kernel / 2).
struct ClippedWindow {
  int y0, x0, kyLo, kyHi, kxLo, kxHi;
  __device__ __forceinline__ ClippedWindow(int oy, int ox, const Window &g) {
    y0 = oy * g.sh - g.ph;
    x0 = ox * g.sw - g.pw;
    kyLo = max(0, -y0);
    kyHi = min(g.kh, g.h - y0);
    kxLo = max(0, -x0);
    kxHi = min(g.kw, g.w - x0);
  }
};

/// Element index of (image, y, x, c) in a [*, rows, cols, C] tensor. `x`
/// may be a padded (negative) column when the caller adds kx * C back:
/// unsigned arithmetic wraps modulo 2^32 and the final index is in range.
__device__ __forceinline__ uint32_t elementIndex(int image, int y, int x, int c, int rows,
                                                 int cols, int channels) {
  return ((uint32_t(image) * uint32_t(rows) + uint32_t(y)) * uint32_t(cols) + uint32_t(x)) *
             uint32_t(channels) +
         uint32_t(c);
}

/// The output rows (or columns) whose windows hold input row `i`:
/// o * s - p <= i <= o * s - p + k - 1, clamped to [0, outSize); lo > hi
/// when none does.
__device__ __forceinline__ void coveringRange(int i, int k, int s, int p, int outSize, int &lo,
                                              int &hi) {
  int top = i + p - k + 1; // o * s >= top
  lo = top <= 0 ? 0 : (top + s - 1) / s;
  hi = min((i + p) / s, outSize - 1); // i + p >= 0
}

/// The CPU's max rule: `v` replaces the best so far when greater, or when
/// it is a NaN and the best is not. (The first element of a window always
/// wins on the CPU; starting from -inf picks it too, or keeps -inf, the
/// same value, at the same first position.)
__device__ __forceinline__ bool beats(float v, float best) {
  return v > best || (isnan(v) && !isnan(best));
}

/// Calls visit(ky, kx, index) for the positions of a window inside the
/// input, in row-major order; `index` is the element of channel c0. With a
/// compile-time square kernel K (2x2 and 3x3, the common ones) the loops
/// unroll into predicated steps, so the loads of a window are issued
/// together instead of one per loop trip.
template <int K, typename Visit>
__device__ __forceinline__ void forEachInWindow(const ClippedWindow &win, const Window &g,
                                                int image, int c0, Visit &&visit) {
  const uint32_t origin = elementIndex(image, win.y0, win.x0, c0, g.h, g.w, g.c);
  const uint32_t rowStride = uint32_t(g.w) * uint32_t(g.c);
  auto at = [&](int ky, int kx) {
    return origin + uint32_t(ky) * rowStride + uint32_t(kx) * uint32_t(g.c);
  };
  if constexpr (K > 0) {
#pragma unroll
    for (int ky = 0; ky < K; ++ky)
#pragma unroll
      for (int kx = 0; kx < K; ++kx)
        if (ky >= win.kyLo && ky < win.kyHi && kx >= win.kxLo && kx < win.kxHi)
          visit(ky, kx, at(ky, kx));
  } else {
    for (int ky = win.kyLo; ky < win.kyHi; ++ky)
      for (int kx = win.kxLo; kx < win.kxHi; ++kx)
        visit(ky, kx, at(ky, kx));
  }
}

/// Calls visit(oy, ox) for the output windows that hold input (iy, ix), in
/// output order. With a compile-time bound Cover on the windows per
/// dimension (2 for 3x3 stride 2) the loops unroll into predicated steps.
template <int Cover, typename Visit>
__device__ __forceinline__ void forEachCoveringWindow(int iy, int ix, const Window &g,
                                                      Visit &&visit) {
  int oyLo, oyHi, oxLo, oxHi;
  coveringRange(iy, g.kh, g.sh, g.ph, g.oh, oyLo, oyHi);
  coveringRange(ix, g.kw, g.sw, g.pw, g.ow, oxLo, oxHi);
  if constexpr (Cover > 0) {
#pragma unroll
    for (int j = 0; j < Cover; ++j)
#pragma unroll
      for (int i = 0; i < Cover; ++i)
        if (oyLo + j <= oyHi && oxLo + i <= oxHi)
          visit(oyLo + j, oxLo + i);
  } else {
    for (int oy = oyLo; oy <= oyHi; ++oy)
      for (int ox = oxLo; ox <= oxHi; ++ox)
        visit(oy, ox);
  }
}

/// The window's arg-max per channel as offsets ky * kw + kx, and the maxima.
template <typename S, int V, int K, typename Offset>
__device__ __forceinline__ void windowArgMax(const PoolArgs &a, const ClippedWindow &win,
                                             int image, int c0, Offset (&arg)[V],
                                             float (&best)[V]) {
  const Window &g = a.g;
#pragma unroll
  for (int v = 0; v < V; ++v) {
    best[v] = -INFINITY;
    arg[v] = Offset(win.kyLo * g.kw + win.kxLo);
  }
  forEachInWindow<K>(win, g, image, c0, [&](int ky, int kx, uint32_t index) {
    float x[V];
    loadPack<S, V>(a.x, a.xType, index, x);
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (beats(x[v], best[v])) {
        best[v] = x[v];
        arg[v] = Offset(ky * g.kw + kx);
      }
  });
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

#define RN_GRID_STRIDE(t, count)                                                          \
  for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < (count);                    \
       t += gridDim.x * blockDim.x)

/// One thread per output pixel and channel group.
template <typename S, int V, int K>
__global__ void __launch_bounds__(kThreads) maxPoolKernel(PoolArgs a) {
  const Window &g = a.g;
  const uint32_t count = uint32_t(g.images) * uint32_t(g.oh) * uint32_t(g.ow) * uint32_t(g.c / V);
  RN_GRID_STRIDE(t, count) {
    PixelGroup<V> p(t, g, g.oh, g.ow);
    float best[V];
#pragma unroll
    for (int v = 0; v < V; ++v)
      best[v] = -INFINITY; // what the CPU leaves in a window of padding only
    forEachInWindow<K>(ClippedWindow(p.y, p.x, g), g, p.image, p.c0,
                       [&](int, int, uint32_t index) {
                         float x[V];
                         loadPack<S, V>(a.x, a.xType, index, x);
#pragma unroll
                         for (int v = 0; v < V; ++v)
                           if (beats(x[v], best[v]))
                             best[v] = x[v];
                       });
    storePack<S, V>(a.out, a.outType, t * V, best);
  }
}

/// Backward pass 1: one thread per output pixel and channel group writes
/// the window arg-max offsets.
template <typename S, int V, int K, typename Offset>
__global__ void __launch_bounds__(kThreads) maxPoolArgMaxKernel(PoolArgs a) {
  const Window &g = a.g;
  const uint32_t count = uint32_t(g.images) * uint32_t(g.oh) * uint32_t(g.ow) * uint32_t(g.c / V);
  RN_GRID_STRIDE(t, count) {
    PixelGroup<V> p(t, g, g.oh, g.ow);
    Offset arg[V];
    float best[V];
    windowArgMax<S, V, K>(a, ClippedWindow(p.y, p.x, g), p.image, p.c0, arg, best);
    storeOffsets<Offset, V>(a.offsets, t * V, arg);
  }
}

/// Backward pass 2: one thread per input pixel and channel group sums the
/// gradients of the covering windows whose arg-max it is, in output order.
template <typename S, int V, int Cover, typename Offset>
__global__ void __launch_bounds__(kThreads) maxPoolGatherKernel(PoolArgs a) {
  const Window &g = a.g;
  const uint32_t count = uint32_t(g.images) * uint32_t(g.h) * uint32_t(g.w) * uint32_t(g.c / V);
  RN_GRID_STRIDE(t, count) {
    PixelGroup<V> p(t, g, g.h, g.w);
    float sum[V];   // up to two terms: rounds as the CPU's double sum
    double wide[V]; // the CPU's double sum, used from three terms on
    int hits[V];
#pragma unroll
    for (int v = 0; v < V; ++v) {
      sum[v] = 0.0f;
      wide[v] = 0.0;
      hits[v] = 0;
    }
    forEachCoveringWindow<Cover>(p.y, p.x, g, [&](int oy, int ox) {
      const int ky = p.y + g.ph - oy * g.sh, kx = p.x + g.pw - ox * g.sw;
      const Offset position = Offset(ky * g.kw + kx);
      const uint32_t o = elementIndex(p.image, oy, ox, p.c0, g.oh, g.ow, g.c);
      Offset arg[V];
      loadOffsets<Offset, V>(a.offsets, o, arg);
      bool any = false;
#pragma unroll
      for (int v = 0; v < V; ++v)
        any |= arg[v] == position;
      if (!any)
        return; // dy is read only where this element won
      float dy[V];
      loadPack<S, V>(a.dy, a.dyType, o, dy);
#pragma unroll
      for (int v = 0; v < V; ++v)
        if (arg[v] == position) {
          sum[v] += dy[v];
          wide[v] += double(dy[v]);
          ++hits[v];
        }
    });
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (hits[v] >= 3)
        sum[v] = __double2float_rn(wide[v]);
    storePack<S, V>(a.out, a.outType, t * V, sum);
  }
}

/// Backward for disjoint windows, one pass: one thread per output pixel and
/// channel group owns the input cell [y0, y0 + sh) x [x0, x0 + sw) of its
/// window (clipped to the input; the last row and column of cells extend
/// to the input's edge), so every input element is written exactly once:
/// 0 + dy at the arg-max (-0 becomes +0, as in the CPU's 0.0 + dy), +0
/// elsewhere.
template <typename S, int V, int K>
__global__ void __launch_bounds__(kThreads) maxPoolDisjointBackwardKernel(PoolArgs a) {
  const Window &g = a.g;
  const uint32_t count = uint32_t(g.images) * uint32_t(g.oh) * uint32_t(g.ow) * uint32_t(g.c / V);
  RN_GRID_STRIDE(t, count) {
    PixelGroup<V> p(t, g, g.oh, g.ow);
    ClippedWindow win(p.y, p.x, g);
    int arg[V];
    float best[V];
    windowArgMax<S, V, K>(a, win, p.image, p.c0, arg, best);
    float grad[V];
    loadPack<S, V>(a.dy, a.dyType, t * V, grad);
#pragma unroll
    for (int v = 0; v < V; ++v)
      grad[v] = 0.0f + grad[v];
    const int yEnd = p.y == g.oh - 1 ? g.h : win.y0 + g.sh;
    const int xEnd = p.x == g.ow - 1 ? g.w : win.x0 + g.sw;
    for (int iy = max(0, win.y0); iy < yEnd; ++iy) {
      const int ky = iy - win.y0;
      const uint32_t row = elementIndex(p.image, iy, 0, p.c0, g.h, g.w, g.c);
      for (int ix = max(0, win.x0); ix < xEnd; ++ix) {
        const int kx = ix - win.x0;
        const bool inWindow = ky < g.kh && kx < g.kw;
        const int position = ky * g.kw + kx;
        float out[V];
#pragma unroll
        for (int v = 0; v < V; ++v)
          out[v] = inWindow && arg[v] == position ? grad[v] : 0.0f;
        storePack<S, V>(a.out, a.outType, row + uint32_t(ix) * uint32_t(g.c), out);
      }
    }
  }
}

/// `value` over window (oy, ox)'s divisor: KH * KW, or with
/// windowDivisor the CPU's PoolGeometry::divisor (the window clipped to
/// the padded input, or with excludePad to the input).
__device__ __forceinline__ double divideByWindow(const PoolArgs &a, int oy, int ox,
                                                 double value) {
  if (a.windowDivisor) {
    const Window &g = a.g;
    int y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
    int y1 = min(y0 + g.kh, g.h + g.ph), x1 = min(x0 + g.kw, g.w + g.pw);
    if (a.excludePad) {
      y0 = max(y0, 0);
      x0 = max(x0, 0);
      y1 = min(y1, g.h);
      x1 = min(x1, g.w);
    }
    return value / double(int64_t(y1 - y0) * int64_t(x1 - x0));
  }
  return a.divideByReciprocal ? value * a.reciprocal : value / a.divisor;
}

/// One thread per output pixel and channel group: the window's double sum
/// in row-major order, divided by KH * KW (padding counts in the divisor).
template <typename S, int V, int K>
__global__ void __launch_bounds__(kThreads) avgPoolKernel(PoolArgs a) {
  const Window &g = a.g;
  const uint32_t count = uint32_t(g.images) * uint32_t(g.oh) * uint32_t(g.ow) * uint32_t(g.c / V);
  RN_GRID_STRIDE(t, count) {
    PixelGroup<V> p(t, g, g.oh, g.ow);
    double acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v)
      acc[v] = 0.0;
    forEachInWindow<K>(ClippedWindow(p.y, p.x, g), g, p.image, p.c0,
                       [&](int, int, uint32_t index) {
                         float x[V];
                         loadPack<S, V>(a.x, a.xType, index, x);
#pragma unroll
                         for (int v = 0; v < V; ++v)
                           acc[v] += double(x[v]);
                       });
    float out[V];
#pragma unroll
    for (int v = 0; v < V; ++v)
      out[v] = __double2float_rn(divideByWindow(a, p.y, p.x, acc[v]));
    storePack<S, V>(a.out, a.outType, t * V, out);
  }
}

/// One thread per input pixel and channel group: the double sum of
/// dy / (KH * KW) over the covering windows in output order.
template <typename S, int V, int Cover>
__global__ void __launch_bounds__(kThreads) avgPoolBackwardKernel(PoolArgs a) {
  const Window &g = a.g;
  const uint32_t count = uint32_t(g.images) * uint32_t(g.h) * uint32_t(g.w) * uint32_t(g.c / V);
  RN_GRID_STRIDE(t, count) {
    PixelGroup<V> p(t, g, g.h, g.w);
    double acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v)
      acc[v] = 0.0;
    forEachCoveringWindow<Cover>(p.y, p.x, g, [&](int oy, int ox) {
      float dy[V];
      loadPack<S, V>(a.dy, a.dyType, elementIndex(p.image, oy, ox, p.c0, g.oh, g.ow, g.c), dy);
#pragma unroll
      for (int v = 0; v < V; ++v)
        acc[v] += divideByWindow(a, oy, ox, double(dy[v]));
    });
    float out[V];
#pragma unroll
    for (int v = 0; v < V; ++v)
      out[v] = __double2float_rn(acc[v]);
    storePack<S, V>(a.out, a.outType, t * V, out);
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

/// Input rows [first, last) of adaptive output row `i` (cpu::adaptiveWindow).
__device__ __forceinline__ int64_t adaptiveFirst(int64_t i, int64_t in, int64_t out) {
  return i * in / out;
}
__device__ __forceinline__ int64_t adaptiveLast(int64_t i, int64_t in, int64_t out) {
  return ((i + 1) * in + out - 1) / out;
}

struct AdaptivePoolArgs {
  const void *in = nullptr; ///< x (forward) or dy (backward)
  void *out = nullptr;      ///< y (forward) or dx (backward)
  DType inType = DType::f32, outType = DType::f32;
  int64_t n = 0, h = 0, w = 0, oh = 0, ow = 0, c = 0;
};

/// One thread per output element (channels fastest: a warp reads along C).
__global__ void adaptiveAvgPoolKernel(AdaptivePoolArgs a) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < a.n * a.oh * a.ow * a.c;
       o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = o % a.c, j = (o / a.c) % a.ow, i = (o / (a.c * a.ow)) % a.oh,
                  b = o / (a.c * a.ow * a.oh);
    const int64_t h0 = adaptiveFirst(i, a.h, a.oh), h1 = adaptiveLast(i, a.h, a.oh);
    const int64_t w0 = adaptiveFirst(j, a.w, a.ow), w1 = adaptiveLast(j, a.w, a.ow);
    double acc = 0;
    for (int64_t y = h0; y < h1; ++y)
      for (int64_t x = w0; x < w1; ++x)
        acc += double(loadFloat(a.in, a.inType, ((b * a.h + y) * a.w + x) * a.c + k));
    storeDouble(a.out, a.outType, o, acc / double((h1 - h0) * (w1 - w0)));
  }
}

/// One thread per input element: the output rows covering input row y are
/// floor(y * OH / H) to floor(((y + 1) * OH - 1) / H), columns likewise.
__global__ void adaptiveAvgPoolBackwardKernel(AdaptivePoolArgs a) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < a.n * a.h * a.w * a.c;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = e % a.c, x = (e / a.c) % a.w, y = (e / (a.c * a.w)) % a.h,
                  b = e / (a.c * a.w * a.h);
    const int64_t i0 = y * a.oh / a.h, i1 = ((y + 1) * a.oh - 1) / a.h;
    const int64_t j0 = x * a.ow / a.w, j1 = ((x + 1) * a.ow - 1) / a.w;
    double acc = 0;
    for (int64_t i = i0; i <= i1; ++i) {
      const int64_t rows = adaptiveLast(i, a.h, a.oh) - adaptiveFirst(i, a.h, a.oh);
      for (int64_t j = j0; j <= j1; ++j) {
        const int64_t count = rows * (adaptiveLast(j, a.w, a.ow) - adaptiveFirst(j, a.w, a.ow));
        acc += double(loadFloat(a.in, a.inType, ((b * a.oh + i) * a.ow + j) * a.c + k)) /
               double(count);
      }
    }
    storeDouble(a.out, a.outType, e, acc);
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

//===----------------------------------------------------------------------===//
// Host side: storage and width dispatch, batch chunks
//===----------------------------------------------------------------------===//

/// A kernel variant: storage type and channels per thread.
template <typename S, int V> struct Variant {
  using Storage = S;
  static constexpr int width = V;
};

/// The tensors of one call: their common dtype, or none (mixed).
struct CallStorage {
  DType type = DType::f32;
  bool mixed = false;
};

CallStorage storageOf(std::initializer_list<DType> types) {
  CallStorage s{*types.begin(), false};
  for (DType t : types)
    s.mixed |= t != s.type;
  return s;
}

/// A pointer the vector accesses read or write, with its element size.
struct Access {
  const void *data;
  size_t elementBytes;
};

/// The widest channels-per-thread that divides C and that every access's
/// alignment allows (16-byte vectors at most); 1 for mixed dtypes.
int vectorWidth(const CallStorage &s, int64_t c, std::initializer_list<Access> accesses) {
  if (s.mixed)
    return 1;
  for (int width = int(16 / elementSize(s.type)); width > 1; width /= 2) {
    bool fits = c % width == 0;
    for (const Access &x : accesses)
      fits = fits && reinterpret_cast<uintptr_t>(x.data) % (x.elementBytes * width) == 0;
    if (fits)
      return width;
  }
  return 1;
}

template <typename S, typename Launch> Status withWidth(int width, Launch &&launch) {
  switch (width) {
  case 8:
    if constexpr (sizeof(S) == 2)
      return launch(Variant<S, 8>{});
    break;
  case 4:
    return launch(Variant<S, 4>{});
  case 2:
    return launch(Variant<S, 2>{});
  default:
    break;
  }
  return launch(Variant<S, 1>{});
}

/// Calls launch(Variant<S, V>{}) for the call's storage and `width`.
template <typename Launch> Status dispatch(const CallStorage &s, int width, Launch &&launch) {
  if (s.mixed)
    return launch(Variant<AnyFloat, 1>{});
  switch (s.type) {
  case DType::f16:
    return withWidth<__half>(width, launch);
  case DType::bf16:
    return withWidth<__nv_bfloat16>(width, launch);
  default:
    return withWidth<float>(width, launch);
  }
}

/// Calls launch(std::integral_constant<int, K>{}) with K the first of Ks
/// equal to `size`, else K = 0 (the size is read at run time). Run-time
/// dtypes always take K = 0: they are rare, and the variants multiply.
template <int... Ks, typename V, typename Launch>
Status withCompileTimeSize(V, int64_t size, Launch &&launch) {
  if constexpr (!std::is_same_v<typename V::Storage, AnyFloat>) {
    Status result;
    bool launched = false;
    auto tryFixed = [&](auto fixed) {
      if (!launched && size == decltype(fixed)::value) {
        (void)(result = launch(fixed));
        launched = true;
      }
    };
    (tryFixed(std::integral_constant<int, Ks>{}), ...);
    if (launched)
      return result;
  }
  return launch(std::integral_constant<int, 0>{});
}

/// The kernel side when square (the compile-time window sizes key on it).
int64_t squareKernel(const PoolGeometry &g) { return g.kh == g.kw ? g.kh : 0; }

/// The most windows that hold one input element along either dimension:
/// ceil(k / s) (the compile-time covering bounds key on it; 2 for 3x3/2).
int64_t coveringBound(const PoolGeometry &g) {
  return std::max((g.kh + g.sh - 1) / g.sh, (g.kw + g.sw - 1) / g.sw);
}

/// dispatch for one channel per thread only (what rare paths use).
template <typename Launch> Status dispatchScalar(const CallStorage &s, Launch &&launch) {
  if (s.mixed)
    return launch(Variant<AnyFloat, 1>{});
  switch (s.type) {
  case DType::f16:
    return launch(Variant<__half, 1>{});
  case DType::bf16:
    return launch(Variant<__nv_bfloat16, 1>{});
  default:
    return launch(Variant<float, 1>{});
  }
}

/// `elements` elements past `data` in a tensor of `type`.
template <typename P> P *advance(P *data, DType type, int64_t elements) {
  using Byte = std::conditional_t<std::is_const_v<P>, const uint8_t, uint8_t>;
  return data ? reinterpret_cast<P *>(reinterpret_cast<Byte *>(data) +
                                      size_t(elements) * elementSize(type))
              : nullptr;
}

Window windowOf(const PoolGeometry &g, int64_t images) {
  return Window{int(images), int(g.h),  int(g.w),  int(g.c),  int(g.oh), int(g.ow),
                int(g.kh),   int(g.kw), int(g.sh), int(g.sw), int(g.ph), int(g.pw)};
}

/// Which shape `out` has: the pool's output (forward) or its input (backward).
enum class OutShape { output, input };

/// Runs `body(args, images)` over the batch in chunks of at most
/// `maxImages` whole images, with `base`'s tensor pointers advanced to the
/// chunk (x is input-shaped, dy output-shaped) and its geometry cut to it.
/// The arg-max offsets are not advanced: each chunk reuses the workspace
/// from its start, after the previous chunk's passes on the same stream.
template <typename Body>
Status forEachChunk(const PoolArgs &base, const PoolGeometry &g, int64_t maxImages,
                    OutShape outShape, Body &&body) {
  const int64_t inImage = g.h * g.w * g.c, outImage = g.oh * g.ow * g.c;
  const bool outIsInputShaped = outShape == OutShape::input;
  for (int64_t n0 = 0; n0 < g.n; n0 += maxImages) {
    int64_t images = std::min(maxImages, g.n - n0);
    PoolArgs a = base;
    a.g = windowOf(g, images);
    a.x = advance(base.x, base.xType, n0 * inImage);
    a.dy = advance(base.dy, base.dyType, n0 * outImage);
    a.out = advance(base.out, base.outType, n0 * (outIsInputShaped ? inImage : outImage));
    RN_RETURN_IF_ERROR(body(a, images));
  }
  return Status::success();
}

/// avg pool's divisor, and its reciprocal when multiplying by it is exact.
void setDivisor(PoolArgs &a, const PoolGeometry &g, const PoolParams &params) {
  a.windowDivisor = params.ceilMode || params.excludePad;
  a.excludePad = params.excludePad;
  const int64_t area = g.kh * g.kw;
  a.divisor = double(area);
  a.reciprocal = 1.0 / double(area);
  a.divideByReciprocal = (area & (area - 1)) == 0;
}

/// Images per chunk of the overlapping max pool backward: as many whole
/// images as the workspace holds the arg-max offsets of (the whole batch
/// when it fits), at least one.
int64_t argMaxChunkImages(const PoolGeometry &g, int64_t imageLimit, size_t workspaceBytes) {
  const int64_t perImage = g.oh * g.ow * g.c * offsetBytes(g);
  if (perImage == 0)
    return std::max<int64_t>(1, g.n);
  return std::max<int64_t>(1, std::min<int64_t>(std::min(g.n, imageLimit),
                                                int64_t(workspaceBytes / size_t(perImage))));
}

} // namespace

Status maxPool2d(const DeviceTensor &input, const PoolParams &params, const DeviceTensor &result,
                 cudaStream_t stream) {
  const char *op = "max_pool2d";
  PoolGeometry g;
  RN_RETURN_IF_ERROR(checkFloatView(op, "input", input));
  RN_RETURN_IF_ERROR(checkPool(op, input.shape, params, g));
  RN_RETURN_IF_ERROR(checkShape(op, "result", result, outputShape(g)));
  if (result.numel() == 0)
    return Status::success();
  Result<int64_t> images = imagesPerLaunch(op, g);
  if (!images.ok())
    return images.error();
  CallStorage s = storageOf({input.dtype, result.dtype});
  int width = vectorWidth(s, g.c, {{input.data, elementSize(input.dtype)},
                                   {result.data, elementSize(result.dtype)}});
  PoolArgs base;
  base.x = input.data;
  base.out = result.data;
  base.xType = input.dtype;
  base.outType = result.dtype;
  return dispatch(s, width, [&](auto variant) {
    using V = decltype(variant);
    return withCompileTimeSize<2, 3>(variant, squareKernel(g), [&](auto size) {
      return forEachChunk(base, g, *images, OutShape::output, [&](const PoolArgs &a, int64_t n) {
        return launch(maxPoolKernel<typename V::Storage, V::width, decltype(size)::value>,
                      n * g.oh * g.ow * g.c / V::width, stream, a);
      });
    });
  });
}

Result<size_t> maxPool2dBackwardWorkspaceBytes(const std::vector<int64_t> &inputShape,
                                               const PoolParams &params, size_t workspaceBytes) {
  const char *op = "max_pool2d_backward";
  PoolGeometry g;
  Status s = checkPool(op, inputShape, params, g);
  if (!s.ok())
    return s.error();
  if (windowsDisjoint(g) || g.n * g.h * g.w * g.c == 0)
    return size_t(0);
  Result<int64_t> limit = imagesPerLaunch(op, g);
  if (!limit.ok())
    return limit.error();
  return size_t(argMaxChunkImages(g, *limit, workspaceBytes) * g.oh * g.ow * g.c *
                offsetBytes(g));
}

Status maxPool2dBackward(const DeviceTensor &outputGrad, const DeviceTensor &input,
                         const PoolParams &params, const DeviceTensor &inputGrad,
                         void *workspace, size_t workspaceBytes, cudaStream_t stream) {
  const char *op = "max_pool2d_backward";
  PoolGeometry g;
  RN_RETURN_IF_ERROR(checkFloatView(op, "input", input));
  RN_RETURN_IF_ERROR(checkPool(op, input.shape, params, g));
  RN_RETURN_IF_ERROR(checkShape(op, "output_grad", outputGrad, outputShape(g)));
  RN_RETURN_IF_ERROR(checkShape(op, "input_grad", inputGrad, input.shape));
  if (inputGrad.numel() == 0)
    return Status::success();
  Result<int64_t> images = imagesPerLaunch(op, g);
  if (!images.ok())
    return images.error();
  CallStorage s = storageOf({input.dtype, outputGrad.dtype, inputGrad.dtype});
  PoolArgs base;
  base.x = input.data;
  base.dy = outputGrad.data;
  base.out = inputGrad.data;
  base.xType = input.dtype;
  base.dyType = outputGrad.dtype;
  base.outType = inputGrad.dtype;
  const Access tensors[] = {{input.data, elementSize(input.dtype)},
                            {outputGrad.data, elementSize(outputGrad.dtype)},
                            {inputGrad.data, elementSize(inputGrad.dtype)}};

  if (windowsDisjoint(g)) {
    int width = vectorWidth(s, g.c, {tensors[0], tensors[1], tensors[2]});
    return dispatch(s, width, [&](auto variant) {
      using V = decltype(variant);
      return withCompileTimeSize<2>(variant, squareKernel(g), [&](auto size) {
        return forEachChunk(base, g, *images, OutShape::input, [&](const PoolArgs &a, int64_t n) {
          return launch(
              maxPoolDisjointBackwardKernel<typename V::Storage, V::width, decltype(size)::value>,
              n * g.oh * g.ow * g.c / V::width, stream, a);
        });
      });
    });
  }

  if (g.kh * g.kw > kMaxWindow)
    return Error(std::string(op) + ": windows of " + std::to_string(g.kh * g.kw) +
                 " positions are more than the " + std::to_string(kMaxWindow) +
                 " the arg-max offsets can name");
  const int64_t perImage = g.oh * g.ow * g.c * offsetBytes(g);
  if (!workspace || workspaceBytes < size_t(perImage))
    return Error(std::string(op) + ": needs " + std::to_string(perImage) +
                 " bytes of stream workspace (the window arg-max of one image), has " +
                 std::to_string(workspace ? workspaceBytes : 0));
  const int64_t chunk = argMaxChunkImages(g, *images, workspaceBytes);
  base.offsets = workspace;
  auto passes = [&](auto variant, auto offsetTag, auto size, auto cover) {
    using V = decltype(variant);
    using Offset = decltype(offsetTag);
    constexpr int K = decltype(size)::value, Cover = decltype(cover)::value;
    return forEachChunk(base, g, chunk, OutShape::input, [&](const PoolArgs &a, int64_t n) -> Status {
      RN_RETURN_IF_ERROR(launch(maxPoolArgMaxKernel<typename V::Storage, V::width, K, Offset>,
                                n * g.oh * g.ow * g.c / V::width, stream, a));
      return launch(maxPoolGatherKernel<typename V::Storage, V::width, Cover, Offset>,
                    n * g.h * g.w * g.c / V::width, stream, a);
    });
  };
  if (offsetBytes(g) == 1) {
    int width = vectorWidth(s, g.c, {tensors[0], tensors[1], tensors[2], {workspace, 1}});
    // The common 3x3 stride 2 gets both compile-time bounds.
    return dispatch(s, width, [&](auto variant) {
      return withCompileTimeSize<3>(variant, squareKernel(g), [&](auto size) {
        return withCompileTimeSize<2>(variant, coveringBound(g), [&](auto cover) {
          return passes(variant, uint8_t{}, size, cover);
        });
      });
    });
  }
  // Windows over 16x16 are rare enough for one channel per thread and
  // run-time sizes.
  return dispatchScalar(s, [&](auto variant) {
    return passes(variant, uint16_t{}, std::integral_constant<int, 0>{},
                  std::integral_constant<int, 0>{});
  });
}

Status avgPool2d(const DeviceTensor &input, const PoolParams &params, const DeviceTensor &result,
                 cudaStream_t stream) {
  const char *op = "avg_pool2d";
  PoolGeometry g;
  RN_RETURN_IF_ERROR(checkFloatView(op, "input", input));
  RN_RETURN_IF_ERROR(checkPool(op, input.shape, params, g));
  RN_RETURN_IF_ERROR(checkShape(op, "result", result, outputShape(g)));
  if (result.numel() == 0)
    return Status::success();
  Result<int64_t> images = imagesPerLaunch(op, g);
  if (!images.ok())
    return images.error();
  CallStorage s = storageOf({input.dtype, result.dtype});
  int width = vectorWidth(s, g.c, {{input.data, elementSize(input.dtype)},
                                   {result.data, elementSize(result.dtype)}});
  PoolArgs base;
  base.x = input.data;
  base.out = result.data;
  base.xType = input.dtype;
  base.outType = result.dtype;
  setDivisor(base, g, params);
  return dispatch(s, width, [&](auto variant) {
    using V = decltype(variant);
    return withCompileTimeSize<2, 3>(variant, squareKernel(g), [&](auto size) {
      return forEachChunk(base, g, *images, OutShape::output, [&](const PoolArgs &a, int64_t n) {
        return launch(avgPoolKernel<typename V::Storage, V::width, decltype(size)::value>,
                      n * g.oh * g.ow * g.c / V::width, stream, a);
      });
    });
  });
}

Status avgPool2dBackward(const DeviceTensor &outputGrad, const PoolParams &params,
                         const DeviceTensor &inputGrad, cudaStream_t stream) {
  const char *op = "avg_pool2d_backward";
  PoolGeometry g;
  RN_RETURN_IF_ERROR(checkFloatView(op, "input_grad", inputGrad));
  RN_RETURN_IF_ERROR(checkPool(op, inputGrad.shape, params, g));
  RN_RETURN_IF_ERROR(checkShape(op, "output_grad", outputGrad, outputShape(g)));
  if (inputGrad.numel() == 0)
    return Status::success();
  Result<int64_t> images = imagesPerLaunch(op, g);
  if (!images.ok())
    return images.error();
  CallStorage s = storageOf({outputGrad.dtype, inputGrad.dtype});
  int width = vectorWidth(s, g.c, {{outputGrad.data, elementSize(outputGrad.dtype)},
                                   {inputGrad.data, elementSize(inputGrad.dtype)}});
  PoolArgs base;
  base.dy = outputGrad.data;
  base.out = inputGrad.data;
  base.dyType = outputGrad.dtype;
  base.outType = inputGrad.dtype;
  setDivisor(base, g, params);
  return dispatch(s, width, [&](auto variant) {
    using V = decltype(variant);
    return withCompileTimeSize<2>(variant, coveringBound(g), [&](auto cover) {
      return forEachChunk(base, g, *images, OutShape::input, [&](const PoolArgs &a, int64_t n) {
        return launch(avgPoolBackwardKernel<typename V::Storage, V::width, decltype(cover)::value>,
                      n * g.h * g.w * g.c / V::width, stream, a);
      });
    });
  });
}

namespace {
/// cpu_pool.cpp's checkAdaptivePool: [N, H, W, C] and [N, OH, OW, C].
Status checkAdaptivePool(const char *op, const char *inName, const DeviceTensor &in,
                         const char *outName, const DeviceTensor &out) {
  RN_RETURN_IF_ERROR(checkFloatView(op, inName, in));
  RN_RETURN_IF_ERROR(checkFloatView(op, outName, out));
  for (auto [what, t] : {std::pair{inName, &in}, std::pair{outName, &out}})
    if (t->rank() != 4)
      return Error(std::string(op) + ": " + what + " must be NHWC (rank 4), got shape " +
                   shapeString(t->shape));
  if (out.dim(0) != in.dim(0) || out.dim(3) != in.dim(3))
    return Error(std::string(op) + ": " + outName + " " + shapeString(out.shape) +
                 " must keep the batch and the channels of " + inName + " " +
                 shapeString(in.shape));
  if (in.dim(1) <= 0 || in.dim(2) <= 0 || out.dim(1) <= 0 || out.dim(2) <= 0)
    return Error(std::string(op) + ": spatial sizes must be positive, got " +
                 shapeString(in.shape) + " and " + shapeString(out.shape));
  return Status::success();
}

AdaptivePoolArgs adaptiveArgs(const DeviceTensor &from, const DeviceTensor &to,
                              const DeviceTensor &big, const DeviceTensor &small) {
  AdaptivePoolArgs a;
  a.in = from.data, a.out = to.data, a.inType = from.dtype, a.outType = to.dtype;
  a.n = big.dim(0), a.h = big.dim(1), a.w = big.dim(2), a.c = big.dim(3);
  a.oh = small.dim(1), a.ow = small.dim(2);
  return a;
}
} // namespace

Status adaptiveAvgPool2d(const DeviceTensor &input, const DeviceTensor &result,
                         cudaStream_t stream) {
  RN_RETURN_IF_ERROR(checkAdaptivePool("adaptive_avg_pool2d", "input", input, "result", result));
  return launch(adaptiveAvgPoolKernel, result.numel(), stream,
                adaptiveArgs(input, result, input, result));
}

Status adaptiveAvgPool2dBackward(const DeviceTensor &outputGrad, const DeviceTensor &inputGrad,
                                 cudaStream_t stream) {
  RN_RETURN_IF_ERROR(checkAdaptivePool("adaptive_avg_pool2d_backward", "input_grad", inputGrad,
                                       "output_grad", outputGrad));
  return launch(adaptiveAvgPoolBackwardKernel, inputGrad.numel(), stream,
                adaptiveArgs(outputGrad, inputGrad, inputGrad, outputGrad));
}

Status globalAvgPool(const DeviceTensor &input, const DeviceTensor &result, cudaStream_t stream) {
  const char *op = "global_avg_pool";
  RN_RETURN_IF_ERROR(checkFloatView(op, "input", input));
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
  RN_RETURN_IF_ERROR(checkFloatView(op, "input_grad", inputGrad));
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
