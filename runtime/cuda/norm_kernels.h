//===- norm_kernels.h - Batch-normalization kernels on the GPU --*- C++ -*-===//
//
// The batch-norm math of the rn ops (batch_norm*, update_running_stats,
// bn_add_relu*) and of the CBR ops' BN half, over NHWC or [N, C] tensors:
// the channel is the innermost dimension, M = N * H * W (or N) rows. Large
// tensors (x, y, dy, dx, shortcut, ReLU result) share one storage dtype
// (f32, f16 or bf16); per-channel vectors [C] are f32 or that dtype; the
// saved statistics (batch mean, inv_std = 1 / sqrt(var + eps)) are f32.
// Math is f32, statistics merged in double, each output rounded once.
//
// Reductions are deterministic: every block reduces a fixed chunk of rows
// for a tile of channels (Welford for the statistics, plain sums for the
// backward), writes its partials to the caller's workspace, and a second
// kernel merges the chunks per channel in a fixed order. The chunking
// depends on the shape and NormKernelTuning alone, so the workspace size
// is known at prepare.
//
// Everything is asynchronous on `stream`; nothing reads device memory on
// the host, so every call can be captured into a CUDA graph.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_NORM_KERNELS_H
#define RN_RUNTIME_CUDA_NORM_KERNELS_H

#include "runtime/core/status.h"
#include "runtime/cuda/device_tensor.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rn::cuda {

/// How the NHWC passes tile their work (see norm_kernels.cu): the rows a
/// thread loads per loop iteration (1, 2 or 4) and the widest channel
/// vector a thread loads (4, 8 or 16 bytes), per family of passes. The
/// defaults are the fastest measured at the ResNet-18 and ResNet-50
/// shapes of batch 256 (NormKernelsTest.ResNetSizeBandwidth sweeps them;
/// docs/benchmarks.md, "The BN kernels"). Set before launching, not
/// during.
/// One row per iteration wins everywhere: the registers of wider unrolls
/// cost more occupancy than their loads in flight give back.
/// The blocks each family's grid aims for: rows are chunked to about that
/// many blocks per tile of 256 channels (fewer where the tensor is small).
/// Measured on an H100 (docs/benchmarks.md, "The BN kernels", runs E1-E4):
/// the backward's sums at 1320 (whole waves at their 5 blocks per SM) made
/// ResNet-50's step 1.2% faster and no CIFAR configuration slower; the
/// statistics at 528, 5-11% faster alone at ResNet-50's wide shapes, cost
/// ResNet-18 (CIFAR) bs256's step 0.8%, so they stay at 1024: the count
/// that pays follows each shape's grid (at 8-byte vectors a tile is 128
/// channels wide, so wide layers run twice the blocks the target says), a
/// per-shape choice not made yet. The backward's dx pass takes the apply's
/// target: it reduces nothing, and its occupancy is the apply's.
/// NormKernelsTest.TargetBlocksBandwidth sweeps the targets alone;
/// RN_BN_TARGET_BLOCKS ("N" or "STATS,APPLY,BACKWARD") overrides them at
/// start-up for in-step A/B runs.
struct NormKernelTuning {
  int statsRows = 1;
  int statsVecBytes = 8;
  int applyRows = 1;
  int applyVecBytes = 16;
  int backwardRows = 1;
  int backwardVecBytes = 8;
  int statsBlocks = 1024;
  int applyBlocks = 1024;
  int backwardBlocks = 1320;
};
NormKernelTuning normKernelTuning();
/// Fails on a value outside the sets above (target blocks: 1 to 65535).
Status setNormKernelTuning(const NormKernelTuning &tuning);

/// Resident blocks per SM of each pass's main kernel for storage type
/// `dtype` at the current tuning's widest vector (channel counts that are
/// a multiple of it), as the device reports it. Occupancy is what these
/// memory-bound passes live on: a change that costs a kernel registers
/// can cost it a block per SM (NormKernelsTest.KernelsKeepTheirOccupancy).
struct NormKernelOccupancy {
  int statsPartial = 0;
  int apply = 0;
  int backwardPartial = 0;
  int backwardApply = 0;
};
Result<NormKernelOccupancy> normKernelOccupancy(DType dtype);

/// From per-channel sums of x (sum, sumSq over M = `count` elements, f32
/// [C]), as cuDNN's genstats gives them: mean and inv_std = 1 / sqrt(var +
/// eps) (biased var, clamped at 0) into f32 [C] views.
Status bnFinalizeStats(const float *sum, const float *sumSq, int64_t channels, int64_t count,
                       double epsilon, const DeviceTensor &batchMean,
                       const DeviceTensor &batchInvStd, cudaStream_t stream);

/// rn.bn_scale_bias (rn-fuse-bn-prologue): the per-channel scale and bias
/// of a BN apply run as the next convolution's prologue, with T the
/// results' dtype: scale = round_T(invStd * gamma), bias =
/// round_T(fma(-mean, scale, beta)), each step one f32 operation, bit for
/// bit cpu::bnScaleBias. mean, invStd f32 [C]; gamma, beta [C] of any float
/// dtype; scale and bias [C] of one float dtype. One small kernel.
Status bnScaleBias(const DeviceTensor &mean, const DeviceTensor &invStd, const DeviceTensor &gamma,
                   const DeviceTensor &beta, const DeviceTensor &scale, const DeviceTensor &bias,
                   cudaStream_t stream);

/// Workspace bytes bnBatchStats needs for x's shape (partial statistics):
/// a multiple of 256, so that what a caller places after it stays aligned.
size_t bnStatsWorkspaceBytes(const std::vector<int64_t> &xShape);

/// Batch mean and inv_std of x (Welford per block, chunks merged in double
/// in a fixed order). `workspace` holds bnStatsWorkspaceBytes(x.shape).
/// batchMean / batchInvStd may point into memory after that part of the
/// workspace (batch_norm keeps its statistics there).
Status bnBatchStats(const DeviceTensor &x, double epsilon, const DeviceTensor &batchMean,
                    const DeviceTensor &batchInvStd, cudaStream_t stream, void *workspace,
                    size_t workspaceBytes);

/// y = [relu]((x - mean) * invStd * weight + bias); mean, invStd f32 [C].
Status bnApply(const DeviceTensor &x, const DeviceTensor &weight, const DeviceTensor &bias,
               const DeviceTensor &mean, const DeviceTensor &invStd, bool relu,
               const DeviceTensor &y, cudaStream_t stream);

/// bn_add_relu's tail: y = relu(round(round((x - mean) * invStd * weight +
/// bias) + shortcut)), each round to y's dtype, as the unfused ops store.
Status bnApplyAddRelu(const DeviceTensor &x, const DeviceTensor &weight, const DeviceTensor &bias,
                      const DeviceTensor &mean, const DeviceTensor &invStd,
                      const DeviceTensor &shortcut, const DeviceTensor &y, cudaStream_t stream);

/// Workspace bytes bnBackward (and bnAddReluBackward) need for x's shape.
size_t bnBackwardWorkspaceBytes(const std::vector<int64_t> &xShape);

/// The batch_norm_backward math: with xhat = (x - mean) * invStd,
/// dx = weight * invStd * (dy - sum(dy) / M - xhat * sum(dy * xhat) / M),
/// weightGrad = weightGradAcc + sum(dy * xhat), biasGrad = biasGradAcc +
/// sum(dy). When reluResult is non-null, dy is first masked by
/// reluResult > 0 (the CBR backward's ReLU), without writing the masked dy
/// anywhere. When reluBeta is non-null instead, the mask is recomputed
/// from x, in both passes over it: where round(fma(x - mean, invStd *
/// weight, beta)) > 0 in f32, rounded to x's dtype, which is the value
/// bnApply stored as the forward's result (cbr_backward's
/// `relu_recompute`). With `prologueMask` as well (cbr_backward's
/// `prologue_mask`: the forward's result was never stored, the next
/// convolution's prologue computed it), the recomputed mask takes the
/// prologue's rounding instead: (s, b) per channel as bnScaleBias computes
/// them from mean, invStd, weight and reluBeta with T = x's dtype, dy
/// passes where round_T(fma(x, s, b)) > 0. The gradients may alias
/// their accumulators.
Status bnBackward(const DeviceTensor &dy, const DeviceTensor *reluResult,
                  const DeviceTensor *reluBeta, const DeviceTensor &x,
                  const DeviceTensor &weight, const DeviceTensor &mean,
                  const DeviceTensor &invStd, const DeviceTensor &weightGradAcc,
                  const DeviceTensor &biasGradAcc, const DeviceTensor &dx,
                  const DeviceTensor &weightGrad, const DeviceTensor &biasGrad,
                  cudaStream_t stream, void *workspace, size_t workspaceBytes,
                  bool prologueMask = false);

/// bnBackward's second half from sums another kernel reduced (the dgrad
/// with the BN sums in its epilogue, cutlass/cutlass_dgrad.h): g is the
/// output gradient already masked by the ReLU; sumG and sumGXhat are f32
/// [rows, C] partial sums (rows = 1: the sums themselves) whose columns add
/// up to sum(g) and sum(g * xhat). Adds the rows in double in order, then
/// writes weightGrad = weightGradAcc + sum(g * xhat), biasGrad =
/// biasGradAcc + sum(g) and dx by bnBackward's formula: one small kernel
/// and one pass over g and x, where bnBackward makes two. `workspace` holds
/// bnBackwardWorkspaceBytes(x.shape).
Status bnBackwardFromSums(const DeviceTensor &g, const DeviceTensor &x,
                          const DeviceTensor &weight, const DeviceTensor &mean,
                          const DeviceTensor &invStd, const DeviceTensor &sumG,
                          const DeviceTensor &sumGXhat, const DeviceTensor &weightGradAcc,
                          const DeviceTensor &biasGradAcc, const DeviceTensor &dx,
                          const DeviceTensor &weightGrad, const DeviceTensor &biasGrad,
                          cudaStream_t stream, void *workspace, size_t workspaceBytes);

/// bn_add_relu_backward: shortcutGrad = dy masked by reluResult > 0, then
/// bnBackward of it (dx, weightGrad, biasGrad).
Status bnAddReluBackward(const DeviceTensor &dy, const DeviceTensor &reluResult,
                         const DeviceTensor &x, const DeviceTensor &weight,
                         const DeviceTensor &mean, const DeviceTensor &invStd,
                         const DeviceTensor &weightGradAcc, const DeviceTensor &biasGradAcc,
                         const DeviceTensor &dx, const DeviceTensor &shortcutGrad,
                         const DeviceTensor &weightGrad, const DeviceTensor &biasGrad,
                         cudaStream_t stream, void *workspace, size_t workspaceBytes);

/// Inference: y = [relu]((x - runningMean) / sqrt(runningVar + eps) *
/// weight + bias).
Status bnInference(const DeviceTensor &x, const DeviceTensor &weight, const DeviceTensor &bias,
                   const DeviceTensor &runningMean, const DeviceTensor &runningVar,
                   double epsilon, bool relu, const DeviceTensor &y, cudaStream_t stream);

/// bn_add_relu_inference: relu(round(round(bnInference(x)) + shortcut)).
Status bnInferenceAddRelu(const DeviceTensor &x, const DeviceTensor &weight,
                          const DeviceTensor &bias, const DeviceTensor &runningMean,
                          const DeviceTensor &runningVar, const DeviceTensor &shortcut,
                          double epsilon, const DeviceTensor &y, cudaStream_t stream);

/// update_running_stats: new = (1 - momentum) * old + momentum * batch, the
/// batch variance max(0, 1 / invStd^2 - eps) made unbiased by count /
/// (count - 1). The new statistics may alias the old ones.
Status bnUpdateRunningStats(const DeviceTensor &runningMean, const DeviceTensor &runningVar,
                            const DeviceTensor &batchMean, const DeviceTensor &batchInvStd,
                            double epsilon, double momentum, int64_t count,
                            const DeviceTensor &newRunningMean,
                            const DeviceTensor &newRunningVar, cudaStream_t stream);

/// rn.layer_norm over each row of C (the last dimension) of an NHWC or
/// [N, C] x: a warp per row, its statistics in f32 (mean, then the biased
/// variance from the mean); weight and bias [C] f32 or x's dtype.
Status layerNorm(const DeviceTensor &x, const DeviceTensor &weight, const DeviceTensor &bias,
                 double epsilon, const DeviceTensor &y, cudaStream_t stream);

/// Workspace bytes layerNormBackward needs for x's shape (per-warp column
/// sums); channelScaleBackward's likewise.
size_t layerNormBackwardWorkspaceBytes(const std::vector<int64_t> &xShape);
size_t channelScaleBackwardWorkspaceBytes(const std::vector<int64_t> &xShape);

/// rn.layer_norm_backward: a warp per row recomputes the row's statistics
/// and writes dx; dgamma and dbeta are column sums over fixed chunks of
/// rows merged in a fixed order (deterministic), added to the accumulators
/// (which the gradients may alias). C at most 6144.
Status layerNormBackward(const DeviceTensor &dy, const DeviceTensor &x,
                         const DeviceTensor &weight, const DeviceTensor &weightGradAcc,
                         const DeviceTensor &biasGradAcc, double epsilon,
                         const DeviceTensor &dx, const DeviceTensor &weightGrad,
                         const DeviceTensor &biasGrad, cudaStream_t stream, void *workspace,
                         size_t workspaceBytes);

/// rn.channel_scale: y[..., c] = x[..., c] * scale[c], scale of x's dtype.
Status channelScale(const DeviceTensor &x, const DeviceTensor &scale, const DeviceTensor &y,
                    cudaStream_t stream);

/// rn.channel_scale_backward: dx = dy * scale[c]; scaleGrad = acc + the
/// column sums of dy * x, as layerNormBackward sums. Scale, accumulator and
/// gradient have x's dtype.
Status channelScaleBackward(const DeviceTensor &dy, const DeviceTensor &x,
                            const DeviceTensor &scale, const DeviceTensor &scaleGradAcc,
                            const DeviceTensor &dx, const DeviceTensor &scaleGrad,
                            cudaStream_t stream, void *workspace, size_t workspaceBytes);

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_NORM_KERNELS_H
