//===- kernels.h - CUDA kernels of the elementwise, pool and loss ops -*- C++ -*-===//
//
// Host-callable launchers of the hand-written kernels (elementwise_kernels.cu,
// pool_kernels.cu, loss_kernels.cu). Each checks dtypes and shapes like its
// CPU reference kernel (runtime/cpu/cpu_kernels.h), returns an Error naming
// the op on a mismatch, then enqueues its work on `stream` asynchronously:
// nothing is allocated, nothing is synchronized, every per-step value is read
// from device memory (capturable into a CUDA graph).
//
// Numerics: storage f32, f16 or bf16; arithmetic in f32, each output rounded
// once to its dtype (round to nearest even). The sums of pooling, global
// average pooling and the loss accumulate in double in a fixed order (the
// CPU's order where a thread owns an output; max pooling's backward sums
// up to two terms in f32, which rounds the same), so results do not change
// from run to run and the pool ops match the CPU bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_KERNELS_H
#define RN_RUNTIME_CUDA_KERNELS_H

#include "runtime/core/status.h"
#include "runtime/cuda/device_tensor.h"

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rn::cuda {

//===----------------------------------------------------------------------===//
// Elementwise (elementwise_kernels.cu)
//===----------------------------------------------------------------------===//

enum class UnaryOp : uint8_t {
  relu,
  tanh,
  silu,
  sigmoid,
  hardswish,
  hardsigmoid,
  gelu,      ///< x / 2 * (1 + erf(x / sqrt(2)))
  gelu_tanh, ///< x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
};
/// The op registry's name ("relu", ...).
const char *unaryOpName(UnaryOp op);

/// result = op(input), same shape; any float dtypes.
Status unary(UnaryOp op, const DeviceTensor &input, const DeviceTensor &result,
             cudaStream_t stream);

enum class BinaryOp : uint8_t {
  add,              ///< lhs + rhs
  relu_backward,    ///< lhs = dy, rhs = relu's result: y > 0 ? dy : 0
  tanh_backward,    ///< lhs = dy, rhs = tanh's result: dy * (1 - y^2)
  silu_backward,    ///< lhs = dy, rhs = silu's input: dy * s * (1 + x (1 - s))
  dropout_backward, ///< lhs = dy, rhs = the mask: dy * mask
  sigmoid_backward, ///< lhs = dy, rhs = sigmoid's result: dy * y * (1 - y)
  /// lhs = dy, rhs = hardswish's input: 0 for x < -3, dy for x > 3,
  /// dy * (2x + 3) / 6 between
  hardswish_backward,
  /// lhs = dy, rhs = hardsigmoid's input: dy / 6 for -3 < x < 3, else 0
  hardsigmoid_backward,
  gelu_backward,      ///< lhs = dy, rhs = gelu's input: dy * (Phi(x) + x phi(x))
  gelu_tanh_backward, ///< lhs = dy, rhs = gelu's input: the tanh form's derivative
};
const char *binaryOpName(BinaryOp op);

/// result = op(lhs, rhs), all three of one shape; any float dtypes.
Status binary(BinaryOp op, const DeviceTensor &lhs, const DeviceTensor &rhs,
              const DeviceTensor &result, cudaStream_t stream);

/// clamp(input, min_val, max_val) with the bounds as f32 (cpu::hardtanh):
/// bit for bit the CPU's.
Status hardtanh(const DeviceTensor &input, double minVal, double maxVal,
                const DeviceTensor &result, cudaStream_t stream);
/// dx = dy where lo < y < hi, lo and hi the bounds as f32 rounded to the
/// dtype of `result` (hardtanh's result), as cpu::hardtanhBackward.
Status hardtanhBackward(const DeviceTensor &outputGrad, const DeviceTensor &result,
                        double minVal, double maxVal, const DeviceTensor &inputGrad,
                        cudaStream_t stream);

/// result[n, h, w, c] = input[n, h, w, c] * scale[n, 0, 0, c] (input NHWC,
/// scale [N, 1, 1, C]): bit for bit cpu::channelMul.
Status channelMul(const DeviceTensor &input, const DeviceTensor &scale, const DeviceTensor &result,
                  cudaStream_t stream);
/// input_grad = dy * scale[n, 0, 0, c]; scale_grad[n, 0, 0, c] = the sum
/// over h, w of dy * input in double, in the CPU's order (one thread per
/// (n, c)): bit for bit cpu::channelMulBackward.
Status channelMulBackward(const DeviceTensor &outputGrad, const DeviceTensor &input,
                          const DeviceTensor &scale, const DeviceTensor &inputGrad,
                          const DeviceTensor &scaleGrad, cudaStream_t stream);

/// result = roundTo(result.dtype, input) over the elements in memory order:
/// cast (`requireSameShape`), reshape and flatten (same element count). A
/// device-to-device copy when the dtypes are equal, nothing when the
/// pointers are. `op` names the op in errors.
Status convert(const char *op, const DeviceTensor &input, const DeviceTensor &result,
               bool requireSameShape, cudaStream_t stream);

/// result[..., c] = roundTo(result.dtype, input[..., c]) for c below the
/// input's channels (its last dimension), 0 above: rn.pad_channels.
Status padChannels(const DeviceTensor &input, const DeviceTensor &result, cudaStream_t stream);

/// rn.normalize_images: `input` ui8 NHWC, `mean` and `std` [C] f32;
/// result = roundTo(result.dtype, (x / 255 - mean[c]) * (1 / std[c])) in
/// f32 operations: bit for bit cpu::normalizeImages. Reads the bytes 16 at
/// a time where aligned.
Status normalizeImages(const DeviceTensor &input, const DeviceTensor &mean,
                       const DeviceTensor &std, const DeviceTensor &result, cudaStream_t stream);
/// rn.pad_channels with `normalize`: the stem's padded input from ui8 NHWC
/// images, each kept channel normalized as normalizeImages does, zeros
/// above (bit for bit cpu::padChannels with mean and std).
Status padNormalizedChannels(const DeviceTensor &input, const DeviceTensor &mean,
                             const DeviceTensor &std, const DeviceTensor &result,
                             cudaStream_t stream);

/// The executor's copy between two tensors of one element count (what
/// all_reduce_mean does with one replica): nothing when the pointers are
/// equal, a byte copy for equal dtypes, a conversion between float dtypes;
/// an error for any other pair of dtypes.
Status copyTensor(const char *op, const DeviceTensor &from, const DeviceTensor &to,
                  cudaStream_t stream);

/// Every byte of `result` set to zero (0.0 for the float dtypes).
Status zero(const DeviceTensor &result, cudaStream_t stream);

/// Inverted dropout with the CPU's mask (cpu::dropoutTrain): element i drops
/// when (dropoutRandomWord(key, i) >> 8) < ceil(p * 2^24), Philox4x32-10
/// keyed by {seed} and counted by {i / 4, stream}; mask = 0 or
/// roundTo(mask dtype, 1 / (1 - p)), result = input * mask. `step` is the
/// i32 step in device memory; `dropouts` and `index` are the node's "count"
/// and "index" (see Note [Random streams] in runtime/cpu/cpu_kernels.h).
/// `mask` may be null (no mask stored, as cpu::dropout): the mask value is
/// then rounded to result's dtype.
Status dropout(const DeviceTensor &input, double p, uint64_t seed, const DeviceTensor &step,
               uint64_t dropouts, uint64_t index, const DeviceTensor &result,
               const DeviceTensor *mask, cudaStream_t cudaStream);

/// Stochastic depth with the CPU's mask (cpu::stochasticDepthTrain): sample
/// n (dimension 0 of `input`) drops when (dropoutRandomWord(key, n) >> 8) <
/// ceil(p * 2^24), keyed as dropout (see Note [Random streams] in
/// runtime/cpu/cpu_kernels.h); mask[n] = 0 or roundTo(mask dtype,
/// 1 / (1 - p)) (`mask` is [N]), result[n, ...] = input[n, ...] * mask[n].
/// Two launches on `cudaStream`: the mask, then the scaling, which reads the
/// stored mask. Bit for bit the CPU's.
Status stochasticDepth(const DeviceTensor &input, double p, uint64_t seed, const DeviceTensor &step,
                       uint64_t count, uint64_t index, const DeviceTensor &result,
                       const DeviceTensor &mask, cudaStream_t cudaStream);
/// dx[n, ...] = dy[n, ...] * mask[n], `mask` [N]: bit for bit
/// cpu::stochasticDepthBackward.
Status stochasticDepthBackward(const DeviceTensor &outputGrad, const DeviceTensor &mask,
                               const DeviceTensor &inputGrad, cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Pooling (pool_kernels.cu): NHWC
//===----------------------------------------------------------------------===//

struct PoolParams {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 2> padding{0, 0}; ///< symmetric, at most half the kernel
  bool ceilMode = false;   ///< PyTorch's ceil_mode (cpu::Pool2dAttrs::ceilMode)
  bool excludePad = false; ///< avg pool: count_include_pad=False
};

/// The window maximum (padding never wins, ties to the first maximum in
/// row-major window order, NaN wins): bit for bit the CPU's.
Status maxPool2d(const DeviceTensor &input, const PoolParams &params,
                 const DeviceTensor &result, cudaStream_t stream);
/// Stream workspace bytes maxPool2dBackward uses for an input of
/// `inputShape` when the stream has `workspaceBytes`: 0 when windows do not
/// overlap (stride >= kernel: one pass); otherwise one arg-max offset per
/// output element (1 byte, 2 for windows of more than 256 positions) for
/// the whole batch when that fits, else for as many whole images as fit,
/// at least one image (more than `workspaceBytes` then: the caller's error).
Result<size_t> maxPool2dBackwardWorkspaceBytes(const std::vector<int64_t> &inputShape,
                                               const PoolParams &params,
                                               size_t workspaceBytes);
/// Each input element gets the sum of the output gradients of the windows
/// whose maximum it is, rounded as the CPU's double sum in output order; no
/// atomics. Overlapping windows take two passes through `workspace` (device
/// memory of maxPool2dBackwardWorkspaceBytes, batch chunks when it holds
/// less than the whole batch).
Status maxPool2dBackward(const DeviceTensor &outputGrad, const DeviceTensor &input,
                         const PoolParams &params, const DeviceTensor &inputGrad,
                         void *workspace, size_t workspaceBytes, cudaStream_t stream);
/// Window sum (double, row-major) / PyTorch's divisor (cpu::avgPool2d's:
/// KH * KW but for ceil-mode partial windows or with excludePad).
Status avgPool2d(const DeviceTensor &input, const PoolParams &params,
                 const DeviceTensor &result, cudaStream_t stream);
/// dx = sum over the windows holding x of dy / divisor (avgPool2d's),
/// gathered per input element in output order (double, as on the CPU).
Status avgPool2dBackward(const DeviceTensor &outputGrad, const PoolParams &params,
                         const DeviceTensor &inputGrad, cudaStream_t stream);
/// [N, H, W, C] -> [N, OH, OW, C] (the result's shape), PyTorch's adaptive
/// windows (cpu::adaptiveWindow): bit for bit cpu::adaptiveAvgPool2d.
Status adaptiveAvgPool2d(const DeviceTensor &input, const DeviceTensor &result,
                         cudaStream_t stream);
/// dx = the sum of dy / (window count) over the adaptive windows holding x,
/// gathered in output order: bit for bit cpu::adaptiveAvgPool2dBackward.
Status adaptiveAvgPool2dBackward(const DeviceTensor &outputGrad, const DeviceTensor &inputGrad,
                                 cudaStream_t stream);
/// [N, H, W, C] -> [N, 1, 1, C], the mean over H and W.
Status globalAvgPool(const DeviceTensor &input, const DeviceTensor &result,
                     cudaStream_t stream);
/// dx[n, h, w, c] = dy[n, 0, 0, c] / (H * W).
Status globalAvgPoolBackward(const DeviceTensor &outputGrad, const DeviceTensor &inputGrad,
                             cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Loss (loss_kernels.cu): logits [N, C] (float dtypes), labels int32 [N]
//
// Labels are on the device, so a label outside [0, C) cannot be reported as
// an Error without synchronizing: it makes the loss (and that row's
// gradient) NaN, and count_correct's count negative.
//===----------------------------------------------------------------------===//

/// Device workspace bytes softmaxCrossEntropy needs for `rows` rows (one
/// double per row, then a fixed-order reduction).
size_t softmaxCrossEntropyWorkspaceBytes(int64_t rows);

/// loss (a scalar, float dtype, normally f32) = the mean over rows of the
/// label-smoothed cross-entropy. `workspace` holds at least
/// softmaxCrossEntropyWorkspaceBytes(N) bytes of device memory.
Status softmaxCrossEntropy(const DeviceTensor &logits, const DeviceTensor &labels,
                           double labelSmoothing, const DeviceTensor &loss,
                           void *workspace, size_t workspaceBytes, cudaStream_t stream);

/// logitsGrad = (softmax(logits) - t) * scale / N; `scale` is a device
/// scalar (float dtype) or null for 1.
Status softmaxCrossEntropyBackward(const DeviceTensor &logits, const DeviceTensor &labels,
                                   const DeviceTensor *scale, double labelSmoothing,
                                   const DeviceTensor &logitsGrad, cudaStream_t stream);

/// correct (an i32 scalar) = rows whose arg-max (the first maximum; a NaN
/// in column 0 picks column 0, other NaNs never win, as on the CPU) equals
/// the label.
Status countCorrect(const DeviceTensor &logits, const DeviceTensor &labels,
                    const DeviceTensor &correct, cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Channel layout (layout_kernels.cu)
//===----------------------------------------------------------------------===//

/// rn.concat (`toWhole`: the slices copied into `whole`) or rn.split (the
/// reverse): `slices` are consecutive runs of `whole`'s last dimension,
/// NHWC or [N, C], one dtype. One launch per 32 slices; each thread moves
/// the widest unit (16, 8, 4 or 2 bytes) that every slice's row divides.
Status channelSlices(const char *op, const DeviceTensor &whole,
                     const std::vector<DeviceTensor> &slices, bool toWhole,
                     cudaStream_t stream);

/// rn.channel_shuffle: result channel j * groups + i = input channel
/// i * (C / groups) + j of NHWC tensors of one dtype.
Status channelShuffle(const DeviceTensor &input, int64_t groups, const DeviceTensor &result,
                      cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Helpers shared by the kernel files (not part of the launch API)
//===----------------------------------------------------------------------===//

namespace detail {

/// "[2, 3, 4]".
inline std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

inline bool isFloat(DType type) {
  return type == DType::f32 || type == DType::f16 || type == DType::bf16;
}

/// The CPU kernels' view check: a float tensor (f32, f16, bf16) with no
/// negative dimension and data unless it is empty; errors name `op` and
/// the operand (`what`).
inline Status checkFloatView(const char *op, const char *what, const DeviceTensor &t) {
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

/// checkFloatView and the shape `expected`.
inline Status checkShape(const char *op, const char *what, const DeviceTensor &t,
                         const std::vector<int64_t> &expected) {
  RN_RETURN_IF_ERROR(checkFloatView(op, what, t));
  if (t.shape != expected)
    return Error(std::string(op) + ": " + what + " must have shape " + shapeString(expected) +
                 ", got " + shapeString(t.shape));
  return Status::success();
}

/// Whether `data` is aligned for a vector of `elements` elements of `type`.
inline bool alignedFor(const void *data, DType type, int64_t elements) {
  return reinterpret_cast<uintptr_t>(data) % (elementSize(type) * size_t(elements)) == 0;
}

/// Blocks of `threads` for `work` items of a grid-stride loop: enough to
/// fill an H200 (132 SMs x 2048 threads) several times, never more.
inline unsigned gridFor(int64_t work, int threads) {
  constexpr int64_t kMaxBlocks = 4096;
  int64_t blocks = (work + threads - 1) / threads;
  return unsigned(blocks < 1 ? 1 : blocks > kMaxBlocks ? kMaxBlocks : blocks);
}

} // namespace detail

} // namespace rn::cuda

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace rn::cuda::detail {

/// Element `i` of a float tensor of dtype `type`, widened to f32 (exact).
__device__ __forceinline__ float loadFloat(const void *data, DType type, int64_t i) {
  switch (type) {
  case DType::f16:
    return __half2float(static_cast<const __half *>(data)[i]);
  case DType::bf16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(data)[i]);
  default:
    return static_cast<const float *>(data)[i];
  }
}

/// Stores `value` rounded to nearest even into element `i` (roundTo).
__device__ __forceinline__ void storeFloat(void *data, DType type, int64_t i, float value) {
  switch (type) {
  case DType::f16:
    static_cast<__half *>(data)[i] = __float2half_rn(value);
    break;
  case DType::bf16:
    static_cast<__nv_bfloat16 *>(data)[i] = __float2bfloat16_rn(value);
    break;
  default:
    static_cast<float *>(data)[i] = value;
    break;
  }
}

/// The CPU's store(type, double): rounded to f32 first, then to `type`.
__device__ __forceinline__ void storeDouble(void *data, DType type, int64_t i, double value) {
  storeFloat(data, type, i, __double2float_rn(value));
}

} // namespace rn::cuda::detail
#endif // __CUDACC__

#endif // RN_RUNTIME_CUDA_KERNELS_H
