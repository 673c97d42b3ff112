//===- cpu_kernels.h - CPU reference kernels of the rn ops ------*- C++ -*-===//
//
// One function per rn op (forward, training, backward, loss scaling,
// optimizers, fused CBR ops): the numerical oracle of the project. The CPU
// executor calls them; GPU kernels are compared against them. Correctness and
// clarity come first; the loops are plain, over contiguous NHWC data.
//
// Conventions (docs/cpu-kernels.md has the details):
// - Every tensor is a non-owning TensorView over float storage; `dtype` is
//   the element type the tensor has in the program. Inputs are assumed to
//   hold values representable in their dtype; every output element is
//   computed in float or double and rounded once to its view's dtype with
//   roundTo (f16/bf16 emulation; identity for f32).
// - Layouts: activations NHWC, conv filters OHWI, linear weights [out, in],
//   labels int32 [N], per-channel vectors [C]. Shapes of all views are
//   checked; a mismatch returns an error message (no exceptions).
// - Parameters follow the op's operand order, results come last. An output
//   may alias the operand it updates (InPlaceOpInterface: gradient
//   accumulators, optimizer state, running statistics); outputs must not
//   overlap other operands.
// - Sums (contractions, statistics, the loss, norms) accumulate in double;
//   the contractions of conv and linear run as dgemm (OpenBLAS).
// - "Accumulated" gradients are `acc + d`: the output is the accumulator
//   plus this op's contribution.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CPU_CPU_KERNELS_H
#define RN_RUNTIME_CPU_CPU_KERNELS_H

#include "runtime/core/dtype.h"

#include <array>
#include <utility>
#include <cstdint>
#include <string>
#include <vector>

namespace rn::cpu {

using Shape = std::vector<int64_t>;

/// A non-owning view of a tensor held as floats (row major).
struct TensorView {
  float *data = nullptr;
  Shape shape;
  DType dtype = DType::f32;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t dim(int64_t i) const { return shape[static_cast<size_t>(i)]; }
};

/// A list of views it does not own, for the kernels of list operands: a
/// vector's views (tests, callers with their own), or the executor's tensor
/// table picked by a node's ids, so that running a node with list operands
/// copies no view and allocates nothing.
class TensorList {
public:
  TensorList() = default;
  // Implicit: a vector of views is a list of them (while the vector lives).
  TensorList(const std::vector<TensorView> &views) : direct(views.data()), count(views.size()) {}
  /// table[ids[0]], ..., table[ids[count - 1]].
  TensorList(const TensorView *table, const uint32_t *ids, size_t count)
      : table(table), ids(ids), count(count) {}

  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  const TensorView &operator[](size_t i) const { return ids ? table[ids[i]] : direct[i]; }
  /// Entries [from, from + n).
  TensorList slice(size_t from, size_t n) const {
    TensorList part = *this;
    if (ids)
      part.ids += from;
    else
      part.direct += from;
    part.count = n;
    return part;
  }

  class iterator {
  public:
    iterator(const TensorList *list, size_t i) : list(list), i(i) {}
    const TensorView &operator*() const { return (*list)[i]; }
    iterator &operator++() {
      ++i;
      return *this;
    }
    bool operator!=(const iterator &other) const { return i != other.i; }

  private:
    const TensorList *list;
    size_t i;
  };
  iterator begin() const { return iterator(this, 0); }
  iterator end() const { return iterator(this, count); }

private:
  const TensorView *direct = nullptr;
  const TensorView *table = nullptr;
  const uint32_t *ids = nullptr;
  size_t count = 0;
};

/// A non-owning view of int32 labels, shape [N].
struct LabelView {
  const int32_t *data = nullptr;
  Shape shape;
};

/// Result of a kernel: empty `error` on success, else what was wrong.
struct [[nodiscard]] KernelStatus {
  std::string error;
  bool ok() const { return error.empty(); }
};

struct Conv2dAttrs {
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 2> padding{0, 0}; // symmetric, per spatial dimension
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
};

struct Pool2dAttrs {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 2> padding{0, 0}; // at most half the kernel
  /// PyTorch's ceil_mode: the output size rounds up; the last window may be
  /// partial (clipped to the input and its right padding).
  bool ceilMode = false;
  /// Average pooling only: PyTorch's count_include_pad=False, the divisor
  /// counts the window's positions inside the input only.
  bool excludePad = false;
};

// Note [Random streams]
// ~~~~~~~~~~~~~~~~~~~~~
// Every random op of a training step (rn.dropout_train,
// rn.stochastic_depth_train) draws from Philox4x32-10, a counter-based
// generator: each 32-bit word is a pure function of a 64-bit key and a
// 128-bit counter. RN keys a random op's draws as
//
//   key     = {lo32(seed), hi32(seed)}
//   stream  = uint64_t(int64_t(step)) * count + index   (mod 2^64)
//   counter = {lo32(i / 4), hi32(i / 4), lo32(stream), hi32(stream)}
//   word(i) = philox4x32(counter, key)[i % 4]
//
// - `seed` is the run's seed (RngKey::seed; CpuExecutor::Options::seed,
//   DeviceProgram::Options::seed, OpLaunch::seed), a load-time constant of
//   the runtime; data-parallel ranks offset it (dropoutSeedOfRank).
// - `step` is the train step's i32 `step` input, sign-extended, read from
//   the program's device copy of it (rn-partition copies the step in
//   TRANSFER, and the barrier pass orders every random op after that copy),
//   never from a host value.
// - `index` and `count` are attributes of the op: rn-build-training numbers
//   all the random ops of train_step together, dropouts and stochastic
//   depths alike, in forward order, and gives each the total `count`. The
//   dialect's verifiers (verifyRandomStream, RNTrainingOps.cpp) and the
//   runtime's (verifyRandomOp, op_registry.cpp) check 0 <= index < count.
// - `i` is the element (dropout) or the sample (stochastic depth: sample n
//   takes the word element n of a dropout on the same stream would).
//
// So every random op of every step of a run has its own stream, no two ops
// of a step share random words (one numbering for both kinds), and the same
// seed and step redraw the same masks.
//
// Why the executors draw the same numbers: nothing in the key depends on
// where, when or in what order a word is drawn. The CPU executor forms the
// stream from the node's step operand and attributes (cpu_executor.cpp);
// the CUDA kernels form the same expression on the device from a pointer
// to the step (elementwise_kernels.cu). A captured CUDA graph bakes in its
// kernel arguments, so the step cannot be one: read from device memory, it
// makes every replay draw that step's masks, and cuda-eager, which issues
// the same launchers, draws the same. Because the generator is counted, not
// sequential, the grid layout and the CPU's interleavings change nothing.
// cuda-graph, cuda-eager and the CPU executor therefore agree bit for bit
// (test/runtime/cuda checks the kernels and executors against the CPU).
//
// A new random op must:
// 1. take the `step` operand (an i32 scalar) and the I64 attributes `index`
//    and `count`, verified as above, and read and write RN_RandomGenerator
//    (MemoryEffects) so that nothing reorders or merges its draws;
// 2. be numbered by rn-build-training together with the other random ops,
//    never with a count of its own, so that its streams stay distinct: its
//    model-level op carries RN_RandomInTraining, and its training form
//    takes {index, count} from TrainingFormContext::takeRandomStream;
// 3. form `stream` with exactly the expression above, on the CPU from the
//    node's step operand, on the GPU inside the kernel from the device step
//    (never a host scalar in the launch's arguments);
// 4. draw its words with the counter above (cpu::dropoutRandomWord, and
//    philox4x32 in elementwise_kernels.cu), and have a test that compares
//    the GPU's draws with the CPU's bit for bit over several steps,
//    including a negative step and a stream above 2^32.

/// The key of a random op's draws: `seed` and `stream` of
/// Note [Random streams] above.
struct RngKey {
  uint64_t seed = 0;
  uint64_t stream = 0;
};

struct SgdAttrs {
  double momentum = 0;
  double weightDecay = 0;
  bool nesterov = false;
};

struct AdamWAttrs {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weightDecay = 0;
};

struct LarsAttrs {
  double momentum = 0.9;
  double weightDecay = 0;
  double trustCoefficient = 0.001;
  double epsilon = 1e-9;
};

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

/// [N, OH, OW, O] of a convolution, OH = floor((H + 2p - d(KH-1) - 1) / s) + 1.
KernelStatus conv2dOutputShape(const Shape &input, const Shape &filter,
                               const Conv2dAttrs &attrs, Shape &result);
/// [N, OH, OW, C] of a 2-D pooling, OH = floor((H + 2p - KH) / s) + 1, or
/// with ceilMode rounded up, less one when that last window would start at
/// or past H + p (PyTorch's pooling_output_shape).
KernelStatus pool2dOutputShape(const Shape &input, const Pool2dAttrs &attrs,
                               Shape &result);

//===----------------------------------------------------------------------===//
// Convolution (cpu_conv.cpp)
//===----------------------------------------------------------------------===//

/// y[n,oh,ow,o] = b[o] + sum_{kh,kw,c} x[n, oh*s-p+kh*d, ow*s-p+kw*d, g*Cg+c]
/// * w[o,kh,kw,c] with g = o / (O / groups); padded positions are zero.
/// `bias` may be null.
KernelStatus conv2d(const TensorView &input, const TensorView &filter,
                    const TensorView *bias, const Conv2dAttrs &attrs,
                    const TensorView &result);
/// dX of conv2d (overwrites `inputGrad`); with `addend`, dX + addend
/// rounded once (the input gradient's `plus` of rn-fold-gradient-adds).
KernelStatus conv2dBackwardInput(const TensorView &outputGrad,
                                 const TensorView &filter,
                                 const Conv2dAttrs &attrs,
                                 const TensorView &inputGrad,
                                 const TensorView *addend = nullptr);
/// filterGrad = filterGradAcc + dW.
KernelStatus conv2dBackwardFilter(const TensorView &outputGrad,
                                  const TensorView &input,
                                  const TensorView &filterGradAcc,
                                  const Conv2dAttrs &attrs,
                                  const TensorView &filterGrad);
/// biasGrad = biasGradAcc + sum over N, H, W of outputGrad.
KernelStatus conv2dBackwardBias(const TensorView &outputGrad,
                                const TensorView &biasGradAcc,
                                const TensorView &biasGrad);
/// rn.conv2d_backward: dX when `inputGrad` is given, filterGradAcc + dW, and
/// biasGradAcc + dB when both bias views are given.
KernelStatus conv2dBackward(const TensorView &outputGrad,
                            const TensorView &input, const TensorView &filter,
                            const TensorView &filterGradAcc,
                            const TensorView *biasGradAcc,
                            const Conv2dAttrs &attrs,
                            const TensorView *inputGrad,
                            const TensorView &filterGrad,
                            const TensorView *biasGrad);

//===----------------------------------------------------------------------===//
// Batch normalization (cpu_norm.cpp); input NHWC or [N, C], vectors [C]
//===----------------------------------------------------------------------===//

/// y = (x - mean) * inv_std * weight + bias with the batch mean and biased
/// variance over all but the last dimension; saves mean and
/// inv_std = 1 / sqrt(var + eps) (f32 views).
KernelStatus batchNormTrain(const TensorView &input, const TensorView &weight,
                            const TensorView &bias, double epsilon,
                            const TensorView &result,
                            const TensorView &batchMean,
                            const TensorView &batchInvStd);
/// rn.batch_norm (model level): the result of batchNormTrain; the running
/// statistics are neither read nor updated.
KernelStatus batchNorm(const TensorView &input, const TensorView &weight,
                       const TensorView &bias, double epsilon,
                       const TensorView &result);
/// batchNormTrain's saved statistics alone (the same code): the batch mean
/// and inv_std = 1 / sqrt(biased var + eps) of `input` as stored, f32
/// views [C]. conv_bn_stats' statistics.
KernelStatus batchNormStatistics(const TensorView &input, double epsilon,
                                 const TensorView &batchMean, const TensorView &batchInvStd);
/// y = (x - running_mean) / sqrt(running_var + eps) * weight + bias.
KernelStatus batchNormInference(const TensorView &input,
                                const TensorView &weight,
                                const TensorView &bias,
                                const TensorView &runningMean,
                                const TensorView &runningVar, double epsilon,
                                const TensorView &result);
/// dx = weight * inv_std / M * (M * dy - sum(dy) - xhat * sum(dy * xhat)),
/// weightGrad = acc + sum(dy * xhat), biasGrad = acc + sum(dy), with
/// xhat = (x - mean) * inv_std and M = N * H * W.
KernelStatus batchNormBackward(const TensorView &outputGrad,
                               const TensorView &input,
                               const TensorView &weight,
                               const TensorView &batchMean,
                               const TensorView &batchInvStd,
                               const TensorView &weightGradAcc,
                               const TensorView &biasGradAcc,
                               const TensorView &inputGrad,
                               const TensorView &weightGrad,
                               const TensorView &biasGrad);
/// Layer normalization of each row of C (the last dimension) of an NHWC or
/// [N, C] input: y = (x - mean) * rstd * weight + bias, rstd = 1 /
/// sqrt(biased var + eps), the row's statistics two-pass in double.
KernelStatus layerNorm(const TensorView &input, const TensorView &weight,
                       const TensorView &bias, double epsilon,
                       const TensorView &result);
/// layer_norm's gradients, the row statistics recomputed from `input`: with
/// xhat = (x - mean) * rstd and g = dy * weight, dx = rstd * (g - mean(g) -
/// xhat * mean(g * xhat)) over the row; weightGrad = acc + sum over rows of
/// dy * xhat, biasGrad = acc + sum of dy (in double, rounded once).
KernelStatus layerNormBackward(const TensorView &outputGrad,
                               const TensorView &input,
                               const TensorView &weight,
                               const TensorView &weightGradAcc,
                               const TensorView &biasGradAcc, double epsilon,
                               const TensorView &inputGrad,
                               const TensorView &weightGrad,
                               const TensorView &biasGrad);
/// y[..., c] = x[..., c] * scale[c] (channel_scale: ConvNeXt's layer scale).
KernelStatus channelScale(const TensorView &input, const TensorView &scale,
                          const TensorView &result);
/// dx = dy * scale[c]; scaleGrad[c] = acc[c] + sum over rows of dy * x.
KernelStatus channelScaleBackward(const TensorView &outputGrad,
                                  const TensorView &input,
                                  const TensorView &scale,
                                  const TensorView &scaleGradAcc,
                                  const TensorView &inputGrad,
                                  const TensorView &scaleGrad);
/// cbr_backward's `relu_recompute` mask: inputGrad = outputGrad where
/// round(fma(x - mean, inv_std * gamma, beta)) > 0, else 0, in f32 (the
/// subtraction and the product rounded to f32, then one fused
/// multiply-add) and rounded to x's dtype: the GPU's BN apply computes the
/// forward's result so, which makes the two masks equal bit for bit there.
KernelStatus reluBackwardRecomputed(const TensorView &outputGrad,
                                    const TensorView &input,
                                    const TensorView &gamma,
                                    const TensorView &beta,
                                    const TensorView &batchMean,
                                    const TensorView &batchInvStd,
                                    const TensorView &inputGrad);
/// new = (1 - momentum) * old + momentum * batch, the batch variance
/// (1 / inv_std^2 - eps) made unbiased by count / (count - 1).
KernelStatus updateRunningStats(const TensorView &runningMean,
                                const TensorView &runningVar,
                                const TensorView &batchMean,
                                const TensorView &batchInvStd, double epsilon,
                                double momentum, int64_t count,
                                const TensorView &newRunningMean,
                                const TensorView &newRunningVar);

//===----------------------------------------------------------------------===//
// Pooling (cpu_pool.cpp)
//===----------------------------------------------------------------------===//

/// Max over each window; padded positions never win, ties go to the first
/// maximum in row-major window order, NaN wins (propagates).
KernelStatus maxPool2d(const TensorView &input, const Pool2dAttrs &attrs,
                       const TensorView &result);
/// Routes each output gradient to the element maxPool2d picked (summing
/// where windows overlap).
KernelStatus maxPool2dBackward(const TensorView &outputGrad,
                               const TensorView &input,
                               const Pool2dAttrs &attrs,
                               const TensorView &inputGrad);
/// Window sum / divisor, PyTorch's: the window clipped to the padded input
/// (KH * KW but for a ceil-mode partial window), or with excludePad to the
/// input.
KernelStatus avgPool2d(const TensorView &input, const Pool2dAttrs &attrs,
                       const TensorView &result);
/// Spreads dy / divisor (avgPool2d's) over each window's non-padded
/// positions.
KernelStatus avgPool2dBackward(const TensorView &outputGrad,
                               const Pool2dAttrs &attrs,
                               const TensorView &inputGrad);
/// The input range [first, last) that output index `i` of an adaptive
/// pooling averages: floor(i * in / out) to ceil((i + 1) * in / out)
/// (PyTorch's AdaptiveAvgPool2d).
std::pair<int64_t, int64_t> adaptiveWindow(int64_t i, int64_t inSize, int64_t outSize);
/// [N, H, W, C] -> [N, OH, OW, C] (the result's shape): each output the
/// mean of its adaptive window (adaptiveWindow per dimension), summed in
/// double in row-major window order, divided by the window's count.
KernelStatus adaptiveAvgPool2d(const TensorView &input, const TensorView &result);
/// Spreads dy / (window count) over each adaptive window; each input
/// element sums its terms in output order.
KernelStatus adaptiveAvgPool2dBackward(const TensorView &outputGrad,
                                       const TensorView &inputGrad);
/// [N, H, W, C] -> [N, 1, 1, C], the mean over H and W.
KernelStatus globalAvgPool(const TensorView &input, const TensorView &result);
/// dx[n,h,w,c] = dy[n,0,0,c] / (H * W).
KernelStatus globalAvgPoolBackward(const TensorView &outputGrad,
                                   const TensorView &inputGrad);

//===----------------------------------------------------------------------===//
// Elementwise, casts, reshapes, dropout, stochastic depth (cpu_elementwise.cpp)
//===----------------------------------------------------------------------===//

/// max(x, 0) (NaN propagates).
KernelStatus relu(const TensorView &input, const TensorView &result);
KernelStatus tanh(const TensorView &input, const TensorView &result);
/// x * sigmoid(x).
KernelStatus silu(const TensorView &input, const TensorView &result);
/// 1 / (1 + exp(-x)).
KernelStatus sigmoid(const TensorView &input, const TensorView &result);
/// x * Phi(x): x / 2 * (1 + erf(x / sqrt(2))), or with `tanhForm`
/// x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) (PyTorch's GELU).
KernelStatus gelu(const TensorView &input, bool tanhForm,
                  const TensorView &result);
/// dx = dy * gelu'(x) in the same form (`input` is gelu's input).
KernelStatus geluBackward(const TensorView &outputGrad, const TensorView &input,
                          bool tanhForm, const TensorView &inputGrad);
/// clamp(x, min_val, max_val), the bounds as f32 values; NaN propagates.
KernelStatus hardtanh(const TensorView &input, double minVal, double maxVal,
                      const TensorView &result);
/// 0 for x < -3, x for x > 3, x * (x + 3) / 6 between.
KernelStatus hardswish(const TensorView &input, const TensorView &result);
/// 0 for x < -3, 1 for x > 3, (x + 3) / 6 between.
KernelStatus hardsigmoid(const TensorView &input, const TensorView &result);
/// dx = dy where y > 0, else 0 (`result` is relu's result).
KernelStatus reluBackward(const TensorView &outputGrad,
                          const TensorView &result,
                          const TensorView &inputGrad);
/// dx = dy * (1 - y^2) (`result` is tanh's result).
KernelStatus tanhBackward(const TensorView &outputGrad,
                          const TensorView &result,
                          const TensorView &inputGrad);
/// dx = dy * s * (1 + x * (1 - s)), s = sigmoid(x) (`input` is silu's input).
KernelStatus siluBackward(const TensorView &outputGrad,
                          const TensorView &input,
                          const TensorView &inputGrad);
/// dx = dy * y * (1 - y) (`result` is sigmoid's result).
KernelStatus sigmoidBackward(const TensorView &outputGrad,
                             const TensorView &result,
                             const TensorView &inputGrad);
/// dx = dy where lo < y < hi, else 0 (`result` is hardtanh's result; lo and
/// hi are min_val and max_val as f32 rounded to the result's dtype, which a
/// clipped element equals).
KernelStatus hardtanhBackward(const TensorView &outputGrad,
                              const TensorView &result, double minVal,
                              double maxVal, const TensorView &inputGrad);
/// dx = 0 for x < -3, dy for x > 3, dy * (2x + 3) / 6 for -3 <= x <= 3
/// (PyTorch's pieces; `input` is hardswish's input).
KernelStatus hardswishBackward(const TensorView &outputGrad,
                               const TensorView &input,
                               const TensorView &inputGrad);
/// dx = dy / 6 for -3 < x < 3, else 0 (`input` is hardsigmoid's input).
KernelStatus hardsigmoidBackward(const TensorView &outputGrad,
                                 const TensorView &input,
                                 const TensorView &inputGrad);
/// lhs + rhs (same shape).
KernelStatus add(const TensorView &lhs, const TensorView &rhs,
                 const TensorView &result);
/// result[n, h, w, c] = input[n, h, w, c] * scale[n, 0, 0, c]: input NHWC,
/// scale [N, 1, 1, C] (the squeeze-and-excitation gate).
KernelStatus channelMul(const TensorView &input, const TensorView &scale,
                        const TensorView &result);
/// input_grad = dy * scale[n, 0, 0, c]; scale_grad[n, 0, 0, c] = the sum
/// over h, w of dy * input, in double in (h, w) order, rounded once.
KernelStatus channelMulBackward(const TensorView &outputGrad, const TensorView &input,
                                const TensorView &scale, const TensorView &inputGrad,
                                const TensorView &scaleGrad);
/// Converts to the result's dtype: roundTo(result.dtype, x).
KernelStatus cast(const TensorView &input, const TensorView &result);
/// Widens the last dimension with zeros, converting to the result's dtype:
/// result[..., c] = roundTo(result.dtype, input[..., c]) for c below the
/// input's channels, 0 above (rn.pad_channels). With `mean` and `std`, the
/// input is ui8 NHWC images and each kept channel is normalized first, as
/// normalizeImages computes it (the fused stem pad of a uint8 model).
KernelStatus padChannels(const TensorView &input, const TensorView &result,
                         const TensorView *mean = nullptr, const TensorView *std = nullptr);
/// rn.normalize_images: input ui8 NHWC (each element a float 0 to 255),
/// mean and std [C] f32; result[n, h, w, c] = roundTo(result.dtype,
/// (x / 255 - mean[c]) * (1 / std[c])) with every operation in f32, the
/// data sources' formula, so that the device normalizes as the host would.
KernelStatus normalizeImages(const TensorView &input, const TensorView &mean,
                             const TensorView &std, const TensorView &result);
/// Copies the data to a view of another shape with the same element count.
KernelStatus reshape(const TensorView &input, const TensorView &result);
/// [N, d1, ..., dk] -> [N, d1 * ... * dk] in memory (NHWC) order.
KernelStatus flatten(const TensorView &input, const TensorView &result);
/// Sets every element to zero.
KernelStatus zero(const TensorView &result);

//===----------------------------------------------------------------------===//
// Channel layout: concatenation, split, channel shuffle (cpu_layout.cpp)
//===----------------------------------------------------------------------===//

/// Joins `inputs` (two or more, NHWC or [N, C], equal leading dimensions)
/// along the last dimension, in order.
KernelStatus concat(TensorList inputs, const TensorView &result);
/// The inverse of concat: `results` are consecutive slices of the input's
/// last dimension, each as wide as its own last dimension.
KernelStatus split(const TensorView &input, TensorList results);
/// NHWC channel shuffle: result channel j * groups + i is input channel
/// i * (C / groups) + j (PyTorch's view / transpose(1, 2) / view).
KernelStatus channelShuffle(const TensorView &input, int64_t groups, const TensorView &result);

/// Philox4x32-10 (Random123): four random words of `counter` under `key`.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter,
                                   std::array<uint32_t, 2> key);
/// The random word of element `index`: word index % 4 of philox4x32 with
/// counter {lo(index / 4), hi(index / 4), lo(stream), hi(stream)} and key
/// {lo(seed), hi(seed)}. Depends only on (key, index), not on the order of
/// evaluation.
uint32_t dropoutRandomWord(const RngKey &key, uint64_t index);
/// Whether dropout with probability p drops element `index`:
/// (word >> 8) < ceil(p * 2^24), i.e. u < p with u = (word >> 8) / 2^24.
bool dropoutDrops(const RngKey &key, uint64_t index, double p);
/// Inverted dropout: mask = 0 where dropped, else 1 / (1 - p) (in the mask's
/// dtype); result = input * mask. p in [0, 1].
KernelStatus dropoutTrain(const TensorView &input, double p, const RngKey &key,
                          const TensorView &result, const TensorView &mask);
/// rn.dropout (model level): the result of dropoutTrain without the mask.
KernelStatus dropout(const TensorView &input, double p, const RngKey &key,
                     const TensorView &result);
/// dx = dy * mask.
KernelStatus dropoutBackward(const TensorView &outputGrad,
                             const TensorView &mask,
                             const TensorView &inputGrad);
/// Stochastic depth (torchvision's stochastic_depth, mode "row"): sample n
/// (dimension 0 of `input`, rank >= 1) drops iff dropoutDrops(key, n, p),
/// the draw element n of a dropout would make; mask[n] = 0 where dropped,
/// else 1 / (1 - p) in the mask's dtype (f32 in programs); result[n, ...] =
/// input[n, ...] * mask[n]. `mask` is [N]; p in [0, 1].
KernelStatus stochasticDepthTrain(const TensorView &input, double p,
                                  const RngKey &key, const TensorView &result,
                                  const TensorView &mask);
/// rn.stochastic_depth (model level): the result of stochasticDepthTrain
/// with an f32 mask, without the mask.
KernelStatus stochasticDepth(const TensorView &input, double p,
                             const RngKey &key, const TensorView &result);
/// dx[n, ...] = dy[n, ...] * mask[n], `mask` [N].
KernelStatus stochasticDepthBackward(const TensorView &outputGrad,
                                     const TensorView &mask,
                                     const TensorView &inputGrad);

//===----------------------------------------------------------------------===//
// Fully connected (cpu_linear.cpp): x [N, in], W [out, in], b [out]
//===----------------------------------------------------------------------===//

/// y = x * W^T + b; `bias` may be null.
KernelStatus linear(const TensorView &input, const TensorView &weight,
                    const TensorView *bias, const TensorView &result);
/// dx = dy * W (overwrites `inputGrad`).
KernelStatus linearBackwardInput(const TensorView &outputGrad,
                                 const TensorView &weight,
                                 const TensorView &inputGrad);
/// weightGrad = weightGradAcc + dy^T * x.
KernelStatus linearBackwardWeight(const TensorView &outputGrad,
                                  const TensorView &input,
                                  const TensorView &weightGradAcc,
                                  const TensorView &weightGrad);
/// biasGrad = biasGradAcc + sum over N of dy.
KernelStatus linearBackwardBias(const TensorView &outputGrad,
                                const TensorView &biasGradAcc,
                                const TensorView &biasGrad);
/// rn.linear_backward: dX when `inputGrad` is given, weightGradAcc + dW, and
/// biasGradAcc + dB when both bias views are given.
KernelStatus linearBackward(const TensorView &outputGrad,
                            const TensorView &input, const TensorView &weight,
                            const TensorView &weightGradAcc,
                            const TensorView *biasGradAcc,
                            const TensorView *inputGrad,
                            const TensorView &weightGrad,
                            const TensorView *biasGrad);

//===----------------------------------------------------------------------===//
// Loss and evaluation (cpu_loss.cpp): logits [N, C], labels [N] in [0, C)
//===----------------------------------------------------------------------===//

/// Mean over rows of -sum_c t_c * log_softmax(logits)_c with the target
/// t = (1 - s) * onehot(label) + s / C; computed in double, returned as f32.
KernelStatus softmaxCrossEntropy(const TensorView &logits,
                                 const LabelView &labels,
                                 double labelSmoothing, float &loss);
/// (softmax(logits) - t) * scale / N, t the smoothed target (scale = 1 when
/// the op has no scale operand).
KernelStatus softmaxCrossEntropyBackward(const TensorView &logits,
                                         const LabelView &labels, float scale,
                                         double labelSmoothing,
                                         const TensorView &logitsGrad);
/// Number of rows whose arg-max (first maximum on ties) equals the label.
KernelStatus countCorrect(const TensorView &logits, const LabelView &labels,
                          int32_t &correct);

//===----------------------------------------------------------------------===//
// Loss scaling, optimizers, EMA (cpu_update.cpp)
//===----------------------------------------------------------------------===//

/// True when any element of any input is Inf or NaN.
bool checkFinite(TensorList inputs);
/// result = grad / scale.
KernelStatus unscale(const TensorView &grad, float scale,
                     const TensorView &result);
/// Dynamic loss scaling (PyTorch's GradScaler): on a non-finite gradient
/// scale *= backoff and goodSteps = 0; otherwise goodSteps + 1, and when it
/// reaches `growthInterval` scale *= growth (kept if that overflows f32)
/// and goodSteps = 0.
KernelStatus updateLossScale(float scale, int32_t goodSteps,
                             bool foundNonFinite, double growth,
                             double backoff, int64_t growthInterval,
                             float &newScale, int32_t &newGoodSteps);
/// torch.optim.SGD (dampening 0): g = grad + wd * param;
/// buf = momentum * buf + g; step = nesterov ? g + momentum * buf : buf;
/// param -= lr * step. The buffers are given exactly when momentum != 0.
/// With `skip` the outputs are copies of the inputs.
KernelStatus sgdUpdate(const TensorView &param, const TensorView &grad,
                       const TensorView *momentumBuffer, float lr, bool skip,
                       const SgdAttrs &attrs, const TensorView &newParam,
                       const TensorView *newMomentumBuffer);
/// multi_sgd_update: sgdUpdate on every tensor i of the group, in order:
/// (params[i], grads[i], momentumBuffers[i]) -> (newParams[i],
/// newMomentumBuffers[i]), one lr, skip and set of attributes. The buffer
/// lists are empty exactly when momentum is 0. Every element is computed
/// by the same code as sgdUpdate's, so the results are bit for bit those of
/// the per-parameter updates.
KernelStatus multiSgdUpdate(TensorList params,
                            TensorList grads,
                            TensorList momentumBuffers, float lr,
                            bool skip, const SgdAttrs &attrs,
                            TensorList newParams,
                            TensorList newMomentumBuffers);
/// torch.optim.AdamW: param *= 1 - lr * wd; m = b1 * m + (1 - b1) * g;
/// v = b2 * v + (1 - b2) * g^2; param -= lr / (1 - b1^step) * m /
/// (sqrt(v) / sqrt(1 - b2^step) + eps). `step` >= 1.
KernelStatus adamwUpdate(const TensorView &param, const TensorView &grad,
                         const TensorView &expAvg, const TensorView &expAvgSq,
                         float lr, int32_t step, bool skip,
                         const AdamWAttrs &attrs, const TensorView &newParam,
                         const TensorView &newExpAvg,
                         const TensorView &newExpAvgSq);
/// multi_adamw_update: adamwUpdate on every tensor i of the group, in
/// order (one lr, step, skip and set of attributes), so the results are bit
/// for bit those of the per-parameter updates.
KernelStatus multiAdamwUpdate(TensorList params,
                              TensorList grads,
                              TensorList expAvgs,
                              TensorList expAvgSqs, float lr, int32_t step,
                              bool skip, const AdamWAttrs &attrs,
                              TensorList newParams,
                              TensorList newExpAvgs,
                              TensorList newExpAvgSqs);
/// LARS: local_lr = trust * |param| / (|grad| + wd * |param| + eps), 1 when
/// either norm is zero; buf = momentum * buf + local_lr * (grad + wd * param);
/// param -= lr * buf.
KernelStatus larsUpdate(const TensorView &param, const TensorView &grad,
                        const TensorView &momentumBuffer, float lr, bool skip,
                        const LarsAttrs &attrs, const TensorView &newParam,
                        const TensorView &newMomentumBuffer);
/// multi_lars_update: larsUpdate on every tensor i of the group, in order
/// (each with the trust ratio of its own norms; one lr, skip and set of
/// attributes), so the results are bit for bit those of the per-parameter
/// updates.
KernelStatus multiLarsUpdate(TensorList params,
                             TensorList grads,
                             TensorList momentumBuffers, float lr, bool skip,
                             const LarsAttrs &attrs, TensorList newParams,
                             TensorList newMomentumBuffers);
/// average = decay * average + (1 - decay) * param.
KernelStatus emaUpdate(const TensorView &average, const TensorView &param,
                       double decay, const TensorView &newAverage);

//===----------------------------------------------------------------------===//
// Fused ops (cpu_fused.cpp): compositions of the unfused kernels, each
// intermediate rounded to the dtype it would be stored in
//===----------------------------------------------------------------------===//

/// conv2d (no bias) -> batchNormTrain -> relu (with `relu`); returns the
/// convolution output and the saved statistics too.
KernelStatus cbrForward(const TensorView &input, const TensorView &filter,
                        const TensorView &gamma, const TensorView &beta,
                        const Conv2dAttrs &attrs, double epsilon, bool relu,
                        const TensorView &result, const TensorView &convOutput,
                        const TensorView &batchMean,
                        const TensorView &batchInvStd);
/// cbr_forward with an optional prologue (rn-fuse-bn-prologue; both or
/// neither of `prologueScale`, `prologueBias`): the convolution reads
/// scaleBiasRelu(input, prologueScale, prologueBias), materialized in the
/// input's dtype, instead of `input`.
KernelStatus cbrForward(const TensorView &input, const TensorView &filter,
                        const TensorView &gamma, const TensorView &beta,
                        const TensorView *prologueScale, const TensorView *prologueBias,
                        const Conv2dAttrs &attrs, double epsilon, bool relu,
                        const TensorView &result, const TensorView &convOutput,
                        const TensorView &batchMean, const TensorView &batchInvStd);
/// rn.bn_scale_bias: per channel c, in f32 (T the results' dtype, both
/// the same; gamma and beta of any float dtype):
///   scale[c] = round_T(inv_std[c] * gamma[c])
///   bias[c]  = round_T(fmaf(-mean[c], scale[c], beta[c]))
/// with the product rounded to f32 once and the bias from the rounded scale
/// in one fused multiply-add (std::fmaf). The GPU's kernel must match it bit
/// for bit.
KernelStatus bnScaleBias(const TensorView &batchMean, const TensorView &batchInvStd,
                         const TensorView &gamma, const TensorView &beta,
                         const TensorView &scale, const TensorView &bias);
/// The scale-bias-ReLU prologue P of rn-fuse-bn-prologue, per channel c (the
/// last dimension), with T the input's dtype, which scale, bias and result
/// must have:
///   result = relu(round_T(fmaf(x, scale[c], bias[c])))
/// one f32 fused multiply-add rounded once to T, relu(v) = v <= 0 ? 0 : v
/// (NaN stays NaN). The rounding of the cuDNN engines that run the fused
/// prologue (genstats forward and filter gradient: docs/fuse-cbr.md).
KernelStatus scaleBiasRelu(const TensorView &input, const TensorView &scale,
                           const TensorView &bias, const TensorView &result);
/// rn.conv_bn_stats: convOutput = conv2d (no bias) of the input, or of
/// scaleBiasRelu(input, prologueScale, prologueBias) with a prologue (both
/// or neither given), then batchNormStatistics of convOutput as stored:
/// cbr_forward's statistics without the apply.
KernelStatus convBnStats(const TensorView &input, const TensorView &filter,
                         const TensorView *prologueScale, const TensorView *prologueBias,
                         const Conv2dAttrs &attrs, double epsilon,
                         const TensorView &convOutput, const TensorView &batchMean,
                         const TensorView &batchInvStd);
/// cbr_backward's `relu_recompute ... prologue_mask` mask: with (s, b) =
/// bnScaleBias(batchMean, batchInvStd, gamma, beta) in x's dtype,
/// reluBackward(outputGrad, scaleBiasRelu(x, s, b)): outputGrad where
/// round(fmaf(x, s, b)) > 0, else 0. The mask of the activation that the
/// readers' prologues compute from the same statistics, bit for bit.
KernelStatus reluBackwardPrologueMask(const TensorView &outputGrad, const TensorView &input,
                                      const TensorView &gamma, const TensorView &beta,
                                      const TensorView &batchMean,
                                      const TensorView &batchInvStd,
                                      const TensorView &inputGrad);
/// cbr_backward's optional operands and forms.
struct CbrBackwardOptions {
  /// `relu %y`: the forward's ReLU result; the mask is where it is > 0.
  const TensorView *reluOutput = nullptr;
  /// `relu_recompute %beta`: the forward's beta; the mask recomputed from
  /// conv_output (reluBackwardRecomputed, or reluBackwardPrologueMask
  /// with `prologueMask`). At most one of reluOutput and reluBeta.
  const TensorView *reluBeta = nullptr;
  bool prologueMask = false;
  /// `input_prologue %scale, %bias` (both or neither): the forward
  /// convolution read scaleBiasRelu(input, inputScale, inputBias); the
  /// filter gradient is taken at that, the input gradient is the gradient
  /// there (the producer's backward masks the prologue's ReLU).
  const TensorView *inputScale = nullptr;
  const TensorView *inputBias = nullptr;
  /// `plus %addend` (rn-fold-gradient-adds): dX + addend rounded once;
  /// needs an input gradient.
  const TensorView *inputGradAddend = nullptr;
};
/// cbr_backward's bn_grad part: the ReLU mask of `options` (if any) ->
/// batchNormBackward: convOutputGrad, gammaGradAcc + dgamma,
/// betaGradAcc + dbeta.
KernelStatus cbrBackwardBatchNorm(const TensorView &outputGrad, const TensorView &convOutput,
                                  const TensorView &gamma, const TensorView &batchMean,
                                  const TensorView &batchInvStd,
                                  const TensorView &gammaGradAcc,
                                  const TensorView &betaGradAcc,
                                  const CbrBackwardOptions &options,
                                  const TensorView &convOutputGrad,
                                  const TensorView &gammaGrad, const TensorView &betaGrad);
/// cbr_backward's weight_grad part: filterGradAcc + conv2dBackwardFilter
/// at the input, or at scaleBiasRelu(input, inputScale, inputBias) with an
/// input prologue (both or neither given).
KernelStatus cbrBackwardFilter(const TensorView &convOutputGrad, const TensorView &input,
                               const TensorView *inputScale, const TensorView *inputBias,
                               const TensorView &filterGradAcc, const Conv2dAttrs &attrs,
                               const TensorView &filterGrad);
/// reluBackward (when `reluOutput` is given) -> batchNormBackward ->
/// conv2dBackward: convOutputGrad, dX (when `inputGrad` is given),
/// filterGradAcc + dW, gammaGradAcc + dgamma, betaGradAcc + dbeta.
KernelStatus cbrBackward(
    const TensorView &outputGrad, const TensorView &input,
    const TensorView &filter, const TensorView &convOutput,
    const TensorView &gamma, const TensorView &batchMean,
    const TensorView &batchInvStd, const TensorView &filterGradAcc,
    const TensorView &gammaGradAcc, const TensorView &betaGradAcc,
    const TensorView *reluOutput, const Conv2dAttrs &attrs,
    const TensorView &convOutputGrad, const TensorView *inputGrad,
    const TensorView &filterGrad, const TensorView &gammaGrad,
    const TensorView &betaGrad);
/// cbr_backward with every optional form: cbrBackwardBatchNorm (the mask
/// of `options`), then conv2dBackward at the input or at the prologue's
/// activation (cbrBackwardFilter's), the input gradient with the addend
/// of `options` if any.
KernelStatus cbrBackward(const TensorView &outputGrad, const TensorView &input,
                         const TensorView &filter, const TensorView &convOutput,
                         const TensorView &gamma, const TensorView &batchMean,
                         const TensorView &batchInvStd, const TensorView &filterGradAcc,
                         const TensorView &gammaGradAcc, const TensorView &betaGradAcc,
                         const CbrBackwardOptions &options, const Conv2dAttrs &attrs,
                         const TensorView &convOutputGrad, const TensorView *inputGrad,
                         const TensorView &filterGrad, const TensorView &gammaGrad,
                         const TensorView &betaGrad);
/// conv2d (no bias) -> batchNormInference -> relu (with `relu`).
KernelStatus cbrInference(const TensorView &input, const TensorView &filter,
                          const TensorView &gamma, const TensorView &beta,
                          const TensorView &runningMean,
                          const TensorView &runningVar,
                          const Conv2dAttrs &attrs, double epsilon, bool relu,
                          const TensorView &result);
/// relu(batchNormTrain(input) + shortcut), saving the statistics.
KernelStatus bnAddRelu(const TensorView &input, const TensorView &gamma,
                       const TensorView &beta, const TensorView &shortcut,
                       double epsilon, const TensorView &result,
                       const TensorView &batchMean,
                       const TensorView &batchInvStd);
/// d = reluBackward(outputGrad, reluOutput); shortcutGrad = d; inputGrad,
/// gammaGrad (acc + dgamma), betaGrad (acc + dbeta) = batchNormBackward(d).
KernelStatus bnAddReluBackward(
    const TensorView &outputGrad, const TensorView &reluOutput,
    const TensorView &input, const TensorView &gamma,
    const TensorView &batchMean, const TensorView &batchInvStd,
    const TensorView &gammaGradAcc, const TensorView &betaGradAcc,
    const TensorView &inputGrad, const TensorView &shortcutGrad,
    const TensorView &gammaGrad, const TensorView &betaGrad);
/// relu(batchNormInference(input) + shortcut).
KernelStatus bnAddReluInference(const TensorView &input,
                                const TensorView &gamma,
                                const TensorView &beta,
                                const TensorView &runningMean,
                                const TensorView &runningVar,
                                const TensorView &shortcut, double epsilon,
                                const TensorView &result);

} // namespace rn::cpu

#endif // RN_RUNTIME_CPU_CPU_KERNELS_H
